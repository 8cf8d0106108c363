"""IRGI: the grid of the method, checked against a direct recursive construction."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest
from gaussian_blob import bivariate_normal, exact_gamma

import rosenblatt as rb

pytestmark = pytest.mark.core


def reference_bisection(values: np.ndarray, levels: int) -> list[float]:
    """Interior edges of a plain recursive median bisection of sorted ``values``."""
    if levels == 0:
        return []
    mid = (len(values) + 1) // 2
    edge = 0.5 * (values[mid - 1] + values[mid])
    return [
        *reference_bisection(values[:mid], levels - 1),
        edge,
        *reference_bisection(values[mid:], levels - 1),
    ]


def reference_gamma(x: np.ndarray, y: np.ndarray, depth: int, xq: float, yq: float) -> float:
    """gamma of the method written out event by event (unit weights, distinct values)."""
    order = np.argsort(x)
    xs, ys = x[order], y[order]
    x_edges = [xs[0], *reference_bisection(xs, depth + 1), xs[-1]]
    centres = x_edges[0::2]
    boundaries = [xs[0], *x_edges[1::2], xs[-1]]
    columns = []
    for k in range(len(centres)):
        inside = (xs >= boundaries[k]) & (xs <= boundaries[k + 1])
        col = np.sort(ys[inside])
        edges = [y.min(), *reference_bisection(col, depth), y.max()]
        cdf = [np.mean(col < e) for e in edges]
        cdf[0], cdf[-1] = 0.0, 1.0
        columns.append((edges, cdf))
    k = min(max(int(np.searchsorted(centres, xq, side="right")) - 1, 0), len(centres) - 2)
    t = min(max((xq - centres[k]) / (centres[k + 1] - centres[k]), 0.0), 1.0)
    g0 = np.interp(yq, *columns[k])
    g1 = np.interp(yq, *columns[k + 1])
    return float((1 - t) * g0 + t * g1)


@pytest.mark.parametrize("depth", [1, 2, 3])
def test_matches_reference_construction(depth: int) -> None:
    x, y = bivariate_normal(2 ** (2 * depth + 3) + 37, seed=depth)
    t = rb.IRGI(depth).fit(x, y)
    rng = np.random.default_rng(5)
    xq, yq = rng.normal(size=200), rng.normal(size=200)
    expected = [reference_gamma(x, y, depth, a, b) for a, b in zip(xq, yq, strict=True)]
    np.testing.assert_allclose(t.transform(xq, yq), expected, atol=1e-12)


def test_grid_shape_and_equal_occupancy() -> None:
    x, y = bivariate_normal(2**15, seed=1)
    depth = 5
    t = rb.IRGI(depth).fit(x, y)
    n_col = 2**depth + 1
    assert t.x_centres_.shape == (n_col,)
    assert t.x_boundaries_.shape == (n_col + 1,)
    assert t.y_edges_.shape == (n_col, 2**depth + 1)
    # outer columns are half-columns centred on the domain edges
    assert t.x_centres_[0] == x.min()
    assert t.x_centres_[-1] == x.max()
    np.testing.assert_allclose(t.column_weight_[1:-1], 2**15 / 2**depth, atol=1)
    np.testing.assert_allclose(t.column_weight_[[0, -1]], 2**15 / 2 ** (depth + 1), atol=1)
    # equal occupancy in y inside every column
    np.testing.assert_allclose(
        np.diff(t.cdf_, axis=1), 1 / 2**depth, atol=2 / t.column_weight_.min()
    )
    assert np.all(t.x_boundaries_[1:-1] > t.x_centres_[:-1])
    assert np.all(t.x_boundaries_[1:-1] < t.x_centres_[1:])


def test_grid_as_histograms() -> None:
    x, y = bivariate_normal(4096, seed=2)
    t = rb.IRGI(3).fit(x, y)
    assert len(t.x_axis) == 2**3 + 1
    assert [len(ax) for ax in t.y_axes] == [2**3] * (2**3 + 1)
    hists = t.column_histograms()
    total = sum(h.sum() for h in hists)
    assert total == pytest.approx(4096)
    # refilling the defining events on each column's axis gives the same contents
    column = np.searchsorted(t.x_boundaries_, x, side="right") - 1
    column = np.clip(column, 0, len(hists) - 1)
    for k, h in enumerate(hists):
        counts, _ = np.histogram(y[column == k], bins=h.axes[0].edges)
        np.testing.assert_array_equal(counts, h.values())
    xs, ys = t.vertices()
    assert xs.shape == ys.shape == (9 * 9,)
    assert t.column_weight_histogram().sum() == pytest.approx(4096)


def test_max_depth_from_sample_size() -> None:
    assert rb.IRGI.max_depth(100_000) == 7
    assert rb.IRGI.max_depth(2**17) == 8
    assert rb.IRGI.max_depth(2**17 - 1) == 7
    x, y = bivariate_normal(100_000, seed=0)
    with pytest.raises(ValueError, match="largest depth this sample supports is 7"):
        rb.IRGI(8).fit(x, y)
    rb.IRGI(7).fit(x, y)


def test_saturated_scores() -> None:
    rng = np.random.default_rng(4)
    n = 20_000
    x = rng.normal(3000, 400, n)
    y = rng.uniform(0, 1, n)
    u = rng.uniform(size=n)
    y[u < 0.3] = 1.0
    y[u > 0.8] = 0.0
    t = rb.IRGI(5).fit(x, y)
    g = t.transform(x, y)
    assert np.all(np.isfinite(g))
    assert np.all((g >= 0) & (g <= 1))
    assert np.all(g[y == 1.0] == 1.0)
    assert np.all(g[y == 0.0] == 0.0)
    ys = np.linspace(0, 1, 501)
    for x0 in (2500.0, 3000.0, 3600.0):
        assert np.all(np.diff(t.transform(np.full_like(ys, x0), ys)) >= 0)
    for h in t.column_histograms():
        assert np.all(np.diff(h.axes[0].edges) > 0)


def test_weights_scale_invariant_and_unit_weights_equal_unweighted() -> None:
    x, y = bivariate_normal(8192, seed=6)
    xq, yq = bivariate_normal(1000, seed=7)
    plain = rb.IRGI(4).fit(x, y).transform(xq, yq)
    np.testing.assert_array_equal(rb.IRGI(4).fit(x, y, np.ones_like(x)).transform(xq, yq), plain)
    np.testing.assert_allclose(
        rb.IRGI(4).fit(x, y, np.full_like(x, 0.37)).transform(xq, yq), plain, atol=1e-12
    )


def test_weights_shift_the_grid() -> None:
    x, y = bivariate_normal(8192, seed=8)
    w = np.where(x > 0, 3.0, 1.0)
    t = rb.IRGI(3).fit(x, y, w)
    # equal occupancy is in summed weight: the weighted median of x is the middle boundary
    middle = t.x_centres_[len(t.x_centres_) // 2]
    assert w[x < middle].sum() == pytest.approx(w.sum() / 2, rel=1e-3)


def test_negative_weights() -> None:
    rng = np.random.default_rng(9)
    x, y = bivariate_normal(16384, seed=9)
    w = np.where(rng.uniform(size=len(x)) < 0.1, -0.5, 1.0)
    t = rb.IRGI(4).fit(x, y, w)
    g = t.transform(x, y)
    assert np.all((g >= 0) & (g <= 1))
    assert np.all(t.column_weight_ > 0)


def test_a_bin_made_negative_by_negative_weights_is_rearranged() -> None:
    """Random signs as in NLO simulation: a column's cumulative weight can fall; it is sorted."""
    x, y = bivariate_normal(20_000, seed=5)
    w = np.where(np.random.default_rng(5).random(len(x)) < 0.25, -2.0, 2.0)
    t = rb.IRGI(6).fit(x, y, w)
    assert np.all(np.diff(t.cdf_, axis=1) >= 0)
    assert np.all((t.cdf_ >= 0) & (t.cdf_ <= 1))
    ys = np.linspace(-5.0, 5.0, 1001)
    for x0 in (-2.0, -0.3, 0.0, 1.1, 2.5):
        g = t.transform(np.full_like(ys, x0), ys)
        assert np.all(np.diff(g) >= 0)
    xq, yq = bivariate_normal(5000, seed=40)
    assert np.sqrt(np.mean((t.transform(xq, yq) - exact_gamma(xq, yq)) ** 2)) < 0.05
    # no bootstrap draw is refused, so none is replaced by a milder one
    ensemble = rb.bootstrap(rb.IRGI(6), x, y, w, n=10, seed=1, keyed=True)
    assert list(ensemble.replica_draws_) == list(range(10))


