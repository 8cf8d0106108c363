"""The dijet study with several protected observables (``study: lhco-2d``).

The best baseline classifier of the LHC Olympics study is decorrelated from
two (or three) observables of the event at once, by default the dijet mass
``mjj`` and the leading jet's transverse momentum ``pt_j1``. The events, the
feature table, the partition and the classifier scan are the LHCO study's
(:mod:`rosenblatt.studies.lhco.study`), reused from its cache in ``data.folder``.

On the defining sample (the validation background) each configured
estimator is fitted three ways: in the first observable alone (the 1-d
transform of the LHCO study), sequentially (first observable, then the
result in the next, :class:`~rosenblatt.SequentialTransform`), and jointly
with ``x`` of shape ``(n, k)``. On the testing sample the study measures the
background's dCor² of each score against every protected observable and
against all of them jointly, each beside its permutation floor, and the AUC
with its cost relative to the baseline.

The study is a sequence of named steps (:data:`STEPS`), each timed; the
configuration is validated first (:class:`~rosenblatt.studies.lhco.config_2d.Lhco2dConfig`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

import rosenblatt as rb
from rosenblatt.studies._common import Steps, summary_header, write_summary
from rosenblatt.studies.lhco.config_2d import Lhco2dConfig
from rosenblatt.studies.lhco.results import Samples, TrainedModel
from rosenblatt.studies.lhco.study import (
    choose_models,
    feature_table,
    generate_events,
    generated_events,
    measure_models,
    partition_samples,
    sample_events,
    train_classifiers,
)
from rosenblatt.studies.lhco.summary_2d import (
    Dependence,
    FittedParams,
    Lhco2dSummary,
    MethodJson,
    MethodMeasurement,
    Profiles,
    SliceProfile,
)
from rosenblatt.transforms import ConditionalCDFTransform
from rosenblatt.typing import FloatArray

__all__ = ["JOINT", "STEPS", "Method", "run"]

log = logging.getLogger("rosenblatt.lhco_2d")

#: the study's steps, in order; each one's wall time goes to ``summary.json`` (``step_seconds``)
STEPS = ("generate", "features", "partition", "train", "decorrelate", "measure", "report")

#: the key of the dCor² against all protected observables jointly
JOINT = "joint"

#: the estimators, each with its automatic parameter
_MAKERS: dict[str, Callable[[], ConditionalCDFTransform]] = {
    "gridkde": lambda: rb.GridKDE("auto"),
    "irgi": lambda: rb.IRGI("auto"),
    "kde": lambda: rb.KDE(sigma_r="auto"),
}

_NAMES = {"gridkde": "GridKDE", "irgi": "IRGI", "kde": "KDE"}


@dataclass
class Method:
    """One score of the comparison: the baseline, or a transform of it fitted on the defining sample.

    Attributes
    ----------
    key : str
        Its name in ``summary.json`` (``baseline``, ``<estimator>_1d``,
        ``<estimator>_sequential``, ``<estimator>_joint``).
    label : str
        Its name in the report.
    mode : str
        ``baseline``, ``1d``, ``sequential`` or ``joint``.
    transform : ConditionalCDFTransform or SequentialTransform or None
        The fitted transform (``None`` for the baseline).
    fit_seconds : float
        Wall time of its fit.
    """

    key: str
    label: str
    mode: str
    transform: ConditionalCDFTransform | rb.SequentialTransform | None = None
    fit_seconds: float = 0.0

    def score(self, x: FloatArray, y: FloatArray) -> FloatArray:
        """The method's score of events with observables ``x`` (shape ``(n, k)``) and baseline score ``y``."""
        if self.transform is None:
            return y
        if self.mode == "1d":
            return np.asarray(self.transform.transform(x[:, 0], y), dtype=np.float64)
        return np.asarray(self.transform.transform(x, y), dtype=np.float64)

    def params(self) -> FittedParams | list[FittedParams] | None:
        """The parameters the fitted transform evaluates with (per step for a sequence)."""
        if self.transform is None:
            return None
        if isinstance(self.transform, rb.SequentialTransform):
            return [step.fitted_params() for step in self.transform.steps_]
        return self.transform.fitted_params()


