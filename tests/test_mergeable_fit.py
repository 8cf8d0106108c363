"""MergeableFit: fits from partial results of chunks reproduce the in-memory fits."""

from __future__ import annotations

import itertools
import pickle
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest
from conftest import bivariate_normal

import rosenblatt as rb
from rosenblatt.outofcore.mergeable import Partial, Request
from rosenblatt.transforms import _local_polynomial as lp
from rosenblatt.transforms.grid_kde import fine_edge_count

Chunks = Callable[[], Iterator[tuple[Any, Any, Any]]]


@pytest.fixture(scope="module")
def sample() -> tuple[np.ndarray, np.ndarray]:
    return bivariate_normal(200_000, seed=11)


@pytest.fixture(scope="module")
def testing() -> tuple[np.ndarray, np.ndarray]:
    return bivariate_normal(10_000, seed=12)


def make_weights(kind: str, n: int) -> np.ndarray | None:
    rng = np.random.default_rng(13)
    if kind == "unit":
        return None
    if kind == "integer":
        return rng.integers(0, 4, n).astype(np.float64)
    return rng.normal(1.0, 0.5, n)  # about 2% negative


def chunked(
    x: np.ndarray, y: np.ndarray, w: np.ndarray | None, n_chunks: int = 1, seed: int = 0
) -> Chunks:
    """Chunks of uneven sizes, in input order."""
    rng = np.random.default_rng(seed)
    cuts = np.sort(rng.choice(np.arange(1, len(x)), n_chunks - 1, replace=False))
    bounds = np.concatenate(([0], cuts, [len(x)]))

    def chunks() -> Iterator[tuple[Any, Any, Any]]:
        for a, b in itertools.pairwise(bounds):
            yield x[a:b], y[a:b], None if w is None else w[a:b]

    return chunks


def fit_merged(transform: Any, chunks: Chunks, *, seed: int | None = None, **options: Any) -> Any:
    """Fit from the chunks' partials, added in a shuffled order and grouping if ``seed``.

    Each chunk gives its place in the sample (``ordinal``), so the fit takes
    the events in input order whatever the order of the additions.
    """
    fit = rb.MergeableFit(transform, **options)
    request = fit.request()
    parts = [request(*chunk, ordinal=k) for k, chunk in enumerate(chunks())]
    if seed is not None:
        rng = np.random.default_rng(seed)
        parts = [parts[k] for k in rng.permutation(len(parts))]
        while len(parts) > 1:  # random pairings: a tree of additions
            k = int(rng.integers(len(parts) - 1))
            parts[k : k + 2] = [parts[k + 1] + parts[k]]
    total = parts[0]
    for part in parts[1:]:
        total = total + part
    return fit.finish(total)


def max_difference(a: Any, b: Any, testing: tuple[np.ndarray, np.ndarray]) -> float:
    return float(np.abs(a.transform(*testing) - b.transform(*testing)).max())


def assert_same_grid(a: Any, b: Any, *, cdf_atol: float = 0.0) -> None:
    """The same vertices, and the same CDF (within ``cdf_atol``, for rounding of float weights)."""
    np.testing.assert_array_equal(a.x_centres_, b.x_centres_)
    np.testing.assert_array_equal(a.y_edges_, b.y_edges_)
    np.testing.assert_allclose(a.cdf_, b.cdf_, rtol=0, atol=cdf_atol)


# ------------------------------------------------------------------------ IRGI
IRGI_CASES = [
    *((depth, "unit") for depth in range(1, 8)),
    *((depth, "float") for depth in range(1, 8)),
    *((depth, "integer") for depth in (1, 4, 7)),
]


@pytest.mark.parametrize(("depth", "weights"), IRGI_CASES)
def test_irgi_reproduces_the_in_memory_fit(sample, testing, depth: int, weights: str) -> None:
    x, y = sample
    w = make_weights(weights, len(x))
    merged = rb.MergeableFit(rb.IRGI(depth)).fit_chunks(chunked(x, y, w))
    in_memory = rb.IRGI(depth).fit(x, y, w)
    assert max_difference(merged, in_memory, testing) <= 2e-3
    # the order statistics are exact: the same grid, the CDF up to rounding
    np.testing.assert_array_equal(merged.x_centres_, in_memory.x_centres_)
    np.testing.assert_array_equal(merged.y_edges_, in_memory.y_edges_)
    np.testing.assert_allclose(merged.cdf_, in_memory.cdf_, rtol=0, atol=1e-12)
    assert merged.n_events_ == in_memory.n_events_
    assert merged.sum_weight_ == pytest.approx(in_memory.sum_weight_, rel=1e-12)


