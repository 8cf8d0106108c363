"""The pass/fail pseudo-experiments summarised: bias, pulls and coverage of ``mu``, global significance.

Per score, injected mass and strength: the bias of the fitted signal strength (the
mean of ``mu_hat - mu``, with its error), the pulls (``mu_hat - mu`` over the
interval's half towards ``mu``) and the coverage of the 68% profile-likelihood
interval with its binomial error. Per score, over the background-only data sets:
the fraction whose largest local significance reaches each threshold beside the
Gross-Vitells estimate (their mean upcrossings of ``u0``), and the
Kolmogorov-Smirnov test of each data set's own global p-value against the uniform
distribution it has when the fit's model holds.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, TypedDict, cast

import numpy as np
from scipy import stats

from rosenblatt.studies._common import (
    ALPHA,
    Claim,
    ClaimJson,
    StepSeconds,
    SummaryHeader,
    summary_header,
)
from rosenblatt.studies.passfail_toys.config import PassfailToysConfig
from rosenblatt.studies.passfail_toys.spectra import KEYED, STATISTICAL

#: the fits without a non-closure per bin
NO_NONCLOSURE = "none"
#: how the table names the fits of each non-closure kept to compare
NONCLOSURE_LABELS = {
    STATISTICAL: "statistical non-closure only",
    NO_NONCLOSURE: "no non-closure",
}

__all__ = [
    "BIAS_FRACTION",
    "COVERAGE_TARGET",
    "COVERAGE_TOLERANCE",
    "THRESHOLDS",
    "FitJson",
    "GlobalJson",
    "PassfailToysSummary",
    "ScoreJson",
    "ScoreRows",
    "ToyRow",
    "summarise",
]


class _ToyFits(TypedDict):
    toy: int
    fits: dict[str, list[float]]


class ToyRow(_ToyFits, total=False):
    """One pseudo-experiment as kept.

    ``toy``, its index; ``fits`` per ``"<mass>/<strength>"`` as ``[mu_hat, low,
    high]``; then, of its background-only data set, ``max_z`` (the largest local
    significance over the scan) and ``upcrossings`` (of the reference level ``u0``);
    with keyed replicas, ``compare``: per other non-closure of the fit, the same
    data sets' fits as ``fits``.
    """

    max_z: float
    upcrossings: int
    compare: dict[str, dict[str, list[float]]]


#: a score's name, its pseudo-experiments and the reference maxima of its global p-values
ScoreRows = tuple[str, list[ToyRow], list[float]]

#: the coverage of a 68% interval (one Gaussian standard deviation)
COVERAGE_TARGET = float(stats.norm.cdf(1.0) - stats.norm.cdf(-1.0))
#: the band around it that the claim allows
COVERAGE_TOLERANCE = 0.03
#: the fraction of the stated error (the interval's half-width) within which a bias counts as none
BIAS_FRACTION = 0.2
#: local significances whose global rate is compared with Gross-Vitells
THRESHOLDS = (1.0, 2.0, 3.0)


class FitJson(TypedDict):
    """The fits of one injected mass and strength."""

    mass: float
    strength: float
    n: int
    bias: float
    bias_error: float
    pull_mean: float
    pull_sd: float
    pull_sd_error: float
    coverage: float
    coverage_error: float
    half_width: float
    unbiased: bool
    covers: bool


class ThresholdJson(TypedDict):
    """The rate of a largest local significance at least ``z``, measured and predicted."""

    z: float
    fraction: float
    fraction_error: float
    gross_vitells: float


class GlobalJson(TypedDict):
    """The background-only data sets' scans."""

    n: int
    upcrossings: float
    thresholds: list[ThresholdJson]
    global_p_mean: float
    ks_statistic: float
    ks_pvalue: float


class _ScoreJson(TypedDict):
    name: str
    decorrelated: bool
    fits: list[FitJson]
    background_only: GlobalJson | None


