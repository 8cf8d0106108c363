"""A dask worker killed in the middle of a run loses no event and doubles none.

The analysis processor runs over a ROOT file in small chunks on a local dask
cluster of two worker processes. One chunk holds its worker until that worker
has been killed with SIGKILL, so the kill surely lands while the chunk runs and
other chunks are pending; the scheduler reschedules the dead worker's tasks
(and recomputes the outputs it held) and the nanny starts a new worker. The
merged histograms and cut flow must equal exactly those of undisturbed runs, on
the same cluster and on the iterative executor.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("pythia8mc")
pytest.importorskip("fastjet")
pytest.importorskip("distributed")

from killed_worker_processor import RELEASE_FLAG, LoggingAnalysisProcessor, read_markers

from rosenblatt.ml.scoring import make_scorer
from rosenblatt.processors.analysis import CUTFLOW_STEPS, AnalysisProcessor, PlaneBinning, Variant
from rosenblatt.processors.runner import make_executor, run_processor

pytestmark = [pytest.mark.slow, pytest.mark.system]

N_EVENTS = 80
CHUNKSIZE = 8
#: the chunk that holds its worker until the worker is killed
HOLD_START = 3 * CHUNKSIZE
X0 = (1500.0, 2500.0, 3000.0, 3500.0, 4500.0)
Y0 = (0.0, 50.0, 100.0, 200.0, 400.0)
PLANE = PlaneBinning(x_bins=40, x_range=(0.0, 8000.0), y_bins=40)


def analysis_options() -> dict[str, Any]:
    """The arguments of the analysis processor: the ``mj1`` column as score."""
    return {
        "scorers": {"score": make_scorer({"column": "mj1"})},
        "variants": (Variant("score", "score", Y0, y_range=(0.0, 1000.0)),),
        "x0": X0,
        "plane": PLANE,
    }


@pytest.fixture(scope="module")
def qcd_file(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A ROOT file of 80 QCD events from ``rosenblatt generate``."""
    from rosenblatt.hep.generation import generate_file

    path = tmp_path_factory.mktemp("events") / "qcd.root"
    generate_file(path, "qcd", N_EVENTS, 31, chunk_size=N_EVENTS, workers=1, progress=False)
    return str(path)


class Killer(threading.Thread):
    """Kill the worker that runs the held chunk as soon as it starts it, then release the chunk.

    Parameters
    ----------
    worker_pids : frozenset of int
        Process ids of the dask workers; no other process is killed.
    log_dir : Path
        Folder of the chunk marker files.
    timeout : float, default 60
        Seconds to wait at most for the held chunk.
    """

    def __init__(self, worker_pids: frozenset[int], log_dir: Path, timeout: float = 60.0) -> None:
        super().__init__(daemon=True)
        self.worker_pids = worker_pids
        self.log_dir = log_dir
        self.timeout = timeout
        self.killed_pid: int | None = None
        self.done_at_kill = -1
        self.error: str | None = None
        self._finished = threading.Event()

    def stop(self) -> None:
        """Stop waiting (the run ended)."""
        self._finished.set()

    def run(self) -> None:
        """Wait for the held chunk's start marker, SIGKILL its process, write the release flag."""
        deadline = time.monotonic() + self.timeout
        try:
            while not self._finished.is_set() and time.monotonic() < deadline:
                markers = read_markers(self.log_dir)
                held = [m for m in markers if m.start == HOLD_START]
                if held:
                    pid = held[0].pid
                    if pid not in self.worker_pids:
                        self.error = (
                            f"the held chunk runs in {pid}, not a worker {sorted(self.worker_pids)}"
                        )
                        return
                    self.done_at_kill = sum(m.done for m in markers)
                    os.kill(pid, signal.SIGKILL)
                    self.killed_pid = pid
                    return
                time.sleep(0.01)
            self.error = "the held chunk never started"
        finally:
            (self.log_dir / RELEASE_FLAG).touch()


