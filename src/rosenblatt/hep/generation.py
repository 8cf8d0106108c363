"""LHC Olympics-like events from Pythia 8: QCD dijets and ``W' -> X Y -> qqqq``.

Events are generated at 13 TeV (:mod:`rosenblatt.hep.pythia_settings`), reduced
to their visible final-state particles (:mod:`rosenblatt.hep.particles`) and
kept when they pass the LHC Olympics trigger (:mod:`rosenblatt.hep.trigger`).
``n_events`` always counts the events that pass.

The work is split into chunks of ``chunk_size`` passing events. Chunk ``i``
has its own Pythia seed, derived from the run seed, the process and ``i`` with
:class:`numpy.random.SeedSequence`, so the events depend on the seed and the
chunk size only, never on the number of worker processes: the same seed gives
the same events. The chunks run in a pool of processes (one per core by
default) or on the workers of a :mod:`dask.distributed` cluster, and are
written in order, one at a time, so that a file of 10^6 events never sits in
memory. An interrupted :func:`generate_file` resumes from the chunks already
in the file: rerunning it with the same settings keeps the complete chunks,
drops a partly written one and writes the rest.
Rerunning it with more events extends the file in the same way, since a chunk
with fewer events is the beginning of the same chunk with more.
The chunks go to a hidden file beside the output (``.<stem>.partial<suffix>``), which
takes the output's name only once it is complete, followed by a record of the
run: its settings and the file's size and content hash
(``<name>.record.json``, :mod:`rosenblatt._records`). A complete file that was
truncated or altered afterwards is named in one line and generated again.

Each chunk records how many events Pythia generated to find its passing
events, and Pythia's cross-section estimate with its error; the file keeps one
record per chunk and the totals (:class:`GenerationSummary`).

This module is the public face: the settings, one chunk and its record live in
:mod:`rosenblatt.hep._generation_chunk`, where the chunks run in
:mod:`rosenblatt.hep._generation_executors`, and the file's partial name,
record and resumption in :mod:`rosenblatt.hep._generation_files`.
"""

from __future__ import annotations

import os
from contextlib import closing
from pathlib import Path
from typing import Any

import awkward as ak

from rosenblatt.hep._generation_chunk import (
    CHUNK_FIELDS,
    GeneratedChunk,
    GenerationSettings,
    GenerationSummary,
    generate_chunk,
)
from rosenblatt.hep._generation_executors import EXECUTORS, executor_name, iter_chunks
from rosenblatt.hep._generation_files import (
    complete_file,
    finish,
    format_tools,
    partial_name,
    record_name,
    resumed_writer,
    reusable_chunks,
)
from rosenblatt.hep.pythia_settings import (
    DEFAULT_CHUNK_SIZE,
    DEFAULT_PTHAT_MIN,
)

__all__ = [
    "CHUNK_FIELDS",
    "DEFAULT_CHUNK_SIZE",
    "EXECUTORS",
    "GeneratedChunk",
    "GenerationSettings",
    "GenerationSummary",
    "executor_name",
    "generate_chunk",
    "generate_events",
    "generate_file",
    "iter_chunks",
    "partial_name",
    "record_name",
]


def generate_events(
    process: str,
    n_events: int,
    seed: int,
    *,
    chunk_size: int = DEFAULT_CHUNK_SIZE,
    pthat_min: float = DEFAULT_PTHAT_MIN,
    workers: int = 1,
    progress: bool = False,
    executor: str | None = None,
    scheduler: str | None = None,
) -> ak.Array:
    """Generate ``n_events`` passing events in memory.

    The events are those :func:`generate_file` writes for the same settings.

    Parameters
    ----------
    process : {"qcd", "wprime"}
        Process to generate.
    n_events : int
        Number of events passing the trigger.
    seed : int
        Run seed.
    chunk_size : int, default :data:`DEFAULT_CHUNK_SIZE`
        Passing events per chunk.
    pthat_min : float, default 1000
        ``PhaseSpace:pTHatMin`` of the ``qcd`` process in GeV.
    workers : int, default 1
        Worker processes (a script using more than one needs the
        ``if __name__ == "__main__":`` guard of :mod:`multiprocessing`).
    progress : bool, default False
        Show a progress bar.
    executor : {"local", "dask"}, optional
        Where the chunks run (:func:`iter_chunks`); default ``"dask"`` when
        ``scheduler`` is given, else ``"local"``.
    scheduler : str, optional
        Address of a running dask scheduler to join.

    Returns
    -------
    awkward.Array
        Event records with jagged ``pt``, ``eta``, ``phi`` (GeV, massless, by
        decreasing ``pt``) and scalar ``label`` and ``weight``.

    Examples
    --------
    >>> events = generate_events("wprime", 5, seed=1)  # doctest: +SKIP
    >>> len(events), ak.fields(events)  # doctest: +SKIP
    (5, ['pt', 'eta', 'phi', 'label', 'weight'])
    """
    from tqdm import tqdm

    settings = GenerationSettings(
        process=process, n_events=n_events, seed=seed, chunk_size=chunk_size, pthat_min=pthat_min
    )
    indices = range(len(settings.chunk_sizes()))
    chunks = []
    with (
        tqdm(total=n_events, unit="event", desc=process, disable=not progress) as bar,
        closing(
            iter_chunks(settings, indices, workers, executor=executor, scheduler=scheduler)
        ) as generated,
    ):
        for chunk in generated:
            chunks.append(chunk.events)
            bar.update(len(chunk.events))
    return chunks[0] if len(chunks) == 1 else ak.concatenate(chunks)