@pytest.mark.parametrize("depth", [2, 5])
def test_integer_weights_agree_with_replicated_events(sample, testing, depth: int) -> None:
    x, y = sample
    w = make_weights("integer", len(x))
    domain = ((x.min(), x.max()), (y.min(), y.max()))
    merged = rb.MergeableFit(rb.IRGI(depth, domain=domain)).fit_chunks(chunked(x, y, w, 3))
    copies = w.astype(int)
    replicated = rb.IRGI(depth, domain=domain).fit(np.repeat(x, copies), np.repeat(y, copies))
    assert max_difference(merged, replicated, testing) <= 2e-3


@pytest.mark.parametrize("weights", ["unit", "integer", "float"])
def test_chunking_and_merge_order_do_not_matter(weights: str) -> None:
    x, y = bivariate_normal(30_000, seed=3)
    w = make_weights(weights, len(x))
    whole = rb.MergeableFit(rb.IRGI(5)).fit_chunks(chunked(x, y, w))
    uneven = fit_merged(rb.IRGI(5), chunked(x, y, w, 7))
    shuffled = fit_merged(rb.IRGI(5), chunked(x, y, w, 7, seed=1), seed=2)
    for other in (uneven, shuffled):
        np.testing.assert_array_equal(other.x_centres_, whole.x_centres_)
        np.testing.assert_array_equal(other.y_edges_, whole.y_edges_)
        if weights == "float":
            np.testing.assert_allclose(other.cdf_, whole.cdf_, rtol=0, atol=1e-12)
        else:
            np.testing.assert_array_equal(other.cdf_, whole.cdf_)


@pytest.mark.parametrize("weights", ["unit", "integer"])
def test_ties_are_taken_in_the_order_of_the_chunks(weights: str) -> None:
    x, y = bivariate_normal(20_000, seed=4)
    x, y = np.round(x, 2), np.minimum(y, 0.8)  # tied x across column boundaries, a saturated score
    w = make_weights(weights, len(x))
    for flip in (slice(None), slice(None, None, -1)):
        xs, ys, ws = x[flip], y[flip], None if w is None else w[flip]
        in_memory = rb.IRGI(4).fit(xs, ys, ws)
        merged = fit_merged(rb.IRGI(4), chunked(xs, ys, ws, 5, seed=1), seed=3)
        assert_same_grid(merged, in_memory)
        np.testing.assert_array_equal(merged.x_boundaries_, in_memory.x_boundaries_)
        np.testing.assert_array_equal(merged.column_weight_, in_memory.column_weight_)
        small = fit_merged(rb.IRGI(4), chunked(xs, ys, ws, 3), gather_limit=64, histogram_bins=16)
        assert_same_grid(small, in_memory)


@pytest.mark.parametrize("weights", ["unit", "float"])
def test_small_histograms_and_tasks_give_the_same_grid(weights: str) -> None:
    x, y = bivariate_normal(8_000, seed=5)
    w = make_weights(weights, len(x))
    fit = rb.MergeableFit(rb.IRGI(3), gather_limit=64, histogram_bins=16)
    merged = fit.fit_chunks(chunked(x, y, w, 4))
    assert fit.passes == 3
    assert_same_grid(merged, rb.IRGI(3).fit(x, y, w), cdf_atol=1e-12)


@pytest.mark.parametrize("depth", [1, 3, 5, 7])
def test_pass_counts_and_descriptions(sample, depth: int) -> None:
    x, y = sample
    for w in (None, make_weights("float", len(x))):
        fit = rb.MergeableFit(rb.IRGI(depth))
        fit.fit_chunks(chunked(x, y, w, 3))
        assert fit.passes == 3 == len(fit.pass_descriptions)
        assert fit.pass_descriptions == [
            "IRGI: reading events",
            "IRGI: events ordered by x",
            "IRGI: y edges of the columns",
        ]


def test_domain_given(sample, testing) -> None:
    x, y = sample
    domain = ((-6.0, 6.0), (-6.0, 6.0))
    merged = rb.MergeableFit(rb.IRGI(4, domain=domain)).fit_chunks(chunked(x, y, None, 3))
    in_memory = rb.IRGI(4, domain=domain).fit(x, y)
    assert merged.domain_ == in_memory.domain_ == domain
    assert_same_grid(merged, in_memory)
    outside = rb.MergeableFit(rb.IRGI(4, domain=((-1.0, 1.0), (-6.0, 6.0))))
    with pytest.raises(ValueError, match=r"defining event\(s\) have x outside the domain"):
        outside.fit_chunks(chunked(x, y, None, 3))


