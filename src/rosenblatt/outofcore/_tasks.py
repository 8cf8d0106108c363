"""What travels to the workers in the passes of a mergeable fit after the first.

Every task is a small picklable object that a worker runs with
:func:`run_task`; it reads skims or sorted group tables from the fit's
:class:`~rosenblatt.outofcore._skims.SkimStore` and returns
``{task.key: result}``, so that the results of a pass merge as coffea's
``accumulate`` merges dictionaries.

- :class:`SortTask` gathers one group of the order from every skim, sorts it,
  writes the sorted group table and reports, per set of weights, the group's
  totals, moments and windows (:mod:`rosenblatt.outofcore._order`);
- :class:`WindowTask` reports the same from a group table already sorted;
- :class:`ColumnTask`, :class:`SlabTask` and :class:`BinTask` compute the
  last stage of IRGI on one observable (the ``y`` edges of whole columns),
  of IRGI on several (the nested cells of whole slabs) and of GridKDE (the
  binned weight of a group).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from rosenblatt._jit import one_thread_in_a_dask_worker
from rosenblatt.outofcore._order import Group, window_mask
from rosenblatt.outofcore._skims import SkimStore, bootstrap_counts
from rosenblatt.transforms import _local_polynomial as lp
from rosenblatt.transforms._irgi_nested import nested_cells
from rosenblatt.transforms._irgi_vector import residual
from rosenblatt.transforms.irgi import column_edges
from rosenblatt.typing import FloatArray, Int64Array

__all__ = [
    "BinTask",
    "ColumnTask",
    "Failure",
    "GroupReport",
    "Layout",
    "Member",
    "MemberAsk",
    "SlabTask",
    "SortTask",
    "WindowTask",
    "Windows",
    "run_task",
]


def run_task(task: Any) -> dict[str, Any]:
    """Run a task on a worker: ``{task.key: result}``."""
    one_thread_in_a_dask_worker()
    return {task.key: task.run()}


@dataclass(frozen=True)
class Member:
    """One set of weights of a fit: the sample's (``draw < 0``) or a bootstrap replica's."""

    draw: int = -1
    seed: int = 0

    @property
    def name(self) -> str:
        """``"nominal"`` or ``"draw <k>"``."""
        return "nominal" if self.draw < 0 else f"draw {self.draw}"

    def weights(self, table: FloatArray, k: int) -> FloatArray:
        """The weights of this member for the events of ``table``."""
        w = np.asarray(table[:, k + 1], dtype=np.float64)
        if self.draw < 0:
            return w
        keys = np.ascontiguousarray(table[:, k + 3]).view(np.uint64)
        counts: FloatArray = w * bootstrap_counts(self.seed, self.draw, keys)
        return counts


@dataclass(frozen=True)
class Layout:
    """Where a fit's tables are and how they are laid out.

    Attributes
    ----------
    store : SkimStore
        The fit's files.
    k : int
        Protected observables.
    order : int
        The column the fit orders by: observable ``order``, or ``y`` if negative.
    chunks : tuple of (str, int)
        The skims, in order, with their numbers of events.
    """

    store: SkimStore
    k: int
    order: int
    chunks: tuple[tuple[str, int], ...]

    @property
    def width(self) -> int:
        """Columns of a table: the observables, ``y``, the weight, the event's number and key."""
        return self.k + 4

    @property
    def order_column(self) -> int:
        """Index of the ordering column in a table."""
        return self.k if self.order < 0 else self.order

    def read_positions(
        self, groups: tuple[tuple[int, int, int], ...], first: int, stop: int
    ) -> FloatArray:
        """The sorted events at positions ``first`` to ``stop`` from the group tables ``(index, start, count)``."""
        parts = []
        for index, start, count in groups:
            a, b = max(first, start), min(stop, start + count)
            if a < b:
                table = self.store.read(self.store.group_path(index))
                parts.append(np.array(table[a - start : b - start]))
        return np.concatenate(parts) if parts else np.zeros((0, self.width))


@dataclass(frozen=True)
class MemberAsk:
    """What a group task reports for one member: totals, and moments or windows if asked.

    Attributes
    ----------
    member : Member
        Whose weights.
    moments : tuple or None
        ``("shift", shift, scale)`` for the moments of ``u = (x - shift) scale``
        (GridKDE), ``("plane", centre, y_mean)`` for the centred second moments
        of ``x`` and ``y`` (IRGI on several observables).
    intervals : numpy.ndarray or None
        ``(m, 2)`` intervals of ``C`` whose events to report.
    offset : float
        ``C`` before the group (estimated or exact).
    widen : float
        How far beyond the intervals to report.
    """

    member: Member
    moments: tuple[Any, ...] | None = None
    intervals: FloatArray | None = None
    offset: float = 0.0
    widen: float = 0.0


@dataclass
class Windows:
    """The events of a group in requested windows: positions, ``C`` before and after (local), values."""

    position: Int64Array
    before: FloatArray
    after: FloatArray
    value: FloatArray


