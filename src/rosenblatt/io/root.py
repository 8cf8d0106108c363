"""ROOT files: a TTree ``Events`` with NanoAOD-like branches, written and read with uproot.

The tree ``Events`` has one entry per event and the branches

=============  ==========  ============================================
``nPart``      int32       number of particles
``Part_pt``    double[]    particle pT in GeV, by decreasing pT
``Part_eta``   double[]    particle pseudorapidity
``Part_phi``   double[]    particle azimuth
``label``      int32       1 signal, 0 background
``weight``     double      event weight
=============  ==========  ============================================

A file made by ``rosenblatt generate`` also holds the TObjString ``settings``
(JSON), a TTree ``Chunks`` with one entry per chunk written (``n_events`` and
the generation counts, cross section in pb) and, once the writing ended, the
TObjString ``summary`` (JSON totals). All are plain ROOT objects that C++ ROOT
reads as well; :func:`root_info` returns them.

The trees are written with uproot's ``mktree``/``extend`` (a TTree, not an
RNTuple) and every ``extend`` leaves a readable file behind.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

import awkward as ak
import numpy as np
from numpy.typing import NDArray

from rosenblatt.io import EventFileError, check_input_file

if TYPE_CHECKING:
    import uproot
    from typing_extensions import Self

__all__ = [
    "CHUNKS_TREE",
    "EVENTS_TREE",
    "PARTICLE_BRANCHES",
    "RootWriter",
    "check_root_events",
    "iter_root",
    "read_root",
    "read_root_nanoevents",
    "root_info",
    "write_root",
]

#: name of the event tree
EVENTS_TREE = "Events"

#: name of the per-chunk bookkeeping tree
CHUNKS_TREE = "Chunks"

#: particle field -> branch
PARTICLE_BRANCHES = {"pt": "Part_pt", "eta": "Part_eta", "phi": "Part_phi"}

#: suffix of the original file while a resumed run copies its complete chunks
RESUME_SUFFIX = ".resume"

_PARTICLE_TYPE = ak.types.from_datashape(
    "var * {pt: float64, eta: float64, phi: float64}", highlevel=False
)


class RootWriter:
    """Append event arrays to the ``Events`` TTree of a ROOT file, chunk by chunk.

    Use :meth:`create` for a new file and :meth:`resume` to continue one.

    Parameters
    ----------
    handle : uproot.WritableDirectory
        The open file (use :meth:`create` or :meth:`resume`).
    settings : mapping
        Settings stored in the file.
    chunk_fields : mapping of str to str
        Per-chunk record fields (with ``n_events``), empty for no ``Chunks`` tree.
    """

    def __init__(
        self,
        handle: uproot.WritableDirectory,
        settings: Mapping[str, Any],
        chunk_fields: Mapping[str, str],
    ) -> None:
        self._handle = handle
        self._settings = dict(settings)
        self._events = handle.mktree(
            EVENTS_TREE,
            {"Part": _PARTICLE_TYPE, "label": np.int32, "weight": np.float64},
            title="events",
        )
        self._chunk_fields = dict(chunk_fields)
        self._chunks = (
            handle.mktree(
                CHUNKS_TREE,
                {name: np.dtype(dtype) for name, dtype in self._chunk_fields.items()},
                title="chunks written",
            )
            if self._chunk_fields
            else None
        )
        self._records: dict[str, list[Any]] = {name: [] for name in self._chunk_fields}
        self._summary: dict[str, Any] = {}
        self._n_events = 0
        self.path = Path(handle.file_path)

    @classmethod
    def create(
        cls,
        path: str | os.PathLike[str],
        settings: Mapping[str, Any] | None = None,
        chunk_fields: Mapping[str, str] | None = None,
    ) -> RootWriter:
        """Create (or overwrite) ``path`` with an empty ``Events`` tree.

        Parameters
        ----------
        path : path-like
            Output ``.root`` file.
        settings : mapping, optional
            JSON-serialisable settings stored as the TObjString ``settings``.
        chunk_fields : mapping of str to str, optional
            Names and numpy dtypes of the per-chunk records passed to
            :meth:`append` (``n_events``, the events of the chunk, is added).
        """
        import uproot  # optional dependency of the ``io`` extra

        handle = uproot.recreate(str(path))
        fields = {"n_events": "int64", **dict(chunk_fields)} if chunk_fields is not None else {}
        try:
            if settings is not None:
                handle["settings"] = json.dumps(dict(settings), sort_keys=True)
            return cls(handle, settings or {}, fields)
        except BaseException:
            handle.close()
            raise

    @classmethod
    def resume(
        cls,
        path: str | os.PathLike[str],
        *,
        max_chunks: int | None = None,
        settings: Mapping[str, Any] | None = None,
    ) -> RootWriter:
        """Reopen ``path`` to append more chunks, keeping its complete chunks only.

        uproot cannot extend a TTree of an existing file, so the complete chunks
        are copied, chunk by chunk, into a new file at ``path``; meanwhile the
        original waits at ``path + ".resume"`` (a later resume starts from it
        again if this one is interrupted) and is removed once copied.

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
            If the file cannot be read or has no ``Chunks`` tree.
        """
        import uproot

        file_path = Path(path)
        original = file_path.with_name(file_path.name + RESUME_SUFFIX)
        if not original.exists():
            check_input_file(file_path)
            os.replace(file_path, original)
        try:
            with uproot.open(str(original)) as source:
                info = _info(source, original)
                if not info["chunks"]:
                    raise EventFileError(
                        f"{file_path}: cannot resume, the file has no {CHUNKS_TREE!r} tree; it "
                        "was not written chunk by chunk by rosenblatt"
                    )
                chunk_fields = {name: str(values.dtype) for name, values in info["chunks"].items()}
                chunk_fields.pop("n_events")
                stored = info["settings"] if settings is None else settings
                writer = cls.create(file_path, stored, chunk_fields)
                try:
                    tree = source[EVENTS_TREE]
                    first = 0
                    n_chunks = len(info["chunks"]["n_events"])
                    if max_chunks is not None:
                        n_chunks = min(n_chunks, max_chunks)
                    for i in range(n_chunks):
                        last = first + int(info["chunks"]["n_events"][i])
                        if last > tree.num_entries:
                            break
                        events = _tree_events(tree, first, last, original)
                        record = {name: info["chunks"][name][i] for name in chunk_fields}
                        writer.append(events, record)
                        first = last
                except BaseException:
                    writer.close()
                    raise
        except EventFileError:
            raise
        except Exception as err:
            raise EventFileError(
                f"{file_path}: cannot resume from {original} ({type(err).__name__}: {err}); "
                "the file is damaged, remove it and start over"
            ) from err
        original.unlink()
        return writer

    @property
    def n_events(self) -> int:
        """Number of events written."""
        return self._n_events

    def settings(self) -> dict[str, Any]:
        """Return the settings stored at creation."""
        return dict(self._settings)

    def chunk_records(self) -> dict[str, NDArray[Any]]:
        """Return the per-chunk records written so far, one array per field."""
        return {
            name: np.asarray(values, dtype=self._chunk_fields[name])
            for name, values in self._records.items()
        }

    def append(self, events: ak.Array, record: Mapping[str, Any] | None = None) -> None:
        """Append events (and their chunk record) to the trees.

        Parameters
        ----------
        events : awkward.Array
            Event records with jagged ``pt``, ``eta``, ``phi`` and scalar
            ``label`` and ``weight``.
        record : mapping, optional
            Values of the chunk fields given at creation.
        """
        particles = ak.zip(
            {name: ak.values_astype(events[name], np.float64) for name in PARTICLE_BRANCHES}
        )
        self._events.extend(
            {
                "Part": particles,
                "label": ak.to_numpy(events.label).astype(np.int32),
                "weight": ak.to_numpy(events.weight).astype(np.float64),
            }
        )
        self._n_events += len(events)
        if self._chunks is not None:
            values = {"n_events": len(events), **dict(record or {})}
            unknown = sorted(set(values) - set(self._chunk_fields))
            missing = sorted(set(self._chunk_fields) - set(values))
            if unknown or missing:
                raise ValueError(
                    f"record: chunk fields {missing} missing and {unknown} unknown; "
                    f"the file records {list(self._chunk_fields)}"
                )
            self._chunks.extend(
                {
                    name: np.asarray([values[name]], dtype=dtype)
                    for name, dtype in self._chunk_fields.items()
                }
            )
            for name in self._chunk_fields:
                self._records[name].append(values[name])

    def write_summary(self, summary: Mapping[str, Any]) -> None:
        """Keep ``summary`` to store as the TObjString ``summary`` when the file is closed."""
        self._summary = dict(summary)

    def close(self) -> None:
        """Write the summary (if any) and close the file."""
        if self._handle.closed:
            return
        if self._summary:
            self._handle["summary"] = json.dumps(self._summary, sort_keys=True)
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


def write_root(path: str | os.PathLike[str], events: ak.Array) -> None:
    """Write an event array to the ``Events`` tree of ``path`` (no generation metadata)."""
    with RootWriter.create(path) as writer:
        writer.append(events)


def root_info(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Return the generation metadata of a ROOT event file.

    Returns
    -------
    dict
        ``n_events`` (entries of ``Events``), ``settings``, ``chunks`` (dict of
        per-chunk arrays) and ``summary`` (dicts, empty when absent).
    """
    with _open(path) as handle:
        return _info(handle, path)


