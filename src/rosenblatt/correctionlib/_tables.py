"""The table of one fitted transform, for the correctionlib export.

What is tabulated follows from what the transform provides, never from its
class:

- a grid of columns (:class:`~rosenblatt.transforms._column_grid.ColumnGridTransform`,
  its ``column_table()``) is written exactly, linear in ``y`` within each
  column and linear in ``x`` between them;
- a staircase in ``y`` (a ``staircase()`` method, see
  :class:`~rosenblatt.correctionlib._staircase.Staircase`) is tabulated
  within a tolerance;
- a :class:`~rosenblatt.transforms.tabulated.TabulatedTransform` is written
  again as it was read.

The transform's ``describe()``, ``fitted_params()`` and ``kinks()`` give the
description, the parameters in the metadata line and the points on which
the table's error is measured.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Iterable
from typing import Any, Protocol, runtime_checkable

import numpy as np

from rosenblatt._validation import check_int, is_real
from rosenblatt._version import __version__
from rosenblatt.correctionlib._description import describe_table
from rosenblatt.correctionlib._layout import LAYOUT, LAYOUT_VERSION, check_table
from rosenblatt.correctionlib._numbers import ExactNumbers
from rosenblatt.correctionlib._staircase import Staircase, staircase_columns, staircase_x_nodes
from rosenblatt.transforms._base import ConditionalCDFTransform, NotFittedError, transform_classes
from rosenblatt.transforms._column_grid import ColumnGridTransform
from rosenblatt.transforms.tabulated import Table, TabulatedTransform, evaluate
from rosenblatt.typing import FloatArray

__all__ = [
    "ColumnCDF",
    "Export",
    "StepTransform",
    "check_points",
    "check_readable",
    "export_transform",
    "grid_columns",
    "measured_error",
    "positions",
    "table_of_columns",
]


@runtime_checkable
class StepTransform(Protocol):
    """A transform whose ``gamma`` is a staircase in ``y``, tabulated within a tolerance."""

    def staircase(self) -> Staircase:
        """Its steps in ``y`` and its value on them at any ``x``."""
        ...


@dataclasses.dataclass(frozen=True)
class ColumnCDF:
    """A piecewise-linear conditional CDF at one ``x`` node.

    Segment ``j`` covers ``[nodes[j], nodes[j + 1])`` (the last one ends at
    ``y_max``) and goes linearly from ``start[j]`` to ``end[j]``.
    """

    nodes: FloatArray
    start: FloatArray
    end: FloatArray

    def pieces(
        self, lower: FloatArray, upper: FloatArray, y_max: float
    ) -> tuple[FloatArray, FloatArray]:
        """Value at ``lower`` and slope of the segment holding each bin ``[lower, upper)``.

        Every bin lies inside one segment. A bin that holds a single floating
        point number gets slope 0: its value at ``lower`` is all there is.
        """
        seg = np.searchsorted(self.nodes, lower, side="right") - 1
        left = self.nodes[seg]
        right = np.append(self.nodes, y_max)[seg + 1]
        start, end = self.start[seg], self.end[seg]
        width = right - left
        value = start + (end - start) * ((lower - left) / width)
        with np.errstate(over="ignore"):
            slope = (end - start) / width
        slope[np.nextafter(lower, np.inf) >= upper] = 0.0
        if not np.all(np.isfinite(slope)):
            msg = (
                f"{int((~np.isfinite(slope)).sum())} segment(s) of a column are too narrow "
                "for a finite slope"
            )
            raise ValueError(msg)
        return value, slope


def table_of_columns(x_nodes: FloatArray, columns: list[ColumnCDF], y_max: float) -> Table:
    """Tabulate ``gamma`` from piecewise-linear columns at ``x_nodes``."""
    y_edges: list[FloatArray] = []
    params: list[FloatArray] = []

    def outer(column: ColumnCDF) -> None:
        edges = np.append(column.nodes, y_max)
        value, slope = column.pieces(column.nodes, edges[1:], y_max)
        y_edges.append(edges)
        params.append(np.column_stack((value, slope, column.nodes)))

    outer(columns[0])
    for left, right in itertools.pairwise(columns):
        lower = np.union1d(left.nodes, right.nodes)
        edges = np.append(lower, y_max)
        g0, s0 = left.pieces(lower, edges[1:], y_max)
        g1, s1 = right.pieces(lower, edges[1:], y_max)
        y_edges.append(edges)
        params.append(np.column_stack((g0, s0, g1, s1, lower)))
    outer(columns[-1])
    return Table(np.asarray(x_nodes, dtype=np.float64), y_edges, params)


def grid_columns(
    y_edges: Iterable[FloatArray], column_cdf: Iterable[FloatArray], y_max: float
) -> list[ColumnCDF]:
    """Columns of a grid (per column its ``y`` edges and the CDF at them) as they evaluate."""
    columns = []
    for edges, cdf in zip(y_edges, column_cdf, strict=True):
        below = edges < y_max
        e, c = edges[below], cdf[below]
        last = np.append(e[1:] != e[:-1], True)
        first = np.insert(e[1:] != e[:-1], 0, True)
        top = cdf[np.argmax(edges >= y_max)]
        columns.append(ColumnCDF(e[last], c[last], np.append(c[first][1:], top)))
    return columns


def check_points(
    transform: ConditionalCDFTransform, n_points: int, seed: int
) -> tuple[FloatArray, FloatArray]:
    """Points to measure the table's error: the domain box and where ``gamma`` has kinks.

    A quarter is uniform over the domain widened by 5% on each side. The rest
    sit exactly on, or at the largest float below, the ``y`` values where
    ``gamma`` jumps or bends (the transform's ``kinks()``: the defining scores
    of a kernel estimate, the edges of a grid); a third of those at or near
    its ``x`` (the defining events, the column centres), the others at ``x``
    uniform over the widened domain. Without kinks all are uniform.
    """
    rng = np.random.default_rng(seed)
    (x_lo, x_hi), (y_lo, y_hi) = transform.domain_
    dx, dy = 0.05 * (x_hi - x_lo), 0.05 * (y_hi - y_lo) or 1.0
    x = rng.uniform(x_lo - dx, x_hi + dx, n_points)
    y = rng.uniform(y_lo - dy, y_hi + dy, n_points)
    kinks = transform.kinks()
    if kinks is None:
        return x, y
    x_special, y_special, spread = kinks
    quarter = n_points // 4
    special = y_special[rng.integers(0, len(y_special), n_points - quarter)]
    below = rng.random(len(special)) < 0.5
    special[below] = np.nextafter(special[below], -np.inf)
    y[quarter:] = special
    near = x_special[rng.integers(0, len(x_special), n_points - 3 * quarter)]
    x[3 * quarter :] = near + rng.normal(0.0, spread, len(near)) * (rng.random(len(near)) < 0.5)
    return x, y


@dataclasses.dataclass(frozen=True)
class Export:
    """A table with what is written about it, and how its numbers are written."""

    table: Table
    metadata: dict[str, Any]
    description: str
    numbers: ExactNumbers
    #: an ensemble's tables by variation (``table`` is the nominal's); empty for a transform
    variations: dict[str, Table] = dataclasses.field(default_factory=dict)

    def positions(self) -> set[float]:
        """The numbers that place bins in every table (see :func:`positions`)."""
        return set().union(*(positions(t) for t in (self.table, *self.variations.values())))


def positions(table: Table) -> set[float]:
    """The numbers that place bins: edges, formula offsets and the rewrite of ``x``."""
    values = set(table.x_nodes.tolist()) | set(np.diff(table.x_nodes).tolist())
    for edges in table.y_edges:
        values.update(edges.tolist())
    return values


def check_readable(table: Table, numbers: ExactNumbers) -> int:
    """Check that correctionlib reads every binning's edges in order; count inexact numbers."""
    read = np.vectorize(numbers.read, otypes=[np.float64])
    for edges in (table.x_nodes, *table.y_edges):
        if len(edges) > 1 and np.any(np.diff(read(edges)) <= 0):
            msg = (
                "correctionlib would read two bin edges out of order (they are a few floats "
                "apart and have no decimal form it reads exactly); the table cannot be written"
            )
            raise ValueError(msg)
    return sum(not numbers.is_exact(v) for v in positions(table))


