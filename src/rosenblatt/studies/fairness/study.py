"""Outside physics: a classifier made independent of a continuous protected attribute.

Two data sets that ship inside installed packages (nothing is downloaded):

- the Toronto arrests (``sklego.datasets.load_arrests``, 5,226 people):
  predict release with a summons, protected attribute ``age``. Compared on the
  same stratified folds: the raw classifiers (logistic regression and
  histogram gradient boosting), :class:`rosenblatt.sklearn.DecorrelatedClassifier`
  with IRGI, KDE and GridKDE, scikit-lego's linear ``InformationFilter`` and
  fairlearn's ``ThresholdOptimizer`` (demographic parity over age quintiles);
- scikit-learn's handwritten digits (``load_digits``): a classifier of two
  digits whose score is made independent of the image's total ink.

Every figure of merit is computed on the pooled out-of-fold scores, with a
paired bootstrap over people for its uncertainty: AUC, dCor² of the protected
attribute and the score beside its permutation floor, and the spread (largest
minus smallest) across age quintiles of the positive rate (demographic
parity) and of the true- and false-positive rates (equalised odds), at every
working point from 10% to 90% of people rejected.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np

import rosenblatt as rb
from rosenblatt._atomic import write_text
from rosenblatt.metrics import PermutationTestResult
from rosenblatt.studies._common import Claim, ClaimJson, Steps, summary_header, write_summary
from rosenblatt.studies.fairness.config import ArrestsConfig, DigitsConfig, FairnessConfig
from rosenblatt.studies.fairness.parity import age_groups, group_rates, parity_spreads
from rosenblatt.studies.fairness.summary import (
    ArrestsJson,
    ArrestsScores,
    DigitsJson,
    DigitsRow,
    DigitsScores,
    FairnessSummary,
    MethodRow,
)
from rosenblatt.typing import FloatArray, Int64Array, IntArray

__all__ = [
    "age_groups",
    "arrests_table",
    "group_rates",
    "parity_spreads",
    "run",
]

log = logging.getLogger("rosenblatt.fairness")

#: the study's steps, in order; each one's wall time goes to ``timings.json``
STEPS = ("arrests", "digits", "report")


def arrests_table() -> tuple[Any, Int64Array]:
    """The arrests data as numeric columns, and the label (1: released with a summons).

    Returns
    -------
    X : pandas.DataFrame
        ``age``, ``year``, ``checks`` and the indicators ``colour_white``,
        ``sex_male``, ``employed``, ``citizen`` (all float).
    y : ndarray
        1 where ``released`` is ``"Yes"``.
    """
    import pandas as pd
    from sklego.datasets import load_arrests

    df = load_arrests(as_frame=True)
    X = pd.DataFrame(
        {
            "age": df["age"].astype(float),
            "year": df["year"].astype(float),
            "checks": df["checks"].astype(float),
            "colour_white": (df["colour"] == "White").astype(float),
            "sex_male": (df["sex"] == "Male").astype(float),
            "employed": (df["employed"] == "Yes").astype(float),
            "citizen": (df["citizen"] == "Yes").astype(float),
        }
    )
    return X, (df["released"] == "Yes").to_numpy().astype(np.int64)


#: the compared methods, in the study's order: name, label, the raw classifier it starts from, kind
METHOD_TABLE = (
    ("lr", "LogisticRegression", None, "raw"),
    ("hgb", "HistGradientBoosting", None, "raw"),
    ("lr_irgi", "LR + rosenblatt IRGI", "lr", "rosenblatt"),
    ("lr_kde", "LR + rosenblatt KDE", "lr", "rosenblatt"),
    ("lr_gridkde", "LR + rosenblatt GridKDE", "lr", "rosenblatt"),
    ("hgb_gridkde", "HGB + rosenblatt GridKDE", "hgb", "rosenblatt"),
    ("lr_gridkde_negative", "LR + GridKDE, negatives defining", "lr", "rosenblatt-negative"),
    ("information_filter", "InformationFilter + LR (scikit-lego)", "lr", "other"),
    ("threshold_optimizer", "ThresholdOptimizer(HGB), DP (fairlearn)", "hgb", "other"),
)


@dataclass(frozen=True, slots=True)
class _Method:
    """A compared method: its name, label, the raw classifier it starts from, kind and factory."""

    name: str
    label: str
    raw: str | None
    kind: str
    make: Callable[[], Any]


@dataclass(frozen=True, slots=True)
class _Merit:
    """The figures of merit of a score: AUC, dCor² with the age, and the parity spreads."""

    auc: float
    dcc: float
    spreads: dict[str, FloatArray]


@dataclass(frozen=True, slots=True)
class _Draws:
    """The figures of merit of a score over the bootstrap draws, one row per draw."""

    auc: FloatArray
    dcc: FloatArray
    spreads: dict[str, FloatArray]

    @classmethod
    def stack(cls, merits: list[_Merit]) -> _Draws:
        """Every draw's figures of merit stacked (spreads: draws by working points)."""
        return cls(
            np.asarray([m.auc for m in merits]),
            np.asarray([m.dcc for m in merits]),
            {key: np.asarray([m.spreads[key] for m in merits]) for key in merits[0].spreads},
        )


