"""ABCD regions and closure, checked against direct counting."""

from __future__ import annotations

import numpy as np
import pytest

from rosenblatt.abcd import abcd_histogram, closure_scan

pytestmark = pytest.mark.core


@pytest.fixture
def sample() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(1)
    n_bkg, n_sig = 20_000, 2_000
    x = np.r_[rng.exponential(0.6, n_bkg) + 2.0, rng.normal(3.5, 0.1, n_sig)]
    y = np.r_[rng.uniform(0, 1, n_bkg), rng.beta(5, 1, n_sig)]
    y[:50] = 1.0  # exactly on the top edge
    label = np.r_[np.zeros(n_bkg, int), np.ones(n_sig, int)]
    weight = rng.uniform(0.5, 1.5, len(x))
    return {"x": x, "y": y, "label": label, "weight": weight}


def test_counts_equal_direct_counting(sample) -> None:
    x0 = np.linspace(2.0, 3.7, 18)
    y0 = np.linspace(0.1, 0.85, 16)
    h = abcd_histogram(
        sample["x"], sample["y"], sample["label"], x0=x0, y0=y0, weight=sample["weight"]
    )
    scan = closure_scan(h)
    np.testing.assert_allclose(scan.x0, x0)
    np.testing.assert_allclose(scan.y0, y0)
    x, y, w, sig = sample["x"], sample["y"], sample["weight"], sample["label"] == 1
    for i, j in [(0, 0), (5, 7), (17, 15), (10, 3)]:
        high_x, high_y = x >= x0[i], y >= y0[j]
        assert scan.n_a[i, j] == pytest.approx(w[high_x & high_y].sum())
        assert scan.n_b[i, j] == pytest.approx(w[high_x & ~high_y].sum())
        assert scan.n_c[i, j] == pytest.approx(w[~high_x & high_y].sum())
        assert scan.n_d[i, j] == pytest.approx(w[~high_x & ~high_y].sum())
        assert scan.var_d[i, j] == pytest.approx((w[~high_x & ~high_y] ** 2).sum())
        assert scan.signal_a[i, j] == pytest.approx(w[high_x & high_y & sig].sum())
    total = scan.n_a + scan.n_b + scan.n_c + scan.n_d
    np.testing.assert_allclose(total, w.sum())


def test_eta_formula(sample) -> None:
    h = abcd_histogram(sample["x"], sample["y"], sample["label"], x0=[2.5, 3.0], y0=[0.5, 0.8])
    scan = closure_scan(h)
    a, b, c, d, s = scan.n_a, scan.n_b, scan.n_c, scan.n_d, scan.signal_a
    np.testing.assert_allclose(scan.eta, s / a - (1 - b * c / (a * d)))
    np.testing.assert_allclose(scan.signal_estimate, a - b * c / d)


def test_independent_background_closes_within_errors() -> None:
    rng = np.random.default_rng(7)
    pulls = []
    for _ in range(20):
        n = 20_000
        x, y = rng.uniform(0, 1, n), rng.uniform(0, 1, n)
        scan = closure_scan(abcd_histogram(x, y, np.zeros(n, int), x0=[0.3, 0.6], y0=[0.4, 0.7]))
        pulls.append(scan.pull.ravel())
    pulls = np.concatenate(pulls)
    assert abs(np.mean(pulls)) < 0.35
    assert 0.6 < np.std(pulls) < 1.4


def test_dependent_background_does_not_close() -> None:
    rng = np.random.default_rng(8)
    n = 50_000
    x = rng.uniform(0, 1, n)
    y = np.clip(x + rng.normal(0, 0.2, n), 0, 1)
    scan = closure_scan(
        abcd_histogram(x, y, np.zeros(n, int), x0=[0.4, 0.5, 0.6], y0=[0.4, 0.5, 0.6])
    )
    assert np.all(np.abs(scan.pull) > 5)
    assert scan.fraction_below(1e-2) == 0.0


def test_best_and_fractions(sample) -> None:
    x0 = np.linspace(2.0, 3.7, 30)
    y0 = np.linspace(0.1, 0.85, 30)
    scan = closure_scan(abcd_histogram(sample["x"], sample["y"], sample["label"], x0=x0, y0=y0))
    best = scan.best()
    assert abs(best["eta"]) == pytest.approx(np.nanmin(np.abs(scan.eta[scan.valid])))
    assert best["x0"] in x0
    assert 0 <= scan.fraction_below(1e-3) <= scan.fraction_below(1e-2) <= 1


def test_bad_labels() -> None:
    with pytest.raises(ValueError, match="label must be 0"):
        abcd_histogram([1.0, 2.0], [0.1, 0.2], [0, 2], x0=[1, 2], y0=[0.1, 0.2])
