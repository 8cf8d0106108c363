"""No worker process outlives its run: a command stopped or killed, a user's script killed.

``rosenblatt fit`` and ``rosenblatt apply`` with worker processes are stopped
by SIGTERM at several moments (reading, fitting, writing): each says in one
line which step stopped, exits with 143, leaves no process and no file under a
final name, and the same command run again gives the uninterrupted result. A
command killed by SIGKILL, and a user's script that fits with
:class:`rosenblatt.MergeableFit` on coffea's futures executor killed by
SIGTERM or SIGKILL, leave no worker either: the workers end with the process
that started them.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from flat_ntuple import TREE, fit_args, write_flat

psutil = pytest.importorskip("psutil")
uproot = pytest.importorskip("uproot")
pytest.importorskip("coffea")
pytest.importorskip("loky")

pytestmark = [
    pytest.mark.slow,
    pytest.mark.system,
    pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads processes from /proc"),
]

FILES = ("a.root", "b.root", "c.root", "d.root")
#: events per file, entries per chunk: 5 chunks per file, 20 in all
EVENTS, CHUNK = 10_000, 2_000

#: the score of the commands' runs: each chunk leaves a mark (its process id) and lasts a while,
#: so that a signal reaches the workers while they read
SLOW_SCORE = textwrap.dedent(
    """
    import os
    import time
    from pathlib import Path

    import numpy as np


    def score(events):
        Path(__file__).with_name(f"reading-{os.getpid()}-{time.monotonic_ns()}").touch()
        time.sleep(0.3)
        return np.asarray(events["tagger_out"])
    """
)


def session(leader: int) -> list[Any]:
    """The processes still running in the session that ``leader`` started (zombies aside)."""
    found = []
    for process in psutil.process_iter():
        try:
            if os.getsid(process.pid) == leader and process.status() != psutil.STATUS_ZOMBIE:
                found.append(process)
        except (OSError, psutil.Error):
            continue
    return found


def left_after(leader: int, seconds: float = 15.0) -> list[str]:
    """The command lines of the session's processes still there ``seconds`` after its end.

    Those are killed then, so that a failed test leaves none behind.
    """
    deadline = time.monotonic() + seconds
    while True:
        left = session(leader)
        if not left or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    lines = []
    for process in left:
        try:
            lines.append(" ".join(process.cmdline()))
            process.kill()
        except psutil.Error:
            continue
    return lines


def start(folder: Path, command: list[str], *, piped: bool = True) -> Any:
    """``command`` in ``folder``, in a session of its own.

    Not ``piped``, its output goes to ``output.txt`` in ``folder``: a worker
    left behind would hold a pipe open, and waiting for the command would
    wait for it.
    """
    output: Any = subprocess.PIPE
    if not piped:
        output = (folder / "output.txt").open("w", encoding="utf-8")
    try:
        return subprocess.Popen(
            command,
            cwd=folder,
            start_new_session=True,
            stdout=output,
            stderr=subprocess.STDOUT if not piped else subprocess.PIPE,
            text=True,
            env={**os.environ, "MPLBACKEND": "Agg"},
        )
    finally:
        if not piped:
            output.close()


def wait_for(process: Any, ready: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and process.poll() is None and not ready():
        time.sleep(0.05)
    assert process.poll() is None, f"the process ended before {what}"
    assert ready(), f"not {what} in time"


def worker_marks(folder: Path, main: int) -> list[Path]:
    """The marks of the chunks read by worker processes (not by ``main``)."""
    return [p for p in folder.glob("reading-*") if p.name.split("-")[1] != str(main)]


def workers_of(main: int) -> list[Any]:
    """The worker processes of a futures pool started by ``main``."""
    try:
        children = psutil.Process(main).children(recursive=True)
    except psutil.Error:
        return []
    found = []
    for child in children:
        try:
            if "popen_loky" in " ".join(child.cmdline()):
                found.append(child)
        except psutil.Error:
            continue
    return found


def rosenblatt(*args: str) -> list[str]:
    script = Path(sys.executable).with_name("rosenblatt")
    launcher = [str(script)] if script.is_file() else [sys.executable, "-m", "rosenblatt.cli"]
    return [*launcher, *args]


def fit_command(executor: str = "futures") -> list[str]:
    args = fit_args(FILES, "t.json", "--depth", "auto", "--chunk-size", str(CHUNK))
    args[args.index("tagger_out")] = "slow.py:score"
    return rosenblatt(*args, "--executor", executor, "--workers", "2")


def apply_command() -> list[str]:
    return rosenblatt(
        "apply",
        "t.json",
        *FILES,
        "--treename",
        TREE,
        "--x",
        "m_jj",
        "--score",
        "slow.py:score",
        "--chunk-size",
        str(CHUNK),
        "--output-dir",
        "friends",
        "--executor",
        "futures",
        "--workers",
        "2",
    )


def run(folder: Path, command: list[str]) -> str:
    done = subprocess.run(
        command, cwd=folder, capture_output=True, text=True, timeout=600, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The flat ntuples, the slow score, and the transform and friends of uninterrupted runs."""
    folder = tmp_path_factory.mktemp("workers-end")
    for seed, name in enumerate(FILES):
        write_flat(folder / name, EVENTS, seed)
    (folder / "slow.py").write_text(SLOW_SCORE, encoding="utf-8")
    reference = folder / "reference"
    shutil.copytree(folder, reference)
    run(reference, fit_command())
    run(reference, apply_command())
    return folder


