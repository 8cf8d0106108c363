"""Evaluation of a grid of columns: per-column CDFs in ``y``, interpolated in ``x``.

IRGI and GridKDE store ``gamma`` as columns at increasing ``x``, each a CDF
that is linear in ``y`` between its edges. Evaluating it is a search for the
column of every event and for its ``y`` among the column's edges; on large
grids these searches dominate. A *cell index* makes them short: the value range
is cut into equal cells, and per cell the table holds how many sorted values
lie in the cells before it, so a query only searches the few values of its own
cell. The cell of a value is a monotone function of it, which keeps the answer
exact whatever the distribution of the values.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
from numpy.typing import NDArray

from rosenblatt._jit import compiled
from rosenblatt.transforms._base import ConditionalCDFTransform, Kinks
from rosenblatt.transforms._kernels import column_grid_evaluate, count_le_indexed
from rosenblatt.typing import FloatArray, IntArray

__all__ = ["ColumnGrid", "ColumnGridTransform", "ColumnTable", "cell_index", "count_le"]

#: cells of the column index per column, and of the edge index per edge
X_CELLS_PER_COLUMN = 4
Y_CELLS_PER_EDGE = 2


def cell_index(rows: FloatArray, n_cells: int) -> tuple[NDArray[Any], float, float]:
    """Cell index of each row of sorted values.

    Parameters
    ----------
    rows
        ``(n_rows, n)`` array, each row sorted (non-decreasing).
    n_cells
        Number of equal cells between the smallest and largest value.

    Returns
    -------
    table, lo, scale
        ``table[r, k]`` (``k = 0 .. n_cells + 1``) is the number of values of row
        ``r`` whose cell is below ``k``; the cell of ``v`` is
        ``floor((v - lo) * scale)`` clamped to ``[0, n_cells]`` (see
        :func:`cell_of`).
    """
    lo, hi = float(rows.min()), float(rows.max())
    with np.errstate(over="ignore", divide="ignore"):
        scale = n_cells / (hi - lo) if hi > lo else 0.0
    if not np.isfinite(scale):
        scale = 0.0
    cells = cell_of(rows, lo, scale, n_cells)
    n_rows, width = rows.shape
    flat = (np.arange(n_rows)[:, None] * (n_cells + 2) + cells).ravel()
    counts = np.bincount(flat, minlength=n_rows * (n_cells + 2)).reshape(n_rows, n_cells + 2)
    table = np.zeros_like(counts)
    np.cumsum(counts[:, :-1], axis=1, out=table[:, 1:])
    dtype = np.uint16 if width < 2**16 else np.int64
    return table.astype(dtype), lo, scale


def cell_of(values: FloatArray, lo: float, scale: float, n_cells: int) -> IntArray:
    """Cell of each value, exactly as the compiled kernels compute it."""
    with np.errstate(invalid="ignore", over="ignore"):
        u = (values - lo) * scale
        return np.where(u > 0, np.where(u < n_cells, u, n_cells), 0).astype(np.intp)


def count_le(values: FloatArray, queries: FloatArray) -> IntArray:
    """Number of the sorted ``values`` that are ``<=`` each query (``searchsorted`` right)."""
    kernel = compiled(count_le_indexed, parallel=True)
    if kernel is None or len(queries) < 4 * len(values):
        return np.searchsorted(values, queries, side="right")
    table, lo, scale = cell_index(values[None, :], X_CELLS_PER_COLUMN * len(values))
    out = np.empty(len(queries), dtype=np.intp)
    kernel(values, table[0], lo, scale, queries, out)
    return out


class ColumnGrid:
    """Columns of piecewise-linear CDFs, evaluated bilinearly.

    Column ``k`` at ``x = centres[k]`` holds a CDF that is linear in ``y``
    between its edges ``y_edges[k]`` (0 below the first, 1 at and above the
    last); ``gamma`` is linear in ``x`` between neighbouring centres and
    constant beyond the outer ones.

    Parameters
    ----------
    centres
        Increasing ``x`` of the columns (at least two).
    y_edges, cdf
        ``(len(centres), n_edge)``: per column, non-decreasing edges and the
        CDF at them.
    """

    def __init__(self, centres: FloatArray, y_edges: FloatArray, cdf: FloatArray) -> None:
        self.centres = np.ascontiguousarray(centres, dtype=np.float64)
        self.y_edges = np.ascontiguousarray(y_edges, dtype=np.float64)
        self.cdf = np.ascontiguousarray(cdf, dtype=np.float64)
        self._index: tuple[Any, ...] | None = None

    def __call__(self, x: FloatArray, y: FloatArray) -> FloatArray:
        """``gamma`` at each ``(x, y)``."""
        kernel = compiled(column_grid_evaluate, parallel=True)
        if kernel is None:
            return self._evaluate_numpy(x, y)
        if self._index is None:
            self._index = self._build_index()
        out = np.empty(len(x))
        kernel(*self._index, x, y, out)
        return out

    def _build_index(self) -> tuple[Any, ...]:
        n_col, n_edge = self.y_edges.shape
        x_table, x_lo, x_scale = cell_index(self.centres[None, :], X_CELLS_PER_COLUMN * n_col)
        y_table, y_lo, y_scale = cell_index(self.y_edges, Y_CELLS_PER_EDGE * n_edge)
        # edges and CDF values side by side: an interpolation reads one cache line
        grid = np.stack((self.y_edges.ravel(), self.cdf.ravel()), axis=1)
        return (self.centres, x_table[0], x_lo, x_scale, grid, y_table, y_lo, y_scale)

    def _evaluate_numpy(self, x: FloatArray, y: FloatArray) -> FloatArray:
        centres = self.centres
        column = np.clip(np.searchsorted(centres, x, side="right") - 1, 0, len(centres) - 2)
        left, right = centres[column], centres[column + 1]
        with np.errstate(over="ignore"):  # far beyond the outer columns: t is clamped
            t = np.clip((x - left) / (right - left), 0.0, 1.0)
        return (1.0 - t) * self._column_cdf(column, y) + t * self._column_cdf(column + 1, y)

    def _column_cdf(self, column: IntArray, y: FloatArray) -> FloatArray:
        """Piecewise-linear CDF of each event's column at its ``y``."""
        edges, cdf = self.y_edges.ravel(), self.cdf.ravel()
        n_edge = self.y_edges.shape[1]
        row = column * n_edge
        # number of edges <= y in the column (branch-free binary search)
        count = np.zeros(len(y), dtype=np.intp)
        step = 1 << int(np.floor(np.log2(n_edge)))
        while step:
            candidate = count + step
            ok = candidate <= n_edge
            ok[ok] &= edges[row[ok] + candidate[ok] - 1] <= y[ok]
            count = np.where(ok, candidate, count)
            step >>= 1
        lower = np.clip(count - 1, 0, n_edge - 2) + row
        e0, e1 = edges[lower], edges[lower + 1]
        c0, c1 = cdf[lower], cdf[lower + 1]
        width = e1 - e0
        frac = np.divide(y - e0, width, out=np.zeros_like(y), where=width > 0)
        out: FloatArray = c0 + (c1 - c0) * np.clip(frac, 0.0, 1.0)
        out[count == 0] = 0.0
        out[count == n_edge] = 1.0
        return out