def check_root_events(path: str | os.PathLike[str]) -> int:
    """Open a ROOT event file, check its ``Events`` tree and particle branches, count its events.

    Raises
    ------
    FileNotFoundError
        If the file does not exist.
    EventFileError
        If the file is damaged, lacks the tree or a particle branch, or holds no events.
    """
    with _open(path) as handle:
        n_entries = int(_events_tree(handle, path).num_entries)
    if n_entries == 0:
        raise EventFileError(f"{path}: the tree {EVENTS_TREE!r} holds no events")
    return n_entries


def iter_root(
    path: str | os.PathLike[str],
    chunk_size: int = 10_000,
    *,
    start: int = 0,
    stop: int | None = None,
) -> Iterator[ak.Array]:
    """Iterate over the events of the ``Events`` tree, ``chunk_size`` at a time.

    Parameters
    ----------
    path : path-like
        ROOT file.
    chunk_size : int, default 10000
        Events per yielded array.
    start, stop : int, optional
        Entry range (default: all entries).

    Yields
    ------
    awkward.Array
        Event records ``pt, eta, phi`` (jagged), ``label`` (-1 without a
        ``label`` branch), ``weight`` (1 without a ``weight`` branch), ``entry``.

    Raises
    ------
    FileNotFoundError
        If the file does not exist.
    EventFileError
        If the file is empty, damaged, lacks the tree or a particle branch, or
        holds no events.
    """
    if chunk_size < 1:
        raise ValueError(f"chunk_size: must be a positive number of events, got {chunk_size}")
    with _open(path) as handle:
        tree = _events_tree(handle, path)
        n_entries = int(tree.num_entries)
        if n_entries == 0:
            raise EventFileError(f"{path}: the tree {EVENTS_TREE!r} holds no events")
        stop = n_entries if stop is None else min(stop, n_entries)
        if not 0 <= start <= stop:
            raise ValueError(f"start: entry range [{start}, {stop}) is outside 0..{n_entries}")
        for first in range(start, stop, chunk_size):
            yield _tree_events(tree, first, min(first + chunk_size, stop), path)