def test_column_with_non_positive_weight_is_an_error() -> None:
    x, y = bivariate_normal(4096, seed=10)
    # one huge weight followed in x by negative weights: no split of the last
    # column can keep its weight positive
    rank = np.argsort(np.argsort(x))
    w = np.where(rank > 3000, -2.0, 1.0)
    w[rank == 3000] = 3000.0
    with pytest.raises(ValueError, match="non-positive total weight"):
        rb.IRGI(3).fit(x, y, w)


def test_column_ecdf_is_exact_at_its_centre() -> None:
    x, y = bivariate_normal(2**13, seed=12)
    t = rb.IRGI(4).fit(x, y)
    column = np.clip(np.searchsorted(t.x_boundaries_, x, side="right") - 1, 0, 2**4)
    for k in range(1, 2**4):
        ys = y[column == k]
        g = t.transform(np.full_like(ys, t.x_centres_[k]), ys)
        for level in t.cdf_[k, 1:-1]:
            assert np.mean(g < level - 1e-12) == pytest.approx(level, abs=1e-9)


def test_explicit_domain() -> None:
    x, y = bivariate_normal(4096, seed=11)
    t = rb.IRGI(3, domain=((-10, 10), (-10, 10))).fit(x, y)
    assert t.x_centres_[0] == -10
    assert t.y_edges_[0, -1] == 10
    with pytest.raises(ValueError, match="outside the domain"):
        rb.IRGI(3, domain=((-1, 1), (-10, 10))).fit(x, y)


