"""IRGI's grid: equal-occupancy bisection in ``x``, then in ``y`` within each column.

The building blocks of :class:`~rosenblatt.transforms.irgi.IRGI`'s fit: the
columns in ``x`` (their edges, centres and weights), the ``y`` edges and the
cumulative distribution of each column, and the checks of a fitted grid.
"""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np
from numpy.typing import NDArray

from rosenblatt._jit import compiled
from rosenblatt._schema import SchemaError
from rosenblatt.transforms._bisection import bisect_segments, max_depth
from rosenblatt.transforms._column_grid import count_le
from rosenblatt.transforms._kernels import group_by_key
from rosenblatt.transforms._local_polynomial import rearrange
from rosenblatt.typing import FloatArray, Int64Array, IntArray

if TYPE_CHECKING:
    from rosenblatt.transforms._irgi_vector import Cells

__all__ = [
    "Domain",
    "check_column_weight",
    "check_nested_boxes",
    "column_cdf",
    "column_edges",
    "domain_list",
    "midpoint",
    "parse_domain",
    "sparse_weight_error",
    "x_columns",
    "y_by_column",
    "y_edges_and_cdf",
]

Domain = tuple[tuple[float, float], tuple[float, float]]


def parse_domain(domain: Any) -> Domain:
    """A ``((x_min, x_max), (y_min, y_max))`` domain as floats, checked finite with min < max."""
    try:
        (x_lo, x_hi), (y_lo, y_hi) = (tuple(map(float, axis)) for axis in domain)
    except (TypeError, ValueError) as err:
        msg = f"domain must be ((x_min, x_max), (y_min, y_max)), got {domain!r}"
        raise ValueError(msg) from err
    for lo, hi, name in ((x_lo, x_hi, "x"), (y_lo, y_hi, "y")):
        if not (np.isfinite(lo) and np.isfinite(hi) and lo < hi):
            msg = f"domain of {name} must be finite with min < max, got ({lo}, {hi})"
            raise ValueError(msg)
    return ((x_lo, x_hi), (y_lo, y_hi))


def _cumulative(weight: FloatArray | None, n: int) -> FloatArray:
    """Summed weight of the first ``i`` events, ``i = 0..n``."""
    if weight is None:
        return np.arange(n + 1, dtype=np.float64)
    return np.concatenate(([0.0], np.cumsum(weight)))


def _bisect_weighted(
    cumulative: FloatArray | None,
    bounds: IntArray,
    levels: int,
    w: FloatArray | None,
    axis: str,
    depth: int,
) -> IntArray:
    """:func:`bisect_segments`, failing with what the weights allow when they are too sparse."""
    try:
        return bisect_segments(cumulative, bounds, levels)
    except ValueError as err:
        n = int(bounds[-1])
        carrying = n if w is None else int(np.count_nonzero(w))
        raise sparse_weight_error(err, n, carrying, axis, depth) from err


def sparse_weight_error(
    err: ValueError, n: int, carrying: int, axis: str, depth: int
) -> ValueError:
    """The error of a bisection that left a cell too small, with what the weights allow.

    ``carrying`` of the ``n`` events have a non-zero weight.
    """
    supported = max(max_depth(carrying), 0)
    if supported < depth:
        reason = (
            f"{carrying} of {n} events have a non-zero weight, which support depth "
            f"{supported} at most"
        )
    else:
        reason = (
            f"the weights are too uneven for depth {depth}: cells of equal summed weight "
            "hold too few events"
        )
    msg = (
        f"too few events carry weight for IRGI depth {depth}: bisecting {axis} by weight "
        f"leaves a cell with fewer than two events ({err}); {reason}; use a smaller depth"
    )
    return ValueError(msg)


def check_column_weight(column_weight: FloatArray, boundaries: FloatArray) -> None:
    """Raise a :class:`ValueError` naming the first column whose summed weight is not positive."""
    if np.any(column_weight <= 0):
        bad = int(np.flatnonzero(column_weight <= 0)[0])
        msg = (
            f"{int((column_weight <= 0).sum())} IRGI column(s) have a non-positive total "
            f"weight (first: column {bad}, x in [{boundaries[bad]:g}, {boundaries[bad + 1]:g}], "
            f"weight {column_weight[bad]:g}); use a smaller depth or check the weights"
        )
        raise ValueError(msg)


def column_cdf(weight_below: FloatArray, column_weight: FloatArray) -> FloatArray:
    """The normalised CDF at every edge from the weight below the inner edges, per column.

    Negative weights (next-to-leading-order simulation) can leave a bin of a
    column with a negative weight, so that the column's cumulative weight
    falls there. Such a column is made monotone by rearrangement (its values
    sorted and clipped to ``[0, 1]``), as GridKDE's columns are: the sorted
    values are never farther from a monotone CDF than the raw ones, and a
    column without a negative bin is left as it is.
    """
    cdf = np.empty((len(column_weight), weight_below.shape[1] + 2))
    cdf[:, 1:-1] = weight_below / column_weight[:, None]
    cdf[:, 0] = 0.0
    cdf[:, -1] = 1.0
    falling = np.any(np.diff(cdf, axis=1) < 0, axis=1)
    if np.any(falling):
        cdf[falling] = rearrange(cdf[falling])
    return cdf