# --------------------------------------------------------------------- GridKDE
def in_memory_fine_edges(y: np.ndarray, w: np.ndarray | None, y_levels: int = 512) -> np.ndarray:
    order = np.argsort(y, kind="stable")
    cumulative = (
        np.arange(len(y) + 1.0) if w is None else np.concatenate(([0.0], np.cumsum(w[order])))
    )
    return lp.y_edges(y[order], cumulative, fine_edge_count(len(y), y_levels))


@pytest.mark.parametrize(
    ("degree", "weights"), [(0, "unit"), (1, "integer"), (2, "unit"), (2, "float")]
)
def test_grid_kde_matches_the_in_memory_fit_on_the_same_edges(
    testing, degree: int, weights: str
) -> None:
    x, y = bivariate_normal(20_000, seed=7)
    w = make_weights(weights, len(x))
    fit = rb.MergeableFit(rb.GridKDE(sigma_r=0.05, degree=degree))
    merged = fit.fit_chunks(chunked(x, y, w, 5))
    assert fit.passes == 3
    assert fit.y_fine_edges_ is not None
    np.testing.assert_array_equal(fit.y_fine_edges_, in_memory_fine_edges(y, w))
    same_edges = rb.GridKDE(sigma_r=0.05, degree=degree)
    same_edges._fit_binned(x, y, w, fine_edges=fit.y_fine_edges_)
    assert max_difference(merged, same_edges, testing) <= 1e-9
    assert merged.sigma_a_ == pytest.approx(same_edges.sigma_a_, rel=1e-13)
    assert (
        max_difference(merged, rb.GridKDE(sigma_r=0.05, degree=degree).fit(x, y, w), testing)
        <= 1e-9
    )


def test_grid_kde_chunking_does_not_matter() -> None:
    x, y = bivariate_normal(20_000, seed=8)
    w = make_weights("integer", len(x))
    whole = rb.MergeableFit(rb.GridKDE(sigma_r=0.1, degree=1)).fit_chunks(chunked(x, y, w))
    shuffled = fit_merged(rb.GridKDE(sigma_r=0.1, degree=1), chunked(x, y, w, 6, seed=2), seed=4)
    np.testing.assert_array_equal(shuffled.y_edges_, whole.y_edges_)
    np.testing.assert_allclose(shuffled.cdf_, whole.cdf_, rtol=0, atol=1e-12)


# ------------------------------------------------------------------ merging
def test_coffea_accumulate_merges_partials() -> None:
    accumulate = pytest.importorskip("coffea.processor").accumulate
    x, y = bivariate_normal(6_000, seed=9)
    w = make_weights("integer", len(x))
    direct = rb.MergeableFit(rb.IRGI(3)).fit_chunks(chunked(x, y, w, 3))
    fit = rb.MergeableFit(rb.IRGI(3))
    request = fit.request()
    outputs = [
        {"partial": request(*chunk, ordinal=k)} for k, chunk in enumerate(chunked(x, y, w, 3)())
    ]
    first = outputs[0]["partial"]
    before = {k: v.copy() for k, v in first.sums.items()}
    merged = accumulate(outputs)
    assert all(np.array_equal(first.sums[k], v) for k, v in before.items())
    assert isinstance(merged["partial"], Partial)
    assert_same_grid(fit.finish(merged), direct)


def test_partials_and_requests_pickle() -> None:
    x, y = bivariate_normal(6_000, seed=10)
    fit = rb.MergeableFit(rb.IRGI(3))
    request = fit.request()
    shipped = pickle.loads(pickle.dumps(request))
    assert isinstance(shipped, Request)
    assert shipped.description == request.description == "IRGI: reading events"
    part = pickle.loads(pickle.dumps(shipped(x, y)))
    expected = request(x, y)
    for name in expected.sums:
        np.testing.assert_array_equal(part.sums[name], expected.sums[name])
    assert part.chunks == expected.chunks
    assert len(pickle.dumps(part)) < 500_000
    assert_same_grid(fit.finish(part), rb.IRGI(3).fit(x, y))


