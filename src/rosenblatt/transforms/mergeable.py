"""Fits from partial results that add up over chunks of events.

A :class:`MergeableFit` fits an :class:`~rosenblatt.IRGI` or a
:class:`~rosenblatt.GridKDE` in a few passes over a sample that is never held
in one place. Every pass hands out a :class:`Request`; each chunk of events,
wherever it is processed (a worker, a coffea processor on a dask cluster),
turns it into a :class:`Partial`; the partials add up with ``+`` in any order
and grouping, and their sum advances the fit::

    fit = rb.MergeableFit(rb.IRGI(depth=7))
    while not fit.done:
        request = fit.request()
        partial = None
        for x, y, w in chunks:
            part = request(x, y, w)
            partial = part if partial is None else partial + part
        fit.update(partial)
    transform = fit.result()

Inside coffea, a processor returns ``{"partial": request(x, y, w)}`` from
``process``; ``coffea.processor.accumulate`` adds the partials of all chunks.

Quantiles are found exactly: a histogram pass locates the bin that holds each
needed order statistic (by rank, or by cumulative weight), and a gather pass
collects the events of those bins, whose sorted values give the order
statistics; a bin that holds more than ``gather_limit`` events is histogrammed
again, more finely. Everything else (weight below an edge, binned weight on a
grid, moments) is a sum over events. A partial holds histograms and at most
``gather_limit`` gathered events, whatever the number of events.
"""

from __future__ import annotations

import bisect
import dataclasses
import math
import numbers
import uuid
from collections.abc import Callable, Generator, Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
from numpy.typing import NDArray

from rosenblatt._awkward import is_awkward
from rosenblatt._validation import as_1d_float, check_finite, check_same_length
from rosenblatt.transforms import _local_polynomial as lp
from rosenblatt.transforms._base import ConditionalCDFTransform
from rosenblatt.transforms._bisection import bisect_segments
from rosenblatt.transforms.grid_kde import GridKDE, fine_edge_count, grid_columns
from rosenblatt.transforms.irgi import (
    IRGI,
    _check_column_weight,
    _column_cdf,
    _midpoint,
    _sparse_weight_error,
)

__all__ = ["MergeableFit", "Partial", "Request"]

Array = NDArray[np.float64]
IntArray = NDArray[np.int64]
Domain = tuple[tuple[float, float], tuple[float, float]]

#: default number of histogram bins of one pass, over all searched ranges
HISTOGRAM_BINS = 2**16
#: default largest number of events gathered in one pass
GATHER_LIMIT = 2**18
#: fewest bins of one searched range
MIN_BINS = 16
#: cells per searched range, and fewest cells, of the filter of the events that may lie in a range
CELLS_PER_RANGE = 8
FILTER_CELLS = 2**16


# --------------------------------------------------------------------- partials
@dataclass(eq=False)
class Partial:
    """What chunks of events contributed to one pass of a :class:`MergeableFit`.

    Partials of the same request add up with ``+``: sums are added, extremes
    combined and gathered events joined. The fit does not depend on the order
    or grouping of the additions (exactly for unit and integer weights, within
    rounding for other weights). Partials pickle.

    Attributes
    ----------
    tag : str
        Identifies the request that made the partial.
    sums, minima, maxima, gathered : dict of numpy.ndarray
        The arrays that add, that combine by minimum and by maximum, and that
        are joined.
    """

    tag: str
    sums: dict[str, NDArray[Any]] = field(default_factory=dict)
    minima: dict[str, Array] = field(default_factory=dict)
    maxima: dict[str, Array] = field(default_factory=dict)
    gathered: dict[str, NDArray[Any]] = field(default_factory=dict)

    def __add__(self, other: object) -> Partial:
        if not isinstance(other, Partial):
            return NotImplemented
        if other.tag != self.tag:
            msg = (
                f"cannot add partials of different requests ({self.tag!r} and {other.tag!r}): "
                "add only the partials that the current request returned"
            )
            raise ValueError(msg)
        return Partial(
            self.tag,
            {k: v + other.sums[k] for k, v in self.sums.items()},
            {k: np.minimum(v, other.minima[k]) for k, v in self.minima.items()},
            {k: np.maximum(v, other.maxima[k]) for k, v in self.maxima.items()},
            {k: np.concatenate((v, other.gathered[k])) for k, v in self.gathered.items()},
        )

    def __radd__(self, other: object) -> Partial:
        if isinstance(other, int) and other == 0:
            return self
        return NotImplemented

    @property
    def nbytes(self) -> int:
        """Bytes held by the partial's arrays."""
        groups = (self.sums, self.minima, self.maxima, self.gathered)
        return sum(a.nbytes for group in groups for a in group.values())

    def __repr__(self) -> str:
        n_gathered = len(self.gathered.get("value", ()))
        return f"Partial(tag={self.tag!r}, {self.nbytes} bytes, {n_gathered} gathered events)"


# ----------------------------------------------------------------------- chunks
@dataclass(frozen=True)
class _Chunk:
    """The validated events of one chunk; ``w`` is ``None`` for unit weights."""

    x: Array
    y: Array
    w: Array | None

    @classmethod
    def of(cls, x: Any, y: Any, weight: Any, weighted: bool | None) -> _Chunk:
        x_arr = as_1d_float(_flat(x, "x"), "x", allow_empty=True)
        y_arr = as_1d_float(_flat(y, "y"), "y", allow_empty=True)
        check_same_length(x=x_arr, y=y_arr)
        check_finite(x_arr, "x")
        check_finite(y_arr, "y")
        if weight is None:
            return cls(x_arr, y_arr, None)
        if weighted is False:
            msg = (
                "weights were given, but no chunk of the first pass had weights: give the "
                "weights in every pass"
            )
            raise ValueError(msg)
        w_arr = as_1d_float(_flat(weight, "weight"), "weight", allow_empty=True)
        if len(w_arr) != len(x_arr):
            msg = f"length mismatch: weight has {len(w_arr)} events, the data have {len(x_arr)}"
            raise ValueError(msg)
        check_finite(w_arr, "weight")
        return cls(x_arr, y_arr, w_arr)

    def weights(self) -> Array:
        """The weights, ones for unit weights."""
        return np.ones(len(self.x)) if self.w is None else self.w


def _flat(values: Any, name: str) -> Any:
    """A flat awkward array as numpy; anything else unchanged."""
    if not is_awkward(values):
        return values
    import awkward as ak

    if values.ndim != 1:
        msg = f"{name} must be a flat array (one value per event), got {values.ndim} dimensions"
        raise ValueError(msg)
    return ak.to_numpy(values)


@dataclass(frozen=True)
class _Axis:
    """Which values a search orders, grouped by the IRGI column of ``x`` if ``boundaries`` are given.

    An event is in column ``k``: ``boundaries[k - 1] < x <= boundaries[k]``.
    """

    value: str
    boundaries: Array | None = None

    @property
    def n_groups(self) -> int:
        return 1 if self.boundaries is None else len(self.boundaries) + 1

    def groups(self, chunk: _Chunk) -> IntArray:
        if self.boundaries is None:
            return np.zeros(len(chunk.x), dtype=np.int64)
        return np.searchsorted(self.boundaries, chunk.x, side="left").astype(np.int64)

    def values(self, chunk: _Chunk) -> Array:
        return chunk.x if self.value == "x" else chunk.y


# ------------------------------------------------------------------------ parts
class _Part(Protocol):
    def fill(self, chunk: _Chunk, out: Partial) -> None: ...


