"""The data-driven estimate of the ABCD study: the cut chosen on simulation, then the data's B, C, D.

Per variant (raw score or transform):

1. **The cut.** Given (``abcd.cut``), or chosen on simulation before any data
   event is read: among the cuts whose background non-closure
   ``N_A - N_B N_C / N_D`` lies within two bootstrap standard deviations of
   zero (:func:`rosenblatt.abcd.closure_test_histogram`), the one of largest
   expected significance ``Z_A(s, b, sigma_b)`` (the Asimov significance of a
   count with an uncertain background: ``b = (N_A + N_B)(N_A + N_C) / N`` of
   the background simulation, its count in A from the plane's margins,
   ``sigma_b`` the non-closure's standard deviation with the simulation's
   statistics at what the margins expect, ``s`` the signal simulation in A).
   Both fluctuate independently of the closure factor measured at the cut, so
   choosing by them does not bias that factor; ``N_B N_C / N_D`` and the
   error measured at the cut would (the first falls where the factor rises,
   the second where it falls). Only
   cuts where the background simulation's weights sum above zero in every
   region are chosen: elsewhere its closure factor cannot be measured.
2. **The estimate.** The data's ``B``, ``C``, ``D`` at that cut give
   ``B C / D`` with its statistical uncertainty ``sqrt(1/B + 1/C + 1/D)``
   (relative), corrected by the closure factor measured on the background
   simulation there, whose error (the simulation's statistics and the
   transform's fit, :mod:`rosenblatt.abcd.closure_correction`) is the
   systematic. The pyhf workspace holds the data as observations (A: the
   prediction while blinded) and the signal simulation as the signal.
3. **Unblinded**, the observed ``A`` with the observed significance and 95%
   CLs upper limit beside the expected ones.

A variant whose background closure test over the grid has ``p < 0.05``, or
whose background simulation sums to zero or less in a region of its cut, is
marked ``valid: false``: its estimate is not valid there.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict, cast

import numpy as np

from rosenblatt._atomic import write_text
from rosenblatt.abcd.closure import region_sums
from rosenblatt.abcd.closure_correction import ClosureCorrection, abcd_prediction
from rosenblatt.abcd.closure_testing import ClosureTest
from rosenblatt.studies.abcd.config import NEGATIVE_WEIGHT_REPLICAS
from rosenblatt.typing import FloatArray

if TYPE_CHECKING:
    from hist import Hist
    from hist.storage import Weight

    from rosenblatt.studies.abcd.config import AbcdConfig

__all__ = [
    "CLOSURE_P_MIN",
    "CLOSURE_TEST",
    "ClosureCorrectionJson",
    "CutChoice",
    "EstimateJson",
    "GridCut",
    "NonclosureJson",
    "RegionCounts",
    "SignalContaminationJson",
    "choose_cut",
    "choose_cuts",
    "closure_corrections",
    "closure_tests",
    "estimate",
]

#: below this p-value of the closure test, a variant's estimate is not valid
CLOSURE_P_MIN = 0.05
#: fewer effective background-simulation events in a region of the cut, and the closure
#: factor's Gaussian error no longer covers: in pseudo-experiments with 15% negative weights,
#: about 100 effective events in A gave 60-70% within one standard deviation, 12 gave 48%
MIN_EFFECTIVE_EVENTS = 50.0
#: the test behind a variant's validity, in words
CLOSURE_TEST = (
    "the chi-square of the background simulation's non-closure over the cut grid with its "
    "bootstrap covariance (the closure factor's keyed replicas where the transform has "
    "them), Hotelling's T^2"
)


@dataclass(frozen=True, slots=True)
class GridCut:
    """A cut of the grid: where it lies and what simulation expects there.

    Attributes
    ----------
    i, j : int
        Its indices on the grid of ``x0`` and of ``y0``.
    x0, y0 : float
        Its values, in the variant's own units.
    expected_z_a : float
        The expected significance ``Z_A`` of the signal simulation in A, over
        the background and its error as the plane's margins expect them.
    closes_within_2sd : bool
        Whether the background simulation closes there within two standard deviations.
    """

    i: int
    j: int
    x0: float
    y0: float
    expected_z_a: float
    closes_within_2sd: bool


@dataclass(frozen=True, slots=True)
class CutChoice:
    """A variant's cut, fixed on simulation before any data event is read.

    Attributes
    ----------
    how : str
        How it was found (given, chosen), or why there is none.
    cut : GridCut or None
        The cut; ``None`` where no cut was found.
    """

    how: str
    cut: GridCut | None = None


class RegionCounts(TypedDict):
    """Events in each region of a cut (the ``signal_expected`` of ``estimate.json``)."""

    A: float
    B: float
    C: float
    D: float


class ClosureCorrectionJson(TypedDict):
    """The closure factor at the cut (the ``closure_correction`` of ``estimate.json``).

    ``factor`` multiplies the data's ``B C / D``; ``error`` is its standard
    deviation, the keyed bootstrap's spread of the measurement's error (the
    transform's fit and the simulation's statistics together); ``measured``
    the background simulation's double ratio ``N_A N_D / (N_B N_C)``,
    ``bootstrap_bias`` the bootstrap's estimate of its bias (subtracted);
    ``transform_fit`` the spread of the double ratio over the transform's
    replicas alone, ``simulation_statistics`` the simulation's statistical
    error alone (both for the reader; ``error`` is what enters).
    """

    factor: float
    error: float
    measured: float
    bootstrap_bias: float
    transform_fit: float
    simulation_statistics: float
    replicas: int
    method: str


class NonclosureJson(TypedDict):
    """The background simulation's non-closure at the cut (the ``nonclosure`` of ``estimate.json``)."""

    relative: float
    relative_error: float
    background_simulation_A: float
    background_simulation_BC_over_D: float


