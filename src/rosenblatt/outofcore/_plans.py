"""What a mergeable fit computes for each estimator, on the driver.

A plan turns what the passes reported into the estimator's learned state:

- which column orders the events (:attr:`Plan.order`) and which sums the
  group tasks add (:meth:`Plan.moments`);
- which intervals of the cumulative weight the windows must cover
  (:meth:`Plan.intervals`), and the order statistics they give
  (:meth:`Plan.resolve`, which raises
  :class:`~rosenblatt.exceptions.NotCovered` when a window is
  missing);
- the tasks of the last pass (:meth:`Plan.tasks`) and the fitted transform
  from their results (:meth:`Plan.finish`).

:class:`IRGIPlan` fits IRGI on one observable, :class:`NestedPlan` IRGI's
nested cells on several, :class:`GridKDEPlan` GridKDE on one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from rosenblatt.exceptions import NegativeWeightError, NotCovered
from rosenblatt.outofcore._first_pass import Facts
from rosenblatt.outofcore._order import (
    Cumulative,
    Group,
    bisect_exact,
    bisection_intervals,
    first_crossings,
    quantile_intervals,
)
from rosenblatt.outofcore._tasks import (
    BinTask,
    ColumnTask,
    Failure,
    Layout,
    Member,
    SlabTask,
)
from rosenblatt.transforms import _local_polynomial as lp
from rosenblatt.transforms._irgi_vector import Cells, y_depth_for
from rosenblatt.transforms.grid_kde import GridKDE, fine_edge_count, grid_columns
from rosenblatt.transforms.irgi import (
    IRGI,
    ScalarGrid,
    check_column_weight,
    column_cdf,
    midpoint,
    parse_domain,
    sparse_weight_error,
)
from rosenblatt.typing import FloatArray, Int64Array

__all__ = ["GridKDEPlan", "IRGIPlan", "NestedPlan", "Plan", "Sample", "plan_for"]

Domain = tuple[tuple[float, float], tuple[float, float]]

#: allowance, relative to the summed absolute weight, for sums added in another order
MARGIN = 1e-9


@dataclass(frozen=True)
class Sample:
    """The defining sample under one member's weights."""

    n: int
    weighted: bool
    total: float
    total2: float
    total_abs: float
    carrying: int
    largest: float
    weight_x: float
    negative: bool

    @property
    def margin(self) -> float:
        """Rounding allowance of cumulative weights."""
        return MARGIN * self.total_abs if self.weighted else 0.0

    def check(self) -> None:
        """Refuse weights whose sum is not positive."""
        if self.weighted and not self.total > 0:
            msg = f"weight must have a positive sum, got {self.total:g}"
            raise ValueError(msg)


class Plan:
    """The plan of one estimator (see the module notes)."""

    #: names the passes in progress reports
    name = ""
    #: what the last pass computes, for progress reports
    last = ""
    #: the column that orders the events: observable ``order``, or ``y`` if negative
    order = 0

    def __init__(self, transform: Any, facts: Facts) -> None:
        self.template = transform
        self.facts = facts

    def moments(self, sample: Sample) -> tuple[Any, ...] | None:
        """The sums the group tasks add for ``sample`` (``None``: none)."""
        return None

    def intervals(self, sample: Sample) -> FloatArray:
        """The intervals of ``C`` whose events the windows must return."""
        raise NotImplementedError

    def resolve(self, sample: Sample, cumulative: Cumulative, moments: FloatArray | None) -> Any:
        """The order statistics and what the last pass needs."""
        raise NotImplementedError

    def tasks(
        self, spec: Any, layout: Layout, groups: list[Group], member: Member, sample: Sample
    ) -> list[Any]:
        """The tasks of the last pass."""
        raise NotImplementedError

    def finish(self, spec: Any, results: list[Any], sample: Sample, into: Any) -> Any:
        """Fit ``into`` (an unfitted estimator of the plan's parameters) from the last pass; return it."""
        raise NotImplementedError


def _failure(results: list[Any]) -> str | None:
    return next((r.message for r in results if isinstance(r, Failure)), None)


