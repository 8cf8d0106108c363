"""The decorrelation methods side by side on the same events: the peers of a study.

Every method maps the score ``y`` of an event to a decorrelated score using a
defining background sample: the raw score itself, the marginal rarity
transform, the DDT, a conditional normalizing flow, IRGI, KDE and GridKDE
(and, in the LHCO study, DisCo, whose score is taken as trained). For each,
:func:`evaluate` measures on the testing sample the accuracy against the
exact conditional CDF where one exists, dCor² with its permutation floor and
p-value, the AUC, the spread of the background efficiency across ``x`` bins
at fixed working points, an optional ABCD closure, and the fit time and
transform time per 10^6 events. :func:`table` and :func:`plot` turn the
result into the report's table and its log-log figure.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

import numpy as np
from numpy.typing import NDArray

import rosenblatt as rb
from rosenblatt.transforms import ConditionalCDFTransform
from rosenblatt.typing import BoolArray, FloatArray

if TYPE_CHECKING:
    from matplotlib.artist import Artist

__all__ = [
    "LABELS",
    "WORKING_POINTS",
    "AbcdFigures",
    "EfficiencySpread",
    "PeerFigures",
    "PeerResult",
    "default_peers",
    "efficiency_spread",
    "evaluate",
    "plot",
    "section",
    "table",
]

log = logging.getLogger("rosenblatt.peers")

Maker = Callable[[], ConditionalCDFTransform]

#: background efficiencies at which the flatness in x is measured
WORKING_POINTS = (0.1, 0.5, 0.9)

#: a parameter a fitted transform evaluates with, as JSON data
ParamValue = float | str | list[float]


class EfficiencySpread(TypedDict):
    """The background efficiency across ``x`` bins at one working point (:func:`efficiency_spread`).

    Attributes
    ----------
    sd : float
        Standard deviation of the per-bin efficiencies.
    range : float
        Largest minus smallest per-bin efficiency.
    expected : float
        The binomial standard deviation of an efficiency at this point with the events of a bin.
    ratio : float
        ``sd / expected``: about 1 for a flat efficiency.
    per_bin : list of float
        The efficiency of each bin.
    """

    sd: float
    range: float
    expected: float
    ratio: float
    per_bin: list[float]


#: the ABCD closure figures of one score, as the caller's ``abcd`` function gives them
AbcdFigures = dict[str, float]


class PeerFigures(TypedDict):
    """What :func:`evaluate` measures of one score on the testing sample, before the fit's entries.

    ``rms_exact`` is ``None`` without an exact conditional CDF (and for
    scores that are not CDFs); ``auc`` is ``None`` without signal events;
    ``efficiency_spread`` is keyed by the working point written with ``:g``.
    """

    rms_exact: float | None
    dcc: float
    dcc_floor: float
    dcc_floor_std: float
    dcc_p_value: float
    dcc_events: int
    auc: float | None
    efficiency_spread: dict[str, EfficiencySpread]


class _PeerAbcd(TypedDict, total=False):
    abcd: AbcdFigures


class PeerResult(PeerFigures, _PeerAbcd):
    """One method's entry of :func:`evaluate`'s result (and of ``summary.json``'s ``peers``).

    Its :class:`PeerFigures`, then ``fit_seconds``, ``transform_seconds_per_1e6``,
    ``params`` (what the fit chose), ``kind`` (``raw``, ``given`` or
    ``transform``) and, where an ABCD closure was asked for, ``abcd``.
    """

    fit_seconds: float
    transform_seconds_per_1e6: float
    params: dict[str, ParamValue]
    kind: str


LABELS = {
    "raw": "raw score",
    "baseline": "raw score",
    "rarity": "rarity (marginal CDF)",
    "ddt": "DDT (10%)",
    "flow": "conditional flow",
    "irgi": "IRGI",
    "kde": "KDE",
    "grid_kde": "GridKDE",
    "disco": "DisCo",
}


def default_peers(
    *,
    irgi: Maker | None = None,
    kde: Maker | None = None,
    flow: Mapping[str, Any] | None = None,
    ddt_efficiency: float | Sequence[float] = 0.1,
    n_defining: int | None = None,
) -> dict[str, Maker | None]:
    """The methods compared, by name: ``None`` is the raw score, kept as it is.

    Parameters
    ----------
    irgi, kde
        How the study makes its IRGI and KDE (default: parameters chosen by
        cross-validation, ``depth="auto"`` and ``sigma_r="auto"``).
    flow
        Options of :class:`rosenblatt.ml.ConditionalFlow`; the flow is left
        out when torch or zuko cannot be imported.
    ddt_efficiency
        The DDT's working point(s).
    n_defining
        Size of the defining sample: the DDT takes up to 20 ``x`` bins with
        at least 20 events above (and below) each working point per bin.

    Returns
    -------
    dict
        ``{name: maker}`` in the order of the report.
    """
    n_bins = 20
    if n_defining is not None:
        tail = float(
            np.min(np.minimum(np.atleast_1d(ddt_efficiency), 1 - np.atleast_1d(ddt_efficiency)))
        )
        n_bins = int(np.clip(n_defining * tail // 20, 1, 20))
    peers: dict[str, Maker | None] = {
        "raw": None,
        "rarity": rb.Rarity,
        "ddt": lambda: rb.DDT(efficiency=ddt_efficiency, n_bins=n_bins),
    }
    try:
        from rosenblatt.ml.flow import ConditionalFlow
    except ImportError as err:
        log.warning("the conditional flow is left out (%s): install the ml extra", err)
    else:
        options = dict(flow or {})
        peers["flow"] = lambda: ConditionalFlow(**options)
    peers["irgi"] = irgi or (lambda: rb.IRGI(depth="auto"))
    peers["kde"] = kde or (lambda: rb.KDE(sigma_r="auto"))
    peers["grid_kde"] = lambda: rb.GridKDE(sigma_r="auto", degree=2)
    return peers


def efficiency_spread(
    x: FloatArray,
    score: FloatArray,
    efficiency: float,
    n_bins: int = 10,
    weight: FloatArray | None = None,
) -> EfficiencySpread:
    """Spread of the background efficiency across equal-occupancy bins of ``x`` at one working point.

    The cut keeps the share ``efficiency`` of all events (the score's
    quantile); per bin the share above it is measured.

    Parameters
    ----------
    x, score
        Background events.
    efficiency
        The working point, in (0, 1).
    n_bins
        Number of ``x`` bins of equal occupancy.
    weight
        Optional per-event weights.

    Returns
    -------
    EfficiencySpread
        ``sd`` (standard deviation of the per-bin efficiencies), ``range``
        (largest minus smallest), ``expected`` (the binomial standard deviation
        of an efficiency at this point with the events of a bin) and
        ``ratio`` = ``sd / expected`` (about 1 for a flat efficiency), and
        ``per_bin``, the efficiencies.
    """
    w = np.ones(len(x)) if weight is None else np.asarray(weight, dtype=np.float64)
    order = np.argsort(score, kind="stable")
    cum = np.cumsum(w[order]) / w.sum()
    cut = score[order][min(int(np.searchsorted(cum, 1.0 - efficiency)), len(cum) - 1)]
    passed = score > cut
    edges = np.quantile(x, np.linspace(0, 1, n_bins + 1))
    which = np.clip(np.searchsorted(edges, x, side="right") - 1, 0, n_bins - 1)
    eff, n_eff = np.empty(n_bins), np.empty(n_bins)
    for b in range(n_bins):
        wb = w[which == b]
        eff[b] = np.sum(wb * passed[which == b]) / wb.sum()
        n_eff[b] = wb.sum() ** 2 / np.sum(wb * wb)
    expected = float(np.sqrt(np.mean(efficiency * (1 - efficiency) / n_eff)))
    sd = float(np.std(eff, ddof=1))
    return {
        "sd": sd,
        "range": float(eff.max() - eff.min()),
        "expected": expected,
        "ratio": sd / expected,
        "per_bin": eff.tolist(),
    }


def evaluate(
    peers: Mapping[str, Maker | None],
    *,
    defining: tuple[FloatArray, FloatArray],
    testing: tuple[FloatArray, FloatArray, NDArray[Any]],
    exact: Callable[[FloatArray, FloatArray], FloatArray] | None = None,
    scores: Mapping[str, FloatArray] | None = None,
    abcd: Callable[[FloatArray], AbcdFigures] | None = None,
    working_points: Sequence[float] = WORKING_POINTS,
    n_bins: int = 10,
    permutations: int = 100,
    dcc_events: int | None = None,
    seed: int = 0,
) -> dict[str, PeerResult]:
    """Fit each method on the defining sample and measure it on the testing sample.

    Parameters
    ----------
    peers
        ``{name: maker}`` (see :func:`default_peers`); ``None`` keeps the score.
    defining
        ``(x, y)`` of the defining background sample.
    testing
        ``(x, y, label)`` of the testing sample, label 0 for background.
    exact
        The exact conditional CDF of the background, if known: ``RMS`` of each
        fitted transform's ``gamma`` against it on the testing background
        (``None`` for the raw and given scores, which are not CDFs).
    scores
        Scores of further methods on the testing sample, taken as they are
        (DisCo); they have no fit and no transform time.
    abcd
        ``abcd(score) -> dict`` of ABCD closure figures on the testing sample.
    working_points
        Background efficiencies of :func:`efficiency_spread`.
    n_bins
        ``x`` bins of :func:`efficiency_spread`.
    permutations
        Permutations of the dCor² floor and p-value.
    dcc_events
        dCor² and its floor on the first this many testing background events
        (default all).
    seed
        Seed of the permutations.

    Returns
    -------
    dict of PeerResult
        ``{name: figures}``: ``rms_exact``, ``dcc``, ``dcc_floor``,
        ``dcc_floor_std``, ``dcc_p_value``, ``auc``, ``efficiency_spread``
        (per working point), ``abcd``, ``fit_seconds``,
        ``transform_seconds_per_1e6`` and ``params`` (what the fit chose).
    """
    x_test, y_test, label = testing
    bkg = np.asarray(label) == 0
    results: dict[str, PeerResult] = {}
    entries: list[tuple[str, Maker | None, FloatArray | None]] = [
        (n, m, None) for n, m in peers.items()
    ]
    entries += [(n, None, np.asarray(s, dtype=np.float64)) for n, s in (scores or {}).items()]
    for name, make, given in entries:
        scored = _score(make, given, defining, x_test, y_test)
        # only a fitted transform estimates the conditional CDF: the raw and given scores have no RMS
        cdf = exact if make is not None else None
        figures = _figures(
            scored.score,
            (x_test, y_test, label),
            bkg,
            cdf,
            working_points,
            n_bins,
            permutations,
            dcc_events,
            seed,
        )
        closure: _PeerAbcd = {} if abcd is None else {"abcd": abcd(scored.score)}
        row: PeerResult = {
            **figures,
            **closure,
            "fit_seconds": scored.fit_seconds,
            "transform_seconds_per_1e6": scored.transform_seconds * 1e6 / len(x_test),
            "params": scored.params,
            "kind": scored.kind,
        }
        results[name] = row
        log.info(
            "%s: dCor2 %.2e (floor %.2e), AUC %.4f, fit %.2f s%s",
            name,
            row["dcc"],
            row["dcc_floor"],
            row["auc"],
            scored.fit_seconds,
            "" if row["rms_exact"] is None else f", RMS {row['rms_exact']:.4f}",
        )
    return results


@dataclass(frozen=True, slots=True)
class _Scored:
    """One method's testing score, with what its fit took and chose.

    Attributes
    ----------
    score : ndarray
        The score of every testing event.
    kind : str
        ``given`` (a score taken as it is), ``raw`` (the score itself) or ``transform``.
    fit_seconds, transform_seconds : float
        Wall time of the fit and of transforming the testing sample (0 without a fit).
    params : dict
        What the fitted transform evaluates with (empty without a fit).
    """

    score: FloatArray
    kind: str
    fit_seconds: float = 0.0
    transform_seconds: float = 0.0
    params: dict[str, ParamValue] = field(default_factory=dict)


def _score(
    make: Maker | None,
    given: FloatArray | None,
    defining: tuple[FloatArray, FloatArray],
    x_test: FloatArray,
    y_test: FloatArray,
) -> _Scored:
    """The testing score of a given score, of the raw score, or of a transform fitted on ``defining``."""
    if given is not None:
        return _Scored(given, "given")
    if make is None:
        return _Scored(y_test, "raw")
    start = time.perf_counter()
    transform = make().fit(*defining)
    fit_seconds = time.perf_counter() - start
    start = time.perf_counter()
    score = transform.transform(x_test, y_test)
    transform_seconds = time.perf_counter() - start
    return _Scored(score, "transform", fit_seconds, transform_seconds, _chosen(transform))


def _chosen(transform: ConditionalCDFTransform) -> dict[str, ParamValue]:
    """What a fitted transform evaluates with, as JSON data (chosen parameters, training)."""
    params: dict[str, ParamValue] = {
        k: v for k, v in transform.fitted_params().items() if isinstance(v, (int, float, str, list))
    }
    history = getattr(transform, "history_", None)
    if history is not None:
        params.update(
            epochs=history["epochs"],
            best_epoch=history["best_epoch"],
            training_seconds=history["seconds"],
        )
    return params


def _figures(
    score: FloatArray,
    testing: tuple[FloatArray, FloatArray, NDArray[Any]],
    bkg: BoolArray,
    exact: Callable[[FloatArray, FloatArray], FloatArray] | None,
    working_points: Sequence[float],
    n_bins: int,
    permutations: int,
    dcc_events: int | None,
    seed: int,
) -> PeerFigures:
    """dCor² with its permutation floor, AUC, efficiency spread and (with ``exact``) RMS of one score."""
    x, y, label = testing
    x_b, y_b, s_b = x[bkg], y[bkg], score[bkg]
    n = len(x_b) if dcc_events is None else min(int(dcc_events), len(x_b))
    perm = rb.permutation_test(x_b[:n], s_b[:n], n_permutations=permutations, seed=seed)
    has_signal = bool(np.any(~bkg))
    return {
        "rms_exact": None
        if exact is None
        else float(np.sqrt(np.mean((s_b - exact(x_b, y_b)) ** 2))),
        "dcc": float(perm.statistic),
        "dcc_floor": float(perm.floor),
        "dcc_floor_std": float(perm.floor_std),
        "dcc_p_value": float(perm.p_value),
        "dcc_events": n,
        "auc": float(rb.roc_auc(label, score)) if has_signal else None,
        "efficiency_spread": {
            f"{eff:g}": efficiency_spread(x_b, s_b, eff, n_bins=n_bins) for eff in working_points
        },
    }


def table(
    peers: Mapping[str, Mapping[str, Any]], working_points: Sequence[float] = WORKING_POINTS
) -> str:
    """The Markdown table of :func:`evaluate`'s result, one row per method."""
    has_rms = any(row.get("rms_exact") is not None for row in peers.values())
    has_abcd = any(row.get("abcd") for row in peers.values())
    head = ["method"]
    if has_rms:
        head.append("RMS vs exact")
    head += ["dCor² (floor, p)", "AUC"]
    head += [f"eff. spread at {100 * e:g}%: sd (x binomial)" for e in working_points]
    if has_abcd:
        head.append("ABCD: share of cuts with abs(eta) < 1e-2")
    head += ["fit [s]", "transform [s / 10^6]"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name, row in peers.items():
        cells = [LABELS.get(name, name)]
        if has_rms:
            cells.append("–" if row.get("rms_exact") is None else f"{row['rms_exact']:.4f}")
        cells.append(f"{row['dcc']:.2e} ({row['dcc_floor']:.1e}, {row['dcc_p_value']:.2f})")
        cells.append("–" if row.get("auc") is None else f"{row['auc']:.4f}")
        for e in working_points:
            spread = row["efficiency_spread"][f"{e:g}"]
            cells.append(f"{spread['sd']:.4f} ({spread['ratio']:.1f}x)")
        if has_abcd:
            closure = row.get("abcd") or {}
            value = closure.get("frac_eta_below_1e-2")
            cells.append("–" if value is None else f"{value:.3f}")
        given = row.get("kind") != "transform"
        cells.append("–" if given else f"{row['fit_seconds']:.2f}")
        cells.append("–" if given else f"{row['transform_seconds_per_1e6']:.2f}")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def plot(peers: Mapping[str, Mapping[str, Any]], path: Path) -> str:
    """Accuracy (where the exact CDF is known) and dCor² against fit + transform time, log-log.

    Returns the file name written. Methods without a fit (the raw score,
    DisCo) are horizontal lines; the permutation floor is a grey band. Each
    method has its colour and marker of :data:`rosenblatt.plotting.METHOD_STYLES`;
    the key sits to the right of the panels.
    """
    from rosenblatt.plotting import figure, method_style, save_figure

    panels = ["dcc"]
    if any(row.get("rms_exact") is not None for row in peers.values()):
        panels.insert(0, "rms_exact")
    fig, axes = figure(ncols=len(panels), width=6.5, key=4.5)
    axes = np.atleast_1d(axes)
    key: dict[str, Artist] = {}
    for ax, quantity in zip(axes, panels, strict=True):
        for name, row in peers.items():
            value = row.get(quantity)
            if value is None or not value > 0:
                continue
            style = method_style(name)
            label = LABELS.get(name, name)
            if row.get("kind") != "transform":
                key[label] = ax.axhline(value, color=style.colour, linestyle="--", label=label)
                continue
            seconds = row["fit_seconds"] + row["transform_seconds_per_1e6"]
            key[label] = ax.scatter(
                seconds,
                value,
                color=style.colour,
                marker=style.marker,
                edgecolors="black",
                linewidths=0.5,
                s=90,
                label=label,
                zorder=3,
            )
        if quantity == "dcc":
            floors = np.array([row["dcc_floor"] for row in peers.values()])
            spread = np.array([row["dcc_floor_std"] for row in peers.values()])
            lo, hi = float(np.median(floors - spread)), float(np.median(floors + spread))
            key["permutation floor"] = ax.axhspan(
                max(lo, 1e-12), hi, color="grey", alpha=0.3, label="permutation floor"
            )
            ax.set_ylabel(r"dCor$^2$(x, score), testing background")
        else:
            ax.set_ylabel(r"RMS($\gamma - \gamma_{exact}$), testing background")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel(r"fit + transform of $10^6$ events [s]")
    fig.legend(
        list(key.values()), list(key), loc="outside right upper", fontsize="small", frameon=False
    )
    return save_figure(fig, path).name


def section(peers: Mapping[str, Mapping[str, Any]], folder: Path, intro: str) -> str:
    """The report's section on the peers: ``intro``, the table and the figure (written to ``folder``)."""
    figure = plot(peers, folder / "peers.png")
    return f"""## The decorrelation methods side by side

{intro}

{table(peers)}

![peers]({figure})
"""
