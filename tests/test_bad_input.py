"""Bad input gets an error that says what is wrong, where, and for how many events."""

from __future__ import annotations

import numpy as np
import pytest
from gaussian_blob import bivariate_normal

import rosenblatt as rb

pytestmark = pytest.mark.core

ESTIMATORS = [
    pytest.param(lambda: rb.IRGI(2), id="irgi"),
    pytest.param(lambda: rb.KDE(0.1), id="kde"),
    pytest.param(lambda: rb.KDE(0.1, method="direct"), id="kde-direct"),
    pytest.param(lambda: rb.GridKDE(0.1), id="grid-kde"),
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


def test_propagate_gives_nan_for_nan_events_and_counts_them(estimator, sample) -> None:
    import awkward as ak

    x, y = sample
    estimator.fit(x, y)
    xq, yq = x[:50].copy(), y[:50].copy()
    xq[[0, 5]] = np.nan
    yq[[5, 7]] = np.nan
    with pytest.warns(
        rb.NaNInputWarning, match=r"^3 of 50 event\(s\) have a NaN x or y \(first at index 0\)"
    ):
        gamma = estimator.transform(xq, yq, nan_policy="propagate")
    assert gamma.shape == (50,)
    assert np.flatnonzero(np.isnan(gamma)).tolist() == [0, 5, 7]
    keep = ~np.isnan(gamma)
    np.testing.assert_array_equal(gamma[keep], estimator.transform(xq[keep], yq[keep]))
    # the same events in a jagged structure: one value out per event in, NaN where NaN went in
    jagged_x = ak.unflatten(xq, [20, 0, 30])
    with pytest.warns(rb.NaNInputWarning):
        jagged = estimator.transform(
            jagged_x, ak.unflatten(yq, [20, 0, 30]), nan_policy="propagate"
        )
    assert ak.num(jagged).tolist() == [20, 0, 30]
    np.testing.assert_array_equal(ak.flatten(jagged).to_numpy(), gamma)


def test_propagate_takes_infinities_as_beyond_the_domain(estimator, sample) -> None:
    x, y = sample
    estimator.fit(x, y)
    (x_lo, x_hi), _ = estimator.domain_
    xq = np.array([0.0, 0.0, np.inf, -np.inf, np.inf, -np.inf])
    yq = np.array([np.inf, -np.inf, 0.3, 0.3, np.inf, -np.inf])
    gamma = estimator.transform(xq, yq, nan_policy="propagate")
    expected_edges = estimator.transform([x_hi, x_lo], [0.3, 0.3])
    np.testing.assert_array_equal(gamma, [1.0, 0.0, *expected_edges, 1.0, 0.0])


def test_unknown_nan_policy(estimator, sample) -> None:
    estimator.fit(*sample)
    with pytest.raises(ValueError, match="nan_policy must be 'raise' or 'propagate', got 'omit'"):
        estimator.transform([0.0], [0.0], nan_policy="omit")


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


def test_propagate_on_a_transform_read_from_correctionlib(sample, tmp_path) -> None:
    pytest.importorskip("correctionlib")
    from rosenblatt.correctionlib import write_correctionlib

    fitted = rb.IRGI(3).fit(*sample)
    path = tmp_path / "gamma.json"
    write_correctionlib(fitted, path)
    loaded = rb.load(path)
    xq = np.array([0.1, np.nan, np.inf, 0.1])
    yq = np.array([0.2, 0.2, 0.2, -np.inf])
    with pytest.warns(rb.NaNInputWarning, match="^1 of 4 event"):
        gamma = loaded.transform(xq, yq, nan_policy="propagate")
    assert np.isnan(gamma[1])
    np.testing.assert_allclose(
        gamma[[0, 2]], fitted.transform([0.1, fitted.domain_[0][1]], [0.2, 0.2]), atol=1e-12
    )
    assert gamma[3] == 0.0