class ScoreJson(_ScoreJson, total=False):
    """One score's pseudo-experiments.

    With keyed replicas (``n_boot``), a fitted transform's ``nonclosure`` is that of
    its fits: ``"keyed bootstrap"``, or for those kept to compare (``compared``,
    claiming nothing) ``"statistical"`` or ``"none"``.
    """

    nonclosure: str
    compared: bool


class _Summary(SummaryHeader):
    n_toys: int
    n_defining: int
    coverage_target: float
    coverage_tolerance: float
    spectrum: dict[str, Any]
    scores: list[ScoreJson]
    claims: list[ClaimJson]
    step_seconds: StepSeconds


class PassfailToysSummary(_Summary, total=False):
    """``summary.json`` of the study; ``n_boot``, the keyed replicas per toy, where there are."""

    n_boot: int


def _fits(rows: Sequence[ToyRow], mass: float, strength: float, mode: str | None = None) -> FitJson:
    key = f"{mass:g}/{strength:g}"
    values = np.array(
        [row["fits"][key] if mode is None else row["compare"][mode][key] for row in rows],
        dtype=np.float64,
    )
    mu, low, high = values.T
    n = mu.size
    residual = mu - strength
    error = np.where(residual < 0, high - mu, mu - low)
    with np.errstate(divide="ignore", invalid="ignore"):
        pulls = residual / error
    pulls = pulls[np.isfinite(pulls)]
    coverage = float(np.mean((low <= strength) & (strength <= high)))
    bias = float(residual.mean())
    bias_error = float(residual.std(ddof=1) / math.sqrt(n)) if n > 1 else math.nan
    pull_sd = float(pulls.std(ddof=1)) if pulls.size > 1 else math.nan
    coverage_error = math.sqrt(coverage * (1 - coverage) / n)
    half_width = float(np.mean(0.5 * (high - low)))
    return {
        "mass": mass,
        "strength": strength,
        "n": n,
        "bias": bias,
        "bias_error": bias_error,
        "pull_mean": float(pulls.mean()) if pulls.size else math.nan,
        "pull_sd": pull_sd,
        "pull_sd_error": pull_sd / math.sqrt(2 * (pulls.size - 1)) if pulls.size > 1 else math.nan,
        "coverage": coverage,
        "coverage_error": coverage_error,
        "half_width": half_width,
        "unbiased": bool(abs(bias) <= BIAS_FRACTION * half_width),
        "covers": bool(abs(coverage - COVERAGE_TARGET) <= COVERAGE_TOLERANCE),
    }


def _background_only(
    rows: Sequence[ToyRow], reference: Sequence[float], u0: float
) -> GlobalJson | None:
    if not reference or not all("max_z" in row for row in rows):
        return None
    max_z = np.array([row["max_z"] for row in rows], dtype=np.float64)
    ordered = np.sort(np.asarray(reference, dtype=np.float64))
    global_p = 1.0 - np.searchsorted(ordered, max_z, side="left") / ordered.size
    upcrossings = float(np.mean([row["upcrossings"] for row in rows]))
    n = max_z.size
    thresholds: list[ThresholdJson] = []
    for z in THRESHOLDS:
        fraction = float(np.mean(max_z >= z))
        predicted = float(stats.norm.sf(z)) + upcrossings * math.exp(-(z * z - u0) / 2.0)
        thresholds.append(
            {
                "z": z,
                "fraction": fraction,
                "fraction_error": math.sqrt(fraction * (1 - fraction) / n),
                "gross_vitells": predicted,
            }
        )
    ks = stats.kstest(global_p, "uniform")
    return {
        "n": n,
        "upcrossings": upcrossings,
        "thresholds": thresholds,
        "global_p_mean": float(global_p.mean()),
        "ks_statistic": float(ks.statistic),
        "ks_pvalue": float(ks.pvalue),
    }


