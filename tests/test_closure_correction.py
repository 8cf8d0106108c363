"""The closure factor of the ABCD estimate and its keyed-bootstrap uncertainty."""

from __future__ import annotations

import numpy as np
import pytest

import rosenblatt as rb
from rosenblatt.abcd import abcd_histogram
from rosenblatt.abcd.closure_correction import (
    abcd_prediction,
    closure_correction,
    measured_closure,
)
from rosenblatt.transforms.ensemble import keyed_poisson_weights

X0, Y0 = [0.0, 0.5, 1.0], [0.0, 0.5, 1.0]


def _sample(seed: int, n: int, rho: float = 0.4) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=n)
    return x, rho * x + np.sqrt(1 - rho**2) * rng.normal(size=n)


def _histogram(x: np.ndarray, y: np.ndarray, weight: np.ndarray | None = None):
    return abcd_histogram(x, y, np.zeros(len(x), dtype=int), x0=X0, y0=Y0, weight=weight)


def test_the_measured_factor_is_the_double_ratio_with_its_statistical_error() -> None:
    x, y = _sample(1, 20_000)
    weight = np.random.default_rng(2).choice([-0.2, 1.0, 1.3], len(x), p=[0.1, 0.6, 0.3])
    closure = measured_closure(_histogram(x, y, weight))
    for i, x0 in enumerate(X0):
        for j, y0 in enumerate(Y0):
            regions = [(x >= x0) & (y >= y0), (x >= x0) & (y < y0), (x < x0) & (y >= y0)]
            regions.append((x < x0) & (y < y0))
            a, b, c, d = (weight[r].sum() for r in regions)
            assert closure.measured[i, j] == pytest.approx(a * d / (b * c), rel=1e-12)
            relative = sum((weight[r] ** 2).sum() / weight[r].sum() ** 2 for r in regions)
            assert closure.error[i, j] == pytest.approx(abs(a * d / (b * c)) * np.sqrt(relative))
    assert np.isnan(closure.transform_fit).all()


def test_without_a_fit_the_keyed_error_is_the_simulations_statistics() -> None:
    # a score that needs no fit: every replica is the nominal, so delta_k is the
    # simulation's own Poisson reweighting and its spread the delta-method error
    x, y = _sample(3, 40_000, rho=0.0)
    nominal = _histogram(x, y)
    replicas = [nominal] * 200
    resampled = [
        _histogram(x, y, keyed_poisson_weights(x, y, 0, k).astype(float)) for k in range(200)
    ]
    closure = closure_correction(nominal, replicas, resampled)
    assert np.all(closure.transform_fit < 1e-12)
    ratio = closure.error / closure.simulation_statistics
    assert 0.8 < np.median(ratio) < 1.2
    assert np.all(np.abs(closure.bias) < 3 * closure.error / np.sqrt(200))


@pytest.mark.slow
def test_a_transform_fitted_on_the_simulation_itself_has_its_fit_in_the_error() -> None:
    # the simulation is the defining sample: measured in-sample the transform closes
    # better than on new events; the keyed replicas see its fit
    x, y = _sample(5, 8000)
    ensemble = rb.bootstrap(rb.IRGI(depth=3), x, y, n=30, seed=1, keyed=True)
    nominal = _histogram(x, ensemble.transform(x, y))
    replicas, resampled = [], []
    for replica, draw in zip(ensemble.replicas_, ensemble.replica_draws_, strict=True):
        gamma = replica.transform(x, y)
        replicas.append(_histogram(x, gamma))
        resampled.append(_histogram(x, gamma, keyed_poisson_weights(x, y, 1, draw).astype(float)))
    closure = closure_correction(nominal, replicas, resampled)
    central = (1, 1)
    assert closure.transform_fit[central] > 0
    assert closure.error[central] > 0
    assert closure.factor[central] == pytest.approx(
        closure.measured[central] - closure.bias[central]
    )
    # the actual spread of the double ratio on new events over defining samples
    truths = []
    for seed in range(20):
        fitted = rb.IRGI(depth=3).fit(*_sample(100 + seed, 8000))
        xt, yt = _sample(500 + seed, 200_000)
        truths.append(measured_closure(_histogram(xt, fitted.transform(xt, yt))).measured)
    spread = np.std(truths, axis=0, ddof=1)[central]
    assert 0.5 < closure.error[central] / spread < 2.0


def test_the_prediction_and_its_uncertainties() -> None:
    prediction = abcd_prediction([400.0, 900.0, 3600.0], [400.0, 900.0, 3600.0], 1.1, 0.05)
    assert prediction.uncorrected == pytest.approx(100.0)
    assert prediction.value == pytest.approx(110.0)
    assert prediction.stat == pytest.approx(110.0 * np.sqrt(1 / 400 + 1 / 900 + 1 / 3600))
    assert prediction.syst == pytest.approx(5.0)
    assert prediction.error == pytest.approx(np.hypot(prediction.stat, 5.0))
    empty = abcd_prediction([400.0, 0.0, 3600.0], [400.0, 0.0, 3600.0], 1.0, 0.1)
    assert np.isnan(empty.value)


def test_replicas_must_come_in_pairs() -> None:
    x, y = _sample(7, 1000)
    h = _histogram(x, y)
    with pytest.raises(ValueError, match="each replica needs both"):
        closure_correction(h, [h, h], [h])
    with pytest.raises(ValueError, match="at least 2 replicas"):
        closure_correction(h, [h], [h])
