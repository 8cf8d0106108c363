"""Two ``rosenblatt run`` on the same results folder: one writes, the other waits or refuses."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from rosenblatt._lock import folder_lock, lock_path
from rosenblatt.cli import LOCKED_STATUS

#: a blob study small enough to run twice in a test
TINY: dict[str, Any] = {
    "study": "blobs",
    "name": "tiny",
    "seed": 1,
    "background": {"rho": 0.6, "n_defining": 4096, "n_testing": 4000},
    "signal": {
        "mean": [1.5, 2.5],
        "cov": [[0.25, -0.1], [-0.1, 0.25]],
        "n_defining": 1000,
        "n_testing": 1000,
    },
    "n_subsamples": 2,
    "permutations": 5,
    "irgi": {"depths": [1, 2, 3]},
    "kde": {"sigma_r": {"min": 0.05, "max": 0.5, "n": 2}},
    "figures": {"grid_depths": [2], "kde_sigmas": [0.1]},
    "peers": False,
    "variants": False,
}


def start_run(
    config: Path, output: Path, *options: str, stderr: Any = None
) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "rosenblatt.cli",
            "run",
            str(config),
            "--output",
            str(output),
            *options,
        ],
        stdout=subprocess.DEVNULL if stderr is not None else subprocess.PIPE,
        stderr=subprocess.PIPE if stderr is None else stderr,
        text=True,
        env={**os.environ, "MPLBACKEND": "Agg"},
    )


def wait_for(condition: Any, what: str, timeout: float = 600.0) -> None:
    """Poll ``condition`` until it holds; fail the test after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"no {what} after {timeout} s")
        time.sleep(0.05)


def holder(output: Path) -> int | None:
    """The process id the lock file of ``output`` names, or ``None``."""
    try:
        owner = json.loads(lock_path(output).read_text(encoding="utf-8"))
    except (FileNotFoundError, ValueError):
        return None
    return owner.get("pid") if isinstance(owner, dict) else None


@pytest.fixture
def config(tmp_path: Path) -> Path:
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump(TINY), encoding="utf-8")
    return path


@pytest.mark.slow
@pytest.mark.system
def test_two_runs_on_one_folder_write_one_after_the_other(config: Path, tmp_path: Path) -> None:
    output = tmp_path / "results"
    writer = start_run(config, output)
    # the first run is held still once it has the folder, until the second one waits for it:
    # once its lock file names it (written after the lock is taken, not when the file is made)
    wait_for(lambda: holder(output) == writer.pid or writer.poll() is not None, "lock")
    writer.send_signal(signal.SIGSTOP)
    waiter_log = tmp_path / "waiter.log"
    with waiter_log.open("w", encoding="utf-8") as log:
        waiter = start_run(config, output, stderr=log)
        try:
            wait_for(
                lambda: (
                    "waiting:" in waiter_log.read_text(encoding="utf-8")
                    or waiter.poll() is not None
                ),
                "waiting line",
            )
        finally:
            writer.send_signal(signal.SIGCONT)
        runs = [writer, waiter]
        ended: dict[int, float] = {}
        while len(ended) < len(runs):
            for run in runs:
                if run.pid not in ended and run.poll() is not None:
                    ended[run.pid] = time.time()
            time.sleep(0.05)
    logs = [writer.communicate()[1], waiter_log.read_text(encoding="utf-8")]
    assert [run.returncode for run in runs] == [0, 0], logs
    assert "waiting:" not in logs[0], logs
    [line] = [line for line in logs[1].splitlines() if line.startswith("waiting:")]
    assert line.startswith(f"waiting: {output} is being written by process {writer.pid} on host ")
    assert f"(lock {lock_path(output)})" in line
    assert "Traceback" not in logs[0] + logs[1]
    # the one that waited wrote every file after the other had finished
    files = sorted(output.iterdir())
    assert {f.name for f in files} >= {"summary.json", "report.md"}
    assert not [f.name for f in files if f.name.startswith(".")]
    assert not lock_path(output).exists()
    assert min(f.stat().st_mtime for f in files) >= ended[writer.pid] - 1.0
    assert ended[waiter.pid] >= ended[writer.pid]
    summary = json.loads((output / "summary.json").read_text(encoding="utf-8"))
    assert summary["name"] == "tiny"


@pytest.mark.slow
@pytest.mark.system
def test_refusing_when_the_folder_is_being_written(config: Path, tmp_path: Path) -> None:
    output = tmp_path / "results"
    with folder_lock(output):
        refused = start_run(config, output, "--if-locked", "refuse")
        _, err = refused.communicate(timeout=600)
    assert refused.returncode == LOCKED_STATUS
    assert err.strip() == (
        f"rosenblatt run {config}: error: {output} is being written by process {os.getpid()} "
        f"on host {socket.gethostname()}, started "
        f"{err.split('started ')[1].split(',')[0]}, `{err.split('`')[1]}` "
        f"(lock {lock_path(output)})"
    )
    assert not output.exists()
