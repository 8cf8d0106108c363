"""The paper's Gaussian-blob background: a bivariate normal and its exact conditional CDF."""

from __future__ import annotations

import numpy as np
from scipy.stats import norm

__all__ = ["RHO", "bivariate_normal", "exact_gamma"]

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
