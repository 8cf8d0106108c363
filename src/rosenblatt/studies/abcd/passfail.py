"""The pass/fail fit of the ABCD study (``passfail:``): the spectra of ``x`` passing and failing a cut.

Where the configuration gives ``passfail:``
(:class:`~rosenblatt.studies.abcd.config.PassFailConfig`), the analysis pass fills per
variant the spectra of ``x`` on the fit's bins at every cut value ``y0``
(the ``"passfail"`` histograms of :mod:`rosenblatt.processors.analysis`),
and after the estimate each valid variant with a cut gets the pass/fail fit
of :mod:`rosenblatt.abcd.passfail` at its cut ``y0``:

- the data's failing and passing spectra are the observations;
- the background simulation gives the expected transfer ratio (its passing
  over its failing events, all bins together) and, per bin, the non-closure:
  its pass/fail ratio in the bin relative to the overall one, in quadrature
  with that ratio's statistical error, as the relative uncertainty of the
  ``nonclosure`` modifier. Where the transform has keyed bootstrap replicas
  (``statistics.n_boot``), the analysis pass has also filled each replica's
  pass/fail histograms, and the error is the keyed bootstrap's
  (:func:`rosenblatt.abcd.transfer_correction.transfer_correction`): it holds
  the transform's own fit, which the simulation's statistics alone miss where
  the simulation is the defining sample; ``passfail.json`` names the parts
  (``nonclosure_statistical``, ``nonclosure_transform_fit``, the bootstrap's
  ``nonclosure_bootstrap_error`` and ``nonclosure_bootstrap_bias``) beside
  ``nonclosure_in_fit``, the total the fit takes. The chi-square of its per-bin ratios against a
  constant and the slope of a straight line through them say whether a
  transfer ratio linear in ``x`` is needed;
- the signal simulation is the template of both regions (its leakage into
  the failing region included).

With ``transfer: linear`` the passing background's transfer ratio also has
a slope in ``x`` (:func:`rosenblatt.abcd.passfail.with_linear_transfer`).

With ``cuts``, the fit is at these cuts instead of the variant's ``y0``
(each one of the variant's cut levels, an edge of the histograms' score
axis; blinded, the first at most the variant's ``y0``, whose data above it
in the signal window are never filled). Several cuts make disjoint
categories fitted together for one ``mu``
(:func:`rosenblatt.abcd.passfail.passfail_categories_workspace`): category
``k`` holds ``cuts[k] <= score < cuts[k + 1]`` (the last, above its cut), the
failing region below the first cut is shared, and each category has the
simulation's ratio and non-closure of its own. ``passfail.json`` then holds
the numbers of all categories together (passing the first cut) and, under
``categories``, each one's fitted transfer ratio beside the simulation's and
beside ``eps_k / (1 - eps)`` of a uniform score, with its figure
``passfail_pass_k.png``. With ``masses`` the bump hunt runs over the same
categories with one ``mu`` (each category's passing observation, ratio and
non-closure as in the fit; the signal simulation's share in each category
as the templates').

Blinded as the ABCD estimate: the data's passing events with ``x >= x0``
are never filled. The bins whose upper edge lies above ``x0`` are the signal
window; their passing observation is the prediction of the sidebands, the
failing data times the data's pass/fail ratio in the bins below ``x0``. The
fitted ``mu`` is then an expected result, and no file holds a passing data
count of the window.

Each variant's files are in ``passfail/<variant>/``: ``workspace.json``,
``passfail.json`` and the figure ``passfail.png``
(:mod:`~rosenblatt.studies.abcd.passfail_figures`). With ``masses``, a fitted
variant also gets the bump hunt of :mod:`rosenblatt.studies.abcd.bumphunt` on
the same spectra (``bumphunt.json``, ``brazil.png``, ``local_significance.png``).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict, cast

import numpy as np

from rosenblatt._atomic import write_text
from rosenblatt.studies.abcd.passfail_figures import category_figure, passfail_figure
from rosenblatt.studies.abcd.passfail_spectra import category_spectra, spectra
from rosenblatt.typing import FloatArray, IntArray

if TYPE_CHECKING:
    from hist import Hist
    from hist.storage import Weight

    from rosenblatt.abcd.passfail import PassFailFit
    from rosenblatt.abcd.transfer import TransferCheck
    from rosenblatt.abcd.transfer_correction import TransferCorrection
    from rosenblatt.studies.abcd.config import PassFailConfig

__all__ = [
    "FOLDER",
    "PassFailJson",
    "PassFailNumbers",
    "replica_pairs",
    "simulation_closure",
    "summary_numbers",
    "write_passfail",
    "write_results",
]


#: the results' subfolder of the pass/fail fits
FOLDER = "passfail"
#: how close a cut of ``passfail.cuts`` must be to an edge of the histograms' score axis
CUT_TOLERANCE = 1e-9


class PassFailJson(TypedDict, total=False):
    """One variant's pass/fail fit (``passfail.json``; its numbers in ``summary.json``).

    A variant without a fit holds ``note`` only, saying why.
    """

    x0: float
    y0: float
    cuts: list[float]
    blind: bool
    transfer_shape: str
    edges: list[float]
    signal_window: list[int]
    mu: float
    mu_low: float
    mu_high: float
    mu_note: str
    transfer_fitted: float
    transfer_expected: float
    transfer_uniform: float | None
    transfer_slope: float | None
    simulation: dict[str, Any]
    data_fail: list[float]
    data_pass: list[float | None]
    postfit: dict[str, list[float]]
    categories: list[dict[str, Any]]
    workspace: str
    figure: str
    bumphunt: dict[str, Any]
    note: str


class PassFailNumbers(TypedDict, total=False):
    """A variant's pass/fail fit in ``summary.json``.

    The :data:`SUMMARY_KEYS` of its ``passfail.json``, the closure in
    simulation's verdict on the transfer ratio (``linear_transfer_needed``,
    ``simulation_p_value_constant``) and the ``file``. A variant without a fit
    holds ``note`` (and ``file``) only.
    """

    x0: float
    y0: float
    cuts: list[float]
    blind: bool
    transfer_shape: str
    mu: float
    mu_low: float
    mu_high: float
    mu_note: str
    transfer_fitted: float
    transfer_expected: float
    transfer_uniform: float | None
    transfer_slope: float | None
    categories: list[dict[str, Any]]
    workspace: str
    figure: str
    bumphunt: dict[str, Any]
    note: str
    linear_transfer_needed: bool
    simulation_p_value_constant: float
    file: str


def _listed(values: FloatArray) -> list[float | None]:
    return [float(v) if math.isfinite(v) else None for v in values]


def simulation_closure(
    failing: FloatArray,
    passing: FloatArray,
    failing_variance: FloatArray,
    passing_variance: FloatArray,
    centres: FloatArray,
) -> TransferCheck:
    """The background simulation's pass/fail ratio per bin against a constant and a line.

    :func:`rosenblatt.abcd.transfer.transfer_check` of the simulation's sums of
    weights per bin of ``x`` (``failing``, ``passing``) and of squared weights.

    Raises
    ------
    ValueError
        If the simulation has no positive failing or passing sum in the fit's range.
    """
    from rosenblatt.abcd.transfer import transfer_check

    try:
        return transfer_check(failing, passing, centres, failing_variance, passing_variance)
    except ValueError as err:
        msg = f"the background simulation in the fit's range: {err}"
        raise ValueError(msg) from None


#: a replica's pass/fail histograms: the simulation's own weights, and times its keyed counts
ReplicaPair = tuple["Hist[Weight]", "Hist[Weight]"]


def replica_pairs(
    variant: str,
    replicas: Mapping[str, Hist[Weight]] | None,
    resampled: Mapping[str, Hist[Weight]] | None,
) -> list[ReplicaPair]:
    """The pass/fail histograms of ``variant``'s keyed replicas, each with its resampled one.

    Those the analysis pass filled under ``"replicas"`` and ``"resampled"``
    (named :func:`~rosenblatt.processors.analysis.passfail_replica` of
    ``<variant>#<k>``), in the replicas' order; none where a replica lacks
    its resampled histogram.
    """
    from rosenblatt.processors.analysis import passfail_replica

    prefix = passfail_replica(f"{variant}#")
    fitted, keyed = replicas or {}, resampled or {}
    names = sorted(
        (name for name in fitted if name.startswith(prefix)),
        key=lambda name: int(name.rsplit("#", 1)[1]),
    )
    if not names or not all(name in keyed for name in names):
        return []
    return [(fitted[name], keyed[name]) for name in names]


def _fit_term(
    pairs: list[ReplicaPair],
    cuts: tuple[float, ...],
    span: slice,
    failing: FloatArray,
    passes: list[FloatArray],
) -> list[TransferCorrection] | None:
    """Per category of ``cuts`` (one: the cut), the keyed bootstrap's per-bin non-closure.

    ``failing`` and ``passes`` are the simulation's spectra on the fit's
    ``span`` of bins under the nominal transform; ``None`` with fewer than two
    replicas.
    """
    from rosenblatt.abcd.transfer_correction import transfer_correction
    from rosenblatt.studies.abcd.passfail_spectra import category_spectra

    if len(pairs) < 2:
        return None
    fitted: list[tuple[FloatArray, list[FloatArray]]] = []
    reweighted: list[tuple[FloatArray, list[FloatArray]]] = []
    for replica, resampled in pairs:
        for histogram, into in ((replica, fitted), (resampled, reweighted)):
            fail, _, passing, _ = category_spectra(histogram, cuts, 0)
            into.append((fail[span], [values[span] for values in passing]))
    return [
        transfer_correction(
            failing,
            passed,
            [(fail, passing[k]) for fail, passing in fitted],
            [(fail, passing[k]) for fail, passing in reweighted],
        )
        for k, passed in enumerate(passes)
    ]


def _in_fit(closure: TransferCheck, correction: TransferCorrection | None) -> FloatArray:
    """The relative non-closure per bin the fit takes: the bootstrap's where there is one."""
    return closure.uncertainty if correction is None else correction.uncertainty


def _closure_json(
    closure: TransferCheck, correction: TransferCorrection | None = None
) -> dict[str, Any]:
    """The simulation's pass/fail check as ``passfail.json`` holds it.

    With the keyed bootstrap's ``correction``, also the parts of the
    non-closure in the fit: the statistical error, the transform's fit (the
    spread of the ratio over the replicas on the same events), the
    bootstrap's error and bias; ``nonclosure_in_fit`` is then the measured
    ratio less the bias in quadrature with the bootstrap's error.
    """
    parts: dict[str, Any] = {}
    if correction is not None:
        parts = {
            "nonclosure_statistical": _listed(closure.relative_error),
            "nonclosure_transform_fit": _listed(correction.transform_fit),
            "nonclosure_bootstrap_error": _listed(correction.error),
            "nonclosure_bootstrap_bias": _listed(correction.bias),
            "nonclosure_replicas": correction.n_replicas,
            "nonclosure_method": (
                f"keyed bootstrap of the transform's fit ({correction.n_replicas} replicas): "
                "the measured ratio less the bootstrap's bias, in quadrature with its error"
            ),
        }
    return {
        "transfer_ratio": closure.ratio,
        "nonclosure_relative": _listed(closure.relative),
        "nonclosure_relative_error": _listed(closure.relative_error),
        **parts,
        "nonclosure_in_fit": _listed(_in_fit(closure, correction)),
        "chi2_constant": closure.chi2,
        "ndof": closure.ndof,
        "p_value_constant": closure.p_value,
        "linear_slope": closure.slope,
        "linear_slope_error": closure.slope_error,
        "linear_slope_p_value": closure.slope_p_value,
        "linear_transfer_needed": closure.linear_needed,
    }


def write_passfail(
    folder: Path,
    settings: PassFailConfig,
    histograms: dict[str, Hist[Weight]],
    estimates: Mapping[str, Mapping[str, Any]],
    *,
    blind: bool,
    x_label: str,
    seed: int = 0,
    replicas: Mapping[str, Hist[Weight]] | None = None,
    resampled: Mapping[str, Hist[Weight]] | None = None,
) -> dict[str, PassFailJson]:
    """Per variant, the pass/fail fit at its cut, written to ``passfail/<variant>/``.

    ``settings`` is the configuration's ``passfail:``, ``blind`` whether the
    run is blinded, ``x_label`` the figures' label of ``x`` and ``seed`` that
    of the bump hunt's pseudo-experiments (with ``settings.masses``, each
    fitted variant also gets the bump hunt of
    :mod:`rosenblatt.studies.abcd.bumphunt`). ``replicas`` and ``resampled``
    are the pass's histograms of the bootstrap replicas: a variant whose keyed
    replicas have pass/fail histograms there (:func:`replica_pairs`) gets the
    keyed bootstrap's error in its per-bin non-closure.

    A variant whose estimate is not valid, or without a cut, gets a note
    saying why it has no fit; so does one whose fit cannot be built (pyhf
    missing, an empty region, a failed minimisation).
    """
    results: dict[str, PassFailJson] = {}
    for variant, found in estimates.items():
        if variant not in histograms:
            results[variant] = {"note": "no pass/fail histogram was filled for it"}
        elif not found.get("valid", False):
            results[variant] = {"note": "no fit: its ABCD estimate is not valid"}
        elif found.get("x0") is None or found.get("y0") is None:
            results[variant] = {"note": "no fit: it has no cut"}
        elif settings.cuts is not None and (off := _off_grid(histograms[variant], settings.cuts)):
            results[variant] = {"note": f"no fit: {off}"}
        elif blind and settings.cuts is not None and settings.cuts[0] > found["y0"] + CUT_TOLERANCE:
            results[variant] = {
                "note": "no fit: blinded, and passfail.cuts begins above the variant's cut y0: "
                "its data above y0 in the signal window were never filled, so its failing "
                "spectrum would lack them"
            }
        elif settings.cuts is not None and len(settings.cuts) > 1:
            results[variant] = _categories_fit(
                folder / FOLDER / variant,
                settings,
                variant,
                histograms[variant],
                float(found["x0"]),
                settings.cuts,
                blind=blind,
                x_label=x_label,
                seed=seed,
                pairs=replica_pairs(variant, replicas, resampled),
            )
        else:
            y0 = float(found["y0"]) if settings.cuts is None else settings.cuts[0]
            results[variant] = _variant_fit(
                folder / FOLDER / variant,
                settings,
                variant,
                histograms[variant],
                float(found["x0"]),
                y0,
                blind=blind,
                x_label=x_label,
                seed=seed,
                pairs=replica_pairs(variant, replicas, resampled),
            )
    return results


def _off_grid(histogram: Hist[Weight], cuts: tuple[float, ...]) -> str | None:
    """Why ``cuts`` cannot split the histogram's score axis, or ``None`` where they can."""
    edges = np.asarray(histogram.axes["y"].edges, dtype=np.float64)
    for cut in cuts:
        if not np.any(np.abs(edges - cut) <= CUT_TOLERANCE):
            return (
                f"passfail.cuts: {cut:g} is not one of the variant's cut levels "
                f"{[round(float(v), 6) for v in edges]}"
            )
    return None


def _variant_fit(
    where: Path,
    settings: PassFailConfig,
    variant: str,
    histogram: Hist[Weight],
    x0: float,
    y0: float,
    *,
    blind: bool,
    x_label: str,
    seed: int,
    pairs: list[ReplicaPair] | None = None,
) -> PassFailJson:
    """The pass/fail fit of one variant at its cut ``(x0, y0)`` (see the module docstring).

    ``pairs``: its keyed replicas' pass/fail histograms (:func:`replica_pairs`).
    """
    try:
        import pyhf
    except ImportError:
        return {"note": 'no fit: pyhf is not installed: pip install "rosenblatt[stats]"'}
    from rosenblatt.abcd.likelihood import quiet_pyhf
    from rosenblatt.abcd.passfail import passfail_fit, passfail_workspace, with_linear_transfer

    edges = np.asarray(histogram.axes["x"].edges, dtype=np.float64)
    data_fail, data_pass, _, _ = spectra(histogram, y0, 2)
    background = spectra(histogram, y0, 0)
    signal_fail, signal_pass, _, _ = spectra(histogram, y0, 1)
    span = _fitted_span(data_fail)
    if span is None:
        return {"note": "no fit: the data fail the cut in fewer than two bins of x"}
    edges = edges[span.start : span.stop + 1]
    centres = 0.5 * (edges[1:] + edges[:-1])
    data_fail, data_pass = data_fail[span], data_pass[span]
    signal_fail = np.maximum(signal_fail[span], 0.0)
    signal_pass = np.maximum(signal_pass[span], 0.0)
    try:
        fail, passed, fail_variance, pass_variance = (v[span] for v in background)
        closure = simulation_closure(fail, passed, fail_variance, pass_variance, centres)
    except ValueError as err:
        return {"note": f"no fit: {err}"}
    corrections = _fit_term(pairs or [], (y0,), span, fail, [passed])
    correction = None if corrections is None else corrections[0]
    nonclosure = _in_fit(closure, correction)
    window = np.flatnonzero(edges[1:] > x0) if blind else np.zeros(0, dtype=np.intp)
    observed_pass = data_pass.copy()
    out: PassFailJson = {
        "x0": x0,
        "y0": y0,
        "blind": blind,
        "transfer_shape": settings.transfer,
        "edges": edges.tolist(),
        "signal_window": window.tolist(),
        "transfer_expected": closure.ratio,
        "transfer_uniform": None if variant == "score" else (1.0 - y0) / y0,
        "simulation": _closure_json(closure, correction),
        "data_fail": data_fail.tolist(),
    }
    if blind:
        sideband = np.ones(len(data_fail), dtype=bool)
        sideband[window] = False
        if not (data_fail[sideband].sum() > 0 and data_pass[sideband].sum() > 0):
            return {
                **out,
                "note": "no fit: blinded, and the sidebands below x0 hold no passing or no "
                "failing data to predict the signal window's passing events from",
            }
        observed_pass[window] = data_fail[window] * (
            data_pass[sideband].sum() / data_fail[sideband].sum()
        )
    hidden = set(window.tolist())
    out["data_pass"] = [None if i in hidden else float(v) for i, v in enumerate(data_pass)]
    try:
        with quiet_pyhf():
            workspace = passfail_workspace(
                data_fail,
                observed_pass,
                signal_pass,
                signal_fail,
                ratio=closure.ratio,
                nonclosure=nonclosure,
            )
            if settings.transfer == "linear":
                workspace = with_linear_transfer(workspace, centres)
            fit = passfail_fit(workspace)
    except (ValueError, pyhf.exceptions.FailedMinimization) as err:
        return {**out, "note": f"no fit: {err}"}
    out.update(_written_fit(where, variant, workspace, fit, centres, settings.transfer))
    if blind:
        out["mu_note"] = (
            "expected: blinded, the passing observation of the signal window (bins above x0) "
            "is the failing data times the data's pass/fail ratio below x0"
        )
    out["figure"] = passfail_figure(
        where, fit, edges, data_fail, data_pass, window, closure.ratio, x_label=x_label
    )
    out["figure"] = f"{FOLDER}/{variant}/{out['figure']}"
    if settings.masses is not None:
        out["bumphunt"] = _bump_hunt(
            where,
            settings,
            seed,
            (edges, data_fail, observed_pass, signal_fail, signal_pass),
            ratio=closure.ratio,
            nonclosure=nonclosure,
            blind=blind,
            x_label=x_label,
        )
    return out


def _categories_fit(
    where: Path,
    settings: PassFailConfig,
    variant: str,
    histogram: Hist[Weight],
    x0: float,
    cuts: tuple[float, ...],
    *,
    blind: bool,
    x_label: str,
    seed: int,
    pairs: list[ReplicaPair] | None = None,
) -> PassFailJson:
    """The pass/fail fit of one variant with several cuts as categories (``passfail.cuts``).

    As :func:`_variant_fit`, with one passing channel per category
    (:func:`~rosenblatt.abcd.passfail.passfail_categories_workspace`): each
    gets the background simulation's ratio and non-closure of its own, and,
    blinded, its passing observation of the signal window is the failing data
    times its own pass/fail ratio below ``x0``. The top-level numbers are those
    of all categories together (passing the first cut); ``categories`` holds
    each one's. With ``settings.masses`` the bump hunt runs over the categories.
    """
    try:
        import pyhf
    except ImportError:
        return {"note": 'no fit: pyhf is not installed: pip install "rosenblatt[stats]"'}
    from rosenblatt.abcd.likelihood import quiet_pyhf
    from rosenblatt.abcd.passfail import (
        passfail_categories_workspace,
        passfail_fit,
        with_linear_transfer,
    )

    edges = np.asarray(histogram.axes["x"].edges, dtype=np.float64)
    data_fail, _, data_passes, _ = category_spectra(histogram, cuts, 2)
    background = category_spectra(histogram, cuts, 0)
    signal_fail, _, signal_passes, _ = category_spectra(histogram, cuts, 1)
    span = _fitted_span(data_fail)
    if span is None:
        return {"note": "no fit: the data fail the cut in fewer than two bins of x"}
    edges = edges[span.start : span.stop + 1]
    centres = 0.5 * (edges[1:] + edges[:-1])
    data_fail = data_fail[span]
    data_passes = [values[span] for values in data_passes]
    signal_fail = np.maximum(signal_fail[span], 0.0)
    signal_passes = [np.maximum(values[span], 0.0) for values in signal_passes]
    fail, fail_variance = background[0][span], background[1][span]
    passes = [values[span] for values in background[2]]
    variances = [values[span] for values in background[3]]
    try:
        closures = [
            simulation_closure(fail, passed, fail_variance, variance, centres)
            for passed, variance in zip(passes, variances, strict=True)
        ]
        combined = simulation_closure(
            fail, np.sum(passes, axis=0), fail_variance, np.sum(variances, axis=0), centres
        )
    except ValueError as err:
        return {"note": f"no fit: {err}"}
    corrections = _fit_term(pairs or [], cuts, span, fail, passes)
    together = _fit_term(pairs or [], cuts[:1], span, fail, [np.sum(passes, axis=0)])
    nonclosure = [
        _in_fit(closure, None if corrections is None else corrections[k])
        for k, closure in enumerate(closures)
    ]
    window = np.flatnonzero(edges[1:] > x0) if blind else np.zeros(0, dtype=np.intp)
    observed = _predicted_window(data_fail, data_passes, window)
    if observed is None:
        return {
            "note": "no fit: blinded, and the sidebands below x0 hold no failing data or "
            "no passing data of some category to predict the signal window's passing "
            "events from"
        }
    uniform = variant != "score"
    out: PassFailJson = {
        "x0": x0,
        "y0": cuts[0],
        "cuts": list(cuts),
        "blind": blind,
        "transfer_shape": settings.transfer,
        "edges": edges.tolist(),
        "signal_window": window.tolist(),
        "transfer_expected": combined.ratio,
        "transfer_uniform": (1.0 - cuts[0]) / cuts[0] if uniform else None,
        "simulation": _closure_json(combined, None if together is None else together[0]),
        "data_fail": data_fail.tolist(),
        "data_pass": _shown(np.sum(data_passes, axis=0), window),
    }
    try:
        with quiet_pyhf():
            workspace = passfail_categories_workspace(
                data_fail,
                observed,
                signal_passes,
                signal_fail,
                ratios=[closure.ratio for closure in closures],
                nonclosure=nonclosure,
            )
            if settings.transfer == "linear":
                workspace = with_linear_transfer(workspace, centres)
            fit = passfail_fit(workspace)
    except (ValueError, pyhf.exceptions.FailedMinimization) as err:
        return {**out, "note": f"no fit: {err}"}
    out.update(_written_fit(where, variant, workspace, fit, centres, settings.transfer))
    if blind:
        out["mu_note"] = (
            "expected: blinded, the passing observation of the signal window (bins above x0) "
            "in each category is the failing data times its pass/fail ratio below x0"
        )
    summed = passfail_figure(
        where,
        fit,
        edges,
        data_fail,
        np.sum(data_passes, axis=0),
        window,
        combined.ratio,
        x_label=x_label,
    )
    out["figure"] = f"{FOLDER}/{variant}/{summed}"
    categories = _category_records(
        where,
        fit,
        closures,
        corrections,
        cuts,
        (edges, data_fail, data_passes, window),
        variant=variant,
        x_label=x_label,
    )
    out["categories"] = categories
    if settings.masses is not None:
        out["bumphunt"] = _bump_hunt(
            where,
            settings,
            seed,
            (edges, data_fail, np.stack(observed), signal_fail, np.stack(signal_passes)),
            ratio=[closure.ratio for closure in closures],
            nonclosure=np.stack(nonclosure),
            blind=blind,
            x_label=x_label,
            cuts=cuts,
        )
    return out


def _written_fit(
    where: Path,
    variant: str,
    workspace: Any,
    fit: PassFailFit,
    centres: FloatArray,
    transfer: str,
) -> PassFailJson:
    """The fitted numbers of a variant's ``passfail.json``, its workspace written in ``where``."""
    where.mkdir(parents=True, exist_ok=True)
    write_text(where / "workspace.json", json.dumps(dict(workspace), indent=2))
    return {
        "mu": fit.mu,
        "mu_low": fit.mu_low,
        "mu_high": fit.mu_high,
        "transfer_fitted": fit.transfer,
        "transfer_slope": _fitted_slope(fit, centres) if transfer == "linear" else None,
        "postfit": {
            "background_fail": fit.background_fail.tolist(),
            "background_pass": fit.background_pass.tolist(),
            "signal_fail": fit.signal_fail.tolist(),
            "signal_pass": fit.signal_pass.tolist(),
        },
        "workspace": f"{FOLDER}/{variant}/workspace.json",
    }


def _fitted_span(data_fail: FloatArray) -> slice | None:
    """The bins of ``x`` the fit takes: from the first to the last with failing data.

    ``None`` where fewer than two bins hold failing data.
    """
    kept = np.flatnonzero(data_fail > 0)
    if len(kept) < 2:
        return None
    return slice(int(kept[0]), int(kept[-1]) + 1)


def _shown(values: FloatArray, window: IntArray) -> list[float | None]:
    """Passing data counts as written: ``None`` in the blinded signal window."""
    hidden = set(window.tolist())
    return [None if i in hidden else float(v) for i, v in enumerate(values)]


def _predicted_window(
    failing: FloatArray, passes: list[FloatArray], window: IntArray
) -> list[FloatArray] | None:
    """Each category's passing observation: the data, in ``window`` the sidebands' prediction.

    ``None`` where the sidebands hold no failing data or some category no passing data.
    """
    observed = [values.copy() for values in passes]
    if window.size == 0:
        return observed
    sideband = np.ones(len(failing), dtype=bool)
    sideband[window] = False
    if not (failing[sideband].sum() > 0 and all(v[sideband].sum() > 0 for v in passes)):
        return None
    for values, passed in zip(observed, passes, strict=True):
        values[window] = failing[window] * (passed[sideband].sum() / failing[sideband].sum())
    return observed


def _category_records(
    where: Path,
    fit: PassFailFit,
    closures: list[TransferCheck],
    corrections: list[TransferCorrection] | None,
    cuts: tuple[float, ...],
    arrays: tuple[FloatArray, FloatArray, list[FloatArray], IntArray],
    *,
    variant: str,
    x_label: str,
) -> list[dict[str, Any]]:
    """Each category's numbers for ``passfail.json``, and its figure ``passfail_pass_k.png``.

    ``corrections``: each category's keyed bootstrap of its non-closure
    (``None``: none). ``arrays`` are the edges of ``x``, the failing data,
    each category's passing data and the blinded signal window.
    """
    edges, data_fail, data_passes, window = arrays
    categories = []
    for k, closure in enumerate(closures):
        channel = f"pass_{k}"
        upper = cuts[k + 1] if k + 1 < len(cuts) else None
        figure = category_figure(
            where,
            fit,
            channel,
            edges,
            data_fail,
            data_passes[k],
            window,
            closure.ratio,
            x_label=x_label,
        )
        share = (1.0 if upper is None else upper) - cuts[k]
        categories.append(
            {
                "channel": channel,
                "cuts": [cuts[k], upper],
                "transfer_fitted": fit.transfers[channel],
                "transfer_expected": closure.ratio,
                # eps_k / (1 - eps) of a uniform score
                "transfer_uniform": share / cuts[0] if variant != "score" else None,
                "simulation": _closure_json(
                    closure, None if corrections is None else corrections[k]
                ),
                "data_pass": _shown(data_passes[k], window),
                "postfit": {
                    "background_pass": fit.backgrounds_pass[channel].tolist(),
                    "signal_pass": fit.signals_pass[channel].tolist(),
                },
                "figure": f"{FOLDER}/{variant}/{figure}",
            }
        )
    return categories


def _bump_hunt(
    where: Path,
    settings: PassFailConfig,
    seed: int,
    arrays: tuple[FloatArray, FloatArray, FloatArray, FloatArray, FloatArray],
    *,
    ratio: float | list[float],
    nonclosure: FloatArray,
    blind: bool,
    x_label: str,
    cuts: tuple[float, ...] | None = None,
) -> dict[str, Any]:
    """A variant's bump hunt on the fit's spectra; its numbers for ``passfail.json``.

    With ``cuts`` (several, as categories) the passing spectra, the passing
    signal and the non-closure have one row per category, and ``ratio`` one
    entry.
    """
    from rosenblatt.studies.abcd.bumphunt import HuntSettings, summary_numbers, write_bumphunt

    hunt = HuntSettings.from_config(settings, seed)
    result = write_bumphunt(
        where,
        hunt,
        *arrays,
        ratio=ratio,
        blind=blind,
        x_label=x_label,
        nonclosure=nonclosure,
        cuts=cuts,
    )
    return summary_numbers(result)


def _fitted_slope(fit: PassFailFit, centres: FloatArray) -> float:
    """The fitted transfer ratio's relative change per unit of ``x`` (``transfer: linear``)."""
    from rosenblatt.abcd.passfail import SLOPE, SLOPE_SPAN

    half = 0.5 * (centres[-1] - centres[0]) or 1.0
    return float(fit.parameters[SLOPE][0]) * SLOPE_SPAN / half


#: the keys of a variant's ``passfail.json`` that ``summary.json`` holds
SUMMARY_KEYS = (
    "x0",
    "y0",
    "cuts",
    "blind",
    "transfer_shape",
    "mu",
    "mu_low",
    "mu_high",
    "mu_note",
    "transfer_fitted",
    "transfer_expected",
    "transfer_uniform",
    "transfer_slope",
    "workspace",
    "figure",
    "bumphunt",
    "note",
)


#: the keys of a category's record that ``summary.json`` holds
CATEGORY_SUMMARY_KEYS = (
    "channel",
    "cuts",
    "transfer_fitted",
    "transfer_expected",
    "transfer_uniform",
    "figure",
)


def summary_numbers(result: PassFailJson) -> PassFailNumbers:
    """The numbers of a variant's pass/fail fit that ``summary.json`` holds (no spectra)."""
    fields: Mapping[str, object] = result
    # SUMMARY_KEYS are keys of both records, with the same types
    numbers = cast("PassFailNumbers", {key: fields[key] for key in SUMMARY_KEYS if key in fields})
    if "categories" in result:
        numbers["categories"] = [
            {key: category[key] for key in CATEGORY_SUMMARY_KEYS}
            for category in result["categories"]
        ]
    simulation = result.get("simulation")
    if simulation is not None:
        numbers["linear_transfer_needed"] = simulation["linear_transfer_needed"]
        numbers["simulation_p_value_constant"] = simulation["p_value_constant"]
    return numbers


def write_results(folder: Path, results: dict[str, PassFailJson]) -> dict[str, PassFailNumbers]:
    """Write each variant's ``passfail/<variant>/passfail.json``; return the summary's numbers."""
    from rosenblatt.studies._common import strict_json

    numbers: dict[str, PassFailNumbers] = {}
    for variant, result in results.items():
        where = folder / FOLDER / variant
        where.mkdir(parents=True, exist_ok=True)
        text = json.dumps(strict_json(result), indent=2, allow_nan=False)
        write_text(where / "passfail.json", text)
        numbers[variant] = summary_numbers(result)
        numbers[variant]["file"] = f"{FOLDER}/{variant}/passfail.json"
    return numbers
