"""Bad input gets an error that says what is wrong, where, and for how many events."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import bivariate_normal

import rosenblatt as rb

ESTIMATORS = [
    pytest.param(lambda: rb.IRGI(2), id="irgi"),
    pytest.param(lambda: rb.KDE(0.1), id="kde"),
]


@pytest.fixture(params=ESTIMATORS)
def estimator(request: pytest.FixtureRequest):
    return request.param()


@pytest.fixture
def sample() -> tuple[np.ndarray, np.ndarray]:
    return bivariate_normal(1000, seed=1)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("argument", ["x", "y"])
def test_non_finite_in_fit(estimator, sample, bad, argument) -> None:
    x, y = (a.copy() for a in sample)
    target = x if argument == "x" else y
    target[[3, 10, 11]] = bad
    kind = "NaN" if np.isnan(bad) else "infinite"
    with pytest.raises(ValueError, match=rf"^{argument} has .*3 .*{kind}|^{argument} has 3 {kind}"):
        estimator.fit(x, y)


@pytest.mark.parametrize("argument", ["x", "y"])
def test_non_finite_in_transform(estimator, sample, argument) -> None:
    x, y = sample
    estimator.fit(x, y)
    xq, yq = x[:50].copy(), y[:50].copy()
    (xq if argument == "x" else yq)[[0, 5]] = np.nan
    with pytest.raises(ValueError, match=rf"{argument} has 2 NaN"):
        estimator.transform(xq, yq)


def test_non_finite_weight(estimator, sample) -> None:
    x, y = sample
    w = np.ones_like(x)
    w[7] = np.nan
    with pytest.raises(ValueError, match="weight has 1 NaN"):
        estimator.fit(x, y, w)


@pytest.mark.parametrize("weights", [0.0, -1.0])
def test_weights_without_positive_sum(estimator, sample, weights) -> None:
    x, y = sample
    with pytest.raises(ValueError, match="weight must have a positive sum"):
        estimator.fit(x, y, np.full_like(x, weights))


def test_length_mismatch(estimator, sample) -> None:
    x, y = sample
    with pytest.raises(ValueError, match="length mismatch: x has 1000, y has 999"):
        estimator.fit(x, y[:-1])
    with pytest.raises(ValueError, match="length mismatch: weight has 10"):
        estimator.fit(x, y, np.ones(10))


def test_empty(estimator) -> None:
    with pytest.raises(ValueError, match="x is empty"):
        estimator.fit([], [])


def test_empty_transform_gives_empty(estimator, sample) -> None:
    estimator.fit(*sample)
    assert estimator.transform(np.empty(0), np.empty(0)).shape == (0,)


def test_multidimensional_and_non_numeric(estimator, sample) -> None:
    x, y = sample
    with pytest.raises(ValueError, match="x must be one-dimensional"):
        estimator.fit(x.reshape(100, 10), y.reshape(100, 10))
    with pytest.raises(TypeError, match="y must be numeric"):
        estimator.fit(x, y.astype(str))


def test_constant_x(estimator, sample) -> None:
    _, y = sample
    with pytest.raises(ValueError, match="x is constant"):
        estimator.fit(np.full_like(y, 3.0), y)


def test_constant_y_irgi(sample) -> None:
    x, _ = sample
    with pytest.raises(ValueError, match="y is constant"):
        rb.IRGI(2).fit(x, np.full_like(x, 0.5))


def test_too_few_events_names_largest_depth(sample) -> None:
    x, y = sample
    with pytest.raises(ValueError, match=r"the sample has 1000; the largest depth .* is 4"):
        rb.IRGI(6).fit(x, y)


@pytest.mark.parametrize("depth", [-1, 2.5, "3", True])
def test_bad_depth(sample, depth) -> None:
    with pytest.raises(ValueError, match="depth must be a non-negative integer"):
        rb.IRGI(depth).fit(*sample)
