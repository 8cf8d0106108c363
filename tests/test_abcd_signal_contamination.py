"""The signal in the data's control regions, as ``estimate.json`` states it."""

from __future__ import annotations

import pytest

from rosenblatt.studies.abcd.estimate import _contamination


def test_the_shift_is_what_removing_the_signal_does_to_b_c_over_d() -> None:
    data, signal = [400.0, 900.0, 3600.0], [12.0, 4.5, 1.8]
    shares = _contamination(data, signal)
    assert [shares["B"], shares["C"], shares["D"]] == pytest.approx([0.03, 0.005, 0.0005])
    with_signal = data[0] * data[1] / data[2]
    alone = (data[0] - signal[0]) * (data[1] - signal[1]) / (data[2] - signal[2])
    assert shares["predicted_A_shift"] == pytest.approx(with_signal / alone - 1.0, rel=1e-12)
    shift, share_b = shares["predicted_A_shift"], shares["B"]
    assert shift is not None
    assert share_b is not None
    assert shift > share_b


def test_no_signal_no_shift() -> None:
    assert _contamination([400.0, 900.0, 3600.0], [0.0, 0.0, 0.0]) == {
        "B": 0.0,
        "C": 0.0,
        "D": 0.0,
        "predicted_A_shift": 0.0,
    }


@pytest.mark.parametrize(
    ("data", "signal", "undefined"),
    [
        ([400.0, 900.0, 0.0], [12.0, 4.5, 0.0], "D"),  # an empty region: no share there
        ([10.0, 900.0, 3600.0], [12.0, 4.5, 1.8], None),  # more signal than data in B
        ([400.0, 900.0, 2.0], [12.0, 4.5, 3.0], None),  # and in D
    ],
)
def test_a_shift_without_a_background_left_is_undefined(
    data: list[float], signal: list[float], undefined: str | None
) -> None:
    shares = _contamination(data, signal)
    assert shares["predicted_A_shift"] is None
    if undefined is not None:
        assert {**shares}[undefined] is None
