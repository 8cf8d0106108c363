"""Distance correlation of a score with a vector of protected observables ``x`` of shape ``(n, k)``."""

from __future__ import annotations

from types import ModuleType

import numpy as np
import pytest

import rosenblatt as rb
from rosenblatt.metrics import _multivariate, projected_distance_correlation_sqr


def _sample(n: int, k: int, seed: int, dependence: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, k)) @ np.linalg.cholesky(np.full((k, k), 0.5) + 0.5 * np.eye(k)).T
    y = dependence * (x[:, 0] ** 2 - x[:, -1]) + rng.standard_normal(n)
    return x, y


@pytest.mark.slow
@pytest.mark.parametrize(("n", "k"), [(50, 2), (2000, 2), (3000, 3), (1500, 5)])
def test_exact_equals_dcor(n: int, k: int, dcor: ModuleType) -> None:
    x, y = _sample(n, k, seed=n + k)
    x = 40.0 + 3.0 * x  # a shift and scale that dcor handles without rescaling
    expected = dcor.distance_correlation_sqr(x, y)
    assert rb.distance_correlation_sqr(x, y) == pytest.approx(expected, abs=1e-9)
    assert rb.distance_correlation_sqr(x, y, method="exact") == pytest.approx(expected, abs=1e-9)
    assert rb.distance_covariance_sqr(x, y) == pytest.approx(
        dcor.distance_covariance_sqr(x, y), rel=1e-9
    )
    assert rb.distance_correlation(x, y) == pytest.approx(dcor.distance_correlation(x, y), abs=1e-9)


def test_numpy_path_equals_compiled(monkeypatch: pytest.MonkeyPatch) -> None:
    x, y = _sample(1200, 2, seed=3)
    compiled = rb.distance_correlation_sqr(x, y)
    monkeypatch.setattr(_multivariate, "_compiled_rows", lambda: None)
    assert rb.distance_correlation_sqr(x, y) == pytest.approx(compiled, abs=1e-12)


def test_integer_weights_repeat_events(dcor: ModuleType) -> None:
    x, y = _sample(600, 2, seed=4)
    w = np.random.default_rng(5).integers(0, 4, len(y))
    repeated = dcor.distance_correlation_sqr(np.repeat(x, w, axis=0), np.repeat(y, w))
    assert rb.distance_correlation_sqr(x, y, w) == pytest.approx(repeated, abs=1e-9)


def test_column_is_the_scalar_statistic_exactly() -> None:
    x, y = _sample(3000, 1, seed=6)
    assert rb.distance_correlation_sqr(x, y) == rb.distance_correlation_sqr(x[:, 0], y)


def test_independent_vector_gives_the_permutation_floor() -> None:
    x, _ = _sample(1000, 2, seed=7)
    y = np.random.default_rng(8).standard_normal(1000)
    result = rb.permutation_test(x, y, n_permutations=40, seed=1)
    assert result.p_value > 0.01
    assert result.floor == pytest.approx(result.statistic, abs=5 * result.floor_std)
    dependent = rb.permutation_test(*_sample(1000, 2, seed=9), n_permutations=20, seed=1)
    assert dependent.p_value == pytest.approx(1 / 21)
    assert dependent.statistic > 10 * dependent.floor


@pytest.mark.slow
def test_projection_tracks_exact_within_its_error() -> None:
    x, y = _sample(4000, 3, seed=10)
    exact = rb.distance_correlation_sqr(x, y, method="exact")
    pulls = []
    for seed in range(5):
        estimate = projected_distance_correlation_sqr(x, y, n_projections=60, seed=seed)
        assert 0 < estimate.error < 0.1 * exact
        pulls.append((estimate.value - exact) / estimate.error)
    assert np.all(np.abs(pulls) < 4)
    many = projected_distance_correlation_sqr(x, y, n_projections=600, seed=99)
    assert many.error < 0.5 * estimate.error
    assert abs(many.value - exact) < 4 * many.error
    via_method = rb.distance_correlation_sqr(x, y, method="projection", n_projections=60, seed=4)
    assert via_method == estimate.value


def test_projection_permutation_floor_is_small_for_independent_data() -> None:
    x, _ = _sample(3000, 2, seed=11)
    y = np.random.default_rng(12).standard_normal(3000)
    result = rb.permutation_test(
        x, y, n_permutations=10, seed=0, method="projection", n_projections=20
    )
    assert result.p_value > 0.05
    assert result.floor < 3e-3


def test_bad_input_is_refused() -> None:
    x, y = _sample(100, 2, seed=13)
    with pytest.raises(ValueError, match="length mismatch"):
        rb.distance_correlation_sqr(x[:-1], y)
    bad = x.copy()
    bad[3, 1] = np.nan
    with pytest.raises(ValueError, match="1 NaN"):
        rb.distance_correlation_sqr(bad, y)
    with pytest.raises(ValueError, match="method"):
        rb.distance_correlation_sqr(x, y, method="fast")
    with pytest.raises(ValueError, match="n_projections"):
        rb.distance_correlation_sqr(x, y, method="projection", n_projections=1)
    with pytest.raises(ValueError, match="shape"):
        projected_distance_correlation_sqr(y, y)


def test_constant_vector_gives_zero() -> None:
    _, y = _sample(100, 2, seed=14)
    assert rb.distance_correlation_sqr(np.ones((100, 2)), y) == 0.0
