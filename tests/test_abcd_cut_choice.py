"""The cut chosen on simulation: where the background simulation can measure its closure factor."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np

from rosenblatt.abcd import abcd_histogram
from rosenblatt.abcd.closure_testing import closure_test_histogram
from rosenblatt.studies.abcd.estimate import _unmeasured, asimov_significance, choose_cut

X0 = np.array([0.3, 0.5, 0.7])
Y0 = np.array([0.5, 0.8, 0.9, 0.95])


def _closing_test(measurable: Any = True) -> Any:
    """A closure test in which every cut closes and the tightest cuts expect the most."""
    shape = (len(X0), len(Y0))
    background = np.outer(1.0 - X0, 1.0 - Y0) * 4000.0
    return SimpleNamespace(
        x0=X0,
        y0=Y0,
        independence_estimate=background,
        nonclosure=np.zeros(shape),
        nonclosure_error=0.05 * background,
        measurable=np.broadcast_to(measurable, shape),
    )


def test_the_closure_is_measured_where_every_region_sums_above_zero() -> None:
    rng = np.random.default_rng(7)
    n = 400
    x, y = rng.random(n), rng.random(n)
    w = rng.lognormal(0.0, 0.8, n) * np.where(rng.random(n) < 0.4, -1.0, 1.0)
    h = abcd_histogram(x, y, np.zeros(n, dtype=int), x0=X0, y0=Y0, weight=w)
    got = closure_test_histogram(h, min_events=0.0).measurable
    assert got.shape == (len(X0), len(Y0))
    expected = np.array(
        [
            [
                all(
                    w[r].sum() > 0
                    for r in (
                        (x >= a) & (y >= b),
                        (x >= a) & (y < b),
                        (x < a) & (y >= b),
                        (x < a) & (y < b),
                    )
                )
                for b in Y0
            ]
            for a in X0
        ]
    )
    np.testing.assert_array_equal(got, expected)
    assert expected.any()
    assert not expected.all()  # this draw has regions that sum below zero


def test_a_cut_whose_simulation_sums_below_zero_is_not_chosen() -> None:
    signal = np.full((len(X0), len(Y0)), 30.0)
    unconstrained = choose_cut(_closing_test(), signal, None)
    assert unconstrained.cut is not None
    assert (unconstrained.cut.i, unconstrained.cut.j) == (2, 3)
    measured = np.ones((len(X0), len(Y0)), dtype=bool)
    measured[2, 3] = False  # region A of the tightest cut sums to less than zero
    test = _closing_test(measured)
    chosen = choose_cut(test, signal, None)
    assert chosen.cut is not None
    z = asimov_significance(signal, test.independence_estimate, test.nonclosure_error)
    assert chosen.cut.expected_z_a == np.max(z[measured])
    assert (chosen.cut.i, chosen.cut.j) != (2, 3)
    assert "sums above zero in every region" in chosen.how
    nowhere = choose_cut(_closing_test(False), signal, None)
    assert nowhere.cut is None
    assert nowhere.how.startswith("none:")


def test_a_given_cut_whose_simulation_sums_below_zero_is_not_measured() -> None:
    note = _unmeasured({"A": -47.0, "B": 2147.6, "C": 1055.8, "D": 26822.7})
    assert note is not None
    assert "region A sum to zero or less at this cut (A -47)" in note
    assert _unmeasured({"A": 3.0, "B": 2.0, "C": 1.0, "D": 9.0}) is None
