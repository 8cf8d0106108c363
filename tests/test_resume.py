"""A run killed at any moment resumes to the results of an uninterrupted run; caches are checked.

``rosenblatt run`` runs as a subprocess on a small LHCO and a small ABCD configuration
and is killed (SIGKILL, the whole process group, as a batch system does at its time
limit) at random moments spread over its steps. Each killed state is copied and run
to completion with the same command, and its results are compared with those of an
uninterrupted run: ``summary.json`` apart from timing fields and provenance, every
other JSON file (saved transforms, pyhf workspaces, closure, estimates), every
histogram of ``abcd.root`` and the models' scores (see :func:`kill_and_resume` for how
the moments are spread over the steps).

A cached file with a byte flipped or cut short is named in one line on the next run
and computed again, with the same results; ``--refuse-corrupt-cache`` stops instead.
"""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytestmark = [pytest.mark.slow, pytest.mark.system]

pytest.importorskip("pythia8mc")
pytest.importorskip("fastjet")
pytest.importorskip("torch")
uproot = pytest.importorskip("uproot")

#: keys of summary.json that are wall times or say where and with what the code ran
VOLATILE = re.compile(
    r"seconds|timings?$|^time|^commit$|^uncommitted_changes$|^configuration_file$|^_path$"
)

LHCO = """
study: lhco
name: tiny
seed: 5
data: {folder: data/tiny, pthat_min: 1000, chunk_size: 100, margin: 0.1}
partition:
  train: {background: 40, signal: 40}
  validation: {background: 100, signal: 20}
  optimisation: {background: 40, signal: 20}
  testing: {background: 80, signal: 10}
features: {executor: iterative, chunksize: 200}
classifier:
  kind: cnn
  seeds: 1
  workers: 1
  options: {max_epochs: 1, batch_size: 64, patience: 1, n_threads: 1}
disco: {alphas: [1.0]}
disco_selection: {min_auc: 0.5}
irgi: {depths: [1, 2]}
kde: {sigma_r: [0.1]}
abcd: {mjj_max: 4000.0, x0: [2000.0, 3700.0], n_x0: 5, y0: [0.1, 0.85], n_y0: 5}
permutations: 5
statistics: {n_boot: 2, closure_n_boot: 2}
"""

ABCD = """
study: abcd
name: small
generate:
  - {process: qcd, format: ntuple, events: 400, seed: 201, negative_weight_fraction: 0.1,
     chunk_size: 100, workers: 1, output: data/nt/qcd-defining.root}
  - {process: qcd, format: ntuple, events: 300, seed: 202, negative_weight_fraction: 0.1,
     chunk_size: 100, workers: 1, output: data/nt/qcd.root}
  - {process: wprime, format: ntuple, events: 60, seed: 203, negative_weight_fraction: 0.1,
     chunk_size: 100, workers: 1, output: data/nt/wprime.root}
  - {process: data, format: ntuple, events: 300, signal_events: 10, seed: 204,
     chunk_size: 100, workers: 1, output: data/nt/data.root}
treename: nominal
lumi: 435.0
datasets:
  qcd-defining: {files: [data/nt/qcd-defining.root], role: defining, weight: mc_weight, xsec: 4.6}
  qcd: {files: [data/nt/qcd.root], role: background, weight: mc_weight, xsec: 4.6}
  wprime: {files: [data/nt/wprime.root], role: signal, weight: mc_weight, xsec: 0.092}
  data: {files: [data/nt/data.root], role: data}
score: tagger_score
transforms:
  - {kind: irgi, depth: 3}
  - {kind: gridkde, sigma_r: 0.3, degree: 1}
abcd: {x: dijet_mass, x0: [2400.0, 3800.0], n_x0: 8, y0: [0.1, 0.9], n_y0: 8, x_max: 6000.0}
blind: true
executor: {kind: futures, workers: 2, chunksize: 150}
statistics: {n_boot: 3, seed: 0}
"""

CONFIGS = {"lhco": LHCO, "abcd": ABCD}


# running and killing ------------------------------------------------------------------


def _command(*args: str) -> list[str]:
    script = Path(sys.executable).with_name("rosenblatt")
    if script.is_file():
        return [str(script), *args]
    return [
        sys.executable,
        "-c",
        "import sys; from rosenblatt.cli import main; sys.exit(main())",
        *args,
    ]


def _start(folder: Path, *extra: str) -> subprocess.Popen[bytes]:
    with open(folder / "run.log", "ab") as log:  # the process keeps its own copy
        return subprocess.Popen(
            _command("run", "config.yaml", "--output", "results", *extra),
            cwd=folder,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            start_new_session=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )


