"""Ctrl-C is clean: status 130, one line naming the step, no traceback, no process left."""

from __future__ import annotations

import argparse
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from rosenblatt import cli
from rosenblatt._interrupt import INTERRUPTED_STATUS, interrupted_message, interrupted_step, step


def test_the_innermost_step_names_the_interrupt() -> None:
    with pytest.raises(KeyboardInterrupt) as caught, step("train"), step("scan"):
        raise KeyboardInterrupt
    assert interrupted_step(caught.value) == "scan"
    assert interrupted_message("rosenblatt run lhco-smoke", caught.value) == (
        "rosenblatt run lhco-smoke: interrupted during step 'scan'; its workers are stopped and "
        "every finished step is kept: run the same command to resume"
    )
    assert interrupted_step(KeyboardInterrupt()) is None


def test_the_command_line_says_one_line_and_returns_130(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def interrupted(args: argparse.Namespace) -> int:
        with step("features"):
            raise KeyboardInterrupt

    monkeypatch.setattr("rosenblatt.commands.run.main", interrupted)
    handler = signal.getsignal(signal.SIGINT)
    assert cli.main(["run", "blobs"]) == INTERRUPTED_STATUS
    captured = capsys.readouterr()
    assert captured.err.splitlines() == [
        (
            "rosenblatt run blobs: interrupted during step 'features'; its workers are stopped "
            "and every finished step is kept: run the same command to resume"
        )
    ]
    assert signal.getsignal(signal.SIGINT) is handler


#: a process with workers of every kind the package starts, then stop_workers()
WORKERS = textwrap.dedent(
    """
    import multiprocessing, subprocess, sys, time
    from rosenblatt._interrupt import ignore_interrupt, stop_workers

    if __name__ == "__main__":
        context = multiprocessing.get_context("forkserver")
        pool = context.Pool(2, initializer=ignore_interrupt)
        pool.map_async(time.sleep, [60, 60])
        sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
        time.sleep(2)
        print(" ".join(map(str, sorted(stop_workers()))), flush=True)
        print(sleeper.pid, flush=True)
    """
)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as stat:
            return stat.read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads processes from /proc")
def test_stop_workers_ends_every_child_but_the_interpreters_helpers(tmp_path: Path) -> None:
    script = tmp_path / "workers.py"
    script.write_text(WORKERS, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=120, check=True
    )
    stopped_line, sleeper = done.stdout.split("\n")[:2]
    stopped = [int(pid) for pid in stopped_line.split()]
    # the two pool workers (children of the fork server) and the plain child
    assert len(stopped) == 3
    assert int(sleeper) in stopped
    assert not [pid for pid in stopped if _alive(pid)]


def session_processes(leader: int) -> list[int]:
    """The processes of the session that ``leader`` started, itself included."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if os.getsid(int(entry.name)) == leader and _alive(int(entry.name)):
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def command_line(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_text(encoding="utf-8").replace("\0", " ")
    except OSError:
        return ""


#: runs the command given after it with SIGINT by its default action, as a terminal's command
#: has it: a test run started in the background of a shell (``pytest &``) ignores SIGINT, and
#: an ignored signal stays ignored in every child, which the command under test must not inherit
SIGINT_AS_IN_A_TERMINAL = (
    "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); "
    "os.execv(sys.argv[1], sys.argv[1:])"
)


def interrupt_when_working(
    command: list[str], workers: str, written: Path
) -> tuple[int, str, list[str]]:
    """Start ``command`` in a session of its own; once a worker process whose command line
    holds ``workers`` runs and the work has written a file into ``written``, send SIGINT to
    the whole session as a terminal does.

    Returns the exit status, the standard error, and the command lines of the
    processes of the session still there 10 s after the command ended.
    """
    process = subprocess.Popen(
        [sys.executable, "-c", SIGINT_AS_IN_A_TERMINAL, *command],
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "MPLBACKEND": "Agg"},
    )
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline and process.poll() is None:
        children = [p for p in session_processes(process.pid) if p != process.pid]
        working = written.is_dir() and any(written.iterdir())
        if working and any(workers in command_line(p) for p in children):
            break
        time.sleep(0.2)
    assert process.poll() is None, "the command ended before its workers started"
    os.killpg(process.pid, signal.SIGINT)
    _, err = process.communicate(timeout=300)
    left: list[int] = []
    for _ in range(50):
        left = session_processes(process.pid)
        if not left:
            break
        time.sleep(0.2)
    return process.returncode, err, [command_line(p) for p in left]


@pytest.fixture(scope="module")
def event_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    from rosenblatt.hep.generation import generate_file

    folder = tmp_path_factory.mktemp("interrupt-events")
    files = {}
    for name, process, events, seed in (
        ("defining", "qcd", 300, 41),
        ("qcd", "qcd", 150, 42),
        ("wprime", "wprime", 40, 43),
    ):
        files[name] = folder / f"{name}.root"
        generate_file(files[name], process, events, seed, chunk_size=100, progress=False)
    return files


def abcd_config(files: dict[str, Path], folder: Path) -> dict[str, Any]:
    return {
        "study": "abcd",
        "name": "abcd-interrupt",
        "data": {"folder": str(folder / "data")},
        "defining": {"qcd-defining": [str(files["defining"])]},
        "fileset": {"qcd": [str(files["qcd"])], "wprime": [str(files["wprime"])]},
        "score": {"column": "mj1"},
        "transforms": [
            {"kind": "irgi", "depth": 2},
            {"kind": "gridkde", "sigma_r": 0.3, "degree": 1},
        ],
        "abcd": {"x": "mjj", "x0": [2200.0, 3000.0], "y0": [0.2, 0.8], "x_max": 4500.0},
        "executor": {"kind": "futures", "workers": 2, "chunksize": 10},
    }


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads processes from /proc")
def test_ctrl_c_during_a_run_stops_its_workers_and_the_rerun_completes(
    event_files: dict[str, Path], tmp_path: Path
) -> None:
    config = tmp_path / "abcd-interrupt.yaml"
    config.write_text(yaml.safe_dump(abcd_config(event_files, tmp_path)), encoding="utf-8")
    command = [sys.executable, "-m", "rosenblatt.cli", "run", str(config)]
    command += ["--output", str(tmp_path / "results")]
    # during the pass over the defining sample, which writes its skims chunk by chunk
    status, err, left = interrupt_when_working(command, "loky", tmp_path / "data" / "skim")
    assert status == INTERRUPTED_STATUS, err
    assert "Traceback" not in err
    assert left == []
    lines = err.strip().splitlines()
    assert [line for line in lines if "interrupted" in line] == [lines[-1]]
    found = re.fullmatch(
        rf"rosenblatt run {re.escape(str(config))}: interrupted during step '([\w ]+)'; its "
        "workers are stopped and every finished step is kept: run the same command to resume",
        lines[-1],
    )
    assert found is not None, lines[-1]
    from rosenblatt.studies.abcd import STEPS

    assert found.group(1) in STEPS

    again = subprocess.run(command, capture_output=True, text=True, timeout=900, check=False)
    assert again.returncode == 0, again.stderr
    assert (tmp_path / "results" / "summary.json").is_file()


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads processes from /proc")
@pytest.mark.parametrize("executor", ["dask", "futures"])
def test_ctrl_c_of_the_features_command(
    executor: str, event_files: dict[str, Path], tmp_path: Path
) -> None:
    output = tmp_path / "features.parquet"
    command = [sys.executable, "-m", "rosenblatt.cli", "features", str(event_files["defining"])]
    command += ["--output", str(output), "--executor", executor, "--workers", "2"]
    command += ["--chunksize", "10", "--quiet"]
    workers = "spawn_main" if executor == "dask" else "loky"
    chunks = output.with_name(f".{output.name}.chunks")
    status, err, left = interrupt_when_working(command, workers, chunks)
    assert status == INTERRUPTED_STATUS, err
    assert err.strip().splitlines() == ["rosenblatt features: interrupted; no table written"]
    assert left == []
    assert not output.exists()
