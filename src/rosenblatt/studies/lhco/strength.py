"""The decorrelation strength as a knob on the LHCO testing sample, beside the DisCo scan.

For IRGI and KDE at their chosen parameters, the scores
``s_p = (1 - p) F(y) + p gamma(x, y)`` (:mod:`rosenblatt.transforms.strength`,
``F`` the best baseline's marginal CDF on the defining background) at each
configured strength ``p``: AUC, dCor², R50 and 1/JSD (the trade-off of the
decorrelation literature), the ABCD closure over the study's cut grid
(:func:`rosenblatt.abcd.closure_scan`) and the closure test the statistics
stage runs for every classifier (:func:`rosenblatt.abcd.closure_test`, with the
testing sample's replicas: the transform is held fixed, as for the baseline and
DisCo). ``p = 0`` ranks events as the baseline does; ``p = 1`` is the
transform's own score. Every trained model of the classifier scan gives
the points of DisCo's trade-off on the same events.
"""

from __future__ import annotations

import logging
from typing import Any

import numpy as np

import rosenblatt as rb
from rosenblatt.abcd import abcd_histogram, closure_scan, closure_test
from rosenblatt.studies.lhco.config import LhcoConfig
from rosenblatt.studies.lhco.results import StatisticsSettings, TrainedModel
from rosenblatt.studies.lhco.summary import StrengthPoint, StrengthScan, TaggerPoint
from rosenblatt.transforms.strength import MarginalCDF, partial_decorrelation
from rosenblatt.typing import FloatArray, Int64Array

__all__ = ["CLOSES_P_VALUE", "TRANSFORMS", "strength_scan"]

log = logging.getLogger("rosenblatt.lhco")

#: the transforms whose strength is scanned
TRANSFORMS = ("irgi", "kde")

#: the closure test's p-value at and above which the ABCD estimate is said to close
CLOSES_P_VALUE = 0.05


def _optional(value: float | None) -> float | None:
    return None if value is None or not np.isfinite(value) else float(value)


def _point(
    cfg: LhcoConfig,
    settings: StatisticsSettings,
    strength: float,
    mjj: FloatArray,
    label: Int64Array,
    score: FloatArray,
) -> StrengthPoint:
    """The figures of merit and the closure of one score on the testing sample."""
    bkg = label == 0
    keep = mjj < cfg.cuts.mjj_max
    x0, y0 = cfg.cuts.x0, cfg.cuts.y0
    scan = closure_scan(abcd_histogram(mjj[keep], score[keep], label[keep], x0=x0, y0=y0))
    try:
        test = closure_test(
            mjj[keep],
            score[keep],
            label[keep],
            x0=x0,
            y0=y0,
            n_boot=settings.closure_n_boot,
            seed=settings.seed,
            thin=settings.closure_thin,
        )
    except ValueError as err:  # too few events in the regions of every thinned cut
        log.info("closure test at strength %g not possible: %s", strength, err)
        test = None
    p_value = None if test is None else _optional(test.p_value)
    return {
        "strength": strength,
        "auc": rb.roc_auc(label, score),
        "dcc": rb.distance_correlation_sqr(mjj[bkg], score[bkg]),
        "r50": rb.background_rejection(label, score),
        "inverse_jsd": rb.inverse_jsd(mjj, label, score),
        "eta_best": scan.best()["eta"],
        "frac_eta_below_1e-2": scan.fraction_below(1e-2),
        "closure_chi2_ndf": None if test is None else _optional(test.chi2_per_dof),
        "closure_pvalue": p_value,
        "frac_closure_consistent_2sd": None
        if test is None
        else _optional(test.consistent_fraction),
        "closes": None if p_value is None else p_value >= CLOSES_P_VALUE,
    }


def _tagger_point(
    model: TrainedModel, mjj: FloatArray, label: Int64Array, score: FloatArray
) -> TaggerPoint:
    return {
        "model": model.name,
        "alpha": model.alpha,
        "auc": rb.roc_auc(label, score),
        "r50": rb.background_rejection(label, score),
        "inverse_jsd": rb.inverse_jsd(mjj, label, score),
    }


def strength_scan(
    cfg: LhcoConfig,
    testing: Any,
    models: list[TrainedModel],
    y_def: FloatArray,
    scores: dict[str, FloatArray],
) -> StrengthScan:
    """The strength scan of IRGI and KDE and the classifier scan's R50 and 1/JSD.

    Parameters
    ----------
    cfg
        The study's configuration (strengths, cut grid, closure test settings).
    testing
        The testing sample (its ``mjj``, ``label`` and each model's score column).
    models
        The trained models of the classifier scan.
    y_def
        The best baseline's scores on the defining background (``F`` is fitted on them).
    scores
        The testing sample's ``baseline`` score and each transform's ``gamma``.

    Returns
    -------
    StrengthScan
        The summary's ``strength_scan``.
    """
    mjj = np.asarray(testing["mjj"], dtype=np.float64)
    label = np.asarray(testing["label"])
    settings = StatisticsSettings.of(cfg)
    marginal = MarginalCDF().fit(y_def)(scores["baseline"])
    transforms: dict[str, list[StrengthPoint]] = {}
    for name in TRANSFORMS:
        transforms[name] = [
            _point(cfg, settings, p, mjj, label, partial_decorrelation(scores[name], marginal, p))
            for p in cfg.strengths
        ]
        log.info(
            "%s strength scan: R50 %s, 1/JSD %s",
            name,
            ", ".join(f"{row['r50']:.3g}" for row in transforms[name]),
            ", ".join(f"{row['inverse_jsd']:.3g}" for row in transforms[name]),
        )
    tagged = [
        _tagger_point(m, mjj, label, np.asarray(testing[m.column], dtype=np.float64))
        for m in models
    ]
    return {
        "strengths": list(cfg.strengths),
        "transforms": transforms,
        "models": tagged,
        "closure_n_boot": settings.closure_n_boot,
    }
