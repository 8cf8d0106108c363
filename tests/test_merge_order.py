"""The exact order statistics of a sample seen in chunks, against numpy's sort and quantiles.

The search of :mod:`rosenblatt.outofcore._order` runs here in this
process: chunks write their skims and histogram, groups are sorted by
:class:`~rosenblatt.outofcore._tasks.SortTask`, and the windows they
report answer ranks, weighted quantiles and the recursive bisection exactly,
on random chunkings, with unit, integer, float and negative weights, and
with ties.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest

from rosenblatt.exceptions import NotCovered
from rosenblatt.outofcore._first_pass import Facts, Request
from rosenblatt.outofcore._order import (
    Cumulative,
    bisect_exact,
    bisection_intervals,
    first_crossings,
    merge_intervals,
    plan_groups,
    quantile_intervals,
)
from rosenblatt.outofcore._skims import SkimStore
from rosenblatt.outofcore._tasks import Layout, Member, MemberAsk, SortTask, WindowTask
from rosenblatt.transforms._bisection import bisect_segments


def sample(kind: str, n: int, seed: int) -> tuple[np.ndarray, np.ndarray | None]:
    rng = np.random.default_rng(seed)
    x = rng.standard_t(3, n)
    if kind == "ties":
        x = np.round(x, 1)
    weights = {
        "unit": None,
        "ties": None,
        "integer": rng.integers(0, 4, n).astype(np.float64),
        "float": rng.normal(1.0, 0.5, n),  # about 2% negative
    }
    return x, weights[kind]


class Search:
    """The order of ``x`` in chunks: skims, groups sorted in this process, windows on request."""

    def __init__(
        self, folder: Path, x: np.ndarray, w: np.ndarray | None, n_chunks: int, seed: int
    ) -> None:
        rng = np.random.default_rng(seed)
        cuts = np.sort(rng.choice(np.arange(1, len(x)), n_chunks - 1, replace=False))
        store, _ = SkimStore.create(folder)
        request = Request("t:0", "reading", store, 0, None, int(rng.integers(16, 200)))
        parts = [
            request(xc, np.zeros(len(xc)), None if w is None else wc, ordinal=k)
            for k, (xc, wc) in enumerate(
                zip(
                    np.split(x, cuts),
                    np.split(np.ones(len(x)) if w is None else w, cuts),
                    strict=True,
                )
            )
        ]
        permutation = rng.permutation(len(parts))  # any order of additions
        total = parts[permutation[0]]
        for k in permutation[1:]:
            total = parts[k] + total
        self.facts = Facts.of(total)
        self.groups = plan_groups(self.facts.sketch, int(rng.integers(20, 2000)))
        self.layout = Layout(store, 1, 0, self.facts.chunks)
        self.weighted = w is not None
        self.largest = self.facts.weights.largest if self.weighted else 1.0
        self.margin = 1e-9 * self.facts.weights.total_abs if self.weighted else 0.0
        self.sorted = False
        self.cumulative: Cumulative | None = None

    def fetch(self, intervals: np.ndarray) -> Cumulative:
        """One pass of windows around ``intervals`` (sorting the groups the first time)."""
        reports = []
        for g in self.groups:
            offset = g.weight_before if self.weighted else float(g.start)
            if self.cumulative is not None:
                offset = float(self.offsets[g.index])
            ask = MemberAsk(Member(), None, intervals, offset, self.largest + self.margin)
            task = (WindowTask if self.sorted else SortTask)(f"g{g.index}", self.layout, g, (ask,))
            reports.append(task.run())
        self.sorted = True
        totals = np.array([r.stats["nominal"][0] for r in reports])
        self.offsets = np.concatenate(([0.0], np.cumsum(totals)[:-1]))
        if self.cumulative is None:
            self.cumulative = Cumulative(self.facts.n, float(np.cumsum(totals)[-1]), self.largest)
        for g, r in zip(self.groups, reports, strict=True):
            found = r.windows["nominal"]
            offset = self.offsets[g.index]
            self.cumulative.add(
                found.position, offset + found.before, offset + found.after, found.value
            )
        self.cumulative.cover(intervals)
        return self.cumulative


def in_memory_order(x: np.ndarray, w: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """The values in order (ties in input order) and the cumulative weight before each position."""
    order = np.argsort(x, kind="stable")
    weights = np.ones(len(x)) if w is None else w[order]
    return x[order], np.concatenate(([0.0], np.cumsum(weights)))


CASES = [
    (kind, n_chunks, seed)
    for seed, (kind, n_chunks) in enumerate(
        [("unit", 1), ("unit", 7), ("ties", 5), ("integer", 3), ("integer", 11), ("float", 6)]
    )
]


@pytest.mark.parametrize(("kind", "n_chunks", "seed"), CASES)
def test_ranks_and_quantiles_equal_numpy(
    tmp_path: Path, kind: str, n_chunks: int, seed: int
) -> None:
    x, w = sample(kind, 30_000, seed)
    search = Search(tmp_path, x, w, n_chunks, seed)
    xs, cumulative = in_memory_order(x, w)
    total = cumulative[-1]
    levels = np.linspace(0.0, 1.0, 41)[1:-1]
    targets = total * levels
    found = search.fetch(quantile_intervals(targets, total, search.margin))
    positions = first_crossings(found, targets, 1, len(x))
    expected = np.searchsorted(np.maximum.accumulate(cumulative), targets, side="left")
    np.testing.assert_array_equal(positions, expected)
    np.testing.assert_array_equal(found.values(positions - 1), xs[positions - 1])
    np.testing.assert_allclose(found.at(positions), cumulative[positions], rtol=1e-12, atol=1e-9)
    if kind in ("unit", "ties"):
        np.testing.assert_array_equal(
            found.values(positions - 1), np.quantile(x, levels, method="inverted_cdf")
        )
    if kind == "integer":
        weighted = np.quantile(x, levels, method="inverted_cdf", weights=w)
        np.testing.assert_array_equal(found.values(positions - 1), weighted)


@pytest.mark.parametrize(("kind", "n_chunks", "seed"), CASES)
def test_bisection_equals_the_in_memory_bisection(
    tmp_path: Path, kind: str, n_chunks: int, seed: int
) -> None:
    x, w = sample(kind, 30_000, seed)
    search = Search(tmp_path, x, w, n_chunks, seed + 100)
    xs, cumulative = in_memory_order(x, w)
    levels = 6
    total = search.facts.weights.total if search.weighted else float(len(x))
    bounds = np.array([[0.0, 0.0], [total - search.margin, total + search.margin]])
    found = search.fetch(bisection_intervals(bounds, levels, search.largest, search.margin))
    cells, c = bisect_exact(found, levels)
    expected = bisect_segments(None if w is None else cumulative, np.array([0, len(x)]), levels)
    np.testing.assert_array_equal(cells, expected)
    np.testing.assert_allclose(c, cumulative[expected], rtol=1e-12, atol=1e-9)
    splits = cells[1:-1]
    np.testing.assert_array_equal(found.values(splits - 1), xs[splits - 1])
    np.testing.assert_array_equal(found.values(splits), xs[splits])


def test_missing_windows_are_named_and_fetched(tmp_path: Path) -> None:
    x, w = sample("float", 20_000, 3)
    search = Search(tmp_path, x, w, 4, 3)
    total = search.facts.weights.total
    found = search.fetch(np.array([[0.0, 0.0]]))  # no interval near the splits
    with pytest.raises(NotCovered) as missing:
        bisect_exact(found, 5)
    found = search.fetch(missing.value.intervals)
    cells, _ = bisect_exact(found, 5)
    _, cumulative = in_memory_order(x, w)
    np.testing.assert_array_equal(cells, bisect_segments(cumulative, np.array([0, len(x)]), 5))
    assert total == pytest.approx(cumulative[-1], rel=1e-12)


def test_groups_cover_the_sample_in_order(tmp_path: Path) -> None:
    x, w = sample("ties", 10_000, 4)
    search = Search(tmp_path, x, w, 5, 4)
    groups = search.groups
    assert sum(g.count for g in groups) == len(x)
    assert [g.start for g in groups] == list(np.cumsum([0] + [g.count for g in groups[:-1]]))
    assert all(a.high < b.low for a, b in itertools.pairwise(groups))
    assert len(search.facts.sketch.keys) <= 200


def test_merged_intervals() -> None:
    merged = merge_intervals(np.array([[5.0, 6.0], [0.0, 2.0], [1.0, 3.0], [6.0, 7.0]]))
    np.testing.assert_array_equal(merged, [[0.0, 3.0], [5.0, 7.0]])
    assert merge_intervals(np.zeros((0, 2))).shape == (0, 2)
