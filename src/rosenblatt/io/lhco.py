"""The LHC Olympics 2020 R&D HDF5 layout: writer, chunked reader and metadata.

The public ``events_anomalydetection.h5`` is a pandas frame stored under the
key ``df`` in pandas' "fixed" format: one row per event, the integer columns
``0 ... 2099`` holding 700 massless particles as ``(pT, eta, phi)`` triplets
(by decreasing pT, zero padded), then the column ``2100`` with the truth label
(1 signal, 0 background), all float64. Code written for it
(``pandas.read_hdf(path)``, ``df[2100]``, ``h5py.File(path)["df/block0_values"]``)
reads the files written here unchanged: :class:`LHCOWriter` writes the same
nodes, with extendable arrays so that events are appended chunk by chunk.

A file made by ``rosenblatt generate`` also has a group ``generation`` (ignored
by pandas) with the attribute ``settings`` (JSON), the running totals
``n_generated``, ``n_passed``, ``sigma_pb``, ``sigma_err_pb`` as attributes,
and a table ``chunks`` with one row per chunk written; :func:`lhco_info`
returns them.

The reader goes through PyTables, as pandas does, so every compression pandas
reads (zlib, blosc, ...) is read here too, and it reads only the rows asked
for: the 1.1 M-event public file streams chunk by chunk.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

import awkward as ak
import numpy as np
from numpy.typing import NDArray

from rosenblatt.io import EventFileError, check_input_file
from rosenblatt.io._probe import check_opens
from rosenblatt.typing import FloatArray

if TYPE_CHECKING:
    import os

    import tables
    from typing_extensions import Self

__all__ = [
    "DEFAULT_CHUNK_SIZE",
    "KEY",
    "LABEL_COLUMN",
    "N_PARTICLES",
    "LHCOWriter",
    "events_to_rows",
    "iter_lhco",
    "lhco_info",
    "read_lhco",
    "rows_to_events",
    "write_lhco",
]

#: pandas key of the event frame
KEY = "df"

#: particles per event (columns ``3 i, 3 i + 1, 3 i + 2`` hold pT, eta, phi of particle ``i``)
N_PARTICLES = 700

#: name (an integer, as in the public file) of the label column
LABEL_COLUMN = 3 * N_PARTICLES

#: events per chunk of :func:`iter_lhco` (about 170 MB of float64 rows)
DEFAULT_CHUNK_SIZE = 10_000

#: group of the generation metadata
METADATA_GROUP = "generation"

_N_COLUMNS = LABEL_COLUMN + 1
_ROWS_PER_HDF5_CHUNK = 64


def events_to_rows(events: ak.Array) -> FloatArray:
    """Return the ``(n_events, 2101)`` LHCO rows of an event array.

    Parameters
    ----------
    events : awkward.Array
        Records with jagged ``pt``, ``eta``, ``phi`` (by decreasing ``pt``) and
        scalar ``label``.

    Returns
    -------
    numpy.ndarray
        float64 rows: 700 zero-padded ``(pT, eta, phi)`` triplets, then the label.

    Raises
    ------
    ValueError
        If an event has more than 700 particles or a particle has ``pt <= 0``
        (which the layout cannot tell from padding).
    """
    counts = ak.to_numpy(ak.num(events.pt, axis=1))
    too_many = counts > N_PARTICLES
    if too_many.any():
        raise ValueError(
            f"events: {int(too_many.sum())} event(s) have more than {N_PARTICLES} particles "
            f"(up to {int(counts.max())}), which the LHCO layout cannot hold; "
            f"keep the {N_PARTICLES} hardest particles of each event first"
        )
    pt_flat = ak.to_numpy(ak.flatten(events.pt))
    not_positive = ~(pt_flat > 0)
    if not_positive.any():
        n_bad_events = int(ak.sum(ak.any(~(events.pt > 0), axis=1)))
        raise ValueError(
            f"events: {int(not_positive.sum())} particle(s) in {n_bad_events} event(s) have "
            "pt <= 0 or NaN, which the zero-padded LHCO layout cannot store"
        )
    rows = np.zeros((len(counts), _N_COLUMNS), dtype=np.float64)
    event_of_particle = np.repeat(np.arange(len(counts)), counts)
    starts = np.cumsum(counts) - counts
    slot = np.arange(len(pt_flat)) - np.repeat(starts, counts)
    for offset, name in enumerate(("pt", "eta", "phi")):
        values = ak.to_numpy(ak.flatten(events[name])).astype(np.float64)
        rows[event_of_particle, 3 * slot + offset] = values
    rows[:, LABEL_COLUMN] = ak.to_numpy(events.label)
    return rows


def rows_to_events(
    rows: NDArray[np.floating[Any]], first_entry: int = 0, *, source: str = "rows"
) -> ak.Array:
    """Convert LHCO rows into an event array, dropping the zero padding.

    Parameters
    ----------
    rows : numpy.ndarray
        ``(n_events, 2100)`` or ``(n_events, 2101)`` rows (with the label last).
    first_entry : int, default 0
        Entry number of the first row in its file.
    source : str, default "rows"
        Name used in error messages (the file).

    Returns
    -------
    awkward.Array
        Event records ``pt, eta, phi`` (jagged, float64), ``label`` (int32, -1
        without a label column), ``weight`` (1.0) and ``entry`` (int64).

    Raises
    ------
    EventFileError
        If the rows have the wrong number of columns, a negative or NaN pT, or a
        label that is not 0 or 1.
    """
    if rows.ndim != 2 or rows.shape[1] not in (LABEL_COLUMN, _N_COLUMNS):
        raise EventFileError(
            f"{source}: expected {LABEL_COLUMN} particle columns (+ 1 label column) per event, "
            f"got an array of shape {rows.shape}"
        )
    n_events = rows.shape[0]
    triplets = rows[:, :LABEL_COLUMN].reshape(n_events, N_PARTICLES, 3)
    pt = triplets[:, :, 0]
    bad = ~(pt >= 0)
    if bad.any():
        bad_events = np.flatnonzero(bad.any(axis=1))
        raise EventFileError(
            f"{source}: {int(bad.sum())} particle(s) in {len(bad_events)} event(s) have a "
            f"negative or NaN pT (first at entry {first_entry + int(bad_events[0])})"
        )
    present = pt > 0
    counts = present.sum(axis=1)
    fields: dict[str, Any] = {
        name: ak.unflatten(np.ascontiguousarray(triplets[:, :, i][present]), counts)
        for i, name in enumerate(("pt", "eta", "phi"))
    }
    if rows.shape[1] == _N_COLUMNS:
        label_values = rows[:, LABEL_COLUMN]
        bad_label = (label_values != 0) & (label_values != 1)
        if bad_label.any():
            raise EventFileError(
                f"{source}: {int(bad_label.sum())} event(s) have a label other than 0 or 1 "
                f"(first at entry {first_entry + int(np.flatnonzero(bad_label)[0])})"
            )
        fields["label"] = label_values.astype(np.int32)
    else:
        fields["label"] = np.full(n_events, -1, dtype=np.int32)
    fields["weight"] = np.ones(n_events)
    fields["entry"] = np.arange(first_entry, first_entry + n_events, dtype=np.int64)
    return ak.zip(fields, depth_limit=1)


class LHCOWriter:
    """Append event arrays to an LHCO R&D HDF5 file, chunk by chunk.

    Use :meth:`create` for a new file and :meth:`resume` to continue one;
    every :meth:`append` is flushed to disk, so that the file holds whole chunks
    when the writing stops.

    Parameters
    ----------
    handle : tables.File
        The open file (use :meth:`create` or :meth:`resume`).
    """

    def __init__(self, handle: tables.File) -> None:
        self._handle = handle
        self._values = handle.get_node(f"/{KEY}/block0_values")
        self._index = handle.get_node(f"/{KEY}/axis1")
        group = f"/{METADATA_GROUP}"
        self._chunks = handle.get_node(f"{group}/chunks") if f"{group}/chunks" in handle else None
        self.path = Path(handle.filename)

    @classmethod
    def create(
        cls,
        path: str | os.PathLike[str],
        settings: Mapping[str, Any] | None = None,
        chunk_fields: Mapping[str, str] | None = None,
        *,
        compression_level: int = 1,
    ) -> LHCOWriter:
        """Create (or overwrite) ``path`` with an empty LHCO frame.

        Parameters
        ----------
        path : path-like
            Output ``.h5`` file.
        settings : mapping, optional
            JSON-serialisable settings stored in ``generation.settings``.
        chunk_fields : mapping of str to str, optional
            Names and numpy dtypes of the per-chunk records passed to
            :meth:`append` (``n_events``, the events of the chunk, is added).
        compression_level : int, default 1
            zlib level (0 to 9) of the event rows.
        """
        import tables  # optional dependency of the ``io`` extra

        handle = tables.open_file(str(path), mode="w")
        try:
            filters = tables.Filters(complevel=compression_level, complib="zlib", shuffle=True)
            frame = handle.create_group("/", KEY)
            for name, value in {
                "axis0_variety": "regular",
                "axis1_variety": "regular",
                "block0_items_variety": "regular",
                "encoding": "UTF-8",
                "errors": "strict",
                "nblocks": np.int64(1),
                "ndim": np.int64(2),
                "pandas_type": "frame",
            }.items():
                frame._v_attrs[name] = value
            for name in ("axis0", "block0_items"):
                columns = handle.create_carray(
                    frame, name, obj=np.arange(_N_COLUMNS, dtype=np.int64), filters=filters
                )
                _set_index_attrs(columns)
            index = handle.create_earray(
                frame, "axis1", atom=tables.Int64Atom(), shape=(0,), filters=filters
            )
            _set_index_attrs(index)
            values = handle.create_earray(
                frame,
                "block0_values",
                atom=tables.Float64Atom(),
                shape=(0, _N_COLUMNS),
                filters=filters,
                chunkshape=(_ROWS_PER_HDF5_CHUNK, _N_COLUMNS),
            )
            values._v_attrs["transposed"] = True
            if settings is not None or chunk_fields is not None:
                group = handle.create_group("/", METADATA_GROUP)
                group._v_attrs["settings"] = json.dumps(dict(settings or {}), sort_keys=True)
                fields = {"n_events": "int64", **dict(chunk_fields or {})}
                handle.create_table(group, "chunks", description=np.dtype(list(fields.items())))
            handle.flush()
        except BaseException:
            handle.close()
            raise
        return cls(handle)

    @classmethod
    def resume(
        cls,
        path: str | os.PathLike[str],
        *,
        max_chunks: int | None = None,
        settings: Mapping[str, Any] | None = None,
    ) -> LHCOWriter:
        """Open ``path`` to append more chunks, dropping a partly written last chunk.

        The events beyond the last chunk recorded in ``generation/chunks`` (written
        before an interruption could record their chunk) are removed.

        Parameters
        ----------
        path : path-like
            File written chunk by chunk by this writer.
        max_chunks : int, optional
            Keep only the first ``max_chunks`` chunks (default: all).
        settings : mapping, optional
            New settings to store (default: keep the stored ones).

        Raises
        ------
        EventFileError
            If the file is not a resumable LHCO file or holds fewer events than
            its chunk records.
        """
        import tables

        file_path = check_input_file(path)
        check_opens(file_path, "hdf5")
        try:
            handle = tables.open_file(str(file_path), mode="a")
        except Exception as err:
            raise EventFileError(
                f"{file_path}: cannot be opened to resume ({err}); the file is damaged, "
                "remove it or start over"
            ) from err
        try:
            missing = [
                node
                for node in (f"/{KEY}/block0_values", f"/{KEY}/axis1", f"/{METADATA_GROUP}/chunks")
                if node not in handle
            ]
            if missing:
                raise EventFileError(
                    f"{file_path}: cannot resume, the file lacks {missing}; it was not "
                    "written chunk by chunk by rosenblatt"
                )
            writer = cls(handle)
            chunks = handle.get_node(f"/{METADATA_GROUP}/chunks")
            if max_chunks is not None and chunks.nrows > max_chunks:
                chunks.remove_rows(max_chunks)
            sizes = chunks.col("n_events") if chunks.nrows else np.zeros(0, dtype=np.int64)
            expected = int(sizes.sum())
            present = writer._values.nrows
            if present < expected:
                raise EventFileError(
                    f"{file_path}: holds {present} events but its chunk records account "
                    f"for {expected}; the file is damaged"
                )
            if present > expected:
                writer._values.truncate(expected)
                writer._index.truncate(expected)
            if settings is not None:
                handle.get_node(f"/{METADATA_GROUP}")._v_attrs["settings"] = json.dumps(
                    dict(settings), sort_keys=True
                )
            handle.flush()
        except BaseException:
            handle.close()
            raise
        return writer

    @property
    def n_events(self) -> int:
        """Number of events in the file."""
        return int(self._values.nrows)

    def settings(self) -> dict[str, Any]:
        """Return the settings stored at creation (empty without metadata)."""
        return _read_settings(self._handle)

    def chunk_records(self) -> dict[str, NDArray[Any]]:
        """Return the per-chunk records written so far, one array per field."""
        return _read_chunks(self._handle)

    def append(self, events: ak.Array, record: Mapping[str, Any] | None = None) -> None:
        """Append events (and their chunk record) and flush the file.

        Parameters
        ----------
        events : awkward.Array
            Event records with jagged ``pt``, ``eta``, ``phi`` and scalar ``label``.
        record : mapping, optional
            Values of the chunk fields given at creation.
        """
        rows = events_to_rows(events)
        first = self._values.nrows
        self._values.append(rows)
        self._index.append(np.arange(first, first + len(rows), dtype=np.int64))
        self._handle.flush()
        if self._chunks is not None:
            values = {"n_events": len(rows), **dict(record or {})}
            names = self._chunks.colnames
            unknown = sorted(set(values) - set(names))
            missing = sorted(set(names) - set(values))
            if unknown or missing:
                raise ValueError(
                    f"record: chunk fields {missing} missing and {unknown} unknown; "
                    f"the file records {names}"
                )
            self._chunks.append([tuple(values[name] for name in names)])
            self._handle.flush()

    def write_summary(self, summary: Mapping[str, Any]) -> None:
        """Store ``summary`` (numbers and strings) as attributes of the metadata group."""
        group = self._handle.get_node(f"/{METADATA_GROUP}")
        for name, value in summary.items():
            group._v_attrs[name] = value
        self._handle.flush()

    def close(self) -> None:
        """Flush and close the file."""
        if self._handle.isopen:
            self._handle.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()


def write_lhco(path: str | os.PathLike[str], events: ak.Array) -> None:
    """Write an event array to ``path`` in the LHCO R&D layout (no generation metadata)."""
    with LHCOWriter.create(path) as writer:
        writer.append(events)


def lhco_info(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Return the generation metadata of an LHCO file.

    Returns
    -------
    dict
        ``n_events`` (events in the file), ``settings`` (dict, empty without
        metadata), ``chunks`` (dict of per-chunk arrays, empty without metadata)
        and ``summary`` (the running totals, empty without metadata).
    """
    with _open(path) as handle, _damaged(path, "its metadata cannot be read"):
        values = _frame_values(handle, None, path)
        summary: dict[str, Any] = {}
        if f"/{METADATA_GROUP}" in handle:
            attrs = handle.get_node(f"/{METADATA_GROUP}")._v_attrs
            summary = {
                name: _plain(attrs[name]) for name in attrs._v_attrnamesuser if name != "settings"
            }
        return {
            "n_events": int(values.shape[0]),
            "settings": _read_settings(handle),
            "chunks": _read_chunks(handle),
            "summary": summary,
        }


