"""The project's checks as nox sessions; ``.ci/run`` runs them all.

Every session runs in the environment nox itself runs from (README's ``.venv`` with
``.[all,test]`` installed): installing torch and the extras again per session would cost
more than most sessions take. ``packaging`` also makes ``.venv-core``, a fresh virtual
environment with the wheel and no extra.

    python -m nox                   # every session, in the order below
    python -m nox -s lint types     # some of them
    python -m nox -s tests -- -m "not slow"   # arguments after -- go to pytest
"""

from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path

import nox

ROOT = Path(__file__).resolve().parent
PATHS = ("src", "tests", "benchmarks", "noxfile.py")
PYTHON = sys.executable
CORE_VENV = ROOT / ".venv-core"
CORE_WHEELS = ROOT / "build" / "core-wheel"
#: a test module marked core as a whole (``pytestmark``, alone or in a list)
CORE_MARK = re.compile(r"^pytestmark = .*\bpytest\.mark\.core\b", re.MULTILINE)

nox.options.sessions = ["lint", "types", "tests", "system", "docs", "packaging"]
nox.options.default_venv_backend = "none"
nox.options.error_on_external_run = False


@nox.session
def lint(session: nox.Session) -> None:
    """ruff (its size rules included) and ruff format."""
    session.run(PYTHON, "-m", "ruff", "check", *PATHS)
    session.run(PYTHON, "-m", "ruff", "format", "--check", *PATHS)


@nox.session
def types(session: nox.Session) -> None:
    """mypy, strict with warn_unreachable over the whole package (pyproject's [tool.mypy])."""
    session.run(PYTHON, "-m", "mypy")


@nox.session
def tests(session: nox.Session) -> None:
    """The test suite as README runs it: pytest, on every core, the slowest twenty listed."""
    session.run(PYTHON, "-m", "pytest", *session.posargs)


@nox.session
def system(session: nox.Session) -> None:
    """``rosenblatt run`` as processes: killed and resumed, signalled, side by side, on dask."""
    session.run(PYTHON, "-m", "pytest", "-m", "system", *session.posargs)


@nox.session
def docs(session: nox.Session) -> None:
    """The site built with warnings as errors, its doctests, links, reference pages, notebook."""
    # one process: the html and the doctest builds both write docs/reference/api/
    session.run(
        PYTHON, "-m", "pytest", "-m", "docs", "-n", "0", "tests/test_docs.py",
        "tests/test_notebook.py",
    )  # fmt: skip


@nox.session
def packaging(session: nox.Session) -> None:
    """The wheel and the sdist, then the wheel without extras against the core tests."""
    session.run(PYTHON, "-m", "pytest", "-m", "packaging", "-n", "0", "tests/test_packaging.py")
    shutil.rmtree(CORE_VENV, ignore_errors=True)
    shutil.rmtree(CORE_WHEELS, ignore_errors=True)
    session.run(
        PYTHON, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
        "--wheel-dir", str(CORE_WHEELS), str(ROOT),
    )  # fmt: skip
    (wheel,) = CORE_WHEELS.glob("rosenblatt-*.whl")
    session.run(PYTHON, "-m", "venv", str(CORE_VENV))
    core_python = str(CORE_VENV / "bin" / "python")
    session.run(
        core_python, "-m", "pip", "install", "--quiet", str(wheel),
        "pytest", "pytest-xdist>=3.8", "pytest-timeout",
    )  # fmt: skip
    core_tests = sorted(
        str(path.relative_to(ROOT))
        for path in (ROOT / "tests").glob("test_*.py")
        if CORE_MARK.search(path.read_text(encoding="utf-8"))
    )
    session.run(
        core_python, "-m", "pytest", "-m", "core or packaging", "-p", "no:cacheprovider",
        *core_tests,
        env={"ROSENBLATT_CORE_JOB": "1"},
    )  # fmt: skip