class SignalContaminationJson(TypedDict):
    """The signal simulation in the data's control regions (the ``signal_contamination`` of
    ``estimate.json``).

    ``B``, ``C`` and ``D`` are the signal expected at ``mu = 1`` over the data's
    count there (``None`` where the data's region is empty);
    ``predicted_A_shift`` is how far the data's ``B C / D`` (and so
    ``predicted_A``) then lies above that of their background alone, relative
    (``None`` where a share is, or where the signal expected reaches the data's
    count). The prediction assumes no signal in B, C and D; the workspace fits
    it there.
    """

    B: float | None
    C: float | None
    D: float | None
    predicted_A_shift: float | None


class EstimateJson(TypedDict, total=False):
    """One variant's data-driven estimate, as ``estimate.json`` and ``summary.json`` hold it.

    A variant without a closure test holds ``valid`` and ``note`` only; one
    without a cut lacks the counts and the likelihood's keys; a failed or
    skipped likelihood says why in ``likelihood_note``.
    """

    x0: float | None
    y0: float | None
    cut: str
    cut_on_grid_edge: bool | None
    cut_on_grid_edge_axes: list[str]
    blind: bool
    closure_p_value: float
    closure_includes_transform_statistics: bool
    valid: bool
    note: str
    B: float
    C: float
    D: float
    predicted_A: float
    predicted_A_stat: float
    nonclosure: NonclosureJson
    predicted_A_syst: float
    predicted_A_error: float
    predicted_A_uncorrected: float
    closure_correction: ClosureCorrectionJson
    signal_expected_A: float
    signal_expected: RegionCounts
    signal_contamination: SignalContaminationJson
    background_simulation: RegionCounts
    background_simulation_effective: RegionCounts
    observed_A: float | None
    expected_significance: float
    expected_upper_limit: float
    observed_significance: float | None
    observed_upper_limit: float | None
    likelihood_note: str
    workspace: str
    workspace_note: str