def read_root(path: str | os.PathLike[str], *, start: int = 0, stop: int | None = None) -> ak.Array:
    """Read the events ``start:stop`` (default all) of the ``Events`` tree with uproot.

    See :func:`iter_root` for the fields and errors.
    """
    chunks = list(iter_root(path, 100_000, start=start, stop=stop))
    return ak.concatenate(chunks) if len(chunks) > 1 else chunks[0]


def read_root_nanoevents(
    path: str | os.PathLike[str],
    *,
    mode: str = "eager",
    entry_start: int | None = None,
    entry_stop: int | None = None,
) -> Any:
    """Open the ``Events`` tree as coffea NanoEvents with ``BaseSchema``.

    Parameters
    ----------
    path : path-like
        ROOT file.
    mode : {"eager", "virtual", "dask"}, default "eager"
        coffea's loading mode.
    entry_start, entry_stop : int, optional
        Entry range.

    Returns
    -------
    coffea.nanoevents.methods.base.NanoEvents
        Events with the branches as fields (``nPart``, ``Part_pt``, ..., ``label``,
        ``weight``).

    Raises
    ------
    FileNotFoundError, EventFileError
        As :func:`iter_root`.
    """
    from coffea.nanoevents import BaseSchema, NanoEventsFactory

    with _open(path) as handle:
        _events_tree(handle, path)
    factory = NanoEventsFactory.from_root(
        {str(path): EVENTS_TREE},
        schemaclass=BaseSchema,
        mode=mode,
        entry_start=entry_start,
        entry_stop=entry_stop,
    )
    return factory.events()