def test_ties_in_x_split_in_input_order_with_and_without_weights() -> None:
    rng = np.random.default_rng(12)
    x = np.round(rng.normal(size=20_000) * 3) / 3  # 20-odd distinct values
    y = 0.5 * x + rng.normal(size=x.size)
    t = rb.IRGI(2).fit(x, y)
    weighted = rb.IRGI(2).fit(x, y, np.ones_like(x))
    for name in ("x_centres_", "x_boundaries_", "y_edges_", "cdf_", "column_weight_"):
        np.testing.assert_array_equal(getattr(t, name), getattr(weighted, name), err_msg=name)
    # each column holds the positions of the sorted sample the bisection gave it
    xs = np.sort(x, kind="stable")
    order = np.argsort(x, kind="stable")
    bounds = np.concatenate(([0], np.cumsum(t.column_weight_).astype(int)))
    for k in range(len(t.x_centres_)):
        column_y = np.sort(y[order[bounds[k] : bounds[k + 1]]])
        assert xs[bounds[k]] >= t.x_boundaries_[k]
        # the column's ECDF at its inner edges is the fraction strictly below each edge
        inner = t.y_edges_[k, 1:-1]
        expected = np.searchsorted(column_y, inner, side="left") / len(column_y)
        np.testing.assert_allclose(t.cdf_[k, 1:-1], expected, atol=1e-15)


