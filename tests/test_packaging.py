"""The wheel and the sdist ship the processors and the configurations once, under the package's name.

They live in ``src/rosenblatt/processors`` and ``src/rosenblatt/configs``: the
source tree holds no symbolic link, so that a checkout without symlink support
builds the same archives.
"""

from __future__ import annotations

import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE_CONFIGS = ROOT / "src" / "rosenblatt" / "configs"

pytestmark = [
    pytest.mark.slow,
    pytest.mark.packaging,
    pytest.mark.skipif(
        not (ROOT / "pyproject.toml").is_file() or not (ROOT / ".git").exists(),
        reason="needs the source tree (pyproject.toml, a git checkout)",
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
    assert {path.name for path in PACKAGE_CONFIGS.glob("*.yaml")} == shipped
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
        # each file once, and each configuration and processor only under src/rosenblatt/
        assert len(names) == len(set(names))
        configs = [name for name in names if name.endswith("/blobs.yaml")]
        assert len(configs) == 1
        assert configs[0].endswith("src/rosenblatt/configs/blobs.yaml")
        processors = [name for name in names if name.endswith("processors/dijet.py")]
        assert len(processors) == 1
        assert processors[0].endswith("src/rosenblatt/processors/dijet.py")
        assert not any(member.issym() or member.islnk() for member in archive.getmembers())
        if hasattr(tarfile, "data_filter"):
            archive.extractall(tmp_path / "unpacked", filter="data")
        else:
            archive.extractall(tmp_path / "unpacked")
    (source,) = (tmp_path / "unpacked").iterdir()
    _check_contents(_build_wheel(source, tmp_path / "wheel"))


def test_the_source_tree_holds_no_symbolic_link() -> None:
    listing = subprocess.run(
        ["git", "ls-files", "--stage"], cwd=ROOT, check=True, capture_output=True, text=True
    ).stdout
    links = [line.split("\t", 1)[1] for line in listing.splitlines() if line.startswith("120000")]
    assert links == []
    assert (PACKAGE_CONFIGS / "lhco-quick.yaml").is_file()