def _stable_argsort(values: FloatArray) -> tuple[IntArray, FloatArray]:
    """The order that sorts ``values`` keeping tied ones in input order, and the sorted values.

    Without ties every sort gives that order, and the default one is the fastest.
    """
    order = np.argsort(values)
    ordered = values[order]
    if np.any(ordered[1:] == ordered[:-1]):
        order = np.argsort(values, kind="stable")
        ordered = values[order]
    return order, ordered


def midpoint(low: FloatArray, high: FloatArray) -> FloatArray:
    """Midpoints that stay in ``[low, high]`` and finite for any finite values."""
    return 0.5 * low + 0.5 * high


def _column_of(
    x: FloatArray,
    xs: FloatArray,
    inner: FloatArray,
    split: IntArray,
) -> NDArray[Any]:
    """Column of each event: the cell of the sorted ``xs`` that its position falls in.

    ``inner`` are the column boundaries between the positions ``split`` of the
    sorted sample. An event equal to a boundary value may belong to either
    side: the ones the split puts on the left are, in input order, the first
    of the events with that value.
    """
    column = count_le(inner, x).astype(np.uint16 if len(inner) < 2**16 else np.intp)
    on_left = split - np.searchsorted(xs, inner, side="left")
    for j in np.flatnonzero(on_left > 0):
        column[np.flatnonzero(x == inner[j])[: on_left[j]]] = j
    return column


def _group_by_column(column: NDArray[Any], starts: IntArray, values: FloatArray) -> FloatArray:
    """``values`` grouped by column (column ``k`` from ``starts[k]``), input order kept in each."""
    kernel = compiled(group_by_key)
    if kernel is None:
        return values[np.argsort(column, kind="stable")]
    out = np.empty_like(values)
    kernel(column, starts, values, out)
    return out


def _run_starts(values: FloatArray, segment_starts: IntArray) -> IntArray:
    """Index of the first of the equal values around each entry, runs cut at segment starts."""
    new_run = np.empty(len(values), dtype=bool)
    new_run[0] = True
    np.not_equal(values[1:], values[:-1], out=new_run[1:])
    new_run[segment_starts] = True
    return np.maximum.accumulate(np.where(new_run, np.arange(len(values)), 0))


def domain_list(domain: Domain | None) -> list[list[float]] | None:
    if domain is None:
        return None
    return [[float(v) for v in axis] for axis in domain]


class _Columns(NamedTuple):
    """IRGI's columns in ``x``: the sorted ``x``, its order, centres, boundaries and event ranges."""

    xs: FloatArray
    order: Int64Array | None
    centres: FloatArray
    boundaries: FloatArray
    bounds: Int64Array


def x_columns(
    x: FloatArray, w: FloatArray | None, depth: int, x_domain: tuple[float, float]
) -> _Columns:
    """Bisect ``x`` to ``depth + 1``: even edges are the column centres, odd edges their boundaries."""
    x_lo, x_hi = x_domain
    n = len(x)
    order = None
    if w is None:
        xs = np.sort(x)
        cells = bisect_segments(None, np.array([0, n]), depth + 1)
    else:
        # a stable order: events tied in x are taken in input order, as without weights
        order, xs = _stable_argsort(x)
        cells = _bisect_weighted(
            _cumulative(w[order], n), np.array([0, n]), depth + 1, w, "x", depth
        )
    split = cells[1:-1]
    x_edges = np.concatenate(([x_lo], midpoint(xs[split - 1], xs[split]), [x_hi]))
    centres = x_edges[0::2]
    boundaries = np.concatenate(([x_lo], x_edges[1::2], [x_hi]))
    if np.any(np.diff(boundaries) <= 0) or np.any(np.diff(centres) <= 0):
        values, counts = np.unique(xs, return_counts=True)
        msg = (
            f"x has too many tied values for depth {depth}: {int(counts.max())} of {n} "
            f"events share x = {values[np.argmax(counts)]:g}, so IRGI columns coincide; "
            "use a smaller depth or KDE"
        )
        raise ValueError(msg)
    bounds = np.concatenate(([0], cells[1::2], [n]))
    return _Columns(xs, order, centres, boundaries, bounds)


