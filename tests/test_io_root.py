"""ROOT event files: a TTree for uproot and coffea NanoEvents, round trip, chunks, errors."""

from __future__ import annotations

from pathlib import Path

import awkward as ak
import numpy as np
import pytest

uproot = pytest.importorskip("uproot")
pytest.importorskip("pythia8mc")

from rosenblatt.hep.generation import generate_events, generate_file
from rosenblatt.io import EventFileError
from rosenblatt.io.root import (
    iter_root,
    read_root,
    read_root_nanoevents,
    root_info,
    write_root,
)

N_SIGNAL, N_BACKGROUND = 8, 6


@pytest.fixture(scope="session")
def events() -> ak.Array:
    signal = generate_events("wprime", N_SIGNAL, seed=31)
    background = generate_events("qcd", N_BACKGROUND, seed=32)
    return ak.concatenate([signal, background])


@pytest.fixture(scope="session")
def root_file(tmp_path_factory: pytest.TempPathFactory, events: ak.Array) -> Path:
    path = tmp_path_factory.mktemp("root") / "events.root"
    write_root(path, events)
    return path


@pytest.mark.slow
def test_uproot_opens_a_ttree_with_nanoaod_like_branches(root_file: Path, events: ak.Array) -> None:
    with uproot.open(root_file) as handle:
        assert handle.classname_of("Events") == "TTree"
        tree = handle["Events"]
        assert set(tree.keys()) == {"nPart", "Part_pt", "Part_eta", "Part_phi", "label", "weight"}
        assert tree.num_entries == len(events)
        arrays = tree.arrays()
    assert ak.to_list(arrays.nPart) == ak.to_list(ak.num(events.pt))
    assert ak.to_list(arrays.Part_pt) == ak.to_list(events.pt)
    assert ak.to_list(arrays.Part_phi) == ak.to_list(events.phi)
    assert ak.to_list(arrays.label) == [1] * N_SIGNAL + [0] * N_BACKGROUND


def test_coffea_nanoevents_read_the_tree(root_file: Path, events: ak.Array) -> None:
    pytest.importorskip("coffea")
    nano = read_root_nanoevents(root_file)
    assert len(nano) == len(events)
    assert {"nPart", "Part_pt", "Part_eta", "Part_phi", "label", "weight"} <= set(nano.fields)
    assert ak.to_list(nano.Part_eta) == ak.to_list(events.eta)
    part = read_root_nanoevents(root_file, entry_start=2, entry_stop=5)
    assert ak.to_list(part.Part_pt) == ak.to_list(events.pt[2:5])


def test_round_trip_gives_back_the_events(root_file: Path, events: ak.Array) -> None:
    back = read_root(root_file)
    for name in ("pt", "eta", "phi", "label", "weight"):
        assert ak.to_list(back[name]) == ak.to_list(events[name])
    assert ak.to_list(back.entry) == list(range(len(events)))


@pytest.mark.parametrize("chunk_size", [1, 4, 100])
def test_chunks_concatenate_to_the_whole_file(root_file: Path, chunk_size: int) -> None:
    chunks = list(iter_root(root_file, chunk_size))
    assert [len(chunk) for chunk in chunks[:-1]] == [chunk_size] * (len(chunks) - 1)
    assert ak.to_list(ak.concatenate(chunks)) == ak.to_list(read_root(root_file))
    part = read_root(root_file, start=3, stop=6)
    assert ak.to_list(part.entry) == [3, 4, 5]


@pytest.mark.slow
def test_generated_file_keeps_counts_and_settings(tmp_path: Path) -> None:
    path = tmp_path / "qcd.root"
    summary = generate_file(path, "qcd", 3, seed=32, chunk_size=2, workers=1, progress=False)
    info = root_info(path)
    assert info["n_events"] == 3 == summary.n_events
    assert info["settings"]["process"] == "qcd"
    assert info["settings"]["pthat_min"] == 1000.0
    assert list(info["chunks"]["n_events"]) == [2, 1]
    assert np.all(info["chunks"]["n_generated"] >= info["chunks"]["n_events"])
    assert info["summary"]["n_generated"] == int(info["chunks"]["n_generated"].sum())
    assert info["summary"]["sigma_pb"] == pytest.approx(summary.sigma_pb)
    with uproot.open(path) as handle:
        assert handle.classname_of("settings") == "TObjString"
        assert handle.classname_of("Chunks") == "TTree"


def test_tree_without_labels_or_weights(tmp_path: Path, events: ak.Array) -> None:
    path = tmp_path / "bare.root"
    with uproot.recreate(path) as handle:
        particles = ak.zip({"pt": events.pt, "eta": events.eta, "phi": events.phi})
        handle.mktree("Events", {"Part": particles.type.content})
        handle["Events"].extend({"Part": particles})
    back = read_root(path)
    assert ak.all(back.label == -1)
    assert ak.all(back.weight == 1.0)
    assert ak.to_list(back.pt) == ak.to_list(events.pt)


# errors --------------------------------------------------------------------------------


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"missing\.root"):
        read_root(tmp_path / "missing.root")


def test_empty_file(tmp_path: Path) -> None:
    path = tmp_path / "empty.root"
    path.touch()
    with pytest.raises(EventFileError, match="empty"):
        read_root(path)


def test_truncated_file(tmp_path: Path, root_file: Path) -> None:
    path = tmp_path / "truncated.root"
    data = root_file.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(EventFileError, match="truncated or damaged"):
        read_root(path)


def test_file_that_is_not_root(tmp_path: Path) -> None:
    path = tmp_path / "text.root"
    path.write_text("not a ROOT file\n" * 20)
    with pytest.raises(EventFileError, match="not a readable ROOT file"):
        read_root(path)


def test_missing_branch_lists_the_branches(tmp_path: Path, events: ak.Array) -> None:
    path = tmp_path / "nophi.root"
    with uproot.recreate(path) as handle:
        particles = ak.zip({"pt": events.pt, "eta": events.eta})
        handle.mktree("Events", {"Part": particles.type.content})
        handle["Events"].extend({"Part": particles})
    with pytest.raises(EventFileError, match=r"lacks the branch\(es\) \['Part_phi'\].*Part_eta"):
        read_root(path)
    with pytest.raises(EventFileError, match="Part_phi"):
        read_root_nanoevents(path)


def test_missing_tree_lists_the_content(tmp_path: Path) -> None:
    path = tmp_path / "other.root"
    with uproot.recreate(path) as handle:
        handle["Jets"] = {"pt": np.ones(3)}
    with pytest.raises(EventFileError, match=r"no tree 'Events'.*Jets"):
        read_root(path)


def test_tree_without_entries(tmp_path: Path) -> None:
    from rosenblatt.io.root import RootWriter

    path = tmp_path / "none.root"
    RootWriter.create(path).close()
    with pytest.raises(EventFileError, match="holds no events"):
        read_root(path)
