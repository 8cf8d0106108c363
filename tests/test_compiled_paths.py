"""The numba kernels and the numpy fallback give the same numbers."""

from __future__ import annotations

import numpy as np
import pytest
from gaussian_blob import bivariate_normal

import rosenblatt as rb
from rosenblatt._jit import numba_enabled

pytestmark = pytest.mark.skipif(not numba_enabled(), reason="numba is not installed")


@pytest.mark.parametrize(
    "make",
    [lambda: rb.IRGI(5), lambda: rb.KDE(0.01), lambda: rb.KDE(0.3)],
    ids=["irgi", "kde-narrow", "kde-wide"],
)
def test_numpy_fallback_equals_numba(make, monkeypatch: pytest.MonkeyPatch) -> None:
    x, y = bivariate_normal(20_000, seed=1)
    xq, yq = bivariate_normal(3000, seed=2)
    xq = np.concatenate((xq, [-9.0, 9.0, x.min(), x.max()]))
    yq = np.concatenate((yq, [0.0, 0.0, y.max(), y.min()]))
    compiled = make().fit(x, y).transform(xq, yq)
    monkeypatch.setenv("ROSENBLATT_NO_NUMBA", "1")
    assert not numba_enabled()
    fallback = make().fit(x, y).transform(xq, yq)
    np.testing.assert_allclose(compiled, fallback, rtol=0, atol=1e-12)


def _saturated(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.normal(3000, 400, n)
    y = rng.uniform(0, 1, n)
    u = rng.uniform(size=n)
    y[u < 0.3], y[u > 0.8] = 1.0, 0.0
    return x, y


def _tied_x(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = np.round(rng.exponential(size=n) * 100) / 100
    return x, x + rng.normal(size=n)


def _wide(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.normal(size=n) * 1e300, rng.standard_cauchy(size=n) * 1e200


@pytest.mark.parametrize(
    "sample", [_saturated, _tied_x, _wide], ids=["saturated", "tied-x", "wide"]
)
@pytest.mark.parametrize("weighted", [False, True], ids=["unweighted", "weighted"])
def test_irgi_grid_and_lookup_equal_numpy_fallback(
    sample, weighted: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    x, y = sample(30_000, seed=3)
    w = np.random.default_rng(4).uniform(0.5, 1.5, x.size) if weighted else None
    xq, yq = sample(5000, seed=5)
    # queries on the edges themselves, and beyond the sample in every direction
    xq = np.concatenate((xq, x[:500], [-np.finfo(float).max, np.finfo(float).max, 0.0, 0.0]))
    yq = np.concatenate((yq, y[:500], [0.0, 0.0, -np.finfo(float).max, np.finfo(float).max]))
    compiled = rb.IRGI(5).fit(x, y, w)
    g_compiled = compiled.transform(xq, yq)
    monkeypatch.setenv("ROSENBLATT_NO_NUMBA", "1")
    fallback = rb.IRGI(5).fit(x, y, w)
    for name in ("x_boundaries_", "y_edges_", "cdf_", "column_weight_"):
        np.testing.assert_array_equal(
            getattr(compiled, name), getattr(fallback, name), err_msg=name
        )
    np.testing.assert_array_equal(g_compiled, fallback.transform(xq, yq))
    # the lookup on the grid's own vertices returns the stored CDF values
    vx, vy = compiled.vertices()
    monkeypatch.delenv("ROSENBLATT_NO_NUMBA")
    at_vertices = compiled.transform(vx, vy).reshape(compiled.cdf_.shape)
    strict = np.concatenate(
        (
            np.diff(compiled.y_edges_, axis=1) > 0,
            np.ones((len(vx) // compiled.cdf_.shape[1], 1), bool),
        ),
        axis=1,
    )
    np.testing.assert_allclose(at_vertices[strict], compiled.cdf_[strict], atol=1e-15)


def test_grid_kde_lookup_equals_numpy_fallback(monkeypatch: pytest.MonkeyPatch) -> None:
    x, y = _saturated(20_000, seed=6)
    t = rb.GridKDE(0.1).fit(x, y)
    xq, yq = _saturated(20_000, seed=7)
    g_compiled = t.transform(xq, yq)
    monkeypatch.setenv("ROSENBLATT_NO_NUMBA", "1")
    np.testing.assert_array_equal(g_compiled, t.transform(xq, yq))


def test_grid_lookup_equals_numpy_fallback_on_every_block_length(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The lookup runs in blocks of events: partial blocks and one event give the same numbers."""
    from rosenblatt.transforms._kernels import GRID_BLOCK

    x, y = _saturated(20_000, seed=8)
    t = rb.IRGI(4).fit(x, y)
    xq, yq = _saturated(3 * GRID_BLOCK, seed=9)
    lengths = (1, 2, GRID_BLOCK - 1, GRID_BLOCK, GRID_BLOCK + 1, 2 * GRID_BLOCK + 3)
    compiled = [t.transform(xq[:n], yq[:n]) for n in lengths]
    monkeypatch.setenv("ROSENBLATT_NO_NUMBA", "1")
    for n, g in zip(lengths, compiled, strict=True):
        assert g.shape == (n,)
        np.testing.assert_array_equal(g, t.transform(xq[:n], yq[:n]), err_msg=f"{n} events")
