"""Checks shared by the study configurations: each failure names the file and the key.

A configuration read by :func:`rosenblatt.config.load_config` is a plain
mapping; the study's configuration class walks it with these checks, so that an
unknown key, a value of the wrong type or a missing file is a
:class:`ConfigError` saying ``<file>: <key>: <what is wrong>``.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from rosenblatt._validation import is_int, is_real
from rosenblatt.exceptions import ConfigError

__all__ = [
    "ConfigError",
    "check_keys",
    "check_top_level",
    "count",
    "fail",
    "file_problem",
    "flag",
    "folder",
    "fraction",
    "key_names",
    "mapping",
    "number",
    "numbers",
    "plain_name",
    "positive",
    "resolve",
    "seed",
]

#: the largest count a configuration may give (a signed 64-bit integer)
MAX_COUNT = 2**63 - 1
#: the largest seed (the generators of numpy, scikit-learn and torch all take it)
MAX_SEED = 2**32 - 1


def fail(source: str, key: str, what: str) -> ConfigError:
    """The error for ``key`` of the configuration file ``source``."""
    return ConfigError(f"{source}: {key}: {what}")


def mapping(value: Any, source: str, key: str) -> Mapping[str, Any]:
    """``value`` if it is a mapping."""
    if not isinstance(value, Mapping):
        raise fail(source, key, f"must be a mapping, got {type(value).__name__}")
    return value


def key_names(keys: Iterable[Any]) -> list[str]:
    """Keys as sorted strings (YAML keys may be numbers, ``null`` or booleans)."""
    return sorted(str(k) for k in keys)


def check_keys(entry: Mapping[str, Any], known: Iterable[str], source: str, key: str) -> None:
    """Refuse the keys of ``entry`` that are not in ``known``."""
    allowed = set(known)
    unknown = key_names(set(entry) - allowed)
    if unknown:
        raise fail(source, key, f"unknown key(s) {unknown}; known: {sorted(allowed)}")


def check_top_level(
    config: Mapping[str, Any], known: Iterable[str], required: Iterable[str] = ()
) -> str:
    """Refuse unknown and missing top-level keys; return the name of the configuration's file.

    ``_path`` (set by :func:`rosenblatt.config.load_config`) names the file
    and is not a key of the configuration.
    """
    source = str(config.get("_path", "the configuration"))
    check_keys({k: v for k, v in config.items() if k != "_path"}, known, source, "top level")
    for key in required:
        if key not in config:
            raise fail(source, key, "missing")
    return source


def number(value: Any, source: str, key: str) -> float:
    """``value`` as a float, if it is a finite int or float (not a bool)."""
    if not is_real(value):
        raise fail(source, key, f"must be a number, got {value!r}")
    try:
        converted = float(value)
    except OverflowError:
        converted = math.inf
    if not math.isfinite(converted):
        raise fail(source, key, f"must be a finite number, got {value!r}")
    return converted


def numbers(value: Any, source: str, key: str, minimum_length: int = 1) -> tuple[float, ...]:
    """``value`` as a tuple of floats, if it is a list of at least ``minimum_length`` numbers."""
    if not isinstance(value, (list, tuple)) or len(value) < minimum_length:
        raise fail(
            source, key, f"must be a list of at least {minimum_length} number(s), got {value!r}"
        )
    return tuple(number(v, source, key) for v in value)


def positive(value: Any, source: str, key: str) -> float:
    """``value`` as a float, if it is a positive number."""
    checked = number(value, source, key)
    if not checked > 0:
        raise fail(source, key, f"must be positive, got {checked}")
    return checked


def fraction(value: Any, source: str, key: str) -> float:
    """``value`` as a float, if it is a number strictly between 0 and 1."""
    checked = number(value, source, key)
    if not 0 < checked < 1:
        raise fail(source, key, f"must lie strictly between 0 and 1, got {checked}")
    return checked


def count(value: Any, source: str, key: str, minimum: int = 1, maximum: int = MAX_COUNT) -> int:
    """``value`` if it is an integer in ``[minimum, maximum]``."""
    if not is_int(value) or value < minimum:
        raise fail(source, key, f"must be an integer >= {minimum}, got {value!r}")
    if value > maximum:
        raise fail(source, key, f"must be an integer <= {maximum}, got {value!r}")
    return int(value)


def seed(value: Any, source: str, key: str) -> int:
    """``value`` if it is a seed: an integer in ``[0, 2**32 - 1]``."""
    return count(value, source, key, 0, MAX_SEED)


def flag(value: Any, source: str, key: str) -> bool:
    """``value`` if it is ``true`` or ``false``."""
    if not isinstance(value, bool):
        raise fail(source, key, f"must be true or false, got {value!r}")
    return value


def plain_name(value: Any, source: str, key: str) -> str:
    """``value`` as a name that is also a file or folder name (no ``/``); integers as text."""
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    if (
        not isinstance(value, str)
        or not value.strip()
        or value in (".", "..")
        or any(c in value for c in "/\\\0")
    ):
        raise fail(source, key, f"must be a name usable as a file name (no '/'), got {value!r}")
    return value


def file_problem(path: Path) -> str:
    """What keeps ``path`` from being read as a file (``""`` when it is a regular file)."""
    try:
        if path.is_file():
            return ""
        if path.is_dir():
            return "is a folder, not a file"
        if path.exists():
            return "is not a regular file"
    except OSError as err:
        return f"cannot be read ({err.strerror or err})"
    return "does not exist"


def folder(value: Any, source: str, key: str) -> Path:
    """``value`` as the path of a folder that exists or can be made (nothing is made here)."""
    if isinstance(value, bool) or not isinstance(value, (str, int)) or not str(value).strip():
        raise fail(source, key, f"must be the path of a folder, got {value!r}")
    path = Path(str(value))
    if "\0" in str(value):
        raise fail(source, key, f"must be the path of a folder, got {value!r}")
    try:
        for candidate in (path, *path.parents):
            if candidate.exists() or candidate.is_symlink():
                if not candidate.is_dir():
                    what = "is" if candidate == path else f"lies under {candidate}, which is"
                    raise fail(source, key, f"{path} {what} not a folder")
                if candidate != path and not os.access(candidate, os.W_OK | os.X_OK):
                    raise fail(source, key, f"{path} cannot be made: {candidate} is not writable")
                break
    except OSError as err:
        raise fail(source, key, f"{path} cannot be used as a folder ({err})") from None
    return path


def resolve(path: str | Path, base: Path) -> Path:
    """A path as written, or relative to the configuration's folder when only found there."""
    candidate = Path(path)
    if candidate.is_absolute() or candidate.exists():
        return candidate
    beside = base / candidate
    return beside if beside.exists() else candidate
