"""Shared fixtures: samples with a known conditional distribution."""

from __future__ import annotations

import numpy as np
import pytest
from gaussian_blob import bivariate_normal


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
