"""Accuracy against the exact conditional CDF of the bivariate normal."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import exact_gamma

import rosenblatt as rb


def rms_to_exact(transform: rb.IRGI | rb.KDE, sample: dict[str, np.ndarray]) -> float:
    transform.fit(sample["x_def"], sample["y_def"])
    gamma = transform.transform(sample["x_test"], sample["y_test"])
    exact = exact_gamma(sample["x_test"], sample["y_test"])
    return float(np.sqrt(np.mean((gamma - exact) ** 2)))


def test_irgi_depth7_rms(blob_sample: dict[str, np.ndarray]) -> None:
    assert rms_to_exact(rb.IRGI(depth=7), blob_sample) <= 0.02


def test_kde_sigma005_rms(blob_sample: dict[str, np.ndarray]) -> None:
    assert rms_to_exact(rb.KDE(sigma_r=0.05), blob_sample) <= 0.012


def test_irgi_converges_with_depth(blob_sample: dict[str, np.ndarray]) -> None:
    errors = [rms_to_exact(rb.IRGI(depth=d), blob_sample) for d in (1, 3, 5)]
    assert errors[0] > errors[1] > errors[2]


@pytest.mark.parametrize("sigma_r", [0.005, 0.05, 0.3, 2.0])
def test_kde_fast_equals_direct(blob_sample: dict[str, np.ndarray], sigma_r: float) -> None:
    x, y = blob_sample["x_def"][:20_000], blob_sample["y_def"][:20_000]
    xq, yq = blob_sample["x_test"][:1500], blob_sample["y_test"][:1500]
    # include queries in the sparse tails and beyond the sample
    xq = np.concatenate((xq, [-6.0, -4.3, 3.9, 4.4, 7.0]))
    yq = np.concatenate((yq, [0.0, -2.0, 1.0, 3.0, -0.5]))
    fast = rb.KDE(sigma_r).fit(x, y).transform(xq, yq)
    direct = rb.KDE(sigma_r, method="direct").fit(x, y).transform(xq, yq)
    np.testing.assert_allclose(fast, direct, rtol=0, atol=1e-9)
