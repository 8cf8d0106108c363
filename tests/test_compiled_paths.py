"""The numba kernels and the numpy fallback give the same numbers."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import bivariate_normal

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