def copy_of(inputs: Path, folder: Path) -> Path:
    shutil.copytree(inputs, folder, ignore=shutil.ignore_patterns("reference"))
    return folder


def friends(folder: Path) -> dict[str, np.ndarray]:
    found = {}
    for path in sorted((folder / "friends").glob("*.root")):
        with uproot.open(path) as handle:
            for name, values in handle[TREE].arrays(library="np").items():
                found[f"{path.name}:{name}"] = values
    return found


def stop(process: Any, signum: int) -> tuple[int, str, list[str]]:
    """Send ``signum`` to the command; its status, standard error and the processes left."""
    os.kill(process.pid, signum)
    _, err = process.communicate(timeout=300)
    return process.returncode, err, left_after(process.pid)


def assert_stopped_cleanly(
    command: str, folder: Path, status: int, err: str, left: list[str], steps: tuple[str, ...]
) -> None:
    assert status == 128 + signal.SIGTERM, err[-3000:]
    assert "Traceback" not in err, err[-3000:]
    lines = [line for line in err.splitlines() if line.strip()]
    assert [line for line in lines if "stopped" in line] == [lines[-1]]
    said = {
        f"rosenblatt {command}: stopped by SIGTERM during step {name!r}; its workers are stopped "
        "and every finished step is kept: run the same command to resume"
        for name in steps
    }
    assert lines[-1] in said
    assert left == []
    assert sorted(folder.rglob("*.lock")) == []
    assert sorted(folder.rglob("*.tmp")) == []


@pytest.mark.parametrize(
    ("executor", "moment"),
    [("futures", "reading"), ("dask", "reading"), ("futures", "fitting")],
)
def test_fit_stopped_by_sigterm_leaves_no_process_and_resumes(
    executor: str, moment: str, inputs: Path, tmp_path: Path
) -> None:
    folder = copy_of(inputs, tmp_path / "run")
    command = fit_command(executor)
    process = start(folder, command)
    pieces = folder / "t.json.work" / "pieces"
    if moment == "reading":
        wait_for(process, lambda: len(worker_marks(folder, process.pid)) >= 3, "the workers read")
        steps: tuple[str, ...] = ("read",)
    else:
        # every chunk kept and the pool closed: the fit (its depth chosen by cross-validation)
        # runs for a few seconds
        wait_for(
            process,
            lambda: len(list(pieces.glob("*.zip"))) == 20 and not workers_of(process.pid),
            "every chunk was read",
        )
        time.sleep(0.3)
        steps = ("fit",)
    status, err, left = stop(process, signal.SIGTERM)
    assert_stopped_cleanly("fit", folder, status, err, left, steps)
    assert not (folder / "t.json").exists()
    run(folder, command)
    assert (folder / "t.json").read_bytes() == (inputs / "reference" / "t.json").read_bytes()


