"""Records that a cached step finished, and the check of its files on reuse.

A step that caches files for later runs writes, after every file it produced,
a *record*: a small JSON file holding what the step was computed from (its
``inputs``) and the size and BLAKE2b content hash of each file it produced.
The record is written last and atomically (:mod:`rosenblatt._atomic`), so a
step killed before the end leaves no record and is computed again.

On reuse, :func:`check_record` compares the inputs, then each file's size and
its hash (read once, streamed). A file that is missing, truncated or altered
after it was written is named in one logged line and the step is computed
again; under :func:`refusing_corrupt_cache` (``rosenblatt run
--refuse-corrupt-cache``) a :class:`CorruptCacheError` is raised instead.
"""

from __future__ import annotations

import contextvars
import functools
import hashlib
import json
import logging
import os
import time
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeGuard

from rosenblatt._atomic import write_text
from rosenblatt.exceptions import CorruptCacheError

__all__ = [
    "RECORD_FORMAT",
    "check_files",
    "check_record",
    "corrupt",
    "file_digest",
    "file_digests",
    "file_entries",
    "is_sealed",
    "read_record",
    "refusing_corrupt_cache",
    "seal",
    "source_digest",
    "write_record",
]

log = logging.getLogger("rosenblatt.cache")

#: the ``format`` of a record file
RECORD_FORMAT = "rosenblatt-cache-record"

#: the hash recorded for each file
HASH = "blake2b"

#: the ``format`` of the file of known hashes (:func:`file_digests`)
_DIGESTS_FORMAT = "rosenblatt-file-digests"

#: nanoseconds after its last modification from which a file's time stamps identify it
_SETTLED_NS = 2_000_000_000

_BLOCK = 1 << 20

#: the package's folder, where :func:`source_digest` finds its modules
_PACKAGE = Path(__file__).resolve().parent
_refuse: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "refuse_corrupt_cache", default=False
)


@contextmanager
def refusing_corrupt_cache(refuse: bool = True) -> Iterator[None]:
    """Within the block, a corrupt cached file raises :class:`CorruptCacheError`.

    Outside it (the default) the file is named in one logged line and its step
    computed again.
    """
    token = _refuse.set(bool(refuse))
    try:
        yield
    finally:
        _refuse.reset(token)


def file_digest(path: str | os.PathLike[str]) -> str:
    """The BLAKE2b hash (hex) of a file's content, read in blocks of 1 MiB."""
    digest = hashlib.blake2b(digest_size=32)
    with open(path, "rb") as handle:
        while block := handle.read(_BLOCK):
            digest.update(block)
    return digest.hexdigest()


@functools.cache
def source_digest(*parts: str) -> str:
    """The BLAKE2b hash (hex) of the Python source of ``parts`` of the installed package.

    Parameters
    ----------
    *parts : str
        Folders (every ``.py`` file below them) and modules of the package, as
        paths relative to its folder with ``/`` (``"transforms"``,
        ``"studies/toys/experiment.py"``).

    Returns
    -------
    str
        The hash of each file's path relative to the package and of its bytes,
        in the order of the sorted paths: the same for the same source
        wherever the package is installed. Computed once per process.

    Raises
    ------
    FileNotFoundError
        Where a part is not in the package.
    """
    files: set[Path] = set()
    for part in parts:
        path = _PACKAGE / part
        if path.is_dir():
            files.update(f for f in path.rglob("*.py") if "__pycache__" not in f.parts)
        elif path.is_file():
            files.add(path)
        else:
            msg = f"{part} is not a module or folder of the package ({_PACKAGE})"
            raise FileNotFoundError(msg)
    digest = hashlib.blake2b(digest_size=16)
    for name, path in sorted((f.relative_to(_PACKAGE).as_posix(), f) for f in files):
        data = path.read_bytes()
        digest.update(f"{name}\0{len(data)}\0".encode())
        digest.update(data)
    return digest.hexdigest()


def _stat_key(stat: os.stat_result) -> list[int]:
    """What changes when a file is written, replaced or moved: size, times, inode, device."""
    return [stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns, stat.st_ino, stat.st_dev]


def file_digests(
    paths: Iterable[str | os.PathLike[str]], known: str | os.PathLike[str] | None = None
) -> dict[str, str]:
    """The BLAKE2b hash of each file (:func:`file_digest`), keyed by its path as given.

    Parameters
    ----------
    paths
        The files.
    known : path-like, optional
        A JSON file of the hashes of an earlier call (a run resumed). A file
        whose size, modification and change times, inode and device are those
        recorded there keeps its recorded hash without being read again, as
        git's index does; any other file is hashed, as is one modified less
        than two seconds before it was recorded (a later write could share
        its time stamps). The file is then written (atomically, its folder
        made) with every hash. A damaged or foreign ``known`` is ignored.
    """
    recorded: dict[str, Any] = {}
    if known is not None:
        try:
            document = json.loads(Path(known).read_text(encoding="utf-8"))
            if document.get("format") == _DIGESTS_FORMAT and document.get("hash") == HASH:
                recorded = dict(document["files"])
        except (OSError, ValueError, TypeError, KeyError, AttributeError):
            recorded = {}
    digests, files = {}, {}
    for path in paths:
        name = os.fspath(path)
        key = _stat_key(os.stat(name))
        entry = recorded.get(name)
        if (
            isinstance(entry, dict)
            and entry.get("stat") == key
            and isinstance(entry.get(HASH), str)
        ):
            digest = entry[HASH]
        else:
            digest = file_digest(name)
        digests[name] = digest
        # a file written in the last moments may change again within its clock's tick
        settled = time.time_ns() - key[1] > _SETTLED_NS
        files[name] = {"stat": key if settled else None, HASH: digest}
    if known is not None:
        Path(known).parent.mkdir(parents=True, exist_ok=True)
        document = {"format": _DIGESTS_FORMAT, "hash": HASH, "files": files}
        write_text(known, json.dumps(document, indent=1, sort_keys=True))
    return digests