@dataclass(frozen=True)
class _SummaryPart:
    """Number of events, weight sums and counts, extremes; events outside a given domain."""

    domain: Domain | None

    def fill(self, chunk: _Chunk, out: Partial) -> None:
        w = chunk.weights()
        out.sums["n"] = np.array(len(w), dtype=np.int64)
        out.sums["weighted"] = np.array(int(chunk.w is not None), dtype=np.int64)
        out.sums["weight"] = np.array(w.sum())
        out.sums["weight_x"] = np.array(np.dot(w, chunk.x))
        out.sums["weight2"] = np.array(np.dot(w, w))
        counts = [np.count_nonzero(w), np.count_nonzero(w < 0), np.count_nonzero(w == 0)]
        out.sums["weight_counts"] = np.array(counts, dtype=np.int64)
        for name, values in (("x", chunk.x), ("y", chunk.y), ("w", w)):
            out.minima[name] = np.array(values.min() if len(values) else np.inf)
            out.maxima[name] = np.array(values.max() if len(values) else -np.inf)
        if self.domain is not None:
            outside = [
                np.count_nonzero((values < lo) | (values > hi))
                for values, (lo, hi) in zip((chunk.x, chunk.y), self.domain, strict=True)
            ]
            out.sums["outside"] = np.array(outside, dtype=np.int64)


@dataclass(frozen=True)
class _MomentPart:
    """Weighted sums of ``1, u, u**2`` with ``u = (x - shift) * scale``."""

    shift: float
    scale: float

    def fill(self, chunk: _Chunk, out: Partial) -> None:
        w = chunk.weights()
        u = chunk.x * self.scale - self.shift * self.scale
        wu = w * u
        out.sums["moments"] = np.array([w.sum(), wu.sum(), np.dot(wu, u)])


@dataclass(frozen=True)
class _SearchPart:
    """Histograms of some ranges of the sorted keys, and the events of others.

    Events are ordered by ``(group, value, weight)`` (``(group, value)`` without
    weights). A range of component 0 holds the events of a group with
    ``lo <= value <= hi``; of component 1 those with ``value == prefix`` and
    ``lo <= weight <= hi``. A range with ``bins > 0`` is histogrammed in that
    many equal bins of its component (count, weight, positive weight, extremes
    per bin); one with ``bins == 0`` is gathered.
    """

    axis: _Axis
    weighted: bool
    value_range: tuple[float, float]
    group: IntArray
    component: IntArray
    prefix: Array
    lo: Array
    hi: Array
    bins: IntArray
    whole_groups: bool = False

    def fill(self, chunk: _Chunk, out: Partial) -> None:
        if self.whole_groups:
            value = self.axis.values(chunk)
            weights = chunk.weights() if self.weighted else None
            self._histogram(self.axis.groups(chunk), value, weights, out)
            return
        keys = self._sorted_keys(chunk)
        start, stop = self._slices(keys)
        lengths = stop - start
        rid = np.repeat(np.arange(len(lengths)), lengths)
        idx = np.arange(len(rid)) + np.repeat(start - (np.cumsum(lengths) - lengths), lengths)
        values, weights = keys[1][idx], keys[2][idx] if self.weighted else None
        on_weight = self.component[rid] == 1
        component = np.where(on_weight, weights, values) if weights is not None else values
        binned = self.bins[rid] > 0
        self._histogram(
            rid[binned], component[binned], None if weights is None else weights[binned], out
        )
        out.gathered["range"] = rid[~binned]
        out.gathered["value"] = values[~binned]
        if weights is not None:
            out.gathered["weight"] = weights[~binned]

    def _sorted_keys(self, chunk: _Chunk) -> tuple[NDArray[Any], ...]:
        """The keys ``(group, value[, weight])`` of the chunk's events that may lie in a range, in order."""
        group, value = self.axis.groups(chunk), self.axis.values(chunk)
        w = chunk.weights() if self.weighted else None
        inside = self._candidates(group, value)
        if not inside.all():
            group, value = group[inside], value[inside]
            w = None if w is None else w[inside]
        order = np.argsort(value)
        if w is not None:
            ordered = value[order]
            if np.any(ordered[1:] == ordered[:-1]):
                order = np.lexsort((w, value))
        if self.axis.n_groups > 1:
            order = order[np.argsort(group[order], kind="stable")]
        if w is None:
            return group[order], value[order]
        return group[order], value[order], w[order]

    def _candidates(self, group: IntArray, value: Array) -> NDArray[np.bool_]:
        """Whether each event may lie in a range: all that do, and a few more.

        The value range of every group is cut into equal cells; the cells that
        a range touches are marked, and an event is a candidate if its cell is.
        """
        n_groups = self.axis.n_groups
        n_cells = max(CELLS_PER_RANGE * len(self.lo), FILTER_CELLS) // n_groups
        v_lo, v_hi = self.value_range
        on_value = self.component == 0
        first = _cell(np.where(on_value, self.lo, self.prefix), v_lo, v_hi, n_cells)
        last = _cell(np.where(on_value, self.hi, self.prefix), v_lo, v_hi, n_cells)
        marks = np.zeros((n_groups, n_cells + 1), dtype=np.int32)
        np.add.at(marks, (self.group, first), 1)
        np.add.at(marks, (self.group, last + 1), -1)
        touched = np.cumsum(marks, axis=1)[:, :n_cells] > 0
        return touched[group, _cell(value, v_lo, v_hi, n_cells)]

    def _slices(self, keys: tuple[NDArray[Any], ...]) -> tuple[IntArray, IntArray]:
        """For each range, the positions of its first event and after its last in the sorted keys."""
        group_bounds = np.searchsorted(keys[0], np.arange(self.axis.n_groups + 1), side="left")
        start = np.empty(len(self.lo), dtype=np.int64)
        stop = np.empty(len(self.lo), dtype=np.int64)
        by_group = np.argsort(self.group, kind="stable")
        cuts = np.searchsorted(self.group[by_group], np.arange(self.axis.n_groups + 1), side="left")
        for g in np.flatnonzero(np.diff(cuts)):
            ranges = by_group[cuts[g] : cuts[g + 1]]
            offset = group_bounds[g]
            values = keys[1][offset : group_bounds[g + 1]]
            on_value = ranges[self.component[ranges] == 0]
            start[on_value] = offset + np.searchsorted(values, self.lo[on_value], side="left")
            stop[on_value] = offset + np.searchsorted(values, self.hi[on_value], side="right")
            for r in ranges[self.component[ranges] == 1]:
                first = offset + np.searchsorted(values, self.prefix[r], side="left")
                weights = keys[2][
                    first : offset + np.searchsorted(values, self.prefix[r], side="right")
                ]
                start[r] = first + np.searchsorted(weights, self.lo[r], side="left")
                stop[r] = first + np.searchsorted(weights, self.hi[r], side="right")
        return start, stop

    def _histogram(self, rid: IntArray, values: Array, weights: Array | None, out: Partial) -> None:
        offsets = np.concatenate(([0], np.cumsum(self.bins)))
        n_bins = int(offsets[-1])
        lo, hi, bins = self.lo[rid], self.hi[rid], self.bins[rid]
        # halved where the width overflows; either way monotone in the value
        half = ~np.isfinite(self.hi - self.lo)[rid]
        factor = np.where(half, 0.5, 1.0)
        with np.errstate(invalid="ignore", divide="ignore"):
            u = (values * factor - lo * factor) / (hi * factor - lo * factor)
        local = np.clip(np.floor(u * bins), 0, bins - 1).astype(np.int64)
        index = offsets[rid] + local
        out.sums["count"] = np.bincount(index, minlength=n_bins).astype(np.int64)
        if weights is not None:
            out.sums["weight"] = np.bincount(index, weights=weights, minlength=n_bins)
            out.sums["positive"] = np.bincount(
                index, weights=np.maximum(weights, 0.0), minlength=n_bins
            )
        out.minima["vmin"] = np.full(n_bins, np.inf)
        out.maxima["vmax"] = np.full(n_bins, -np.inf)
        np.minimum.at(out.minima["vmin"], index, values)
        np.maximum.at(out.maxima["vmax"], index, values)