def _open(path: str | os.PathLike[str]) -> Any:
    import uproot

    file_path = check_input_file(path)
    try:
        return uproot.open(str(file_path))
    except Exception as err:
        raise EventFileError(
            f"{file_path}: not a readable ROOT file (truncated or damaged?): "
            f"{type(err).__name__}: {err}"
        ) from err


def _events_tree(handle: Any, path: Any) -> Any:
    try:
        keys = handle.keys(cycle=False)
        if EVENTS_TREE not in keys:
            raise EventFileError(
                f"{path}: has no tree {EVENTS_TREE!r}; the file holds {sorted(keys)}"
            )
        tree = handle[EVENTS_TREE]
    except EventFileError:
        raise
    except Exception as err:
        raise EventFileError(
            f"{path}: the tree {EVENTS_TREE!r} cannot be read (truncated or damaged?): "
            f"{type(err).__name__}: {err}"
        ) from err
    branches = set(tree.keys())
    missing = [branch for branch in PARTICLE_BRANCHES.values() if branch not in branches]
    if missing:
        raise EventFileError(
            f"{path}: the tree {EVENTS_TREE!r} lacks the branch(es) {missing}; "
            f"it has {sorted(branches)}"
        )
    return tree


def _tree_events(tree: Any, first: int, last: int, path: Any) -> ak.Array:
    branches = set(tree.keys())
    wanted = [*PARTICLE_BRANCHES.values(), *(b for b in ("label", "weight") if b in branches)]
    try:
        arrays = tree.arrays(wanted, entry_start=first, entry_stop=last, library="ak")
    except Exception as err:
        raise EventFileError(
            f"{path}: entries {first} to {last} of {EVENTS_TREE!r} cannot be read "
            f"(truncated or damaged?): {type(err).__name__}: {err}"
        ) from err
    n_events = last - first
    fields: dict[str, Any] = {name: arrays[branch] for name, branch in PARTICLE_BRANCHES.items()}
    fields["label"] = (
        ak.to_numpy(arrays["label"]).astype(np.int32)
        if "label" in branches
        else np.full(n_events, -1, dtype=np.int32)
    )
    fields["weight"] = (
        ak.to_numpy(arrays["weight"]).astype(np.float64)
        if "weight" in branches
        else np.ones(n_events)
    )
    fields["entry"] = np.arange(first, last, dtype=np.int64)
    return ak.zip(fields, depth_limit=1)


def _info(handle: Any, path: Any) -> dict[str, Any]:
    try:
        keys = set(handle.keys(cycle=False))
        n_events = int(handle[EVENTS_TREE].num_entries) if EVENTS_TREE in keys else 0
        settings = json.loads(str(handle["settings"])) if "settings" in keys else {}
        summary = json.loads(str(handle["summary"])) if "summary" in keys else {}
        chunks: dict[str, NDArray[Any]] = {}
        if CHUNKS_TREE in keys:
            chunks = {
                name: np.asarray(values)
                for name, values in handle[CHUNKS_TREE].arrays(library="np").items()
            }
    except Exception as err:
        raise EventFileError(
            f"{path}: the metadata cannot be read (truncated or damaged?): "
            f"{type(err).__name__}: {err}"
        ) from err
    return {"n_events": n_events, "settings": settings, "chunks": chunks, "summary": summary}