def test_huge_and_tiny_values_fit_and_transform() -> None:
    rng = np.random.default_rng(13)
    x = rng.normal(size=4096) * 1e300
    y = rng.normal(size=4096) * 1e-300
    t = rb.IRGI(3).fit(x, y)
    assert np.all(np.isfinite(t.x_boundaries_))
    assert np.all(np.isfinite(t.y_edges_))
    g = t.transform(x, y)
    assert np.all((g >= 0) & (g <= 1))
    # gamma of the defining sample is uniform to the grid resolution
    assert np.abs(np.sort(g) - (np.arange(g.size) + 0.5) / g.size).max() < 2.0**-3


def test_sparse_weights_name_the_depth_they_support() -> None:
    rng = np.random.default_rng(14)
    x, y = rng.normal(size=(2, 4096))
    w = np.where(rng.uniform(size=4096) < 0.97, 0.0, 1.0)
    carrying = int(np.count_nonzero(w))
    with pytest.raises(
        ValueError,
        match=rf"too few events carry weight for IRGI depth 5: .* {carrying} of 4096 events have a non-zero weight, "
        rf"which support depth {rb.IRGI.max_depth(carrying)} at most",
    ):
        rb.IRGI(5).fit(x, y, w)
    rb.IRGI(rb.IRGI.max_depth(carrying)).fit(x, y, w)