def iter_lhco(
    path: str | os.PathLike[str],
    chunk_size: int = DEFAULT_CHUNK_SIZE,
    *,
    start: int = 0,
    stop: int | None = None,
    key: str | None = None,
) -> Iterator[ak.Array]:
    """Iterate over the events of an LHCO HDF5 file, ``chunk_size`` events at a time.

    Only one chunk of rows is in memory at a time.

    Parameters
    ----------
    path : path-like
        LHCO HDF5 file (the public R&D or black-box files, or one written here).
    chunk_size : int, default :data:`DEFAULT_CHUNK_SIZE`
        Events per yielded array.
    start, stop : int, optional
        Entry range to read (default: the whole file).
    key : str, optional
        pandas key of the frame (default: the only frame in the file).

    Yields
    ------
    awkward.Array
        Event records (see :func:`rows_to_events`).

    Raises
    ------
    FileNotFoundError
        If the file does not exist.
    EventFileError
        If the file is empty, damaged, holds no events or is not in the LHCO layout.
    """
    if chunk_size < 1:
        raise ValueError(f"chunk_size: must be a positive number of events, got {chunk_size}")
    with _open(path) as handle:
        with _damaged(path, "its event frame cannot be read"):
            values = _frame_values(handle, key, path)
            n_rows = int(values.shape[0])
        if n_rows == 0:
            raise EventFileError(f"{path}: holds no events")
        stop = n_rows if stop is None else min(stop, n_rows)
        if not 0 <= start <= stop:
            raise ValueError(f"start: entry range [{start}, {stop}) is outside 0..{n_rows}")
        for first in range(start, stop, chunk_size):
            last = min(first + chunk_size, stop)
            rows = _read_rows(values, first, last, path)
            yield rows_to_events(rows, first, source=str(path))


