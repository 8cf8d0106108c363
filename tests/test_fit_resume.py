"""``rosenblatt fit`` stopped while it reads resumes: only the chunks left are read, same transform.

The end-to-end test stops a real ``rosenblatt fit`` over several ROOT files with
SIGTERM (the test hook :data:`~rosenblatt.processors.pieces.STOP_AFTER_PIECES`,
once 80% of the chunks have pieces), runs the same command again and compares the
saved transform with an uninterrupted fit's, byte for byte. The others check that
a changed input file or option is read again, never served from the pieces.
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from flat_ntuple import fit_args, write_flat

from rosenblatt.cli import main
from rosenblatt.processors.pieces import STOP_AFTER_PIECES

uproot = pytest.importorskip("uproot")

FILES = ("a.root", "b.root", "c.root", "d.root")
#: events per file, entries per chunk: 5 chunks per file, 20 in all
EVENTS, CHUNK = 10_000, 2_000


def _files(folder: Path) -> None:
    for seed, name in enumerate(FILES):
        write_flat(folder / name, EVENTS, seed, selection=True)


def _args(output: str, *extra: str) -> list[str]:
    weighted = ["--weight", "evt_w", "--depth", "4", "--chunk-size", str(CHUNK)]
    return fit_args(FILES, output, *weighted, *extra)


def _rosenblatt(
    folder: Path, args: list[str], env: dict[str, str] | None = None
) -> tuple[int, str]:
    script = Path(sys.executable).with_name("rosenblatt")
    command = (
        [str(script)]
        if script.is_file()
        else [sys.executable, "-c", "import sys; from rosenblatt.cli import main; sys.exit(main())"]
    )
    done = subprocess.run(
        [*command, *args],
        cwd=folder,
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=600,
        check=False,
    )
    return done.returncode, done.stdout + done.stderr


def _pieces(folder: Path) -> list[Path]:
    """The pieces under their final names (a hidden name is one being written)."""
    return [p for p in sorted(folder.glob("*.zip")) if not p.name.startswith(".")]


CONFIG = """
study: abcd
name: resume
treename: nominal
lumi: 3.0
datasets:
  qcd-a: {files: [a.root, b.root], role: defining, weight: evt_w, xsec: 2000.0}
  qcd-b: {files: [c.root], role: defining, weight: evt_w, xsec: 500.0}
  qcd: {files: [d.root], role: background, weight: evt_w, xsec: 2000.0}
  data: {files: [d.root], role: data}
score: tagger_out
defining: {selection: passes}
transforms:
  - {kind: irgi, depth: 4}
