"""The wheel ships the processors and the configurations under the package's name."""

from __future__ import annotations

import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not (ROOT / "pyproject.toml").is_file() or not (ROOT / "processors").is_dir(),
        reason="needs the source tree (pyproject.toml, processors/)",
    ),
]


def _build_wheel(source: Path, out: Path) -> list[str]:
    """Build the wheel of ``source`` without build isolation and return its file names."""
    pytest.importorskip("hatchling", reason="building the wheel offline needs hatchling installed")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "--quiet",
            "--wheel-dir",
            str(out),
            str(source),
        ],
        check=True,
        capture_output=True,
    )
    (wheel,) = out.glob("rosenblatt-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        return archive.namelist()


def _check_contents(names: list[str]) -> None:
    for required in (
        "rosenblatt/__init__.py",
        "rosenblatt/processors/__init__.py",
        "rosenblatt/processors/dijet.py",
        "rosenblatt/configs/blobs.yaml",
        "rosenblatt/configs/lhco-quick.yaml",
    ):
        assert required in names
    shipped = {name.rpartition("/")[2] for name in names if name.startswith("rosenblatt/configs/")}
    assert {path.name for path in (ROOT / "configs").glob("*.yaml")} <= shipped
    tops = {name.split("/", 1)[0] for name in names}
    assert {top for top in tops if not top.endswith(".dist-info")} == {"rosenblatt"}
    assert len(names) == len(set(names))


def test_wheel_from_the_source_tree(tmp_path: Path) -> None:
    _check_contents(_build_wheel(ROOT, tmp_path))


def test_wheel_from_the_sdist(tmp_path: Path) -> None:
    pytest.importorskip("hatchling", reason="building the sdist offline needs hatchling installed")
    sdist_dir = tmp_path / "sdist"
    subprocess.run(
        [
            sys.executable,
            "-c",
            f"from hatchling.build import build_sdist; build_sdist({str(sdist_dir)!r})",
        ],
        cwd=ROOT,
        check=True,
        capture_output=True,
    )
    (sdist,) = sdist_dir.glob("rosenblatt-*.tar.gz")
    with tarfile.open(sdist) as archive:
        names = archive.getnames()
        # each file once: the packaged folders come in through symlinks (see pyproject)
        assert len(names) == len(set(names))
        assert any(name.endswith("src/rosenblatt/configs/blobs.yaml") for name in names)
        if hasattr(tarfile, "data_filter"):
            archive.extractall(tmp_path / "unpacked", filter="data")
        else:
            archive.extractall(tmp_path / "unpacked")
    (source,) = (tmp_path / "unpacked").iterdir()
    _check_contents(_build_wheel(source, tmp_path / "wheel"))
