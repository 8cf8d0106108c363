"""Loop kernels of the transforms, compiled by numba when it is installed.

Each kernel has the same result as the vectorised numpy code that calls it
when numba is absent; the loops run over events in parallel (``prange``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import NDArray

try:
    import numba
    from numba import prange

    def _helper(function: Callable[..., Any]) -> Callable[..., Any]:
        return numba.njit(cache=True, nogil=True)(function)

except ImportError:  # pragma: no cover - numpy path used instead
    prange = range  # type: ignore[misc]

    def _helper(function: Callable[..., Any]) -> Callable[..., Any]:
        return function


__all__ = ["column_grid_evaluate", "count_le_indexed", "gauss_expansion", "group_by_key"]


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
    count = low
    for step in (2, 1):
        j = count + step
        # row[start + j - 1] read only where it is a candidate; elsewhere a harmless entry
        ok = (j <= high) & (row[start + max(min(j, high) - 1, 0)] <= value)
        count = j if ok else count
    return count


def count_le_indexed(
    values: NDArray[np.float64],
    table: NDArray[Any],
    lo: float,
    scale: float,
    queries: NDArray[np.float64],
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
    starts: NDArray[np.intp],
    values: NDArray[np.float64],
    out: NDArray[np.float64],
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
def _interpolate(grid: NDArray[np.float64], start: int, n_edge: int, count: int, y: float) -> float:
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


def column_grid_evaluate(
    centres: NDArray[np.float64],
    x_table: NDArray[Any],
    x_lo: float,
    x_scale: float,
    grid: NDArray[np.float64],
    y_table: NDArray[Any],
    y_lo: float,
    y_scale: float,
    x: NDArray[np.float64],
    y: NDArray[np.float64],
    out: NDArray[np.float64],
) -> None:
    """Bilinear interpolation of a column grid (IRGI's ``gamma``), see :class:`ColumnGrid`."""
    n_col = len(centres)
    n_edge = grid.shape[0] // n_col
    x_cells = len(x_table) - 2
    y_cells = y_table.shape[1] - 2
    edges = grid[:, 0]
    for i in prange(len(x)):
        xi = x[i]
        k = _cell(xi, x_lo, x_scale, x_cells)
        column = _count_le_near(centres, 0, np.intp(x_table[k]), np.intp(x_table[k + 1]), xi) - 1
        column = min(max(column, 0), n_col - 2)
        left = centres[column]
        t = (xi - left) / (centres[column + 1] - left)
        t = min(max(t, 0.0), 1.0)
        yi = y[i]
        k = _cell(yi, y_lo, y_scale, y_cells)
        start0 = column * n_edge
        start1 = start0 + n_edge
        count0 = _count_le_near(
            edges, start0, np.intp(y_table[column, k]), np.intp(y_table[column, k + 1]), yi
        )
        count1 = _count_le_near(
            edges, start1, np.intp(y_table[column + 1, k]), np.intp(y_table[column + 1, k + 1]), yi
        )
        g0 = _interpolate(grid, start0, n_edge, count0, yi)
        g1 = _interpolate(grid, start1, n_edge, count1, yi)
        out[i] = (1.0 - t) * g0 + t * g1


def gauss_expansion(
    t: NDArray[np.float64],
    rank: NDArray[np.int64],
    key: NDArray[np.int64],
    cumulative: NDArray[np.float64],
    box_start: NDArray[np.int64],
    box_total: NDArray[np.float64],
    stride: int,
    reach: int,
    out: NDArray[np.float64],
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