def file_entries(
    folder: str | os.PathLike[str], paths: Iterable[str | os.PathLike[str]]
) -> dict[str, dict[str, Any]]:
    """Size and hash of each file (a path as given), keyed by its path relative to ``folder``."""
    base = Path(folder)
    entries = {}
    for path in paths:
        file_path = Path(path)
        entries[os.path.relpath(file_path, base)] = {
            "size": file_path.stat().st_size,
            HASH: file_digest(file_path),
        }
    return dict(sorted(entries.items()))


def _damage(path: Path, entry: Mapping[str, Any]) -> str | None:
    """What is wrong with a recorded file, or ``None`` when it is intact."""
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        return "is missing"
    if size != entry.get("size"):
        return f"is truncated or altered ({size} bytes, {entry.get('size')} when written)"
    if file_digest(path) != entry.get(HASH):
        return "was altered after it was written (its content hash differs)"
    return None


def corrupt(path: str | os.PathLike[str], what: str) -> None:
    """Report a corrupt cached file: one logged line, or :class:`CorruptCacheError` when refusing."""
    if _refuse.get():
        msg = (
            f"cached file {path} {what}; refusing to reuse it (--refuse-corrupt-cache): "
            "remove it to compute it again"
        )
        raise CorruptCacheError(msg)
    log.warning("cached file %s %s: computing it again", path, what)


def check_files(folder: str | os.PathLike[str], entries: Mapping[str, Mapping[str, Any]]) -> bool:
    """Whether every recorded file under ``folder`` has its recorded size and hash.

    The first file that does not is reported by :func:`corrupt`.
    """
    for name, entry in entries.items():
        path = Path(folder) / name
        what = _damage(path, entry)
        if what is not None:
            corrupt(path, what)
            return False
    return True


def _jsonable(value: Any) -> Any:
    return json.loads(json.dumps(value, sort_keys=True, default=str))


def _checksum(document: Mapping[str, Any]) -> str:
    body = {key: value for key, value in document.items() if key != "checksum"}
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.blake2b(text.encode("utf-8"), digest_size=16).hexdigest()


def seal(document: Mapping[str, Any]) -> dict[str, Any]:
    """``document`` with a ``checksum`` of its own content, so that an altered copy is seen."""
    body = json.loads(json.dumps(dict(document), default=str))
    body.pop("checksum", None)
    return {**body, "checksum": _checksum(body)}


def is_sealed(document: object) -> TypeGuard[dict[str, Any]]:
    """Whether ``document`` (read back from JSON) still matches the checksum :func:`seal` gave it."""
    return isinstance(document, dict) and document.get("checksum") == _checksum(document)


def write_record(
    record: str | os.PathLike[str],
    outputs: Iterable[str | os.PathLike[str]],
    inputs: Mapping[str, Any],
) -> None:
    """Record that a step finished: its ``inputs`` and the size and hash of each output.

    Call it after every output is in place; paths are kept relative to the
    record's folder.
    """
    path = Path(record)
    document = seal(
        {
            "format": RECORD_FORMAT,
            "inputs": _jsonable(dict(inputs)),
            "files": file_entries(path.parent, outputs),
        }
    )
    write_text(path, json.dumps(document, indent=1, sort_keys=True) + "\n")


def read_record(record: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The record's content; ``None`` when there is none. A damaged record is reported."""
    path = Path(record)
    if not path.is_file():
        return None
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        document = None
    if (
        not is_sealed(document)
        or document.get("format") != RECORD_FORMAT
        or not isinstance(document.get("files"), dict)
    ):
        corrupt(path, "is not a readable record (truncated or altered)")
        return None
    return document


def check_record(record: str | os.PathLike[str], inputs: Mapping[str, Any]) -> bool:
    """Whether the step of ``record`` finished from ``inputs`` and its files are intact.

    ``False`` when there is no record (the step never finished), when it was
    computed from other inputs, or when one of its files is missing, truncated
    or altered (reported by :func:`corrupt`, which raises when refusing).
    """
    document = read_record(record)
    if document is None:
        return False
    if document.get("inputs") != _jsonable(dict(inputs)):
        log.info("%s was computed from other inputs: computing it again", record)
        return False
    return check_files(Path(record).parent, document["files"])
