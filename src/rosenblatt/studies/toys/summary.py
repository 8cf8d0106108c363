"""What the pseudo-experiments say: bias, pulls and coverage per setting, against their targets.

For the background predicted in A, two pulls are formed per pseudo-experiment:

- ``pull_true = (true_A - predicted_A) / error``: the stated uncertainty of
  the prediction (``error``, statistics of the data's control regions and
  the closure factor's uncertainty) against the true expected background in
  A under the fitted transform;
- ``pull_observed = (observed_A - predicted_A) / sqrt(error**2 + predicted_A)``:
  what a search compares, the observed count in A (background only) against
  the prediction, with the count's own Poisson variance.

``pull_poisson_only`` is the second with the data's statistics alone and no
closure factor (``(observed_A - B C / D) / sqrt(stat**2 + B C / D)``): the
estimate before its transform's uncertainty is propagated. For the signal
strength fitted to background plus an injected signal (``mu = 1``), its 68%
interval from the profile likelihood is checked for containing 1, and
``(mu_hat - 1)`` over the interval's half width on the side of 1 is its pull.

Every fraction has its binomial error, every mean and standard deviation
their statistical error. The targets: pull standard deviation within
0.9-1.1, coverage of ±1 sd within 68% ± 4%, bias within twice its error.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from typing import TypedDict

import numpy as np

from rosenblatt.studies._common import Claim, ClaimJson, StepSeconds, SummaryHeader, summary_header
from rosenblatt.studies.toys.config import ToysConfig
from rosenblatt.studies.toys.experiment import Setting, ToyResult
from rosenblatt.typing import BoolArray, FloatArray

__all__ = [
    "PullJson",
    "SettingJson",
    "ToysSummary",
    "pull_statistics",
    "summarise",
]


#: the targets of the pull's standard deviation and of the ±1 sd coverage
PULL_SD_RANGE = (0.9, 1.1)
COVERAGE_TARGET, COVERAGE_TOLERANCE = 0.6827, 0.04
#: a bias is significant beyond this many of its errors
BIAS_SIGMAS = 2.0


class PullJson(TypedDict):
    """Mean, standard deviation and coverage of one pull, each with its error."""

    mean: float
    mean_error: float
    sd: float
    sd_error: float
    coverage_1sd: float
    coverage_1sd_error: float
    coverage_2sd: float
    coverage_2sd_error: float


class BackgroundJson(TypedDict):
    """The background predicted in A over the pseudo-experiments."""

    true_A: float
    relative_bias: float
    relative_bias_error: float
    pull_true: PullJson
    pull_observed: PullJson
    pull_poisson_only: PullJson
    stated_relative_error: float
    closure_factor_error: float
    closure_factor_actual_spread: float
    true_closure_factor_mean: float
    true_closure_factor_sd: float
    transform_fit: float
    simulation_statistics: float
    simulation_effective_A: float


class SignalJson(TypedDict):
    """The fitted signal strength of the injected signal (``mu = 1``)."""

    signal_A: float
    bias: float
    bias_error: float
    interval_half_width: float
    pull: PullJson


class TargetsJson(TypedDict):
    """Whether each target holds, and the verdict in words."""

    pull_sd: bool
    coverage_1sd: bool
    bias: bool
    signal_coverage: bool | None
    held: bool
    verdict: str


class SettingJson(TypedDict):
    """One setting's pseudo-experiments."""

    name: str
    kind: str
    parameters: dict[str, object]
    n_defining: int
    n_toys: int
    n_failed: int
    failure: str | None
    #: why the transform fitted in toy 0 may not close at the cut y0, or None
    grid_note: str | None
    background: BackgroundJson | None
    signal: SignalJson | None
    targets: TargetsJson | None


class ToysSummary(SummaryHeader):
    """``summary.json`` of the toys study."""

    n_toys: int
    n_boot: int
    simulation: str
    negative_weight_fraction: float
    x0: float
    y0: float
    seed: int
    population: dict[str, object]
    targets: dict[str, object]
    settings: list[SettingJson]
    claims: list[ClaimJson]
    step_seconds: StepSeconds


def _fraction(hits: BoolArray) -> tuple[float, float]:
    n = len(hits)
    p = float(np.mean(hits)) if n else float("nan")
    return p, math.sqrt(p * (1 - p) / n) if n else float("nan")