def asimov_significance(s: FloatArray, b: FloatArray, sigma_b: FloatArray) -> FloatArray:
    """``Z_A`` of a count with signal ``s`` over a background ``b`` known to ``sigma_b``."""
    with np.errstate(divide="ignore", invalid="ignore"):
        var = np.maximum(sigma_b, 0.0) ** 2
        exact = np.sqrt(
            2
            * (
                (s + b) * np.log((s + b) * (b + var) / (b * b + (s + b) * var))
                - b * b / np.where(var > 0, var, np.inf) * np.log(1 + var * s / (b * (b + var)))
            )
        )
        without = np.sqrt(2 * ((s + b) * np.log1p(s / b) - s))
    z = np.where(var > 0, exact, without)
    return np.where((s > 0) & (b > 0) & np.isfinite(z), z, np.nan)


def _edge_axes(test: ClosureTest, cut: GridCut) -> list[str]:
    """The axes (``"x0"``, ``"y0"``) of the scanned grid on whose first or last value ``cut`` lies."""
    return [
        axis
        for axis, index, values in (("x0", cut.i, test.x0), ("y0", cut.j, test.y0))
        if index in (0, len(values) - 1)
    ]


def _index(edges: FloatArray, value: float) -> int:
    return int(np.argmin(np.abs(edges - value)))


def choose_cut(
    test: ClosureTest, signal_a: FloatArray, given: tuple[float, float] | None
) -> CutChoice:
    """The variant's cut: given, or the best expected significance where the background closes.

    A chosen cut is one where the background simulation's closure factor can
    be measured: every region's weights sum to a positive number
    (:attr:`~rosenblatt.abcd.ClosureTest.measurable`). Among those whose
    non-closure lies within 2 sd of its measured error, the cuts are ranked by
    ``Z_A`` over the background the margins expect, with the error expected
    there (:attr:`~rosenblatt.abcd.ClosureTest.expected_nonclosure_error`):
    ranked by the error measured at each cut, the choice would favour cuts
    where the simulation fluctuated low in A, and the closure factor measured
    there would be low. Fewer effective events than
    :data:`MIN_EFFECTIVE_EVENTS` are allowed (the estimate's note says its
    error is then approximate): preferring cuts that hold more costs the
    search's sensitivity far more than it gains in coverage.

    Parameters
    ----------
    test
        The closure test of the variant's background simulation.
    signal_a
        The signal simulation in region A over the grid.
    given
        ``(x0, y0)`` of ``abcd.cut`` in the variant's own units, or ``None``.
    """
    # ranked by the margins' estimate and its expected error, not by B C / D and the error
    # measured at the cut: either would prefer cuts where the simulation fluctuated so that
    # its closure factor there is off (high where B C / D fluctuated low; low where N_A did,
    # since its measured error shrinks with it)
    z = asimov_significance(signal_a, test.independence_estimate, test.expected_nonclosure_error)
    with np.errstate(invalid="ignore"):
        closes = np.abs(test.nonclosure) <= 2.0 * test.nonclosure_error
    if given is not None:
        i, j = _index(test.x0, given[0]), _index(test.y0, given[1])
        how = "given (abcd.cut)"
    else:
        allowed = closes & np.isfinite(z) & test.measurable
        how = (
            "chosen on simulation: largest expected Z_A (background and its error as the "
            "plane's margins expect them) among the cuts that close within 2 sd and whose "
            "background simulation sums above zero in every region"
        )
        if not allowed.any():
            return CutChoice(
                "none: no cut of the grid closes on background simulation, holds signal in A "
                "and has background simulation in each region to measure its closure factor"
            )
        candidates = np.where(allowed, z, -np.inf)
        i, j = (int(k) for k in np.unravel_index(int(np.argmax(candidates)), candidates.shape))
    cut = GridCut(
        i=int(i),
        j=int(j),
        x0=float(test.x0[i]),
        y0=float(test.y0[j]),
        expected_z_a=float(z[i, j]),
        closes_within_2sd=bool(closes[i, j]),
    )
    return CutChoice(how, cut)