def _cell(values: Array, lo: float, hi: float, n_cells: int) -> IntArray:
    """Equal cells of ``[lo, hi]``, monotone in the value; values outside go to the end cells."""
    with np.errstate(invalid="ignore", over="ignore"):
        u = (values * 0.5 - lo * 0.5) * (n_cells / (hi * 0.5 - lo * 0.5))
    return np.clip(np.nan_to_num(u), 0, n_cells - 1).astype(np.int64)


@dataclass(frozen=True)
class _BelowPart:
    """Weight per IRGI column and number of the column's edges ``<= y``."""

    axis: _Axis
    edges: Array

    def fill(self, chunk: _Chunk, out: Partial) -> None:
        n_col, n_edge = self.edges.shape
        group = self.axis.groups(chunk)
        order = np.argsort(group, kind="stable")
        bounds = np.concatenate(([0], np.cumsum(np.bincount(group, minlength=n_col))))
        y = chunk.y[order]
        count = np.empty(len(y), dtype=np.int64)
        for k in range(n_col):
            part = slice(bounds[k], bounds[k + 1])
            count[part] = np.searchsorted(self.edges[k], y[part], side="right")
        index = group[order] * (n_edge + 1) + count
        weights = None if chunk.w is None else chunk.w[order]
        hist = np.bincount(index, weights=weights, minlength=n_col * (n_edge + 1))
        out.sums["below"] = hist.astype(np.float64).reshape(n_col, n_edge + 1)


@dataclass(frozen=True)
class _BinPart:
    """The binned weight of :func:`~rosenblatt.transforms._local_polynomial.bin_sample`."""

    nodes: Array
    edges: Array

    def fill(self, chunk: _Chunk, out: Partial) -> None:
        mass, below = lp.bin_sample(chunk.x, chunk.y, chunk.w, self.nodes, self.edges)
        out.sums["mass"] = mass
        out.sums["below"] = below


# --------------------------------------------------------------------- requests
class Request:
    """What every chunk computes in one pass of a :class:`MergeableFit`.

    Call it on each chunk's ``(x, y, weight)`` (numpy or flat awkward arrays,
    ``weight`` may be ``None``) and add the returned :class:`Partial` objects.
    A request is small and pickles, so that it can be sent to workers.

    Attributes
    ----------
    description : str
        What the pass computes, for progress reports.
    tag : str
        Identifies the pass; its partials carry it.
    """

    def __init__(
        self, tag: str, description: str, parts: list[_Part], weighted: bool | None
    ) -> None:
        self.tag = tag
        self.description = description
        self.parts = parts
        self.weighted = weighted

    def __call__(self, x: Any, y: Any, weight: Any = None) -> Partial:
        """The partial result of one chunk of events."""
        chunk = _Chunk.of(x, y, weight, self.weighted)
        out = Partial(self.tag)
        for part in self.parts:
            part.fill(chunk, out)
        return out

    def __repr__(self) -> str:
        return f"Request({self.description!r})"


# ---------------------------------------------------------------- order search
@dataclass(frozen=True, slots=True)
class _Range:
    """Consecutive events in the sorted order: see :class:`_SearchPart`.

    ``start`` is the position of the first, ``before`` the summed weight of the
    events before it, ``count`` the number of events.
    """

    group: int
    component: int
    prefix: float
    lo: float
    hi: float
    start: int
    before: float
    count: int


@dataclass(eq=False, slots=True)
class _Query:
    """A rank (the key at ``position``) or a crossing of the cumulative weight.

    A crossing looks for the first position ``i > position`` (the start of a
    cell, which ends at ``stop``) where the summed weight of the first ``i``
    events reaches ``target``. ``found`` is that ``i`` (``stop`` if rounding
    hides it), ``value`` the value of event ``i - 1`` (``None`` if unknown) and
    ``cumulative`` the weight before ``i``. A rank sets ``value`` to the value
    at ``position`` and ``cumulative`` to the weight before it.
    """

    position: int
    target: float | None = None
    stop: int = 0
    need_weight: bool = False
    range: _Range | None = None
    done: bool = False
    value: float | None = None
    cumulative: float = math.nan
    found: int = -1

    @property
    def crossing(self) -> bool:
        return self.target is not None


class _Rows(dict[str, list[Any]]):
    """Columns of bins as plain lists, made when first read: single bins are read faster from lists."""

    def __init__(self, columns: dict[str, NDArray[Any]]) -> None:
        super().__init__()
        self.columns = columns

    def __missing__(self, name: str) -> list[Any]:
        values: list[Any] = self.columns[name].tolist()
        self[name] = values
        return values


@dataclass
class _Bins:
    """Histogram bins of consecutive ranges, in the sorted order."""

    count: IntArray
    weight: Array
    positive: Array
    vmin: Array
    vmax: Array
    group: IntArray
    component: int
    prefix: float
    start: IntArray = field(init=False)
    end: IntArray = field(init=False)
    before: Array = field(init=False)
    next_filled: IntArray = field(init=False)
    first_start: int = 0
    first_before: float = 0.0

    def __post_init__(self) -> None:
        self.end = self.first_start + np.cumsum(self.count)
        self.start = self.end - self.count
        self.before = self.first_before + np.concatenate(([0.0], np.cumsum(self.weight)[:-1]))
        filled = np.concatenate((np.flatnonzero(self.count > 0), [len(self.count)]))
        nxt = filled[np.searchsorted(filled, np.arange(len(self.count)), side="right")]
        group = np.concatenate((self.group, [-1]))
        self.next_filled = np.where(group[nxt] == self.group, nxt, -1)
        # the weight at the end of each bin, the most it can reach inside, and their running maxima
        after = self.before + self.weight
        reach = self.before + self.positive
        columns = {
            "after": after,
            "after_max": np.maximum.accumulate(after),
            "reach": reach,
            "reach_max": np.maximum.accumulate(reach),
        }
        for name in ("count", "vmin", "vmax", "group", "start", "end", "before", "next_filled"):
            columns[name] = getattr(self, name)
        self.row = _Rows(columns)
        self.ranges: dict[tuple[int, int], _Range] = {}

    def range(self, b1: int, b2: int) -> _Range:
        """The range of the events in bins ``b1..b2`` (the same object for the same bins)."""
        found = self.ranges.get((b1, b2))
        if found is None:
            row = self.row
            found = _Range(
                row["group"][b1],
                self.component,
                self.prefix,
                row["vmin"][b1],
                row["vmax"][b2],
                row["start"][b1],
                row["before"][b1],
                row["end"][b2] - row["start"][b1],
            )
            self.ranges[(b1, b2)] = found
        return found

    def locate(self, query: _Query) -> tuple[int, int]:
        """The first and last filled bin that may hold the answer to ``query``."""
        if not query.crossing:
            b = bisect.bisect_right(self.row["end"], query.position)
            return b, b
        target, row = _target(query), self.row
        end, count = row["end"], row["count"]
        first = bisect.bisect_right(end, query.position)
        last = min(bisect.bisect_left(end, query.stop), len(end) - 1)
        # the crossing is certain by the end of b2 and possible from b1 on
        b2 = min(_first_at_least(row["after"], row["after_max"], first, target), last)
        b1 = min(_first_at_least(row["reach"], row["reach_max"], first, target), b2)
        filled = [b for b in range(b1, b2 + 1) if count[b] > 0]
        return filled[0], filled[-1]


