"""Read the per-event feature table into arrays and write score columns back.

A table is a :class:`pandas.DataFrame`, an :class:`awkward.Array` of records,
a :class:`pyarrow.Table`, or the path of a parquet file holding one. The
columns used here are ``mjj``, ``mj1``, ``mj2``, ``tau21_1``, ``tau21_2``,
``image`` (1296 float32 per event: the 36x36 track image, row-major),
``label`` (1 signal, 0 background) and ``weight``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from rosenblatt._awkward import is_awkward
from rosenblatt.hep.images import IMAGE_SHAPE
from rosenblatt.typing import FloatArray, Int64Array

__all__ = [
    "IMAGE_SHAPE",
    "SUBSTRUCTURE_COLUMNS",
    "EventArrays",
    "Table",
    "event_arrays",
    "image_column",
    "load_table",
    "n_events",
    "table_name",
    "with_columns",
]

#: the jet-substructure columns of the gradient-boosting classifier
SUBSTRUCTURE_COLUMNS = ("mj1", "mj2", "tau21_1", "tau21_2")

#: anything :func:`load_table` accepts: a pandas DataFrame, an awkward Array,
#: a pyarrow Table, or a parquet path (``str`` or ``os.PathLike``)
Table = Any


@dataclass(frozen=True)
class EventArrays:
    """The columns of a feature table that the classifiers use, as numpy arrays.

    Attributes
    ----------
    mjj, weight : numpy.ndarray
        float64, shape ``(n,)``.
    label : numpy.ndarray
        int64, shape ``(n,)``, 1 for signal and 0 for background.
    images : numpy.ndarray or None
        float32, shape ``(n, 36, 36)``; ``None`` when not requested.
    substructure : numpy.ndarray or None
        float64, shape ``(n, 4)``: ``mj1, mj2, tau21_1, tau21_2``; ``None``
        when not requested.
    """

    mjj: FloatArray
    label: Int64Array
    weight: FloatArray
    images: NDArray[np.float32] | None = None
    substructure: FloatArray | None = None

    def __len__(self) -> int:
        return len(self.mjj)

    def subset(self, index: NDArray[Any]) -> EventArrays:
        """Return the events selected by ``index`` (integer or boolean array)."""
        return EventArrays(
            mjj=self.mjj[index],
            label=self.label[index],
            weight=self.weight[index],
            images=None if self.images is None else self.images[index],
            substructure=None if self.substructure is None else self.substructure[index],
        )


def _is_path(table: Any) -> bool:
    return isinstance(table, (str, os.PathLike))


def table_name(table: Any, default: str = "table") -> str:
    """Return a name for error messages: the file path, or ``default``."""
    return os.fspath(table) if _is_path(table) else default


def load_table(table: Table) -> Any:
    """Return ``table`` itself, or the :class:`pyarrow.Table` read from a parquet path.

    Raises
    ------
    FileNotFoundError
        If the path does not exist.
    """
    if not _is_path(table):
        return table
    path = Path(table)
    if not path.is_file():
        msg = f"feature table {path} does not exist"
        raise FileNotFoundError(msg)
    import pyarrow.parquet as pq

    return pq.read_table(path)


def _column_names(table: Any) -> list[str]:
    if is_awkward(table):
        return list(table.fields)
    if hasattr(table, "column_names"):  # pyarrow
        return list(table.column_names)
    if hasattr(table, "columns"):  # pandas
        return [str(c) for c in table.columns]
    msg = (
        "a feature table must be a pandas DataFrame, an awkward Array of records, "
        f"a pyarrow Table or a parquet path, got {type(table).__name__}"
    )
    raise TypeError(msg)


def n_events(table: Any) -> int:
    """Number of events (rows) of an in-memory table."""
    if hasattr(table, "num_rows"):
        return int(table.num_rows)
    return len(table)


def _require(table: Any, names: tuple[str, ...], where: str) -> None:
    present = set(_column_names(table))
    missing = [name for name in names if name not in present]
    if missing:
        msg = (
            f"{where} lacks the column(s) {', '.join(missing)} "
            f"(it has: {', '.join(sorted(present)) or 'none'})"
        )
        raise KeyError(msg)


def _flat_column(table: Any, name: str) -> NDArray[Any]:
    if is_awkward(table):
        import awkward as ak

        return np.asarray(ak.to_numpy(table[name]))
    if hasattr(table, "column_names"):
        return np.asarray(table.column(name).to_numpy())
    return np.asarray(table[name].to_numpy())


def _finite_column(table: Any, name: str, where: str) -> FloatArray:
    values = np.array(_flat_column(table, name), dtype=np.float64)  # a writable copy
    bad = ~np.isfinite(values)
    if bad.any():
        msg = (
            f"{where}: column {name} has {int(bad.sum())} NaN or infinite value(s) "
            f"out of {values.size} events (first at row {int(np.flatnonzero(bad)[0])})"
        )
        raise ValueError(msg)
    return values


def image_column(table: Any, where: str = "table") -> NDArray[np.float32]:
    """Return the ``image`` column of an in-memory table as float32 ``(n, 36, 36)``.

    Raises
    ------
    ValueError
        If an event does not have 1296 pixels or has a NaN or infinite pixel;
        the message starts with ``where`` and says how many events are affected.
    """
    n_pixels = IMAGE_SHAPE[0] * IMAGE_SHAPE[1]
    if is_awkward(table):
        import awkward as ak

        lengths = np.asarray(ak.num(table["image"], axis=1))
        flat = np.asarray(ak.to_numpy(ak.flatten(table["image"], axis=None)), dtype=np.float32)
    elif hasattr(table, "column_names"):
        import pyarrow.compute as pc

        column = table.column("image").combine_chunks()
        lengths = np.asarray(pc.list_value_length(column).to_numpy(zero_copy_only=False))
        flat = np.asarray(pc.list_flatten(column).to_numpy(), dtype=np.float32)
    else:
        cells = table["image"].to_numpy()
        lengths = np.fromiter((len(cell) for cell in cells), dtype=np.int64, count=len(cells))
        flat = (
            np.concatenate([np.asarray(cell, dtype=np.float32) for cell in cells])
            if len(cells)
            else np.empty(0, dtype=np.float32)
        )
    wrong = lengths != n_pixels
    if wrong.any():
        msg = (
            f"{where}: column image must hold {n_pixels} pixels per event "
            f"({IMAGE_SHAPE[0]}x{IMAGE_SHAPE[1]}), {int(wrong.sum())} of {len(lengths)} "
            f"events differ (first at row {int(np.flatnonzero(wrong)[0])} with "
            f"{int(lengths[wrong][0])})"
        )
        raise ValueError(msg)
    images = flat.reshape(len(lengths), *IMAGE_SHAPE)
    bad = ~np.isfinite(images).all(axis=(1, 2))
    if bad.any():
        msg = (
            f"{where}: column image has NaN or infinite pixels in {int(bad.sum())} "
            f"of {len(images)} events (first at row {int(np.flatnonzero(bad)[0])})"
        )
        raise ValueError(msg)
    return images


def event_arrays(
    table: Table,
    *,
    images: bool = False,
    substructure: bool = False,
    name: str | None = None,
) -> EventArrays:
    """Extract the classifier inputs of a feature table.

    Parameters
    ----------
    table
        Feature table (see the module docstring).
    images
        Also read the ``image`` column (needed by the CNN).
    substructure
        Also read ``mj1, mj2, tau21_1, tau21_2`` (needed by the gradient boosting).
    name
        Name of the table in error messages (default: its path, or ``"table"``).

    Raises
    ------
    KeyError
        If a needed column is missing.
    ValueError
        If a value is NaN or infinite, a label is not 0 or 1, or an image does
        not have 1296 pixels; the message says how many events are affected.
    """
    where = name or table_name(table)
    loaded = load_table(table)
    needed: tuple[str, ...] = ("mjj", "label", "weight")
    if images:
        needed += ("image",)
    if substructure:
        needed += SUBSTRUCTURE_COLUMNS
    _require(loaded, needed, where)
    label_values = _finite_column(loaded, "label", where)
    not_binary = (label_values != 0) & (label_values != 1)
    if not_binary.any():
        msg = (
            f"{where}: column label must be 0 (background) or 1 (signal), "
            f"{int(not_binary.sum())} of {label_values.size} events are not"
        )
        raise ValueError(msg)
    return EventArrays(
        mjj=_finite_column(loaded, "mjj", where),
        label=label_values.astype(np.int64),
        weight=_finite_column(loaded, "weight", where),
        images=image_column(loaded, where) if images else None,
        substructure=(
            np.column_stack([_finite_column(loaded, c, where) for c in SUBSTRUCTURE_COLUMNS])
            if substructure
            else None
        ),
    )


def with_columns(table: Table, columns: Mapping[str, NDArray[Any]]) -> Any:
    """Add (or replace) per-event columns of a table.

    A pandas DataFrame is changed in place and returned; an awkward Array or
    a pyarrow Table is returned as a new object with the columns; a parquet
    path is rewritten (through a temporary file, so an interruption leaves the
    old file whole) and its path returned.

    Raises
    ------
    ValueError
        If a column does not have one value per event.
    """
    where = table_name(table)
    loaded = load_table(table)
    rows = n_events(loaded)
    for column_name, values in columns.items():
        if len(values) != rows:
            msg = f"column {column_name} has {len(values)} values but {where} has {rows} events"
            raise ValueError(msg)
    if is_awkward(loaded):
        import awkward as ak

        for column_name, values in columns.items():
            loaded = ak.with_field(loaded, np.asarray(values), column_name)
        return loaded
    if hasattr(loaded, "column_names"):
        import pyarrow as pa

        for column_name, values in columns.items():
            array = pa.array(np.asarray(values))
            if column_name in loaded.column_names:
                index = loaded.column_names.index(column_name)
                loaded = loaded.set_column(index, column_name, array)
            else:
                loaded = loaded.append_column(column_name, array)
        if not _is_path(table):
            return loaded
        import pyarrow.parquet as pq

        path = Path(table)
        temporary = path.with_name(f".{path.name}.partial")
        pq.write_table(loaded, temporary)
        os.replace(temporary, path)
        return table
    for column_name, values in columns.items():
        loaded[column_name] = np.asarray(values)
    return loaded