def _summed(h: Hist[Weight]) -> Hist[Weight]:
    from rosenblatt.processors.analysis import summed_over_datasets

    return summed_over_datasets(h) if "dataset" in h.axes.name else h


def _members(variant: str, replicas: dict[str, Hist[Weight]] | None) -> list[Hist[Weight]]:
    """The histograms of ``variant``'s replicas (named ``<variant>#<k>``), summed over datasets."""
    return [
        _summed(r)
        for name, r in sorted((replicas or {}).items())
        if name.rsplit("#", 1)[0] == variant
    ]


def closure_tests(
    histograms: dict[str, Hist[Weight]],
    *,
    seed: int = 0,
    replicas: dict[str, Hist[Weight]] | None = None,
    resampled: dict[str, Hist[Weight]] | None = None,
) -> dict[str, ClosureTest | str]:
    """Per variant, the closure test of its simulation summed over datasets (or why none).

    ``replicas`` holds the histograms of the transforms' bootstrap replicas,
    named ``<variant>#<k>``: a variant that has them is tested with its
    transform's statistics as well; with ``resampled`` (the same replicas
    filled with keyed Poisson weights) its uncertainty is that of the closure
    correction (:mod:`rosenblatt.abcd.closure_correction`).
    """
    from rosenblatt.abcd.closure_testing import closure_test_histogram

    tests: dict[str, ClosureTest | str] = {}
    for variant, h in histograms.items():
        members = _members(variant, replicas)
        keyed = _members(variant, resampled)
        try:
            tests[variant] = closure_test_histogram(
                _summed(h),
                seed=seed,
                replica_histograms=members or None,
                resampled_histograms=keyed if keyed and len(keyed) == len(members) else None,
            )
        except ValueError as err:
            tests[variant] = f"no closure test: {err}"
    return tests


def closure_corrections(
    histograms: dict[str, Hist[Weight]],
    replicas: dict[str, Hist[Weight]] | None = None,
    resampled: dict[str, Hist[Weight]] | None = None,
) -> dict[str, tuple[ClosureCorrection, str]]:
    """Per variant, the closure factor of its background simulation and how it was measured.

    A variant with keyed replicas gets the keyed bootstrap's uncertainty
    (:func:`rosenblatt.abcd.closure_correction.closure_correction`); one
    without (the raw score, a transform read from a file, ``n_boot: 0``) the
    simulation's statistical error alone
    (:func:`~rosenblatt.abcd.closure_correction.measured_closure`), and a
    method that says the transform's fit is not in it.
    """
    from rosenblatt.abcd.closure_correction import closure_correction, measured_closure

    out: dict[str, tuple[ClosureCorrection, str]] = {}
    for variant, h in histograms.items():
        members = _members(variant, replicas)
        keyed = _members(variant, resampled)
        if len(members) >= 2 and len(keyed) == len(members):
            out[variant] = (
                closure_correction(_summed(h), members, keyed),
                (
                    f"keyed bootstrap of the transform's fit ({len(members)} replicas) on the "
                    "background simulation"
                ),
            )
        elif variant == "score":
            out[variant] = (
                measured_closure(_summed(h)),
                "measured on the background simulation; its statistics alone (no fit)",
            )
        else:
            out[variant] = (
                measured_closure(_summed(h)),
                (
                    "measured on the background simulation; its statistics alone: no keyed "
                    "replicas of this transform (statistics.n_boot: 0, or read from a file), "
                    "so the transform's fit is not in the uncertainty"
                ),
            )
    return out