def _group_gone(pgid: int, timeout: float = 30.0) -> None:
    """Wait until no process of the group is left (workers included)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.05)
    pytest.fail(f"processes of group {pgid} still run {timeout} s after SIGKILL")


def _run(folder: Path, *extra: str, timeout: float = 1200) -> str:
    """Run to completion; return the new lines of the run's log."""
    start = (folder / "run.log").stat().st_size if (folder / "run.log").exists() else 0
    process = _start(folder, *extra)
    try:
        code = process.wait(timeout=timeout)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    _group_gone(process.pid)
    text = (folder / "run.log").read_bytes()[start:].decode("utf-8", "replace")
    assert code == 0, f"run in {folder} ended with status {code}:\n{text[-3000:]}"
    return text


def _kill_after(folder: Path, seconds: float) -> bool:
    """Start a run and SIGKILL its process group after ``seconds``; whether it was killed."""
    process = _start(folder)
    try:
        process.wait(timeout=seconds)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        _group_gone(process.pid)
        return True
    _group_gone(process.pid)
    return False


# what is compared ---------------------------------------------------------------------


def _stable(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _stable(v) for k, v in value.items() if not VOLATILE.search(str(k))}
    if isinstance(value, list):
        return [_stable(v) for v in value]
    return value


def _differences(first: Any, second: Any, where: str = "") -> list[str]:
    """Where two JSON values differ (NaN equal to NaN)."""
    if isinstance(first, dict) and isinstance(second, dict):
        found = [f"{where}.{k}: only in one" for k in sorted(set(first) ^ set(second), key=str)]
        for key in first.keys() & second.keys():
            found += _differences(first[key], second[key], f"{where}.{key}")
        return found
    if isinstance(first, list) and isinstance(second, list) and len(first) == len(second):
        return [
            d
            for i, (a, b) in enumerate(zip(first, second, strict=True))
            for d in _differences(a, b, f"{where}[{i}]")
        ]
    same = json.dumps(first, sort_keys=True) == json.dumps(second, sort_keys=True)
    return [] if same else [f"{where}: {str(first)[:80]} != {str(second)[:80]}"]


def _histograms(path: Path) -> dict[str, Any]:
    with uproot.open(path) as handle:
        return {
            name: {
                "values": handle[name].values(flow=True).tolist(),
                "variances": handle[name].variances(flow=True).tolist(),
                "edges": [axis.edges(flow=False).tolist() for axis in handle[name].axes],
            }
            for name in handle.keys(cycle=False)
        }


def _scores(folder: Path) -> dict[str, Any]:
    scores = {}
    for path in sorted(folder.glob("data/*/scan-*/models/*.scores.npz")):
        with np.load(path) as stored:
            scores[path.name] = {name: stored[name].tolist() for name in sorted(stored.files)}
    return scores


def results_of(folder: Path) -> dict[str, Any]:
    """Everything a run's results are compared by."""
    results = folder / "results"
    found: dict[str, Any] = {"summary": _stable(json.loads((results / "summary.json").read_text()))}
    for path in sorted(results.glob("*.json")):
        if path.name not in ("summary.json", "timings.json", "manifest.json"):
            found[path.name] = json.loads(path.read_text())
    if (results / "abcd.root").exists():
        found["abcd.root"] = _histograms(results / "abcd.root")
    found["scores"] = _scores(folder)
    return found


def assert_same_results(folder: Path, reference: dict[str, Any]) -> None:
    got = results_of(folder)
    assert sorted(got) == sorted(reference)
    differences = _differences(reference, got)
    assert not differences, f"{folder}: {len(differences)} differences, e.g. {differences[:5]}"


# fixtures -----------------------------------------------------------------------------


@dataclass
class Uninterrupted:
    """An uninterrupted run: its folder, results and wall time."""

    study: str
    folder: Path
    results: dict[str, Any]
    seconds: float


def _fresh(folder: Path, study: str) -> Path:
    folder.mkdir(parents=True)
    (folder / "config.yaml").write_text(CONFIGS[study], encoding="utf-8")
    return folder