def _poisson_toy(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """x with density e^(-3x) on [0, 1]; y | x ~ Beta of mean 0.3 + 0.4 x, concentration 5."""
    rng = np.random.default_rng(seed)
    x = -np.log1p(-rng.uniform(size=n) * (1 - np.exp(-3))) / 3
    mean = 0.3 + 0.4 * x
    return x, rng.beta(5 * mean, 5 * (1 - mean))


def _abcd_nonclosure(t: rb.IRGI, level: float, x0: float = 0.6) -> float:
    """B C / D over A, minus 1, of the toy's exact background at the cut ``gamma >= level``, ``x >= x0``."""
    from scipy import stats

    xs = (np.arange(2000) + 0.5) / 2000
    density = 3 * np.exp(-3 * xs) / (1 - np.exp(-3))
    lo, hi = np.zeros_like(xs), np.ones_like(xs)
    for _ in range(50):  # y*(x): gamma(x, y*) = level
        mid = 0.5 * (lo + hi)
        above = t.transform(xs, mid) >= level
        lo, hi = np.where(above, lo, mid), np.where(above, mid, hi)
    mean = 0.3 + 0.4 * xs
    tail = density * stats.beta.sf(hi, 5 * mean, 5 * (1 - mean))
    rest = density - tail
    right = xs >= x0
    a, b, c, d = tail[right].sum(), tail[~right].sum(), rest[right].sum(), rest[~right].sum()
    return float(b * c / d / a - 1)


def test_cut_depth_needs_two_bins_beyond_each_level() -> None:
    assert rb.IRGI.cut_depth([0.95]) == 6  # 64 * 0.05 = 3.2 bins beyond; 32 * 0.05 = 1.6
    assert rb.IRGI.cut_depth([0.9]) == 5
    assert rb.IRGI.cut_depth([0.875]) == 4  # exactly 2 bins of 16
    assert rb.IRGI.cut_depth([0.5, 0.99]) == 8
    assert rb.IRGI.cut_depth([0.05, 0.5]) == 6  # the lowest level, from below
    assert rb.IRGI.cut_depth([0.0, 1.0]) == 0  # no cut inside (0, 1)
    assert rb.IRGI.cut_depth([]) == 0
    with pytest.raises(
        ValueError, match=r"cut_levels must be numbers in \[0, 1\], got \[0.5, 1.5\]"
    ):
        rb.IRGI.cut_depth([0.5, 1.5])


def test_auto_depth_tries_only_depths_that_resolve_the_cut_levels() -> None:
    x, y = _poisson_toy(20_000, seed=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        t = rb.IRGI(depth="auto", cut_levels=(0.5, 0.95)).fit(x, y)
    assert t.selection_ is not None
    assert t.selection_.values == (6,)
    assert t.depth_ == 6
    assert t.unresolved_cut_levels() == ()
    assert t.coarse_cut_note() is None


@pytest.mark.slow
def test_auto_depth_for_the_cut_closes_where_the_plain_choice_does_not() -> None:
    # depth='auto' alone chooses 4 on 20k events: the cut at 0.95 falls in the top y bin
    # of each column (1/16), interpolated up to the sample's maximum
    plain, for_cut = [], []
    for seed in range(3):
        x, y = _poisson_toy(20_000, seed=seed)
        chosen = rb.IRGI(depth="auto").fit(x, y)
        assert chosen.depth_ == 4
        plain.append(_abcd_nonclosure(chosen, 0.95))
        for_cut.append(_abcd_nonclosure(rb.IRGI(depth="auto", cut_levels=(0.95,)).fit(x, y), 0.95))
    assert np.mean(plain) < -0.15  # about -25%, 4 sd of one fit
    assert abs(np.mean(for_cut)) < 0.08  # within the fit's sd of about 7%


def test_a_sample_too_small_for_the_cut_warns_and_takes_its_largest_depth() -> None:
    x, y = _poisson_toy(5_000, seed=1)
    with pytest.warns(UserWarning, match=r"depth 5 .* cut level\(s\) 0.95.* needs depth 6 \(8192"):
        t = rb.IRGI(depth="auto", cut_levels=(0.95,)).fit(x, y)
    assert t.depth_ == rb.IRGI.max_depth(4_500)  # the largest a training fold supports
    assert t.unresolved_cut_levels() == (0.95,)
    note = t.coarse_cut_note()
    assert note is not None
    assert "depth='auto'" in note


def test_a_cut_depth_that_only_the_whole_sample_fits_is_chosen(tmp_path: Path) -> None:
    # signed weights: depth 3 (the cut at 0.75 needs it) leaves a cell of one event in a
    # training fold but fits the whole sample, so depth='auto' takes it rather than the
    # coarse depth 2 every fold fits
    rng = np.random.default_rng(2)
    x = rng.random(300)
    y = rng.beta(2 + 2 * x, 3, 300)
    w = np.where(rng.random(300) < 0.25, -1.0, 1.0)
    free = rb.IRGI(depth="auto").fit(x, y, w).selection_
    assert free is not None
    assert free.values == (1, 2)  # the folds support depth 3 but cannot fit it
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        t = rb.IRGI(depth="auto", cut_levels=(0.75,)).fit(x, y, w)
        given = rb.IRGI(depth=3, cut_levels=(0.75,)).fit(x, y, w)
    assert t.depth_ == 3
    assert t.selection_ is not None
    assert 3 not in t.selection_.values
    assert t.unresolved_cut_levels() == ()
    np.testing.assert_array_equal(t.transform(x, y), given.transform(x, y))
    t.save(tmp_path / "t.json")
    loaded = rb.load(tmp_path / "t.json")
    assert loaded.depth_ == 3
    assert loaded.selection_ == t.selection_
    np.testing.assert_array_equal(loaded.transform(x, y), t.transform(x, y))


def test_a_cut_depth_no_fit_can_take_is_named_as_such() -> None:
    # depth 3 leaves a one-event cell in the whole sample too: depth 2 is kept, and the note
    # says why instead of asking for more events than the sample has
    rng = np.random.default_rng(3)
    x = rng.random(300)
    y = rng.beta(2 + 2 * x, 3, 300)
    w = np.where(rng.random(300) < 0.25, -1.0, 1.0)
    with pytest.raises(ValueError, match="depth 3"):
        rb.IRGI(depth=3).fit(x, y, w)
    with pytest.warns(UserWarning, match=r"depth 3 resolves them, but neither the whole sample"):
        t = rb.IRGI(depth="auto", cut_levels=(0.75,)).fit(x, y, w)
    assert t.depth_ == 2
    assert "events) or cuts" not in (t.coarse_cut_note() or "")


def test_a_given_depth_too_coarse_for_the_cut_warns() -> None:
    x, y = _poisson_toy(20_000, seed=2)
    with pytest.warns(
        UserWarning, match=r"IRGI depth 4 \(16 y bins per column\) puts fewer than 2"
    ):
        rb.IRGI(depth=4, cut_levels=[0.9, 0.95]).fit(x, y)
    with pytest.warns(UserWarning, match=r"cut level\(s\) 0.03"):
        rb.IRGI(depth=5, cut_levels=[0.03, 0.9]).fit(x, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        t = rb.IRGI(depth=6, cut_levels=[0.95]).fit(x, y)
        rb.IRGI(depth=2).fit(x, y)
    assert t.unresolved_cut_levels() == ()


def test_cut_levels_are_checked_and_saved(tmp_path) -> None:
    x, y = _poisson_toy(4_096, seed=3)
    with pytest.raises(ValueError, match=r"cut_levels must be numbers in \[0, 1\]"):
        rb.IRGI(depth=3, cut_levels=[0.5, -0.1]).fit(x, y)
    with pytest.raises(ValueError, match=r"cut_levels must be numbers in \[0, 1\]"):
        rb.IRGI(depth=3, cut_levels=0.5).fit(x, y)  # type: ignore[arg-type]
    t = rb.IRGI(depth=3, cut_levels=[0.25, 0.75]).fit(x, y)
    t.save(tmp_path / "t.json")
    loaded = rb.load(tmp_path / "t.json")
    assert tuple(loaded.cut_levels) == (0.25, 0.75)
    assert loaded.unresolved_cut_levels() == ()
    assert "cut_levels=[0.25, 0.75]" in repr(t)


def test_empty_bins_split_cells_that_uneven_weights_leave_with_one_event() -> None:
    x, y = _poisson_toy(5_000, seed=4)
    depth = rb.IRGI.max_depth(len(x))
    w = np.random.default_rng(5).poisson(1.0, len(x)).astype(float)
    with pytest.raises(ValueError, match="too uneven for depth 5"):
        rb.IRGI(depth).fit(x, y, w)
    t = rb.IRGI(depth, empty_bins=True).fit(x, y, w)
    assert np.all(np.diff(t.y_edges_, axis=1) >= 0)
    assert np.any(np.diff(t.y_edges_[:, 1:-1], axis=1) == 0)  # some bins are empty
    # each inner edge carries the column's weight strictly below it
    column = np.searchsorted(t.x_boundaries_[1:-1], x, side="right")
    for k in range(len(t.x_centres_)):
        inside = column == k
        below = (y[inside][:, None] < t.y_edges_[k, 1:-1][None, :]) * w[inside][:, None]
        expected = below.sum(axis=0) / w[inside].sum()
        np.testing.assert_allclose(t.cdf_[k, 1:-1], expected, atol=1e-12)
    # where the plain bisection succeeds, empty_bins changes nothing
    plain = rb.IRGI(depth - 1).fit(x, y, w)
    same = rb.IRGI(depth - 1, empty_bins=True).fit(x, y, w)
    np.testing.assert_array_equal(plain.y_edges_, same.y_edges_)
    np.testing.assert_array_equal(plain.cdf_, same.cdf_)


def test_auto_depth_for_the_cut_falls_back_to_the_finest_depth_the_weights_fit() -> None:
    rng = np.random.default_rng(15)
    x, y = rng.normal(size=(2, 4096))
    # depth 5 needs 2048 events with weight: neither the training folds nor the whole sample has them
    w = np.where(rng.uniform(size=4096) < 0.55, 0.0, 1.0)
    with pytest.warns(UserWarning, match=r"depth 4 .* the finest its training folds fit"):
        t = rb.IRGI(depth="auto", cut_levels=[0.9]).fit(x, y, w)
    assert t.selection_ is not None
    assert t.selection_.values == (1, 2, 3, 4)
    assert t.depth_ == 4
    assert t.unresolved_cut_levels() == (0.9,)
