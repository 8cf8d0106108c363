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
"""

from __future__ import annotations

import dataclasses
import logging
import multiprocessing
import os
from collections import deque
from collections.abc import Generator, Iterable, Iterator, Mapping
from contextlib import closing, contextmanager
from dataclasses import dataclass
from importlib import metadata
from itertools import islice
from pathlib import Path
from typing import TYPE_CHECKING, Any

import awkward as ak
import numpy as np
from numpy.typing import NDArray

from rosenblatt._interrupt import ignore_interrupt, workers_ignore_interrupt
from rosenblatt.hep.particles import (
    ETA_MAX,
    MAX_PARTICLES,
    PT_MIN,
    make_events,
    visible_final_state,
)
from rosenblatt.hep.pythia_settings import (
    CENTER_OF_MASS_ENERGY,
    DEFAULT_CHUNK_SIZE,
    DEFAULT_PTHAT_MIN,
    PROCESS_LABELS,
    PYTHIA_SEED_MAX,
    pythia_settings,
)
from rosenblatt.hep.trigger import TRIGGER_PT_MIN, TRIGGER_RADIUS, passes_trigger

if TYPE_CHECKING:
    from distributed import Client, Future, LocalCluster

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
]

log = logging.getLogger("rosenblatt.generation")

#: per-chunk record written to the file (besides ``n_events``, the passing events)
CHUNK_FIELDS: dict[str, str] = {
    "chunk": "int64",
    "pythia_seed": "int64",
    "n_generated": "int64",
    "sigma_pb": "float64",
    "sigma_err_pb": "float64",
    "n_truncated_events": "int64",
    "n_dropped_particles": "int64",
}

#: Pythia cross sections are in mb
_PB_PER_MB = 1e9
#: events per ``nextBatch`` call: bounds the memory of the full event records
_MIN_BATCH, _MAX_BATCH = 20, 200
#: a chunk gives up when this many generated events gave no passing event
_ZERO_PASS_LIMIT = 5000
#: where the chunks run: a local pool of processes or a dask cluster
EXECUTORS = ("local", "dask")
#: chunks a dask run has submitted or finished ahead of the writer, per worker thread
_DASK_CHUNKS_PER_THREAD = 2


@dataclass(frozen=True)
class GenerationSettings:
    """Everything that determines the generated events.

    Parameters
    ----------
    process : {"qcd", "wprime"}
        Process to generate.
    n_events : int
        Number of events passing the trigger.
    seed : int
        Run seed (non-negative); each chunk derives its Pythia seed from it.
    chunk_size : int, default :data:`DEFAULT_CHUNK_SIZE`
        Passing events per chunk.
    pthat_min : float, default 1000
        ``PhaseSpace:pTHatMin`` of the ``qcd`` process in GeV.
    eta_max : float, default 2.5
        Particle acceptance ``|eta| < eta_max``.
    pt_min : float, default 0.5
        Particle threshold ``pt > pt_min`` in GeV.
    max_particles : int, default 700
        Particles kept per event (the hardest).
    trigger_pt_min : float, default 1200
        Trigger threshold on the leading jet pT in GeV.
    trigger_radius : float, default 1.0
        Anti-kT radius of the trigger jets.
    """

    process: str
    n_events: int
    seed: int
    chunk_size: int = DEFAULT_CHUNK_SIZE
    pthat_min: float = DEFAULT_PTHAT_MIN
    eta_max: float = ETA_MAX
    pt_min: float = PT_MIN
    max_particles: int = MAX_PARTICLES
    trigger_pt_min: float = TRIGGER_PT_MIN
    trigger_radius: float = TRIGGER_RADIUS

    def __post_init__(self) -> None:
        if self.process not in PROCESS_LABELS:
            raise ValueError(
                f"process: unknown process {self.process!r}; choose one of {sorted(PROCESS_LABELS)}"
            )
        for name, minimum in (("n_events", 1), ("seed", 0), ("chunk_size", 1)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
                raise TypeError(f"{name}: must be an integer, got {value!r}")
            if value < minimum:
                raise ValueError(f"{name}: must be at least {minimum}, got {value}")
        if not self.max_particles >= 1:
            raise ValueError(f"max_particles: must be at least 1, got {self.max_particles}")
        for name in ("pthat_min", "eta_max", "trigger_radius"):
            if not float(getattr(self, name)) > 0:
                raise ValueError(f"{name}: must be a positive number, got {getattr(self, name)!r}")
        if not float(self.pt_min) >= 0:
            raise ValueError(f"pt_min: must be >= 0 GeV, got {self.pt_min!r}")
        if not float(self.trigger_pt_min) >= 0:
            raise ValueError(f"trigger_pt_min: must be >= 0 GeV, got {self.trigger_pt_min!r}")

    @property
    def label(self) -> int:
        """Truth label of the process (1 signal, 0 background)."""
        return PROCESS_LABELS[self.process]

    def chunk_sizes(self) -> list[int]:
        """Return the number of passing events of each chunk."""
        full, rest = divmod(self.n_events, self.chunk_size)
        return [self.chunk_size] * full + ([rest] if rest else [])

    def chunk_seed(self, index: int) -> int:
        """Return the Pythia seed of chunk ``index`` (1 to 900 000 000)."""
        sequence = np.random.SeedSequence(entropy=self.seed, spawn_key=(self.label, index))
        return int(sequence.generate_state(1, dtype=np.uint32)[0]) % PYTHIA_SEED_MAX + 1

    def to_dict(self) -> dict[str, Any]:
        """Return the settings with the generator version and beam energy (JSON-ready)."""
        return {
            **dataclasses.asdict(self),
            "label": self.label,
            "center_of_mass_energy": CENTER_OF_MASS_ENERGY,
            "generator": f"pythia8mc {metadata.version('pythia8mc')}",
        }


@dataclass(frozen=True)
class GeneratedChunk:
    """The passing events of one chunk and its record.

    Attributes
    ----------
    index : int
        Chunk number.
    events : awkward.Array
        Event records ``pt, eta, phi, label, weight``.
    record : dict
        Values of :data:`CHUNK_FIELDS`.
    """

    index: int
    events: ak.Array
    record: dict[str, Any]


@dataclass(frozen=True)
class GenerationSummary:
    """Totals over the chunks of a run.

    Attributes
    ----------
    n_events : int
        Events passing the trigger.
    n_generated : int
        Events Pythia generated to find them.
    n_chunks : int
        Chunks written.
    sigma_pb, sigma_err_pb : float
        Pythia's cross section of the generated process and its statistical
        error in pb: the per-chunk estimates averaged with the chunks'
        generated events as weights.
    n_truncated_events : int
        Passing events that had more than ``max_particles`` particles.
    n_dropped_particles : int
        Particles those events lost to the limit.
    """

    n_events: int
    n_generated: int
    n_chunks: int
    sigma_pb: float
    sigma_err_pb: float
    n_truncated_events: int
    n_dropped_particles: int

    @property
    def efficiency(self) -> float:
        """Fraction of the generated events that pass the trigger."""
        return self.n_events / self.n_generated if self.n_generated else float("nan")

    @classmethod
    def from_records(cls, records: Mapping[str, NDArray[Any]]) -> GenerationSummary:
        """Sum the per-chunk records (as written by :func:`generate_file`)."""
        n_generated = np.asarray(records.get("n_generated", []), dtype=np.float64)
        total = float(n_generated.sum())
        sigma = np.asarray(records.get("sigma_pb", []), dtype=np.float64)
        error = np.asarray(records.get("sigma_err_pb", []), dtype=np.float64)
        return cls(
            n_events=int(np.sum(records.get("n_events", []))),
            n_generated=int(total),
            n_chunks=len(n_generated),
            sigma_pb=float(np.dot(n_generated, sigma) / total) if total else float("nan"),
            sigma_err_pb=float(np.sqrt(np.sum((n_generated * error) ** 2)) / total)
            if total
            else float("nan"),
            n_truncated_events=int(np.sum(records.get("n_truncated_events", []))),
            n_dropped_particles=int(np.sum(records.get("n_dropped_particles", []))),
        )

    def to_dict(self) -> dict[str, Any]:
        """Return the totals and the trigger efficiency as a dict."""
        return {
            "n_passed": self.n_events,
            "n_generated": self.n_generated,
            "n_chunks": self.n_chunks,
            "efficiency": self.efficiency,
            "sigma_pb": self.sigma_pb,
            "sigma_err_pb": self.sigma_err_pb,
            "n_truncated_events": self.n_truncated_events,
            "n_dropped_particles": self.n_dropped_particles,
        }


def generate_chunk(settings: GenerationSettings, index: int) -> GeneratedChunk:
    """Generate the passing events of chunk ``index``.

    Pythia is set up with the chunk's seed and runs until the chunk has its
    number of passing events; the generated count stops at the last of them.

    Raises
    ------
    RuntimeError
        If Pythia rejects a setting or fails to initialise, or if the first
        5000 generated events give no passing event.
    """
    import pythia8mc  # optional dependency of the ``hep`` extra

    target = settings.chunk_sizes()[index]
    pythia_seed = settings.chunk_seed(index)
    pythia = pythia8mc.Pythia("", False)
    for line in pythia_settings(settings.process, pythia_seed, settings.pthat_min):
        if not pythia.readString(line):
            raise RuntimeError(f"Pythia rejected the setting {line!r}")
    if not pythia.init():
        raise RuntimeError(f"Pythia failed to initialise {settings.process!r}")

    pieces: list[ak.Array] = []
    weights: list[NDArray[np.float64]] = []
    dropped: list[NDArray[np.int64]] = []
    n_generated = n_passed = 0
    while n_passed < target:
        needed = target - n_passed
        efficiency = max(n_passed, 1) / n_generated if n_generated else 0.5
        batch_size = int(np.clip(np.ceil(1.2 * needed / efficiency), _MIN_BATCH, _MAX_BATCH))
        batch = pythia.nextBatch(batch_size)
        visible = visible_final_state(
            batch, settings.eta_max, settings.pt_min, settings.max_particles
        )
        passed = np.flatnonzero(
            passes_trigger(visible.particles, settings.trigger_pt_min, settings.trigger_radius)
        )
        if len(passed) >= needed:
            passed = passed[:needed]
            n_generated += int(passed[-1]) + 1
        else:
            n_generated += len(batch)
        n_passed += len(passed)
        pieces.append(visible.particles[passed])
        weights.append(
            ak.to_numpy(ak.fill_none(ak.firsts(batch.info.weights[passed]), 1.0)).astype(np.float64)
        )
        dropped.append(visible.n_dropped[passed])
        if n_passed == 0 and n_generated >= _ZERO_PASS_LIMIT:
            raise RuntimeError(
                f"chunk {index}: none of {n_generated} generated {settings.process!r} events "
                f"passed the trigger (leading jet pT > {settings.trigger_pt_min:g} GeV); "
                "raise pthat_min"
            )
    info = pythia.infoPython()
    n_dropped = np.concatenate(dropped)
    events = make_events(ak.concatenate(pieces), settings.label, np.concatenate(weights))
    record = {
        "chunk": index,
        "pythia_seed": pythia_seed,
        "n_generated": n_generated,
        "sigma_pb": float(info.sigmaGen()) * _PB_PER_MB,
        "sigma_err_pb": float(info.sigmaErr()) * _PB_PER_MB,
        "n_truncated_events": int((n_dropped > 0).sum()),
        "n_dropped_particles": int(n_dropped.sum()),
    }
    return GeneratedChunk(index=index, events=ak.to_packed(events), record=record)


def _generate_chunk_task(task: tuple[GenerationSettings, int]) -> GeneratedChunk:
    return generate_chunk(*task)


def executor_name(executor: str | None, scheduler: str | None) -> str:
    """Return the executor a run uses and check that it goes with ``scheduler``.

    Parameters
    ----------
    executor : {"local", "dask"} or None
        Requested executor; None means ``"dask"`` when a scheduler is given
        and ``"local"`` otherwise.
    scheduler : str or None
        Address of a running dask scheduler.

    Returns
    -------
    str
        ``"local"`` or ``"dask"``.

    Raises
    ------
    ValueError
        If ``executor`` is not one of :data:`EXECUTORS`, or a scheduler is
        given with the ``"local"`` executor.
    """
    if executor is None:
        return "local" if scheduler is None else "dask"
    if executor not in EXECUTORS:
        raise ValueError(
            f"executor: unknown executor {executor!r}; choose one of {list(EXECUTORS)}"
        )
    if scheduler is not None and executor != "dask":
        raise ValueError(
            f"scheduler: only the dask executor joins a scheduler, not {executor!r} "
            f"(scheduler {scheduler!r})"
        )
    return executor


def iter_chunks(
    settings: GenerationSettings,
    indices: Iterable[int],
    workers: int | None = None,
    *,
    executor: str | None = None,
    scheduler: str | None = None,
) -> Generator[GeneratedChunk, None, None]:
    """Generate the chunks ``indices`` and yield them in order.

    Parameters
    ----------
    settings : GenerationSettings
        The run.
    indices : iterable of int
        Chunks to generate.
    workers : int, optional
        Worker processes of the pool or of the local dask cluster (default: one
        per core); with the local executor and 1 worker, or a single chunk, the
        chunks run in this process.
    executor : {"local", "dask"}, optional
        ``"local"`` runs a pool of processes; ``"dask"`` runs the chunks on the
        workers of a :class:`distributed.LocalCluster` of ``workers``
        single-threaded processes started for the run, or of the cluster at
        ``scheduler``. Default: ``"dask"`` when ``scheduler`` is given, else
        ``"local"``.
    scheduler : str, optional
        Address of a running dask scheduler to join (e.g. ``tcp://host:8786``).

    Yields
    ------
    GeneratedChunk
        The chunks, in the order of ``indices``.

    Raises
    ------
    ValueError
        If ``workers`` is below 1, or the executor is unknown or does not go
        with ``scheduler`` (:func:`executor_name`).

    Notes
    -----
    Either executor runs :func:`generate_chunk`: a task sends the settings and
    the chunk number and gets back the chunk's events and record, and Pythia
    is set up inside the worker process. The dask workers are processes of
    their own that import the generator, Pythia and FastJet with their first
    chunk.
    """
    name = executor_name(executor, scheduler)
    tasks = [(settings, int(index)) for index in indices]
    workers = (os.cpu_count() or 1) if workers is None else int(workers)
    if workers < 1:
        raise ValueError(f"workers: must be at least 1, got {workers}")
    if name == "dask":
        if tasks:
            yield from _iter_dask_chunks(tasks, min(workers, len(tasks)), scheduler)
        return
    if workers == 1 or len(tasks) <= 1:
        for task in tasks:
            yield _generate_chunk_task(task)
        return
    # the workers leave Ctrl-C to this process; leaving the block terminates them
    with _process_context().Pool(
        processes=min(workers, len(tasks)), initializer=ignore_interrupt
    ) as pool:
        yield from pool.imap(_generate_chunk_task, tasks)


def _iter_dask_chunks(
    tasks: list[tuple[GenerationSettings, int]], workers: int, scheduler: str | None
) -> Iterator[GeneratedChunk]:
    """Run ``tasks`` on a dask cluster and yield their chunks in order.

    The tasks are submitted in a sliding window of
    :data:`_DASK_CHUNKS_PER_THREAD` per worker thread of the cluster, so that
    the chunks finished ahead of the one being written stay bounded. Chunks
    not yet yielded are cancelled when the iteration stops early.
    """
    with _dask_client(workers, scheduler) as client:
        remaining = iter(tasks)
        pending: deque[Future] = deque()
        try:
            for _ in tasks:
                window = _DASK_CHUNKS_PER_THREAD * max(1, sum(client.nthreads().values()))
                pending.extend(
                    client.submit(_generate_chunk_task, task)
                    for task in islice(remaining, max(0, window - len(pending)))
                )
                yield pending.popleft().result()
        finally:
            if pending:
                client.cancel(list(pending))


@contextmanager
def _dask_client(workers: int, scheduler: str | None) -> Iterator[Client]:
    """Yield a client of the cluster at ``scheduler``, or of a local cluster closed on exit."""
    from distributed import Client

    if scheduler is not None:
        with Client(scheduler) as client:
            yield client
        return
    with _local_cluster(workers) as cluster, Client(cluster) as client:
        yield client


def _local_cluster(workers: int) -> LocalCluster:
    """Start a dask cluster of ``workers`` single-threaded processes on this machine.

    The cluster has no dashboard. Its scheduler still serves a few HTTP routes
    (health, metrics): on a free port of this machine's loopback address, so
    that runs side by side do not contend for the dashboard port 8787.
    """
    from distributed import LocalCluster

    # its worker processes leave Ctrl-C to this one, which closes the cluster
    with workers_ignore_interrupt():
        return LocalCluster(
            n_workers=workers,
            threads_per_worker=1,
            processes=True,
            dashboard_address=None,
            scheduler_kwargs={"dashboard_address": "127.0.0.1:0"},
            silence_logs=logging.ERROR,
        )


def _process_context() -> Any:
    """Return the start method of the worker processes.

    ``forkserver`` (POSIX) starts one clean server process that imports the
    generator, Pythia, FastJet and vector once; the workers are forked from it
    and start at once. Elsewhere the workers are spawned. Either way a script
    that runs more than one worker needs the ``if __name__ == "__main__":`` guard.
    """
    if "forkserver" in multiprocessing.get_all_start_methods():
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload([__name__, "pythia8mc", "fastjet", "vector"])
        return context
    return multiprocessing.get_context("spawn")


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
    writer_class, info_of, resume_suffix = _format_tools(file_format, output)
    work = partial_name(output)
    record = record_name(output)
    leftovers = [work, work.with_name(work.name + resume_suffix)] if resume_suffix else [work]
    if overwrite:
        for stale in (output, record, *leftovers):
            stale.unlink(missing_ok=True)
    if output.exists():
        info = _complete_file(output, record, settings, info_of)
        n_chunks = len(settings.chunk_sizes())
        if (
            info is not None
            and info["n_events"] == n_events
            and _reusable_chunks(output, info, settings) == n_chunks
        ):
            return GenerationSummary.from_records(info["chunks"])
        if info is not None:  # more events requested: the file is extended
            for stale in leftovers:
                stale.unlink(missing_ok=True)
            os.replace(output, work)
        record.unlink(missing_ok=True)
        output.unlink(missing_ok=True)
    writer = _resumed_writer(work, output, leftovers, settings, writer_class, info_of)
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
    _finish(work, output, record, settings)
    return summary


def partial_name(path: str | os.PathLike[str]) -> Path:
    """The hidden file beside ``path`` that :func:`generate_file` writes chunk by chunk."""
    output = Path(path)
    return output.with_name(f".{output.stem}.partial{output.suffix}")


def record_name(path: str | os.PathLike[str]) -> Path:
    """The record of a generated file: settings, size and hash (:mod:`rosenblatt._records`)."""
    output = Path(path)
    return output.with_name(f"{output.name}.record.json")


def _finish(work: Path, output: Path, record: Path, settings: GenerationSettings) -> None:
    """Give the complete file its name, then record the run (last)."""
    from rosenblatt._atomic import fsync_folder, fsync_tree
    from rosenblatt._records import write_record

    fsync_tree(work)
    os.replace(work, output)
    fsync_folder(output.parent)
    write_record(record, [output], _record_inputs(settings))


def _record_inputs(settings: GenerationSettings) -> dict[str, Any]:
    """What a generated file was computed from (its chunk sizes follow from these)."""
    return settings.to_dict()


def _complete_file(
    output: Path, record: Path, settings: GenerationSettings, info_of: Any
) -> dict[str, Any] | None:
    """The metadata of the complete file ``output``; ``None`` when it cannot be trusted.

    With a record, the file must have the recorded size and hash (else it is
    named in one line, :func:`rosenblatt._records.corrupt`; so is a damaged
    record, and the file is not trusted); without one (a
    file written before records, or a run killed between the rename and the
    record), its stored summary must say it is complete, and the record is
    written now.
    """
    from rosenblatt._records import check_files, read_record, write_record
    from rosenblatt.io import EventFileError

    document = read_record(record)
    if document is None and record.exists():
        return None  # a damaged record, named by read_record: the file cannot be checked
    if document is not None and not check_files(output.parent, document["files"]):
        return None
    try:
        info: dict[str, Any] = info_of(output)
    except EventFileError as err:
        log.warning("%s cannot be read (%s): generating it again", output, err)
        return None
    if info["summary"].get("complete") is not True:
        log.warning("%s is not a complete generated file: generating it again", output)
        return None
    _reusable_chunks(output, info, settings)  # other settings: an error naming them
    if document is None and info["n_events"] == settings.n_events:
        write_record(record, [output], _record_inputs(settings))
    return info


def _resumed_writer(
    work: Path,
    output: Path,
    leftovers: list[Path],
    settings: GenerationSettings,
    writer_class: Any,
    info_of: Any,
) -> Any:
    """A writer continuing the partial file ``work`` of an interrupted run, if it can.

    ``None`` when there is none, or when it was cut off in a way that cannot be
    resumed, or written with other settings: then it is removed, with one line
    saying so, and the run starts over.
    """
    from rosenblatt.io import EventFileError

    existing = next((path for path in reversed(leftovers) if path.exists()), None)
    if existing is None:
        return None
    try:
        info = info_of(existing)
        n_kept = _reusable_chunks(output, info, settings)
        return writer_class.resume(work, max_chunks=n_kept, settings=settings.to_dict())
    except (EventFileError, ValueError) as err:
        log.warning("cannot resume %s from %s (%s): generating from the start", output, work, err)
    for stale in leftovers:
        stale.unlink(missing_ok=True)
    return None


def _format_tools(file_format: str, output: Path) -> tuple[Any, Any, str | None]:
    """Return the writer class, the metadata reader and the suffix of a file being resumed."""
    if file_format == "root":
        from rosenblatt.io import root

        return root.RootWriter, root.root_info, root.RESUME_SUFFIX
    from rosenblatt.io import lhco

    return lhco.LHCOWriter, lhco.lhco_info, None


def _reusable_chunks(output: Path, info: Mapping[str, Any], settings: GenerationSettings) -> int:
    """Return how many leading chunks of an existing file belong to the run ``settings``.

    The settings must agree except for ``n_events``, which may grow: since a
    chunk with fewer events is the beginning of the same chunk with more, the
    chunks whose size still matches are kept and the rest is generated.
    """
    stored = dict(info["settings"])
    wanted = settings.to_dict()
    differences = [
        f"{name}: {stored.get(name)!r} in the file, {wanted.get(name)!r} requested"
        for name in sorted(set(stored) | set(wanted))
        if name != "n_events" and stored.get(name) != wanted.get(name)
    ]
    if differences:
        raise ValueError(
            f"{output}: exists with other settings ({'; '.join(differences)}); "
            "choose another output file or overwrite it"
        )
    if int(stored["n_events"]) > settings.n_events:
        raise ValueError(
            f"{output}: holds a run of {stored['n_events']} events, {settings.n_events} "
            "requested; fewer events would drop some, so choose another output file or "
            "overwrite it"
        )
    kept = 0
    for stored_size, size in zip(
        info["chunks"].get("n_events", []), settings.chunk_sizes(), strict=False
    ):
        if int(stored_size) != size:
            break
        kept += 1
    return kept