def assert_same_histograms(actual: Mapping[str, Any], expected: Mapping[str, Any]) -> None:
    """Every histogram of two outputs: same axes, values and variances with flow, exactly."""
    for kind in ("abcd", "plane"):
        assert actual[kind].keys() == expected[kind].keys()
        for name, histogram in expected[kind].items():
            other = actual[kind][name]
            label = f"{kind} {name}"
            assert other.axes == histogram.axes, label
            assert np.array_equal(other.values(flow=True), histogram.values(flow=True)), label
            assert np.array_equal(other.variances(flow=True), histogram.variances(flow=True)), label
            assert other == histogram, label


def test_a_worker_killed_mid_run_loses_and_doubles_no_event(qcd_file: str, tmp_path: Path) -> None:
    inputs = {"qcd": [qcd_file]}
    with make_executor("iterative", progress=False) as pool:
        expected = run_processor(
            inputs, AnalysisProcessor(**analysis_options()), pool, chunksize=CHUNKSIZE
        )
    assert expected["cutflow"]["qcd"]["read"] == N_EVENTS
    filled = expected["abcd"]["score"].sum(flow=True).value
    assert filled == expected["cutflow"]["qcd"]["in ABCD"] > N_EVENTS // 2

    log_dir = tmp_path / "chunks"
    log_dir.mkdir()
    logging_processor = LoggingAnalysisProcessor(
        **analysis_options(), log_dir=str(log_dir), hold_start=HOLD_START, delay=0.1
    )
    with make_executor("dask", 2, progress=False) as pool:
        client = pool.client
        client.wait_for_workers(2)
        pids_before = frozenset(client.run(os.getpid).values())
        assert len(pids_before) == 2
        undisturbed = run_processor(
            inputs, AnalysisProcessor(**analysis_options()), pool, chunksize=CHUNKSIZE
        )
        killer = Killer(pids_before, log_dir)
        killer.start()
        try:
            actual = run_processor(inputs, logging_processor, pool, chunksize=CHUNKSIZE)
        finally:
            killer.stop()
            killer.join()
        client.wait_for_workers(2, timeout=30)
        pids_after = frozenset(client.run(os.getpid).values())
        events = [event for _, event in client.get_events("all")]

    # the kill really happened in the middle of the run
    assert killer.error is None, killer.error
    assert killer.killed_pid is not None
    n_chunks = -(-N_EVENTS // CHUNKSIZE)
    markers = read_markers(log_dir)
    assert 0 <= killer.done_at_kill < n_chunks - 1
    killed = [m for m in markers if m.pid == killer.killed_pid]
    assert any(m.start == HOLD_START and not m.done for m in killed)
    assert killer.killed_pid not in pids_after
    assert len(pids_after) == 2
    removed = [e for e in events if isinstance(e, dict) and e.get("action") == "remove-worker"]
    assert len(removed) == 1
    assert removed[0]["processing-tasks"], "the scheduler saw no task on the killed worker"
    # every chunk finished, the held one on another worker after the kill
    done = [m for m in markers if m.done]
    assert {(m.start, m.stop) for m in done} == {
        (start, min(start + CHUNKSIZE, N_EVENTS)) for start in range(0, N_EVENTS, CHUNKSIZE)
    }
    assert any(m.start == HOLD_START and m.pid != killer.killed_pid for m in done)
    assert len(markers) > n_chunks

    # the output is that of the undisturbed runs, every event counted once
    assert_same_histograms(undisturbed, expected)
    assert undisturbed["cutflow"] == expected["cutflow"]
    assert_same_histograms(actual, expected)
    assert actual["cutflow"] == expected["cutflow"]
    counts = actual["cutflow"]["qcd"]
    assert counts["read"] == N_EVENTS == actual["entries"][qcd_file]
    assert counts["read"] == sum(counts[step] for step in CUTFLOW_STEPS[1:])
    assert actual["skipped"] == {}