def _observables(sample: Any, names: tuple[str, ...]) -> FloatArray:
    """The protected observables of a sample as an array of shape ``(n, k)``."""
    return np.column_stack([np.asarray(sample[name], dtype=np.float64) for name in names])


def _labels(estimator: str, protected: tuple[str, ...]) -> dict[str, str]:
    """The report's names of an estimator's three transforms."""
    name = _NAMES[estimator]
    return {
        "1d": f"{name} 1-d ({protected[0]})",
        "sequential": f"{name} sequential ({', then '.join(protected)})",
        "joint": f"{name} joint {len(protected)}-d",
    }


def _fit(method: Method, x: FloatArray, y: FloatArray) -> Method:
    """Fit ``method.transform`` on the defining sample and time it."""
    if method.transform is None:
        return method
    start = time.perf_counter()
    method.transform.fit(x[:, 0] if method.mode == "1d" else x, y)
    method.fit_seconds = round(time.perf_counter() - start, 3)
    log.info("%s fitted in %.1f s: %s", method.label, method.fit_seconds, method.params())
    return method


def _decorrelate(
    cfg: Lhco2dConfig, samples: Samples, best: TrainedModel
) -> tuple[list[Method], int]:
    """Fit every estimator in 1-d, sequentially and jointly on the validation background."""
    protected = cfg.decorrelation.protected
    val = samples.validation
    background = np.asarray(val["label"]) == 0
    x_def = _observables(val, protected)[background]
    y_def = np.asarray(val[best.column], dtype=np.float64)[background]
    methods = [Method("baseline", f"baseline ({best.name})", "baseline")]
    for estimator in cfg.decorrelation.estimators:
        make = _MAKERS[estimator]
        labels = _labels(estimator, protected)
        methods += [
            _fit(Method(f"{estimator}_1d", labels["1d"], "1d", make()), x_def, y_def),
            _fit(
                Method(
                    f"{estimator}_sequential",
                    labels["sequential"],
                    "sequential",
                    rb.SequentialTransform([make() for _ in protected]),
                ),
                x_def,
                y_def,
            ),
            _fit(Method(f"{estimator}_joint", labels["joint"], "joint", make()), x_def, y_def),
        ]
    return methods, len(y_def)


def _dependence(x: FloatArray, score: FloatArray, permutations: int, seed: int) -> Dependence:
    """dCor² of ``score`` with ``x`` (one observable or several), its permutation floor and p-value."""
    test = rb.permutation_test(x, score, n_permutations=permutations, seed=seed)
    return {
        "value": float(test.statistic),
        "floor": float(test.floor),
        "floor_std": float(test.floor_std),
        "p_value": float(test.p_value),
    }


def _measure(
    cfg: Lhco2dConfig, samples: Samples, best: TrainedModel, methods: list[Method]
) -> dict[str, MethodJson]:
    """AUC and the background's dCor² with each observable and with all of them, per method."""
    test = samples.testing
    x = _observables(test, cfg.decorrelation.protected)
    label = np.asarray(test["label"])
    base = np.asarray(test[best.column], dtype=np.float64)
    measured = {method.key: _measure_method(cfg, method, x, base, label) for method in methods}
    baseline_auc = measured["baseline"]["auc"]
    return {
        key: {**entry, "auc_cost": baseline_auc - entry["auc"]} for key, entry in measured.items()
    }


def _measure_method(
    cfg: Lhco2dConfig,
    method: Method,
    x: FloatArray,
    base: FloatArray,
    label: NDArray[Any],
) -> MethodMeasurement:
    """One method's AUC and its background dCor² with each observable and with all of them."""
    permutations, seed = cfg.decorrelation.permutations, cfg.decorrelation.seed
    background = label == 0
    score = method.score(x, base)
    dcc = {
        name: _dependence(x[background, i], score[background], permutations, seed)
        for i, name in enumerate(cfg.decorrelation.protected)
    }
    dcc[JOINT] = _dependence(x[background], score[background], permutations, seed)
    entry: MethodMeasurement = {
        "label": method.label,
        "mode": method.mode,
        "auc": rb.roc_auc(label, score),
        "dcc": dcc,
        "fit_seconds": method.fit_seconds,
        "params": method.params(),
    }
    log.info(
        "%s: AUC %.4f, dCor² %s",
        method.label,
        entry["auc"],
        ", ".join(f"{k} {v['value']:.2e} (floor {v['floor']:.1e})" for k, v in dcc.items()),
    )
    return entry