def test_partials_of_different_fits_do_not_add() -> None:
    x, y = bivariate_normal(6_000, seed=14)
    first = rb.MergeableFit(rb.IRGI(2))
    second = rb.MergeableFit(rb.IRGI(2))
    part = first.request()(x, y)
    other = second.request()(x, y)
    with pytest.raises(ValueError, match="different requests"):
        _ = part + other
    with pytest.raises(ValueError, match="not the sum of the partials of this fit's request"):
        second.finish(part)


def test_changed_skims_are_an_error(tmp_path) -> None:
    x, y = bivariate_normal(6_000, seed=15)
    fit = rb.MergeableFit(rb.IRGI(2), skim_dir=tmp_path / "skims")
    request = fit.request()
    part = request(x[:3000], y[:3000]) + request(x[3000:], y[3000:])
    skim = min((tmp_path / "skims").glob("skim-*.npy"))
    table = np.load(skim)
    np.save(skim, table[:-10])
    with pytest.raises(ValueError, match="every pass must see the same events"):
        fit.finish(part)
    fit = rb.MergeableFit(rb.IRGI(2), skim_dir=tmp_path / "other")
    part = fit.request()(x, y)
    for path in (tmp_path / "other").glob("skim-*.npy"):
        path.unlink()
    with pytest.raises(FileNotFoundError, match="must stay in place until it ends"):
        fit.finish(part)


def test_awkward_chunks() -> None:
    ak = pytest.importorskip("awkward")
    x, y = bivariate_normal(6_000, seed=16)
    merged = rb.MergeableFit(rb.IRGI(3)).fit_chunks(lambda: iter([(ak.Array(x), ak.Array(y))]))
    assert_same_grid(merged, rb.IRGI(3).fit(x, y))


def test_result_saves_and_loads(tmp_path, testing) -> None:
    x, y = bivariate_normal(6_000, seed=17)
    for transform in (rb.IRGI(3), rb.GridKDE(sigma_r=0.1)):
        merged = rb.MergeableFit(transform).fit_chunks(chunked(x, y, None, 2))
        path = tmp_path / f"{transform.kind}.json"
        merged.save(path)
        loaded = rb.load(path)
        np.testing.assert_array_equal(loaded.transform(*testing), merged.transform(*testing))


# ------------------------------------------------------------------- errors
@pytest.mark.parametrize(
    "transform",
    [rb.IRGI(depth="auto"), rb.GridKDE(), rb.KDE(sigma_r=0.1)],
    ids=["irgi-auto", "gridkde-auto", "kde"],
)
def test_not_mergeable(transform: Any) -> None:
    with pytest.raises(ValueError, match=r"not mergeable.*in memory on the gathered"):
        rb.MergeableFit(transform)


def test_errors_of_the_in_memory_fit() -> None:
    x, y = bivariate_normal(1_000, seed=18)
    with pytest.raises(ValueError, match="largest depth this sample supports is 4"):
        rb.MergeableFit(rb.IRGI(6)).fit_chunks(chunked(x, y, None, 2))
    bad = x.copy()
    bad[500] = np.nan
    with pytest.raises(ValueError, match=r"^x has 1 NaN"):
        rb.MergeableFit(rb.IRGI(2)).fit_chunks(chunked(bad, y, None, 2))
    weights = np.ones(len(x))
    weights[3] = np.inf
    with pytest.raises(ValueError, match=r"^weight has 0 NaN and 1 infinite"):
        rb.MergeableFit(rb.IRGI(2)).fit_chunks(chunked(x, y, weights, 2))
    with pytest.raises(ValueError, match="weight must have a positive sum"):
        rb.MergeableFit(rb.IRGI(2)).fit_chunks(chunked(x, y, -np.ones(len(x)), 2))
    with pytest.raises(ValueError, match="y is constant"):
        rb.MergeableFit(rb.GridKDE(sigma_r=0.1)).fit_chunks(chunked(x, np.zeros(len(x)), None, 2))
    with pytest.raises(ValueError, match="depth must be a non-negative integer"):
        rb.MergeableFit(rb.IRGI(-1))
    with pytest.raises(ValueError, match="no chunk contributed"):
        rb.MergeableFit(rb.IRGI(2)).fit_chunks(lambda: iter(()))
    with pytest.raises(ValueError, match=r"weights were given for 1 of 2 chunks"):
        rb.MergeableFit(rb.IRGI(2)).fit_chunks(
            lambda: iter([(x[:500], y[:500], np.ones(500)), (x[500:], y[500:])])
        )
    fit = rb.MergeableFit(rb.IRGI(2))
    with pytest.raises(RuntimeError, match="not done"):
        fit.result()


