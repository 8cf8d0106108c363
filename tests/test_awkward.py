"""Awkward arrays of any jagged structure in, the same structure out."""

from __future__ import annotations

import awkward as ak
import numpy as np
import pytest
from gaussian_blob import bivariate_normal

import rosenblatt as rb

pytestmark = pytest.mark.core


@pytest.fixture(params=["irgi", "kde"])
def fitted(request: pytest.FixtureRequest):
    x, y = bivariate_normal(4096, seed=1)
    return rb.IRGI(4).fit(x, y) if request.param == "irgi" else rb.KDE(0.1).fit(x, y)


def test_jagged_in_same_structure_out(fitted) -> None:
    x, y = bivariate_normal(30, seed=2)
    counts = [3, 0, 5, 1, 0, 21]
    xa, ya = ak.unflatten(x, counts), ak.unflatten(y, counts)
    g = fitted.transform(xa, ya)
    assert isinstance(g, ak.Array)
    assert ak.num(g, axis=1).tolist() == counts
    np.testing.assert_array_equal(ak.to_numpy(ak.flatten(g)), fitted.transform(x, y))


def test_doubly_jagged_and_sliced(fitted) -> None:
    x, y = bivariate_normal(40, seed=3)
    xa = ak.unflatten(ak.unflatten(x, [4, 6, 10, 20]), [2, 0, 2], axis=0)
    ya = ak.unflatten(ak.unflatten(y, [4, 6, 10, 20]), [2, 0, 2], axis=0)
    g = fitted.transform(xa[1:], ya[1:])
    assert ak.to_list(ak.num(g, axis=2)) == [[], [10, 20]]
    np.testing.assert_array_equal(
        ak.to_numpy(ak.flatten(g, axis=None)), fitted.transform(x[10:], y[10:])
    )


def test_event_level_x_broadcasts_to_jets(fitted) -> None:
    x = ak.Array([0.1, -1.0, 2.0])
    y = ak.Array([[0.0, 0.5], [], [1.0]])
    g = fitted.transform(x, y)
    assert ak.to_list(ak.num(g)) == [2, 0, 1]
    assert ak.to_list(g)[0][1] == fitted.transform([0.1], [0.5])[0]


def test_missing_values_are_an_error(fitted) -> None:
    x = ak.Array([[0.1, None], [0.3]])
    y = ak.Array([[0.2, 0.1], [0.4]])
    with pytest.raises(ValueError, match="x has 1 NaN"):
        fitted.transform(x, y)
