"""One writer per folder: a lock file beside it, holding its owner's process id and host.

Two ``rosenblatt`` processes that would write the same cache or results folder
(or the same output file) do not both write: the second waits until the
first releases the folder, saying once whom it waits for, or refuses at once
with a :class:`FolderLockedError`. The lock of ``results/lhco-smoke`` is the
file ``results/.lhco-smoke.lock``; its content names the owner (process id,
host, start time, command). It is held with :func:`fcntl.flock`, which the
kernel releases when the owner dies, and removed when the owner is done.

A lock file left by a process of this host that is no longer running is
taken over with a message naming that process. A lock file written on
another host is honoured for as long as it is there: this host cannot tell
whether that process still runs, so the message says to remove the file if
that run is gone. Runs on different folders proceed in parallel.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import sys
import time
from collections.abc import Iterable, Iterator
from contextlib import ExitStack, contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from rosenblatt.exceptions import FolderLockedError

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX: the owner's record decides alone
    fcntl = None  # type: ignore[assignment]
#: whether the kernel's locks can be taken (a platform with :mod:`fcntl`)
_HAS_FLOCK: bool = fcntl is not None

__all__ = ["folder_lock", "folder_locks", "lock_path"]

log = logging.getLogger("rosenblatt.lock")

#: seconds between two attempts while waiting
POLL_SECONDS = 0.2


def lock_path(path: str | os.PathLike[str]) -> Path:
    """The lock file of a folder or file: ``.<name>.lock`` beside it (the path made absolute)."""
    target = Path(os.path.abspath(path))
    return target.with_name(f".{target.name}.lock")


def _this_owner() -> dict[str, Any]:
    command = " ".join([Path(sys.argv[0]).name, *sys.argv[1:]]) if sys.argv else ""
    return {
        "pid": os.getpid(),
        "host": socket.gethostname(),
        "started": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "command": command,
    }


def _read_owner(fd: int) -> dict[str, Any] | None:
    """The owner recorded in an open lock file; ``None`` when it is empty or unreadable."""
    os.lseek(fd, 0, os.SEEK_SET)
    raw = b""
    while block := os.read(fd, 4096):
        raw += block
    try:
        owner = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None
    return owner if isinstance(owner, dict) and isinstance(owner.get("pid"), int) else None


def _describe(owner: dict[str, Any] | None) -> str:
    if owner is None:
        return "another process"
    started = f", started {owner['started']}" if owner.get("started") else ""
    command = f", `{owner['command']}`" if owner.get("command") else ""
    return f"process {owner['pid']} on host {owner.get('host', '?')}{started}{command}"


def _alive(pid: int) -> bool:
    """Whether a process of this host has the id ``pid``."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _flock(fd: int) -> bool:
    """Take the kernel's exclusive lock of ``fd`` without waiting; whether it was free."""
    if not _HAS_FLOCK:  # pragma: no cover
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def _same_file(fd: int, path: Path) -> bool:
    """Whether ``path`` still names the file open as ``fd`` (a released lock is removed)."""
    try:
        return os.stat(path).st_ino == os.fstat(fd).st_ino
    except FileNotFoundError:
        return False


def _try_lock(path: Path, target: Path) -> tuple[int | None, dict[str, Any] | None]:
    """Take the lock if it is free: ``(fd, None)``, else ``(None, owner)``."""
    while True:
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
        except FileNotFoundError:
            # the owner removed the folder it had made for its lock
            path.parent.mkdir(parents=True, exist_ok=True)
            continue
        if not _flock(fd):
            owner = _read_owner(fd)
            os.close(fd)
            return None, owner
        if _same_file(fd, path):
            break
        os.close(fd)  # the owner removed it as we opened it: start again
    owner = _read_owner(fd)
    if owner is not None and owner.get("pid") != os.getpid():
        host = socket.gethostname()
        if owner.get("host") != host or (not _HAS_FLOCK and _alive(int(owner["pid"]))):
            os.close(fd)
            return None, owner
        log.warning(
            "taking over the lock of %s (%s): %s is no longer running",
            target,
            path,
            _describe(owner),
        )
    data = json.dumps(_this_owner()).encode("utf-8")
    os.ftruncate(fd, 0)
    os.pwrite(fd, data, 0)
    return fd, None


def _held_message(target: Path, path: Path, owner: dict[str, Any] | None) -> str:
    message = f"{target} is being written by {_describe(owner)} (lock {path})"
    if owner is not None and owner.get("host") != socket.gethostname():
        message += "; if that run is gone, remove the lock file"
    return message


def _made_parents(folder: Path) -> list[Path]:
    """Make ``folder`` and its missing parents; return those made, deepest first."""
    missing = [p for p in (folder, *folder.parents) if not p.exists()]
    folder.mkdir(parents=True, exist_ok=True)
    return missing


@contextmanager
def folder_lock(path: str | os.PathLike[str], *, wait: bool = True) -> Iterator[Path]:
    """Hold the lock of a folder (or file) for the block.

    Parameters
    ----------
    path : path-like
        The folder or file to be written; it need not exist.
    wait : bool, default True
        When another process holds the lock: wait for it, saying so once in a
        logged warning (``True``), or raise :class:`FolderLockedError` at once.

    Yields
    ------
    pathlib.Path
        The lock file.

    Raises
    ------
    FolderLockedError
        If the lock is held and ``wait`` is false.
    """
    target = Path(os.path.abspath(path))
    lock = lock_path(target)
    made = _made_parents(lock.parent)
    start = time.monotonic()
    announced = False
    try:
        while True:
            fd, owner = _try_lock(lock, target)
            if fd is not None:
                break
            message = _held_message(target, lock, owner)
            if not wait:
                raise FolderLockedError(message)
            if not announced:
                log.warning("waiting: %s", message)
                announced = True
            time.sleep(POLL_SECONDS)
        if announced:
            log.warning("%s is free after %.1f s: continuing", target, time.monotonic() - start)
        try:
            yield lock
        finally:
            # removed while still held: a waiter that opened it sees it gone and opens anew
            lock.unlink(missing_ok=True)
            os.close(fd)
    finally:
        for folder in made:
            try:
                folder.rmdir()
            except OSError:
                break


@contextmanager
def folder_locks(paths: Iterable[str | os.PathLike[str]], *, wait: bool = True) -> Iterator[None]:
    """Hold the locks of several folders, taken in one order (no two runs wait for each other).

    A path whose lock cannot be made (its folder cannot be made or written: a
    file in the way, no permission) is not locked: nothing can be written
    there, and the writer's own check names the setting that gave it.
    """
    # the root folder has no name to put a lock beside, and nothing to write into its parent
    targets = sorted({Path(os.path.abspath(p)) for p in paths} - {Path("/")})
    with ExitStack() as stack:
        for target in targets:
            try:
                stack.enter_context(folder_lock(target, wait=wait))
            except OSError as err:
                log.debug("no lock for %s: %s", target, err)
        yield
