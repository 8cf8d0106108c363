"""The decorrelation strength as a knob on the LHCO testing sample, beside the DisCo scan.

For IRGI and KDE at their chosen parameters, the scores
``s_p = (1 - p) F(y) + p gamma(x, y)`` (:mod:`rosenblatt.transforms.strength`,
``F`` the best baseline's marginal CDF on the defining background) at each
configured strength ``p``: AUC, dCor², R50 and 1/JSD (the trade-off of the
decorrelation literature), the ABCD closure over the study's cut grid
(:func:`rosenblatt.abcd.closure_scan`) and the closure test
(:func:`rosenblatt.abcd.closure_testing.closure_test_histogram`) whose covariance
holds the testing sample's statistics and the fit of ``s_p`` itself: the
statistics stage's bootstrap refits of the transform, each with ``F`` refitted
on the same Poisson(1) counts of the defining events. ``p = 0`` ranks events as
the baseline does; ``p = 1`` is the transform's own score. Every trained model
of the classifier scan gives the points of DisCo's trade-off on the same events.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

import rosenblatt as rb
from rosenblatt.abcd import abcd_histogram, closure_scan
from rosenblatt.abcd.closure_testing import closure_test_histogram
from rosenblatt.studies.lhco.config import LhcoConfig
from rosenblatt.studies.lhco.results import StatisticsSettings, TrainedModel
from rosenblatt.studies.lhco.summary import StrengthPoint, StrengthScan, TaggerPoint
from rosenblatt.transforms.ensemble import poisson_weights
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
    replicas: Sequence[Any],
) -> StrengthPoint:
    """The figures of merit and the closure of one score on the testing sample.

    ``replicas`` are the ABCD histograms of the events below ``mjj_max`` with
    the score of each refitted replica at this strength.
    """
    bkg = label == 0
    keep = mjj < cfg.cuts.mjj_max
    histogram = abcd_histogram(mjj[keep], score[keep], label[keep], x0=cfg.cuts.x0, y0=cfg.cuts.y0)
    scan = closure_scan(histogram)
    try:
        test = closure_test_histogram(
            histogram,
            n_boot=settings.closure_n_boot,
            seed=settings.seed,
            thin=settings.closure_thin,
            replica_histograms=replicas or None,
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


def _replica_histograms(
    cfg: LhcoConfig,
    ensemble: rb.TransformEnsemble,
    y_def: FloatArray,
    mjj: FloatArray,
    label: Int64Array,
    baseline: FloatArray,
) -> dict[float, list[Any]]:
    """Per strength, the testing events' ABCD histograms under each bootstrap refit of ``s_p``.

    Replica ``k`` is the ensemble's refitted transform with ``F`` refitted on
    the same Poisson(1) counts of the defining events; each replica's
    ``gamma`` and ``F`` are evaluated once and mixed at every strength. A
    replica that cannot evaluate every testing event is left out.
    """
    keep = mjj < cfg.cuts.mjj_max
    x, y, lab = mjj[keep], baseline[keep], label[keep]
    out: dict[float, list[Any]] = {p: [] for p in cfg.strengths}
    for replica, draw in zip(ensemble.replicas_, ensemble.replica_draws_, strict=True):
        try:
            gamma = replica.transform(x, y)
        except ValueError as err:
            log.info("strength scan: replica of draw %d left out: %s", draw, err)
            continue
        counts = poisson_weights(len(y_def), ensemble.seed, draw)
        marginal = MarginalCDF().fit(y_def, counts)(y)
        for p in cfg.strengths:
            score = partial_decorrelation(gamma, marginal, p)
            out[p].append(abcd_histogram(x, score, lab, x0=cfg.cuts.x0, y0=cfg.cuts.y0))
    return out


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
    ensembles: Mapping[str, rb.TransformEnsemble],
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
    ensembles
        Per transform, its bootstrap replicas on the defining sample (the
        statistics stage's).
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
    refits: dict[str, int] = {}
    for name in TRANSFORMS:
        replicas = _replica_histograms(cfg, ensembles[name], y_def, mjj, label, scores["baseline"])
        refits[name] = len(replicas[cfg.strengths[0]])
        transforms[name] = [
            _point(
                cfg,
                settings,
                p,
                mjj,
                label,
                partial_decorrelation(scores[name], marginal, p),
                replicas[p],
            )
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
        "refits": refits,
    }
