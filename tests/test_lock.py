"""One writer per folder: the lock file, its owner, waiting, refusing, taking over a dead owner's."""

from __future__ import annotations

import json
import logging
import os
import socket
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from rosenblatt._lock import folder_lock, folder_locks, lock_path
from rosenblatt.exceptions import FolderLockedError

#: a process that takes a folder's lock, says so, holds it until told, and marks its release
HOLDER = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from rosenblatt._lock import folder_lock

    folder, release, released = sys.argv[1:4]
    with folder_lock(folder):
        print("held", flush=True)
        while not Path(release).exists():
            time.sleep(0.05)
        Path(released).touch()
    """
)


class Holder:
    """A second process holding the lock of ``folder`` until :meth:`release`."""

    def __init__(self, folder: Path, tmp_path: Path) -> None:
        self.release_file = tmp_path / f"release-{folder.name}"
        self.released_file = tmp_path / f"released-{folder.name}"
        self.process = subprocess.Popen(
            [sys.executable, "-c", HOLDER, str(folder), self.release_file, self.released_file],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.process.stdout is not None
        assert self.process.stdout.readline().strip() == "held"

    def release(self) -> None:
        self.release_file.touch()

    def wait(self) -> int:
        """Let the holder release the lock and end; its exit status."""
        self.release()
        return self._end()

    def kill(self) -> int:
        """End the holder without letting it release (``SIGKILL``); its exit status."""
        self.process.kill()
        return self._end()

    def _end(self) -> int:
        status = self.process.wait(timeout=60)
        assert self.process.stdout is not None
        self.process.stdout.close()
        return status


def owner_of(folder: Path) -> dict[str, object]:
    return json.loads(lock_path(folder).read_text(encoding="utf-8"))


def test_the_lock_file_names_its_owner_and_goes_with_it(tmp_path: Path) -> None:
    folder = tmp_path / "made" / "results"
    with folder_lock(folder) as lock:
        assert lock == tmp_path / "made" / ".results.lock"
        owner = owner_of(folder)
        assert owner["pid"] == os.getpid()
        assert owner["host"] == socket.gethostname()
        assert {"started", "command"} <= set(owner)
    assert not lock.exists()
    # the folder made to hold the lock is removed with it when nothing else was written there
    assert not (tmp_path / "made").exists()


@pytest.mark.slow
@pytest.mark.system
def test_a_second_process_waits_for_the_first(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    folder = tmp_path / "results"
    holder = Holder(folder, tmp_path)
    threading.Timer(1.0, holder.release).start()
    with caplog.at_level(logging.WARNING, logger="rosenblatt.lock"), folder_lock(folder):
        # the lock is ours only once the holder has let it go
        assert holder.released_file.exists()
        assert owner_of(folder)["pid"] == os.getpid()
    assert holder.wait() == 0
    messages = [r.getMessage() for r in caplog.records]
    assert messages[0] == (
        f"waiting: {folder} is being written by process {holder.process.pid} on host "
        f"{socket.gethostname()}, started {messages[0].split('started ')[1].split(',')[0]}, "
        f"`-c {folder} {holder.release_file} {holder.released_file}` (lock {lock_path(folder)})"
    )
    assert messages[1].startswith(f"{folder} is free after ")
    assert len(messages) == 2


@pytest.mark.slow
@pytest.mark.system
def test_refusing_names_the_owner(tmp_path: Path) -> None:
    folder = tmp_path / "data"
    holder = Holder(folder, tmp_path)
    try:
        with pytest.raises(FolderLockedError) as refused, folder_lock(folder, wait=False):
            pass
        message = str(refused.value)
        assert f"{folder} is being written by process {holder.process.pid}" in message
        assert str(lock_path(folder)) in message
        assert "\n" not in message
    finally:
        assert holder.wait() == 0


def test_different_folders_proceed_in_parallel(tmp_path: Path) -> None:
    holder = Holder(tmp_path / "one", tmp_path)
    try:
        with folder_lock(tmp_path / "two", wait=False):
            assert owner_of(tmp_path / "two")["pid"] == os.getpid()
            assert owner_of(tmp_path / "one")["pid"] == holder.process.pid
    finally:
        assert holder.wait() == 0


def test_a_killed_owners_lock_is_taken_over(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    folder = tmp_path / "results"
    holder = Holder(folder, tmp_path)
    holder.kill()
    assert owner_of(folder)["pid"] == holder.process.pid  # left behind
    with (
        caplog.at_level(logging.WARNING, logger="rosenblatt.lock"),
        folder_lock(folder, wait=False),
    ):
        assert owner_of(folder)["pid"] == os.getpid()
    [message] = [r.getMessage() for r in caplog.records]
    assert message.startswith(f"taking over the lock of {folder}")
    assert f"process {holder.process.pid} on host {socket.gethostname()}" in message
    assert message.endswith("is no longer running")


def test_a_lock_of_another_host_is_honoured(tmp_path: Path) -> None:
    folder = tmp_path / "shared"
    owner = {"pid": 4242, "host": "batch-node-7", "started": "2026-01-01T00:00:00+00:00"}
    lock_path(folder).write_text(json.dumps(owner), encoding="utf-8")
    with (
        pytest.raises(FolderLockedError, match="remove the lock file"),
        folder_lock(folder, wait=False),
    ):
        pass
    assert json.loads(lock_path(folder).read_text(encoding="utf-8")) == owner


def test_several_locks_are_taken_in_one_order(tmp_path: Path) -> None:
    paths = [tmp_path / "b", tmp_path / "a", tmp_path / "b"]
    with folder_locks(paths, wait=False):
        assert lock_path(tmp_path / "a").exists()
        assert lock_path(tmp_path / "b").exists()
    assert not list(tmp_path.iterdir())


def test_a_path_that_cannot_be_written_is_left_to_its_writer(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder", encoding="utf-8")
    with folder_locks([blocker / "results", tmp_path / "data"], wait=False):
        assert lock_path(tmp_path / "data").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file"]
