"""Event generation on a dask cluster: the same file as the local pool, resuming, the flags."""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import awkward as ak
import numpy as np
import pytest

pytest.importorskip("pythia8mc")
pytest.importorskip("fastjet")
pytest.importorskip("distributed")

from rosenblatt.cli import build_parser, main
from rosenblatt.hep import _generation_executors, generation
from rosenblatt.hep.generation import GenerationSummary, executor_name, generate_file
from rosenblatt.io import read_events
from rosenblatt.io.lhco import lhco_info

N_EVENTS = 60
OPTIONS: dict[str, Any] = {"seed": 21, "chunk_size": 20, "progress": False}
ADDRESS = "tcp://127.0.0.1:8786"


def assert_same_files(actual: Path, expected: Path) -> None:
    """Events, per-chunk records and totals of two files agree exactly."""
    events, reference = read_events(actual), read_events(expected)
    assert ak.fields(events) == ak.fields(reference)
    for name in ak.fields(reference):
        assert ak.to_list(events[name]) == ak.to_list(reference[name]), name
    info, reference_info = lhco_info(actual), lhco_info(expected)
    assert info["chunks"].keys() == reference_info["chunks"].keys()
    for name, values in reference_info["chunks"].items():
        np.testing.assert_array_equal(info["chunks"][name], values, err_msg=name)
    assert info["summary"] == reference_info["summary"]


@pytest.fixture(scope="module")
def local_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """60 passing W' events in 3 chunks from the local executor in this process."""
    path = tmp_path_factory.mktemp("local") / "wprime.h5"
    generate_file(path, "wprime", N_EVENTS, workers=1, **OPTIONS)
    return path


@pytest.fixture
def scheduler_address() -> Iterator[str]:
    """Address of a running one-worker dask cluster."""
    with _generation_executors._local_cluster(1) as cluster:
        yield cluster.scheduler_address


@pytest.mark.slow
@pytest.mark.system
def test_a_local_dask_cluster_writes_the_file_of_the_local_executor(
    local_file: Path, tmp_path: Path
) -> None:
    path = tmp_path / "dask.h5"
    summary = generate_file(path, "wprime", N_EVENTS, workers=2, executor="dask", **OPTIONS)
    assert summary == GenerationSummary.from_records(lhco_info(local_file)["chunks"])
    assert summary.n_chunks == 3
    assert_same_files(path, local_file)


@pytest.mark.slow
@pytest.mark.system
def test_a_run_resumes_on_a_running_scheduler(
    local_file: Path, scheduler_address: str, tmp_path: Path
) -> None:
    path = tmp_path / "resumed.h5"
    generate_file(path, "wprime", 20, workers=1, **OPTIONS)
    generate_file(path, "wprime", N_EVENTS, scheduler=scheduler_address, **OPTIONS)
    assert list(lhco_info(path)["chunks"]["chunk"]) == [0, 1, 2]
    assert_same_files(path, local_file)


def test_the_executor_follows_the_scheduler_unless_named() -> None:
    assert executor_name(None, None) == "local"
    assert executor_name(None, ADDRESS) == "dask"
    assert executor_name("dask", None) == "dask"
    assert executor_name("dask", ADDRESS) == "dask"


@pytest.mark.parametrize(
    ("executor", "scheduler", "message"),
    [
        ("spark", None, r"unknown executor 'spark'; choose one of \['local', 'dask'\]"),
        ("local", ADDRESS, "only the dask executor joins a scheduler, not 'local'"),
    ],
)
def test_a_bad_executor_is_refused_before_the_file_is_touched(
    tmp_path: Path, executor: str, scheduler: str | None, message: str
) -> None:
    path = tmp_path / "never.h5"
    with pytest.raises(ValueError, match=message):
        generate_file(path, "wprime", 5, executor=executor, scheduler=scheduler, **OPTIONS)
    assert not path.exists()


def parse(*flags: str) -> argparse.Namespace:
    argv = ["generate", "--process", "qcd", "--events", "5", "--seed", "1", "--output", "x.h5"]
    return build_parser().parse_args([*argv, *flags])


def test_command_line_flags_choose_the_executor() -> None:
    default = parse()
    assert (default.executor, default.scheduler) == (None, None)
    assert parse("--executor", "dask").executor == "dask"
    assert parse("--executor", "local").executor == "local"
    joined = parse("--scheduler", ADDRESS, "--workers", "3")
    assert (joined.executor, joined.scheduler, joined.workers) == (None, ADDRESS, 3)
    with pytest.raises(SystemExit):
        parse("--executor", "spark")


def test_command_line_passes_the_executor_on(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    calls: list[dict[str, Any]] = []

    def fake_generate_file(*args: Any, **kwargs: Any) -> GenerationSummary:
        calls.append(kwargs)
        return GenerationSummary.from_records({"n_events": np.array([5])})

    monkeypatch.setattr(generation, "generate_file", fake_generate_file)
    argv = ["generate", "--process", "qcd", "--events", "5", "--seed", "1", "--output", "x.h5"]
    assert main([*argv, "--scheduler", ADDRESS, "--quiet"]) == 0
    assert main([*argv, "--executor", "dask", "--workers", "2", "--quiet"]) == 0
    capsys.readouterr()
    assert [(call["executor"], call["scheduler"]) for call in calls] == [
        (None, ADDRESS),
        ("dask", None),
    ]
    assert calls[1]["workers"] == 2


def test_command_line_refuses_a_scheduler_with_the_local_executor(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "never.h5"
    argv = ["generate", "--process", "qcd", "--events", "5", "--seed", "1", "--output", str(path)]
    assert main([*argv, "--executor", "local", "--scheduler", ADDRESS, "--quiet"]) == 2
    assert "only the dask executor joins a scheduler" in capsys.readouterr().err
    assert not path.exists()
