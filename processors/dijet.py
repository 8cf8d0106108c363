"""The coffea processor of the dijet study: event table, mjj histogram and cut flow.

:class:`DijetProcessor` reads flat NanoAOD-like events (``BaseSchema``) with the
particle branches ``Part_pt``, ``Part_eta``, ``Part_phi`` and the event
branches ``label`` and ``weight`` (a file without them gives label -1 and
weight 1), as written by ``rosenblatt generate``. For each chunk it computes
the event table of :func:`rosenblatt.hep.features.event_table` and returns the
accumulator

``"table"``
    list of awkward record arrays with the columns
    :data:`~rosenblatt.hep.features.TABLE_COLUMNS`, one per chunk; lists add by
    concatenation, and :meth:`DijetProcessor.postprocess` joins them into one
    array ordered by ``(file, entry)``, whatever the order the chunks finished in;
``"mjj"``
    :class:`hist.Hist` of the dijet mass per dataset (weighted);
``"cutflow"``
    ``{dataset: {step: events}}`` with the steps
    :data:`~rosenblatt.hep.features.CUTFLOW_STEPS`; dicts of counts add, and in
    every dataset ``read = fewer than two jets + in table``.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from typing import Any

import awkward as ak
import hist
import numpy as np
from coffea import processor

from rosenblatt.hep.features import CUTFLOW_STEPS, JET_RADIUS, event_table

__all__ = [
    "PARTICLE_BRANCHES",
    "DijetProcessor",
    "check_cutflow",
    "chunk_accumulator",
    "empty_table",
    "join_tables",
    "mjj_histogram",
]

#: particle field -> branch of the ``Events`` tree
PARTICLE_BRANCHES = {"pt": "Part_pt", "eta": "Part_eta", "phi": "Part_phi"}

#: label of events from files without a ``label`` branch
UNKNOWN_LABEL = -1


def mjj_histogram() -> hist.Hist:
    """Return an empty weighted histogram of the dijet mass per dataset."""
    return hist.Hist(
        hist.axis.StrCategory([], name="dataset", label="Dataset", growth=True),
        hist.axis.Regular(200, 0.0, 10_000.0, name="mjj", label=r"$m_{jj}$ [GeV]"),
        storage=hist.storage.Weight(),
    )


def empty_table() -> ak.Array:
    """Return an event table without rows, with the columns and types of a full one."""
    return ak.zip(
        {
            "mjj": np.zeros(0),
            "mj1": np.zeros(0),
            "mj2": np.zeros(0),
            "tau21_1": np.zeros(0),
            "tau21_2": np.zeros(0),
            "image": ak.from_numpy(np.zeros((0, 1296), dtype=np.float32), regulararray=True),
            "label": np.zeros(0, dtype=np.int32),
            "weight": np.zeros(0),
            "dataset": ak.Array([""])[:0],
            "file": ak.Array([""])[:0],
            "entry": np.zeros(0, dtype=np.int64),
        },
        depth_limit=1,
    )


def join_tables(tables: Iterable[ak.Array]) -> ak.Array:
    """Join per-chunk event tables into one, ordered by ``(file, entry)``.

    Each chunk holds consecutive entries of a single file in increasing order,
    so ordering the chunks by their first ``(file, entry)`` orders the rows.

    Raises
    ------
    ValueError
        If two chunks overlap (an event would appear twice).
    """
    chunks = sorted(
        (table for table in tables if len(table) > 0),
        key=lambda table: (str(table["file"][0]), int(table["entry"][0])),
    )
    if not chunks:
        return empty_table()
    for before, after in itertools.pairwise(chunks):
        same_file = str(before["file"][-1]) == str(after["file"][0])
        if same_file and int(before["entry"][-1]) >= int(after["entry"][0]):
            raise ValueError(
                f"table: chunks of {after['file'][0]} overlap at entry {int(after['entry'][0])}"
            )
    return ak.to_packed(ak.concatenate(chunks)) if len(chunks) > 1 else chunks[0]


class DijetProcessor(processor.ProcessorABC):
    """Dijet features, mjj histogram and cut flow of flat particle events.

    Parameters
    ----------
    radius : float, default 1.0
        Anti-kT jet radius.
    """

    def __init__(self, radius: float = JET_RADIUS) -> None:
        self.radius = radius

    def process(self, events: Any) -> dict[str, Any]:
        """Return the accumulator of one chunk of events (``BaseSchema`` NanoEvents).

        Raises
        ------
        ValueError
            If a particle branch is missing.
        """
        metadata = events.metadata
        dataset = str(metadata["dataset"])
        filename = str(metadata["filename"])
        missing = [branch for branch in PARTICLE_BRANCHES.values() if branch not in events.fields]
        if missing:
            raise ValueError(
                f"{filename}: missing branch(es) {missing}; expected the particle branches "
                f"{list(PARTICLE_BRANCHES.values())}; the tree has {sorted(events.fields)}"
            )
        n_events = len(events)
        first_entry = int(metadata.get("entrystart", 0))
        for branch in PARTICLE_BRANCHES.values():
            bad = ~ak.to_numpy(ak.all(np.isfinite(events[branch]), axis=1))
            if bad.any():
                raise ValueError(
                    f"{filename}: {int(bad.sum())} event(s) have NaN or infinite {branch} "
                    f"(first at entry {first_entry + int(np.flatnonzero(bad)[0])}); "
                    "the file is damaged or was not written by a generator"
                )
        particles = ak.zip({field: events[branch] for field, branch in PARTICLE_BRANCHES.items()})
        label = (
            ak.to_numpy(events["label"])
            if "label" in events.fields
            else np.full(n_events, UNKNOWN_LABEL)
        )
        weight = ak.to_numpy(events["weight"]) if "weight" in events.fields else np.ones(n_events)
        entry = int(metadata.get("entrystart", 0)) + np.arange(n_events, dtype=np.int64)
        table, cutflow = event_table(
            particles,
            label=label,
            weight=weight,
            dataset=dataset,
            file=filename,
            entry=entry,
            radius=self.radius,
        )
        return chunk_accumulator(table, cutflow, dataset)

    def postprocess(self, accumulator: dict[str, Any]) -> dict[str, Any]:
        """Join the per-chunk tables into one array ordered by ``(file, entry)``."""
        accumulator["table"] = join_tables(accumulator.get("table", []))
        return accumulator


def chunk_accumulator(table: ak.Array, cutflow: dict[str, int], dataset: str) -> dict[str, Any]:
    """Return the accumulator of one chunk from its event table and cut flow."""
    mjj = mjj_histogram()
    mjj.fill(dataset=dataset, mjj=ak.to_numpy(table["mjj"]), weight=ak.to_numpy(table["weight"]))
    return {
        "table": [table],
        "mjj": mjj,
        "cutflow": {dataset: {step: int(cutflow[step]) for step in CUTFLOW_STEPS}},
    }


def check_cutflow(cutflow: dict[str, dict[str, int]]) -> None:
    """Raise if, in some dataset, the events read differ from those counted after.

    Raises
    ------
    RuntimeError
        If ``read != fewer than two jets + in table`` for a dataset.
    """
    read, *steps = CUTFLOW_STEPS
    for dataset, counts in cutflow.items():
        accounted = sum(counts[step] for step in steps)
        if counts[read] != accounted:
            raise RuntimeError(
                f"cut flow of {dataset!r}: {counts[read]} events read but {accounted} accounted for"
            )
