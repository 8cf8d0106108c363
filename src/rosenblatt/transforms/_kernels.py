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

__all__ = ["gauss_expansion", "irgi_evaluate"]


@_helper
def _count_le(row: NDArray[np.float64], start: int, n: int, value: float) -> int:
    """Number of entries of the sorted ``row[start:start + n]`` that are <= ``value``."""
    # branch-free binary search: the loop length depends only on n
    base = start
    size = n
    while size > 1:
        half = size >> 1
        if row[base + half - 1] <= value:
            base += half
        size -= half
    return base - start + (1 if size == 1 and row[base] <= value else 0)


@_helper
def _count_le_near(row: NDArray[np.float64], start: int, n: int, value: float, guess: int) -> int:
    """As :func:`_count_le`, walking from ``guess``: fast when the answer is close to it."""
    count = min(max(guess, 0), n)
    while count < n and row[start + count] <= value:
        count += 1
    while count > 0 and row[start + count - 1] > value:
        count -= 1
    return count


@_helper
def _interpolate(
    edges: NDArray[np.float64], cdf: NDArray[np.float64], start: int, n_edge: int, count: int, y: float
) -> float:
    """The column's piecewise-linear CDF at ``y``, given the number of its edges <= ``y``."""
    if count == 0:
        return 0.0
    if count == n_edge:
        return 1.0
    lower = start + count - 1
    e0 = edges[lower]
    width = edges[lower + 1] - e0
    frac = (y - e0) / width if width > 0 else 0.0
    frac = min(max(frac, 0.0), 1.0)
    return cdf[lower] + (cdf[lower + 1] - cdf[lower]) * frac


def irgi_evaluate(
    centres: NDArray[np.float64],
    edges: NDArray[np.float64],
    cdf: NDArray[np.float64],
    n_edge: int,
    x: NDArray[np.float64],
    y: NDArray[np.float64],
    out: NDArray[np.float64],
) -> None:
    """IRGI's bilinear interpolation; ``edges`` and ``cdf`` are the flattened grids."""
    n_col = len(centres)
    for i in prange(len(x)):
        xi = x[i]
        column = _count_le(centres, 0, n_col, xi) - 1
        column = min(max(column, 0), n_col - 2)
        left = centres[column]
        t = (xi - left) / (centres[column + 1] - left)
        t = min(max(t, 0.0), 1.0)
        yi = y[i]
        start0 = column * n_edge
        start1 = start0 + n_edge
        # neighbouring columns have similar edges: search the second from the first
        count0 = _count_le(edges, start0, n_edge, yi)
        count1 = _count_le_near(edges, start1, n_edge, yi, count0)
        g0 = _interpolate(edges, cdf, start0, n_edge, count0, yi)
        g1 = _interpolate(edges, cdf, start1, n_edge, count1, yi)
        out[i] = (1.0 - t) * g0 + t * g1


@_helper
def _count_le_int(keys: NDArray[np.int64], value: int) -> int:
    lo, hi = 0, len(keys)
    while lo < hi:
        mid = (lo + hi) >> 1
        if keys[mid] <= value:
            lo = mid + 1
        else:
            hi = mid
    return lo


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
            position = _count_le_int(key, box * stride + rank[i])
            start = box_start[box]
            for p in range(n_terms):
                den += box_total[box, p] * hermite[p]
                num += (cumulative[position, p] - cumulative[start, p]) * hermite[p]
        out[i] = num / den if den > 0 else np.nan