class ColumnTable(NamedTuple):
    """The columns of a grid transform, as :class:`ColumnGrid` evaluates them.

    Attributes
    ----------
    x_nodes
        Increasing ``x`` of the columns (at least two).
    y_edges
        ``(len(x_nodes), n_edge)``: per column, non-decreasing ``y`` edges
        from the lower to the upper end of the ``y`` domain.
    cdf
        Same shape: the CDF at each edge.
    """

    x_nodes: FloatArray
    y_edges: FloatArray
    cdf: FloatArray


class ColumnGridTransform(ConditionalCDFTransform):
    """A transform whose ``gamma`` is the :class:`ColumnGrid` of its fitted columns.

    Subclasses set ``x_centres_``, ``y_edges_`` and ``cdf_``; the grid's
    lookup index is built on the first :meth:`transform` and kept while those
    arrays stay the same objects. :meth:`column_table` gives the columns to
    whoever writes them out: an exported table holds them exactly.
    """

    x_centres_: FloatArray
    y_edges_: FloatArray
    cdf_: FloatArray

    def _transform(self, x: FloatArray, y: FloatArray) -> FloatArray:
        sources = (self.x_centres_, self.y_edges_, self.cdf_)
        cached = self.__dict__.get("_column_grid")
        if cached is None or any(a is not b for a, b in zip(cached[0], sources, strict=True)):
            cached = (sources, ColumnGrid(*sources))
            self.__dict__["_column_grid"] = cached
        grid: ColumnGrid = cached[1]
        return grid(x, y)

    def column_table(self) -> ColumnTable:
        """The fitted columns: their ``x``, and per column its ``y`` edges and the CDF at them."""
        self._check_scalar()
        return ColumnTable(self.x_centres_, self.y_edges_, self.cdf_)

    def kinks(self) -> Kinks:
        """``gamma`` bends at the column centres in ``x`` and at the edges in ``y``."""
        self._check_scalar()
        return Kinks(self.x_centres_, self.y_edges_.ravel(), 0.0)

    def _check_scalar(self) -> None:
        """Refuse a fit on several observables, which has no columns in one ``x``."""
        self._check_fitted()
        if self.x_dims > 1:
            msg = (
                f"this {type(self).__name__} is fitted on {self.x_dims} observables: its grid has no "
                "columns in a single x"
            )
            raise TypeError(msg)
