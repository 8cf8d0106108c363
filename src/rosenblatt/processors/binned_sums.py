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
from typing import Any, NamedTuple, TypeVar, cast

import boost_histogram as bh
import numpy as np

from rosenblatt._jit import numba_enabled
from rosenblatt.typing import BoolArray, FloatArray, IntArray

__all__ = ["AxisBins", "axis_bins", "binned_sums", "flow_index", "warm_up"]


_F = TypeVar("_F", bound=Callable[..., Any])

try:
    import numba

    def _helper(function: _F) -> _F:
        return cast("_F", numba.njit(cache=True, nogil=True)(function))

    def _inline(function: _F) -> _F:
        return cast("_F", numba.njit(cache=True, nogil=True, inline="always")(function))

except ImportError:  # pragma: no cover - numpy path used instead

    def _helper(function: _F) -> _F:
        return function

    _inline = _helper


#: the axis kinds: boost-histogram's arithmetic, equally spaced edges, any edges (a table)
REGULAR, UNIFORM, VARIABLE = 0, 1, 2

#: within this distance from an edge, in bins, the arithmetic bin is checked exactly
ROUNDING = 1e-9


@_inline
def _near_edge(
    value: float, low: float, scale: float, n: int, tolerance: float
) -> tuple[int, bool]:
    """The flow-bin index from arithmetic alone, and whether the value lies within rounding of an edge.

    ``(value - low) * scale`` is clamped between ``-0.5`` and ``n - 0.5``
    (``n`` edges), so under- and overflow come out without a branch: values
    below, inside and above the edges are interleaved in real data, and a
    branch on which one it is would be mispredicted at random. A clamped value,
    and NaN (the overflow), lies half a bin from any edge.

    The index is the floor of a number of at least 0.5, converted through
    32-bit integers: that conversion has a vector instruction, the 64-bit one
    has none before AVX-512, so the loop over values runs on vector units.
    """
    top = n - 0.5
    u = max(min((value - low) * scale, top), -0.5)
    shifted = (top if np.isnan(value) else u) + 1.0
    whole = np.floor(shifted)
    fraction = shifted - whole
    return np.int32(whole), (fraction < tolerance) | (fraction > 1.0 - tolerance)


@_inline
def _regular_bin(
    value: float,
    edges: FloatArray,
    table: IntArray,
    low: float,
    scale: float,
    tolerance: float,
) -> int:
    """Flow-bin index on a regular axis, as boost-histogram computes it (``scale = bins / width``)."""
    n = len(edges)
    # floor((value - low) / width * bins); the product with bins / width gives it
    # unless the value lies within rounding of a bin edge
    i, near = _near_edge(value, low, scale, n, tolerance)
    if not near:
        return i
    z = (value - low) / (edges[n - 1] - low)
    if z < 1.0:
        return int(z * (n - 1)) + 1 if z >= 0.0 else 0
    return n


@_inline
def _uniform_bin(
    value: float,
    edges: FloatArray,
    table: IntArray,
    low: float,
    scale: float,
    tolerance: float,
) -> int:
    """Flow-bin index on equally spaced edges: arithmetic, then near an edge the exact count of edges <= value."""
    n = len(edges)
    i, near = _near_edge(value, low, scale, n, tolerance)
    if near:
        while i > 0 and edges[i - 1] > value:
            i -= 1
        while i < n and edges[i] <= value:
            i += 1
    return i


@_inline
def _variable_bin(
    value: float,
    edges: FloatArray,
    table: IntArray,
    low: float,
    scale: float,
    tolerance: float,
) -> int:
    """Flow-bin index on any edges: a lookup ``table`` over equal cells, then a step or two."""
    n = len(edges)
    if np.isnan(value):
        return n
    if value < low:
        return 0
    # the table's count one cell back is a lower bound of the edges at or below
    i: int = table[min(max(int((value - low) * scale) - 1, 0), len(table) - 1)]
    while i < n and edges[i] <= value:
        i += 1
    return i


@_helper
def _arithmetic_bins(
    values: FloatArray,
    low: float,
    scale: float,
    n: int,
    tolerance: float,
    out: IntArray,
    near: BoolArray,
) -> int:
    """Every value's flow-bin index from arithmetic alone (:func:`_near_edge`), and how many lie within rounding of an edge.

    Only selects, no branch: the loop runs on the processor's vector units.
    ``near[k]`` marks the values whose index :func:`_exact_bins` settles.
    """
    n_near = 0
    for k in range(len(values)):
        out[k], close = _near_edge(values[k], low, scale, n, tolerance)
        near[k] = close
        n_near += close
    return n_near