def _makers(config: ArrestsConfig, seed: int) -> dict[str, Callable[[], Any]]:
    """A factory of each method's unfitted estimator, by name."""
    from fairlearn.postprocessing import ThresholdOptimizer
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from sklego.preprocessing import InformationFilter

    from rosenblatt.sklearn import DecorrelatedClassifier

    hgb_options = dict(config.hgb)
    inner_cv = dict(config.inner_cv)

    def lr() -> Any:
        return make_pipeline(
            StandardScaler().set_output(transform="pandas"), LogisticRegression(max_iter=1000)
        )

    def hgb() -> Any:
        return HistGradientBoostingClassifier(random_state=seed, **hgb_options)

    def decorrelated(
        base: Callable[[], Any], cdf: Any, defining: Literal["negative", "all"] = "all"
    ) -> Callable[[], Any]:
        cv = inner_cv[base.__name__]
        return lambda: DecorrelatedClassifier(
            base(), protected="age", cdf=cdf, defining=defining, cv=cv
        )

    def information_filter() -> Any:
        return make_pipeline(
            StandardScaler().set_output(transform="pandas"),
            InformationFilter(columns=["age"]),
            LogisticRegression(max_iter=1000),
        )

    def threshold_optimizer() -> Any:
        return ThresholdOptimizer(
            estimator=hgb(),
            constraints="demographic_parity",
            predict_method="predict_proba",
            objective="accuracy_score",
        )

    return {
        "lr": lr,
        "hgb": hgb,
        "lr_irgi": decorrelated(lr, rb.IRGI(depth="auto")),
        "lr_kde": decorrelated(lr, rb.KDE(sigma_r="auto")),
        "lr_gridkde": decorrelated(lr, rb.GridKDE(sigma_r="auto")),
        "hgb_gridkde": decorrelated(hgb, rb.GridKDE(sigma_r="auto")),
        "lr_gridkde_negative": decorrelated(lr, rb.GridKDE(sigma_r="auto"), "negative"),
        "information_filter": information_filter,
        "threshold_optimizer": threshold_optimizer,
    }


def _methods(config: ArrestsConfig, seed: int) -> list[_Method]:
    """The compared methods: name, label, the raw classifier it starts from, and a factory.

    Parameters
    ----------
    config
        The arrests section: inner cross-validation, boosting options, methods run.
    seed
        Seed of the gradient boosting.

    Returns
    -------
    list of _Method
        The methods of ``config.methods`` (all when ``None``), in the study's order
        (:data:`METHOD_TABLE`).
    """
    makers = _makers(config, seed)
    return [
        _Method(name, label, raw, kind, makers[name])
        for name, label, raw, kind in METHOD_TABLE
        if config.methods is None or name in config.methods
    ]


def _out_of_fold(
    method: _Method,
    X: Any,
    y: Int64Array,
    groups: IntArray,
    folds: list[tuple[IntArray, IntArray]],
) -> tuple[FloatArray, float]:
    """Out-of-fold score of every person, and the seconds it took."""
    start = time.perf_counter()
    score = np.empty(len(y))
    for train, test in folds:
        model = method.make()
        if method.name == "threshold_optimizer":
            sensitive_train = [f"q{g}" for g in groups[train]]
            model.fit(X.iloc[train], y[train], sensitive_features=sensitive_train)
            sensitive_test = [f"q{g}" for g in groups[test]]
            score[test] = model._pmf_predict(X.iloc[test], sensitive_features=sensitive_test)[:, 1]
        else:
            model.fit(X.iloc[train], y[train])
            score[test] = model.predict_proba(X.iloc[test])[:, 1]
    return score, time.perf_counter() - start


# ----------------------------------------------------------------- figures of merit
def _figures_of_merit(
    score: FloatArray,
    y: Int64Array,
    x: FloatArray,
    groups: IntArray,
    n_groups: int,
    working_points: FloatArray,
    weight: FloatArray | None = None,
) -> _Merit:
    return _Merit(
        rb.roc_auc(y, score, weight),
        rb.distance_correlation_sqr(x, score, weight),
        parity_spreads(score, y, groups, n_groups, working_points, weight),
    )


