"""Exact order statistics and weighted quantiles of a sample held in pieces.

The events are ordered by one value (ties by their global number). A
histogram of that value (:class:`~rosenblatt.outofcore._first_pass.Sketch`)
cuts the order into :class:`Group` s of consecutive events; a worker sorts
each group. ``C(p)``, the summed weight of the first ``p`` events, is then
known exactly wherever a worker reports it: each group reports its total
(``C`` at the group boundaries follows) and the events whose cumulative
weight falls in requested intervals (their *windows*).

The intervals are chosen before the exact values are known. For the
quantiles of GridKDE and of the first level of IRGI's nested cells the
targets are fixed fractions of the total weight. For IRGI's recursive
bisection, where each split's target depends on the weight at the splits
above it, :func:`bisection_intervals` propagates bounds: a first crossing
``p`` of a target ``t`` has ``C(p)`` within one event's weight of ``t``, so
every split's ``C`` and every target below it lie in intervals a few event
weights wide, and one pass of windows answers every level at once.
:class:`Cumulative` then runs the bisection exactly on what the windows
returned; where an interval was too narrow (negative weights can make it so)
it raises :class:`NotCovered` and the fit asks for the missing windows in
one more pass.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from rosenblatt.exceptions import NotCovered
from rosenblatt.outofcore._first_pass import Sketch
from rosenblatt.typing import BoolArray, FloatArray, Int64Array

__all__ = [
    "Cumulative",
    "Group",
    "bisect_exact",
    "bisection_intervals",
    "first_crossings",
    "merge_intervals",
    "plan_groups",
    "quantile_intervals",
    "window_mask",
]


#: relative shift of a bisection target below the half weight (as in the in-memory fit)
TARGET_SHIFT = 1e-9


@dataclass(frozen=True)
class Group:
    """Consecutive events in the order: values from ``low`` to ``high``.

    ``start`` is the position of the first, ``count`` the number of events
    and ``weight_before`` the sample's summed weight before the first, as the
    histogram estimates it (exact for unit and integer weights).
    """

    index: int
    low: float
    high: float
    start: int
    count: int
    weight_before: float


def plan_groups(sketch: Sketch, target: int) -> list[Group]:
    """Cut the histogram's bins into groups of about ``target`` events (a fuller bin is one group)."""
    before = np.cumsum(sketch.count) - sketch.count
    label = before // max(int(target), 1)
    starts = np.flatnonzero(np.concatenate(([True], label[1:] != label[:-1])))
    stops = np.concatenate((starts[1:], [len(label)]))
    weight_before = np.cumsum(sketch.weight) - sketch.weight
    return [
        Group(
            index,
            float(sketch.vmin[a]),
            float(sketch.vmax[b - 1]),
            int(before[a]),
            int(sketch.count[a:b].sum()),
            float(weight_before[a]),
        )
        for index, (a, b) in enumerate(zip(starts.tolist(), stops.tolist(), strict=True))
    ]


def merge_intervals(intervals: FloatArray) -> FloatArray:
    """The union of closed intervals ``(m, 2)`` as disjoint intervals, increasing."""
    if len(intervals) == 0:
        return np.zeros((0, 2))
    ordered = intervals[np.argsort(intervals[:, 0], kind="stable")]
    reach = np.maximum.accumulate(ordered[:, 1])
    new = np.concatenate(([True], ordered[1:, 0] > reach[:-1]))
    starts = np.flatnonzero(new)
    ends = np.concatenate((starts[1:], [len(ordered)])) - 1
    return np.column_stack((ordered[starts, 0], reach[ends]))


def _inside(values: FloatArray, intervals: FloatArray) -> BoolArray:
    """Whether each value lies in one of the disjoint increasing ``intervals``."""
    if len(intervals) == 0:
        return np.zeros(len(values), dtype=bool)
    k = np.searchsorted(intervals[:, 0], values, side="right") - 1
    inside: BoolArray = (k >= 0) & (values <= intervals[np.maximum(k, 0), 1])
    return inside