def choose_cuts(
    cfg: AbcdConfig,
    histograms: dict[str, Hist[Weight]],
    score_y0: tuple[float, ...],
    replicas: dict[str, Hist[Weight]] | None = None,
    resampled: dict[str, Hist[Weight]] | None = None,
) -> dict[str, CutChoice]:
    """Per variant, its cut from simulation alone (:func:`choose_cut`), before data are read."""
    choices: dict[str, CutChoice] = {}
    tests = closure_tests(
        histograms, seed=cfg.statistics.seed, replicas=replicas, resampled=resampled
    )
    for variant, test in tests.items():
        if isinstance(test, str):
            choices[variant] = CutChoice(f"none: {test}")
            continue
        given = cfg.cuts.cut
        if given is not None and variant == "score":
            # the raw score's cuts are the defining sample's quantiles at the levels y0
            levels = cfg.cuts.y0 if len(cfg.cuts.y0) == len(score_y0) else None
            raw = score_y0[_index(np.asarray(levels), given[1])] if levels else score_y0[-1]
            given = (given[0], float(raw))
        choices[variant] = choose_cut(test, test.scan.signal_a, given)
    return choices


def _regions(
    histogram: Hist[Weight], process: int, i: int, j: int
) -> tuple[list[float], list[float]]:
    """Sums and variances of A, B, C, D of one ``process`` bin at cut ``(i, j)``."""
    axis = histogram.axes["process"]
    if process not in axis:
        return [0.0] * 4, [0.0] * 4
    view: Any = histogram.view(flow=True)
    k = axis.index(process)
    sums = [float(r[i, j]) for r in region_sums(view.value[..., k])]
    variances = [float(r[i, j]) for r in region_sums(view.variance[..., k])]
    return sums, variances


def estimate(
    folder: Path,
    variant: str,
    histogram: Hist[Weight],
    test: ClosureTest,
    choice: CutChoice,
    *,
    blind: bool,
    correction: tuple[ClosureCorrection, str] | None = None,
) -> EstimateJson:
    """The data-driven estimate of one variant at its cut; writes ``workspace_<variant>.json``.

    Parameters
    ----------
    folder
        Results folder.
    variant
        Its name.
    histogram
        The variant's ABCD histogram summed over datasets: background (0) and
        signal (1) simulation, data (2).
    test
        The closure test of its background simulation.
    choice
        From :func:`choose_cut`.
    blind
        Whether region A of the data is blinded (never filled).
    correction
        The closure factor of its background simulation and how it was
        measured (:func:`closure_corrections`); by default the simulation's
        measured factor with its statistical error alone.
    """
    from rosenblatt.abcd.closure_correction import measured_closure

    cut = choice.cut
    edges = [] if cut is None else _edge_axes(test, cut)
    out: EstimateJson = {
        "x0": None if cut is None else cut.x0,
        "y0": None if cut is None else cut.y0,
        "cut": choice.how,
        "cut_on_grid_edge": None if cut is None else bool(edges),
        "cut_on_grid_edge_axes": edges,
        "blind": blind,
        "closure_p_value": test.p_value,
        "closure_includes_transform_statistics": test.transform_replicas,
        "valid": bool(test.p_value >= CLOSURE_P_MIN),
    }
    if not out["valid"]:
        out["note"] = (
            f"estimate not valid here: the background non-closure is beyond statistics "
            f"(closure test p = {test.p_value:.2g} < {CLOSURE_P_MIN}: {CLOSURE_TEST})"
        )
    if cut is None:
        return out
    if correction is None:
        correction = (measured_closure(histogram), "measured on the background simulation")
    data, data_var = _regions(histogram, 2, cut.i, cut.j)
    signal, _ = _regions(histogram, 1, cut.i, cut.j)
    out.update(_counts(histogram, correction, cut, data, data_var, signal, blind=blind))
    unmeasured = _unmeasured(cast("Mapping[str, float]", out["background_simulation"]))
    if unmeasured:
        out["valid"] = False
        out["note"] = f"{out['note']}; {unmeasured}" if "note" in out else unmeasured
    few = _few_effective_events(
        cast("Mapping[str, float]", out["background_simulation_effective"]),
        correction[0].n_replicas,
    )
    if few:
        out["note"] = f"{out['note']}; {few}" if "note" in out else few
    closure = out["closure_correction"]
    out.update(
        _likelihood(
            folder,
            variant,
            data,
            signal,
            out["predicted_A"],
            (closure["factor"], closure["error"]),
            blind,
        )
    )
    return out


