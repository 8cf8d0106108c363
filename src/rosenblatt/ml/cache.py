"""Models loaded once per process, for scorers shipped to worker processes."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

__all__ = ["cached_content", "cached_model"]

_Model = TypeVar("_Model")

#: (loader kind, absolute path) -> ((modification time, size), model)
_MODELS: dict[tuple[str, str], tuple[tuple[int, int], Any]] = {}
#: (loader kind, hash of the file's bytes) -> model
_CONTENTS: dict[tuple[str, str], Any] = {}
_LOCK = threading.Lock()


def cached_model(kind: str, path: Path, load: Callable[[Path], _Model]) -> _Model:
    """Return ``load(path)``, loaded once per process and ``kind`` while the file is unchanged.

    A file rewritten since it was loaded (another modification time or size)
    is loaded again and replaces the old entry.

    Raises
    ------
    FileNotFoundError
        If ``path`` does not exist.
    """
    path = path.absolute()
    if not path.is_file():
        msg = f"model file {path} does not exist"
        raise FileNotFoundError(msg)
    stat = path.stat()
    key, stamp = (kind, str(path)), (stat.st_mtime_ns, stat.st_size)
    with _LOCK:
        entry = _MODELS.get(key)
        if entry is None or entry[0] != stamp:
            entry = (stamp, load(path))
            _MODELS[key] = entry
    return entry[1]


def cached_content(
    kind: str, digest: str, content: bytes, load: Callable[[bytes], _Model]
) -> _Model:
    """Return ``load(content)``, loaded once per process and ``kind`` for the same bytes.

    The counterpart of :func:`cached_model` for a model file's bytes carried to
    a process by value: no file is opened, and ``digest`` (a hash of
    ``content``) keys the cache.
    """
    key = (kind, digest)
    with _LOCK:
        if key not in _CONTENTS:
            _CONTENTS[key] = load(content)
        model: _Model = _CONTENTS[key]
    return model
