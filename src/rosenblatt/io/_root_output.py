"""What the analysis-layout ROOT writers share: their metadata and their all-or-nothing output.

A file written by :mod:`rosenblatt.io.ntuple` or :mod:`rosenblatt.io.nanoaod`
holds two TObjStrings beside its trees: ``settings`` (JSON, written when the
file is created) and ``summary`` (JSON, written only when the writer closes
after the last event). :func:`read_metadata` returns both.

:func:`replaced_when_complete` gives a writer a temporary file beside the
final one and moves it into place with :func:`os.replace` only when the
writing ends without an error, so that no half-written file ever carries the
final name.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from rosenblatt._atomic import atomic_write
from rosenblatt.io import EventFileError, check_input_file

__all__ = ["SETTINGS_KEY", "SUMMARY_KEY", "read_metadata", "replaced_when_complete"]

#: name of the TObjString with the settings (JSON)
SETTINGS_KEY = "settings"

#: name of the TObjString with the totals (JSON), present once the file is complete
SUMMARY_KEY = "summary"


def read_metadata(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Return the stored settings and summary of a ROOT file and the names it holds.

    Parameters
    ----------
    path : path-like
        ROOT file.

    Returns
    -------
    dict
        ``settings`` and ``summary`` (dicts, empty when absent) and ``keys``
        (sorted names of the objects in the file).

    Raises
    ------
    FileNotFoundError
        If ``path`` does not exist.
    EventFileError
        If the file or its metadata cannot be read.
    """
    import uproot

    file_path = check_input_file(path)
    try:
        with uproot.open(str(file_path)) as handle:
            keys = set(handle.keys(cycle=False))
            settings = json.loads(str(handle[SETTINGS_KEY])) if SETTINGS_KEY in keys else {}
            summary = json.loads(str(handle[SUMMARY_KEY])) if SUMMARY_KEY in keys else {}
    except Exception as err:
        raise EventFileError(
            f"{file_path}: the metadata cannot be read (truncated or damaged?): "
            f"{type(err).__name__}: {err}"
        ) from err
    return {"settings": settings, "summary": summary, "keys": sorted(keys)}


@contextmanager
def replaced_when_complete(path: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; move it to ``path`` if the block succeeds.

    Parameters
    ----------
    path : path-like
        Final file name. Its folder must exist.

    Yields
    ------
    pathlib.Path
        A new, empty file in the same folder (so that the move is atomic), to
        be overwritten by the writer.

    Notes
    -----
    If the block raises (or is interrupted), the temporary file is removed and
    whatever was at ``path`` before stays untouched
    (:func:`rosenblatt._atomic.atomic_write`).
    """
    with atomic_write(path) as temporary:
        yield temporary