@pytest.mark.parametrize("moment", ["reading", "writing"])
def test_apply_stopped_by_sigterm_leaves_no_process_and_reruns(
    moment: str, inputs: Path, tmp_path: Path
) -> None:
    folder = copy_of(inputs, tmp_path / "run")
    shutil.copy(inputs / "reference" / "t.json", folder / "t.json")
    command = apply_command()
    process = start(folder, command)
    if moment == "reading":
        wait_for(process, lambda: bool(worker_marks(folder, process.pid)), "the workers read")
    else:
        # the first file's friend is being written while the workers compute the next chunks
        wait_for(
            process,
            lambda: (
                len(worker_marks(folder, process.pid)) >= 8
                and any((folder / "friends").glob(".*.tmp"))
            ),
            "the friends were written",
        )
    status, err, left = stop(process, signal.SIGTERM)
    assert_stopped_cleanly("apply", folder, status, err, left, ("apply",))
    assert sorted((folder / "friends").glob("*.root")) == []
    run(folder, command)
    expected = friends(inputs / "reference")
    got = friends(folder)
    assert sorted(got) == sorted(expected)
    for name, values in expected.items():
        np.testing.assert_array_equal(got[name], values)


def test_fit_killed_leaves_no_worker(inputs: Path, tmp_path: Path) -> None:
    """SIGKILL (a batch system's, after SIGTERM's grace time): the workers end by themselves."""
    folder = copy_of(inputs, tmp_path / "run")
    process = start(folder, fit_command(), piped=False)
    wait_for(process, lambda: len(worker_marks(folder, process.pid)) >= 2, "the workers read")
    os.kill(process.pid, signal.SIGKILL)
    assert process.wait(timeout=60) == -signal.SIGKILL
    assert left_after(process.pid, seconds=10.0) == []


#: a user's script: a mergeable fit over ROOT files on coffea's futures executor (its default
#: pool, loky's, started by the fit), each chunk marked and slow; with ``exit``, SIGTERM raises
#: SystemExit as a script's own handler does
USER_SCRIPT = textwrap.dedent(
    """
    import os
    import signal
    import sys
    import time
    from pathlib import Path

    from coffea import processor
    from coffea.nanoevents import BaseSchema

    import rosenblatt as rb


    class SlowObservables:
        def __init__(self, marks, seconds):
            self.marks, self.seconds = marks, seconds

        def __call__(self, events):
            Path(self.marks, f"reading-{os.getpid()}-{time.monotonic_ns()}").touch()
            time.sleep(self.seconds)
            return events.m_jj, events.tagger_out


    if __name__ == "__main__":
        files, marks, handler, seconds = sys.argv[1:]
        if handler == "exit":
            signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
        fileset = {"qcd": {"files": dict.fromkeys(files.split(","), "nominal")}}
        executor = processor.FuturesExecutor(workers=2, status=False)
        runner = processor.Runner(executor, schema=BaseSchema, chunksize=2000)
        observables = SlowObservables(marks, float(seconds))
        rb.MergeableFit(rb.IRGI(depth=4)).run(runner, fileset, observables, treename="nominal")
    """
)


@pytest.mark.parametrize(
    ("signum", "handler"),
    [(signal.SIGTERM, "default"), (signal.SIGKILL, "default"), (signal.SIGTERM, "exit")],
    ids=["SIGTERM", "SIGKILL", "SIGTERM-raising-SystemExit"],
)
def test_a_users_script_stopped_leaves_no_worker(
    signum: int, handler: str, inputs: Path, tmp_path: Path
) -> None:
    script = tmp_path / "fit_my_files.py"
    script.write_text(USER_SCRIPT, encoding="utf-8")
    marks = tmp_path / "marks"
    marks.mkdir()
    files = ",".join(str(inputs / name) for name in FILES)
    # each chunk lasts long: workers that finished their chunk before ending would be seen
    command = [sys.executable, str(script), files, str(marks), handler, "30"]
    process = start(tmp_path, command, piped=False)
    wait_for(process, lambda: len(list(marks.iterdir())) >= 2, "the workers read")
    os.kill(process.pid, signum)
    # stopped at once, not after the chunks its workers run
    try:
        status = process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        process.kill()
        left_after(process.pid, seconds=0.0)
        raise
    output = (tmp_path / "output.txt").read_text(encoding="utf-8")
    assert status == (143 if handler == "exit" else -signum), output[-3000:]
    assert left_after(process.pid, seconds=10.0) == []
