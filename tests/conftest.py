"""Shared fixtures: samples with a known conditional distribution."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import norm

RHO = 0.6


def bivariate_normal(n: int, seed: int, rho: float = RHO) -> tuple[np.ndarray, np.ndarray]:
    """Draw ``n`` events of a standard bivariate normal with correlation ``rho``."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(n)
    y = rho * x + np.sqrt(1 - rho**2) * rng.standard_normal(n)
    return x, y


def exact_gamma(x: np.ndarray, y: np.ndarray, rho: float = RHO) -> np.ndarray:
    """The closed-form conditional CDF of the bivariate normal."""
    return norm.cdf((y - rho * x) / np.sqrt(1 - rho**2))


@pytest.fixture(scope="session")
def blob_sample() -> dict[str, np.ndarray]:
    """10^5 defining and 10^5 testing events of the paper's Gaussian-blob background."""
    x_def, y_def = bivariate_normal(100_000, seed=11)
    x_test, y_test = bivariate_normal(100_000, seed=12)
    return {"x_def": x_def, "y_def": y_def, "x_test": x_test, "y_test": y_test}


@pytest.fixture
def small_sample() -> tuple[np.ndarray, np.ndarray]:
    """4096 correlated events."""
    return bivariate_normal(4096, seed=3)