def _spans(bounds: Int64Array, target: int) -> list[tuple[int, int]]:
    """Runs of consecutive cells ``bounds[i]..bounds[i + 1]`` of about ``target`` events each."""
    label = (bounds[:-1] - bounds[0]) // max(int(target), 1)
    starts = np.flatnonzero(np.concatenate(([True], label[1:] != label[:-1])))
    stops = np.concatenate((starts[1:], [len(label)]))
    return list(zip(starts.tolist(), stops.tolist(), strict=True))


def _group_index(groups: list[Group]) -> tuple[tuple[int, int, int], ...]:
    return tuple((g.index, g.start, g.count) for g in groups)


# ------------------------------------------------------------------- IRGI
@dataclass(frozen=True)
class ColumnSpec:
    """IRGI's columns: domain, centres, boundaries, event positions and ``C`` at their starts."""

    domain: Domain
    centres: FloatArray
    boundaries: FloatArray
    bounds: Int64Array
    offsets: FloatArray


class IRGIPlan(Plan):
    """IRGI on one observable: the bisection of ``x`` from windows, the columns' ``y`` in workers."""

    name = "IRGI"
    last = "y edges of the columns"
    order = 0

    def __init__(self, transform: IRGI, facts: Facts) -> None:
        super().__init__(transform, facts)
        given = None if transform.domain is None else parse_domain(transform.domain)
        facts.check_weights()
        self.depth = transform.fixed_depth(facts.n)
        facts.check_not_constant()
        if given is not None:
            for n_out, (lo, hi), axis in zip(facts.outside, given, ("x", "y"), strict=True):
                if n_out:
                    msg = (
                        f"{n_out} defining event(s) have {axis} outside the domain "
                        f"[{lo:g}, {hi:g}]; widen the domain or leave it to the sample range"
                    )
                    raise ValueError(msg)
        self.domain: Domain = given or (facts.x_range[0], facts.y_range)

    def intervals(self, sample: Sample) -> FloatArray:
        total = sample.total if sample.weighted else float(sample.n)
        m = sample.margin
        bounds = np.array([[0.0, 0.0], [total - m, total + m]])
        largest = sample.largest if sample.weighted else 1.0
        return bisection_intervals(bounds, self.depth + 1, largest, m)

    def resolve(
        self, sample: Sample, cumulative: Cumulative, moments: FloatArray | None
    ) -> ColumnSpec:
        try:
            cells, c = bisect_exact(cumulative, self.depth + 1)
        except ValueError as err:
            raise sparse_weight_error(err, sample.n, sample.carrying, "x", self.depth) from err
        split = cells[1:-1]
        try:
            low, high = cumulative.values(split - 1), cumulative.values(split)
        except NotCovered as err:
            around = c[1:-1]
            raise NotCovered(np.column_stack((around, around))) from err
        (x_lo, x_hi), _ = self.domain
        x_edges = np.concatenate(([x_lo], midpoint(low, high), [x_hi]))
        centres = x_edges[0::2]
        boundaries = np.concatenate(([x_lo], x_edges[1::2], [x_hi]))
        _check_x_ties(centres, boundaries, self.depth)
        bounds = np.concatenate((cells[:1], cells[1::2], cells[-1:]))
        offsets = np.concatenate((c[:1], c[1::2], c[-1:]))
        return ColumnSpec(self.domain, centres, boundaries, bounds, offsets)

    def tasks(
        self, spec: ColumnSpec, layout: Layout, groups: list[Group], member: Member, sample: Sample
    ) -> list[Any]:
        target = max(groups[0].count if groups else 1, 1)
        return [
            ColumnTask(
                f"{member.name}:columns:{a}",
                layout,
                _group_index(groups),
                member,
                spec.bounds[a : b + 1],
                spec.offsets[a:b],
                sample.weighted,
                self.depth,
                spec.domain[1],
            )
            for a, b in _spans(spec.bounds, target)
        ]

    def finish(self, spec: ColumnSpec, results: list[Any], sample: Sample, into: IRGI) -> IRGI:
        message = _failure(results)
        if message is not None:
            raise sparse_weight_error(
                ValueError(message), sample.n, sample.carrying, "y", self.depth
            )
        y_edges = np.concatenate([r[0] for r in results])
        weight_below = np.concatenate([r[1] for r in results])
        column_weight = np.concatenate([r[2] for r in results])
        check_column_weight(column_weight, spec.boundaries)
        grid = ScalarGrid(
            spec.domain,
            self.depth,
            spec.centres,
            spec.boundaries,
            y_edges,
            column_cdf(weight_below, column_weight),
            column_weight,
        )
        total = sample.total if sample.weighted else float(sample.n)
        return into.set_fitted_grid(grid, n_events=sample.n, sum_weight=total)


