"""Where the chunks run: in this process, a local pool of processes, or a dask cluster.

See :mod:`rosenblatt.hep.generation`.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
from collections import deque
from collections.abc import Generator, Iterable, Iterator
from contextlib import contextmanager
from itertools import islice
from typing import TYPE_CHECKING, Any

from rosenblatt._interrupt import start_worker, workers_ignore_interrupt

if TYPE_CHECKING:
    from distributed import Client, Future, LocalCluster
from rosenblatt.hep._generation_chunk import GeneratedChunk, GenerationSettings, generate_chunk

__all__ = ["EXECUTORS", "executor_name", "iter_chunks"]

#: where the chunks run: a local pool of processes or a dask cluster
EXECUTORS = ("local", "dask")
#: chunks a dask run has submitted or finished ahead of the writer, per worker thread
_DASK_CHUNKS_PER_THREAD = 2


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
    # the workers leave Ctrl-C to this process, and end with it should it be killed; leaving the
    # block terminates them
    with _process_context().Pool(
        processes=min(workers, len(tasks)), initializer=start_worker, initargs=(os.getpid(),)
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
        pending: deque[Future[GeneratedChunk]] = deque()
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
            # a worker logs an error, with a traceback, when its heartbeat finds the scheduler
            # closed first (Ctrl-C); a task's error reaches the client, which reports it
            silence_logs=logging.CRITICAL,
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
        context.set_forkserver_preload(
            ["rosenblatt.hep.generation", "pythia8mc", "fastjet", "vector"]
        )
        return context
    return multiprocessing.get_context("spawn")
