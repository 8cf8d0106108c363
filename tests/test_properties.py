"""Property-based tests of the transforms: random shapes, weights, ties, extreme scales.

The number of examples per property is modest by default; set the environment
variable ``ROSENBLATT_FUZZ_EXAMPLES`` to run more (e.g. 2000 for a long run).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import rosenblatt as rb

awkward = pytest.importorskip("awkward")

EXAMPLES = int(os.environ.get("ROSENBLATT_FUZZ_EXAMPLES", "60"))
PROPERTY = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    derandomize=EXAMPLES <= 100,
)
#: the documented KDE "fast" rounding in y-monotonicity (its docstring: up to rounding)
KDE_FAST_MONOTONE_SLACK = 1e-14


@dataclass
class Sample:
    """A defining sample drawn by hypothesis."""

    x: np.ndarray
    y: np.ndarray
    weight: np.ndarray | None


@st.composite
def samples(draw: st.DrawFn, *, min_events: int = 8, max_events: int = 300) -> Sample:
    """Defining samples with random size, location, scale, ties and weights."""
    n = draw(st.integers(min_events, max_events))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    # |x| up to 1e80 with weights up to 1e50: the KDE width sums w x^2 in float64
    x_scale = 10.0 ** draw(st.integers(-80, 80))
    y_scale = 10.0 ** draw(st.integers(-150, 150))
    x_offset = draw(st.sampled_from([0.0, 1.0, -3.0e3, 1.0e6])) * x_scale
    y_offset = draw(st.sampled_from([0.0, 0.5, -7.0, 1.0e8])) * y_scale
    rho = draw(st.floats(-0.95, 0.95))
    u = rng.standard_normal(n)
    v = rho * u + np.sqrt(1 - rho**2) * rng.standard_normal(n)
    x_levels = draw(st.sampled_from([0, 3, 17]))  # 0: continuous, else ties on a few values
    y_levels = draw(st.sampled_from([0, 2, 5, 40]))
    if x_levels:
        u = np.round(u * x_levels) / x_levels
    if y_levels:
        v = np.round(v * y_levels) / y_levels
    x = x_offset + x_scale * u
    y = y_offset + y_scale * v
    if draw(st.booleans()):  # a saturated classifier: 30% of scores at the top, 20% at the bottom
        top, bottom = y.max(), y.min()
        which = rng.uniform(size=n)
        y = np.where(which < 0.3, top, np.where(which > 0.8, bottom, y))
    weighting = draw(st.sampled_from(["none", "positive", "signed", "integer"]))
    weight: np.ndarray | None
    if weighting == "none":
        weight = None
    elif weighting == "positive":
        weight = rng.uniform(1e-3, 5.0, n) * 10.0 ** draw(st.integers(-50, 50))
    elif weighting == "integer":
        weight = rng.integers(1, 5, n).astype(float)
    else:
        weight = np.where(rng.uniform(size=n) < draw(st.floats(0.0, 0.3)), -0.5, 1.0)
    return Sample(x, y, weight)


def estimators() -> st.SearchStrategy[rb.IRGI | rb.KDE]:
    return st.one_of(
        st.integers(0, 3).map(rb.IRGI),
        st.sampled_from([0.02, 0.1, 0.5, 3.0]).map(rb.KDE),
        st.sampled_from([0.05, 0.4]).map(lambda s: rb.KDE(s, method="direct")),
    )


def unfitted_copy(transform: rb.IRGI | rb.KDE) -> rb.IRGI | rb.KDE:
    """A new estimator with the same hyper-parameters."""
    if isinstance(transform, rb.IRGI):
        return rb.IRGI(transform.depth, transform.domain)
    return rb.KDE(transform.sigma_r, method=transform.method)


def fit_or_documented_error(transform: rb.IRGI | rb.KDE, sample: Sample) -> bool:
    """Fit; return False on a documented refusal (ValueError naming the cause).

    KDE with negative weights is left to :func:`test_kde_negative_weights_dominating_locally`.
    """
    assume(
        not (
            isinstance(transform, rb.KDE)
            and sample.weight is not None
            and np.any(sample.weight < 0)
        )
    )
    try:
        transform.fit(sample.x, sample.y, sample.weight)
    except ValueError as err:
        message = str(err)
        assert message, "an error without a message"
        documented = (
            "depth",
            "weight",
            "constant",
            "tied",
            "non-positive",
            "negative weights",
            "overflow",
            "finite",
            "cannot be split",
        )
        assert any(word in message for word in documented), message
        return False
    return True


def query_points(
    sample: Sample, rng: np.random.Generator, n: int = 64
) -> tuple[np.ndarray, np.ndarray]:
    """Queries inside, on the edges of and far outside the defining sample."""
    x_lo, x_hi = sample.x.min(), sample.x.max()
    y_lo, y_hi = sample.y.min(), sample.y.max()
    xs = np.concatenate(
        (rng.choice(sample.x, n), rng.uniform(x_lo, x_hi, n) if x_hi > x_lo else [], [x_lo, x_hi])
    )
    ys = np.concatenate((rng.choice(sample.y, len(xs) - 2), [y_lo, y_hi]))
    span_x = max(abs(x_lo), abs(x_hi), 1e-300)
    span_y = max(abs(y_lo), abs(y_hi), 1e-300)
    outside_x = np.array([x_lo - span_x, x_hi + span_x, -1e300, 1e300])
    outside_y = np.array([y_hi + span_y, y_lo - span_y, 1e300, -1e300])
    return np.concatenate((xs, outside_x)), np.concatenate((ys, outside_y))


@PROPERTY
@given(transform=estimators(), sample=samples(), seed=st.integers(0, 2**32 - 1))
def test_fit_never_gives_nan_and_output_is_in_unit_interval(transform, sample, seed) -> None:
    if not fit_or_documented_error(transform, sample):
        return
    rng = np.random.default_rng(seed)
    xq, yq = query_points(sample, rng)
    for gamma in (transform.transform(sample.x, sample.y), transform.transform(xq, yq)):
        assert gamma.dtype == np.float64
        assert not np.any(np.isnan(gamma))
        outside = (gamma < 0.0) | (gamma > 1.0)
        assert not np.any(outside), gamma[outside]
    assert transform.transform(sample.x, sample.y).shape == sample.x.shape
    # y beyond every defining score: 0 below, 1 above (documented clamping)
    far = np.array([-1e300, 1e300])
    np.testing.assert_array_equal(transform.transform(xq[:2], far), [0.0, 1.0])


@pytest.mark.slow
@PROPERTY
@given(transform=estimators(), sample=samples(), seed=st.integers(0, 2**32 - 1))
def test_monotone_in_y_at_fixed_x(transform, sample, seed) -> None:
    if not fit_or_documented_error(transform, sample):
        return
    rng = np.random.default_rng(seed)
    y_lo, y_hi = sample.y.min(), sample.y.max()
    ys = np.sort(
        np.concatenate((sample.y, np.linspace(y_lo, y_hi, 101), [y_lo - 1e300, y_hi + 1e300]))
    )
    xs = np.concatenate((rng.choice(sample.x, 4), [sample.x.min(), sample.x.max(), -1e300, 1e300]))
    slack = (
        KDE_FAST_MONOTONE_SLACK
        if isinstance(transform, rb.KDE) and transform.method == "fast"
        else 0.0
    )
    for x0 in xs:
        gamma = transform.transform(np.full_like(ys, x0), ys)
        assert np.all(np.diff(gamma) >= -slack), float(np.diff(gamma).min())


@PROPERTY
@given(transform=estimators(), sample=samples(min_events=40, max_events=200))
def test_tied_scores_at_one_x_share_one_value(transform, sample) -> None:
    if not fit_or_documented_error(transform, sample):
        return
    x0 = float(np.median(sample.x))
    values = np.repeat(np.unique(sample.y), 3)
    gamma = transform.transform(np.full_like(values, x0), values).reshape(-1, 3)
    assert np.all(gamma == gamma[:, :1])


@pytest.mark.slow
@PROPERTY
@given(
    transform=estimators(),
    sample=samples(min_events=40, max_events=200),
    counts=st.lists(st.integers(0, 5), min_size=0, max_size=12),
    shape=st.sampled_from([(6, 5), (2, 3, 5), (30,), (1, 30)]),
)
def test_one_value_per_event_in_the_input_structure(transform, sample, counts, shape) -> None:
    if not fit_or_documented_error(transform, sample):
        return
    rng = np.random.default_rng(len(counts))
    flat_x = rng.choice(sample.x, int(sum(counts)))
    flat_y = rng.choice(sample.y, int(sum(counts)))
    jagged_x = awkward.unflatten(flat_x, np.asarray(counts, dtype=np.int64))
    jagged_y = awkward.unflatten(flat_y, np.asarray(counts, dtype=np.int64))
    gamma = transform.transform(jagged_x, jagged_y)
    assert awkward.to_list(awkward.num(gamma, axis=1)) == counts
    np.testing.assert_array_equal(
        awkward.to_numpy(awkward.flatten(gamma)), transform.transform(flat_x, flat_y)
    )
    size = int(np.prod(shape))
    grid_x = rng.choice(sample.x, size).reshape(shape)
    grid_y = rng.choice(sample.y, size).reshape(shape)
    gamma_grid = transform.transform(grid_x, grid_y)
    assert gamma_grid.shape == shape
    np.testing.assert_array_equal(
        gamma_grid.ravel(), transform.transform(grid_x.ravel(), grid_y.ravel())
    )
    # a scalar x broadcasts against an array of y
    np.testing.assert_array_equal(
        transform.transform(grid_x.flat[0], grid_y),
        transform.transform(np.full(shape, grid_x.flat[0]), grid_y),
    )


@PROPERTY
@given(sample=samples(max_events=200), sigma_r=st.sampled_from([0.03, 0.2, 1.0]))
def test_kde_fast_equals_direct_sum(sample, sigma_r) -> None:
    fast = rb.KDE(sigma_r)
    if not fit_or_documented_error(fast, sample):
        return
    direct = rb.KDE(sigma_r, method="direct").fit(sample.x, sample.y, sample.weight)
    rng = np.random.default_rng(0)
    xq, yq = query_points(sample, rng, 32)
    np.testing.assert_allclose(fast.transform(xq, yq), direct.transform(xq, yq), rtol=0, atol=1e-9)


@PROPERTY
@given(
    transform=estimators(),
    sample=samples(max_events=150),
    scale=st.sampled_from([1e-30, 3.7e-3, 0.37, 1e30]),
)
def test_weights_matter_only_up_to_a_common_factor(transform, sample, scale) -> None:
    weight = np.ones_like(sample.x) if sample.weight is None else sample.weight
    if not fit_or_documented_error(transform, Sample(sample.x, sample.y, weight)):
        return
    scaled = unfitted_copy(transform).fit(sample.x, sample.y, weight * scale)
    xq, yq = query_points(sample, np.random.default_rng(1), 32)
    np.testing.assert_allclose(
        scaled.transform(xq, yq), transform.transform(xq, yq), rtol=0, atol=1e-12
    )


@PROPERTY
@given(
    x=hnp.arrays(np.float64, st.integers(2, 40), elements=st.floats(-1e150, 1e150)),
    data=st.data(),
    transform=estimators(),
)
def test_raw_finite_floats_give_a_result_or_a_documented_error(x, data, transform) -> None:
    """Any finite floats (x within +-1e150, y any): never NaN, never an undocumented exception."""
    y = data.draw(
        hnp.arrays(np.float64, x.shape, elements=st.floats(allow_nan=False, allow_infinity=False))
    )
    try:
        transform.fit(x, y)
    except ValueError as err:
        assert str(err)  # noqa: PT017
        return
    gamma = transform.transform(x, y)
    assert gamma.shape == x.shape
    assert not np.any(np.isnan(gamma))
    assert np.all((gamma >= 0.0) & (gamma <= 1.0))


@pytest.mark.parametrize("method", ["fast", "direct"])
def test_kde_negative_weights_dominating_locally(method: str) -> None:
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal(8), rng.standard_normal(8)
    weight = np.array([1.0, 1.0, -0.5, 1.0, -0.5, -0.5, 1.0, 1.0])
    t = rb.KDE(0.03, method=method).fit(x, y, weight)
    xq = np.linspace(x.min(), x.max(), 201)
    try:
        gamma = t.transform(xq, np.full_like(xq, y[7]))
    except ValueError as err:  # the documented refusal, naming the events affected
        assert "negative weights dominate" in str(err)  # noqa: PT017
    else:
        assert np.all((gamma >= 0.0) & (gamma <= 1.0)), gamma[(gamma < 0) | (gamma > 1)]


@pytest.mark.parametrize("method", ["fast", "direct"])
def test_kde_huge_x_is_fitted_or_refused_clearly(method: str) -> None:
    x = np.array([1e200, -1e200, 0.0, 5.0])
    y = np.arange(4.0)
    t = rb.KDE(0.02, method=method).fit(x, y)
    assert np.isfinite(t.sigma_a_)
    gamma = t.transform(x, y)
    assert np.all((gamma >= 0.0) & (gamma <= 1.0))
    # gamma depends on x only through x / sigma_a: the same as on a rescaled sample
    scaled = rb.KDE(0.02, method=method).fit(x / 1e190, y)
    np.testing.assert_allclose(gamma, scaled.transform(x / 1e190, y), atol=1e-12)
    wide = np.array([1.7e308, -1.7e308, 0.0, 5.0])
    with pytest.raises(ValueError, match=r"x spans .* too wide"):
        rb.KDE(0.02, method=method).fit(wide, y)


@pytest.mark.parametrize("method", ["fast", "direct"])
def test_kde_tiny_width_is_refused_or_evaluated(method: str) -> None:
    x, y = np.random.default_rng(5).standard_normal((2, 60))
    try:
        t = rb.KDE(1e-300, method=method).fit(x, y)
        gamma = t.transform([0.0, 1.0, x[0]], [0.0, 0.0, y[0]])
    except ValueError as err:
        assert "sigma_r" in str(err)  # noqa: PT017
        return
    assert np.all((gamma >= 0.0) & (gamma <= 1.0))


FINITE = st.floats(allow_nan=False, allow_infinity=False)


@PROPERTY
@given(
    values=hnp.arrays(
        np.float64, st.integers(1, 60), elements=FINITE | st.sampled_from([0.0, 1.0, -1e308, 1e308])
    ),
    queries=hnp.arrays(np.float64, st.integers(1, 300), elements=FINITE),
    n_cells=st.integers(1, 200),
)
def test_cell_index_counts_like_searchsorted(
    values: np.ndarray, queries: np.ndarray, n_cells: int
) -> None:
    from rosenblatt._jit import compiled
    from rosenblatt.transforms._column_grid import cell_index
    from rosenblatt.transforms._kernels import count_le_indexed

    kernel = compiled(count_le_indexed, parallel=True)
    if kernel is None:
        pytest.skip("numba is not installed")
    values = np.sort(values)
    queries = np.concatenate((queries, values))  # the values themselves: ties on every edge
    table, lo, scale = cell_index(values[None, :], n_cells)
    out = np.empty(len(queries), dtype=np.intp)
    kernel(values, table[0], lo, scale, queries, out)
    np.testing.assert_array_equal(out, np.searchsorted(values, queries, side="right"))