def _bootstrap(
    scores: dict[str, FloatArray],
    y: Int64Array,
    x: FloatArray,
    groups: IntArray,
    n_groups: int,
    working_points: FloatArray,
    n_boot: int,
    rng: np.random.Generator,
) -> dict[str, _Draws]:
    """Paired bootstrap over people: the same multinomial counts, as weights, for every method."""
    n = len(y)
    draws: dict[str, list[_Merit]] = {name: [] for name in scores}
    for _ in range(n_boot):
        counts = np.bincount(rng.integers(0, n, n), minlength=n).astype(np.float64)
        for name, score in scores.items():
            draws[name].append(
                _figures_of_merit(score, y, x, groups, n_groups, working_points, counts)
            )
    return {name: _Draws.stack(merits) for name, merits in draws.items()}


def _sd(values: FloatArray) -> list[float]:
    sd: list[float] = np.std(values, axis=0, ddof=1).tolist()
    return sd


# ----------------------------------------------------------------- the arrests
def _method_row(
    method: _Method,
    score: FloatArray,
    seconds: float,
    central: dict[str, _Merit],
    boot: dict[str, _Draws],
    perms: dict[str, PermutationTestResult],
    y: IntArray,
    folds: list[tuple[IntArray, IntArray]],
) -> MethodRow:
    """One method's row of the summary: figures of merit, their bootstrap sd, its AUC cost."""
    name, raw = method.name, method.raw
    merit, draws, perm = central[name], boot[name], perms[name]
    spread = {key: value.tolist() for key, value in merit.spreads.items()}
    spread_sd = {key: _sd(value) for key, value in draws.spreads.items()}
    row: MethodRow = {
        "name": name,
        "label": method.label,
        "kind": method.kind,
        "raw": raw,
        "seconds": seconds,
        "auc": merit.auc,
        "auc_sd": float(np.std(draws.auc, ddof=1)),
        "auc_folds": [rb.roc_auc(y[test], score[test]) for _, test in folds],
        "dcc": merit.dcc,
        "dcc_sd": float(np.std(draws.dcc, ddof=1)),
        "dcc_floor": perm.floor,
        "dcc_floor_std": perm.floor_std,
        "p_value": perm.p_value,
        "demographic_parity": spread["demographic_parity"],
        "demographic_parity_sd": spread_sd["demographic_parity"],
        "equalised_odds": spread["equalised_odds"],
        "equalised_odds_sd": spread_sd["equalised_odds"],
        "tpr": spread["tpr"],
        "tpr_sd": spread_sd["tpr"],
        "fpr": spread["fpr"],
        "fpr_sd": spread_sd["fpr"],
    }
    if raw is not None:
        cost = boot[raw].auc - draws.auc
        row["auc_cost"] = central[raw].auc - merit.auc
        row["auc_cost_sd"] = float(np.std(cost, ddof=1))
    return row


def _arrests_section(
    cfg: FairnessConfig,
    y: IntArray,
    groups: IntArray,
    edges: FloatArray,
    rows: list[MethodRow],
    scores: dict[str, FloatArray],
) -> ArrestsJson:
    """The arrests section of the summary: the data, the settings, every method's row."""
    n_groups = cfg.age_groups
    group_rate_table = {
        name: {
            f"{q:g}": group_rates(score, groups, n_groups, q).tolist()
            for q in cfg.rate_working_points
        }
        for name, score in scores.items()
    }
    return {
        "n_people": len(y),
        "positive_fraction": float(y.mean()),
        "folds": cfg.folds,
        "inner_cv": dict(cfg.arrests.inner_cv),
        "bootstrap": cfg.bootstrap,
        "permutations": cfg.permutations,
        "age_edges": edges.tolist(),
        "group_sizes": np.bincount(groups, minlength=n_groups).tolist(),
        "working_points": np.asarray(cfg.working_points, dtype=float).tolist(),
        "methods": rows,
        "group_rates": group_rate_table,
    }