class _Gathered:
    """Gathered events of several ranges: each range's events sorted, with the weight after each.

    Parameters
    ----------
    ranges
        The gathered ranges.
    rid, values, weights
        Range index, value and weight of every gathered event (``weights`` is
        ``None`` for unit weights).
    """

    def __init__(
        self, ranges: list[_Range], rid: IntArray, values: Array, weights: Array | None
    ) -> None:
        order = np.lexsort((values, rid)) if weights is None else np.lexsort((weights, values, rid))
        rid, values = rid[order], values[order]
        bounds = np.searchsorted(rid, np.arange(len(ranges) + 1), side="left")
        self.start = np.array([r.start for r in ranges], dtype=np.int64)
        self.count = np.array([r.count for r in ranges], dtype=np.int64)
        self.before = np.array([r.before for r in ranges])
        wrong = np.flatnonzero(np.diff(bounds) != self.count)
        if len(wrong):
            _check_events(int(bounds[wrong[0] + 1] - bounds[wrong[0]]), int(self.count[wrong[0]]))
        if weights is None:
            after = (self.start[rid] + np.arange(len(rid)) - bounds[:-1][rid] + 1).astype(
                np.float64
            )
        else:
            inclusive = np.cumsum(weights[order])
            base = (inclusive - weights[order])[np.minimum(bounds[:-1], max(len(rid) - 1, 0))]
            after = self.before[rid] + (inclusive - base[rid])
        self.ranges = ranges
        self.offsets = bounds
        self.values = values
        self.after = after
        self.by_start = np.argsort(self.start, kind="stable")
        self.sorted_start = self.start[self.by_start]
        self._lists: tuple[list[float], list[float]] | None = None

    def find(self, positions: IntArray) -> IntArray:
        """Index of a range that holds each position, or -1."""
        k = np.searchsorted(self.sorted_start, positions, side="right") - 1
        r = self.by_start[np.maximum(k, 0)]
        inside = (k >= 0) & (positions < self.start[r] + self.count[r])
        return np.where(inside, r, -1)

    def answer_ranks(self, queries: list[_Query], r: IntArray) -> None:
        """Answer rank queries from the events of their ranges ``r``."""
        positions = np.array([q.position for q in queries], dtype=np.int64)
        start = self.start[r]
        index = self.offsets[r] + positions - start
        values = self.values[index].tolist()
        cumulative = np.where(
            positions == start, self.before[r], self.after[np.maximum(index - 1, 0)]
        ).tolist()
        for query, value, weight in zip(queries, values, cumulative, strict=True):
            query.value, query.cumulative, query.done = value, weight, True

    def answer_crossing(self, r: int, query: _Query) -> None:
        """Answer a crossing query from the events of range ``r``."""
        if self._lists is None:
            self._lists = (self.values.tolist(), self.after.tolist())
        values, after = self._lists
        rng, offset = self.ranges[r], int(self.offsets[r])
        target = _target(query)
        query.done = True
        for k in range(max(query.position - rng.start, 0), rng.count):
            if after[offset + k] >= target:
                query.found = rng.start + k + 1
                query.cumulative = after[offset + k]
                query.value = values[offset + k]
                return
        query.found = query.stop


