"""Invariants every conditional-CDF transform must satisfy."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import kstest

import rosenblatt as rb

pytestmark = pytest.mark.core

TRANSFORMS = [
    pytest.param(lambda: rb.IRGI(depth=5), id="irgi"),
    pytest.param(lambda: rb.KDE(sigma_r=0.1), id="kde"),
]


@pytest.fixture(params=TRANSFORMS)
def fitted(request: pytest.FixtureRequest, small_sample: tuple[np.ndarray, np.ndarray]):
    x, y = small_sample
    return request.param().fit(x, y), x, y


def test_values_in_unit_interval(fitted) -> None:
    t, _, _ = fitted
    rng = np.random.default_rng(0)
    xq = rng.uniform(-6, 6, 5000)
    yq = rng.uniform(-6, 6, 5000)
    g = t.transform(xq, yq)
    assert g.shape == xq.shape
    assert np.all((g >= 0) & (g <= 1))


def test_monotone_in_y_at_fixed_x(fitted) -> None:
    t, _, _ = fitted
    ys = np.linspace(-5, 5, 2001)
    for x0 in (-4.0, -1.3, 0.0, 0.7, 2.5, 5.0):
        g = t.transform(np.full_like(ys, x0), ys)
        # KDE's fast evaluation is monotone up to rounding of its kernel expansion
        tolerance = 1e-14 if isinstance(t, rb.KDE) else 0.0
        assert np.all(np.diff(g) >= -tolerance), f"not monotone at x={x0}"
        assert g[0] == 0.0
        assert g[-1] == 1.0


def assert_uniform(t: rb.IRGI | rb.KDE, g: np.ndarray) -> None:
    """KDE is uniform to sampling precision; IRGI to its grid resolution 2**-depth."""
    result = kstest(g, "uniform")
    if isinstance(t, rb.IRGI):
        assert result.statistic < 2.0**-t.depth + 1.63 / np.sqrt(len(g))
    else:
        assert result.pvalue > 1e-3


def test_uniform_on_defining_sample(fitted) -> None:
    t, x, y = fitted
    assert_uniform(t, t.transform(x, y))


def test_uniform_and_independent_on_fresh_sample(fitted) -> None:
    from gaussian_blob import bivariate_normal

    t, _, _ = fitted
    x, y = bivariate_normal(4096, seed=99)
    g = t.transform(x, y)
    assert_uniform(t, g)
    # the fraction above the median of gamma does not depend on x
    low = g[x < np.median(x)]
    high = g[x >= np.median(x)]
    assert abs(np.mean(low > 0.5) - np.mean(high > 0.5)) < 0.05
    assert abs(np.corrcoef(x, y)[0, 1]) > 0.5
    assert abs(np.corrcoef(x, g)[0, 1]) < 0.05


def test_broadcasting_and_shape(fitted) -> None:
    t, _, _ = fitted
    ys = np.linspace(-2, 2, 12).reshape(3, 4)
    g = t.transform(0.5, ys)
    assert g.shape == (3, 4)
    np.testing.assert_array_equal(g.ravel(), t.transform(np.full(12, 0.5), ys.ravel()))


def test_fit_transform_equals_fit_then_transform(fitted) -> None:
    t, x, y = fitted
    np.testing.assert_array_equal(type(t)(**_params(t)).fit_transform(x, y), t.transform(x, y))


def test_outside_domain_kept_and_counted(fitted) -> None:
    t, x, y = fitted
    xq = np.array([x.min() - 10, x.max() + 10, 0.0, 0.0, 0.0])
    yq = np.array([0.0, 0.0, y.min() - 1, y.max() + 1, 0.0])
    g = t.transform(xq, yq)
    assert len(g) == 5
    assert g[2] == 0.0
    assert g[3] == 1.0
    # x beyond the domain is evaluated at the edge
    assert g[0] == t.transform([x.min()], [0.0])[0]
    assert g[1] == t.transform([x.max()], [0.0])[0]
    counts = t.outside(xq, yq)
    assert (counts.x_below, counts.x_above, counts.y_below, counts.y_above) == (1, 1, 1, 1)
    assert counts.total == 4


def test_unfitted_raises() -> None:
    for t in (rb.IRGI(3), rb.KDE(0.1)):
        with pytest.raises(rb.NotFittedError, match="not fitted"):
            t.transform([0.0], [0.0])


def test_not_fitted_error_is_value_and_attribute_error() -> None:
    assert issubclass(rb.NotFittedError, ValueError)
    assert issubclass(rb.NotFittedError, AttributeError)
    assert not hasattr(rb.IRGI(3), "x_axis")
    with pytest.raises(ValueError, match="not fitted"):
        rb.KDE(0.1).transform([0.0], [0.0])


def test_outside_lengths_must_match(fitted) -> None:
    t, x, y = fitted
    with pytest.raises(ValueError, match=r"x has 3, y has 2 events"):
        t.outside(x[:3], y[:2])
    assert not hasattr(t.outside(x, y), "any")


def _params(t):
    return {"depth": t.depth} if isinstance(t, rb.IRGI) else {"sigma_r": t.sigma_r}
