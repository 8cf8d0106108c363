"""A full disk is an error, not a corruption: one line, no partial file, the rerun completes.

The results folder is put on a small tmpfs that the test mounts (as root);
where mounting is impossible the tests are skipped and say why.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from test_concurrent_runs import TINY

from rosenblatt._atomic import atomic_write, write_bytes
from rosenblatt.cli import DISK_FULL_STATUS, main
from rosenblatt.exceptions import DiskFullError

#: room on the small filesystem: the summary fits, the figures do not
SMALL = 160 * 1024


def mount_tmpfs(folder: Path, size: int) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)],
        check=True,
        capture_output=True,
    )


def resize(folder: Path, size: int) -> None:
    subprocess.run(
        ["mount", "-o", f"remount,size={size}", str(folder)], check=True, capture_output=True
    )


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A tmpfs of :data:`SMALL` bytes mounted for the test, unmounted after it."""
    folder = tmp_path / "small"
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root")
    try:
        mount_tmpfs(folder, SMALL)
    except (OSError, subprocess.CalledProcessError) as err:
        reason = err.stderr.strip() if isinstance(err, subprocess.CalledProcessError) else err
        pytest.skip(f"cannot mount a tmpfs here: {reason}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False, capture_output=True)


def test_a_write_that_does_not_fit_leaves_nothing_and_names_the_bytes(small_disk: Path) -> None:
    (small_disk / "kept.bin").write_bytes(b"old")
    with pytest.raises(DiskFullError) as full:
        write_bytes(small_disk / "kept.bin", b"x" * (2 * SMALL))
    assert full.value.errno == 28
    assert str(full.value).startswith(
        f"no space left on the device writing {small_disk / 'kept.bin'}: it needed "
        f"{2 * SMALL} bytes, "
    )
    assert (small_disk / "kept.bin").read_bytes() == b"old"
    assert sorted(p.name for p in small_disk.iterdir()) == ["kept.bin"]
    # a writer of its own (here a stream) is named with what it had written when the space ran out
    with (
        pytest.raises(DiskFullError, match=r"it needed more than \d+ bytes"),
        atomic_write(small_disk / "stream.bin") as tmp,
        open(tmp, "wb") as out,
    ):
        out.writelines(b"y" * 8192 for _ in range(64))
    assert sorted(p.name for p in small_disk.iterdir()) == ["kept.bin"]


def run(config: Path, output: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "rosenblatt.cli", "run", str(config), "--output", str(output)],
        capture_output=True,
        text=True,
        env={**os.environ, "MPLBACKEND": "Agg"},
        timeout=900,
        check=False,
    )


def _without_timings(value: Any) -> Any:
    if isinstance(value, dict):
        return {
            k: _without_timings(v)
            for k, v in value.items()
            if "seconds" not in k and "timing" not in k
        }
    if isinstance(value, list):
        return [_without_timings(v) for v in value]
    return value


def content(path: Path) -> Any:
    """A results file's content, timing fields left out of JSON files."""
    if path.suffix == ".json":
        document = json.loads(path.read_text(encoding="utf-8"))
        if path.name == "timings.json":  # the steps' wall times: their names alone
            return sorted(document)
        if path.name == "manifest.json":  # the files holding wall times differ in size and hash
            for name in ("timings.json", "summary.json"):
                document["files"][name] = {}
        return _without_timings(document)
    return path.read_bytes()


@pytest.mark.slow
@pytest.mark.system
def test_a_run_on_a_full_disk_stops_in_one_line_and_resumes(
    small_disk: Path, tmp_path: Path
) -> None:
    config = tmp_path / "tiny.yaml"
    config.write_text(yaml.safe_dump(TINY), encoding="utf-8")
    reference = tmp_path / "reference"
    assert run(config, reference).returncode == 0
    expected = {p.name: content(p) for p in reference.iterdir()}

    output = small_disk / "results"
    full = run(config, output)
    assert full.returncode == DISK_FULL_STATUS, full.stderr
    assert "Traceback" not in full.stderr
    last = full.stderr.strip().splitlines()[-1]
    assert last.startswith(
        f"rosenblatt run {config}: error: no space left on the device writing {output}/"
    )
    assert " bytes" in last
    assert "needed" in last
    assert [line for line in full.stderr.splitlines() if "error" in line] == [last]
    # no file under a final name that differs from the uninterrupted run's, no temporary file
    written = sorted(output.iterdir()) if output.exists() else []
    assert len(written) < len(expected)
    for path in written:
        assert path.name in expected
        assert content(path) == expected[path.name], path.name

    resize(small_disk, 64 * 1024 * 1024)
    again = run(config, output)
    assert again.returncode == 0, again.stderr
    assert {p.name: content(p) for p in output.iterdir()} == expected


def test_a_library_s_full_disk_error_is_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # HDF5 and Arrow say it in their message, without errno
    message = (
        "Can't write data (file write failed: time = Thu Nov 26 22:00:00 2026\n, "
        "errno = 28, error message = 'No space left on device', buf = 0x1, total write size = 8)"
    )

    def full(args: Any) -> int:
        raise OSError(message)

    monkeypatch.setattr("rosenblatt.commands.run.main", full)
    assert main(["run", "blobs"]) == DISK_FULL_STATUS
    [line] = capsys.readouterr().err.splitlines()
    assert line.startswith("rosenblatt run blobs: error: no space left on the device (")
    assert "total write size = 8" in line
    assert line.endswith("free some space and run the same command again")