def window_mask(
    before: FloatArray, after: FloatArray, intervals: FloatArray, widen: float
) -> BoolArray:
    """The events whose weight before or after them lies in ``intervals`` widened by ``widen``.

    ``before`` and ``after`` are on the scale of the intervals (the group's
    offset added).
    """
    wide = merge_intervals(intervals + np.array([-widen, widen]))
    return _inside(before, wide) | _inside(after, wide)


def bisection_intervals(
    bounds: FloatArray, levels: int, largest: float, margin: float
) -> FloatArray:
    """Intervals that hold ``C`` at every split of ``levels`` bisection levels below ``bounds``.

    Parameters
    ----------
    bounds
        ``(m + 1, 2)``: lower and upper bound of ``C`` at the boundaries of
        ``m`` cells.
    levels
        Bisection levels.
    largest
        The largest absolute weight of an event.
    margin
        Rounding allowance of the targets.

    Returns
    -------
    numpy.ndarray
        ``(q, 2)`` intervals, the boundaries' own included.
    """
    out = [bounds]
    b = bounds
    for _ in range(levels):
        lo, hi = b[:-1], b[1:]
        spread = np.maximum(np.abs(hi[:, 1] - lo[:, 0]), np.abs(hi[:, 0] - lo[:, 1]))
        t_lo = 0.5 * (lo[:, 0] + hi[:, 0]) - TARGET_SHIFT * spread - margin
        t_hi = 0.5 * (lo[:, 1] + hi[:, 1]) + margin
        mid = np.column_stack((t_lo - largest, t_hi + largest))
        out.append(mid)
        interleaved = np.empty((2 * len(b) - 1, 2))
        interleaved[0::2], interleaved[1::2] = b, mid
        b = interleaved
    return np.concatenate(out)


def quantile_intervals(targets: FloatArray, total: float, margin: float) -> FloatArray:
    """Intervals around fixed targets of ``C`` (and around ``0`` and the total)."""
    points = np.concatenate(([0.0, total], targets))
    return np.column_stack((points - margin, points + margin))


class Cumulative:
    """``C(p)`` and the ordered values at the positions that windows returned.

    Parameters
    ----------
    n, total
        Events and summed weight of the sample.
    largest
        The largest absolute weight of an event.
    """

    def __init__(self, n: int, total: float, largest: float) -> None:
        self.n, self.total, self.largest = n, total, largest
        self.position = np.zeros(0, dtype=np.int64)
        self.before = np.zeros(0)
        self.after = np.zeros(0)
        self.value = np.zeros(0)
        self.covered = np.zeros((0, 2))
        self._points: tuple[Int64Array, FloatArray, FloatArray] | None = None

    def add(
        self, position: Int64Array, before: FloatArray, after: FloatArray, value: FloatArray
    ) -> None:
        """Add the events of windows: position, ``C`` before and after each, and its value."""
        keep = np.isin(position, self.position, invert=True)
        merged = [
            np.concatenate((old, new[keep]))
            for old, new in (
                (self.position, position),
                (self.before, before),
                (self.after, after),
                (self.value, value),
            )
        ]
        order = np.argsort(merged[0], kind="stable")
        self.position = merged[0][order].astype(np.int64)
        self.before, self.after, self.value = (a[order].astype(np.float64) for a in merged[1:])
        self._points = None

    def cover(self, intervals: FloatArray) -> None:
        """Record that every event with ``C`` before or after it in ``intervals`` widened by the largest weight is in."""
        wide = np.column_stack((intervals[:, 0] - self.largest, intervals[:, 1] + self.largest))
        self.covered = merge_intervals(np.concatenate((self.covered, wide)))

    def _known(self) -> tuple[Int64Array, FloatArray, FloatArray]:
        """Positions where ``C`` is known, ``C`` there and its running maximum."""
        if self._points is None:
            position = np.concatenate(([0, self.n], self.position, self.position + 1))
            value = np.concatenate(([0.0, self.total], self.before, self.after))
            unique, first = np.unique(position, return_index=True)
            c = value[first]
            self._points = (unique, c, np.maximum.accumulate(c))
        return self._points

    def at(self, positions: Int64Array) -> FloatArray:
        """``C`` at ``positions``."""
        known, c, _ = self._known()
        k = np.clip(np.searchsorted(known, positions), 0, len(known) - 1)
        missing = known[k] != positions
        if missing.any():
            raise NotCovered(np.zeros((0, 2)))
        out: FloatArray = c[k]
        return out

    def values(self, positions: Int64Array) -> FloatArray:
        """The ordered values at ``positions``."""
        k = np.clip(np.searchsorted(self.position, positions), 0, max(len(self.position) - 1, 0))
        if len(self.position) == 0 or np.any(self.position[k] != positions):
            raise NotCovered(np.zeros((0, 2)))
        out: FloatArray = self.value[k]
        return out

    def first_at_least(self, targets: FloatArray) -> Int64Array:
        """The first position ``p`` with ``C(p) >= t`` for each target (``n + 1`` if none).

        Raises
        ------
        NotCovered
            If a target's first crossing may lie outside the windows.
        """
        known, _, running = self._known()
        needs = targets > 0
        wide = self.covered
        k = np.searchsorted(wide[:, 0], targets, side="right") - 1 if len(wide) else None
        if k is None:
            covered = ~needs
        else:
            inside = (k >= 0) & (targets + self.largest <= wide[np.maximum(k, 0), 1])
            covered = inside | ~needs
        if not covered.all():
            missing = targets[~covered]
            raise NotCovered(np.column_stack((missing, missing)))
        index = np.searchsorted(running, targets, side="left")
        found = np.where(index < len(known), known[np.minimum(index, len(known) - 1)], self.n + 1)
        return found.astype(np.int64)