def pull_statistics(pulls: Sequence[float] | FloatArray) -> PullJson:
    """Mean, sd and ±1 / ±2 sd coverage of the finite ``pulls``, with their errors."""
    values = np.asarray(pulls, dtype=np.float64)
    values = values[np.isfinite(values)]
    n = len(values)
    sd = float(values.std(ddof=1)) if n > 1 else float("nan")
    cover_1, error_1 = _fraction(np.abs(values) <= 1.0)
    cover_2, error_2 = _fraction(np.abs(values) <= 2.0)
    return {
        "mean": float(values.mean()) if n else float("nan"),
        "mean_error": sd / math.sqrt(n) if n else float("nan"),
        "sd": sd,
        "sd_error": sd / math.sqrt(2 * (n - 1)) if n > 1 else float("nan"),
        "coverage_1sd": cover_1,
        "coverage_1sd_error": error_1,
        "coverage_2sd": cover_2,
        "coverage_2sd_error": error_2,
    }


def _column(rows: Sequence[ToyResult], key: str) -> FloatArray:
    """``key`` of every row (NaN where a row kept from an earlier version lacks it)."""
    return np.asarray([row.get(key, math.nan) for row in rows], dtype=np.float64)


def _background(rows: Sequence[ToyResult]) -> BackgroundJson:
    true_a, predicted = _column(rows, "true_A"), _column(rows, "predicted_A")
    observed = _column(rows, "observed_A")
    stat, syst = _column(rows, "predicted_A_stat"), _column(rows, "predicted_A_syst")
    uncorrected = _column(rows, "predicted_A_uncorrected")
    error = np.hypot(stat, syst)
    raw_stat = stat * uncorrected / predicted
    difference = predicted - true_a
    scale = float(np.mean(true_a))
    factor, true_factor = _column(rows, "factor"), _column(rows, "true_closure_factor")
    return {
        "true_A": scale,
        "relative_bias": float(np.mean(difference)) / scale,
        "relative_bias_error": float(np.std(difference, ddof=1)) / math.sqrt(len(rows)) / scale,
        "pull_true": pull_statistics((true_a - predicted) / error),
        "pull_observed": pull_statistics((observed - predicted) / np.sqrt(error**2 + predicted)),
        "pull_poisson_only": pull_statistics(
            (observed - uncorrected) / np.sqrt(raw_stat**2 + uncorrected)
        ),
        "stated_relative_error": float(np.median(error / predicted)),
        "closure_factor_error": float(np.median(_column(rows, "factor_error"))),
        "closure_factor_actual_spread": float(np.std(factor - true_factor, ddof=1)),
        "true_closure_factor_mean": float(np.mean(true_factor)),
        "true_closure_factor_sd": float(np.std(true_factor, ddof=1)),
        "transform_fit": float(np.nanmedian(_column(rows, "transform_fit")))
        if np.isfinite(_column(rows, "transform_fit")).any()
        else float("nan"),
        "simulation_statistics": float(np.median(_column(rows, "simulation_statistics"))),
        "simulation_effective_A": float(np.median(_column(rows, "simulation_effective_A"))),
    }


def _signal(rows: Sequence[ToyResult]) -> SignalJson | None:
    mu = _column(rows, "mu_hat")
    if not np.isfinite(mu).any():
        return None
    low, high = _column(rows, "mu_low"), _column(rows, "mu_high")
    half = np.where(mu < 1.0, high - mu, mu - low)
    finite = np.isfinite(mu)
    return {
        "signal_A": float(np.mean(_column(rows, "signal_A"))),
        "bias": float(np.mean(mu[finite] - 1.0)),
        "bias_error": float(np.std(mu[finite], ddof=1)) / math.sqrt(int(finite.sum())),
        "interval_half_width": float(np.median(0.5 * (high - low)[finite])),
        "pull": pull_statistics((mu - 1.0) / half),
    }


def _targets(
    background: BackgroundJson, signal: SignalJson | None, n_defining: int, smallest: int
) -> TargetsJson:
    pull = background["pull_observed"]
    low, high = PULL_SD_RANGE
    width = bool(low <= pull["sd"] <= high)
    coverage = bool(abs(pull["coverage_1sd"] - COVERAGE_TARGET) <= COVERAGE_TOLERANCE)
    bias = bool(abs(background["relative_bias"]) <= BIAS_SIGMAS * background["relative_bias_error"])
    signal_coverage = (
        None
        if signal is None
        else bool(abs(signal["pull"]["coverage_1sd"] - COVERAGE_TARGET) <= COVERAGE_TOLERANCE)
    )
    held = width and coverage and bias and signal_coverage is not False
    failed = [
        name
        for name, ok in (
            ("pull sd", width),
            ("coverage", coverage),
            ("bias", bias),
            ("signal coverage", signal_coverage is not False),
        )
        if not ok
    ]
    if held:
        verdict = "held: the stated uncertainty covers"
    elif n_defining == smallest:
        verdict = (
            f"not held ({', '.join(failed)}): the defining sample is too small for this "
            "transform's estimate to be trusted at its stated uncertainty"
        )
    else:
        verdict = "not held: " + ", ".join(failed)
    return {
        "pull_sd": width,
        "coverage_1sd": coverage,
        "bias": bias,
        "signal_coverage": signal_coverage,
        "held": held,
        "verdict": verdict,
    }