def read_lhco(
    path: str | os.PathLike[str],
    *,
    start: int = 0,
    stop: int | None = None,
    key: str | None = None,
) -> ak.Array:
    """Read the events ``start:stop`` (default all) of an LHCO HDF5 file.

    See :func:`iter_lhco` for the parameters; use it for files that do not fit
    in memory.
    """
    chunks = list(iter_lhco(path, DEFAULT_CHUNK_SIZE, start=start, stop=stop, key=key))
    if not chunks:
        return rows_to_events(np.zeros((0, _N_COLUMNS)), start, source=str(path))
    return ak.concatenate(chunks) if len(chunks) > 1 else chunks[0]


def _set_index_attrs(node: Any) -> None:
    node._v_attrs["kind"] = "integer"
    node._v_attrs["name"] = None
    node._v_attrs["transposed"] = True


def _open(path: str | os.PathLike[str]) -> tables.File:
    import tables

    file_path = check_input_file(path)
    check_opens(file_path, "hdf5")
    with _damaged(file_path, "not a readable HDF5 file"):
        return tables.open_file(str(file_path), mode="r")


@contextlib.contextmanager
def _damaged(path: Any, what: str) -> Iterator[None]:
    """Report any error of the HDF5 layer inside the block as an :class:`EventFileError`.

    PyTables raises many kinds of error on a damaged file (``HDF5ExtError``,
    ``OSError``, ``SystemError``, ``UnicodeDecodeError``, ...); each is reported
    with the file's name.
    """
    try:
        yield
    except EventFileError:
        raise
    except Exception as err:
        raise EventFileError(
            f"{path}: {what} (truncated or damaged?): {type(err).__name__}: {err}"
        ) from err


