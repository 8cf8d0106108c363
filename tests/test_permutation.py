"""Permutation floor and test of independence for dCor²."""

from __future__ import annotations

import dataclasses
import math
from itertools import permutations

import numpy as np
import pytest

from rosenblatt import metrics
from rosenblatt._jit import numba_enabled

pytestmark = pytest.mark.core

BACKENDS = ["numba", "numpy"]


def use_backend(patch: pytest.MonkeyPatch, name: str) -> None:
    """Select the numba kernel or the numpy fallback for the rest of the test."""
    if name == "numba":
        patch.delenv("ROSENBLATT_NO_NUMBA", raising=False)
        if not numba_enabled():
            pytest.skip("numba is not installed")
    else:
        patch.setenv("ROSENBLATT_NO_NUMBA", "1")


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run the test once with the numba kernel and once with the numpy fallback."""
    use_backend(monkeypatch, request.param)
    return str(request.param)


def exact_permutation_mean(x: np.ndarray, y: np.ndarray) -> float:
    """Mean of dCor² over all permutations of ``y`` (unweighted, exact).

    With doubly centred distance matrices A and B, averaging
    ``n^-2 sum_ij A_ij B_pi(i)pi(j)`` over all permutations gives
    ``tr(A) tr(B) / (n^2 (n - 1))`` with ``tr(A) = -n mean|x_i - x_j|``; the
    distance variances do not change under permutation.
    """
    n = x.size
    a_bar = np.abs(x[:, None] - x[None, :]).mean()
    b_bar = np.abs(y[:, None] - y[None, :]).mean()
    dvar_x = distance_variance_sqr(x)
    dvar_y = distance_variance_sqr(y)
    return float(a_bar * b_bar / (n - 1) / math.sqrt(dvar_x * dvar_y))


def distance_variance_sqr(values: np.ndarray) -> float:
    distance = np.abs(values[:, None] - values[None, :])
    centred = (
        distance - distance.mean(axis=0)[None, :] - distance.mean(axis=1)[:, None] + distance.mean()
    )
    return float((centred * centred).mean())


def test_result_is_frozen_and_statistic_is_dcor_sqr(backend: str) -> None:
    rng = np.random.default_rng(1)
    x = rng.normal(size=500)
    y = x + rng.normal(size=500)
    weight = rng.uniform(0.5, 2.0, size=500)
    result = metrics.permutation_test(x, y, weight, n_permutations=5, seed=3)
    assert isinstance(result, metrics.PermutationTestResult)
    assert result.statistic == metrics.distance_correlation_sqr(x, y, weight)
    assert result.n_permutations == 5
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.statistic = 0.0  # type: ignore[misc]


def test_floor_matches_exact_permutation_mean(backend: str) -> None:
    rng = np.random.default_rng(5)
    x = rng.exponential(size=800)
    y = np.round(rng.normal(size=800), 1)
    n_permutations = 200
    result = metrics.permutation_test(x, y, n_permutations=n_permutations, seed=7)
    expected = exact_permutation_mean(x, y)
    assert result.floor_std > 0
    assert abs(result.floor - expected) < 5 * result.floor_std / math.sqrt(n_permutations)


def test_independent_data_give_unremarkable_p_value(backend: str) -> None:
    rng = np.random.default_rng(11)
    x = rng.normal(size=2000)
    y = rng.normal(size=2000)
    result = metrics.permutation_test(x, y, n_permutations=50, seed=12)
    assert result.p_value > 0.05
    assert result.statistic < result.floor + 4 * result.floor_std


def test_dependent_data_reach_the_smallest_p_value(backend: str) -> None:
    rng = np.random.default_rng(13)
    x = rng.normal(size=2000)
    y = 0.2 * x + rng.normal(size=2000)
    n_permutations = 30
    result = metrics.permutation_test(x, y, n_permutations=n_permutations, seed=14)
    assert result.p_value == 1 / (n_permutations + 1)
    assert result.statistic > result.floor + 10 * result.floor_std


def test_seed_fixes_result_whatever_the_number_of_threads() -> None:
    rng = np.random.default_rng(17)
    x = rng.normal(size=3000)
    y = rng.normal(size=3000)
    weight = rng.uniform(0.1, 1.0, size=3000)
    one = metrics.permutation_test(x, y, weight, n_permutations=12, seed=99, n_jobs=1)
    two = metrics.permutation_test(x, y, weight, n_permutations=12, seed=99, n_jobs=2)
    other = metrics.permutation_test(x, y, weight, n_permutations=12, seed=100, n_jobs=2)
    assert one == two
    assert other.floor != one.floor


def test_backends_give_the_same_permutations(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("numba")
    rng = np.random.default_rng(19)
    x = np.round(rng.normal(size=1500), 2)
    y = x**2 + rng.normal(size=1500)
    weight = rng.integers(1, 4, size=1500)
    results = []
    for name in BACKENDS:
        use_backend(monkeypatch, name)
        results.append(metrics.permutation_test(x, y, weight, n_permutations=8, seed=4))
    numba_result, numpy_result = results
    assert numba_result.p_value == numpy_result.p_value
    for field in ("statistic", "floor", "floor_std"):
        assert getattr(numba_result, field) == pytest.approx(getattr(numpy_result, field), rel=1e-9)


@pytest.mark.parametrize("weighted", [False, True])
def test_each_permutation_pairs_x_and_weight_with_shuffled_y(backend: str, weighted: bool) -> None:
    rng = np.random.default_rng(23)
    x = np.array([0.3, -1.2, 2.0, 0.7, 1.1])
    y = np.array([5.0, 1.0, -2.0, 0.5, 3.0])
    weight = np.array([1.0, 2.5, 0.5, 1.5, 3.0]) if weighted else None
    every_pairing = np.array(
        [
            metrics.distance_correlation_sqr(x, y[list(order)], weight)
            for order in permutations(range(5))
        ]
    )
    for seed in rng.integers(0, 2**31, size=6):
        single = metrics.permutation_test(x, y, weight, n_permutations=1, seed=int(seed))
        assert single.floor_std == 0.0
        assert np.min(np.abs(every_pairing - single.floor)) < 1e-12
        if abs(single.floor - single.statistic) > 1e-12:
            assert single.p_value == (1.0 if single.floor > single.statistic else 0.5)


def test_constant_input_and_bad_arguments() -> None:
    x = np.arange(10.0)
    result = metrics.permutation_test(x, np.ones(10), n_permutations=4, seed=0)
    assert result == metrics.PermutationTestResult(0.0, 0.0, 0.0, 1.0, 4)
    with pytest.raises(ValueError, match="n_permutations must be a positive integer, got 0"):
        metrics.permutation_test(x, x, n_permutations=0)
    with pytest.raises(ValueError, match=r"n_permutations must be a positive integer, got 2\.5"):
        metrics.permutation_test(x, x, n_permutations=2.5)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="n_jobs must be at least 1, got 0"):
        metrics.permutation_test(x, x, n_jobs=0)
    with pytest.raises(ValueError, match=r"^y has 1 NaN"):
        metrics.permutation_test(x, np.r_[np.nan, x[1:]])


def test_progress_bar_does_not_change_the_result(capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("tqdm")
    rng = np.random.default_rng(29)
    x = rng.normal(size=300)
    y = rng.normal(size=300)
    quiet = metrics.permutation_test(x, y, n_permutations=6, seed=2)
    shown = metrics.permutation_test(x, y, n_permutations=6, seed=2, progress=True)
    assert shown == quiet
    assert "permutations" in capsys.readouterr().err