def _counts(
    histogram: Hist[Weight],
    correction: tuple[ClosureCorrection, str],
    cut: GridCut,
    data: list[float],
    data_var: list[float],
    signal: list[float],
    *,
    blind: bool,
) -> EstimateJson:
    """The data's B, C, D at ``cut``, the corrected prediction of A and its uncertainties."""
    i, j = cut.i, cut.j
    closure, method = correction
    background, background_var = _regions(histogram, 0, i, j)
    factor, error = float(closure.factor[i, j]), float(closure.error[i, j])
    prediction = abcd_prediction(data[1:], data_var[1:], factor, error)
    b_sim = float(closure.background_estimate[i, j])
    measured = float(closure.measured[i, j])
    return {
        "B": data[1],
        "C": data[2],
        "D": data[3],
        "predicted_A": prediction.value,
        "predicted_A_stat": prediction.stat,
        "predicted_A_syst": prediction.syst,
        "predicted_A_error": prediction.error,
        "predicted_A_uncorrected": prediction.uncorrected,
        "closure_correction": {
            "factor": factor,
            "error": error,
            "measured": measured,
            "bootstrap_bias": float(closure.bias[i, j]),
            "transform_fit": float(closure.transform_fit[i, j]),
            "simulation_statistics": float(closure.simulation_statistics[i, j]),
            "replicas": closure.n_replicas,
            "method": method,
        },
        "nonclosure": {
            "relative": measured - 1.0,
            "relative_error": error,
            "background_simulation_A": background[0],
            "background_simulation_BC_over_D": b_sim,
        },
        "signal_expected_A": signal[0],
        "signal_expected": {"A": signal[0], "B": signal[1], "C": signal[2], "D": signal[3]},
        "signal_contamination": _contamination(data[1:], signal[1:]),
        "background_simulation": {
            "A": background[0],
            "B": background[1],
            "C": background[2],
            "D": background[3],
        },
        "background_simulation_effective": _effective(background, background_var),
        "observed_A": None if blind else data[0],
    }


def _contamination(data: list[float], signal: list[float]) -> SignalContaminationJson:
    """The signal's share of the data's B, C and D at ``mu = 1``, and its shift of ``B C / D``."""
    b, c, d = (s / n if n > 0 else None for s, n in zip(signal, data, strict=True))
    shift = (
        (1.0 - d) / ((1.0 - b) * (1.0 - c)) - 1.0
        if b is not None and c is not None and d is not None and max(b, c, d) < 1.0
        else None
    )
    return {"B": b, "C": c, "D": d, "predicted_A_shift": shift}


def _effective(sums: list[float], variances: list[float]) -> RegionCounts:
    """``(sum w)**2 / sum w**2`` of each region: the unweighted events as informative."""
    effective = [s * s / v if v > 0 else 0.0 for s, v in zip(sums, variances, strict=True)]
    return {"A": effective[0], "B": effective[1], "C": effective[2], "D": effective[3]}


def _unmeasured(background: Mapping[str, float]) -> str | None:
    """Why the closure factor cannot be measured at the cut (a region's simulation sums to
    zero or less), else None."""
    empty = [region for region, total in background.items() if not total > 0]
    if not empty:
        return None
    sums = ", ".join(f"{region} {background[region]:.4g}" for region in empty)
    return (
        "estimate not valid here: the background simulation's weights in region "
        f"{', '.join(empty)} sum to zero or less at this cut ({sums}), so its closure factor "
        "cannot be measured there; a larger background simulation, or a cut with more of it "
        "in each region, is needed"
    )


