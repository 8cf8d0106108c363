"""The analysis processor's ABCD counts of the LHCO testing sample must equal the in-memory ones."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from rosenblatt.abcd import abcd_histogram
from rosenblatt.studies.lhco.processor_closure import COUNT_TOLERANCE, check_processor_counts

X0 = [3300.0, 3500.0, 3700.0]
Y0 = np.linspace(0.0, 1.0, 11)


def _histogram(x: list[float], y: list[float], label: list[int], weight: Any = None) -> Any:
    return abcd_histogram(x, y, label, x0=X0, y0=Y0, weight=weight)


def _events() -> tuple[list[float], list[float], list[int]]:
    rng = np.random.default_rng(3)
    x = rng.uniform(3200.0, 3800.0, 500).tolist()
    y = rng.uniform(0.0, 1.0, 500).tolist()
    label = (rng.uniform(size=500) < 0.2).astype(int).tolist()
    return x, y, label


def test_equal_counts_pass_with_their_differences_recorded() -> None:
    x, y, label = _events()
    same = {"baseline": _histogram(x, y, label), "irgi": _histogram(x, y, label)}
    again = {"baseline": _histogram(x, y, label), "irgi": _histogram(x, y, label)}
    assert check_processor_counts(same, again) == {"baseline": 0.0, "irgi": 0.0}


def test_weighted_sums_differing_by_their_rounding_pass() -> None:
    x, y, label = _events()
    w = np.full(len(x), 0.1)
    ordered = _histogram(x, y, label, weight=w)
    reversed_ = _histogram(x[::-1], y[::-1], label[::-1], weight=w)
    # the same sums up to a rounding far below the tolerance
    h = _histogram(x, y, label, weight=w)
    h.view(flow=True).value[1, 4, 0] += 1e-12
    differences = check_processor_counts(
        {"kde": h, "irgi": reversed_}, {"kde": ordered, "irgi": ordered}
    )
    assert 0.0 < differences["kde"] < COUNT_TOLERANCE * np.max(ordered.values(flow=True))


def test_a_count_mismatch_names_the_classifier_the_difference_and_the_cell() -> None:
    x, y, label = _events()
    expected = {name: _histogram(x, y, label) for name in ("baseline", "irgi", "kde")}
    # irgi lost 3 background events of mjj in [3300, 3500), score in [0.3, 0.4); kde lost one
    cell = [
        i for i in range(len(x)) if 3300.0 <= x[i] < 3500.0 and 0.3 <= y[i] < 0.4 and label[i] == 0
    ]
    assert len(cell) >= 3
    irgi = [i for i in range(len(x)) if i not in cell[:3]]
    kde = list(range(1, len(x)))
    got = {
        "baseline": _histogram(x, y, label),
        "irgi": _histogram([x[i] for i in irgi], [y[i] for i in irgi], [label[i] for i in irgi]),
        "kde": _histogram([x[i] for i in kde], [y[i] for i in kde], [label[i] for i in kde]),
    }
    with pytest.raises(ValueError, match="counts of the testing sample differ") as raised:
        check_processor_counts(got, expected)
    message = str(raised.value)
    assert "irgi by 3 at mjj in [3300, 3500) GeV, score in [0.3, 0.4), background" in message
    assert "kde by 1 too" in message
    assert "baseline" not in message
    assert "\n" not in message


def test_a_count_above_the_last_cut_is_named_as_such() -> None:
    x, y, label = _events()
    expected = {"disco": _histogram(x, y, label)}
    got = {"disco": _histogram([*x, 3900.0], [*y, 1.5], [*label, 1])}
    with pytest.raises(
        ValueError, match=r"disco by 1 at mjj at or above 3700 GeV, score at or above 1, signal"
    ):
        check_processor_counts(got, expected)


def test_histograms_of_different_bins_are_an_error() -> None:
    x, y, label = _events()
    other = abcd_histogram(x, y, label, x0=X0[:2], y0=Y0)
    with pytest.raises(ValueError, match="baseline has bins of shape"):
        check_processor_counts({"baseline": other}, {"baseline": _histogram(x, y, label)})
