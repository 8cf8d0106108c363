"""Shared fixtures: samples with a known conditional distribution, and the events and the
smoke study run that several test modules read, made once per test session."""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest
from gaussian_blob import bivariate_normal

#: the tests marked long run for half an hour or more each: their own timeout
LONG_TIMEOUT = 4 * 3600


#: markers of the tests that run only where ``-m`` names them: their nox sessions (docs,
#: lint, packaging, system) and the tests of half an hour or more (long)
ON_REQUEST = ("docs", "lint", "long", "packaging", "system")


#: the modules whose fixtures run whole studies, generate events or start worker processes,
#: longest first: pytest-xdist hands them out first, so that the workers end together.
#: test_lhco_study starts the lhco-smoke run (lhco_smoke_run) early; test_lhco_2d, which
#: reads it too and is short, comes later with the other modules.
FIRST_MODULES = (
    "test_abcd_study.py",
    "test_fuzz.py",
    "test_abcd_passfail.py",
    "test_lhco_study.py",
    "test_features_cli.py",
    "test_config_fuzz.py",
    "test_ml_scan.py",
    "test_bumphunt.py",
)


def in_running_order(items: list[pytest.Item]) -> list[pytest.Item]:
    """``items`` module by module: :data:`FIRST_MODULES`, then the other modules with slow
    tests, then the rest; within each group the modules of most tests first.

    With ``--dist loadscope --no-loadscope-reorder`` (pyproject.toml) pytest-xdist hands the
    modules to its workers in this order: long ones first, short ones to even out the end.
    The tests of a module keep their order.
    """
    modules: dict[str, list[pytest.Item]] = {}
    for item in items:
        modules.setdefault(item.nodeid.split("::", 1)[0], []).append(item)

    def rank(module: str) -> tuple[int, int, int]:
        name = module.rsplit("/", 1)[-1]
        first = FIRST_MODULES.index(name) if name in FIRST_MODULES else len(FIRST_MODULES)
        slow = any(item.get_closest_marker("slow") for item in modules[module])
        return first, 0 if slow else 1, -len(modules[module])

    return [item for module in sorted(modules, key=rank) for item in modules[module]]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Leave out the tests of markers that ``-m`` does not name; give long tests their timeout;
    put the modules in running order (:func:`in_running_order`).

    So ``python -m pytest`` and ``python -m pytest -m "not slow"`` run neither the docs
    build nor the runs killed on purpose, and ``-m system`` runs those.
    """
    asked = set(re.findall(r"\w+", config.getoption("markexpr") or ""))

    def left_out(item: pytest.Item) -> bool:
        marks = {marker for marker in ON_REQUEST if item.get_closest_marker(marker)}
        # a long test runs only where long is asked for; the others where one of theirs is
        return ("long" in marks and "long" not in asked) or (bool(marks) and not marks & asked)

    kept, deselected = [], []
    for item in items:
        if left_out(item):
            deselected.append(item)
            continue
        kept.append(item)
        if item.get_closest_marker("long") and not item.get_closest_marker("timeout"):
            item.add_marker(pytest.mark.timeout(LONG_TIMEOUT))
    if deselected:
        config.hook.pytest_deselected(items=deselected)
    items[:] = in_running_order(kept)


def once_per_session(
    tmp_path_factory: pytest.TempPathFactory, name: str, make: Callable[[Path], None]
) -> Path:
    """The folder ``name``, filled by ``make`` once per test session.

    Under pytest-xdist every worker asks for it: the first makes it in the folder the
    workers share (the parent of their base temporary folders), under a file lock, and the
    others wait for it and read it. The folder is read-only by convention: a test that
    changes files copies them first.
    """
    if os.environ.get("PYTEST_XDIST_WORKER") is None:
        folder = tmp_path_factory.mktemp(name)
        make(folder)
        return folder
    from filelock import FileLock

    shared = tmp_path_factory.getbasetemp().parent
    folder, done = shared / name, shared / f"{name}.done"
    with FileLock(str(shared / f"{name}.lock")):
        if not done.is_file():
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir()
            make(folder)
            done.touch()
    return folder


#: the abcd study's generated events: name, process, events, seed
ABCD_EVENTS = (("defining", "qcd", 400, 31), ("qcd", "qcd", 200, 32), ("wprime", "wprime", 60, 33))


def _generate_abcd_events(folder: Path) -> None:
    from rosenblatt.hep.generation import generate_file

    for name, process, events, seed in ABCD_EVENTS:
        path = folder / f"{name}.root"
        generate_file(path, process, events, seed, chunk_size=100, workers=1, progress=False)


@pytest.fixture(scope="session")
def abcd_event_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Generated ROOT files: a defining QCD sample, an analysed QCD sample and a W' sample."""
    pytest.importorskip("pythia8mc")
    folder = once_per_session(tmp_path_factory, "abcd-events", _generate_abcd_events)
    return {name: folder / f"{name}.root" for name, *_ in ABCD_EVENTS}


def _run_lhco_smoke(folder: Path) -> None:
    from kept_log import kept_log

    from rosenblatt.cli import main

    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(folder)
        with kept_log(folder / "run.log"):
            status = main(["run", "lhco-smoke", "--output", "results"])
    assert status == 0, f"rosenblatt run lhco-smoke: exit status {status} (see {folder})"


@pytest.fixture(scope="session")
def lhco_smoke_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder where ``rosenblatt run lhco-smoke --output results`` ran, once per session.

    It holds the study's data folder ``data/lhco-smoke`` (the generated events, the feature
    table and the trained classifiers, which a run on a copy of it reuses), its results in
    ``results/`` and the package's log of the run in ``run.log``. Read-only: a test that runs
    a study on these events copies the data folder first.
    """
    pytest.importorskip("pythia8mc")
    pytest.importorskip("torch")
    return once_per_session(tmp_path_factory, "lhco-smoke-run", _run_lhco_smoke)


@pytest.fixture(scope="session")
def blob_sample() -> dict[str, np.ndarray]:
    """10^5 defining and 10^5 testing events of the paper's Gaussian-blob background."""
    x_def, y_def = bivariate_normal(100_000, seed=11)
    x_test, y_test = bivariate_normal(100_000, seed=12)
    return {"x_def": x_def, "y_def": y_def, "x_test": x_test, "y_test": y_test}


@pytest.fixture
def small_sample() -> tuple[np.ndarray, np.ndarray]:
    """4096 correlated events."""
    return bivariate_normal(4096, seed=3)


@pytest.fixture(scope="session")
def dcor(tmp_path_factory: pytest.TempPathFactory) -> ModuleType:
    """The dcor package, the independent distance correlation.

    Its import compiles numba kernels for seconds and writes them to numba's cache beside
    the package: it is imported by the tests that use it, not when the suite is collected,
    and by one pytest-xdist worker at a time (two compiling at once have aborted in LLVM).
    """
    if os.environ.get("PYTEST_XDIST_WORKER") is None:
        return pytest.importorskip("dcor")
    from filelock import FileLock

    with FileLock(str(tmp_path_factory.getbasetemp().parent / "dcor-import.lock")):
        return pytest.importorskip("dcor")