def generate_file(
    path: str | os.PathLike[str],
    process: str,
    n_events: int,
    seed: int,
    *,
    chunk_size: int = DEFAULT_CHUNK_SIZE,
    pthat_min: float = DEFAULT_PTHAT_MIN,
    workers: int | None = None,
    overwrite: bool = False,
    progress: bool = True,
    executor: str | None = None,
    scheduler: str | None = None,
) -> GenerationSummary:
    """Generate ``n_events`` passing events into ``path``, resuming an interrupted run.

    Parameters
    ----------
    path : path-like
        ``.h5``/``.hdf5`` (LHC Olympics layout, :mod:`rosenblatt.io.lhco`) or
        ``.root`` (TTree ``Events``, :mod:`rosenblatt.io.root`).
    process, n_events, seed, chunk_size, pthat_min
        As :func:`generate_events`.
    workers : int, optional
        Worker processes of the pool or of the local dask cluster (default: one
        per core; a script using more than one needs the
        ``if __name__ == "__main__":`` guard of :mod:`multiprocessing`).
    overwrite : bool, default False
        Start over even if ``path`` holds part of this run.
    progress : bool, default True
        Show a progress bar of the passing events.
    executor : {"local", "dask"}, optional
        Where the chunks run (:func:`iter_chunks`); default ``"dask"`` when
        ``scheduler`` is given, else ``"local"``. Either way the chunks are
        written here, in order, and the file is the same.
    scheduler : str, optional
        Address of a running dask scheduler to join (e.g. ``tcp://host:8786``)
        instead of starting a local cluster.

    Returns
    -------
    GenerationSummary
        Totals over all chunks in the file.

    Raises
    ------
    ValueError
        If the extension is not supported, ``path`` exists with other
        settings (use another file or ``overwrite=True``), or the executor is
        unknown or does not go with ``scheduler``.
    rosenblatt.io.EventFileError
        If an existing ``path`` is damaged beyond resuming.
    """
    from tqdm import tqdm

    from rosenblatt.io import event_format

    settings = GenerationSettings(
        process=process, n_events=n_events, seed=seed, chunk_size=chunk_size, pthat_min=pthat_min
    )
    executor = executor_name(executor, scheduler)
    output = Path(path)
    file_format = event_format(output)
    if file_format not in ("lhco", "root"):
        raise ValueError(f"{output}: generation writes .h5, .hdf5 or .root files")
    writer_class, info_of, resume_suffix = format_tools(file_format, output)
    work = partial_name(output)
    record = record_name(output)
    leftovers = [work, work.with_name(work.name + resume_suffix)] if resume_suffix else [work]
    if overwrite:
        for stale in (output, record, *leftovers):
            stale.unlink(missing_ok=True)
    finished = _finished_file(output, leftovers, settings, info_of)
    if finished is not None:
        return finished
    writer = resumed_writer(work, output, leftovers, settings, writer_class, info_of)
    if writer is None:
        writer = writer_class.create(work, settings.to_dict(), CHUNK_FIELDS)
    with (
        writer,
        tqdm(
            total=n_events,
            initial=writer.n_events,
            unit="event",
            desc=f"{process} -> {output.name}",
            disable=not progress,
        ) as bar,
    ):
        n_done = len(writer.chunk_records()["chunk"])
        if n_done:  # a resumed file keeps its totals even when no chunk is left to write
            done = GenerationSummary.from_records(writer.chunk_records())
            writer.write_summary({**done.to_dict(), "complete": done.n_events == n_events})
        indices = range(n_done, len(settings.chunk_sizes()))
        generated = iter_chunks(settings, indices, workers, executor=executor, scheduler=scheduler)
        with closing(generated):
            for chunk in generated:
                writer.append(chunk.events, chunk.record)
                summary = GenerationSummary.from_records(writer.chunk_records())
                writer.write_summary(
                    {**summary.to_dict(), "complete": summary.n_events == n_events}
                )
                bar.update(len(chunk.events))
        summary = GenerationSummary.from_records(writer.chunk_records())
    finish(work, output, record, settings)
    return summary


def _finished_file(
    output: Path, leftovers: list[Path], settings: GenerationSettings, info_of: Any
) -> GenerationSummary | None:
    """The totals of a complete ``output`` of this run, or ``None`` once it is made ready to write.

    A complete file of the same settings and events is kept. One of the same
    settings with fewer events becomes the work file, to be extended; any other
    file (and its record) is removed.
    """
    if not output.exists():
        return None
    record = record_name(output)
    info = complete_file(output, record, settings, info_of)
    if (
        info is not None
        and info["n_events"] == settings.n_events
        and reusable_chunks(output, info, settings) == len(settings.chunk_sizes())
    ):
        return GenerationSummary.from_records(info["chunks"])
    if info is not None:  # more events requested: the file is extended
        for stale in leftovers:
            stale.unlink(missing_ok=True)
        os.replace(output, leftovers[0])
    record.unlink(missing_ok=True)
    output.unlink(missing_ok=True)
    return None
