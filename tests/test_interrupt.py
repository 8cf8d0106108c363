"""Ctrl-C is clean: status 130, one line naming the step, no traceback, no process left."""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from rosenblatt import cli
from rosenblatt._interrupt import (
    INTERRUPTED_STATUS,
    STOP_SIGNALS,
    Stopped,
    interrupted_message,
    interrupted_status,
    interrupted_step,
    interruption,
    step,
    stop_on_signals,
    stop_signal,
)


@pytest.fixture(autouse=True)
def stop_signals_not_ignored() -> Any:
    """The stop signals at their default action, as a batch job has them.

    A test session started under ``nohup`` ignores SIGHUP, and a run rightly
    leaves an ignored signal ignored; the tests here are of a run that receives
    them, so for each test (and the runs it starts) none is ignored.
    """
    ignored = [signum for signum in STOP_SIGNALS if signal.getsignal(signum) is signal.SIG_IGN]
    for signum in ignored:
        signal.signal(signum, signal.SIG_DFL)
    yield
    for signum in ignored:
        signal.signal(signum, signal.SIG_IGN)


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
@pytest.mark.system
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
def event_files(abcd_event_files: dict[str, Path]) -> dict[str, Path]:
    """The abcd study's generated events (conftest): defining and analysed QCD, and W'."""
    return abcd_event_files


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
@pytest.mark.system
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
    from rosenblatt.studies.abcd.study import STEPS

    assert found.group(1) in STEPS

    again = subprocess.run(command, capture_output=True, text=True, timeout=900, check=False)
    assert again.returncode == 0, again.stderr
    assert (tmp_path / "results" / "summary.json").is_file()


@pytest.mark.slow
@pytest.mark.system
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


# the signals of batch systems -----------------------------------------------------------


def _signal_self(signum: int) -> None:
    """Send ``signum`` to this process; a handler that raises cuts the wait short."""
    os.kill(os.getpid(), signum)
    time.sleep(5)


def test_a_stop_signal_raises_stopped_once_and_the_handlers_come_back() -> None:
    handlers = {signum: signal.getsignal(signum) for signum in STOP_SIGNALS}
    assert {s.name for s in STOP_SIGNALS} == {"SIGTERM", "SIGHUP", "SIGXCPU"}
    with pytest.raises(Stopped) as caught, stop_on_signals(), step("analyse"):
        _signal_self(signal.SIGXCPU)
    assert isinstance(caught.value, KeyboardInterrupt)
    assert caught.value.signum == signal.SIGXCPU
    assert interrupted_step(caught.value) == "analyse"
    assert interrupted_status(caught.value) == 152
    assert interruption(caught.value) == "stopped by SIGXCPU"
    assert {signum: signal.getsignal(signum) for signum in STOP_SIGNALS} == handlers
    assert stop_signal() is None
    with stop_on_signals():
        with pytest.raises(Stopped):
            _signal_self(signal.SIGTERM)
        # a second signal while stopping is ignored: the clean-up is not cut short
        os.kill(os.getpid(), signal.SIGHUP)
        time.sleep(0.05)
        assert stop_signal() == signal.SIGTERM


def _signal_in_a_callback_from_c() -> None:
    """SIGTERM handled inside a callback from C, as numba's compiler makes: its exception is lost."""
    import ctypes

    def callback() -> None:
        _signal_self(signal.SIGTERM)

    ctypes.CFUNCTYPE(None)(callback)()


def _fit_step(reached: list[str]) -> None:
    with step("fit"):
        _signal_in_a_callback_from_c()
        reached.append("the step's end")