def _arrests(cfg: FairnessConfig) -> tuple[ArrestsJson, ArrestsScores]:
    """The arrests comparison: summary section and the arrays the figures need."""
    from sklearn.model_selection import StratifiedKFold

    seed = cfg.seed
    X, y = arrests_table()
    x = X["age"].to_numpy()
    n_groups = cfg.age_groups
    groups, edges = age_groups(x, n_groups)
    working_points = np.asarray(cfg.working_points, dtype=float)
    n_folds = cfg.folds
    splitter = StratifiedKFold(n_folds, shuffle=True, random_state=seed)
    folds = [(train.astype(np.intp), test.astype(np.intp)) for train, test in splitter.split(X, y)]
    methods = _methods(cfg.arrests, seed)

    scores: dict[str, FloatArray] = {}
    seconds: dict[str, float] = {}
    for method in methods:
        scores[method.name], seconds[method.name] = _out_of_fold(method, X, y, groups, folds)
        log.info("arrests: %s out of fold in %.1f s", method.label, seconds[method.name])

    n_perm = cfg.permutations
    central = {
        name: _figures_of_merit(score, y, x, groups, n_groups, working_points)
        for name, score in scores.items()
    }
    perms = {
        name: rb.permutation_test(x, score, n_permutations=n_perm, seed=seed)
        for name, score in scores.items()
    }
    start = time.perf_counter()
    boot = _bootstrap(
        scores,
        y,
        x,
        groups,
        n_groups,
        working_points,
        cfg.bootstrap,
        np.random.default_rng(seed + 1),
    )
    log.info("arrests: bootstrap in %.1f s", time.perf_counter() - start)

    rows = [
        _method_row(
            method, scores[method.name], seconds[method.name], central, boot, perms, y, folds
        )
        for method in methods
    ]

    section = _arrests_section(cfg, y, groups, edges, rows, scores)
    return section, ArrestsScores(scores, x, y, groups)


# ----------------------------------------------------------------- the digits
def _digits_row(
    config: DigitsConfig, seed: int, score: FloatArray, ink: FloatArray, y: IntArray
) -> DigitsRow:
    """A digits score's AUC (bootstrap sd) and dCor² with the ink, on the first class and on all."""
    rng = np.random.default_rng(seed + 2)
    counts = [
        np.bincount(rng.integers(0, len(y), len(y)), minlength=len(y))
        for _ in range(config.bootstrap)
    ]
    neg = y == 0
    perm = rb.permutation_test(ink[neg], score[neg], n_permutations=config.permutations, seed=seed)
    perm_all = rb.permutation_test(ink, score, n_permutations=config.permutations, seed=seed)
    return {
        "auc": rb.roc_auc(y, score),
        "auc_sd": float(np.std([rb.roc_auc(y, score, c) for c in counts], ddof=1)),
        "dcc_negative": perm.statistic,
        "dcc_negative_floor": perm.floor,
        "dcc_negative_floor_std": perm.floor_std,
        "p_value_negative": perm.p_value,
        "dcc_all": perm_all.statistic,
        "dcc_all_floor": perm_all.floor,
    }


def _digits(config: DigitsConfig, seed: int) -> tuple[DigitsJson, DigitsScores]:
    """Two digit classes, the score made independent of the total ink on the first class."""
    import pandas as pd
    from sklearn.datasets import load_digits
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import StratifiedKFold
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from rosenblatt.sklearn import DecorrelatedClassifier

    negative, positive = config.classes
    digits = load_digits()
    mask = np.isin(digits.target, [negative, positive])
    pixels = digits.data[mask]
    y = (digits.target[mask] == positive).astype(np.int64)
    ink = pixels.sum(axis=1)
    X = pd.DataFrame(pixels, columns=[f"pixel{i}" for i in range(pixels.shape[1])])
    X["ink"] = ink
    pixel_columns = list(X.columns[:-1])
    C = config.C
    inner_cv = config.inner_cv

    def classifier() -> Any:
        return make_pipeline(StandardScaler(), LogisticRegression(C=C, max_iter=5000))

    splitter = StratifiedKFold(config.folds, shuffle=True, random_state=seed)
    scores = {"raw": np.empty(len(y)), "decorrelated": np.empty(len(y))}
    for train, test in splitter.split(X, y):
        raw = classifier().fit(X.iloc[train][pixel_columns], y[train])
        scores["raw"][test] = raw.predict_proba(X.iloc[test][pixel_columns])[:, 1]
        model = DecorrelatedClassifier(
            classifier(), protected="ink", use_protected=False, defining="negative", cv=inner_cv
        ).fit(X.iloc[train], y[train])
        scores["decorrelated"][test] = model.predict_proba(X.iloc[test])[:, 1]

    neg = y == 0
    section: DigitsJson = {
        "classes": [negative, positive],
        "n_images": len(y),
        "n_negative": int(neg.sum()),
        "auc_ink": rb.roc_auc(y, ink),
        "raw": _digits_row(config, seed, scores["raw"], ink, y),
        "decorrelated": _digits_row(config, seed, scores["decorrelated"], ink, y),
    }
    return section, DigitsScores(scores, ink, y)