abcd: {x: m_jj, x0: [1500.0, 3500.0], n_x0: 4, y0: [0.2, 0.9], n_y0: 4}
"""


@pytest.mark.system
def test_a_fit_stopped_by_sigterm_reads_only_the_chunks_left(tmp_path: Path) -> None:
    reference, stopped = tmp_path / "reference", tmp_path / "stopped"
    reference.mkdir()
    _files(reference)
    # the same files (uproot writes a new UUID in each file it makes)
    shutil.copytree(reference, stopped)
    code, log = _rosenblatt(reference, _args("t.json"))
    assert code == 0, log[-3000:]
    assert "kept from an earlier run" not in log
    assert not (reference / "t.json.work").exists()  # removed once the transform is saved

    code, log = _rosenblatt(stopped, _args("t.json"), {STOP_AFTER_PIECES: "fit:16"})
    assert code == 143, log[-3000:]
    assert "stopped by SIGTERM" in log
    assert not (stopped / "t.json").exists()
    kept = _pieces(stopped / "t.json.work" / "pieces")
    assert 16 <= len(kept) < 20

    code, log = _rosenblatt(stopped, _args("t.json"))
    assert code == 0, log[-3000:]
    assert f"{len(kept)} of 20 chunks kept from an earlier run" in log
    assert f"reading the {20 - len(kept)} left" in log
    assert (stopped / "t.json").read_bytes() == (reference / "t.json").read_bytes()
    assert not (stopped / "t.json.work").exists()


def test_a_changed_file_or_option_is_read_again(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.chdir(tmp_path)
    _files(tmp_path)
    work = tmp_path / "work"
    pieces = work / "pieces"

    def fit(output: str, *extra: str) -> str:
        assert main(_args(output, "--work-dir", str(work), *extra)) == 0
        return capsys.readouterr().err

    def fresh(output: str, *extra: str) -> bytes:
        """The transform of a fit with nothing kept."""
        assert main(_args(output, *extra)) == 0
        capsys.readouterr()
        return (tmp_path / output).read_bytes()

    assert "kept" not in fit("first.json")
    first = _pieces(pieces)
    assert len(first) == 20  # a work folder given is kept
    assert "all 20 chunks kept from an earlier run" in fit("again.json")
    assert (tmp_path / "again.json").read_bytes() == (tmp_path / "first.json").read_bytes()

    # one file changed: its chunks are read again, the others' kept
    write_flat(tmp_path / "c.root", EVENTS, 99, selection=True)
    assert "15 of 20 chunks kept from an earlier run" in fit("changed.json")
    assert (tmp_path / "changed.json").read_bytes() == fresh("changed-fresh.json")
    assert len(_pieces(pieces)) == 20  # the pieces of the old file are removed

    # another option: nothing kept
    for extra in (["--score", "m_jj"], ["--chunk-size", "2500"]):
        assert "kept" not in fit("other.json", *extra)
        assert (tmp_path / "other.json").read_bytes() == fresh("other-fresh.json", *extra)

    # a piece cut short is named and read again
    fit("first.json")
    damaged = _pieces(pieces)[3]
    damaged.write_bytes(damaged.read_bytes()[:100])
    with caplog.at_level(logging.WARNING, "rosenblatt.cache"):
        assert "19 of 20 chunks kept" in fit("damaged.json")
    assert damaged.name in caplog.text
    assert (tmp_path / "damaged.json").read_bytes() == fresh("damaged-fresh.json")

    # a bit flipped in a piece's values is named as the piece is read, and its chunk read again
    flipped = _pieces(pieces)[5]
    data = bytearray(flipped.read_bytes())
    data[len(data) // 2] ^= 0x10
    flipped.write_bytes(bytes(data))
    with caplog.at_level(logging.WARNING, "rosenblatt.cache"):
        assert "19 of 20 chunks kept" in fit("flipped.json")
    assert flipped.name in caplog.text
    assert (tmp_path / "flipped.json").read_bytes() == (tmp_path / "damaged.json").read_bytes()


@pytest.mark.system
def test_a_fit_of_a_configuration_stopped_by_sigterm_resumes(tmp_path: Path) -> None:
    reference, stopped = tmp_path / "reference", tmp_path / "stopped"
    reference.mkdir()
    _files(reference)
    (reference / "config.yaml").write_text(CONFIG, encoding="utf-8")
    shutil.copytree(reference, stopped)
    args = ["fit", "--config", "config.yaml", "--depth", "4", "--chunk-size", str(CHUNK)]
    code, log = _rosenblatt(reference, [*args, "--output", "t.json"])
    assert code == 0, log[-3000:]
    assert "mixed at xsec * lumi" in log
    # 3 files of the defining datasets, 15 chunks: stopped once 12 have pieces
    code, log = _rosenblatt(stopped, [*args, "--output", "t.json"], {STOP_AFTER_PIECES: "fit:12"})
    assert code == 143, log[-3000:]
    kept = _pieces(stopped / "t.json.work" / "pieces")
    assert 12 <= len(kept) < 15
    code, log = _rosenblatt(stopped, [*args, "--output", "t.json"])
    assert code == 0, log[-3000:]
    assert f"{len(kept)} of 15 chunks kept from an earlier run" in log
    assert (stopped / "t.json").read_bytes() == (reference / "t.json").read_bytes()
