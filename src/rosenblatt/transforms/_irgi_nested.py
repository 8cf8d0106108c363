"""Nested cells of IRGI on several observables and their multilinear interpolation.

The defining sample is bisected by summed weight ``s1`` times along the first
observable (``2**s1`` slabs of equal weight), then every slab ``s2`` times
along the second at the slab's own weighted medians, and so on: the
``2**(s1 + ... + sk)`` cells are boxes of equal weight, ordered by slab,
then sub-slab. Each cell's centre along the observable that cut it is the
middle of its extent.

``gamma`` is interpolated one observable at a time, from the last to the
first: within a slab, linearly in ``x2`` between the centres of its
neighbouring cells (constant beyond the first and last centre; at a centre
that several cells share, a tied value of ``x2``, the last of them), then
linearly in ``x1`` between the two slabs whose centres enclose ``x1``. At a
point at most ``2**k`` cells contribute, with multilinear weights that sum
to one, so ``gamma`` is continuous in ``x``, a positive combination of
CDFs (monotone in ``y``, in ``[0, 1]``) and, inside each box between
neighbouring centres, a multilinear function of ``x`` times piecewise-linear
CDFs: exactly the layout of a correctionlib multibinning.
"""

from __future__ import annotations

import functools
import itertools
from typing import Any

import numpy as np

from rosenblatt._jit import numba_enabled
from rosenblatt.typing import FloatArray, IntArray

try:
    import numba
    from numba import prange

    def _helper(function: Any) -> Any:
        return numba.njit(cache=True, nogil=True)(function)

except ImportError:  # pragma: no cover - numba is optional
    prange = range  # type: ignore[misc]

    def _helper(function: Any) -> Any:
        return function


__all__ = [
    "balanced_splits",
    "cell_centres",
    "column_value",
    "nested_cells",
    "nested_gamma",
]


#: most observables a nested partition interpolates (``2**3`` cells at a point)
MAX_DIMS = 3


def balanced_splits(depth: int, k: int) -> tuple[int, ...]:
    """Split counts per observable of ``depth`` levels shared as evenly as cycling shares them."""
    return tuple(len(range(d, depth, k)) for d in range(k))


def _equal_weight_groups(
    values: FloatArray, weight: FloatArray, n_groups: int, events: IntArray
) -> tuple[list[IntArray], FloatArray]:
    """Positions of ``values`` in ``n_groups`` groups of equal summed weight, and the cuts between them.

    Tied values are ordered by their event number ``events``, so that a cut
    through a tie shares it out as the events come, whatever the order of a
    previous observable.
    """
    order = np.lexsort((events, values))
    cumulative = np.cumsum(weight[order])
    targets = cumulative[-1] * np.arange(1, n_groups) / n_groups
    ends = np.searchsorted(cumulative, targets, side="left") + 1
    ends = np.clip(ends, 1, len(order) - 1)
    sorted_values = values[order]
    cuts = 0.5 * (sorted_values[ends - 1] + sorted_values[ends])
    bounds = np.concatenate(([0], ends, [len(order)]))
    return [order[a:b] for a, b in itertools.pairwise(bounds)], cuts


def nested_cells(
    x: FloatArray, w: FloatArray, splits: tuple[int, ...], lo: FloatArray, hi: FloatArray
) -> tuple[list[IntArray], FloatArray]:
    """The events of every nested cell (slab order) and the cells' boxes ``(n_cells, 2, k)``."""
    cells: list[tuple[IntArray, FloatArray]] = [(np.arange(len(x)), np.stack([lo, hi]))]
    for axis, count in enumerate(splits):
        n_groups = 2**count
        refined = []
        for rows, box in cells:
            if len(rows) < n_groups:
                msg = (
                    f"a cell holds {len(rows)} event(s), too few to split into {n_groups} along "
                    f"observable {axis + 1}: use a smaller depth"
                )
                raise ValueError(msg)
            groups, cuts = _equal_weight_groups(x[rows, axis], w[rows], n_groups, rows)
            faces = np.concatenate(([box[0, axis]], cuts, [box[1, axis]]))
            for j, group in enumerate(groups):
                part = box.copy()
                part[0, axis], part[1, axis] = faces[j], faces[j + 1]
                refined.append((rows[group], part))
        cells = refined
    return [rows for rows, _ in cells], np.stack([box for _, box in cells])


