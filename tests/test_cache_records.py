"""Records of finished steps: sizes and content hashes checked on reuse; atomic folders."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import subprocess
from pathlib import Path

import pytest

from rosenblatt._atomic import atomic_directory, atomic_write, write_text
from rosenblatt._records import (
    check_record,
    file_digest,
    file_digests,
    refusing_corrupt_cache,
    write_record,
)
from rosenblatt.exceptions import CorruptCacheError

pytestmark = pytest.mark.core


def _step(folder: Path) -> Path:
    (folder / "table.bin").write_bytes(bytes(range(256)) * 40)
    (folder / "sub").mkdir()
    (folder / "sub" / "model.txt").write_text("weights")
    record = folder / "step.record.json"
    write_record(
        record, [folder / "table.bin", folder / "sub" / "model.txt"], {"seed": 3, "n": [1, 2]}
    )
    return record


def test_paths_relative_to_the_working_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "data").mkdir()
    Path("data/events.root").write_bytes(b"events")
    write_record("data/events.root.record.json", [Path("data/events.root")], {})
    document = json.loads(Path("data/events.root.record.json").read_text())
    assert list(document["files"]) == ["events.root"]
    assert check_record("data/events.root.record.json", {})


def test_digest_is_blake2b_of_the_content(tmp_path: Path) -> None:
    data = os.urandom(3 << 20)  # several blocks of the streamed read
    (tmp_path / "f").write_bytes(data)
    assert file_digest(tmp_path / "f") == hashlib.blake2b(data, digest_size=32).hexdigest()


def test_known_digests_are_reused_only_for_an_unchanged_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A resumed run reads only files changed since; a rewrite of the same size is seen."""
    import rosenblatt._records as records

    files = [tmp_path / f"f{i}.bin" for i in range(3)]
    for i, path in enumerate(files):
        path.write_bytes(bytes([i]) * 5000)
        os.utime(path, ns=(10**18, 10**18))  # written long before the run
    known = tmp_path / "work" / "digests.json"
    first = file_digests(files, known)
    assert first == {
        str(p): hashlib.blake2b(p.read_bytes(), digest_size=32).hexdigest() for p in files
    }
    read: list[str] = []
    monkeypatch.setattr(records, "file_digest", lambda p: read.append(str(p)) or file_digest(p))
    assert file_digests(files, known) == first
    assert read == []
    # the same size, another content: its times differ, so it is read again
    files[1].write_bytes(bytes([9]) * 5000)
    again = file_digests(files, known)
    assert read == [str(files[1])]
    assert again[str(files[1])] == file_digest(files[1]) != first[str(files[1])]
    assert again[str(files[0])] == first[str(files[0])]
    # a file modified moments before it was hashed is read again: it could change unseen
    read.clear()
    file_digests(files, known)
    assert read == [str(files[1])]
    # a damaged file of known hashes is ignored: every file is read
    known.write_text("{not json")
    read.clear()
    assert file_digests(files, known) == again
    assert sorted(read) == sorted(str(p) for p in files)


def test_record_holds_inputs_sizes_and_hashes(tmp_path: Path) -> None:
    record = _step(tmp_path)
    document = json.loads(record.read_text())
    assert document["inputs"] == {"seed": 3, "n": [1, 2]}
    assert document["files"]["table.bin"]["size"] == 10240
    assert document["files"]["sub/model.txt"]["blake2b"] == file_digest(tmp_path / "sub/model.txt")
    assert check_record(record, {"n": [1, 2], "seed": 3})


def test_no_record_or_other_inputs_is_not_finished(tmp_path: Path) -> None:
    assert not check_record(tmp_path / "none.record.json", {})
    record = _step(tmp_path)
    assert not check_record(record, {"seed": 4, "n": [1, 2]})


@pytest.mark.parametrize("damage", ["flip", "truncate", "remove", "append"])
def test_a_damaged_file_is_named_in_one_line(
    tmp_path: Path, damage: str, caplog: pytest.LogCaptureFixture
) -> None:
    record = _step(tmp_path)
    target = tmp_path / "table.bin"
    data = bytearray(target.read_bytes())
    if damage == "flip":
        data[5000] ^= 0x01
        target.write_bytes(bytes(data))
    elif damage == "truncate":
        target.write_bytes(bytes(data[:-1]))
    elif damage == "append":
        target.write_bytes(bytes(data) + b"\0")
    else:
        target.unlink()
    with caplog.at_level(logging.INFO, logger="rosenblatt.cache"):
        assert not check_record(record, {"seed": 3, "n": [1, 2]})
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 1
    assert str(target) in lines[0]
    assert "\n" not in lines[0]
    assert lines[0].endswith("computing it again")
    with refusing_corrupt_cache(), pytest.raises(CorruptCacheError, match="refusing") as err:
        check_record(record, {"seed": 3, "n": [1, 2]})
    assert str(target) in str(err.value)
    # outside the block the policy is back to recomputing
    assert not check_record(record, {"seed": 3, "n": [1, 2]})


@pytest.mark.parametrize("damage", ["truncate", "digit"])
def test_a_damaged_record_is_not_trusted(
    tmp_path: Path, damage: str, caplog: pytest.LogCaptureFixture
) -> None:
    record = _step(tmp_path)
    text = record.read_text()
    if damage == "truncate":
        record.write_text(text[:-10])
    else:  # still valid JSON, the recorded size changed
        record.write_text(text.replace('"size": 10240', '"size": 10241'))
    with caplog.at_level(logging.INFO, logger="rosenblatt.cache"):
        assert not check_record(record, {"seed": 3, "n": [1, 2]})
    assert [str(record) in r.getMessage() for r in caplog.records] == [True]


def test_atomic_directory_replaces_a_folder_whole(tmp_path: Path) -> None:
    final = tmp_path / "models"
    with atomic_directory(final) as folder:
        (folder / "a").write_text("1")
    with atomic_directory(final) as folder:
        (folder / "b").write_text("2")
    assert sorted(p.name for p in final.iterdir()) == ["b"]

    def fail_half_way() -> None:
        with atomic_directory(final) as folder:
            (folder / "c").write_text("3")
            raise RuntimeError

    with pytest.raises(RuntimeError):
        fail_half_way()
    assert sorted(p.name for p in final.iterdir()) == ["b"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["models"]


def test_temporaries_of_dead_processes_are_removed(tmp_path: Path) -> None:
    dead = subprocess.Popen(["true"])
    dead.wait()
    left = tmp_path / f".summary.{dead.pid}-0123abcd.tmp.json"
    mine = tmp_path / f".summary.{os.getpid()}-0123abcd.tmp.json"
    other = tmp_path / f".summary-old.{dead.pid}-0123abcd.tmp.json"
    for path in (left, mine, other):
        path.write_text("partial")
    write_text(tmp_path / "summary.json", "{}")
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [mine.name, other.name, "summary.json"]
    )
    with atomic_write(tmp_path / "summary.json") as temporary:
        temporary.write_text("[]")
    assert (tmp_path / "summary.json").read_text() == "[]"
