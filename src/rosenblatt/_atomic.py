"""Files written completely or not at all, and a full disk said in one line.

:func:`atomic_write` hands out a temporary path in the final file's folder and
renames it to the final name only when the writing succeeded: a reader (a
later step, a rerun) sees either the previous file or the complete new one,
never a partial file under the final name. The temporary name keeps the final
suffix, so that writers choosing the format by extension (matplotlib, numpy)
write the same bytes.

The file is flushed to the disk (``fsync``) before the rename and the folder
after it, so that a crash of the machine, not only of the process, leaves the
previous file or the complete new one. :func:`atomic_directory` does the same
for a folder of files. A temporary left behind by a process that was killed is
removed by the next write of the same final name, once no process of its id
runs any more.

When the device runs out of space (``ENOSPC``, or ``EDQUOT`` for a quota) the
temporary file is removed and a :class:`DiskFullError` names the final path,
the bytes that were needed and the bytes free there.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import secrets
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from rosenblatt.exceptions import DiskFullError

__all__ = [
    "atomic_directory",
    "atomic_write",
    "fsync_folder",
    "fsync_tree",
    "is_disk_full",
    "write_bytes",
    "write_text",
]

#: the errors of a device (or a quota) without space left
_FULL_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT})


def is_disk_full(error: BaseException) -> bool:
    """Whether ``error`` is an :class:`OSError` of a device or quota without space left.

    Libraries that write through their own C code (HDF5, Arrow) raise an
    ``OSError`` without ``errno`` whose message carries the system's words.
    """
    if not isinstance(error, OSError):
        return False
    return error.errno in _FULL_ERRNOS or any(
        os.strerror(code) in str(error) for code in _FULL_ERRNOS
    )


def _free_bytes(folder: Path) -> int | None:
    """Bytes free to this user on the device of ``folder`` (``None`` if it cannot be read)."""
    for candidate in (folder, *folder.parents):
        try:
            return int(shutil.disk_usage(candidate).free)
        except OSError:
            continue
    return None


def _disk_full(path: str | os.PathLike[str], needed: int, *, exact: bool = True) -> DiskFullError:
    """The :class:`DiskFullError` of ``path``, naming the bytes free on its device."""
    return DiskFullError(path, needed, exact=exact, free=_free_bytes(Path(path).parent))


def _temporary_name(path: Path) -> Path:
    """A fresh hidden name beside ``path`` that keeps its suffix."""
    token = f"{os.getpid()}-{secrets.token_hex(4)}"
    return path.with_name(f".{path.stem}.{token}.tmp{path.suffix}")


#: a temporary name of :func:`_temporary_name` after its ``.<stem>``: the writer's process id
_TOKEN = re.compile(r"\.(?P<pid>\d+)-[0-9a-f]{8}\.tmp")


def _running(pid: int) -> bool:
    """Whether a process of id ``pid`` runs on this machine."""
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # it runs, as another user
    return True


def _remove(path: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink()


def _remove_stale(path: Path) -> None:
    """Remove the temporaries of ``path`` left by processes that no longer run."""
    prefix, suffix = f".{path.stem}", f"{path.suffix}"
    try:
        names = [e.name for e in os.scandir(path.parent) if e.name.startswith(prefix)]
    except OSError:
        return
    for name in names:
        if not name.endswith(suffix):
            continue
        found = _TOKEN.fullmatch(name[len(prefix) : len(name) - len(suffix)])
        if found is not None and not _running(int(found["pid"])):
            with contextlib.suppress(OSError):
                _remove(path.parent / name)


def fsync_folder(path: str | os.PathLike[str]) -> None:
    """Flush a folder's entries (names created, renamed, removed) to the disk."""
    try:
        handle = os.open(os.fspath(path), os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(handle)
    except OSError:
        pass  # some file systems cannot sync a folder; the rename is atomic all the same
    finally:
        os.close(handle)


def fsync_tree(path: str | os.PathLike[str]) -> None:
    """Flush a file, or every file and folder under a folder, to the disk."""
    root = Path(path)
    if not root.is_dir():
        with open(root, "rb+") as handle:
            os.fsync(handle.fileno())
        return
    for folder, _, files in os.walk(root):
        for name in files:
            fsync_tree(Path(folder, name))
        fsync_folder(folder)


@contextmanager
def atomic_write(path: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a temporary path to write; rename it to ``path`` when the block succeeds.

    The temporary file is created empty in ``path``'s folder (which must
    exist), with the permissions a new file gets there. If the block raises,
    the temporary file is removed and ``path`` is left as it was; an error
    of a full device becomes a :class:`DiskFullError` naming ``path``.

    Parameters
    ----------
    path : path-like
        The final name.

    Yields
    ------
    pathlib.Path
        Where to write the file's content.

    Raises
    ------
    DiskFullError
        If the device of ``path`` ran out of space while the block wrote.

    Examples
    --------
    >>> import json, tempfile
    >>> folder = tempfile.mkdtemp()
    >>> with atomic_write(f"{folder}/summary.json") as tmp:
    ...     _ = tmp.write_text(json.dumps({"n": 1}))
    >>> open(f"{folder}/summary.json").read()
    '{"n": 1}'
    """
    final = Path(path)
    _remove_stale(final)
    tmp = _temporary_name(final)
    os.close(os.open(tmp, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o666))
    try:
        yield tmp
        fsync_tree(tmp)
        os.replace(tmp, final)
        fsync_folder(final.parent)
    except BaseException as err:
        written = tmp.stat().st_size if tmp.exists() else 0
        tmp.unlink(missing_ok=True)
        if is_disk_full(err) and not isinstance(err, DiskFullError):
            raise _disk_full(final, written, exact=False) from err
        raise


@contextmanager
def atomic_directory(path: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a new temporary folder beside ``path``; it replaces ``path`` when the block succeeds.

    The block fills the folder; on success its files are flushed to the disk
    and it is renamed to ``path``. A folder already at ``path`` is first
    renamed aside and removed once the new one took its place: a process
    killed in between leaves no folder at ``path``, never a mixture of the
    two, and the next write of ``path`` removes the one set aside. If the
    block raises, the temporary folder is removed and ``path`` is left as it
    was (a full device raises :class:`DiskFullError`).

    Parameters
    ----------
    path : path-like
        The final folder; its parent must exist.

    Yields
    ------
    pathlib.Path
        The (empty) folder to fill.
    """
    final = Path(path)
    _remove_stale(final)
    tmp = _temporary_name(final)
    tmp.mkdir()
    try:
        yield tmp
        fsync_tree(tmp)
        old = None
        if final.exists():
            old = _temporary_name(final)
            os.replace(final, old)
        os.replace(tmp, final)
        fsync_folder(final.parent)
        if old is not None:
            _remove(old)
    except BaseException as err:
        _remove(tmp)
        if is_disk_full(err) and not isinstance(err, DiskFullError):
            raise _disk_full(final, 0, exact=False) from err
        raise


def write_bytes(path: str | os.PathLike[str], data: bytes) -> None:
    """Write ``data`` to ``path`` atomically (see :func:`atomic_write`).

    Raises
    ------
    DiskFullError
        If the device ran out of space; it names ``len(data)``, the bytes needed.
    """
    try:
        with atomic_write(path) as tmp:
            tmp.write_bytes(data)
    except DiskFullError as err:
        raise _disk_full(path, len(data)) from err.__cause__


def write_text(path: str | os.PathLike[str], text: str, encoding: str = "utf-8") -> None:
    """Write ``text`` to ``path`` atomically, encoded with ``encoding`` (see :func:`write_bytes`)."""
    write_bytes(path, text.encode(encoding))
