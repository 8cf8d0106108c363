"""Files written completely or not at all, and a full disk said in one line.

:func:`atomic_write` hands out a temporary path in the final file's folder and
renames it to the final name only when the writing succeeded: a reader (a
later step, a rerun) sees either the previous file or the complete new one,
never a partial file under the final name. The temporary name keeps the final
suffix, so that writers choosing the format by extension (matplotlib, numpy)
write the same bytes.

When the device runs out of space (``ENOSPC``, or ``EDQUOT`` for a quota) the
temporary file is removed and a :class:`DiskFullError` names the final path,
the bytes that were needed and the bytes free there.
"""

from __future__ import annotations

import errno
import os
import secrets
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = ["DiskFullError", "atomic_write", "is_disk_full", "write_bytes", "write_text"]

#: the errors of a device (or a quota) without space left
_FULL_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT})


class DiskFullError(OSError):
    """Writing a file ran out of space on its device.

    An :class:`OSError` with ``errno.ENOSPC``. Its message is one line naming
    the file, the bytes it needed and the bytes free on that device.

    Parameters
    ----------
    path : path-like
        The file that was being written (its final name).
    needed : int
        Bytes the file needed: its whole size where it was known, else the
        bytes written when the space ran out (then ``exact`` is false).
    exact : bool, default True
        Whether ``needed`` is the whole size of the file.
    """

    def __init__(self, path: str | os.PathLike[str], needed: int, *, exact: bool = True) -> None:
        self.path = Path(path)
        self.needed = int(needed)
        self.exact = bool(exact)
        self.free = _free_bytes(self.path.parent)
        amount = f"{self.needed} bytes" if exact else f"more than {self.needed} bytes"
        free = "" if self.free is None else f", {self.free} bytes free there"
        message = (
            f"no space left on the device writing {self.path}: it needed {amount}{free}; "
            "free some space and run the same command again"
        )
        super().__init__(errno.ENOSPC, message, str(self.path))

    def __str__(self) -> str:
        return str(self.strerror)


def is_disk_full(error: BaseException) -> bool:
    """Whether ``error`` is an :class:`OSError` of a device or quota without space left."""
    return isinstance(error, OSError) and error.errno in _FULL_ERRNOS


def _free_bytes(folder: Path) -> int | None:
    """Bytes free to this user on the device of ``folder`` (``None`` if it cannot be read)."""
    for candidate in (folder, *folder.parents):
        try:
            return int(shutil.disk_usage(candidate).free)
        except OSError:
            continue
    return None


def _temporary_name(path: Path) -> Path:
    """A fresh hidden name beside ``path`` that keeps its suffix."""
    token = f"{os.getpid()}-{secrets.token_hex(4)}"
    return path.with_name(f".{path.stem}.{token}.tmp{path.suffix}")


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
    tmp = _temporary_name(final)
    os.close(os.open(tmp, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o666))
    try:
        yield tmp
        os.replace(tmp, final)
    except BaseException as err:
        written = tmp.stat().st_size if tmp.exists() else 0
        tmp.unlink(missing_ok=True)
        if is_disk_full(err) and not isinstance(err, DiskFullError):
            raise DiskFullError(final, written, exact=False) from err
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
        raise DiskFullError(path, len(data)) from err.__cause__


def write_text(path: str | os.PathLike[str], text: str, encoding: str = "utf-8") -> None:
    """Write ``text`` to ``path`` atomically, encoded with ``encoding`` (see :func:`write_bytes`)."""
    write_bytes(path, text.encode(encoding))
