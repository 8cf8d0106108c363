"""Loop kernels of the transforms, compiled by numba when it is installed.

Each kernel has the same result as the vectorised numpy code that calls it
when numba is absent; the loops run over events in parallel (``prange``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import NDArray

from rosenblatt.typing import FloatArray, Int64Array, IntArray

try:
    import numba
    from numba import prange

    def _helper(function: Callable[..., Any]) -> Callable[..., Any]:
        return numba.njit(cache=True, nogil=True)(function)

except ImportError:  # pragma: no cover - numpy path used instead
    prange = range  # type: ignore[misc]

    def _helper(function: Callable[..., Any]) -> Callable[..., Any]:
        return function


__all__ = [
    "column_grid_evaluate",
    "count_le_indexed",
    "gauss_expansion",
    "group_by_key",
    "resample_cells",
]


@_helper
def _cell(value: float, lo: float, scale: float, n_cells: int) -> int:
    """Cell of ``value`` among ``n_cells`` equal cells from ``lo`` (clamped; monotone in ``value``).

    Written as selects, not branches: the queries come in random order, and a
    branch on which side of the range a value falls would be mispredicted.
    """
    u = max(0.0, (value - lo) * scale)  # NaN: 0
    return int(min(u, float(n_cells)))


@_helper
def _count_le_between(row: NDArray[Any], start: int, low: int, high: int, value: float) -> int:
    """Number of entries of the sorted ``row[start:]`` that are <= ``value``, known to be in ``[low, high]``."""
    while low < high:
        middle = (low + high) >> 1
        if row[start + middle] <= value:
            low = middle + 1
        else:
            high = middle
    return low


@_helper
def _search_step(
    row: NDArray[Any], start: int, low: int, high: int, value: float, step: int
) -> int:
    """One branch-free step of a search: ``low + step`` if that many entries are <= ``value``.

    The count ``low`` of entries of ``row[start:]`` known to be <= ``value``
    grows by ``step`` when ``low + step <= high`` and the entry it would
    include is <= ``value``; elsewhere ``row`` is read at a harmless index.
    """
    j = low + step
    ok = (j <= high) & (row[start + max(min(j, high) - 1, 0)] <= value)
    return j if ok else low


@_helper
def _count_le_near(row: NDArray[Any], start: int, low: int, high: int, value: float) -> int:
    """:func:`_count_le_between` in two branch-free steps when ``high - low`` is at most 3.

    A cell index leaves a query a few candidates, a different number for each
    query; a search whose loop ends after a varying number of steps is then
    mispredicted at random. Two steps of a fixed search (by 2, then by 1)
    settle up to three candidates; wider ranges are rare and searched as before.
    """
    if high - low > 3:
        searched: int = _count_le_between(row, start, low, high, value)
        return searched
    first: int = _search_step(row, start, low, high, value, 2)
    return int(_search_step(row, start, first, high, value, 1))


def count_le_indexed(
    values: FloatArray,
    table: NDArray[Any],
    lo: float,
    scale: float,
    queries: FloatArray,
    out: NDArray[Any],
) -> None:
    """``out[i]`` = number of the sorted ``values`` <= ``queries[i]``, through a cell index.

    ``table[k]`` is the number of values in cells before ``k`` (see
    :func:`rosenblatt.transforms._column_grid.cell_index`), so only the values
    in the query's own cell are searched.
    """
    n_cells = len(table) - 2
    for i in prange(len(queries)):
        value = queries[i]
        k = _cell(value, lo, scale, n_cells)
        out[i] = _count_le_between(values, 0, np.intp(table[k]), np.intp(table[k + 1]), value)


def group_by_key(
    key: NDArray[Any],
    starts: IntArray,
    values: FloatArray,
    out: FloatArray,
) -> None:
    """Counting sort: ``values`` grouped by ``key`` into ``out``, input order kept in each group.

    ``starts[k]`` is where group ``k`` begins in ``out``.
    """
    position = starts.copy()
    for i in range(len(key)):
        k = key[i]
        out[position[k]] = values[i]
        position[k] += 1


@_helper
def _interpolate(grid: FloatArray, start: int, n_edge: int, count: int, y: float) -> float:
    """The column's piecewise-linear CDF at ``y``, given the number of its edges <= ``y``.

    ``grid[start + j]`` holds the column's ``j``-th edge and its CDF value. The
    CDF is 0 below the first edge and 1 at and above the last; those cases are
    selected after the interpolation, which is computed for every query.
    """
    lower = start + min(max(count - 1, 0), n_edge - 2)
    e0 = grid[lower, 0]
    width = grid[lower + 1, 0] - e0
    frac = (y - e0) / width if width > 0 else 0.0
    frac = min(max(frac, 0.0), 1.0)
    c0 = grid[lower, 1]
    value: float = c0 + (grid[lower + 1, 1] - c0) * frac
    value = 0.0 if count == 0 else value
    return 1.0 if count == n_edge else value


#: events evaluated together by :func:`column_grid_evaluate`, stage by stage
GRID_BLOCK = 256


def column_grid_evaluate(
    centres: FloatArray,
    x_table: NDArray[Any],
    x_lo: float,
    x_scale: float,
    grid: FloatArray,
    y_table: NDArray[Any],
    y_lo: float,
    y_scale: float,
    x: FloatArray,
    y: FloatArray,
    out: FloatArray,
) -> None:
    """Bilinear interpolation of a column grid (IRGI's ``gamma``), see :class:`ColumnGrid`.

    An event's lookups form a chain (cell, candidates, two search steps, the
    interpolation), each waiting on a read of the one before. The events are
    taken in blocks of :data:`GRID_BLOCK`, and each stage runs over the whole
    block before the next: the reads of one stage are independent of each
    other, so the processor has many in flight rather than waiting on one
    event's chain at a time. The arithmetic is that of one event at a time.
    """
    n_col = len(centres)
    n_edge = grid.shape[0] // n_col
    x_cells = len(x_table) - 2
    y_cells = y_table.shape[1] - 2
    edges = grid[:, 0]
    n = len(x)
    for block in prange((n + GRID_BLOCK - 1) // GRID_BLOCK):
        first = block * GRID_BLOCK
        m = min(first + GRID_BLOCK, n) - first
        t = np.empty(GRID_BLOCK)
        start = np.empty(GRID_BLOCK, dtype=np.intp)
        # per event, its candidates among the left column's edges, the right one's and the centres
        low = np.empty((GRID_BLOCK, 3), dtype=np.intp)
        high = np.empty((GRID_BLOCK, 3), dtype=np.intp)
        for j in range(m):
            k = _cell(x[first + j], x_lo, x_scale, x_cells)
            low[j, 2], high[j, 2] = x_table[k], x_table[k + 1]
        for j in range(m):
            low[j, 2] = _count_le_near(centres, 0, low[j, 2], high[j, 2], x[first + j])
        for j in range(m):
            xi = x[first + j]
            column = min(max(low[j, 2] - 1, 0), n_col - 2)
            left = centres[column]
            t[j] = min(max((xi - left) / (centres[column + 1] - left), 0.0), 1.0)
            start[j] = column * n_edge
            k = _cell(y[first + j], y_lo, y_scale, y_cells)
            low[j, 0], high[j, 0] = y_table[column, k], y_table[column, k + 1]
            low[j, 1], high[j, 1] = y_table[column + 1, k], y_table[column + 1, k + 1]
        for j in range(m):  # the first step, by 2; a rare wide range is searched whole
            yi = y[first + j]
            for side in range(2):
                row, lo, hi = start[j] + side * n_edge, low[j, side], high[j, side]
                if hi - lo > 3:
                    low[j, side] = high[j, side] = _count_le_between(edges, row, lo, hi, yi)
                else:
                    low[j, side] = _search_step(edges, row, lo, hi, yi, 2)
        for j in range(m):  # the second step, by 1
            yi = y[first + j]
            for side in range(2):
                row = start[j] + side * n_edge
                low[j, side] = _search_step(edges, row, low[j, side], high[j, side], yi, 1)
        for j in range(m):
            yi = y[first + j]
            g0 = _interpolate(grid, start[j], n_edge, low[j, 0], yi)
            g1 = _interpolate(grid, start[j] + n_edge, n_edge, low[j, 1], yi)
            out[first + j] = (1.0 - t[j]) * g0 + t[j] * g1


def gauss_expansion(
    t: FloatArray,
    rank: Int64Array,
    key: Int64Array,
    cumulative: FloatArray,
    box_start: Int64Array,
    box_total: FloatArray,
    stride: int,
    reach: int,
    out: FloatArray,
) -> None:
    """Hermite-expanded kernel sums of the conditional Gauss transform (see its module)."""
    n_boxes = len(box_start)
    n_terms = cumulative.shape[1]
    for i in prange(len(t)):
        hermite = np.empty(n_terms)
        home = int(np.floor(t[i]))
        num = 0.0
        den = 0.0
        for box in range(max(home - reach, 0), min(home + reach + 1, n_boxes)):
            u = t[i] - (box + 0.5)
            hermite[0] = np.exp(-u * u)
            hermite[1] = 2.0 * u * hermite[0]
            for p in range(1, n_terms - 1):
                hermite[p + 1] = 2.0 * u * hermite[p] - 2.0 * p * hermite[p - 1]
            position = _count_le_between(key, 0, 0, len(key), box * stride + rank[i])
            start = box_start[box]
            for p in range(n_terms):
                den += box_total[box, p] * hermite[p]
                num += (cumulative[position, p] - cumulative[start, p]) * hermite[p]
        out[i] = num / den if den > 0 else np.nan


def resample_cells(
    weight: FloatArray,
    seeds: IntArray,
    neighbours: IntArray,
    start: int,
) -> int:
    """Cell resampling of negative weights, in place (see :mod:`rosenblatt.transforms._cell_resampling`).

    For each ``seeds[p]`` (from ``p = start``) whose weight is still negative,
    the cell grows by ``neighbours[p]`` (nearest first, the seed itself
    skipped) until its summed weight is not negative; each weight ``w_i`` of
    the cell then becomes ``|w_i| * sum(w) / sum(|w|)``. Returns the first
    ``p`` whose neighbours are too few to close its cell (``len(seeds)`` when
    every cell closed).
    """
    for p in range(start, len(seeds)):
        seed = seeds[p]
        if weight[seed] >= 0:
            continue
        total = weight[seed]
        size = 0
        for j in range(neighbours.shape[1]):
            size = j + 1
            other = neighbours[p, j]
            if other != seed:
                total += weight[other]
                if total >= 0:
                    break
        if total < 0:
            return p
        absolute = -weight[seed]
        for j in range(size):
            other = neighbours[p, j]
            if other != seed:
                absolute += abs(weight[other])
        factor = total / absolute
        weight[seed] = -weight[seed] * factor
        for j in range(size):
            other = neighbours[p, j]
            if other != seed:
                weight[other] = abs(weight[other]) * factor
    return len(seeds)