@dataclass
class GroupReport:
    """What a group task reports per member (by name).

    ``stats`` holds the total weight (the last cumulative sum, exactly as
    the order adds it), the sums of squared and absolute weights, the number
    of non-zero weights, the smallest and largest weight and the summed
    weight times the first observable.
    """

    count: int
    stats: dict[str, FloatArray]
    moments: dict[str, FloatArray]
    windows: dict[str, Windows]


def _report(
    table: FloatArray, group: Group, layout: Layout, asks: tuple[MemberAsk, ...]
) -> GroupReport:
    """Totals, moments and windows of a sorted group table for every ask."""
    k = layout.k
    report = GroupReport(len(table), {}, {}, {})
    value = np.asarray(table[:, layout.order_column])
    for ask in asks:
        w = ask.member.weights(table, k)
        after = np.cumsum(w)
        before = np.concatenate(([0.0], after[:-1])) if len(after) else after
        name = ask.member.name
        report.stats[name] = np.array(
            [
                after[-1] if len(after) else 0.0,
                np.dot(w, w),
                np.abs(w).sum(),
                np.count_nonzero(w),
                w.min() if len(w) else np.inf,
                w.max() if len(w) else -np.inf,
                np.dot(w, table[:, 0]),
            ]
        )
        if ask.moments is not None:
            report.moments[name] = _moments(table, w, k, ask.moments)
        if ask.intervals is not None:
            mask = window_mask(ask.offset + before, ask.offset + after, ask.intervals, ask.widen)
            rows = np.flatnonzero(mask)
            report.windows[name] = Windows(
                group.start + rows, before[rows], after[rows], value[rows]
            )
    return report


def _moments(table: FloatArray, w: FloatArray, k: int, spec: tuple[Any, ...]) -> FloatArray:
    """The sums a plan asked for (see :class:`MemberAsk`)."""
    if spec[0] == "shift":
        _, shift, scale = spec
        u = table[:, 0] * scale - shift * scale
        wu = w * u
        return np.array([w.sum(), wu.sum(), np.dot(wu, u)])
    _, centre, y_mean = spec
    dx = np.asarray(table[:, :k]) - centre
    weighted = dx * w[:, None]
    second = weighted.T @ dx
    cross = weighted.T @ (np.asarray(table[:, k]) - y_mean)
    return np.concatenate((second.ravel(), cross))


@dataclass(frozen=True)
class SortTask:
    """Gather a group from every skim, sort it by ``(value, event number)``, write it, report."""

    key: str
    layout: Layout
    group: Group
    asks: tuple[MemberAsk, ...]

    @property
    def writes(self) -> tuple[str, ...]:
        """The files :meth:`run` writes: the sorted group table."""
        return (self.layout.store.group_path(self.group.index),)

    def run(self) -> GroupReport:
        """The group's report (the sorted table is written on the way)."""
        layout, group = self.layout, self.group
        column, index = layout.order_column, layout.k + 2
        parts, ids, offset = [], [], 0
        for name, count in layout.chunks:
            table = layout.store.read(layout.store.skim_path(name))
            values = table[:, column]
            a = int(np.searchsorted(values, group.low, side="left"))
            b = int(np.searchsorted(values, group.high, side="right"))
            if a < b:
                parts.append(table[a:b])
                ids.append(table[a:b, index] + offset)
            offset += count
        check_events(sum(len(part) for part in parts), group.count)
        width = layout.width
        if not parts:
            parts, ids = [np.zeros((0, width))], [np.zeros(0)]
        number = np.concatenate(ids)
        order = value_then_number(np.concatenate([part[:, column] for part in parts]), number)
        ordered = np.empty((len(order), width), order="F")
        for j in range(width):
            whole = number if j == index else np.concatenate([part[:, j] for part in parts])
            ordered[:, j] = whole[order]
        layout.store.write(layout.store.group_path(group.index), ordered)
        return _report(ordered, group, layout, self.asks)


@dataclass(frozen=True)
class WindowTask:
    """Report totals, moments and windows of a group table already sorted."""

    key: str
    layout: Layout
    group: Group
    asks: tuple[MemberAsk, ...]

    def run(self) -> GroupReport:
        """The group's report."""
        table = self.layout.store.read(self.layout.store.group_path(self.group.index))
        check_events(len(table), self.group.count)
        return _report(np.asarray(table), self.group, self.layout, self.asks)


def value_then_number(values: FloatArray, number: FloatArray) -> Int64Array:
    """The order of events by value, ties by event number."""
    order = np.argsort(values, kind="stable")
    ordered = values[order]
    tied = np.flatnonzero(ordered[1:] == ordered[:-1])
    if len(tied):
        runs = np.zeros(len(order), dtype=bool)
        runs[tied] = runs[tied + 1] = True
        inside = np.flatnonzero(runs)
        order[inside] = order[inside[np.lexsort((number[order[inside]], ordered[inside]))]]
    return order.astype(np.int64)


