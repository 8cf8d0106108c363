"""Why the abcd study writes no likelihood for a variant: the note names the reason."""

from __future__ import annotations

from pathlib import Path

import pytest

from rosenblatt.studies.abcd.estimate import _likelihood


@pytest.mark.parametrize(
    ("data", "signal", "note"),
    [
        ([10.0, 0.0, 5.0, 20.0], [3.0, 1.0, 1.0, 0.0], "the data's control region B is empty"),
        (
            [10.0, 4.0, 0.0, 0.0],
            [3.0, 1.0, 1.0, 0.0],
            "the data's control regions C, D are empty",
        ),
        ([10.0, 4.0, 5.0, 20.0], [0.0, 0.0, 0.0, 0.0], "no signal expected in A"),
    ],
)
def test_the_note_says_which_input_is_missing(
    tmp_path: Path, data: list[float], signal: list[float], note: str
) -> None:
    out = _likelihood(tmp_path, "irgi", data, signal, 1.0, (1.0, 0.1), blind=True)
    assert set(out) == {"likelihood_note"}
    assert str(out["likelihood_note"]).startswith(note)
    assert not list(tmp_path.iterdir())