def measured_error(
    table: Table, transform: ConditionalCDFTransform, n_check: int, seed: int
) -> float:
    """Largest difference between the table and the transform on the check points."""
    x, y = check_points(transform, n_check, seed)
    return float(np.max(np.abs(evaluate(table, x, y) - transform.transform(x, y)), initial=0.0))


def export_transform(
    transform: ConditionalCDFTransform,
    *,
    tolerance: float,
    x_step: float,
    n_check: int,
    max_x_nodes: int,
    max_bins: int,
    progress: bool,
    seed: int,
) -> Export:
    """The table of a fitted transform, with its metadata and description."""
    _check_exportable(transform)
    numbers = ExactNumbers()
    if isinstance(transform, TabulatedTransform):
        stored = {
            **transform.metadata_,
            "inexact_numbers": check_readable(transform.table_, numbers),
        }
        return Export(transform.table_, stored, transform.description_, numbers)
    _check_options(tolerance, x_step, n_check)
    table, error, what, extra = _tabulate(
        transform, numbers, tolerance, x_step, max_x_nodes, max_bins, progress, n_check, seed
    )
    if table.n_bins > max_bins:
        msg = f"the table has {table.n_bins} bins, more than max_bins = {max_bins}"
        raise ValueError(msg)
    check_table(table, "the exported table")
    inexact = check_readable(table, numbers)
    metadata = {
        "layout": LAYOUT,
        "layout_version": LAYOUT_VERSION,
        "written_by": f"rosenblatt {__version__}",
        "kind": transform.kind,
        "params": transform.fitted_params(),
        **extra,
        "domain": [list(axis) for axis in transform.domain_],
        "n_events": int(transform.n_events_),
        "sum_weight": float(transform.sum_weight_),
        "n_bins": table.n_bins,
        "max_abs_error": error,
        "n_check_points": n_check,
        "inexact_numbers": inexact,
    }
    description = describe_table(transform, what, n_check, inexact, error)
    return Export(table, metadata, description, numbers)


