"""The coffea dijet processor on Pythia events written to ROOT files."""

from __future__ import annotations

from pathlib import Path

import awkward as ak
import numpy as np
import pytest
from coffea import processor
from coffea.nanoevents import BaseSchema

from rosenblatt.hep.features import CUTFLOW_STEPS, TABLE_COLUMNS, event_table
from rosenblatt.hep.particles import event_particles
from rosenblatt.io.root import EVENTS_TREE
from rosenblatt.processors.dijet import DijetProcessor, check_cutflow, empty_table, join_tables

pytestmark = pytest.mark.slow

N_EVENTS = 150


@pytest.fixture(scope="module")
def root_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """``rosenblatt generate`` ROOT files of 150 QCD and 150 W' events."""
    from rosenblatt.hep.generation import generate_file

    directory = tmp_path_factory.mktemp("events")
    files = {}
    for process, seed in (("qcd", 21), ("wprime", 22)):
        path = directory / f"{process}.root"
        generate_file(path, process, N_EVENTS, seed, chunk_size=N_EVENTS, workers=1, progress=False)
        files[process] = str(path)
    return files


def run_processor(fileset: dict[str, list[str]], chunksize: int) -> dict:
    runner = processor.Runner(
        executor=processor.IterativeExecutor(status=False), schema=BaseSchema, chunksize=chunksize
    )
    files = {
        dataset: {"files": dict.fromkeys(paths, EVENTS_TREE)} for dataset, paths in fileset.items()
    }
    return runner(files, DijetProcessor(), treename=EVENTS_TREE)


@pytest.fixture(scope="module")
def output(root_files: dict[str, str]) -> dict:
    """The processor output in chunks of 40 events."""
    return run_processor({name: [path] for name, path in root_files.items()}, chunksize=40)


def test_cutflow_adds_up_to_the_events_read(output: dict, root_files: dict[str, str]) -> None:
    cutflow = output["cutflow"]
    assert sorted(cutflow) == ["qcd", "wprime"]
    table = output["table"]
    for dataset in cutflow:
        counts = cutflow[dataset]
        assert list(counts) == list(CUTFLOW_STEPS)
        assert counts["read"] == N_EVENTS
        assert counts["read"] == counts["fewer than two jets"] + counts["in table"]
        assert counts["in table"] == int(ak.sum(table["dataset"] == dataset))
    check_cutflow(cutflow)


def test_table_columns_order_and_provenance(output: dict, root_files: dict[str, str]) -> None:
    table = output["table"]
    assert ak.fields(table) == list(TABLE_COLUMNS)
    assert ak.fields(empty_table()) == list(TABLE_COLUMNS)
    assert str(table.type.content) == str(empty_table().type.content)
    files = ak.to_list(table["file"])
    entries = ak.to_numpy(table["entry"])
    keys = list(zip(files, entries.tolist(), strict=True))
    assert keys == sorted(keys)
    assert len(set(keys)) == len(keys)
    for dataset, path in root_files.items():
        rows = table[table["file"] == path]
        assert set(ak.to_list(rows["dataset"])) == {dataset}
        assert np.all(ak.to_numpy(rows["label"]) == (1 if dataset == "wprime" else 0))
    for name in ("mjj", "pt_j1", "deta_jj", "mj1", "mj2", "tau21_1", "tau21_2", "weight"):
        assert np.all(np.isfinite(ak.to_numpy(table[name])))
    assert np.all(ak.to_numpy(table["mj1"]) >= ak.to_numpy(table["mj2"]))
    assert np.all(ak.to_numpy(table["pt_j1"]) > 0)
    assert np.all(ak.to_numpy(table["deta_jj"]) >= 0)


def test_rows_equal_the_features_of_the_entries_they_name(
    output: dict, root_files: dict[str, str]
) -> None:
    from rosenblatt.io.root import read_root

    events = read_root(root_files["wprime"])
    direct, cutflow = event_table(
        event_particles(events),
        label=events["label"],
        weight=events["weight"],
        dataset="wprime",
        file=root_files["wprime"],
        entry=events["entry"],
    )
    table = output["table"]
    rows = table[table["file"] == root_files["wprime"]]
    assert cutflow == output["cutflow"]["wprime"]
    for name in TABLE_COLUMNS:
        assert ak.to_list(rows[name]) == ak.to_list(direct[name]), name


def test_chunking_does_not_change_the_output(output: dict, root_files: dict[str, str]) -> None:
    whole = run_processor({name: [path] for name, path in root_files.items()}, chunksize=1000)
    assert whole["cutflow"] == output["cutflow"]
    assert whole["mjj"] == output["mjj"]
    for name in TABLE_COLUMNS:
        assert ak.to_list(whole["table"][name]) == ak.to_list(output["table"][name])