def _setting(
    setting: Setting, rows: Sequence[ToyResult], smallest: int, grid_note: str | None
) -> SettingJson:
    good = [row for row in rows if row["error"] is None]
    failures = [row["error"] for row in rows if row["error"] is not None]
    background = _background(good) if len(good) > 2 else None
    signal = _signal(good) if len(good) > 2 else None
    transform = setting.transform
    return {
        "name": setting.name,
        "kind": "raw score" if transform is None else str(transform.kind),
        "parameters": {} if transform is None else dict(transform.parameters),
        "n_defining": setting.n_defining,
        "n_toys": len(rows),
        "n_failed": len(failures),
        "failure": failures[0] if failures else None,
        "grid_note": grid_note,
        "background": background,
        "signal": signal,
        "targets": None
        if background is None
        else _targets(background, signal, setting.n_defining, smallest),
    }


def _claims(setting: SettingJson) -> list[Claim]:
    """The targets of one setting as claims, each decided by the shared rule (2 sd)."""
    background, signal = setting["background"], setting["signal"]
    if background is None:
        return []
    label = f"{setting['name']} at {setting['n_defining']:,} defining events"
    pull = background["pull_observed"]
    low, high = PULL_SD_RANGE
    claims = [
        Claim(
            f"{label}: the background prediction's pull sd lies within {low}-{high}",
            round(pull["sd"], 3),
            min(pull["sd"] - low, high - pull["sd"]),
            pull["sd_error"],
        ),
        Claim(
            f"{label}: its ±1 sd interval covers {100 * COVERAGE_TARGET:.0f}% "
            f"± {100 * COVERAGE_TOLERANCE:.0f}%",
            round(pull["coverage_1sd"], 3),
            COVERAGE_TOLERANCE - abs(pull["coverage_1sd"] - COVERAGE_TARGET),
            pull["coverage_1sd_error"],
        ),
        Claim(
            f"{label}: the prediction's bias is within {BIAS_SIGMAS:g} of its errors",
            round(background["relative_bias"], 4),
            BIAS_SIGMAS * background["relative_bias_error"] - abs(background["relative_bias"]),
        ),
    ]
    if signal is not None:
        cover = signal["pull"]
        claims.append(
            Claim(
                f"{label}: the signal strength's 68% interval covers "
                f"{100 * COVERAGE_TARGET:.0f}% ± {100 * COVERAGE_TOLERANCE:.0f}%",
                round(cover["coverage_1sd"], 3),
                COVERAGE_TOLERANCE - abs(cover["coverage_1sd"] - COVERAGE_TARGET),
                cover["coverage_1sd_error"],
            )
        )
    return claims


def summarise(
    cfg: ToysConfig,
    results: Sequence[tuple[Setting, Sequence[ToyResult], str | None]],
    seconds: Mapping[str, float],
) -> ToysSummary:
    """The summary of every setting's pseudo-experiments and the note of its grid, if any."""
    # a failure at the smallest of several defining sizes is put down to the sample's size
    smallest = min(cfg.defining_sizes) if len(cfg.defining_sizes) > 1 else 0
    settings = [_setting(s, rows, smallest, note) for s, rows, note in results]
    return {
        **summary_header("toys", cfg.name, cfg.source),
        "n_toys": cfg.n_toys,
        "n_boot": cfg.replicas,
        "simulation": cfg.simulation,
        "negative_weight_fraction": cfg.negative_weight_fraction,
        "x0": cfg.x0,
        "y0": cfg.y0,
        "seed": cfg.seed,
        "population": asdict(cfg.population),
        "targets": {
            "pull_sd": list(PULL_SD_RANGE),
            "coverage_1sd": [COVERAGE_TARGET, COVERAGE_TOLERANCE],
            "bias_within_errors": BIAS_SIGMAS,
        },
        "settings": settings,
        "claims": [claim.to_json() for setting in settings for claim in _claims(setting)],
        "step_seconds": dict(seconds),
    }