def _few_effective_events(effective: Mapping[str, float], n_replicas: int) -> str | None:
    """A caution where a region of the simulation holds too few effective events, else None."""
    region = min(effective, key=effective.__getitem__)
    if effective[region] >= MIN_EFFECTIVE_EVENTS:
        return None
    replicas = (
        f"; its error from {n_replicas} replicas is itself noisy at such counts "
        f"(statistics.n_boot: {NEGATIVE_WEIGHT_REPLICAS} or more)"
        if 0 < n_replicas < NEGATIVE_WEIGHT_REPLICAS
        else ""
    )
    return (
        f"the background simulation holds {effective[region]:.0f} effective events in region "
        f"{region} at this cut (fewer than {MIN_EFFECTIVE_EVENTS:.0f}): the closure factor's "
        "error is a Gaussian approximation that understates its spread at such counts; a "
        f"larger background simulation is needed for an uncertainty that covers{replicas}"
    )


def _likelihood(
    folder: Path,
    variant: str,
    data: list[float],
    signal: list[float],
    predicted: float,
    closure: tuple[float, float],
    blind: bool,
) -> EstimateJson:
    """The pyhf workspace of the data at the cut, its expected and (unblinded) observed results.

    ``closure`` is the closure factor and its standard deviation: the
    background in ``A`` is ``B C / D`` times the factor, with a ``normsys``
    of its relative error.
    """
    try:
        import pyhf
    except ImportError:
        return {"likelihood_note": 'pyhf is not installed: pip install "rosenblatt[stats]"'}
    from rosenblatt.abcd.likelihood import (
        MAX_NONCLOSURE,
        expected_significance,
        expected_upper_limit,
        observed_significance,
        observed_upper_limit,
        pyhf_workspace,
        quiet_pyhf,
    )

    n_a, n_b, n_c, n_d = data
    factor, error = closure
    empty = [name for name, n in zip("BCD", (n_b, n_c, n_d), strict=True) if n <= 0]
    if empty:
        regions = f"regions {', '.join(empty)} are" if len(empty) > 1 else f"region {empty[0]} is"
        return {"likelihood_note": f"the data's control {regions} empty"}
    if signal[0] <= 0:
        return {
            "likelihood_note": "no signal expected in A: a dataset of role signal gives "
            "the likelihood its signal"
        }
    if not (math.isfinite(factor) and factor > 0):
        return {"likelihood_note": f"the closure factor {factor:.3g} is not positive"}
    relative = error / factor if math.isfinite(error) else 0.0
    relative = min(relative, MAX_NONCLOSURE)
    observed_a = predicted if blind else n_a
    out: EstimateJson = {}
    with quiet_pyhf():
        s_a, s_b, s_c, s_d = signal
        workspace = pyhf_workspace(
            observed_a,
            n_b,
            n_c,
            n_d,
            s_a,
            s_b,
            s_c,
            s_d,
            nonclosure=relative,
            closure_factor=factor,
        )
        try:
            out["expected_significance"] = expected_significance(workspace)
            out["expected_upper_limit"] = expected_upper_limit(workspace)
            if not blind:
                out["observed_significance"] = observed_significance(workspace)
                out["observed_upper_limit"] = observed_upper_limit(workspace)
        except (ValueError, pyhf.exceptions.FailedMinimization) as err:
            out["likelihood_note"] = f"fit failed: {err}"
    if blind:
        out["observed_significance"] = None
        out["observed_upper_limit"] = None
    path = folder / f"workspace_{variant}.json"
    write_text(path, json.dumps(dict(workspace), indent=2))
    out["workspace"] = path.name
    if blind:
        out["workspace_note"] = (
            "blinded: the observation in A is the background prediction B C / D times the "
            "closure factor"
        )
    return out