def test_mjj_histogram_holds_the_table(output: dict) -> None:
    histogram = output["mjj"]
    table = output["table"]
    for dataset in ("qcd", "wprime"):
        rows = table[table["dataset"] == dataset]
        counts = histogram[{"dataset": dataset}]
        assert counts.sum(flow=True).value == pytest.approx(float(ak.sum(rows["weight"])))
        expected, _ = np.histogram(
            ak.to_numpy(rows["mjj"]),
            bins=counts.axes[0].edges,
            weights=ak.to_numpy(rows["weight"]),
        )
        np.testing.assert_allclose(counts.values(), expected)


def test_events_without_two_jets_are_counted_not_lost(tmp_path: Path) -> None:
    from rosenblatt.hep.particles import make_events
    from rosenblatt.io.root import write_root

    rows = [
        [],
        [(900.0, 0.0, 0.0)],
        [(900.0, 0.0, 0.0), (800.0, 0.1, 3.0)],
        [(500.0, 0.2, 0.0), (400.0, 0.0, 0.05)],
        [(700.0, -0.3, 1.0), (650.0, 0.4, -2.0), (30.0, 1.0, 0.0)],
    ]
    counts = [len(row) for row in rows]
    flat = np.array([p for row in rows for p in row], dtype=float).reshape(-1, 3)
    particles = ak.unflatten(
        ak.zip({"pt": flat[:, 0], "eta": flat[:, 1], "phi": flat[:, 2]}), counts
    )
    path = tmp_path / "few.root"
    write_root(path, make_events(particles, label=0, weight=[1.0, 2.0, 3.0, 4.0, 5.0]))
    out = run_processor({"few": [str(path)]}, chunksize=2)
    assert out["cutflow"]["few"] == {"read": 5, "fewer than two jets": 3, "in table": 2}
    assert ak.to_list(out["table"]["entry"]) == [2, 4]
    assert ak.to_list(out["table"]["weight"]) == [3.0, 5.0]
    assert out["mjj"].sum().value == 8.0


def test_join_tables_refuses_overlapping_chunks(output: dict) -> None:
    table = output["table"]
    with pytest.raises(ValueError, match="overlap"):
        join_tables([table[:10], table[5:20]])
    assert len(join_tables([])) == 0
    assert ak.to_list(join_tables([table[10:20], table[:10]])["entry"]) == ak.to_list(
        table[:20]["entry"]
    )


def test_check_cutflow_reports_lost_events() -> None:
    with pytest.raises(RuntimeError, match="10 events read but 9 accounted"):
        check_cutflow({"qcd": {"read": 10, "fewer than two jets": 1, "in table": 8}})


def test_missing_particle_branch_is_named(tmp_path: Path) -> None:
    import uproot

    path = tmp_path / "other.root"
    with uproot.recreate(path) as handle:
        handle.mktree(EVENTS_TREE, {"x": np.float64})
        handle[EVENTS_TREE].extend({"x": np.arange(3.0)})
    from coffea.nanoevents import NanoEventsFactory

    events = NanoEventsFactory.from_root(
        {str(path): EVENTS_TREE},
        schemaclass=BaseSchema,
        mode="eager",
        metadata={"dataset": "other", "filename": str(path), "entrystart": 0},
    ).events()
    with pytest.raises(
        ValueError, match=r"missing branch\(es\) \['Part_pt', 'Part_eta', 'Part_phi'\]"
    ):
        DijetProcessor().process(events)


def test_physics_of_the_small_sample(output: dict) -> None:
    """Loose checks on 150 events per process; the benchmark checks 2000."""
    table = output["table"]
    signal = table[table["label"] == 1]
    background = table[table["label"] == 0]
    mjj = ak.to_numpy(signal["mjj"])
    assert 3000.0 < np.median(mjj) < 3800.0
    assert abs(np.median(ak.to_numpy(signal["mj1"])) - 500.0) < 0.25 * 500.0
    assert abs(np.median(ak.to_numpy(signal["mj2"])) - 100.0) < 0.5 * 100.0
    # the X -> qq jet is two-pronged, QCD jets mostly one-pronged
    assert np.median(ak.to_numpy(signal["tau21_1"])) < np.median(ak.to_numpy(background["tau21_1"]))
    # background mjj falls above the trigger turn-on
    background_mjj = ak.to_numpy(background["mjj"])
    assert np.sum(background_mjj > 4000.0) < np.sum(
        (background_mjj > 2500.0) & (background_mjj < 3500.0)
    )
