"""The study configurations' files, found and read: :mod:`rosenblatt.studies.config`.

Kept importable here (``from rosenblatt.config import load_config``).
"""

from __future__ import annotations

from rosenblatt.studies.config import (
    DEFAULT_CONFIG,
    MAX_BYTES,
    MAX_VALUES,
    config_dirs,
    find_config,
    known_configs,
    load_config,
    study_configs,
)

__all__ = [
    "DEFAULT_CONFIG",
    "MAX_BYTES",
    "MAX_VALUES",
    "config_dirs",
    "find_config",
    "known_configs",
    "load_config",
    "study_configs",
]