class _OrderSearch:
    """Exact order statistics of events that are only seen in chunks.

    The events are ordered by ``(group, value, weight)`` (without weights by
    ``(group, value)``); events with equal keys are interchangeable, so every
    position has a definite key and cumulative weight whatever the chunking.
    A root histogram of every group is filled once; each query is located in
    it, then in finer histograms of the bins that may hold its answer while
    they hold more than ``gather_limit`` events, and answered from the sorted
    events of a gathered bin (or from the bin itself when all its events share
    one key).
    """

    def __init__(
        self,
        axis: _Axis,
        weighted: bool,
        value_range: tuple[float, float],
        weight_range: tuple[float, float],
        limits: tuple[int, int],
        make_request: Callable[[str, list[Any]], Request],
    ) -> None:
        self.axis = axis
        self.weighted = weighted
        self.value_range = value_range
        self.weight_range = weight_range
        self.histogram_bins, self.gather_limit = limits
        self.make_request = make_request
        self.root: _Bins | None = None
        self.gathered: _Gathered | None = None

    def root_part(self) -> _SearchPart:
        """The histogram of every group over the whole value range."""
        n = self.axis.n_groups
        bins = max(MIN_BINS, self.histogram_bins // n)
        lo, hi = self.value_range
        part = self._part(
            np.arange(n),
            np.zeros(n, np.int64),
            np.zeros(n),
            np.full(n, lo),
            np.full(n, hi),
            np.full(n, bins),
        )
        return dataclasses.replace(part, whole_groups=True)

    def set_root(self, partial: Partial, n_events: int) -> tuple[IntArray, Array]:
        """Keep the root histogram; return the number of events and weight of every group."""
        n = self.axis.n_groups
        bins = self._bins(
            partial, slice(None), np.repeat(np.arange(n), len(partial.sums["count"]) // n)
        )
        _check_events(int(bins.count.sum()), n_events)
        self.root = bins
        per_group = bins.count.reshape(n, -1)
        return per_group.sum(axis=1), bins.weight.reshape(n, -1).sum(axis=1)

    def resolve(self, queries: list[_Query], description: str) -> Generator[Request, Partial, None]:
        """Answer ``queries`` in as few passes as the limits allow."""
        assert self.root is not None
        self._start_ranks([q for q in queries if not q.crossing and not q.done])
        for query in queries:
            if query.crossing and not query.done:
                self._step(query, self.root, *self.root.locate(query))
        passes = 0
        while True:
            open_ranges: dict[int, tuple[_Range, list[_Query]]] = {}
            for query in queries:
                if not query.done:
                    assert query.range is not None
                    open_ranges.setdefault(id(query.range), (query.range, []))[1].append(query)
            if not open_ranges:
                return
            gather, refine = self._plan(list(open_ranges.values()))
            label = description if passes == 0 else f"{description} (pass {passes + 1})"
            partial = yield self.make_request(label, [self._pass_part(gather, refine)])
            passes += 1
            self._absorb(partial, gather, refine)

    # ---------------------------------------------------------------- stepping
    def _step(self, query: _Query, bins: _Bins, b1: int, b2: int) -> None:
        """Narrow ``query`` to the bins ``b1..b2``: answer it, or set the range to search next."""
        row = bins.row
        if b1 == b2 and row["vmin"][b1] == row["vmax"][b1] and self._single(query, bins, b1):
            return
        if query.crossing and row["next_filled"][b2] >= 0:
            extended = row["next_filled"][b2]
            if row["end"][extended] - row["start"][b1] <= self.gather_limit:
                b2 = extended
        new = bins.range(b1, b2)
        if new.count > self.gather_limit and query.range is not None and new == query.range:
            msg = (
                "the cumulative weight cannot be narrowed down: the negative weights leave "
                f"more than gather_limit = {self.gather_limit} events where it may cross a "
                "quantile; raise gather_limit"
            )
            raise ValueError(msg)
        query.range = new

    def _single(self, query: _Query, bins: _Bins, b: int) -> bool:
        """Answer from a bin whose events share one value, or descend to their weights."""
        row = bins.row
        value, start, before, count = (
            row["vmin"][b],
            row["start"][b],
            row["before"][b],
            row["count"][b],
        )
        if bins.component == 1:
            _identical(query, bins.prefix, value, start, before, count)
            return True
        if not self.weighted:
            _identical(query, value, 1.0, start, float(start), count)
            return True
        if not query.crossing and not query.need_weight:
            query.value = value
            query.done = True
            return True
        if count <= self.gather_limit:
            return False
        w_lo, w_hi = self.weight_range
        if w_lo == w_hi:
            _identical(query, value, w_lo, start, before, count)
            return True
        query.range = _Range(row["group"][b], 1, value, w_lo, w_hi, start, before, count)
        return True

    def _start_ranks(self, queries: list[_Query]) -> None:
        """Answer rank queries from the events gathered last or the root, or locate them in the root."""
        if not queries:
            return
        assert self.root is not None
        positions = np.array([q.position for q in queries], dtype=np.int64)
        pending = np.arange(len(queries))
        if self.gathered is not None:
            r = self.gathered.find(positions)
            hit = r >= 0
            self.gathered.answer_ranks([queries[i] for i in np.flatnonzero(hit)], r[hit])
            pending = np.flatnonzero(~hit)
        root = self.root
        b = np.searchsorted(root.end, positions[pending], side="right")
        quick = root.vmin[b] == root.vmax[b]
        if self.weighted:
            quick &= ~np.array([queries[i].need_weight for i in pending], dtype=bool)
        for i, value, position in zip(
            pending[quick].tolist(),
            root.vmin[b[quick]].tolist(),
            positions[pending[quick]].tolist(),
            strict=True,
        ):
            query = queries[i]
            query.value, query.done = value, True
            query.cumulative = math.nan if self.weighted else float(position)
        for i, bin_ in zip(pending[~quick].tolist(), b[~quick].tolist(), strict=True):
            self._step(queries[i], root, bin_, bin_)

    # ------------------------------------------------------------------ passes
    def _plan(
        self, entries: list[tuple[_Range, list[_Query]]]
    ) -> tuple[list[tuple[_Range, list[_Query]]], list[tuple[_Range, list[_Query]]]]:
        """The ranges gathered in the next pass (as many as fit) and those histogrammed.

        A range that does not fit is histogrammed, which narrows it, unless
        its events share one value: it waits for a later pass.
        """
        gather, refine, total = [], [], 0
        for entry in sorted(entries, key=lambda e: e[0].count):
            rng = entry[0]
            if total + rng.count <= self.gather_limit:
                gather.append(entry)
                total += rng.count
            elif rng.lo < rng.hi:
                refine.append(entry)
        return gather, refine

    def _pass_part(
        self, gather: list[tuple[_Range, list[_Query]]], refine: list[tuple[_Range, list[_Query]]]
    ) -> _SearchPart:
        ranges = [e[0] for e in refine] + [e[0] for e in gather]
        bins = max(MIN_BINS, self.histogram_bins // max(len(refine), 1))
        return self._part(
            np.array([r.group for r in ranges], dtype=np.int64),
            np.array([r.component for r in ranges], dtype=np.int64),
            np.array([r.prefix for r in ranges]),
            np.array([r.lo for r in ranges]),
            np.array([r.hi for r in ranges]),
            np.array([bins] * len(refine) + [0] * len(gather), dtype=np.int64),
        )

    def _part(self, *arrays: NDArray[Any]) -> _SearchPart:
        group, component, prefix, lo, hi, bins = arrays
        return _SearchPart(
            self.axis,
            self.weighted,
            self.value_range,
            group.astype(np.int64),
            component.astype(np.int64),
            prefix.astype(np.float64),
            lo.astype(np.float64),
            hi.astype(np.float64),
            bins.astype(np.int64),
        )

    def _absorb(
        self,
        partial: Partial,
        gather: list[tuple[_Range, list[_Query]]],
        refine: list[tuple[_Range, list[_Query]]],
    ) -> None:
        if refine:
            per_range = len(partial.sums["count"]) // len(refine)
            for k, (rng, queries) in enumerate(refine):
                part = slice(k * per_range, (k + 1) * per_range)
                bins = self._bins(partial, part, np.full(per_range, rng.group), rng)
                _check_events(int(bins.count.sum()), rng.count)
                for query in queries:
                    self._step(query, bins, *bins.locate(query))
        if gather:
            found = partial.gathered
            self.gathered = _Gathered(
                [e[0] for e in gather],
                found["range"] - len(refine),
                found["value"],
                found["weight"] if self.weighted else None,
            )
            ranks, rank_range = [], []
            for r, (_, queries) in enumerate(gather):
                for query in queries:
                    if query.crossing:
                        self.gathered.answer_crossing(r, query)
                    else:
                        ranks.append(query)
                        rank_range.append(r)
            if ranks:
                self.gathered.answer_ranks(ranks, np.array(rank_range, dtype=np.int64))

    def _bins(
        self, partial: Partial, part: slice, group: IntArray, rng: _Range | None = None
    ) -> _Bins:
        count = partial.sums["count"][part]
        weight = partial.sums["weight"][part] if self.weighted else count.astype(np.float64)
        positive = partial.sums["positive"][part] if self.weighted else weight
        return _Bins(
            count,
            weight,
            positive,
            partial.minima["vmin"][part],
            partial.maxima["vmax"][part],
            group,
            0 if rng is None else rng.component,
            0.0 if rng is None else rng.prefix,
            first_start=0 if rng is None else rng.start,
            first_before=0.0 if rng is None else rng.before,
        )


def _identical(
    query: _Query, value: float, weight: float, start: int, before: float, count: int
) -> None:
    """Answer ``query`` from ``count`` events of one key, the first at ``start``."""
    query.done = True
    if not query.crossing:
        query.value = value
        query.cumulative = before + (query.position - start) * weight
        return
    target = _target(query)
    k0 = max(query.position - start, 0)
    k = k0
    if weight > 0:
        k = max(k0, math.ceil((target - before) / weight) - 1)
        while k > k0 and before + k * weight >= target:
            k -= 1
        while k < count - 1 and before + (k + 1) * weight < target:
            k += 1
    if k < count and before + (k + 1) * weight >= target:
        query.found = start + k + 1
        query.cumulative = before + (k + 1) * weight
        query.value = value
    else:
        query.found = query.stop


def _first_at_least(
    values: list[float], running_max: list[float], first: int, target: float
) -> int:
    """The first index from ``first`` on where ``values`` reach ``target`` (``len(values)`` if none)."""
    if first == 0 or running_max[first - 1] < target:
        return bisect.bisect_left(running_max, target, lo=first)
    return next((b for b in range(first, len(values)) if values[b] >= target), len(values))


def _target(query: _Query) -> float:
    assert query.target is not None
    return query.target


def _value(query: _Query) -> float:
    assert query.value is not None
    return query.value


def _check_events(found: int, expected: int) -> None:
    if found != expected:
        msg = (
            f"the chunks of this pass hold {found} events where the earlier passes saw "
            f"{expected}: every pass must see the same events"
        )
        raise ValueError(msg)


# ---------------------------------------------------------------- bisections
Plan = Generator[Request, Partial, Any]


def _bisect_by_rank(
    search: _OrderSearch,
    bounds: IntArray,
    levels: int,
    fail: Callable[[ValueError], ValueError],
    label: str,
) -> Generator[Request, Partial, tuple[IntArray, dict[int, float]]]:
    """Unit weights: the bisection of :func:`bisect_segments` and the values around every split."""
    try:
        positions = bisect_segments(None, bounds, levels)
    except ValueError as err:
        raise fail(err) from err
    splits = np.setdiff1d(positions, bounds)
    wanted = np.union1d(splits - 1, splits)
    queries = [_Query(p) for p in wanted.tolist()]
    yield from search.resolve(queries, label)
    return positions.astype(np.int64), {q.position: _value(q) for q in queries}


def _bisect_by_weight(
    search: _OrderSearch,
    bounds: IntArray,
    cumulative: Array,
    levels: int,
    fail: Callable[[ValueError], ValueError],
    label: Callable[[int], str],
) -> Generator[Request, Partial, tuple[IntArray, dict[int, float]]]:
    """Weighted bisection, one round per level; the values around every split."""
    idx, cum = np.asarray(bounds, dtype=np.int64), np.asarray(cumulative, dtype=np.float64)
    values: dict[int, float] = {}
    pending: list[_Query] = []
    for level in range(levels):
        lo, hi = idx[:-1], idx[1:]
        if np.any(hi - lo < 2):
            n_small = int(np.count_nonzero(hi - lo < 2))
            raise fail(
                ValueError(
                    f"{n_small} bisection cell(s) hold fewer than two events and cannot be split"
                )
            )
        a, b = cum[:-1], cum[1:]
        target = 0.5 * (a + b)
        target -= 1e-9 * np.abs(b - a)
        cells = np.flatnonzero(a < target)
        crossing = [
            _Query(start, cut, stop)
            for start, cut, stop in zip(
                lo[cells].tolist(), target[cells].tolist(), hi[cells].tolist(), strict=True
            )
        ]
        yield from search.resolve([*crossing, *pending], label(level))
        values.update({q.position: _value(q) for q in pending})
        mid, at_mid = lo + 1, np.full(len(lo), np.nan)
        found = np.array([q.found for q in crossing], dtype=np.int64)
        mid[cells] = np.clip(found, lo[cells] + 1, hi[cells] - 1)
        for cell, split, query in zip(cells.tolist(), mid[cells].tolist(), crossing, strict=True):
            if split == query.found and query.value is not None:
                at_mid[cell] = query.cumulative
                values[split - 1] = query.value
        clipped = [_Query(int(mid[s]), need_weight=True) for s in np.flatnonzero(np.isnan(at_mid))]
        if clipped:
            yield from search.resolve(clipped, f"{label(level)}, cells split at an end")
            for cell, query in zip(np.flatnonzero(np.isnan(at_mid)), clipped, strict=True):
                at_mid[cell] = query.cumulative
                values[query.position] = _value(query)
        pending = [_Query(p) for p in np.union1d(mid - 1, mid).tolist() if p not in values]
        idx = _interleave(idx, mid)
        cum = _interleave(cum, at_mid)
    if pending:
        yield from search.resolve(pending, f"{label(levels - 1)}, values at the splits")
        values.update({q.position: _value(q) for q in pending})
    return idx, values


def _at(values: dict[int, float], positions: NDArray[Any]) -> Array:
    """The values at ``positions`` (any shape)."""
    flat = [values[int(p)] for p in np.ravel(positions)]
    return np.array(flat, dtype=np.float64).reshape(np.shape(positions))


def _interleave(bounds: NDArray[Any], inner: NDArray[Any]) -> NDArray[Any]:
    out = np.empty(2 * len(bounds) - 1, dtype=bounds.dtype)
    out[0::2] = bounds
    out[1::2] = inner
    return out


# ------------------------------------------------------------------- summary
@dataclass(frozen=True)
class _Summary:
    """What the first pass learns about the sample."""

    n: int
    weighted: bool
    weight: float
    weight_x: float
    weight2: float
    carrying: int
    negative: int
    zero: int
    x_range: tuple[float, float]
    y_range: tuple[float, float]
    w_range: tuple[float, float]
    outside: tuple[int, int]

    @classmethod
    def of(cls, partial: Partial) -> _Summary:
        s, lo, hi = partial.sums, partial.minima, partial.maxima
        carrying, negative, zero = (int(v) for v in s["weight_counts"])
        outside = s.get("outside", np.zeros(2, np.int64))
        return cls(
            int(s["n"]),
            bool(s["weighted"] > 0),
            float(s["weight"]),
            float(s["weight_x"]),
            float(s["weight2"]),
            carrying,
            negative,
            zero,
            (float(lo["x"]), float(hi["x"])),
            (float(lo["y"]), float(hi["y"])),
            (float(lo["w"]), float(hi["w"])),
            (int(outside[0]), int(outside[1])),
        )

    def check(self, *, at_least: int = 1) -> None:
        """The checks of the in-memory fit on the whole sample."""
        if self.n == 0:
            msg = "x is empty: at least one event is needed"
            raise ValueError(msg)
        if self.weighted and not self.weight > 0:
            msg = (
                f"weight must have a positive sum, got {self.weight:g} ({self.negative} negative "
                f"and {self.zero} zero weight(s) out of {self.n})"
            )
            raise ValueError(msg)
        if self.n < at_least:
            msg = f"GridKDE needs at least two defining events, got {self.n}"
            raise ValueError(msg)

    def check_not_constant(self) -> None:
        for name, (lo, hi) in (("x", self.x_range), ("y", self.y_range)):
            if lo == hi:
                msg = (
                    f"{name} is constant ({self.n} events all equal {lo:g}): "
                    "there is no conditional distribution to estimate"
                )
                raise ValueError(msg)


def _parse_domain(domain: Any) -> Domain:
    """A ``((x_min, x_max), (y_min, y_max))`` domain, checked as the in-memory fit checks it."""
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


def _absolute_sigma(moments: Array, summary: _Summary, scale: float) -> float:
    """:func:`~rosenblatt.transforms.kde.absolute_sigma` from shifted weighted moments."""
    total, first, second = (float(v) for v in moments)
    spread = second - first * first / total
    if not summary.weighted:
        variance = spread / (summary.n - 1) if summary.n > 1 else 0.0
        return math.sqrt(max(2.0 * variance, 0.0)) / scale
    pairs = summary.weight * summary.weight - summary.weight2
    if pairs <= 0:
        return 0.0
    return math.sqrt(max(2.0 * summary.weight * spread / pairs, 0.0)) / scale


# ------------------------------------------------------------------------- fit
class MergeableFit:
    """Fit an :class:`~rosenblatt.IRGI` or :class:`~rosenblatt.GridKDE` from partial results of chunks.

    Each pass hands out a :class:`Request` (:meth:`request`); every chunk of
    the defining sample turns it into a :class:`Partial`; the sum of the
    partials of all chunks goes to :meth:`update`. The driver never holds the
    events: a partial holds histograms (``histogram_bins`` bins, at least 16
    per searched range) and at most ``gather_limit`` gathered events, and the
    driver a root histogram per axis and the events gathered last.

    Parameters
    ----------
    transform
        An unfitted :class:`~rosenblatt.IRGI` with an integer ``depth`` or a
        :class:`~rosenblatt.GridKDE` with a numerical ``sigma_r``; it is
        fitted in place and returned by :meth:`result`.
    histogram_bins
        Bins of the histogram of one pass, over all searched ranges.
    gather_limit
        Most events gathered in one pass; a bin holding more is histogrammed
        again.

    Raises
    ------
    ValueError
        For a parameter chosen by cross-validation (``depth="auto"``,
        ``sigma_r="auto"``) and for :class:`~rosenblatt.KDE`: they need all
        defining events at once.

    Notes
    -----
    Passes: IRGI with unit weights needs 6 (a summary; a histogram and the
    order statistics in ``x``; a histogram per column and the order
    statistics in ``y``; the weight below every edge); with weights, one
    round per bisection level instead, ``2 depth + 5`` in all. GridKDE needs
    4 (a summary; a histogram of ``y`` and the moments of ``x``; the
    quantiles of ``y``; the binned weight). A pass is added where a bin holds
    more than ``gather_limit`` events, and, with weights, where a value next
    to a split lies outside the gathered bins or a cell is split at its end.

    The fit is the in-memory one, exactly for unit and integer weights (up to
    rounding for others), on any chunking and order of addition, with these
    differences where the in-memory fit depends on the order of the input:

    * events tied in ``x`` across the boundary of two IRGI columns all belong
      to the lower column (the in-memory fit splits them in input order);
    * events tied in a value are ordered by their weight (the in-memory fit
      takes them in input order), which moves a weighted split inside a run
      of tied values;
    * with negative weights, the in-memory fit takes the first crossing of
      the running maximum of the cumulative weight over the whole sample,
      which can put a split next to the start of a cell when the cumulative
      weight fell by more than half the cell's weight before it; here the
      crossing is looked for inside the cell.

    Examples
    --------
    >>> fit = MergeableFit(IRGI(depth=5))                           # doctest: +SKIP
    >>> while not fit.done:                                          # doctest: +SKIP
    ...     request = fit.request()
    ...     fit.update(sum(request(x, y, w) for x, y, w in chunks()))
    >>> transform = fit.result()                                     # doctest: +SKIP
    """

    def __init__(
        self,
        transform: ConditionalCDFTransform,
        *,
        histogram_bins: int = HISTOGRAM_BINS,
        gather_limit: int = GATHER_LIMIT,
    ) -> None:
        for value, name, least in (
            (histogram_bins, "histogram_bins", MIN_BINS),
            (gather_limit, "gather_limit", 2),
        ):
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < least:
                msg = f"{name} must be an integer >= {least}, got {value!r}"
                raise ValueError(msg)
        self.transform = transform
        self.limits = (int(histogram_bins), int(gather_limit))
        self.passes = 0
        self.y_fine_edges_: Array | None = None
        self._token = uuid.uuid4().hex[:12]
        self._weighted: bool | None = None
        self._error: BaseException | None = None
        self._plan: Plan = self._choose_plan(transform)
        self._pending: Request | None = next(self._plan)

    def _choose_plan(self, transform: ConditionalCDFTransform) -> Plan:
        fallback = "fit it in memory on the gathered (x, y, weight)"
        if isinstance(transform, IRGI):
            if isinstance(transform.depth, str) and transform.depth == "auto":
                msg = (
                    "IRGI(depth='auto') is not mergeable: the depth is chosen by cross-validation "
                    f"on all defining events at once; give an integer depth, or {fallback}"
                )
                raise ValueError(msg)
            depth = transform.depth
            if isinstance(depth, bool) or not isinstance(depth, numbers.Integral) or depth < 0:
                msg = f"depth must be a non-negative integer or 'auto', got {depth!r}"
                raise ValueError(msg)
            domain = None if transform.domain is None else _parse_domain(transform.domain)
            return self._irgi_plan(transform, domain)
        if isinstance(transform, GridKDE):
            if transform._checked()[0] is None:
                msg = (
                    "GridKDE(sigma_r='auto') is not mergeable: the width is chosen by "
                    "cross-validation on all defining events at once; give a number, e.g. "
                    f"sigma_r=0.05, or {fallback}"
                )
                raise ValueError(msg)
            return self._grid_kde_plan(transform)
        msg = (
            f"{type(transform).__name__} is not mergeable: its estimate needs every defining event; "
            f"use GridKDE (or IRGI) with fixed parameters, or {fallback}"
        )
        raise ValueError(msg)

    # ---------------------------------------------------------------- driving
    @property
    def done(self) -> bool:
        """Whether every pass is done and :meth:`result` is ready."""
        return self._pending is None and self._error is None

    def request(self) -> Request:
        """What every chunk must compute in the current pass."""
        if self._error is not None:
            msg = f"the fit failed: {self._error}"
            raise RuntimeError(msg) from self._error
        if self._pending is None:
            msg = "the fit is done: call result()"
            raise RuntimeError(msg)
        return self._pending

    def update(self, partial: Partial | None) -> None:
        """Advance the fit with the sum of the partials of every chunk of the current pass."""
        request = self.request()
        if partial is None:
            msg = (
                f"no chunk contributed to the pass {request.description!r}: every pass must see "
                "every chunk of the sample"
            )
            raise ValueError(msg)
        if not isinstance(partial, Partial):
            msg = f"update() takes a Partial (the sum of the chunks' partials), got {type(partial).__name__}"
            raise TypeError(msg)
        if partial.tag != request.tag:
            msg = (
                f"this is not the sum of the partials of the current request "
                f"({request.description!r}): call fit.request() for each pass"
            )
            raise ValueError(msg)
        self.passes += 1
        try:
            self._pending = self._plan.send(partial)
        except StopIteration:
            self._pending = None
        except BaseException as err:
            self._error = err
            raise

    def result(self) -> ConditionalCDFTransform:
        """The fitted transform."""
        if not self.done:
            msg = "the fit is not done: hand every pass's partial to update() until fit.done"
            raise RuntimeError(msg)
        return self.transform

    def fit_chunks(self, make_iterator: Callable[[], Iterable[Any]]) -> ConditionalCDFTransform:
        """Run every pass over the chunks of ``make_iterator()``, a fresh iterator each time.

        Each chunk is ``(x, y)`` or ``(x, y, weight)``.
        """
        while not self.done:
            request = self.request()
            total: Partial | None = None
            for chunk in make_iterator():
                x, y, *rest = chunk
                part = request(x, y, rest[0] if rest else None)
                total = part if total is None else total + part
            self.update(total)
        return self.result()

    def _request(self, description: str, parts: list[_Part]) -> Request:
        return Request(f"{self._token}:{self.passes}", description, parts, self._weighted)

    def _search(
        self, axis: _Axis, summary: _Summary, value_range: tuple[float, float]
    ) -> _OrderSearch:
        return _OrderSearch(
            axis, summary.weighted, value_range, summary.w_range, self.limits, self._request
        )

    def _summary(self, name: str, domain: Domain | None) -> Generator[Request, Partial, _Summary]:
        partial = yield self._request(f"{name}: summary of the sample", [_SummaryPart(domain)])
        summary = _Summary.of(partial)
        self._weighted = summary.weighted
        return summary

    # ------------------------------------------------------------------- IRGI
    def _irgi_plan(self, t: IRGI, given: Domain | None) -> Plan:
        summary = yield from self._summary("IRGI", given)
        summary.check()
        depth = t._checked_depth(summary.n)
        summary.check_not_constant()
        domain = (summary.x_range, summary.y_range) if given is None else given
        _check_outside(summary, given)

        def fail(axis: str) -> Callable[[ValueError], ValueError]:
            return lambda err: _sparse_weight_error(err, summary.n, summary.carrying, axis, depth)

        # x: bisection to depth + 1; even edges are the centres, odd edges the boundaries
        xs = self._search(_Axis("x"), summary, summary.x_range)
        xs.set_root((yield self._request("IRGI: x histogram", [xs.root_part()])), summary.n)
        if summary.weighted:
            cells, values = yield from _bisect_by_weight(
                xs,
                np.array([0, summary.n]),
                np.array([0.0, summary.weight]),
                depth + 1,
                fail("x"),
                lambda level: f"IRGI: x order statistics, level {level + 1} of {depth + 1}",
            )
        else:
            cells, values = yield from _bisect_by_rank(
                xs, np.array([0, summary.n]), depth + 1, fail("x"), "IRGI: x order statistics"
            )
        split = cells[1:-1]
        low = _at(values, split - 1)
        x_edges = np.concatenate(
            ([domain[0][0]], _midpoint(low, _at(values, split)), [domain[0][1]])
        )
        centres = x_edges[0::2]
        boundaries = np.concatenate(([domain[0][0]], x_edges[1::2], [domain[0][1]]))
        _check_x_ties(centres, boundaries, depth)

        # y: per column (events with x up to the value below each boundary split)
        axis = _Axis("y", low[0::2])
        ys = self._search(axis, summary, summary.y_range)
        counts, weights = ys.set_root(
            (yield self._request("IRGI: y histograms per column", [ys.root_part()])), summary.n
        )
        column_weight = weights.astype(np.float64)
        _check_column_weight(column_weight, boundaries)
        column_bounds = np.concatenate(([0], np.cumsum(counts)))
        if summary.weighted:
            rows, values = yield from _bisect_by_weight(
                ys,
                column_bounds,
                np.concatenate(([0.0], np.cumsum(column_weight))),
                depth,
                fail("y"),
                lambda level: f"IRGI: y order statistics per column, level {level + 1} of {depth}",
            )
        else:
            rows, values = yield from _bisect_by_rank(
                ys, column_bounds, depth, fail("y"), "IRGI: y order statistics per column"
            )
        n_col, n_edge = len(centres), 2**depth + 1
        inner = rows[:-1].reshape(n_col, n_edge - 1)[:, 1:]
        y_edges = np.empty((n_col, n_edge))
        y_edges[:, 0], y_edges[:, -1] = domain[1]
        y_edges[:, 1:-1] = _midpoint(_at(values, inner - 1), _at(values, inner))

        # the weight strictly below every inner edge, per column
        weight_below = np.zeros((n_col, n_edge - 2))
        if n_edge > 2:
            partial = yield self._request(
                "IRGI: weight below the y edges per column", [_BelowPart(axis, y_edges[:, 1:-1])]
            )
            weight_below = np.cumsum(partial.sums["below"], axis=1)[:, : n_edge - 2]
        cdf = _column_cdf(weight_below, column_weight)
        t._set_grid(domain, depth, centres, boundaries, y_edges, cdf, column_weight)
        t.selection_ = None
        self._finish(t, summary)

    # ---------------------------------------------------------------- GridKDE
    def _grid_kde_plan(self, t: GridKDE) -> Plan:
        sigma_r, degree, levels, per, most = t._checked()
        assert sigma_r is not None
        summary = yield from self._summary("GridKDE", None)
        summary.check(at_least=2)
        summary.check_not_constant()
        x_lo, x_hi = summary.x_range
        shift = min(max(summary.weight_x / summary.weight, x_lo), x_hi)
        largest = max(abs(x_lo), abs(x_hi))
        scale = math.ldexp(1.0, -math.frexp(largest)[1]) if largest > 1e100 else 1.0

        ys = self._search(_Axis("y"), summary, summary.y_range)
        partial = yield self._request(
            "GridKDE: y histogram and x moments", [ys.root_part(), _MomentPart(shift, scale)]
        )
        ys.set_root(partial, summary.n)
        sigma_a = _absolute_sigma(partial.sums["moments"], summary, scale)
        fine = yield from self._fine_edges(ys, summary, fine_edge_count(summary.n, levels))
        self.y_fine_edges_ = fine

        bandwidth = sigma_r * sigma_a
        nodes = lp.node_grid(x_lo, x_hi, bandwidth / per, most)
        partial = yield self._request("GridKDE: binned weight on the grid", [_BinPart(nodes, fine)])
        grid = grid_columns(
            nodes, bandwidth, degree, fine, partial.sums["mass"], partial.sums["below"], levels
        )
        t._set_grid((summary.x_range, summary.y_range), sigma_r, sigma_a, degree, None, grid)
        self._finish(t, summary)

    def _fine_edges(
        self, ys: _OrderSearch, summary: _Summary, n_bins: int
    ) -> Generator[Request, Partial, Array]:
        """:func:`~rosenblatt.transforms._local_polynomial.y_edges` of the whole sample."""
        n = summary.n
        total = summary.weight if summary.weighted else float(n)
        targets = total * np.arange(1, n_bins) / n_bins
        values: dict[int, float] = {}
        if summary.weighted:
            crossing = [_Query(0, float(target), n) for target in targets]
            yield from ys.resolve([q for q in crossing if _target(q) > 0], "GridKDE: y quantiles")
            found = np.array([q.found if q.done else 0 for q in crossing])
            cut = np.clip(found, 1, n - 1)
            for q, c in zip(crossing, cut, strict=True):
                if q.done and c == q.found and q.value is not None:
                    values[int(c) - 1] = q.value
        else:
            cut = np.clip(np.ceil(targets).astype(np.int64), 1, n - 1)
        queries = [_Query(p) for p in np.union1d(cut - 1, cut).tolist() if p not in values]
        yield from ys.resolve(queries, "GridKDE: y quantiles, values at the cuts")
        values.update({q.position: _value(q) for q in queries})
        inner = 0.5 * (_at(values, cut - 1) + _at(values, cut))
        y_lo, y_hi = summary.y_range
        return np.unique(np.concatenate(([y_lo], inner, [y_hi])))

    def _finish(self, t: ConditionalCDFTransform, summary: _Summary) -> None:
        t.n_events_ = summary.n
        t.sum_weight_ = summary.weight if summary.weighted else float(summary.n)


def _check_outside(summary: _Summary, domain: Domain | None) -> None:
    if domain is None:
        return
    for n_out, (lo, hi), name in zip(summary.outside, domain, ("x", "y"), strict=True):
        if n_out:
            msg = (
                f"{n_out} defining event(s) have {name} outside the domain [{lo:g}, {hi:g}]; "
                "widen the domain or leave it to the sample range"
            )
            raise ValueError(msg)


def _check_x_ties(centres: Array, boundaries: Array, depth: int) -> None:
    for edges in (boundaries, centres):
        flat = np.flatnonzero(np.diff(edges) <= 0)
        if len(flat):
            value = edges[flat[0]]
            msg = (
                f"x has too many tied values for depth {depth}: the events at x = {value:g} "
                "fill more than a cell of the bisection, so IRGI columns coincide; use a "
                "smaller depth or KDE"
            )
            raise ValueError(msg)