def _check_exportable(transform: Any) -> None:
    if not isinstance(transform, ConditionalCDFTransform):
        msg = f"cannot export a {type(transform).__name__}; export a fitted {_exportable_names()}"
        raise TypeError(msg)
    if not transform.is_fitted():
        msg = f"this {type(transform).__name__} is not fitted yet: fit it before exporting it"
        raise NotFittedError(msg)


def _exportable_names() -> str:
    """The transforms of rosenblatt that export alone (grids and staircases), by class name."""
    names = sorted(
        cls.__name__
        for cls in transform_classes().values()
        if cls.__module__.startswith("rosenblatt.")
        and (issubclass(cls, ColumnGridTransform) or callable(getattr(cls, "staircase", None)))
    )
    if len(names) < 2:
        return "".join(names) or "transform"
    return f"{', '.join(names[:-1])} or {names[-1]}"


def _check_options(tolerance: float, x_step: float, n_check: int) -> None:
    for value, label, upper in ((tolerance, "tolerance", 1.0), (x_step, "x_step", math.inf)):
        if not is_real(value) or not 0 < value < upper:
            msg = f"{label} must be a number in (0, {upper:g}), got {value!r}"
            raise ValueError(msg)
    check_int(n_check, "n_check", low=4)


def _tabulate(
    transform: ConditionalCDFTransform,
    numbers: ExactNumbers,
    tolerance: float,
    x_step: float,
    max_x_nodes: int,
    max_bins: int,
    progress: bool,
    n_check: int,
    seed: int,
) -> tuple[Table, float, str, dict[str, Any]]:
    """The table, its measured error, what it is in words and the metadata of its tabulation."""
    if isinstance(transform, ColumnGridTransform):
        x_nodes, y_edges, cdf = transform.column_table()
        y_hi = transform.domain_[1][1]
        table = table_of_columns(x_nodes, grid_columns(y_edges, cdf, y_hi), y_hi)
        error = measured_error(table, transform, n_check, seed)
        return table, error, f"{transform.describe()}, exact up to floating-point rounding", {}
    if isinstance(transform, StepTransform):
        steps = transform.staircase()
        table, error, what = _tabulate_staircase(
            transform,
            steps,
            numbers,
            tolerance,
            x_step,
            max_x_nodes,
            max_bins,
            progress,
            n_check,
            seed,
        )
        return table, error, what, {"tolerance": float(tolerance)}
    msg = (
        f"cannot export a {type(transform).__name__}: it provides neither a grid of columns "
        "(column_table) nor a staircase in y (staircase)"
    )
    raise TypeError(msg)


def _tabulate_staircase(
    transform: ConditionalCDFTransform,
    steps: Staircase,
    numbers: ExactNumbers,
    tolerance: float,
    x_step: float,
    max_x_nodes: int,
    max_bins: int,
    progress: bool,
    n_check: int,
    seed: int,
) -> tuple[Table, float, str]:
    """Tabulate a staircase, refining until the error measured on the check points is within bounds.

    Returns the table, the measured error and a description.
    """
    (x_lo, x_hi), (_, y_hi) = transform.domain_
    x, y = check_points(transform, n_check, seed)
    exact = transform.transform(x, y)
    share = 0.4 * tolerance
    for _ in range(4):
        x_nodes = staircase_x_nodes(
            steps, x_lo, x_hi, x_step * steps.x_scale, share, max_x_nodes, progress
        )
        columns = [
            ColumnCDF(*c) for c in staircase_columns(steps, x_nodes, share, numbers, progress)
        ]
        table = table_of_columns(x_nodes, columns, y_hi)
        if table.n_bins > max_bins:
            msg = (
                f"the table needs {table.n_bins} bins for a tolerance of {tolerance:g}, "
                f"more than max_bins = {max_bins}; use a larger tolerance or raise max_bins"
            )
            raise ValueError(msg)
        error = float(np.max(np.abs(evaluate(table, x, y) - exact), initial=0.0))
        if error <= tolerance:
            break
        share /= 2
    else:
        msg = (
            f"the table reached a max error of {error:.3g}, above the tolerance "
            f"{tolerance:g}, after refining three times"
        )
        raise ValueError(msg)
    what = (
        f"{transform.describe()} tabulated on {len(x_nodes)} x nodes: at each node a "
        "piecewise-linear approximation of its steps in y, linear in x between nodes, built "
        f"for a max error of {tolerance:g}"
    )
    return table, error, what