def _frame_values(handle: tables.File, key: str | None, path: Any) -> Any:
    """Return the node holding the event rows: ``block0_values`` (fixed) or the table."""
    if key is None:
        frames = [
            group._v_pathname
            for group in handle.walk_groups()
            if "pandas_type" in group._v_attrs._v_attrnamesuser
        ]
        if len(frames) != 1:
            found = [node._v_pathname for node in handle.walk_nodes("/")]
            raise EventFileError(
                f"{path}: expected one pandas frame, found {len(frames)} ({frames}); "
                f"pass key=... (the file holds {found[:20]})"
            )
        group_path = frames[0]
    else:
        group_path = "/" + key.strip("/")
        if group_path not in handle:
            raise EventFileError(f"{path}: has no frame {key!r}")
    group = handle.get_node(group_path)
    if f"{group_path}/block0_values" in handle:
        n_blocks = int(getattr(group._v_attrs, "nblocks", 1))
        if n_blocks != 1:
            raise EventFileError(
                f"{path}: frame {group_path} has {n_blocks} column blocks; the LHCO layout "
                "has one float block of all columns"
            )
        values = handle.get_node(f"{group_path}/block0_values")
        _check_columns(values.shape[1], path, group_path)
        return values
    if f"{group_path}/table" in handle:
        table = handle.get_node(f"{group_path}/table")
        columns = [name for name in table.colnames if name != "index"]
        if columns != ["values_block_0"]:
            raise EventFileError(
                f"{path}: table {group_path} has the columns {columns}; the LHCO layout "
                "has one float block of all columns"
            )
        _check_columns(table.coldescrs["values_block_0"].shape[0], path, group_path)
        return table
    children = sorted(group._v_children)
    raise EventFileError(
        f"{path}: frame {group_path} has neither 'block0_values' nor 'table' (it holds {children})"
    )


