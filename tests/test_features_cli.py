"""``rosenblatt features``: executors, inputs, output table and errors."""

from __future__ import annotations

from pathlib import Path

import awkward as ak
import numpy as np
import pytest

from rosenblatt.cli import main
from rosenblatt.hep.features import TABLE_COLUMNS

N_EVENTS = 40


@pytest.fixture(scope="module")
def event_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """ROOT files of 40 QCD and 40 W' events and an LHCO HDF5 copy of the W' events."""
    from rosenblatt.hep.generation import generate_file
    from rosenblatt.io.lhco import write_lhco
    from rosenblatt.io.root import read_root

    directory = tmp_path_factory.mktemp("cli-events")
    files = {}
    for process, seed in (("qcd", 31), ("wprime", 32)):
        path = directory / f"{process}.root"
        generate_file(path, process, N_EVENTS, seed, chunk_size=N_EVENTS, workers=1, progress=False)
        files[process] = path
    files["lhco"] = directory / "lhco.h5"
    write_lhco(files["lhco"], read_root(files["wprime"]))
    return files


def read_table(path: Path) -> ak.Array:
    return ak.from_parquet(str(path))


@pytest.mark.slow
def test_all_executors_give_the_same_table(
    event_files: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    inputs = [str(event_files[name]) for name in ("qcd", "wprime", "lhco")]
    tables = {}
    for executor, workers in (
        ("iterative", []),
        ("futures", ["--workers", "2"]),
        ("dask", ["--workers", "2"]),
    ):
        output = tmp_path / f"{executor}.parquet"
        status = main(
            [
                "features",
                *inputs,
                *("--output", str(output), "--executor", executor, *workers),
                *("--chunksize", "15", "--quiet"),
            ]
        )
        assert status == 0
        printed = capsys.readouterr().out
        assert f"{output}: " in printed
        assert "fewer than two jets" in printed
        tables[executor] = read_table(output)
    reference = tables["iterative"]
    assert len(reference) > 0
    for executor, table in tables.items():
        assert ak.fields(table) == list(TABLE_COLUMNS)
        for name in TABLE_COLUMNS:
            assert ak.to_list(table[name]) == ak.to_list(reference[name]), (executor, name)


@pytest.mark.slow
def test_lhco_input_gives_the_features_of_the_same_events_in_root(
    event_files: dict[str, Path], tmp_path: Path
) -> None:
    output = tmp_path / "table.parquet"
    inputs = [str(event_files["wprime"]), str(event_files["lhco"])]
    assert main(["features", *inputs, "--output", str(output), "--quiet"]) == 0
    table = read_table(output)
    from_root = table[table["file"] == str(event_files["wprime"])]
    from_lhco = table[table["file"] == str(event_files["lhco"])]
    assert len(from_root) == len(from_lhco) > 0
    for name in (
        "mjj",
        "pt_j1",
        "deta_jj",
        "mj1",
        "mj2",
        "tau21_1",
        "tau21_2",
        "image",
        "label",
        "entry",
    ):
        np.testing.assert_allclose(
            ak.to_numpy(from_lhco[name]), ak.to_numpy(from_root[name]), rtol=1e-12, err_msg=name
        )
    assert set(ak.to_list(table["dataset"])) == {"wprime", "lhco"}


def test_printed_cutflow_adds_up(
    event_files: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    output = tmp_path / "table.parquet"
    assert main(["features", str(event_files["qcd"]), "--output", str(output), "--quiet"]) == 0
    lines = capsys.readouterr().out.splitlines()
    header = next(index for index, line in enumerate(lines) if line.startswith("cut flow"))
    assert lines[header].split() == ["cut", "flow", "qcd"]
    counts = {
        line.rsplit(maxsplit=1)[0]: int(line.rsplit(maxsplit=1)[1])
        for line in lines[header + 1 : header + 4]
    }
    assert counts["read"] == N_EVENTS
    assert counts["read"] == counts["fewer than two jets"] + counts["in table"]
    assert len(read_table(output)) == counts["in table"]


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["missing.root", "--output", "t.parquet"], "missing.root: no such file"),
        (["{qcd}", "--output", "t.csv"], "give a .parquet file"),
        (["{qcd}", "--output", "t.parquet", "--scheduler", "tcp://x:1"], "needs --executor dask"),
        (["{qcd}", "--output", "t.parquet", "--chunksize", "0"], "chunksize"),
        (["{qcd}", "--output", "t.parquet", "--executor", "futures", "--workers", "0"], "workers"),
        (["{text}", "--output", "t.parquet"], "reads ROOT files"),
        (["{bad_root}", "--output", "t.parquet"], "lacks the branch(es) ['Part_eta', 'Part_phi']"),
    ],
)
def test_bad_arguments_are_explained(
    arguments: list[str],
    message: str,
    event_files: dict[str, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import uproot

    monkeypatch.chdir(tmp_path)
    (tmp_path / "events.txt").write_text("not events\n")
    with uproot.recreate(tmp_path / "bad.root") as handle:
        handle.mktree("Events", {"Part_pt": "var * float64"})
        handle["Events"].extend({"Part_pt": ak.Array([[1.0]])})
    names = {"qcd": str(event_files["qcd"]), "text": "events.txt", "bad_root": "bad.root"}
    status = main(["features", *(argument.format(**names) for argument in arguments), "--quiet"])
    assert status == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "t.parquet").exists()