def _check_x_ties(centres: FloatArray, boundaries: FloatArray, depth: int) -> None:
    for edges in (boundaries, centres):
        flat = np.flatnonzero(np.diff(edges) <= 0)
        if len(flat):
            msg = (
                f"x has too many tied values for depth {depth}: the events at x = "
                f"{edges[flat[0]]:g} fill more than a cell of the bisection, so IRGI columns "
                "coincide; use a smaller depth or KDE"
            )
            raise ValueError(msg)


# ------------------------------------------------------------ nested IRGI
@dataclass(frozen=True)
class SlabSpec:
    """The slabs of the first split observable: positions, faces and the plane."""

    bounds: Int64Array
    faces: FloatArray
    centre: FloatArray
    slope: FloatArray


class NestedPlan(Plan):
    """IRGI on several observables: the first level's cuts from windows, each slab's cells in a worker."""

    name = "IRGI"
    last = "nested cells of the slabs"

    def __init__(self, transform: IRGI, facts: Facts) -> None:
        super().__init__(transform, facts)
        if transform.domain is not None:
            msg = "domain is not used with several observables: give domain=None"
            raise ValueError(msg)
        facts.check_weights()
        self.splits = transform.fixed_splits(facts.n, facts.k)
        self.order = next(a for a, s in enumerate(self.splits) if s > 0)
        self.inner = tuple(0 if a <= self.order else s for a, s in enumerate(self.splits))

    def _totals(self, sample: Sample) -> tuple[float, FloatArray, float]:
        total = sample.total if sample.weighted else float(sample.n)
        return total, self.facts.weights.weight_x / total, self.facts.weight_y / total

    def moments(self, sample: Sample) -> tuple[Any, ...]:
        _, centre, y_mean = self._totals(sample)
        return ("plane", centre, y_mean)

    def _targets(self, sample: Sample) -> FloatArray:
        n_groups = 2 ** self.splits[self.order]
        total = sample.total if sample.weighted else float(sample.n)
        targets: FloatArray = total * np.arange(1, n_groups) / n_groups
        return targets

    def intervals(self, sample: Sample) -> FloatArray:
        total = sample.total if sample.weighted else float(sample.n)
        return quantile_intervals(self._targets(sample), total, sample.margin)

    def resolve(
        self, sample: Sample, cumulative: Cumulative, moments: FloatArray | None
    ) -> SlabSpec:
        assert moments is not None
        ends = first_crossings(cumulative, self._targets(sample), 1, sample.n - 1)
        try:
            low, high = cumulative.values(ends - 1), cumulative.values(ends)
        except NotCovered as err:
            around = cumulative.at(ends)
            raise NotCovered(np.column_stack((around, around))) from err
        lo, hi = self.facts.x_range[self.order]
        faces = np.concatenate(([lo], 0.5 * (low + high), [hi]))
        total, centre, _ = self._totals(sample)
        k = self.facts.k
        covariance = moments[: k * k].reshape(k, k) / total
        slope = _slope(covariance, moments[k * k :] / total, total)
        bounds = np.concatenate(([0], ends, [sample.n])).astype(np.int64)
        return SlabSpec(bounds, faces, centre, slope)

    def tasks(
        self, spec: SlabSpec, layout: Layout, groups: list[Group], member: Member, sample: Sample
    ) -> list[Any]:
        lo = np.array([r[0] for r in self.facts.x_range])
        hi = np.array([r[1] for r in self.facts.x_range])
        y_depth = y_depth_for(sample.n, sum(self.splits))
        out = []
        for j in range(len(spec.bounds) - 1):
            box = np.stack([lo, hi])
            box[0, self.order], box[1, self.order] = spec.faces[j], spec.faces[j + 1]
            out.append(
                SlabTask(
                    f"{member.name}:slab:{j}",
                    layout,
                    _group_index(groups),
                    int(spec.bounds[j]),
                    int(spec.bounds[j + 1]),
                    box,
                    self.inner,
                    spec.centre,
                    spec.slope,
                    y_depth,
                )
            )
        return out

    def finish(self, spec: SlabSpec, results: list[Any], sample: Sample, into: IRGI) -> IRGI:
        message = _failure(results)
        if message is not None:
            raise ValueError(message)
        y_lo = min(r[2] for r in results)
        y_hi = max(r[3] for r in results)
        columns = [column for r in results for column in r[1]]
        edges, cdf = _cell_columns(columns, y_lo, y_hi)
        boxes = np.concatenate([r[0] for r in results])
        y_depth = y_depth_for(sample.n, sum(self.splits))
        cells = Cells(boxes, edges, cdf, y_depth, spec.centre, spec.slope, self.splits)
        lo = tuple(r[0] for r in self.facts.x_range)
        hi = tuple(r[1] for r in self.facts.x_range)
        domain = ((lo, hi), self.facts.y_range)
        total = sample.total if sample.weighted else float(sample.n)
        return into.set_fitted_cells(domain, cells, n_events=sample.n, sum_weight=total)