def _check_columns(n_columns: int, path: Any, group_path: str) -> None:
    if n_columns not in (LABEL_COLUMN, _N_COLUMNS):
        raise EventFileError(
            f"{path}: frame {group_path} has {n_columns} columns; the LHCO layout has "
            f"{LABEL_COLUMN} particle columns (700 x pT, eta, phi) and optionally the label"
        )


def _read_rows(values: Any, first: int, last: int, path: Any) -> FloatArray:
    import tables

    with _damaged(path, f"entries {first} to {last} cannot be read"):
        if isinstance(values, tables.Table):
            rows = values.read(first, last, field="values_block_0")
        else:
            rows = values[first:last]
        return np.asarray(rows, dtype=np.float64)


def _read_settings(handle: tables.File) -> dict[str, Any]:
    node = f"/{METADATA_GROUP}"
    if node not in handle or "settings" not in handle.get_node(node)._v_attrs:
        return {}
    return dict(json.loads(str(handle.get_node(node)._v_attrs["settings"])))


def _read_chunks(handle: tables.File) -> dict[str, NDArray[Any]]:
    node = f"/{METADATA_GROUP}/chunks"
    if node not in handle:
        return {}
    table = handle.get_node(node)
    data = table.read()
    return {name: np.asarray(data[name]) for name in table.colnames}


def _plain(value: Any) -> Any:
    """Return numpy scalars as Python numbers and strings."""
    return value.item() if isinstance(value, np.generic) else value
