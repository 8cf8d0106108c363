"""Chunks of particle events as the processors see them, whatever file they came from.

ROOT files reach a processor as coffea NanoEvents (``BaseSchema``), LHC
Olympics HDF5 files as event arrays of :mod:`rosenblatt.io.lhco`; both become
a :class:`ParticleBatch`, and a :class:`ParticleProcessor` implements only
:meth:`~ParticleProcessor.process_batch`. With ``skip_bad_chunks`` a chunk
whose entries cannot be read is not fatal: it is returned as a record of the
file, the entry range and the reason (``"unreadable"``), so that the events
lost are named and counted, never silently missing.
"""

from __future__ import annotations

import hashlib
import os
from abc import abstractmethod
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import awkward as ak
import numpy as np
from numpy.typing import NDArray

from rosenblatt._extras import optional_imports
from rosenblatt.hep.features import JET_RADIUS, event_table
from rosenblatt.io import EventFileError
from rosenblatt.io.root import PARTICLE_BRANCHES
from rosenblatt.typing import BoolArray, FloatArray, Int64Array

with optional_imports(__name__):
    from coffea import processor

__all__ = [
    "LHCOChunk",
    "ParticleBatch",
    "ParticleProcessor",
    "chunk_file_name",
    "nanoevents_batch",
    "unreadable_chunk",
]

#: label of events from files without a ``label`` branch
UNKNOWN_LABEL = -1


@dataclass(frozen=True)
class ParticleBatch:
    """Consecutive entries ``[start, stop)`` of one file.

    Attributes
    ----------
    particles : awkward.Array
        One jagged list of ``pt, eta, phi`` records per event.
    label, weight, entry : numpy.ndarray
        Per event: truth label (-1 unknown), weight and entry number in ``file``.
    dataset, file : str
        Dataset name and input file.
    start, stop : int
        The entry range the batch was read from.
    """

    particles: ak.Array
    label: NDArray[np.int32]
    weight: FloatArray
    entry: Int64Array
    dataset: str
    file: str
    start: int
    stop: int

    def __len__(self) -> int:
        return len(self.entry)

    def event_table(self, radius: float = JET_RADIUS) -> tuple[ak.Array, dict[str, int]]:
        """The feature table and cut flow of these events (:func:`rosenblatt.hep.features.event_table`)."""
        return event_table(
            self.particles,
            label=self.label,
            weight=self.weight,
            dataset=self.dataset,
            file=self.file,
            entry=self.entry,
            radius=radius,
        )

    def select(self, keep: BoolArray) -> ParticleBatch:
        """The events where ``keep`` is true (same file and entry range)."""
        return ParticleBatch(
            particles=self.particles[keep],
            label=self.label[keep],
            weight=self.weight[keep],
            entry=self.entry[keep],
            dataset=self.dataset,
            file=self.file,
            start=self.start,
            stop=self.stop,
        )


@dataclass(frozen=True)
class LHCOChunk:
    """An entry range ``[start, stop)`` of an LHC Olympics HDF5 file.

    Attributes
    ----------
    dataset : str
        Dataset the file belongs to.
    path : str
        The file, as given.
    start, stop : int
        Entry range.
    """

    dataset: str
    path: str
    start: int
    stop: int


def nanoevents_batch(events: Any) -> ParticleBatch:
    """Read the particle branches, label and weight of a NanoEvents chunk.

    Raises
    ------
    EventFileError
        If a particle branch is missing, or holds NaN or infinite values.
    """
    metadata = events.metadata
    filename = str(metadata["filename"])
    start = int(metadata.get("entrystart", 0))
    missing = [branch for branch in PARTICLE_BRANCHES.values() if branch not in events.fields]
    if missing:
        raise EventFileError(
            f"{filename}: missing branch(es) {missing}; expected the particle branches "
            f"{list(PARTICLE_BRANCHES.values())}; the tree has {sorted(events.fields)}"
        )
    n_events = len(events)
    for branch in PARTICLE_BRANCHES.values():
        bad = ~ak.to_numpy(ak.all(np.isfinite(events[branch]), axis=1))
        if bad.any():
            raise EventFileError(
                f"{filename}: {int(bad.sum())} event(s) have NaN or infinite {branch} "
                f"(first at entry {start + int(np.flatnonzero(bad)[0])}); "
                "the file is damaged or was not written by a generator"
            )
    particles = ak.zip({field: events[branch] for field, branch in PARTICLE_BRANCHES.items()})
    fields = events.fields
    label = (
        ak.to_numpy(events["label"]).astype(np.int32)
        if "label" in fields
        else np.full(n_events, UNKNOWN_LABEL, dtype=np.int32)
    )
    weight = (
        ak.to_numpy(events["weight"]).astype(np.float64)
        if "weight" in fields
        else np.ones(n_events)
    )
    return ParticleBatch(
        particles=ak.materialize(particles),
        label=label,
        weight=weight,
        entry=start + np.arange(n_events, dtype=np.int64),
        dataset=str(metadata["dataset"]),
        file=filename,
        start=start,
        stop=start + n_events,
    )


