"""Parquet files of awkward arrays: particle tables and per-event feature tables.

Any awkward array of records (jagged fields included) is written with
:func:`awkward.to_parquet` (completely or not at all: under a temporary name,
then renamed) and read back with :func:`awkward.from_parquet`,
whole (:func:`read_parquet`) or one row group at a time (:func:`iter_parquet`).
Particle records (``pt``, ``eta``, ``phi``) are checked to hold as many of each
per event, and read without an ``entry`` field get one, the row number in the
file, as the ROOT and LHCO readers give it.
The readers check the file and the requested columns first and say what is
wrong: a missing file, a damaged one, a column that is not there (listing the
ones that are), or no rows.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import awkward as ak
import numpy as np

from rosenblatt._atomic import atomic_write
from rosenblatt.io import EventFileError, check_input_file
from rosenblatt.io._probe import check_opens

if TYPE_CHECKING:
    import os

__all__ = ["iter_parquet", "parquet_columns", "read_parquet", "write_parquet"]


def write_parquet(
    array: ak.Array, path: str | os.PathLike[str], *, row_group_size: int = 100_000
) -> None:
    """Write an awkward array of records to ``path``.

    Parameters
    ----------
    array : awkward.Array
        Records (one per row); fields may be jagged.
    path : path-like
        Output ``.parquet`` file.
    row_group_size : int, default 100000
        Rows per row group (the unit :func:`iter_parquet` reads).

    Raises
    ------
    ValueError
        If ``array`` has no fields.
    """
    if not ak.fields(array):
        raise ValueError(f"array: expected records with named fields, got type {array.type}")
    with atomic_write(path) as temporary:
        ak.to_parquet(array, str(temporary), row_group_size=row_group_size)


def parquet_columns(path: str | os.PathLike[str]) -> list[str]:
    """Return the top-level column names of a parquet file.

    Raises
    ------
    FileNotFoundError
        If the file does not exist.
    EventFileError
        If it is empty or not a readable parquet file.
    """
    return list(_metadata(Path(path))["form"].fields)


def read_parquet(path: str | os.PathLike[str], *, columns: Sequence[str] | None = None) -> ak.Array:
    """Read a parquet file (or the given top-level columns) into an awkward array.

    Parameters
    ----------
    path : path-like
        ``.parquet`` file or directory of parquet files.
    columns : sequence of str, optional
        Top-level columns to read (default: all).

    Raises
    ------
    FileNotFoundError
        If the file does not exist.
    EventFileError
        If the file is empty, damaged, lacks a requested column or holds no rows.
    """
    file_path = check_input_file(path, allow_directory=True)
    metadata = _metadata(file_path)
    selected = _check_columns(file_path, metadata, columns)
    if metadata["num_rows"] == 0:
        raise EventFileError(f"{file_path}: holds no rows")
    try:
        rows = ak.from_parquet(str(file_path), columns=selected)
    except Exception as err:
        raise EventFileError(
            f"{file_path}: cannot be read (truncated or damaged?): {type(err).__name__}: {err}"
        ) from err
    return _as_events(rows, 0, file_path)


def iter_parquet(
    path: str | os.PathLike[str],
    chunk_size: int | None = None,
    *,
    columns: Sequence[str] | None = None,
) -> Iterator[ak.Array]:
    """Iterate over the row groups of a parquet file.

    Parameters
    ----------
    path : path-like
        ``.parquet`` file or directory of parquet files.
    chunk_size : int, optional
        Ignored: the chunks are the file's row groups (set when writing, see
        :func:`write_parquet`); accepted so that all readers share one signature.
    columns : sequence of str, optional
        Top-level columns to read (default: all).

    Yields
    ------
    awkward.Array
        The rows of one row group.

    Raises
    ------
    FileNotFoundError, EventFileError
        As :func:`read_parquet`.
    """
    file_path = check_input_file(path, allow_directory=True)
    metadata = _metadata(file_path)
    selected = _check_columns(file_path, metadata, columns)
    if metadata["num_rows"] == 0:
        raise EventFileError(f"{file_path}: holds no rows")
    first_rows = [0, *itertools.accumulate(metadata["col_counts"])]
    for group in range(int(metadata["num_row_groups"])):
        try:
            rows = ak.from_parquet(str(file_path), columns=selected, row_groups=[group])
        except Exception as err:
            raise EventFileError(
                f"{file_path}: row group {group} cannot be read (truncated or damaged?): "
                f"{type(err).__name__}: {err}"
            ) from err
        yield _as_events(rows, first_rows[group], file_path)


def _as_events(rows: ak.Array, first: int, file_path: Path) -> ak.Array:
    """Particle records checked for one ``pt``, ``eta``, ``phi`` each, numbered as ``entry``.

    Other records are returned as they are.
    """
    fields = rows.fields
    if not {"pt", "eta", "phi"} <= set(fields):
        return rows
    counts = ak.to_numpy(ak.num(rows.pt, axis=1))
    for name in ("eta", "phi"):
        mismatched = counts != ak.to_numpy(ak.num(rows[name], axis=1))
        if mismatched.any():
            raise EventFileError(
                f"{file_path}: {int(mismatched.sum())} event(s) have a different number of pt and "
                f"{name} values (first at row {first + int(np.flatnonzero(mismatched)[0])}); the "
                "file is damaged"
            )
    if "entry" not in fields:
        rows = ak.with_field(rows, np.arange(first, first + len(rows), dtype=np.int64), "entry")
    return rows


def _metadata(file_path: Path) -> Any:
    check_input_file(file_path, allow_directory=True)
    check_opens(file_path, "parquet")
    try:
        return ak.metadata_from_parquet(str(file_path))
    except Exception as err:
        raise EventFileError(
            f"{file_path}: not a readable parquet file (truncated or damaged?): "
            f"{type(err).__name__}: {err}"
        ) from err


def _check_columns(
    file_path: Path, metadata: Any, columns: Sequence[str] | None
) -> list[str] | None:
    if columns is None:
        return None
    available = list(metadata["form"].fields)
    missing = [name for name in columns if name not in available]
    if missing:
        raise EventFileError(f"{file_path}: no column(s) {missing}; the file has {available}")
    return list(columns)
