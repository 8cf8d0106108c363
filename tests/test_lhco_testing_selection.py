"""The testing events the analysis processor reads again, found through any path to their files."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from rosenblatt.studies.lhco.processor_closure import entries_of_testing_events


def _table(files: list[str], entries: list[int]) -> dict[str, np.ndarray]:
    return {"file": np.asarray(files), "entry": np.asarray(entries, dtype=np.int64)}


def test_a_data_folder_reached_through_a_link_selects_the_testing_entries(tmp_path: Path) -> None:
    real = tmp_path / "events"
    real.mkdir()
    for name in ("qcd.root", "wprime.root"):
        (real / name).write_bytes(b"")
    link = tmp_path / "data"
    os.symlink(real, link)
    table = _table([str(real / "qcd.root")] * 3 + [str(real / "wprime.root")], [7, 2, 5, 1])
    read = [str(link / "qcd.root"), str(link / "wprime.root")]
    selection = entries_of_testing_events(table, read)
    assert sorted(selection) == sorted(read)
    assert selection[read[0]].tolist() == [2, 5, 7]
    assert selection[read[1]].tolist() == [1]


def test_a_moved_folder_is_matched_by_name_and_a_file_without_testing_events_selects_none(
    tmp_path: Path,
) -> None:
    table = _table(["/elsewhere/qcd.root", "/elsewhere/qcd.root"], [4, 3])
    read = [str(tmp_path / "qcd.root"), str(tmp_path / "extra.root")]
    selection = entries_of_testing_events(table, read)
    assert selection[read[0]].tolist() == [3, 4]
    assert selection[read[1]].tolist() == []


def test_testing_events_of_no_file_read_are_an_error(tmp_path: Path) -> None:
    table = _table(["/elsewhere/signal.root"], [0])
    with pytest.raises(ValueError, match=r"signal\.root, which is none of the files read"):
        entries_of_testing_events(table, [str(tmp_path / "qcd.root")])