def lhco_batches(item: LHCOChunk) -> list[ParticleBatch]:
    """Read an entry range of an LHCO HDF5 file as particle batches."""
    from rosenblatt.hep.particles import event_particles
    from rosenblatt.io.lhco import iter_lhco

    return [
        ParticleBatch(
            particles=event_particles(events),
            label=ak.to_numpy(events["label"]).astype(np.int32),
            weight=ak.to_numpy(events["weight"]).astype(np.float64),
            entry=ak.to_numpy(events["entry"]).astype(np.int64),
            dataset=item.dataset,
            file=item.path,
            start=item.start,
            stop=item.stop,
        )
        for events in iter_lhco(item.path, item.stop - item.start, start=item.start, stop=item.stop)
    ]


def unreadable_chunk(
    dataset: str, file: str, start: int, stop: int, error: BaseException
) -> dict[str, Any]:
    """The accumulator of a chunk that could not be read: its file, range and reason."""
    reason = f"{type(error).__name__}: {error}"
    return {
        "unreadable": {file: [(int(start), int(stop), reason)]},
        "cutflow": {dataset: {"unreadable": int(stop - start)}},
    }


def chunk_file_name(dataset: str, file: str, start: int, stop: int) -> str:
    """A name for a per-chunk output file, the same every time the chunk is processed.

    A chunk processed twice (a retried task) writes the same file again, so no
    event is doubled.
    """
    digest = hashlib.sha256(os.fsdecode(file).encode()).hexdigest()[:10]
    return f"{dataset}-{Path(file).stem}-{digest}-{start:012d}-{stop:012d}.parquet"


class ParticleProcessor(processor.ProcessorABC):  # type: ignore[misc]  # coffea: untyped
    """A coffea processor of particle events, from ROOT files or LHCO HDF5 chunks.

    Parameters
    ----------
    skip_bad_chunks : bool, default False
        Return an ``"unreadable"`` record for a chunk whose events cannot be
        read, instead of failing the run.
    """

    def __init__(self, *, skip_bad_chunks: bool = False) -> None:
        self.skip_bad_chunks = skip_bad_chunks

    def process(self, events: Any) -> dict[str, Any]:
        """Return the accumulator of one chunk of NanoEvents (``BaseSchema``)."""
        metadata = events.metadata
        try:
            batch = nanoevents_batch(events)
        except Exception as err:
            if not self.skip_bad_chunks:
                raise
            return unreadable_chunk(
                str(metadata["dataset"]),
                str(metadata["filename"]),
                int(metadata.get("entrystart", 0)),
                int(metadata.get("entrystop", 0)),
                err,
            )
        return self.process_batch(batch)

    def process_lhco(self, item: LHCOChunk) -> dict[str, Any]:
        """Return the accumulator of an entry range of an LHCO HDF5 file."""
        try:
            batches = lhco_batches(item)
        except (EventFileError, OSError) as err:
            if not self.skip_bad_chunks:
                raise
            return unreadable_chunk(item.dataset, item.path, item.start, item.stop, err)
        if not batches:
            raise EventFileError(f"{item.path}: no events in entries [{item.start}, {item.stop})")
        outputs = [self.process_batch(batch) for batch in batches]
        return outputs[0] if len(outputs) == 1 else processor.accumulate(outputs)

    @abstractmethod
    def process_batch(self, batch: ParticleBatch) -> dict[str, Any]:
        """Return the accumulator of one batch of events."""

    def postprocess(self, accumulator: dict[str, Any]) -> dict[str, Any]:
        """Return the merged accumulator unchanged."""
        return accumulator