def test_a_stop_signal_lost_in_a_callback_from_c_stops_the_run_at_its_step(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    lost: list[Any] = []
    monkeypatch.setattr(sys, "unraisablehook", lost.append)
    reached: list[str] = []
    with stop_on_signals(), pytest.raises(Stopped) as caught:
        _fit_step(reached)
    # the signal's exception was dropped where it was raised, and the step went on
    assert [type(error.exc_value) for error in lost] == [Stopped]
    assert reached == ["the step's end"]
    assert caught.value.signum == signal.SIGTERM
    assert interrupted_step(caught.value) == "fit"
    assert interrupted_status(caught.value) == 128 + signal.SIGTERM


def _analyse_then_close(ran: list[str]) -> None:
    try:
        with step("analyse"):
            _signal_self(signal.SIGTERM)
    finally:
        with step("close"):
            ran.append("close")


def test_a_stop_signal_unwinding_lets_the_steps_of_the_clean_up_run() -> None:
    ran: list[str] = []
    with stop_on_signals(), pytest.raises(Stopped) as caught:
        _analyse_then_close(ran)
    assert ran == ["close"]
    assert interrupted_step(caught.value) == "analyse"


def test_a_signal_this_process_ignores_stays_ignored() -> None:
    previous = signal.signal(signal.SIGHUP, signal.SIG_IGN)
    try:
        with stop_on_signals():
            assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN
            os.kill(os.getpid(), signal.SIGHUP)
            time.sleep(0.05)
            assert stop_signal() is None
    finally:
        signal.signal(signal.SIGHUP, previous)


@pytest.mark.parametrize(
    ("signum", "status"),
    [(signal.SIGTERM, 143), (signal.SIGHUP, 129), (signal.SIGXCPU, 152)],
)
def test_the_command_line_stops_on_a_signal_as_on_ctrl_c(
    signum: int, status: int, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def signalled(args: argparse.Namespace) -> int:
        with step("analyse"):
            try:
                _signal_self(signum)
            except Stopped:
                # what unwinds may be another error (a pool whose workers the signal ended)
                raise RuntimeError("a worker ended abruptly") from None
        return 0

    monkeypatch.setattr("rosenblatt.commands.run.main", signalled)
    assert cli.main(["run", "blobs"]) == status
    name = signal.Signals(signum).name
    assert capsys.readouterr().err.splitlines() == [
        (
            f"rosenblatt run blobs: stopped by {name} during step 'analyse'; its workers are "
            "stopped and every finished step is kept: run the same command to resume"
        )
    ]
    assert signal.getsignal(signum) is signal.SIG_DFL


#: the score of the signal tests' runs: the analysis pass over dataset ``qcd`` leaves a mark
#: (its worker's process id) and lasts a few seconds, so that a signal reaches it there
SLOW_SCORE = textwrap.dedent(
    """
    import os
    import time
    from pathlib import Path

    import numpy as np


    def score(events):
        if events.metadata["dataset"] == "qcd":
            Path(__file__).with_name(f"analysing-{os.getpid()}").touch()
            time.sleep(0.4)
        return np.asarray(events["tagger_out"])
    """
)


@pytest.fixture(scope="module")
def ntuples(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Defining and testing QCD and a signal as flat ntuples (tree ``nominal``)."""
    uproot = pytest.importorskip("uproot")
    pytest.importorskip("coffea")
    folder = tmp_path_factory.mktemp("signal-ntuples")
    rng = np.random.default_rng(3)
    for name, n, is_signal in (("qcd_def", 8000, False), ("qcd", 6000, False), ("sig", 800, True)):
        mass = rng.normal(3400.0, 150.0, n) if is_signal else 2000.0 + rng.exponential(600.0, n)
        score = rng.normal(0.8, 0.1, n) if is_signal else rng.beta(2.0, 5.0, n) + mass / 8e3
        columns = {
            "m_jj_reco": mass,
            "tagger_out": np.clip(score, 0.0, 1.0),
            "w_mc": rng.choice([-0.5, 1.0, 1.5], n, p=[0.1, 0.6, 0.3]),
        }
        with uproot.recreate(folder / f"{name}.root") as handle:
            handle.mktree("nominal", {key: value.dtype for key, value in columns.items()})
            handle["nominal"].extend(columns)
    return folder


def signal_run(ntuples: Path, folder: Path) -> tuple[Path, list[str]]:
    """A run folder with the configuration and the slow score; its ``rosenblatt run`` command."""
    dataset = {"role": "background", "weight": "w_mc", "xsec": 2000.0}
    config = {
        "study": "abcd",
        "name": "signals",
        "treename": "nominal",
        "lumi": 3.0,
        "datasets": {
            "qcd-defining": {
                **dataset,
                "files": [str(ntuples / "qcd_def.root")],
                "role": "defining",
            },
            "qcd": {**dataset, "files": [str(ntuples / "qcd.root")]},
            "sig": {
                **dataset,
                "files": [str(ntuples / "sig.root")],
                "role": "signal",
                "xsec": 10.0,
            },
        },
        "score": {"function": "slow_score.py:score"},
        "transforms": [{"kind": "irgi", "depth": 4}],
        "abcd": {"x": "m_jj_reco", "x0": [2200.0, 3800.0], "n_x0": 5, "y0": [0.1, 0.9], "n_y0": 5},
        "executor": {"kind": "futures", "workers": 2, "chunksize": 500},
        "statistics": {"n_boot": 0},
        "data": {"folder": "cache"},
    }
    folder.mkdir(parents=True)
    (folder / "config.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    (folder / "slow_score.py").write_text(SLOW_SCORE, encoding="utf-8")
    script = Path(sys.executable).with_name("rosenblatt")
    launcher = [str(script)] if script.is_file() else [sys.executable, "-m", "rosenblatt.cli"]
    return folder, [*launcher, "run", "config.yaml", "--output", "results"]


#: keys of summary.json that are wall times or say where and with what the code ran
VOLATILE = re.compile(
    r"seconds|timings?$|^time|^commit$|^uncommitted_changes$|^configuration_file$|^_path$"
)


def _stable(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _stable(v) for k, v in value.items() if not VOLATILE.search(str(k))}
    if isinstance(value, list):
        return [_stable(v) for v in value]
    return value


def results_of(folder: Path) -> dict[str, Any]:
    """A run's results: its JSON files (wall times left out) and the histograms of abcd.root."""
    import uproot

    found: dict[str, Any] = {}
    for path in sorted((folder / "results").glob("*.json")):
        if path.name not in ("timings.json", "manifest.json"):  # hashes of wall times
            found[path.name] = _stable(json.loads(path.read_text(encoding="utf-8")))
    with uproot.open(folder / "results" / "abcd.root") as handle:
        for name in handle.keys(cycle=False):
            found[name] = handle[name].values(flow=True).tolist()
    return found


def differences(first: Any, second: Any, where: str = "") -> list[str]:
    """Where two results differ; numbers within 1e-12 of each other are the same.

    The futures executor merges the chunks' sums in the order they finish, so
    that a float sum of weights may differ in its last bit between two runs.
    """
    if isinstance(first, dict) and isinstance(second, dict):
        found = [f"{where}.{k}: only in one" for k in sorted(set(first) ^ set(second), key=str)]
        for key in sorted(first.keys() & second.keys(), key=str):
            found += differences(first[key], second[key], f"{where}.{key}")
        return found
    if isinstance(first, list) and isinstance(second, list) and len(first) == len(second):
        return [
            d
            for i, pair in enumerate(zip(first, second, strict=True))
            for d in differences(*pair, f"{where}[{i}]")
        ]
    numbers = (int, float)
    if isinstance(first, numbers) and isinstance(second, numbers):
        same = first == second or math.isclose(first, second, rel_tol=1e-12, abs_tol=1e-12)
    else:
        same = json.dumps(first, sort_keys=True) == json.dumps(second, sort_keys=True)
    return [] if same else [f"{where}: {str(first)[:80]} != {str(second)[:80]}"]


def _run_to_completion(folder: Path, command: list[str]) -> dict[str, Any]:
    done = subprocess.run(
        command, cwd=folder, capture_output=True, text=True, timeout=900, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return results_of(folder)


@pytest.fixture(scope="module")
def uninterrupted(ntuples: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    folder, command = signal_run(ntuples, tmp_path_factory.mktemp("signals") / "uninterrupted")
    return _run_to_completion(folder, command)


def _analysing(folder: Path, main: int) -> bool:
    """Whether a worker process (not ``main``) is in the analysis pass over dataset qcd."""
    return any(path.name != f"analysing-{main}" for path in folder.glob("analysing-*"))


@pytest.mark.slow
@pytest.mark.system
@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads processes from /proc")
@pytest.mark.parametrize(
    ("name", "to_group"),
    [("SIGTERM", False), ("SIGTERM", True), ("SIGHUP", False), ("SIGXCPU", False)],
    ids=["SIGTERM", "SIGTERM-to-the-group", "SIGHUP", "SIGXCPU"],
)
def test_a_batch_systems_signal_stops_the_run_cleanly_and_the_rerun_completes(
    name: str, to_group: bool, ntuples: Path, uninterrupted: dict[str, Any], tmp_path: Path
) -> None:
    signum = signal.Signals[name]
    folder, command = signal_run(ntuples, tmp_path / "run")
    process = subprocess.Popen(
        command,
        cwd=folder,
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "MPLBACKEND": "Agg"},
    )
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline and process.poll() is None:
        if _analysing(folder, process.pid):
            break
        time.sleep(0.1)
    assert process.poll() is None, "the run ended before its analysis pass"
    # a batch system signals the job's main process (HTCondor) or all its processes (Slurm)
    (os.killpg if to_group else os.kill)(process.pid, signum)
    _, err = process.communicate(timeout=300)
    assert process.returncode == 128 + signum, err[-3000:]
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.strip()]
    assert [line for line in lines if "stopped" in line] == [lines[-1]]
    assert lines[-1] == (
        f"rosenblatt run config.yaml: stopped by {name} during step 'analyse'; its workers are "
        "stopped and every finished step is kept: run the same command to resume"
    )
    left: list[int] = []
    for _ in range(50):
        left = session_processes(process.pid)
        if not left:
            break
        time.sleep(0.2)
    assert [command_line(p) for p in left] == []
    assert sorted(folder.rglob("*.lock")) == []
    # nothing under a final name: no temporary left, no result of the unfinished run
    assert sorted(folder.rglob("*.tmp*")) == []
    assert not (folder / "results" / "summary.json").exists()
    for path in (folder / "results").glob("*.json"):
        json.loads(path.read_text(encoding="utf-8"))
    assert differences(_run_to_completion(folder, command), uninterrupted) == []