def cell_centres(boxes: FloatArray, splits: tuple[int, ...]) -> list[FloatArray]:
    """Per observable ``a``, the centres along ``a`` of the nodes that level cut, slab order.

    Node ``q`` of level ``a`` (``2**(s1 + ... + sa)`` nodes) holds the cells
    ``q * 2**(s(a+1) + ... + sk)`` onwards; its centre is their middle along ``a``.
    """
    centres = []
    for axis in range(len(splits)):
        stride = 2 ** sum(splits[axis + 1 :])
        first = boxes[::stride]
        centres.append(0.5 * (first[:, 0, axis] + first[:, 1, axis]))
    return centres


@_helper
def column_value(edges: FloatArray, cdf: FloatArray, n_edge: int, y: float) -> float:
    """A column's CDF at ``y``: linear between its edges, 0 below, 1 at and above the last."""
    if y < edges[0]:
        return 0.0
    if y >= edges[n_edge - 1]:
        return 1.0
    lo, hi = 0, n_edge - 1
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if edges[mid] <= y:
            lo = mid
        else:
            hi = mid
    span = edges[hi] - edges[lo]
    frac = (y - edges[lo]) / span if span > 0 else 1.0
    value: float = cdf[lo] + (cdf[hi] - cdf[lo]) * frac
    return value


def _nested_loop(
    centres: FloatArray,
    offsets: IntArray,
    counts: IntArray,
    edges: FloatArray,
    cdf: FloatArray,
    x: FloatArray,
    u: FloatArray,
) -> FloatArray:
    """:func:`nested_gamma` as loops for numba (queries in parallel).

    ``centres[offsets[a]:offsets[a + 1]]`` are level ``a``'s node centres;
    every node of level ``a - 1`` has ``counts[a]`` children.
    """
    k = x.shape[1]
    n_edge = edges.shape[1]
    out = np.empty(len(u))
    for i in prange(len(u)):
        node = np.zeros(8, dtype=np.intp)
        weight = np.zeros(8)
        child = np.zeros(8, dtype=np.intp)
        child_weight = np.zeros(8)
        weight[0] = 1.0
        m = 1
        for a in range(k):
            n = counts[a]
            m_new = 0
            for e in range(m):
                first = node[e] * n
                base = offsets[a] + first
                v = x[i, a]
                if n == 1 or v < centres[base]:
                    child[m_new], child_weight[m_new] = first, weight[e]
                    m_new += 1
                elif v >= centres[base + n - 1]:
                    child[m_new], child_weight[m_new] = first + n - 1, weight[e]
                    m_new += 1
                else:
                    lo, hi = 0, n - 1
                    while hi - lo > 1:
                        mid = (lo + hi) // 2
                        if centres[base + mid] <= v:
                            lo = mid
                        else:
                            hi = mid
                    t = (v - centres[base + lo]) / (centres[base + hi] - centres[base + lo])
                    child[m_new], child_weight[m_new] = first + lo, weight[e] * (1.0 - t)
                    child[m_new + 1], child_weight[m_new + 1] = first + hi, weight[e] * t
                    m_new += 2
            for e in range(m_new):
                node[e], weight[e] = child[e], child_weight[e]
            m = m_new
        total = 0.0
        for e in range(m):
            if weight[e] > 0.0:
                total += weight[e] * column_value(edges[node[e]], cdf[node[e]], n_edge, u[i])
        out[i] = total
    return out