def bisect_exact(cumulative: Cumulative, levels: int) -> tuple[Int64Array, FloatArray]:
    """The recursive bisection of the whole order: split positions and ``C`` at them.

    The same arithmetic as :func:`~rosenblatt.transforms._bisection.bisect_segments`
    (a target a hair below half the cell's weight, its first crossing, the
    split kept inside the cell), on the exact ``C`` of the windows.

    Raises
    ------
    ValueError
        If a cell holds fewer than two events when it must be split.
    NotCovered
        If the windows miss a split; its ``intervals`` are those to fetch.
    """
    idx = np.array([0, cumulative.n], dtype=np.int64)
    c = np.array([0.0, cumulative.total])
    for level in range(levels):
        lo, hi = idx[:-1], idx[1:]
        if np.any(hi - lo < 2):
            n_small = int(np.count_nonzero(hi - lo < 2))
            msg = f"{n_small} bisection cell(s) hold fewer than two events and cannot be split"
            raise ValueError(msg)
        a, b = c[:-1], c[1:]
        target = 0.5 * (a + b)
        target -= TARGET_SHIFT * np.abs(b - a)
        try:
            mid = np.clip(cumulative.first_at_least(target), lo + 1, hi - 1)
            c_mid = cumulative.at(mid)
        except NotCovered as err:
            exact = np.column_stack((c, c))
            raise NotCovered(
                bisection_intervals(exact, levels - level, cumulative.largest, 0.0)
            ) from err
        idx = _interleave(idx, mid).astype(np.int64)
        c = _interleave(c, c_mid).astype(np.float64)
    return idx, c


def first_crossings(cumulative: Cumulative, targets: FloatArray, low: int, high: int) -> Int64Array:
    """First crossings of fixed targets, kept in ``[low, high]``.

    Raises
    ------
    NotCovered
        With the intervals around the targets to fetch.
    """
    try:
        found = cumulative.first_at_least(targets)
    except NotCovered as err:
        raise NotCovered(quantile_intervals(targets, cumulative.total, 0.0)) from err
    return np.clip(found, low, high)


def _interleave(bounds: NDArray[np.generic], inner: NDArray[np.generic]) -> NDArray[np.generic]:
    out = np.empty(2 * len(bounds) - 1, dtype=bounds.dtype)
    out[0::2] = bounds
    out[1::2] = inner
    return out
