"""Checks shared by the study configurations: each failure names the file and the key.

A configuration read by :func:`rosenblatt.config.load_config` is a plain
mapping; the study's configuration class walks it with these checks, so that an
unknown key, a value of the wrong type or a missing file is a
:class:`ConfigError` saying ``<file>: <key>: <what is wrong>``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

__all__ = [
    "ConfigError",
    "check_keys",
    "check_top_level",
    "count",
    "fail",
    "mapping",
    "number",
    "numbers",
    "resolve",
]


class ConfigError(ValueError):
    """A configuration key is unknown, missing or of the wrong type."""


def fail(source: str, key: str, what: str) -> ConfigError:
    """The error for ``key`` of the configuration file ``source``."""
    return ConfigError(f"{source}: {key}: {what}")


def mapping(value: Any, source: str, key: str) -> Mapping[str, Any]:
    """``value`` if it is a mapping."""
    if not isinstance(value, Mapping):
        raise fail(source, key, f"must be a mapping, got {type(value).__name__}")
    return value


def check_keys(entry: Mapping[str, Any], known: Iterable[str], source: str, key: str) -> None:
    """Refuse the keys of ``entry`` that are not in ``known``."""
    allowed = set(known)
    unknown = sorted(set(entry) - allowed)
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
    """``value`` as a float, if it is an int or a float (not a bool)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise fail(source, key, f"must be a number, got {value!r}")
    return float(value)


def numbers(value: Any, source: str, key: str, minimum_length: int = 1) -> tuple[float, ...]:
    """``value`` as a tuple of floats, if it is a list of at least ``minimum_length`` numbers."""
    if not isinstance(value, (list, tuple)) or len(value) < minimum_length:
        raise fail(
            source, key, f"must be a list of at least {minimum_length} number(s), got {value!r}"
        )
    return tuple(number(v, source, key) for v in value)


def count(value: Any, source: str, key: str, minimum: int = 1) -> int:
    """``value`` if it is an integer of at least ``minimum``."""
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise fail(source, key, f"must be an integer >= {minimum}, got {value!r}")
    return value


def resolve(path: str | Path, base: Path) -> Path:
    """A path as written, or relative to the configuration's folder when only found there."""
    candidate = Path(path)
    if candidate.is_absolute() or candidate.exists():
        return candidate
    beside = base / candidate
    return beside if beside.exists() else candidate