@functools.cache
def _compiled() -> Any:
    if not numba_enabled():
        return None
    return numba.njit(cache=True, nogil=True, parallel=True)(_nested_loop)


def _flat_centres(
    boxes: FloatArray, splits: tuple[int, ...]
) -> tuple[FloatArray, IntArray, IntArray]:
    centres = cell_centres(boxes, splits)
    offsets = np.concatenate(([0], np.cumsum([len(c) for c in centres]))).astype(np.intp)
    counts = np.array([2**s for s in splits], dtype=np.intp)
    return np.concatenate(centres), offsets, counts


def nested_gamma(
    boxes: FloatArray,
    splits: tuple[int, ...],
    edges: FloatArray,
    cdf: FloatArray,
    x: FloatArray,
    u: FloatArray,
) -> FloatArray:
    """The nested interpolation of the cells' CDFs at ``(x, u)`` (see module).

    ``u`` is the value the CDFs are read at: the residual of a fit.
    """
    centres, offsets, counts = _flat_centres(boxes, splits)
    kernel = _compiled()
    if kernel is None:
        gamma = _nested_numpy(centres, offsets, counts, edges, cdf, x, u)
    else:
        gamma = kernel(
            centres, offsets, counts, edges, cdf, np.ascontiguousarray(x), np.ascontiguousarray(u)
        )
    clipped: FloatArray = np.clip(gamma, 0.0, 1.0)
    return clipped


def _columns_numpy(edges: FloatArray, cdf: FloatArray, cell: IntArray, u: FloatArray) -> FloatArray:
    """Each query's column (``cell``) read at its ``u``."""
    rows, n_edge = edges[cell], edges.shape[1]
    hi = np.clip((rows <= u[:, None]).sum(axis=1), 1, n_edge - 1)
    lo = hi - 1
    take = np.arange(len(u))
    e_lo, e_hi = rows[take, lo], rows[take, hi]
    c_lo, c_hi = cdf[cell, lo], cdf[cell, hi]
    span = e_hi - e_lo
    with np.errstate(invalid="ignore", divide="ignore"):
        frac = np.where(span > 0, (u - e_lo) / np.where(span > 0, span, 1.0), 1.0)
    value = c_lo + (c_hi - c_lo) * frac
    value = np.where(u < rows[:, 0], 0.0, value)
    result: FloatArray = np.where(u >= rows[:, -1], 1.0, value)
    return result


def _nested_numpy(
    centres: FloatArray,
    offsets: IntArray,
    counts: IntArray,
    edges: FloatArray,
    cdf: FloatArray,
    x: FloatArray,
    u: FloatArray,
) -> FloatArray:
    """:func:`_nested_loop` vectorised over the queries, one branch of the interpolation at a time."""
    n, k = x.shape
    branches: list[tuple[IntArray, FloatArray]] = [(np.zeros(n, dtype=np.intp), np.ones(n))]
    for a in range(k):
        count = int(counts[a])
        level = centres[offsets[a] : offsets[a + 1]].reshape(-1, count)
        grown = []
        for node, weight in branches:
            rows = level[node]
            first = node * count
            v = x[:, a]
            below = (rows <= v[:, None]).sum(axis=1)
            lo = np.clip(below - 1, 0, count - 1)
            hi = np.clip(below, 0, count - 1)
            take = np.arange(n)
            c_lo, c_hi = rows[take, lo], rows[take, hi]
            with np.errstate(invalid="ignore", divide="ignore"):
                t = np.where(hi > lo, (v - c_lo) / np.where(hi > lo, c_hi - c_lo, 1.0), 0.0)
            grown += [(first + lo, weight * (1.0 - t)), (first + hi, weight * t)]
        branches = grown
    gamma = np.zeros(n)
    for cell, weight in branches:
        used = weight > 0
        if np.any(used):
            gamma[used] += weight[used] * _columns_numpy(edges, cdf, cell[used], u[used])
    return gamma
