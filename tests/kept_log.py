"""The package's log messages of a block kept in a file, for fixtures of module or session scope.

pytest's ``caplog`` is a function-scoped fixture: a fixture that runs a study once for a
module keeps the study's log with :func:`kept_log` instead, and its tests read the file.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def kept_log(path: Path, level: int = logging.INFO) -> Iterator[None]:
    """Write the messages of logger ``rosenblatt`` at ``level`` or above to ``path``.

    Parameters
    ----------
    path
        The file written, one message a line.
    level
        The lowest level kept.
    """
    logger = logging.getLogger("rosenblatt")
    handler = logging.FileHandler(path, encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(message)s"))
    handler.setLevel(level)
    previous = logger.level
    logger.addHandler(handler)
    logger.setLevel(level)
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(previous)
        handler.close()
