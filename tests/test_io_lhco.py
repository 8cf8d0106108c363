"""The LHC Olympics R&D HDF5 layout: pandas/h5py compatibility, round trip, chunks, errors."""

from __future__ import annotations

from pathlib import Path

import awkward as ak
import numpy as np
import pytest

pd = pytest.importorskip("pandas")
pytest.importorskip("tables")
pytest.importorskip("pythia8mc")

from rosenblatt.hep.generation import generate_events, generate_file
from rosenblatt.io import EventFileError
from rosenblatt.io.lhco import (
    LABEL_COLUMN,
    LHCOWriter,
    events_to_rows,
    iter_lhco,
    lhco_info,
    read_lhco,
    write_lhco,
)

N_SIGNAL, N_BACKGROUND = 8, 6


@pytest.fixture(scope="session")
def events() -> ak.Array:
    signal = generate_events("wprime", N_SIGNAL, seed=21)
    background = generate_events("qcd", N_BACKGROUND, seed=22)
    return ak.concatenate([signal, background])


@pytest.fixture(scope="session")
def lhco_file(tmp_path_factory: pytest.TempPathFactory, events: ak.Array) -> Path:
    path = tmp_path_factory.mktemp("lhco") / "events.h5"
    write_lhco(path, events)
    return path


def expected_rows(events: ak.Array) -> np.ndarray:
    """The LHCO rows built event by event, particle by particle."""
    rows = np.zeros((len(events), 2101))
    for i, event in enumerate(ak.to_list(events)):
        for j, (pt, eta, phi) in enumerate(
            zip(event["pt"], event["eta"], event["phi"], strict=True)
        ):
            rows[i, 3 * j : 3 * j + 3] = (pt, eta, phi)
        rows[i, 2100] = event["label"]
    return rows


@pytest.mark.slow
def test_pandas_reads_the_public_layout(lhco_file: Path, events: ak.Array) -> None:
    frame = pd.read_hdf(lhco_file)
    assert frame.shape == (len(events), 2101)
    assert list(frame.columns) == list(range(2101))
    assert frame.columns[-1] == LABEL_COLUMN == 2100
    assert (frame.dtypes == np.float64).all()
    assert list(frame.index) == list(range(len(events)))
    np.testing.assert_array_equal(frame.to_numpy(), expected_rows(events))
    assert list(frame[2100]) == [1.0] * N_SIGNAL + [0.0] * N_BACKGROUND


def test_padding_is_zero_after_the_last_particle(lhco_file: Path, events: ak.Array) -> None:
    rows = pd.read_hdf(lhco_file).to_numpy()
    counts = ak.to_numpy(ak.num(events.pt))
    for row, count in zip(rows, counts, strict=True):
        assert np.all(row[3 * count : 2100] == 0)
        assert np.all(row[0 : 3 * count : 3] > 0)
        assert np.all(np.diff(row[0 : 3 * count : 3]) <= 0)


def test_pandas_reads_row_ranges_and_h5py_sees_block0_values(lhco_file: Path) -> None:
    h5py = pytest.importorskip("h5py")
    part = pd.read_hdf(lhco_file, start=3, stop=7)
    assert list(part.index) == [3, 4, 5, 6]
    with h5py.File(lhco_file, "r") as handle:
        values = handle["df/block0_values"][3:7]
    np.testing.assert_array_equal(values, part.to_numpy())


def test_round_trip_gives_back_the_particles(lhco_file: Path, events: ak.Array) -> None:
    back = read_lhco(lhco_file)
    for name in ("pt", "eta", "phi", "label"):
        assert ak.to_list(back[name]) == ak.to_list(events[name])
    assert ak.to_list(back.entry) == list(range(len(events)))
    assert ak.all(back.weight == 1.0)


@pytest.mark.parametrize("chunk_size", [1, 5, 100])
def test_chunks_concatenate_to_the_whole_file(lhco_file: Path, chunk_size: int) -> None:
    whole = read_lhco(lhco_file)
    chunks = list(iter_lhco(lhco_file, chunk_size))
    assert [len(chunk) for chunk in chunks[:-1]] == [chunk_size] * (len(chunks) - 1)
    assert ak.to_list(ak.concatenate(chunks)) == ak.to_list(whole)


def test_an_entry_range_keeps_the_entry_numbers(lhco_file: Path) -> None:
    part = read_lhco(lhco_file, start=4, stop=9)
    assert ak.to_list(part.entry) == [4, 5, 6, 7, 8]
    assert ak.to_list(part.pt) == ak.to_list(read_lhco(lhco_file).pt[4:9])


