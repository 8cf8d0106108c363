"""Tabulation of a conditional CDF that is a staircase in ``y``, for the correctionlib export.

A kernel estimate is such a staircase: at any ``x`` it jumps at every
defining score ``u_j`` (to the weight of the scores ``<= u_j``) and is flat in
between. A transform that provides ``staircase()`` (see :class:`Staircase`)
is tabulated on ``x`` nodes, refined until linear interpolation between
neighbouring nodes is within a tolerance, and at each node on the vertices of
a piecewise-linear approximation of the staircase within a tolerance
(Ramer-Douglas-Peucker on the staircase's vertices).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import TYPE_CHECKING, Protocol

import numpy as np

from rosenblatt._extras import progress_bar
from rosenblatt.typing import BoolArray, FloatArray, IntArray

if TYPE_CHECKING:
    from rosenblatt.correctionlib._numbers import ExactNumbers

__all__ = ["Staircase", "staircase_columns", "staircase_x_nodes"]

#: elements of the largest temporary array
BLOCK_ELEMENTS = 2_000_000
#: floats tried below a step for a vertex position that correctionlib reads exactly
RELOCATION_TRIES = 16

Column = tuple[FloatArray, FloatArray, FloatArray]


class Staircase(Protocol):
    """A conditional CDF that is a staircase in ``y`` (a transform's ``staircase()``)."""

    #: where it steps, increasing; it is flat in between
    levels: FloatArray
    #: the scale in ``x`` over which it changes
    x_scale: float

    def cdf(self, xq: FloatArray) -> FloatArray:
        """``gamma(xq[i], levels[j])`` as an array ``(len(xq), len(levels))``."""
        ...

    def blocks(self, xq: FloatArray) -> Iterator[tuple[int, FloatArray]]:
        """:meth:`cdf` of consecutive blocks of ``xq``, with the first index of each."""
        ...


def staircase_x_nodes(
    steps: Staircase,
    lo: float,
    hi: float,
    spacing: float,
    tolerance: float,
    max_nodes: int,
    progress: bool = False,
) -> FloatArray:
    """``x`` nodes from ``lo`` to ``hi`` refined until linear interpolation is within ``tolerance``.

    Starting from a regular grid of the given spacing, each interval is
    bisected while ``gamma`` at its midpoint differs from the mean of its ends
    by more than ``tolerance`` at any defining score.
    """
    n_start = max(2, math.ceil((hi - lo) / spacing) + 1)
    if n_start > max_nodes:
        msg = (
            f"the table needs at least {n_start} x nodes, more than max_x_nodes = "
            f"{max_nodes}; use a larger x_step or raise max_x_nodes"
        )
        raise ValueError(msg)
    nodes = np.linspace(lo, hi, n_start)
    nodes[-1] = hi
    accepted = [nodes]
    n_nodes = n_start
    a, b = nodes[:-1], nodes[1:]
    bar = progress_bar(desc="x intervals checked", unit="interval", disable=not progress)
    while len(a):
        mid = 0.5 * (a + b)
        error = np.concatenate(
            [
                np.abs(
                    steps.cdf(mid[s : s + len(fa)]) - 0.5 * (fa + steps.cdf(b[s : s + len(fa)]))
                ).max(axis=1)
                for s, fa in steps.blocks(a)
            ]
        )
        split = (error > tolerance) & (mid > a) & (mid < b)
        new = mid[split]
        n_nodes += len(new)
        if n_nodes > max_nodes:
            msg = (
                f"the table needs more than max_x_nodes = {max_nodes} x nodes for a "
                f"tolerance of {tolerance:g} in x; use a larger tolerance or raise max_x_nodes"
            )
            raise ValueError(msg)
        accepted.append(new)
        bar.update(len(a))
        a, b = np.concatenate((a[split], new)), np.concatenate((new, b[split]))
    bar.close()
    return np.unique(np.concatenate(accepted))


def staircase_vertices(
    levels: FloatArray,
) -> tuple[FloatArray, IntArray, BoolArray]:
    """Vertices of the staircase from the first defining score to just below the last.

    Before each score ``u_(j+1)`` the staircase has the value ``F_j`` at the
    largest float below it (a *pre-step* vertex) and ``F_(j+1)`` at the score;
    it is linear between the vertices. Returns the positions, the index ``j``
    of each vertex's value and whether it is a pre-step vertex.
    """
    m = len(levels)
    if m < 2:
        return np.empty(0), np.empty(0, dtype=np.intp), np.empty(0, dtype=bool)
    position = np.empty(2 * m - 2)
    source = np.empty(2 * m - 2, dtype=np.intp)
    pre_step = np.zeros(2 * m - 2, dtype=bool)
    position[0::2] = levels[:-1]
    position[1::2] = np.nextafter(levels[1:], -np.inf)
    source[0::2] = source[1::2] = np.arange(m - 1)
    pre_step[1::2] = True
    keep = np.insert(position[1:] > position[:-1], 0, True)
    return position[keep], source[keep], pre_step[keep]


def simplify(position: FloatArray, values: FloatArray, tolerance: float) -> list[IntArray]:
    """Vertices to keep per row so that linear interpolation stays within ``tolerance``.

    Every row of ``values`` is a polyline over ``position``; segments are split
    at their farthest vertex until none is farther than ``tolerance`` from its
    chord (Ramer-Douglas-Peucker), all rows and segments at once.
    """
    n_rows, n_vertices = values.shape
    if n_vertices <= 2:
        return [np.arange(n_vertices)] * n_rows
    flat = values.ravel()
    row_start = np.arange(n_rows) * n_vertices
    kept = np.sort(np.concatenate((row_start, row_start + n_vertices - 1)))
    active = (row_start[:, None] + np.arange(1, n_vertices - 1)).ravel()
    while len(active):
        right = np.searchsorted(kept, active)
        a, b = kept[right - 1], kept[right]
        pa = position[a % n_vertices]
        pb = position[b % n_vertices]
        chord = flat[a] + (flat[b] - flat[a]) * ((position[active % n_vertices] - pa) / (pb - pa))
        deviation = np.abs(chord - flat[active])
        starts = np.flatnonzero(np.insert(right[1:] != right[:-1], 0, True))
        worst = np.repeat(
            np.maximum.reduceat(deviation, starts), np.diff(np.append(starts, len(right)))
        )
        still_open = worst > tolerance
        farthest = np.flatnonzero(still_open & (deviation == worst))
        if len(farthest) == 0:
            break
        farthest = farthest[np.insert(right[farthest][1:] != right[farthest][:-1], 0, True)]
        kept = np.union1d(kept, active[farthest])
        still_open[farthest] = False
        active = active[still_open]
    rows = kept // n_vertices
    return np.split(kept % n_vertices, np.searchsorted(rows, np.arange(1, n_rows)))


class _PreStepPositions:
    """Where to put the vertex before each step so that correctionlib reads it exactly.

    The staircase is flat from ``u_j`` up to ``u_(j+1)``, so the vertex that
    ends the flat part may sit at any float of ``(u_j, u_(j+1))``; the largest
    one that correctionlib reads exactly, and reads below its reading of
    ``u_(j+1)``, is taken.
    """

    def __init__(self, levels: FloatArray, numbers: ExactNumbers) -> None:
        self.levels = levels
        self.numbers = numbers
        self._cache: dict[int, float] = {}

    def __call__(self, j: int) -> float:
        if j not in self._cache:
            low, step = float(self.levels[j]), float(self.levels[j + 1])
            candidate = math.nextafter(min(step, self.numbers.read(step)), -math.inf)
            chosen = math.nextafter(step, -math.inf)
            for _ in range(RELOCATION_TRIES):
                if candidate <= low:
                    break
                if self.numbers.is_exact(candidate):
                    chosen = candidate
                    break
                candidate = math.nextafter(candidate, -math.inf)
            self._cache[j] = chosen
        return self._cache[j]


def staircase_columns(
    steps: Staircase,
    x_nodes: FloatArray,
    tolerance: float,
    numbers: ExactNumbers,
    progress: bool,
) -> list[Column]:
    """Piecewise-linear approximations ``(nodes, start, end)`` of the staircase at each node.

    Segment ``i`` starts at ``nodes[i]`` with the value ``start[i]`` and ends
    just below the next node with ``end[i]``. A vertex that ends a flat part
    before a step sits where correctionlib reads it exactly, and when the step
    follows it the segment up to the step is flat.
    """
    position, source, pre_step = staircase_vertices(steps.levels)
    pre_step_at = _PreStepPositions(steps.levels, numbers)
    columns: list[Column] = []
    rows = max(1, BLOCK_ELEMENTS // max(len(position), 1))
    bar = progress_bar(total=len(x_nodes), desc="columns", unit="node", disable=not progress)
    for start in range(0, len(x_nodes), rows):
        cdf = steps.cdf(x_nodes[start : start + rows])
        if np.any(np.diff(cdf, axis=1) < 0):
            msg = (
                "gamma decreases with y at some x (negative weights): it is not a "
                "conditional CDF and cannot be tabulated"
            )
            raise ValueError(msg)
        values = cdf[:, source]
        for row, keep in zip(values, simplify(position, values, tolerance), strict=True):
            nodes, value = position[keep], row[keep]
            end = np.append(value[1:], value[-1:])
            jump = np.flatnonzero(pre_step[keep][:-1] & (np.diff(keep) == 1))
            end[jump] = value[jump]
            pre = np.flatnonzero(pre_step[keep])
            nodes[pre] = [pre_step_at(int(j)) for j in source[keep][pre]]
            columns.append((nodes, value, end))
        bar.update(len(cdf))
    bar.close()
    return columns
