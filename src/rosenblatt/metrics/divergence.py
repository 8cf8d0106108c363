"""Mass sculpting: 1/JSD of the background shape passing and failing a score cut."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from rosenblatt._validation import as_1d_float, check_finite, check_int, check_same_length, is_int
from rosenblatt.metrics.roc import _check_efficiency, _classification_inputs, roc_curve
from rosenblatt.typing import ArrayLike, FloatArray

__all__ = ["inverse_jsd"]


def _jsd_base2(first: FloatArray, second: FloatArray) -> float:
    """Jensen-Shannon divergence (bits) of two normalised histograms."""
    from scipy.special import rel_entr

    middle = 0.5 * (first + second)
    nats = 0.5 * (np.sum(rel_entr(first, middle)) + np.sum(rel_entr(second, middle)))
    return float(nats) / math.log(2.0)


def _x_axis(bins: int | Sequence[float] | Any, x_background: FloatArray) -> Any:
    """The ``hist`` axis described by ``bins`` (see :func:`inverse_jsd`)."""
    import hist

    if isinstance(bins, (bool, np.bool_)):
        msg = f"bins must be a number of bins, bin edges or an axis, got {bins!r}"
        raise TypeError(msg)
    if is_int(bins):
        check_int(bins, "bins", low=1)
        low, high = float(x_background.min()), float(x_background.max())
        if low == high:
            high = low + 1.0
        return hist.axis.Regular(int(bins), low, float(np.nextafter(high, np.inf)))
    if hasattr(bins, "edges"):
        return bins
    edges = np.asarray(bins, dtype=np.float64)
    if edges.ndim != 1 or edges.size < 2 or not np.all(np.isfinite(edges)):
        msg = f"bins edges must be at least two finite numbers, got {edges.size} value(s)"
        raise ValueError(msg)
    if not np.all(np.diff(edges) > 0):
        msg = f"bins edges must be strictly increasing, {int((np.diff(edges) <= 0).sum())} are not"
        raise ValueError(msg)
    return hist.axis.Variable(edges)


def inverse_jsd(
    x: ArrayLike,
    label: ArrayLike,
    score: ArrayLike,
    signal_efficiency: float = 0.5,
    weight: ArrayLike | None = None,
    bins: int | Sequence[float] | Any = 50,
) -> float:
    """1/JSD of the background ``x`` shape passing and failing a score cut.

    The mass-sculpting figure of the decorrelation literature (Kitouni et al.
    2021, Algren et al. 2023): cut on ``score`` at a fixed signal efficiency,
    fill the background ``x`` values that pass and those that fail into two
    weighted histograms (boost-histogram via ``hist``), normalise each to unit
    sum and return the inverse of their Jensen-Shannon divergence
    ``JSD(P, Q) = KL(P, M)/2 + KL(Q, M)/2``, ``M = (P + Q)/2``, in bits
    (log base 2, so JSD is in [0, 1] and 1/JSD >= 1). Larger is better; a
    score independent of ``x`` gives a value limited only by the histogram
    statistics.

    The cut keeps events with ``score >= t``, ``t`` the largest threshold of
    :func:`roc_curve` whose signal efficiency reaches ``signal_efficiency``.

    Parameters
    ----------
    x
        Protected observable (e.g. the dijet mass in GeV), one per event.
    label, score, weight
        As for :func:`roc_curve`.
    signal_efficiency
        Signal efficiency of the cut, in (0, 1].
    bins
        Binning of ``x``: a number of equal-width bins spanning the background
        ``x`` range from its minimum to its maximum (both included, default
        50); an increasing sequence of bin edges; or a ``hist``/boost-histogram
        axis. With explicit edges or an axis every background event must fall
        inside, nothing is dropped silently.

    Returns
    -------
    float
        ``1 / JSD``; ``inf`` when the two shapes are identical.

    Raises
    ------
    ValueError
        On invalid inputs, when no background event passes or none fails the
        cut, when a background event lies outside the given binning, or when
        negative weights leave a bin with negative content.
    """
    import hist

    efficiency = _check_efficiency(signal_efficiency)
    x_arr = as_1d_float(x, "x")
    check_finite(x_arr, "x")
    is_signal, score_arr, w = _classification_inputs(label, score, weight)
    check_same_length(x=x_arr, label=is_signal)
    _, true_rate, thresholds = roc_curve(is_signal, score_arr, w, drop_intermediate=False)
    threshold = thresholds[int(np.argmax(true_rate >= efficiency))]

    background = ~is_signal
    x_bkg = x_arr[background]
    w_bkg = np.ones(x_bkg.size) if w is None else w[background]
    passing = score_arr[background] >= threshold

    axis = _x_axis(bins, x_bkg)
    edges = np.asarray(axis.edges, dtype=np.float64)
    outside = (x_bkg < edges[0]) | (x_bkg >= edges[-1])
    if outside.any():
        msg = (
            f"bins: {int(outside.sum())} of {x_bkg.size} background x value(s) lie outside "
            f"[{edges[0]:g}, {edges[-1]:g}); widen the binning"
        )
        raise ValueError(msg)

    contents = []
    for name, members in (("passes", passing), ("fails", ~passing)):
        histogram = hist.Hist(axis, storage=hist.storage.Weight())
        histogram.fill(x_bkg[members], weight=w_bkg[members])
        inside = histogram.values()
        total = float(inside.sum())
        if not total > 0:
            msg = (
                f"no background weight {name} the cut at signal efficiency {efficiency:g} "
                f"({int(members.sum())} of {x_bkg.size} background events, total weight "
                f"{total:g}): the JSD is undefined"
            )
            raise ValueError(msg)
        if (inside < 0).any():
            msg = (
                f"{int((inside < 0).sum())} bin(s) of the background that {name} the cut "
                "have negative content (negative weights): the JSD is undefined"
            )
            raise ValueError(msg)
        contents.append(inside / total)
    divergence = _jsd_base2(contents[0], contents[1])
    if divergence <= 0:
        return math.inf
    return 1.0 / divergence
