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
from typing import Any

import boost_histogram as bh
import numpy as np
from numpy.typing import NDArray

from rosenblatt._jit import numba_enabled

__all__ = ["binned_sums", "flow_index"]


try:
    import numba

    def _helper(function: Callable[..., Any]) -> Callable[..., Any]:
        return numba.njit(cache=True, nogil=True)(function)

except ImportError:  # pragma: no cover - numpy path used instead

    def _helper(function: Callable[..., Any]) -> Callable[..., Any]:
        return function


@_helper
def _regular_bins(
    values: NDArray[np.float64], edges: NDArray[np.float64], out: NDArray[np.intp]
) -> None:
    """Flow-bin indices on a regular axis, as boost-histogram computes them."""
    n = len(edges)
    low, delta = edges[0], edges[n - 1] - edges[0]
    scale = (n - 1) / delta
    for k in range(len(values)):
        value = values[k]
        # floor((value - low) / delta * bins); the product with bins / delta gives it
        # unless the value lies within rounding of a bin edge
        t = (value - low) * scale
        if 0.0 < t < n - 1:
            fraction = t - int(t)
            if 1e-9 < fraction < 1.0 - 1e-9:
                out[k] = int(t) + 1
                continue
        if np.isnan(value):
            out[k] = n
            continue
        z = (value - low) / delta
        if z < 1.0:
            out[k] = int(z * (n - 1)) + 1 if z >= 0.0 else 0
        else:
            out[k] = n


@_helper
def _variable_bins(
    values: NDArray[np.float64],
    edges: NDArray[np.float64],
    table: NDArray[np.intp],
    out: NDArray[np.intp],
) -> None:
    """Flow-bin indices on a variable axis: the number of edges at or below each value."""
    n, cells = len(edges), len(table) - 1
    low = edges[0]
    scale = cells / (edges[n - 1] - low)
    for k in range(len(values)):
        value = values[k]
        if np.isnan(value):
            out[k] = n
        elif value < low:
            out[k] = 0
        else:
            # the table's count one cell back is a lower bound of the edges at or below
            i = table[min(max(int((value - low) * scale) - 1, 0), cells)]
            while i < n and edges[i] <= value:
                i += 1
            out[k] = i


@_helper
def _uniform_bins(
    values: NDArray[np.float64], edges: NDArray[np.float64], out: NDArray[np.intp]
) -> None:
    """Flow-bin indices on a variable axis of equally spaced edges: arithmetic, then exact."""
    n = len(edges)
    low = edges[0]
    scale = (n - 1) / (edges[n - 1] - low)
    for k in range(len(values)):
        value = values[k]
        if np.isnan(value):
            out[k] = n
            continue
        # a clamped first guess, then the exact count of edges at or below the value
        i = int(min(max((value - low) * scale, -1.0), n) + 1.0)
        i = min(i, n)
        while i > 0 and edges[i - 1] > value:
            i -= 1
        while i < n and edges[i] <= value:
            i += 1
        out[k] = i


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


def _lookup(edges: NDArray[np.float64]) -> NDArray[np.intp]:
    """Edges at or below the starts of ``8 len(edges)`` equal cells spanning the edges."""
    cells = 8 * len(edges)
    starts = edges[0] + np.arange(cells + 1) * ((edges[-1] - edges[0]) / cells)
    return np.searchsorted(edges, starts, side="right").astype(np.intp)


def _regular(axis: Any) -> bool:
    return isinstance(axis, bh.axis.Regular) and axis.transform is None


def flow_index(axis: Any, values: NDArray[np.float64]) -> NDArray[np.intp]:
    """The flow-bin index of every value along a ``Regular`` or ``Variable`` axis."""
    edges = np.asarray(axis.edges, dtype=np.float64)
    values = np.ascontiguousarray(values, dtype=np.float64)
    regular = _regular(axis)
    if numba_enabled() and len(edges) > 1:
        out = np.empty(len(values), dtype=np.intp)
        spacing = np.diff(edges)
        if regular:
            _regular_bins(values, edges, out)
        elif np.allclose(spacing, spacing[0], rtol=1e-9, atol=0.0):
            _uniform_bins(values, edges, out)
        else:
            _variable_bins(values, edges, _lookup(edges), out)
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