@pytest.fixture(scope="module", params=["lhco", "abcd"])
def uninterrupted(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Uninterrupted:
    study = request.param
    folder = _fresh(tmp_path_factory.mktemp(f"resume-{study}") / "uninterrupted", study)
    start = time.monotonic()
    _run(folder)
    return Uninterrupted(study, folder, results_of(folder), time.monotonic() - start)


def _copy(source: Path, target: Path) -> Path:
    shutil.copytree(source, target, symlinks=True)
    (target / "run.log").unlink(missing_ok=True)
    return target


def _seconds_until_cached(base: Uninterrupted) -> float:
    """How long the uninterrupted run took until every cached step was done."""
    results = base.folder / "results"
    summary = json.loads((results / "summary.json").read_text())
    if "step_seconds" in summary:
        steps = summary["step_seconds"]
        return float(sum(steps.get(s, 0.0) for s in ("generate", "features", "partition", "train")))
    return float(json.loads((results / "timings.json").read_text()).get("generate", 0.0))


def kill_and_resume(base: Uninterrupted, workspace: Path, n_kills: int, seed: int) -> list[float]:
    """``n_kills`` kills at random moments spread over a run; each killed state run to completion.

    Kill ``i`` comes at a uniformly random moment of the ``i``-th of ``n_kills``
    equal parts of the uninterrupted run's wall time. While the cached steps run
    (generation, features, training), the killed runs form a chain, each resuming
    the previous one's state, and the moment counts over the chain; a later
    moment kills a run that starts from the complete caches (the uninterrupted
    run's, its results removed) after the rest of that moment. Each killed state
    is copied and run to completion. Returns the moments.
    """
    rng = random.Random(seed)
    chain = _fresh(workspace / "chain", base.study)
    cached = min(_seconds_until_cached(base), base.seconds)
    moments = [base.seconds * (i + rng.random()) / n_kills for i in range(n_kills)]
    elapsed = 0.0
    for i, moment in enumerate(moments):
        if moment < cached:
            started = time.monotonic()
            killed = _kill_after(chain, max(moment - elapsed, 0.5))
            elapsed += time.monotonic() - started
            state = chain
        else:
            state = _copy(base.folder, workspace / "tail")
            shutil.rmtree(state / "results")
            killed = _kill_after(state, max(moment - cached, 0.5))
        if killed:
            resumed = _copy(state, workspace / f"killed-{i}")
            _run(resumed)
        else:  # it finished before the moment
            resumed = state
        assert_same_results(resumed, base.results)
        for folder in {resumed, state} - {chain}:
            shutil.rmtree(folder)
    return moments


def test_killed_anywhere_resumes_to_the_same_results(
    uninterrupted: Uninterrupted, tmp_path: Path
) -> None:
    assert len(kill_and_resume(uninterrupted, tmp_path, n_kills=1, seed=1)) == 1


@pytest.mark.long
def test_killed_at_twenty_moments_resumes_to_the_same_results(
    uninterrupted: Uninterrupted, tmp_path: Path
) -> None:
    assert len(kill_and_resume(uninterrupted, tmp_path, n_kills=20, seed=2)) == 20


# corrupted caches ----------------------------------------------------------------------


#: cached files damaged together, run by run: never two of one step, nor a step and one
#: it depends on (a step whose inputs changed is computed again without reading its files)
DAMAGED = {
    "lhco": [
        {
            "data/tiny/qcd.root": "flip",
            "data/tiny/wprime.root.record.json": "flip",
            "data/tiny/scan-*/models/baseline_s0.pt": "truncate",
            "data/tiny/scan-*/models/disco_*.scores.npz": "flip",
        },
        {
            "data/tiny/features.parquet": "truncate",
            "data/tiny/scan-*/models/baseline_s0.torchscript.pt": "flip",
            "data/tiny/scan-*/models/disco_a1_s0.json": "truncate",
        },
    ],
    "abcd": [
        {"data/nt/qcd-defining.root": "flip", "data/nt/wprime.root": "truncate"},
        {"data/nt/data.root.record.json": "truncate", "data/nt/qcd.root": "flip"},
    ],
}


def _damage(path: Path, how: str) -> bytes:
    data = bytearray(path.read_bytes())
    if how == "flip":
        data[len(data) // 2] ^= 0x01
    else:
        del data[-max(len(data) // 10, 1) :]
    path.write_bytes(bytes(data))
    return bytes(data)


# each kind alone is in the regular suite: test_generation, test_analysis_files, test_ml_scan
# and test_cache_records
@pytest.mark.long
def test_a_damaged_cache_file_is_named_and_computed_again(
    uninterrupted: Uninterrupted, tmp_path: Path
) -> None:
    folder = _copy(uninterrupted.folder, tmp_path / "damaged")
    for damaged in DAMAGED[uninterrupted.study]:
        paths = {}
        for pattern, how in damaged.items():
            (path,) = folder.glob(pattern)
            _damage(path, how)
            paths[str(path.relative_to(folder))] = how
        log = _run(folder)
        for name in paths:
            named = [line for line in log.splitlines() if name in line and "again" in line]
            assert len(named) == 1, f"{name}: {log[-3000:]}"
        assert_same_results(folder, uninterrupted.results)


def test_a_damaged_cache_file_is_refused_with_the_flag(
    uninterrupted: Uninterrupted, tmp_path: Path
) -> None:
    folder = _copy(uninterrupted.folder, tmp_path / "refused")
    (path,) = folder.glob(next(iter(DAMAGED[uninterrupted.study][0])))
    data = _damage(path, "flip")
    process = _start(folder, "--refuse-corrupt-cache")
    assert process.wait(timeout=600) == 2
    _group_gone(process.pid)
    log = (folder / "run.log").read_text(encoding="utf-8", errors="replace")
    errors = [line for line in log.splitlines() if line.startswith("rosenblatt run: error")]
    assert len(errors) == 1
    assert str(path.relative_to(folder)) in errors[0]
    assert "refus" in errors[0]
    assert "Traceback" not in log
    assert path.read_bytes() == data  # left as it is, for the user to look at
