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

With ``output_dir`` the worker writes each chunk's table to a parquet file of
that folder instead, and ``"files"`` lists them: no event row reaches the
driver, and :func:`write_joined_table` streams them into one table in
``(file, entry)`` order.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import awkward as ak
import hist
import numpy as np

from rosenblatt._atomic import atomic_write
from rosenblatt.hep.features import CUTFLOW_STEPS, JET_RADIUS
from rosenblatt.hep.images import IMAGE_BINS
from rosenblatt.processors.events import ParticleBatch, ParticleProcessor, chunk_file_name

__all__ = [
    "DijetProcessor",
    "check_cutflow",
    "chunk_accumulator",
    "empty_table",
    "join_tables",
    "mjj_histogram",
    "write_joined_table",
]


def mjj_histogram() -> hist.Hist[hist.storage.Weight]:
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
            "pt_j1": np.zeros(0),
            "deta_jj": np.zeros(0),
            "mj1": np.zeros(0),
            "mj2": np.zeros(0),
            "tau21_1": np.zeros(0),
            "tau21_2": np.zeros(0),
            "image": ak.from_numpy(
                np.zeros((0, IMAGE_BINS * IMAGE_BINS), dtype=np.float32), regulararray=True
            ),
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


class DijetProcessor(ParticleProcessor):
    """Dijet features, mjj histogram and cut flow of flat particle events.

    Parameters
    ----------
    radius : float, default 1.0
        Anti-kT jet radius.
    output_dir : str, optional
        Write each chunk's table to a parquet file in this folder and return
        the file names instead of the table.
    skip_bad_chunks : bool, default False
        Record unreadable chunks instead of failing.
    """

    def __init__(
        self,
        radius: float = JET_RADIUS,
        *,
        output_dir: str | None = None,
        skip_bad_chunks: bool = False,
    ) -> None:
        super().__init__(skip_bad_chunks=skip_bad_chunks)
        self.radius = radius
        self.output_dir = output_dir

    def process_batch(self, batch: ParticleBatch) -> dict[str, Any]:
        """Return the accumulator of one batch of events."""
        table, cutflow = batch.event_table(self.radius)
        accumulator = chunk_accumulator(table, cutflow, batch.dataset)
        if self.output_dir is not None:
            from rosenblatt.io.parquet import write_parquet

            folder = Path(self.output_dir)
            folder.mkdir(parents=True, exist_ok=True)
            path = folder / chunk_file_name(batch.dataset, batch.file, batch.start, batch.stop)
            write_parquet(table, path)  # complete or not at all
            del accumulator["table"]
            accumulator["files"] = [str(path)]
        return accumulator

    def postprocess(self, accumulator: dict[str, Any]) -> dict[str, Any]:
        """Join the per-chunk tables into one array ordered by ``(file, entry)``."""
        if "table" in accumulator:
            accumulator["table"] = join_tables(accumulator["table"])
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


def write_joined_table(files: Sequence[str], output: str | os.PathLike[str]) -> int:
    """Stream per-chunk parquet tables into one file ordered by ``(file, entry)``.

    Only one chunk is in memory at a time. Returns the number of rows written.

    Raises
    ------
    ValueError
        If two chunks overlap (an event would appear twice).
    """
    import pyarrow.parquet as pq

    def first_key(path: str) -> tuple[str, int, int, int]:
        metadata = pq.ParquetFile(path).metadata
        table = pq.read_table(path, columns=["file", "entry"])
        if table.num_rows == 0:
            return ("", 0, 0, 0)
        entries = table.column("entry").to_numpy()
        return (str(table.column("file")[0]), int(entries[0]), int(entries[-1]), metadata.num_rows)

    ordered = sorted((first_key(path), path) for path in files)
    ordered = [(key, path) for key, path in ordered if key[3] > 0]
    for (before, _), (after, path) in itertools.pairwise(ordered):
        if before[0] == after[0] and before[2] >= after[1]:
            raise ValueError(f"table: chunks of {after[0]} overlap at entry {after[1]} ({path})")
    rows = 0
    writer = None
    with atomic_write(output) as partial:
        try:
            for _, path in ordered:
                table = pq.read_table(path)
                if writer is None:
                    writer = pq.ParquetWriter(partial, table.schema)
                writer.write_table(table)
                rows += table.num_rows
            if writer is None:
                ak.to_parquet(empty_table(), str(partial))
        finally:
            if writer is not None:
                writer.close()
    return rows