def _slope(covariance: FloatArray, moment: FloatArray, total: float) -> FloatArray:
    """The plane's slope as :func:`~rosenblatt.transforms._irgi_vector.linear_trend` solves it."""
    k = len(moment)
    if not total > 0:
        return np.zeros(k)
    try:
        np.linalg.cholesky(covariance)
    except np.linalg.LinAlgError:
        return np.zeros(k)
    slope = np.asarray(np.linalg.solve(covariance, moment), dtype=np.float64)
    return slope if np.all(np.isfinite(slope)) else np.zeros(k)


def _cell_columns(
    columns: list[tuple[FloatArray, FloatArray]], y_lo: float, y_hi: float
) -> tuple[FloatArray, FloatArray]:
    """Every cell's edges and CDF on the sample's range of the residual, padded to one width."""
    edges_list, cdf_list = [], []
    for inner, below in columns:
        edges = np.unique(np.concatenate(([y_lo], inner, [y_hi])))
        fraction = np.zeros(len(edges))
        k = np.searchsorted(inner, edges)
        known = (k < len(inner)) & (inner[np.minimum(k, len(inner) - 1)] == edges)
        fraction[known] = below[k[known]]
        cdf = np.clip(np.maximum.accumulate(fraction), 0.0, 1.0)
        cdf[0], cdf[-1] = 0.0, 1.0
        edges_list.append(edges)
        cdf_list.append(cdf)
    width = max(len(e) for e in edges_list)
    pad = [(0, width - len(e)) for e in edges_list]
    edges_out = np.stack([np.pad(e, p, mode="edge") for e, p in zip(edges_list, pad, strict=True)])
    cdf_out = np.stack([np.pad(c, p, mode="edge") for c, p in zip(cdf_list, pad, strict=True)])
    return edges_out, cdf_out


# ---------------------------------------------------------------- GridKDE
@dataclass(frozen=True)
class BinSpec:
    """GridKDE's shared ``y`` edges, nodes and widths."""

    fine_edges: FloatArray
    nodes: FloatArray
    sigma_a: float


