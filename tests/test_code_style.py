"""The code base stays lint-clean, formatted and typed: ruff (size rules included), ruff format, mypy.

The nox sessions lint and types run the same commands; these tests (marker ``lint``, left
out of the default run) give them to ``python -m pytest -m lint``.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PATHS = ("src", "tests", "benchmarks", "noxfile.py")

pytestmark = [
    pytest.mark.lint,
    pytest.mark.skipif(not (ROOT / "pyproject.toml").is_file(), reason="needs the source tree"),
]


def _run(*command: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, check=False)


def test_ruff_check() -> None:
    result = _run(sys.executable, "-m", "ruff", "check", *PATHS)
    assert result.returncode == 0, result.stdout + result.stderr


def test_ruff_format() -> None:
    result = _run(sys.executable, "-m", "ruff", "format", "--check", *PATHS)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.slow
def test_mypy(tmp_path: Path) -> None:
    result = _run(sys.executable, "-m", "mypy", "--cache-dir", str(tmp_path / "cache"))
    assert result.returncode == 0, result.stdout + result.stderr