@pytest.mark.parametrize("storage", ["fixed-blosc", "table"])
def test_frames_written_by_pandas_are_read(tmp_path: Path, events: ak.Array, storage: str) -> None:
    rows = events_to_rows(events)
    path = tmp_path / f"{storage}.h5"
    frame = pd.DataFrame(rows)
    if storage == "table":
        frame.to_hdf(path, key="events", format="table")
    else:
        frame.to_hdf(path, key="df", complevel=5, complib="blosc")
    back = read_lhco(path)
    for name in ("pt", "eta", "phi", "label"):
        assert ak.to_list(back[name]) == ak.to_list(events[name])


def test_a_file_without_labels_gives_label_minus_one(tmp_path: Path, events: ak.Array) -> None:
    path = tmp_path / "blackbox.h5"
    pd.DataFrame(events_to_rows(events)[:, :2100]).to_hdf(path, key="df")
    back = read_lhco(path)
    assert ak.all(back.label == -1)
    assert ak.to_list(back.pt) == ak.to_list(events.pt)


@pytest.mark.slow
def test_generated_file_keeps_counts_and_settings(tmp_path: Path) -> None:
    path = tmp_path / "wprime.h5"
    summary = generate_file(path, "wprime", 4, seed=21, chunk_size=3, workers=1, progress=False)
    info = lhco_info(path)
    assert info["n_events"] == 4 == summary.n_events
    assert info["settings"]["process"] == "wprime"
    assert list(info["chunks"]["n_events"]) == [3, 1]
    assert info["summary"]["n_generated"] == int(info["chunks"]["n_generated"].sum())
    assert pd.read_hdf(path).shape == (4, 2101)


def test_writer_refuses_events_the_layout_cannot_hold(tmp_path: Path, events: ak.Array) -> None:
    crowded = ak.zip(
        {
            "pt": ak.concatenate([events.pt, events.pt, events.pt], axis=1),
            "eta": ak.concatenate([events.eta, events.eta, events.eta], axis=1),
            "phi": ak.concatenate([events.phi, events.phi, events.phi], axis=1),
            "label": events.label,
        },
        depth_limit=1,
    )
    n_crowded = int(ak.sum(ak.num(crowded.pt) > 700))
    assert n_crowded > 0
    with pytest.raises(ValueError, match=rf"{n_crowded} event\(s\) have more than 700"):
        write_lhco(tmp_path / "crowded.h5", crowded)
    zero_pt = ak.zip(
        {"pt": [[5.0, 0.0]], "eta": [[0.0, 1.0]], "phi": [[0.0, 1.0]], "label": [0]},
        depth_limit=1,
    )
    with pytest.raises(ValueError, match="pt <= 0"):
        write_lhco(tmp_path / "zero.h5", zero_pt)


# errors --------------------------------------------------------------------------------


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"missing\.h5"):
        read_lhco(tmp_path / "missing.h5")


def test_empty_file(tmp_path: Path) -> None:
    path = tmp_path / "empty.h5"
    path.touch()
    with pytest.raises(EventFileError, match="empty"):
        read_lhco(path)


def test_truncated_file(tmp_path: Path, lhco_file: Path) -> None:
    path = tmp_path / "truncated.h5"
    data = lhco_file.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(EventFileError, match="truncated or damaged"):
        read_lhco(path)


def test_file_that_is_not_hdf5(tmp_path: Path) -> None:
    path = tmp_path / "text.h5"
    path.write_text("pt eta phi\n1 2 3\n")
    with pytest.raises(EventFileError, match="not a readable HDF5 file"):
        read_lhco(path)


def test_frame_with_other_columns_names_what_it_has(tmp_path: Path) -> None:
    path = tmp_path / "features.h5"
    pd.DataFrame(np.ones((3, 5))).to_hdf(path, key="df")
    with pytest.raises(EventFileError, match="has 5 columns"):
        read_lhco(path)


def test_file_with_two_frames_needs_a_key(tmp_path: Path, events: ak.Array) -> None:
    path = tmp_path / "two.h5"
    rows = pd.DataFrame(events_to_rows(events))
    rows.to_hdf(path, key="first")
    rows.to_hdf(path, key="second")
    with pytest.raises(EventFileError, match="found 2"):
        read_lhco(path)
    assert len(read_lhco(path, key="second")) == len(events)


def test_file_without_events(tmp_path: Path) -> None:
    path = tmp_path / "none.h5"
    LHCOWriter.create(path).close()
    assert pd.read_hdf(path).shape == (0, 2101)
    with pytest.raises(EventFileError, match="holds no events"):
        read_lhco(path)


def test_negative_pt_is_reported_with_its_entry(tmp_path: Path, events: ak.Array) -> None:
    rows = events_to_rows(events)
    rows[5, 3] = -1.0
    path = tmp_path / "negative.h5"
    pd.DataFrame(rows).to_hdf(path, key="df")
    with pytest.raises(EventFileError, match=r"1 particle\(s\) in 1 event\(s\).*entry 5"):
        read_lhco(path)