def _claims(score: ScoreJson) -> list[Claim]:
    """A decorrelated score's fit covers, is unbiased and claims uniform global p-values; the
    raw score's fit is biased. A fit kept for comparison claims nothing."""
    name, fits = score["name"], score["fits"]
    if score.get("compared", False):
        return []
    relative = [abs(f["bias"]) / f["half_width"] if f["half_width"] > 0 else math.inf for f in fits]
    largest = max(relative)
    bias_text = f"largest |bias| {largest:.2f} of the stated error"
    if not score["decorrelated"]:
        return [
            Claim(
                f"{name}: the sculpted background biases mu beyond its stated error",
                bias_text,
                largest - 1.0,
            )
        ]
    pooled = float(np.mean([f["coverage"] for f in fits]))
    worst = max(fits, key=lambda f: abs(f["coverage"] - COVERAGE_TARGET))
    within = sum(f["covers"] for f in fits)
    distance = abs(worst["coverage"] - COVERAGE_TARGET)
    sds = distance / worst["coverage_error"] if worst["coverage_error"] > 0 else math.inf
    coverage_text = (
        f"{100 * pooled:.1f}% over all; within the band in {within} of {len(fits)} settings, "
        f"furthest {100 * worst['coverage']:.1f} ± {100 * worst['coverage_error']:.1f}% "
        f"({sds:.1f} binomial sd) at mass/mu {worst['mass']:g}/{worst['strength']:g}"
    )
    scan = score["background_only"]
    claims = [
        Claim(
            f"{name}: the 68% interval of mu covers {100 * COVERAGE_TARGET:.1f} ± "
            f"{100 * COVERAGE_TOLERANCE:.0f}% over the injected masses and strengths",
            coverage_text,
            COVERAGE_TOLERANCE - abs(pooled - COVERAGE_TARGET),
        ),
        Claim(
            f"{name}: mu is unbiased within {BIAS_FRACTION:g} of its stated error at every "
            "injected mass and strength",
            bias_text,
            BIAS_FRACTION - largest,
        ),
    ]
    if scan is not None:
        claims.append(
            Claim(
                f"{name}: the background-only data sets' claimed global p-values are uniform",
                f"Kolmogorov-Smirnov p {scan['ks_pvalue']:.2g}",
                scan["ks_pvalue"] - ALPHA,
            )
        )
    return claims


def summarise(
    cfg: PassfailToysConfig,
    results: Sequence[ScoreRows],
    seconds: Mapping[str, float],
) -> PassfailToysSummary:
    """The summary of every score's pseudo-experiments."""
    spectrum = cfg.spectrum
    scores: list[ScoreJson] = []
    for name, rows, reference in results:
        fits = [_fits(rows, m, s) for m in spectrum.masses for s in spectrum.strengths]
        compared = list(rows[0].get("compare", {})) if rows else []
        score: ScoreJson = {
            "name": name,
            "decorrelated": name != "score",
            "fits": fits,
            "background_only": _background_only(rows, reference, spectrum.reference_level),
        }
        if compared:
            score["nonclosure"] = KEYED
        scores.append(score)
        scores += [
            {
                "name": f"{name}, {NONCLOSURE_LABELS[mode]}",
                "decorrelated": True,
                "nonclosure": mode,
                "compared": True,
                "fits": [
                    _fits(rows, m, s, mode) for m in spectrum.masses for s in spectrum.strengths
                ],
                "background_only": None,
            }
            for mode in compared
        ]
    base: _Summary = {
        **summary_header("passfail-toys", cfg.name, cfg.source),
        "n_toys": cfg.n_toys,
        "n_defining": cfg.n_defining,
        "coverage_target": COVERAGE_TARGET,
        "coverage_tolerance": COVERAGE_TOLERANCE,
        "spectrum": {
            "bins": spectrum.bins,
            "y0": spectrum.y0,
            "signal_yield": spectrum.signal_yield,
            "resolution": spectrum.resolution,
            "scan": list(spectrum.scan),
            "global_toys": spectrum.global_toys,
            "reference_level": spectrum.reference_level,
        },
        "scores": scores,
        "claims": [claim.to_json() for score in scores for claim in _claims(score)],
        "step_seconds": dict(seconds),
    }
    summary = cast("PassfailToysSummary", base)
    if cfg.replicas:
        summary["n_boot"] = cfg.replicas
    return summary
