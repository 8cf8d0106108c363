"""Closed-form populations with a vector protected observable ``x`` of shape ``(n, k)``."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from rosenblatt.closed_forms import VECTOR_CASES, closed_form

NAMES = sorted(VECTOR_CASES)


@pytest.mark.parametrize("name", NAMES)
def test_draws_have_the_stated_correlation(name: str) -> None:
    case = VECTOR_CASES[name]
    x, y = case.sample(100_000, seed=1)
    assert x.shape == (100_000, case.dims)
    assert y.shape == (100_000,)
    corr = np.corrcoef(x.T)
    off = corr[~np.eye(case.dims, dtype=bool)]
    assert np.allclose(off, 0.5, atol=0.01)
    assert np.allclose(x.std(axis=0), 1.0, atol=0.01)


@pytest.mark.parametrize("name", NAMES)
def test_exact_gamma_is_uniform_and_independent_of_each_observable(name: str) -> None:
    case = VECTOR_CASES[name]
    x, y = case.sample(40_000, seed=5)
    gamma = case.exact(x, y)
    assert stats.kstest(gamma, "uniform").pvalue > 1e-3
    for d in range(case.dims):
        low = x[:, d] < np.median(x[:, d])
        assert stats.ks_2samp(gamma[low], gamma[~low]).pvalue > 1e-3
        assert stats.ks_2samp(y[low], y[~low]).pvalue < 1e-6


def test_two_observables_matches_the_stated_formula() -> None:
    case = closed_form("two_observables")
    x = np.array([[0.3, -1.2], [2.0, 0.5]])
    y = np.array([0.1, 1.0])
    mean = 0.6 * x[:, 0] + 0.4 * x[:, 1]
    sd = 0.6 * np.exp(0.15 * x[:, 1])
    assert np.allclose(case.exact(x, y), stats.norm.cdf((y - mean) / sd), rtol=0, atol=1e-14)


def test_exact_gamma_matches_conditional_frequencies() -> None:
    """In a small box about a point of x, the fraction below y is the exact CDF."""
    case = closed_form("two_observables")
    x, y = case.sample(1_000_000, seed=6)
    for x0 in ([0.0, 0.0], [1.0, -0.5], [-0.8, 1.2]):
        inside = np.all(np.abs(x - np.array(x0)) < 0.03, axis=1)
        for level in (0.2, 0.5, 0.8):
            y0 = np.quantile(y[inside], level)
            expected = case.exact(np.array(x0), y0)
            tolerance = 5 * np.sqrt(level * (1 - level) / inside.sum()) + 0.01
            assert abs(np.mean(y[inside] <= y0) - expected) < tolerance


def test_wrong_number_of_observables_is_refused() -> None:
    with pytest.raises(ValueError, match="2 observables"):
        closed_form("two_observables").exact(np.zeros((4, 3)), np.zeros(4))
    with pytest.raises(KeyError, match="two_observables"):
        closed_form("nonexistent")