class GridKDEPlan(Plan):
    """GridKDE on one observable: the quantiles of ``y`` from windows, the binned weight in workers."""

    name = "GridKDE"
    last = "binned weight on the grid"
    order = -1

    def __init__(self, transform: GridKDE, facts: Facts) -> None:
        super().__init__(transform, facts)
        self.sigma_r, self.degree, self.levels, self.per, self.most = transform.fixed_parameters()
        if facts.n < 2:
            msg = f"GridKDE needs at least two defining events, got {facts.n}"
            raise ValueError(msg)
        facts.check_weights()
        facts.check_not_constant()
        self.n_bins = fine_edge_count(facts.n, self.levels)
        x_lo, x_hi = facts.x_range[0]
        largest = max(abs(x_lo), abs(x_hi))
        self.scale = math.ldexp(1.0, -math.frexp(largest)[1]) if largest > 1e100 else 1.0

    def moments(self, sample: Sample) -> tuple[Any, ...]:
        x_lo, x_hi = self.facts.x_range[0]
        weights = self.facts.weights
        total = weights.total if weights.weighted else float(self.facts.n)
        shift = min(max(float(weights.weight_x[0]) / total, x_lo), x_hi)
        return ("shift", shift, self.scale)

    def _targets(self, sample: Sample) -> FloatArray:
        total = sample.total if sample.weighted else float(sample.n)
        targets: FloatArray = total * np.arange(1, self.n_bins) / self.n_bins
        return targets

    def intervals(self, sample: Sample) -> FloatArray:
        total = sample.total if sample.weighted else float(sample.n)
        return quantile_intervals(self._targets(sample), total, sample.margin)

    def resolve(
        self, sample: Sample, cumulative: Cumulative, moments: FloatArray | None
    ) -> BinSpec:
        assert moments is not None
        cut = first_crossings(cumulative, self._targets(sample), 1, sample.n - 1)
        try:
            inner = 0.5 * (cumulative.values(cut - 1) + cumulative.values(cut))
        except NotCovered as err:
            around = cumulative.at(cut)
            raise NotCovered(np.column_stack((around, around))) from err
        y_lo, y_hi = self.facts.y_range
        fine = np.unique(np.concatenate(([y_lo], inner, [y_hi])))
        sigma_a = _absolute_sigma(moments, sample, self.scale)
        if not sigma_a > 0:
            msg = (
                "sigma_a, the weighted spread of x, is zero: with these weights the weighted "
                "variance of x is not positive"
            )
            raise NegativeWeightError(msg) if sample.negative else ValueError(msg)
        x_lo, x_hi = self.facts.x_range[0]
        nodes = lp.node_grid(x_lo, x_hi, self.sigma_r * sigma_a / self.per, self.most)
        return BinSpec(fine, nodes, sigma_a)

    def tasks(
        self, spec: BinSpec, layout: Layout, groups: list[Group], member: Member, sample: Sample
    ) -> list[Any]:
        return [
            BinTask(
                f"{member.name}:bins:{g.index}",
                layout,
                g,
                member,
                sample.weighted,
                spec.nodes,
                spec.fine_edges,
            )
            for g in groups
        ]

    def finish(self, spec: BinSpec, results: list[Any], sample: Sample, into: GridKDE) -> GridKDE:
        mass = np.sum([r[0] for r in results], axis=0)
        below = np.sum([r[1] for r in results], axis=0)
        bandwidth = self.sigma_r * spec.sigma_a
        grid = grid_columns(
            spec.nodes, bandwidth, self.degree, spec.fine_edges, mass, below, self.levels
        )
        domain = (self.facts.x_range[0], self.facts.y_range)
        total = sample.total if sample.weighted else float(sample.n)
        return into.set_fitted_grid(domain, spec.sigma_a, grid, n_events=sample.n, sum_weight=total)


def _absolute_sigma(moments: FloatArray, sample: Sample, scale: float) -> float:
    """:func:`~rosenblatt.transforms.kde.absolute_sigma` from shifted weighted moments."""
    total, first, second = (float(v) for v in moments)
    spread = second - first * first / total
    if not sample.weighted:
        variance = spread / (sample.n - 1) if sample.n > 1 else 0.0
        return math.sqrt(max(2.0 * variance, 0.0)) / scale
    pairs = sample.total * sample.total - sample.total2
    if pairs <= 0:
        return 0.0
    return math.sqrt(max(2.0 * sample.total * spread / pairs, 0.0)) / scale


def plan_for(transform: Any, facts: Facts) -> Plan:
    """The plan of ``transform`` (an IRGI or a GridKDE with fixed parameters) on the sample of ``facts``."""
    if isinstance(transform, IRGI):
        if facts.k > 1:
            return NestedPlan(transform, facts)
        return IRGIPlan(transform, facts)
    if isinstance(transform, GridKDE):
        if facts.k > 1:
            msg = "GridKDE on several observables is not mergeable: fit it in memory"
            raise ValueError(msg)
        return GridKDEPlan(transform, facts)
    msg = f"{type(transform).__name__} is not mergeable"
    raise ValueError(msg)
