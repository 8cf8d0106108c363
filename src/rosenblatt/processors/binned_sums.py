"""Sums of weights and of squared weights per ``(x, y)`` bin, flow bins included.

The histograms of a chunk have two category axes (dataset, process) that are
constant over most chunks; what varies per event is its ``(x, y)`` bin. This
module finds each event's bin as boost-histogram does and adds its weight:

- on a ``Regular`` axis, with boost-histogram's own arithmetic
  (``floor((v - start) / (stop - start) * bins)``);
- on a ``Variable`` axis, the number of edges at or below the value: from a
  lookup table over a fine regular grid, then a step or two over the edges
  (predictable branches), or ``numpy.searchsorted``.

With the ``fast`` extra numba loops find the bins and add every event in
input order, as ``numpy.bincount`` does without it: the sums are identical.

Index 0 is the underflow and the last index the overflow; a value on an edge
belongs to the bin above it, and NaN to the overflow, as in boost-histogram.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import boost_histogram as bh
import numpy as np
from numpy.typing import NDArray

from rosenblatt._jit import numba_enabled

__all__ = ["AxisBins", "axis_bins", "binned_sums", "binned_sums_of_values", "flow_index"]


try:
    import numba

    def _helper(function: Callable[..., Any]) -> Callable[..., Any]:
        return numba.njit(cache=True, nogil=True)(function)

except ImportError:  # pragma: no cover - numpy path used instead

    def _helper(function: Callable[..., Any]) -> Callable[..., Any]:
        return function


#: how :func:`_flow_bin` finds a bin: boost-histogram's arithmetic, equal spacing, a table
REGULAR, UNIFORM, VARIABLE = 0, 1, 2


@_helper
def _flow_bin(value: float, kind: int, edges: NDArray[np.float64], table: NDArray[np.intp]) -> int:
    """Flow-bin index of one value (0: underflow, ``len(edges)``: overflow and NaN)."""
    n = len(edges)
    low = edges[0]
    if np.isnan(value):
        return n
    if kind == REGULAR:
        delta = edges[n - 1] - low
        # floor((value - low) / delta * bins); the product with bins / delta gives it
        # unless the value lies within rounding of a bin edge
        t = (value - low) * ((n - 1) / delta)
        if 0.0 < t < n - 1:
            fraction = t - int(t)
            if 1e-9 < fraction < 1.0 - 1e-9:
                return int(t) + 1
        z = (value - low) / delta
        if z < 1.0:
            return int(z * (n - 1)) + 1 if z >= 0.0 else 0
        return n
    if kind == UNIFORM:
        # a clamped first guess, then the exact count of edges at or below the value
        i = int(min(max((value - low) * ((n - 1) / (edges[n - 1] - low)), -1.0), n) + 1.0)
        i = min(i, n)
        while i > 0 and edges[i - 1] > value:
            i -= 1
    elif value < low:
        return 0
    else:
        # the table's count one cell back is a lower bound of the edges at or below
        cells = len(table) - 1
        i = table[min(max(int((value - low) * (cells / (edges[n - 1] - low))) - 1, 0), cells)]
    while i < n and edges[i] <= value:
        i += 1
    return i


@_helper
def _bins_loop(
    values: NDArray[np.float64],
    kind: int,
    edges: NDArray[np.float64],
    table: NDArray[np.intp],
    out: NDArray[np.intp],
) -> None:
    for k in range(len(values)):
        out[k] = _flow_bin(values[k], kind, edges, table)


@_helper
def _sums_loop(
    x_bin: NDArray[np.intp],
    y_bin: NDArray[np.intp],
    weight: NDArray[np.float64],
    sums: NDArray[np.float64],
    squares: NDArray[np.float64],
) -> None:
    for k in range(len(weight)):
        sums[x_bin[k], y_bin[k]] += weight[k]
        squares[x_bin[k], y_bin[k]] += weight[k] * weight[k]


@_helper
def _sums_of_values_loop(
    x_bin: NDArray[np.intp],
    y: NDArray[np.float64],
    kind: int,
    edges: NDArray[np.float64],
    table: NDArray[np.intp],
    weight: NDArray[np.float64],
    sums: NDArray[np.float64],
    squares: NDArray[np.float64],
) -> None:
    for k in range(len(weight)):
        j = _flow_bin(y[k], kind, edges, table)
        sums[x_bin[k], j] += weight[k]
        squares[x_bin[k], j] += weight[k] * weight[k]


def _lookup(edges: NDArray[np.float64]) -> NDArray[np.intp]:
    """Edges at or below the starts of ``8 len(edges)`` equal cells spanning the edges."""
    cells = 8 * len(edges)
    starts = edges[0] + np.arange(cells + 1) * ((edges[-1] - edges[0]) / cells)
    return np.searchsorted(edges, starts, side="right").astype(np.intp)


def _regular(axis: Any) -> bool:
    return isinstance(axis, bh.axis.Regular) and axis.transform is None


class AxisBins(NamedTuple):
    """How the compiled loops find bins along one axis: its kind, edges and lookup table."""

    kind: int
    edges: NDArray[np.float64]
    table: NDArray[np.intp]


def axis_bins(axis: Any) -> AxisBins:
    """The :class:`AxisBins` of a ``Regular`` or ``Variable`` axis."""
    edges = np.ascontiguousarray(axis.edges, dtype=np.float64)
    if _regular(axis):
        return AxisBins(REGULAR, edges, np.zeros(1, dtype=np.intp))
    spacing = np.diff(edges)
    if len(spacing) and np.allclose(spacing, spacing[0], rtol=1e-9, atol=0.0):
        return AxisBins(UNIFORM, edges, np.zeros(1, dtype=np.intp))
    return AxisBins(VARIABLE, edges, _lookup(edges))


def flow_index(axis: Any, values: NDArray[np.float64]) -> NDArray[np.intp]:
    """The flow-bin index of every value along a ``Regular`` or ``Variable`` axis."""
    edges = np.asarray(axis.edges, dtype=np.float64)
    values = np.ascontiguousarray(values, dtype=np.float64)
    regular = _regular(axis)
    if numba_enabled() and len(edges) > 1:
        out = np.empty(len(values), dtype=np.intp)
        _bins_loop(values, *axis_bins(axis), out)
        return out
    if regular:
        n = len(edges) - 1
        with np.errstate(invalid="ignore"):
            z = (values - edges[0]) / (edges[-1] - edges[0])
            inside = np.where(z >= 0, (np.where(z >= 0, z, 0.0) * n).astype(np.intp), -1)
            return np.where(z < 1, inside, n) + 1
    return np.searchsorted(edges, values, side="right").astype(np.intp)


def binned_sums(
    x_bin: NDArray[np.intp],
    y_bin: NDArray[np.intp],
    weight: NDArray[np.float64],
    shape: tuple[int, int],
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Sums of ``weight`` and ``weight**2`` per flow bin (indices from :func:`flow_index`)."""
    weight = np.ascontiguousarray(weight, dtype=np.float64)
    if numba_enabled():
        sums, squares = np.zeros(shape), np.zeros(shape)
        _sums_loop(x_bin, y_bin, weight, sums, squares)
        return sums, squares
    cells = x_bin * shape[1] + y_bin
    size = shape[0] * shape[1]
    counted = np.bincount(cells, weights=weight, minlength=size)
    counted_squares = np.bincount(cells, weights=weight * weight, minlength=size)
    return (
        np.asarray(counted, dtype=np.float64).reshape(shape),
        np.asarray(counted_squares, dtype=np.float64).reshape(shape),
    )


def binned_sums_of_values(
    x_bin: NDArray[np.intp],
    y_axis: Any,
    y: NDArray[np.float64],
    weight: NDArray[np.float64],
    shape: tuple[int, int],
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """:func:`binned_sums` with the ``y`` bins found on the way, from the values on ``y_axis``.

    Equal to ``binned_sums(x_bin, flow_index(y_axis, y), weight, shape)``; with
    numba, one loop finds each event's ``y`` bin and adds its weight, so no
    array of bins is made.
    """
    weight = np.ascontiguousarray(weight, dtype=np.float64)
    y = np.ascontiguousarray(y, dtype=np.float64)
    if not numba_enabled() or len(y_axis.edges) < 2:
        return binned_sums(x_bin, flow_index(y_axis, y), weight, shape)
    sums, squares = np.zeros(shape), np.zeros(shape)
    _sums_of_values_loop(x_bin, y, *axis_bins(y_axis), weight, sums, squares)
    return sums, squares