# ----------------------------------------------------------- several observables
@pytest.mark.parametrize(
    ("depth", "weights", "k"),
    [(4, "unit", 2), ((0, 4), "unit", 2), ((2, 3), "positive", 2), (6, "unit", 3)],
)
def test_nested_irgi_matches_the_in_memory_fit(depth: Any, weights: str, k: int) -> None:
    rng = np.random.default_rng(19)
    x = rng.normal(size=(40_000, k))
    y = x @ np.linspace(0.6, 0.2, k) + 0.8 * rng.normal(size=len(x))
    w = None if weights == "unit" else rng.uniform(0.2, 2.0, len(x))
    fit = rb.MergeableFit(rb.IRGI(depth))
    merged = fit.fit_chunks(chunked(x, y, w, 5, seed=2))
    assert fit.passes == 3
    in_memory = rb.IRGI(depth).fit(x, y, w)
    np.testing.assert_array_equal(merged.boxes_, in_memory.boxes_)
    assert merged.splits_ == in_memory.splits_
    test_x, test_y = rng.normal(size=(5_000, k)), rng.normal(size=5_000)
    difference = merged.transform(test_x, test_y) - in_memory.transform(test_x, test_y)
    assert np.abs(difference).max() <= 1e-12


# ------------------------------------------------------------------ ensembles
def replica_weights(fit: Any, seed: int, draw: int, w: np.ndarray | None) -> np.ndarray:
    """A replica's weights in the fit's order of the events (the chunks' order here)."""
    from rosenblatt.outofcore._skims import bootstrap_counts, event_keys

    keys = np.concatenate([event_keys(name, n) for name, n in fit.chunks_])
    counts = bootstrap_counts(seed, draw, keys)
    return counts if w is None else counts * w


@pytest.mark.parametrize(
    "estimator", [rb.IRGI(depth=4), rb.GridKDE(sigma_r=0.2)], ids=["irgi", "gridkde"]
)
def test_ensemble_replicas_are_fits_with_their_poisson_weights(estimator: Any, tmp_path) -> None:
    x, y = bivariate_normal(20_000, seed=20)
    w = make_weights("float", len(x))
    ensemble = rb.TransformEnsemble(estimator, n=4, seed=5)
    fit = rb.MergeableFit(ensemble)
    fitted = fit.fit_chunks(chunked(x, y, w, 3, seed=4))
    assert fitted is ensemble
    assert fit.passes == 4
    assert fitted.replica_draws_ == [0, 1, 2, 3]
    test_x, test_y = bivariate_normal(2_000, seed=21)
    nominal = type(estimator)(**_parameters(estimator)).fit(x, y, w)
    difference = fitted.transform(test_x, test_y) - nominal.transform(test_x, test_y)
    assert np.abs(difference).max() <= 1e-12
    for k, draw in enumerate(fitted.replica_draws_):
        replica = type(estimator)(**_parameters(estimator)).fit(
            x, y, replica_weights(fit, 5, draw, w)
        )
        variation = fitted.transform(test_x, test_y, variation=f"replica_{k}")
        assert np.abs(variation - replica.transform(test_x, test_y)).max() <= 1e-12
    fitted.save(tmp_path / "ensemble.json")
    loaded = rb.load(tmp_path / "ensemble.json")
    np.testing.assert_array_equal(loaded.std(test_x, test_y), fitted.std(test_x, test_y))


def _parameters(estimator: Any) -> dict[str, Any]:
    if isinstance(estimator, rb.IRGI):
        return {"depth": estimator.depth}
    return {"sigma_r": estimator.sigma_r}


def test_ensemble_failed_draws_are_replaced_and_counted() -> None:
    x, y = bivariate_normal(6000, seed=6)
    depth = rb.IRGI.max_depth(len(x))
    fit = rb.MergeableFit(rb.TransformEnsemble(rb.IRGI(depth=depth), n=10, seed=0))
    ensemble = fit.fit_chunks(chunked(x, y, None, 2))
    assert ensemble.n_refits_ > 0
    assert len(ensemble.replicas_) == 10
    draws = sorted(ensemble.replica_draws_ + ensemble.failed_draws_)
    assert draws == list(range(10 + ensemble.n_refits_))
    assert fit.passes > 4
    strict = rb.MergeableFit(rb.TransformEnsemble(rb.IRGI(depth=depth), n=10, max_refits=0))
    with pytest.raises(ValueError, match="could not be fitted"):
        strict.fit_chunks(chunked(x, y, None, 2))
