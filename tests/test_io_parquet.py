"""Parquet files of particle and feature tables, and reading any event file by extension."""

from __future__ import annotations

from pathlib import Path

import awkward as ak
import numpy as np
import pytest

pytest.importorskip("pyarrow")
pytest.importorskip("pythia8mc")

import rosenblatt.io as rio
from rosenblatt.hep.generation import generate_events
from rosenblatt.io import EventFileError, check_input_file, event_format
from rosenblatt.io.parquet import iter_parquet, parquet_columns, read_parquet, write_parquet


@pytest.fixture(scope="session")
def events() -> ak.Array:
    return generate_events("wprime", 7, seed=41)


@pytest.fixture
def feature_table(events: ak.Array) -> ak.Array:
    """A per-event table in the project's feature-table column convention."""
    n_events = len(events)
    leading = ak.to_numpy(events.pt[:, 0])
    return ak.zip(
        {
            "mjj": 2.0 * leading,
            "image": np.arange(n_events * 1296, dtype=np.float32).reshape(n_events, 1296),
            "label": ak.to_numpy(events.label),
            "weight": ak.to_numpy(events.weight),
            "dataset": ["wprime"] * n_events,
            "file": ["wprime.h5"] * n_events,
            "entry": np.arange(n_events),
        },
        depth_limit=1,
    )


def test_particle_table_round_trip(tmp_path: Path, events: ak.Array) -> None:
    path = tmp_path / "events.parquet"
    write_parquet(events, path)
    back = read_parquet(path)
    assert ak.to_list(back[events.fields]) == ak.to_list(events)
    assert parquet_columns(path) == ["pt", "eta", "phi", "label", "weight"]
    # the event readers' entry number, here the row in the file
    assert back.entry.to_list() == list(range(len(events)))


def test_feature_table_round_trip_and_column_selection(
    tmp_path: Path, feature_table: ak.Array
) -> None:
    path = tmp_path / "features.parquet"
    write_parquet(feature_table, path)
    back = read_parquet(path)
    assert ak.to_list(back) == ak.to_list(feature_table)
    assert ak.to_numpy(back.image).shape == (len(feature_table), 1296)
    only = read_parquet(path, columns=["mjj", "label"])
    assert ak.fields(only) == ["mjj", "label"]
    assert ak.to_list(only.mjj) == ak.to_list(feature_table.mjj)


def test_row_groups_are_the_chunks(tmp_path: Path, events: ak.Array) -> None:
    path = tmp_path / "groups.parquet"
    write_parquet(events, path, row_group_size=3)
    chunks = list(iter_parquet(path))
    assert [len(chunk) for chunk in chunks] == [3, 3, 1]
    assert ak.to_list(ak.concatenate(chunks)[events.fields]) == ak.to_list(events)
    assert [chunk.entry.to_list() for chunk in chunks] == [[0, 1, 2], [3, 4, 5], [6]]


def test_missing_column_lists_the_columns(tmp_path: Path, feature_table: ak.Array) -> None:
    path = tmp_path / "features.parquet"
    write_parquet(feature_table, path)
    with pytest.raises(EventFileError, match=r"no column\(s\) \['tau21_1'\].*'mjj'"):
        read_parquet(path, columns=["mjj", "tau21_1"])
    with pytest.raises(EventFileError, match="tau21_1"):
        next(iter_parquet(path, columns=["tau21_1"]))


def test_missing_empty_damaged_and_rowless_files(tmp_path: Path, events: ak.Array) -> None:
    with pytest.raises(FileNotFoundError, match="no such file"):
        read_parquet(tmp_path / "missing.parquet")
    empty = tmp_path / "empty.parquet"
    empty.touch()
    with pytest.raises(EventFileError, match="empty"):
        read_parquet(empty)
    good = tmp_path / "good.parquet"
    write_parquet(events, good)
    damaged = tmp_path / "damaged.parquet"
    damaged.write_bytes(good.read_bytes()[:-100])
    with pytest.raises(EventFileError, match="not a readable parquet file"):
        read_parquet(damaged)
    rowless = tmp_path / "rowless.parquet"
    write_parquet(events[:0], rowless)
    with pytest.raises(EventFileError, match="holds no rows"):
        read_parquet(rowless)


def test_writer_needs_records(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="named fields"):
        write_parquet(ak.Array([1.0, 2.0]), tmp_path / "flat.parquet")


# any format by extension -----------------------------------------------------------------


@pytest.mark.parametrize("suffix", [".h5", ".root", ".parquet"])
def test_every_format_gives_the_same_events(tmp_path: Path, events: ak.Array, suffix: str) -> None:
    path = tmp_path / f"events{suffix}"
    if suffix == ".parquet":
        write_parquet(events, path)
    elif suffix == ".h5":
        rio.write_lhco(path, events)
    else:
        rio.write_root(path, events)
    back = rio.read_events(path)
    chunks = list(rio.iter_events(path, chunk_size=3))
    for name in ("pt", "eta", "phi", "label", "weight"):
        assert ak.to_list(back[name]) == ak.to_list(events[name])
        assert ak.to_list(ak.concatenate(chunks)[name]) == ak.to_list(events[name])
    assert (
        back.entry.to_list() == ak.concatenate(chunks).entry.to_list() == list(range(len(events)))
    )


def test_unknown_extension_and_directories(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"unknown event file extension '\.csv'"):
        event_format(tmp_path / "events.csv")
    assert event_format("events.HDF5") == "lhco"
    with pytest.raises(EventFileError, match="is a directory"):
        check_input_file(tmp_path)
    assert check_input_file(tmp_path, allow_directory=True) == tmp_path


def test_particle_fields_of_different_lengths_are_a_damaged_file(
    tmp_path: Path, events: ak.Array
) -> None:
    path = tmp_path / "uneven.parquet"
    uneven = ak.with_field(events, events.eta[:, :-1], "eta")
    write_parquet(uneven, path)
    with pytest.raises(
        EventFileError,
        match=rf"uneven\.parquet: {len(events)} event\(s\) have a different number of pt and eta values \(first at row 0\)",
    ):
        read_parquet(path)
    with pytest.raises(EventFileError, match="different number of pt and eta"):
        list(iter_parquet(path))