def check_events(found: int, expected: int) -> None:
    """Refuse a pass that finds other events than the first pass counted."""
    if found != expected:
        msg = (
            f"the skims of this pass hold {found} events where the first pass counted "
            f"{expected}: every pass must see the same events (were the skims changed?)"
        )
        raise ValueError(msg)


@dataclass
class Failure:
    """A task's :class:`ValueError`, sent back as data: the driver raises it with the sample's figures."""

    message: str


@dataclass(frozen=True)
class ColumnTask:
    """The ``y`` edges of consecutive IRGI columns: positions ``bounds[0]`` to ``bounds[-1]``.

    ``offsets`` is ``C`` at each column's start; the running maximum of the
    cumulative weight starts again in every column.
    """

    key: str
    layout: Layout
    groups: tuple[tuple[int, int, int], ...]
    member: Member
    bounds: Int64Array
    offsets: FloatArray
    weighted: bool
    depth: int
    y_domain: tuple[float, float]

    def run(self) -> tuple[FloatArray, FloatArray, FloatArray] | Failure:
        """``(y_edges, weight_below, column_weight)`` of the columns, or the failure."""
        k, bounds = self.layout.k, self.bounds
        table = self.layout.read_positions(self.groups, int(bounds[0]), int(bounds[-1]))
        y, w = np.asarray(table[:, k]), self.member.weights(table, k)
        local = bounds - bounds[0]
        edges, below, weight = [], [], np.empty(len(bounds) - 1)
        for c in range(len(bounds) - 1):
            ys, ws = y[local[c] : local[c + 1]], w[local[c] : local[c + 1]]
            cumulative = None
            if self.weighted:
                order = np.argsort(ys, kind="stable")
                ys, ws = ys[order], ws[order]
                cumulative = self.offsets[c] + np.concatenate(([0.0], np.cumsum(ws)))
            else:
                ys = np.sort(ys)
            try:
                e, b = column_edges(
                    ys, cumulative, np.array([0, len(ys)]), self.depth, self.y_domain
                )
            except ValueError as err:
                return Failure(str(err))
            edges.append(e)
            below.append(b)
            weight[c] = float(len(ys)) if cumulative is None else cumulative[-1] - cumulative[0]
        return np.concatenate(edges), np.concatenate(below), weight


@dataclass(frozen=True)
class SlabTask:
    """The nested cells of one slab of the first observable that IRGI splits, and their CDFs.

    Attributes
    ----------
    box : numpy.ndarray
        ``(2, k)``: the slab's lower and upper corner.
    splits : tuple of int
        Levels per observable still to split inside the slab.
    centre, slope : numpy.ndarray
        The plane the cells' CDFs are taken about.
    """

    key: str
    layout: Layout
    groups: tuple[tuple[int, int, int], ...]
    first: int
    stop: int
    box: FloatArray
    splits: tuple[int, ...]
    centre: FloatArray
    slope: FloatArray
    y_depth: int

    def run(self) -> tuple[FloatArray, list[tuple[FloatArray, FloatArray]], float, float] | Failure:
        """``(boxes, [(edges, below) per cell], u_min, u_max)``, or the failure."""
        k = self.layout.k
        table = self.layout.read_positions(self.groups, self.first, self.stop)
        table = table[np.argsort(table[:, k + 2], kind="stable")]
        x, y, w = np.asarray(table[:, :k]), np.asarray(table[:, k]), np.asarray(table[:, k + 1])
        try:
            cells, boxes = nested_cells(x, w, self.splits, self.box[0], self.box[1])
        except ValueError as err:
            return Failure(str(err))
        u = residual(x, y, self.centre, self.slope)
        columns = []
        for rows in cells:
            order = rows[np.argsort(u[rows], kind="stable")]
            cumulative = np.concatenate(([0.0], np.cumsum(w[order])))
            total = cumulative[-1]
            if not total > 0:
                return Failure(
                    f"a cell's summed weight is {total:g}: negative weights dominate it; use a "
                    "smaller depth"
                )
            edges = lp.y_edges(u[order], cumulative, 2**self.y_depth)
            columns.append(
                (edges, cumulative[np.searchsorted(u[order], edges, side="left")] / total)
            )
        return boxes, columns, float(u.min()), float(u.max())


@dataclass(frozen=True)
class BinTask:
    """The binned weight of one group on GridKDE's nodes and edges."""

    key: str
    layout: Layout
    group: Group
    member: Member
    weighted: bool
    nodes: FloatArray
    edges: FloatArray

    def run(self) -> tuple[FloatArray, FloatArray]:
        """``(mass, below)`` of the group's events."""
        k = self.layout.k
        table = np.asarray(self.layout.store.read(self.layout.store.group_path(self.group.index)))
        w = self.member.weights(table, k) if self.weighted else None
        return lp.bin_sample(table[:, 0], table[:, k], w, self.nodes, self.edges)