def _slice_profile(second: FloatArray, score: FloatArray, n_bins: int) -> SliceProfile:
    """Mean score and its standard error in equal-occupancy bins of ``second``, at each bin's mean."""
    order = np.argsort(second, kind="stable")
    bins = np.array_split(order, n_bins)
    return {
        "x": [float(np.mean(second[b])) for b in bins],
        "mean": [float(np.mean(score[b])) for b in bins],
        "error": [float(np.std(score[b]) / np.sqrt(max(len(b), 1))) for b in bins],
    }


def _profiles(
    cfg: Lhco2dConfig, samples: Samples, best: TrainedModel, methods: list[Method]
) -> Profiles:
    """Mean score of the testing background against the second observable, in three slices of the first."""
    protected = cfg.decorrelation.protected
    test = samples.testing
    background = np.asarray(test["label"]) == 0
    x = _observables(test, protected)[background]
    base = np.asarray(test[best.column], dtype=np.float64)[background]
    slice_edges = np.quantile(x[:, 0], [0.0, 1 / 3, 2 / 3, 1.0])
    slices = np.clip(np.searchsorted(slice_edges, x[:, 0], side="right") - 1, 0, 2)
    profiles: dict[str, list[SliceProfile]] = {}
    for method in methods:
        score = method.score(x, base)
        profiles[method.key] = [
            _slice_profile(x[slices == s, 1], score[slices == s], n_bins=6) for s in range(3)
        ]
    return {"slice_edges": slice_edges.tolist(), "profiles": profiles}


def run(config: dict[str, Any], folder: Path) -> Lhco2dSummary:
    """Run the study of ``config``; write ``report.md``, ``summary.json`` and the figures into ``folder``.

    The generation, feature and training steps reuse what an LHCO study with
    the same settings cached in ``data.folder``.
    """
    from rosenblatt.studies.lhco.report_2d import write_report

    cfg = Lhco2dConfig.parse(config)
    base = cfg.base
    base.data.folder.mkdir(parents=True, exist_ok=True)
    steps = Steps(STEPS, log, digits=2)
    paths = steps.run("generate", generate_events, base, events=lambda _: generated_events(base))
    table = steps.run("features", feature_table, base, paths, events=len)
    samples = steps.run("partition", partition_samples, table, base, events=sample_events)
    trained = steps.run(
        "train", train_classifiers, base, samples, events=lambda r: sample_events(r[0])
    )
    samples, models = trained
    best = choose_models(base, measure_models(models, samples.optimisation)).best
    methods, n_defining = steps.run(
        "decorrelate", _decorrelate, cfg, samples, best, events=lambda r: r[1]
    )
    n_testing = len(samples.testing)
    results = steps.run(
        "measure", _measure, cfg, samples, best, methods, events=lambda _: n_testing
    )
    summary: Lhco2dSummary = {
        **summary_header("lhco-2d", cfg.name, cfg.source),
        "protected": list(cfg.decorrelation.protected),
        "sizes": base.sizes,
        "scan": f"scan-{base.scan_key()}",
        "best_model": best.name,
        "n_defining": n_defining,
        "n_testing_background": int(np.sum(np.asarray(samples.testing["label"]) == 0)),
        "permutations": cfg.decorrelation.permutations,
        "methods": results,
        "profiles": _profiles(cfg, samples, best, methods),
        "step_seconds": steps.seconds,
    }
    steps.run("report", write_report, folder, summary)
    write_summary(folder, summary)
    steps.write(folder)
    return summary