@_helper
def _exact_bins(
    values: FloatArray,
    kind: int,
    edges: FloatArray,
    table: IntArray,
    low: float,
    scale: float,
    tolerance: float,
    out: IntArray,
    near: BoolArray,
) -> None:
    """The exact flow-bin index of the values marked ``near`` an edge.

    ``near`` is read eight flags at a time (its length is a multiple of 8):
    the values near an edge are few, and most words of flags are zero.
    """
    words = near.view(np.uint64)
    for w in range(len(words)):
        if words[w] == 0:
            continue
        for k in range(8 * w, min(8 * w + 8, len(values))):
            if not near[k]:
                continue
            if kind == REGULAR:
                out[k] = _regular_bin(values[k], edges, table, low, scale, tolerance)
            else:
                out[k] = _uniform_bin(values[k], edges, table, low, scale, tolerance)


@_helper
def _bins_loop(
    values: FloatArray,
    kind: int,
    edges: FloatArray,
    table: IntArray,
    low: float,
    scale: float,
    tolerance: float,
    out: IntArray,
) -> None:
    if kind == VARIABLE:
        for k in range(len(values)):
            out[k] = _variable_bin(values[k], edges, table, low, scale, tolerance)
        return
    # arithmetic for every value, then the exact bin of the few near an edge
    near = np.empty(-(-len(values) // 8) * 8, dtype=np.bool_)
    near[len(values) :] = False
    if _arithmetic_bins(values, low, scale, len(edges), tolerance, out, near):
        _exact_bins(values, kind, edges, table, low, scale, tolerance, out, near)


@_helper
def _sums_loop(
    x_bin: IntArray,
    y_bin: IntArray,
    weight: FloatArray,
    sums: FloatArray,
    squares: FloatArray,
) -> None:
    for k in range(len(weight)):
        sums[x_bin[k], y_bin[k]] += weight[k]
        squares[x_bin[k], y_bin[k]] += weight[k] * weight[k]


def _lookup(edges: FloatArray) -> IntArray:
    """Edges at or below the starts of ``8 len(edges)`` equal cells spanning the edges."""
    cells = 8 * len(edges)
    starts: FloatArray = edges[0] + np.arange(cells + 1) * ((edges[-1] - edges[0]) / cells)
    return np.searchsorted(edges, starts, side="right").astype(np.intp)


def _regular(axis: Any) -> bool:
    return isinstance(axis, bh.axis.Regular) and axis.transform is None


class AxisBins(NamedTuple):
    """How the compiled loops find bins along one axis: its kind, edges, table and constants.

    ``tolerance`` is the distance from an edge, in bins, within which the
    arithmetic bin of a regular or equally spaced axis is checked exactly.
    """

    kind: int
    edges: FloatArray
    table: IntArray
    low: float
    scale: float
    tolerance: float = 0.0


def axis_bins(axis: Any) -> AxisBins:
    """The :class:`AxisBins` of a ``Regular`` or ``Variable`` axis (of two edges at least)."""
    edges = np.ascontiguousarray(axis.edges, dtype=np.float64)
    low, width = float(edges[0]), float(edges[-1] - edges[0])
    no_table = np.zeros(1, dtype=np.intp)
    scale = (len(edges) - 1) / width
    if _regular(axis):
        return AxisBins(REGULAR, edges, no_table, low, scale, ROUNDING)
    spacing = np.diff(edges)
    if np.allclose(spacing, spacing[0], rtol=1e-9, atol=0.0):
        # how far, in bins, the edges lie from those of the arithmetic
        offset = float(np.max(np.abs((edges - low) * scale - np.arange(len(edges)))))
        return AxisBins(UNIFORM, edges, no_table, low, scale, ROUNDING + 2.0 * offset)
    table = _lookup(edges)
    return AxisBins(VARIABLE, edges, table, low, (len(table) - 1) / width)


def flow_index(axis: Any, values: FloatArray) -> IntArray:
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
    x_bin: IntArray,
    y_bin: IntArray,
    weight: FloatArray,
    shape: tuple[int, int],
) -> tuple[FloatArray, FloatArray]:
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


def warm_up() -> None:
    """Compile the kernels of :func:`flow_index` and :func:`binned_sums` now (or load them).

    A process's first call of a numba kernel also starts numba (its
    extensions, its types): about two seconds, which a worker pays once.
    Without numba, nothing is done.
    """
    if not numba_enabled():
        return
    values = np.array([0.5, 2.0])
    x_bin = flow_index(bh.axis.Variable([0.0, 1.0, 3.0]), values)
    y_bin = flow_index(bh.axis.Regular(2, 0.0, 1.0), values)
    binned_sums(x_bin, y_bin, np.ones(len(values)), (4, 4))