# ----------------------------------------------------------------- claims and run
def _parity_margin(row: MethodRow, raw: MethodRow) -> float:
    """The smallest margin, in sd, by which ``row``'s parity spread is below ``raw``'s."""
    margin = np.asarray(raw["demographic_parity"]) - np.asarray(row["demographic_parity"])
    sd = np.hypot(
        np.asarray(raw["demographic_parity_sd"]), np.asarray(row["demographic_parity_sd"])
    )
    with np.errstate(divide="ignore", invalid="ignore"):
        return float(np.min(margin / sd))


def _method_claims(row: MethodRow, raw: MethodRow, ratio: float) -> list[Claim]:
    """The claims on one decorrelated method of the arrests data."""
    return [
        Claim(
            f"{row['label']}: dCor²(age, score) <= {ratio:g} x its permutation floor",
            [row["dcc"], row["dcc_floor"]],
            ratio * row["dcc_floor"] - row["dcc"],
            row["dcc_sd"],
        ),
        # every working point in units of its sd: beyond 2 at each one, or below -2 at one
        Claim(
            f"{row['label']}: positive-rate spread across age groups below {raw['label']}'s "
            "at every working point",
            [row["demographic_parity"], raw["demographic_parity"]],
            _parity_margin(row, raw),
            1.0,
        ),
        Claim(
            f"{row['label']}: AUC cost against {raw['label']} stated with its uncertainty",
            [row["auc_cost"], row["auc_cost_sd"]],
            0.0,
        ),
    ]


def _claims(arrests: ArrestsJson, digits: DigitsJson, ratio: float) -> list[ClaimJson]:
    """The study's claims, each decided beyond 2 sd (:func:`~rosenblatt.studies._common.decide`).

    The digits' dCor² has no bootstrap; its uncertainty is the spread of dCor² under
    independence (the permutations' standard deviation).
    """
    rows = {row["name"]: row for row in arrests["methods"]}
    claims = []
    for row in arrests["methods"]:
        if row["kind"] == "rosenblatt" and (raw := row["raw"]) is not None:
            claims += _method_claims(row, rows[raw], ratio)
    dec = digits["decorrelated"]
    claims.append(
        Claim(
            f"digits: dCor²(ink, score) of the '{digits['classes'][0]}'s <= {ratio:g} x its floor",
            [dec["dcc_negative"], dec["dcc_negative_floor"]],
            ratio * dec["dcc_negative_floor"] - dec["dcc_negative"],
            dec["dcc_negative_floor_std"],
        )
    )
    return [claim.to_json() for claim in claims]


def run(config: dict[str, Any], folder: Path) -> FairnessSummary:
    """Run the fairness study of ``config`` and write ``report.md``, ``summary.json`` and figures.

    Parameters
    ----------
    config
        A configuration read by :func:`rosenblatt.config.load_config`, validated
        by :meth:`FairnessConfig.parse` before anything runs.
    folder
        Where the results are written.

    Returns
    -------
    FairnessSummary
        The summary written to ``summary.json``.

    Raises
    ------
    rosenblatt.studies.config_checks.ConfigError
        If a key of ``config`` is unknown, of the wrong type or out of range.
    """
    cfg = FairnessConfig.parse(config)
    # scikit-learn's OpenMP and BLAS runtimes are loaded first: a thread limit reaches only
    # the libraries loaded when it is set
    import sklearn.ensemble  # noqa: F401
    from threadpoolctl import threadpool_limits

    from rosenblatt.studies.fairness import report as fairness_report

    steps = Steps(STEPS, log, digits=2)
    with threadpool_limits(limits=cfg.threads):
        arrests, arrests_arrays = steps.run("arrests", _arrests, cfg)
        digits, digits_arrays = steps.run("digits", _digits, cfg.digits, cfg.seed)
    summary: FairnessSummary = {
        **summary_header("fairness", cfg.name, cfg.source),
        "seed": cfg.seed,
        "arrests": arrests,
        "digits": digits,
        "claims": _claims(arrests, digits, cfg.dcc_floor_ratio_max),
        "step_seconds": dict(steps.seconds),
    }
    with steps.timed("report"):
        figures = fairness_report.figures(folder, summary, arrests_arrays, digits_arrays)
        write_text(folder / "report.md", fairness_report.report(summary, figures))
    summary["step_seconds"] = dict(steps.seconds)
    write_summary(folder, summary)
    steps.write(folder)
    return summary