def y_by_column(
    x: FloatArray, y: FloatArray, w: FloatArray | None, columns: _Columns
) -> tuple[FloatArray, FloatArray | None, FloatArray]:
    """``y`` grouped by column and sorted inside each; the cumulative weight and each column's weight."""
    n = len(x)
    bounds = columns.bounds
    if w is None:
        column = _column_of(x, columns.xs, columns.boundaries[1:-1], bounds[1:-1])
        ys = _group_by_column(column, bounds[:-1], y)
        ws = None
    else:
        assert columns.order is not None
        ys, ws = y[columns.order], w[columns.order]
    for start, stop in itertools.pairwise(bounds):
        if ws is None:
            ys[start:stop].sort()
        else:
            inner, ys[start:stop] = _stable_argsort(ys[start:stop])
            ws[start:stop] = ws[start:stop][inner]
    cumulative = None if ws is None else _cumulative(ws, n)
    column_weight = (
        np.diff(bounds).astype(np.float64) if cumulative is None else np.diff(cumulative[bounds])
    )
    return ys, cumulative, column_weight


def y_edges_and_cdf(
    ys: FloatArray,
    cumulative: FloatArray | None,
    column_weight: FloatArray,
    bounds: Int64Array,
    w: FloatArray | None,
    depth: int,
    y_domain: tuple[float, float],
    *,
    empty_bins: bool = False,
) -> tuple[FloatArray, FloatArray]:
    """Bisect each column's ``y`` to ``depth``: the edges and the CDF at each edge.

    ``empty_bins``: see :func:`column_edges`.
    """
    try:
        y_edges, weight_below = column_edges(
            ys, cumulative, bounds, depth, y_domain, empty_bins=empty_bins
        )
    except ValueError as err:
        n = int(bounds[-1])
        carrying = n if w is None else int(np.count_nonzero(w))
        raise sparse_weight_error(err, n, carrying, "y", depth) from err
    return y_edges, column_cdf(weight_below, column_weight)


def column_edges(
    ys: FloatArray,
    cumulative: FloatArray | None,
    bounds: Int64Array,
    depth: int,
    y_domain: tuple[float, float],
    *,
    empty_bins: bool = False,
) -> tuple[FloatArray, FloatArray]:
    """Bisect the ``y`` of every column to ``depth``: its edges and the weight strictly below them.

    Parameters
    ----------
    ys
        The scores, column after column (column ``k`` from ``bounds[k]`` to
        ``bounds[k + 1]``), increasing inside each column.
    cumulative
        Summed weight of the first ``i`` scores (length ``len(ys) + 1``), or
        ``None`` for unit weights.
    bounds, depth, y_domain
        The columns, the bisection depth and the outer edges.
    empty_bins
        Where a cell of equal weight holds a single event (uneven weights),
        split it anyway: the bin on the far side of the weight's crossing is
        empty, its edges coincide, and an edge with no event of its column
        below (above) it lies on the lower (upper) end of ``y_domain``.

    Returns
    -------
    y_edges, weight_below
        ``(n_col, 2**depth + 1)`` edges and ``(n_col, 2**depth - 1)`` weights
        below the inner edges; an edge on a tied value carries the weight below
        the first event of that value.

    Raises
    ------
    ValueError
        From :func:`~rosenblatt.transforms._bisection.bisect_segments`, if a
        cell holds fewer than two events when it must be split (without
        ``empty_bins``).
    """
    rows = bisect_segments(cumulative, bounds, depth, empty=empty_bins)
    n_col, n_edge = len(bounds) - 1, 2**depth + 1
    inner_rows = rows[:-1].reshape(n_col, n_edge - 1)[:, 1:]
    y_edges = np.empty((n_col, n_edge))
    y_edges[:, 0], y_edges[:, -1] = y_domain
    column_start, column_stop = bounds[:-1, None], bounds[1:, None]
    below_edge = ys[np.maximum(inner_rows - 1, 0)]
    y_edges[:, 1:-1] = midpoint(below_edge, ys[np.minimum(inner_rows, len(ys) - 1)])
    below = inner_rows.copy()
    tied = below_edge >= y_edges[:, 1:-1]
    if empty_bins:
        # an edge at a column's first (last) row has none (all) of its events below
        first, last = inner_rows == column_start, inner_rows == column_stop
        y_edges[:, 1:-1] = np.where(
            first, y_domain[0], np.where(last, y_domain[1], y_edges[:, 1:-1])
        )
        tied = np.where(first, False, below_edge >= y_edges[:, 1:-1])
    if tied.any():
        below[tied] = _run_starts(ys, bounds[:-1])[inner_rows[tied] - 1]
    if cumulative is None:
        weight_below = (below - column_start).astype(np.float64)
    else:
        weight_below = cumulative[below] - cumulative[column_start]
    return y_edges, weight_below


def check_nested_boxes(cells: Cells) -> None:
    """Refuse nested cells whose centres decrease along the observable that cut them.

    Equal centres are cells of a tied value of the observable (a discrete one).
    """
    from rosenblatt.transforms._irgi_nested import cell_centres

    for axis, (count, centres) in enumerate(
        zip(cells.splits, cell_centres(cells.boxes, cells.splits), strict=True)
    ):
        if np.any(np.diff(centres.reshape(-1, 2**count), axis=1) < 0):
            msg = (
                f"the nested cells' centres along observable {axis + 1} must not decrease within "
                "each slab"
            )
            raise SchemaError(msg)
