"""Run the processors over file sets with a coffea executor.

ROOT files (TTree ``Events``) go through :class:`coffea.processor.Runner` with
``BaseSchema``. coffea has no HDF5 reader, so LHC Olympics ``.h5`` files are
split into entry ranges that the same executor hands to the processor's
:meth:`~rosenblatt.processors.events.ParticleProcessor.process_lhco`. Either
way every executor gives the same output: histograms and cut flows are sums,
and a feature table is ordered by ``(file, entry)``.

Executors (:data:`EXECUTORS`): ``"iterative"`` (this process), ``"futures"``
(a pool of ``workers`` processes) and ``"dask"`` (a
:class:`dask.distributed.LocalCluster` of ``workers`` single-threaded worker
processes, or the existing cluster at ``scheduler``). On dask a task whose
worker dies is run again on another worker; the processors write their files
under names fixed by the chunk, so a task run twice counts its events once.

Files that cannot be read are refused before any work starts, with an error
that names them; with ``skip_bad_files`` they are left out and returned under
``"skipped"`` with the reason and, where the file tells, its number of events.
"""

from __future__ import annotations

import logging
import os
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

import awkward as ak

from rosenblatt._extras import optional_imports
from rosenblatt._interrupt import (
    feeder_joined,
    start_worker,
    stop_pool,
    workers_ignore_interrupt,
)
from rosenblatt.hep.features import JET_RADIUS
from rosenblatt.io import EventFileError
from rosenblatt.io.root import EVENTS_TREE
from rosenblatt.processors.chunksizes import events_per_chunk
from rosenblatt.processors.dijet import (
    DijetProcessor,
    check_cutflow,
    join_tables,
    mjj_histogram,
)
from rosenblatt.processors.events import LHCOChunk, ParticleProcessor
from rosenblatt.processors.pieces import (
    Chunk,
    PieceProcessor,
    PieceStore,
    PieceTask,
    run_in_pieces,
    write_returned,
)

with optional_imports(__name__):
    from coffea import processor
    from coffea.nanoevents import BaseSchema

if TYPE_CHECKING:
    import hist

__all__ = [
    "EXECUTORS",
    "CheckedFiles",
    "DijetRun",
    "LHCOChunk",
    "iter_results",
    "make_executor",
    "map_items",
    "run_columnar",
    "run_dijet",
    "run_processor",
    "warm_workers",
]

#: executor names accepted by :func:`make_executor`
EXECUTORS = ("iterative", "futures", "dask")


@dataclass(frozen=True)
class CheckedFiles:
    """What the checks made before a pass found of each file, so that none is opened again.

    coffea's preprocessing opens every ROOT file for its number of entries and its
    UUID; given both, the runner hands them to coffea's metadata cache instead.

    Attributes
    ----------
    entries : mapping
        ``{dataset: {file: events}}``.
    uuids : mapping
        ``{file: UUID}`` of the ROOT files, as uproot reads it (``file.fUUID``); a
        file without one is opened by coffea's preprocessing as usual.
    """

    entries: Mapping[str, Mapping[str, int]]
    uuids: Mapping[str, bytes] = field(default_factory=dict)

    def of(self, datasets: Mapping[str, Sequence[str]]) -> dict[str, dict[str, int]]:
        """``{dataset: {file: events}}`` of the files given, each of which was checked.

        Raises
        ------
        ValueError
            If a file given was not checked.
        """
        found: dict[str, dict[str, int]] = {}
        for dataset, paths in datasets.items():
            counts = self.entries.get(dataset, {})
            missing = [path for path in paths if path not in counts]
            if missing:
                msg = f"dataset {dataset}: files not checked before the run: {missing}"
                raise ValueError(msg)
            found[dataset] = {path: int(counts[path]) for path in paths}
        return found

    def metadata_cache(self, fileset: Mapping[str, Any]) -> dict[Any, dict[str, Any]]:
        """coffea's metadata of the files of ``fileset`` (``{dataset: {"files": {file: tree}}}``)."""
        from coffea.processor.executor import FileMeta

        return {
            FileMeta(dataset, path, tree): {
                "numentries": int(self.entries[dataset][path]),
                "uuid": self.uuids[path],
            }
            for dataset, spec in fileset.items()
            for path, tree in spec["files"].items()
            if path in self.uuids and path in self.entries.get(dataset, {})
        }


_ROOT_SUFFIXES = (".root",)
_LHCO_SUFFIXES = (".h5", ".hdf5")


class _DijetCounts(TypedDict):
    mjj: hist.Hist[hist.storage.Weight]
    cutflow: dict[str, dict[str, int]]
    skipped: dict[str, dict[str, Any]]
    unreadable: dict[str, list[tuple[int, int, str]]]


class DijetRun(_DijetCounts, total=False):
    """What :func:`run_dijet` returns.

    ``mjj`` (:class:`hist.Hist` per dataset), ``cutflow`` (``{dataset: {step:
    events}}``), ``skipped`` (the files left out, with their ``reason``) and
    ``unreadable`` (per file, the ``(start, stop, reason)`` of each chunk that
    could not be read); then ``table`` (awkward records, ordered by ``(file,
    entry)``) or, when the workers wrote it, ``files`` (sorted).
    """

    table: ak.Array
    files: list[str]


def _lhco_chunks(dataset: str, path: str, n_events: int, chunksize: int) -> list[LHCOChunk]:
    return [
        LHCOChunk(dataset, path, start, min(start + chunksize, n_events))
        for start in range(0, n_events, chunksize)
    ]


@contextmanager
def make_executor(
    name: str,
    workers: int = 1,
    *,
    scheduler: str | None = None,
    progress: bool = True,
) -> Iterator[processor.executor.ExecutorBase]:
    """Yield a coffea executor; a dask cluster it starts is closed on exit.

    Parameters
    ----------
    name : {"iterative", "futures", "dask"}
        Executor.
    workers : int, default 1
        Worker processes of ``"futures"`` and of the local ``"dask"`` cluster.
    scheduler : str, optional
        Address of a running dask scheduler to join (``"dask"`` only) instead of
        starting a local cluster.
    progress : bool, default True
        Show progress bars.
    """
    if name not in EXECUTORS:
        raise ValueError(f"executor: unknown executor {name!r}; choose one of {list(EXECUTORS)}")
    if int(workers) != workers or workers < 1:
        raise ValueError(f"workers: must be a positive integer, got {workers!r}")
    if scheduler is not None and name != "dask":
        raise ValueError(f"scheduler: only the dask executor joins a scheduler, not {name!r}")
    if name == "iterative":
        yield processor.IterativeExecutor(status=progress, retries=0)
    elif name == "futures":
        from loky import ProcessPoolExecutor

        # one pool for all the work of a run: the workers start (import) once; they leave
        # Ctrl-C to this process, which stops them at once rather than after their chunks
        # and end with this process, should it be killed before it can stop them
        pool = ProcessPoolExecutor(
            max_workers=int(workers),
            initializer=start_worker,
            initargs=(os.getpid(),),
            env=worker_environment(),
        )
        with feeder_joined(pool), pool:
            with workers_ignore_interrupt():
                # loky starts every worker at the first submission: they start ignoring SIGINT
                pool.submit(int)
            try:
                yield processor.FuturesExecutor(
                    pool=pool, workers=int(workers), status=progress, retries=0
                )
            except BaseException:
                stop_pool(pool)
                raise
    else:
        from dask.distributed import Client, LocalCluster

        if scheduler is not None:
            with Client(scheduler) as client:
                yield processor.DaskExecutor(client=client, status=progress, retries=0)
        else:
            with workers_ignore_interrupt():
                # the worker processes leave Ctrl-C to this one, which closes the cluster
                cluster = LocalCluster(
                    n_workers=int(workers),
                    threads_per_worker=1,
                    processes=True,
                    dashboard_address=None,
                    # the scheduler's HTTP routes on a free loopback port, not a shared fixed one
                    scheduler_kwargs={"dashboard_address": "127.0.0.1:0"},
                    # a worker logs an error, with a traceback, when its heartbeat finds the scheduler
                    # closed first (Ctrl-C); a task's error reaches the client, which reports it
                    silence_logs=logging.CRITICAL,
                )
            with (
                cluster,
                Client(cluster) as client,
            ):
                yield processor.DaskExecutor(client=client, status=progress, retries=0)


#: a worker's growth in memory that loky takes for a leak (and restarts the worker): workers
#: hold the transforms, their replicas and the models for the whole run, often more than
#: loky's default of 300 MB
WORKER_MEMORY_GROWTH = 8 * 2**30


def worker_environment() -> dict[str, str]:
    """The environment of the futures executor's worker processes, set before any import.

    Compiled kernels run one thread per worker (``NUMBA_NUM_THREADS=1``): the
    pool's processes share the cores, and two processes each running numba's
    threads on the same cores stall. A value the user set in this process's
    environment is kept, as is their ``LOKY_MAX_MEMORY_LEAK_SIZE``. A dask
    worker imports numba before a nanny's environment reaches it: its tasks
    set the count for their own thread
    (:func:`rosenblatt._jit.one_thread_in_a_dask_worker`).
    """
    environment = {
        "NUMBA_NUM_THREADS": "1",
        "LOKY_MAX_MEMORY_LEAK_SIZE": str(WORKER_MEMORY_GROWTH),
    }
    return {name: os.environ.get(name, value) for name, value in environment.items()}


def warm_workers(pool: processor.executor.ExecutorBase, warm: Callable[[], Any]) -> None:
    """Have each worker of a futures pool or a dask cluster call ``warm`` now, without waiting.

    For work to come after some of this process's own, while the workers
    idle: what ``warm`` loads once per process (compiled kernels) is then
    ready when that work's tasks come, which queue behind it. A dask
    cluster's workers each get one task pinned to them (``fire_and_forget``:
    nothing waits for it); a worker that joins later warms on its first
    chunk. The iterative executor is left as it is.
    """
    if isinstance(pool, processor.DaskExecutor):
        from dask.distributed import fire_and_forget

        client = pool.client
        for address in client.nthreads():
            task = client.submit(warm, pure=False, workers=[address], allow_other_workers=False)
            fire_and_forget(task)
        return
    submit = getattr(getattr(pool, "pool", None), "submit", None)
    if not isinstance(pool, processor.FuturesExecutor) or not callable(submit):
        return
    for _ in range(int(pool.workers)):
        submit(warm)


def _datasets_of(
    inputs: Sequence[str | os.PathLike[str]] | Mapping[str, Sequence[Any]],
) -> dict[str, list[str]]:
    """Return ``{dataset: [file, ...]}``; a bare list of files is named by file stem."""
    if isinstance(inputs, Mapping):
        return {str(dataset): [str(path) for path in paths] for dataset, paths in inputs.items()}
    datasets: dict[str, list[str]] = {}
    for path in inputs:
        datasets.setdefault(Path(path).stem, []).append(str(path))
    return datasets


def count_events(path: str) -> int:
    """Open an event file, check what the processors need of it and return its events.

    Raises
    ------
    FileNotFoundError
        If the file does not exist.
    EventFileError
        If it is damaged, empty, or lacks the tree or a particle branch.
    ValueError
        If its format is not one the processors read.
    """
    from rosenblatt.io import check_input_file

    check_input_file(path)
    lower = path.lower()
    if lower.endswith(_ROOT_SUFFIXES):
        from rosenblatt.io.root import check_root_events

        return check_root_events(path)
    if lower.endswith(_LHCO_SUFFIXES):
        from rosenblatt.io.lhco import lhco_info

        n_events = int(lhco_info(path)["n_events"])
        if n_events == 0:
            raise EventFileError(f"{path}: the LHC Olympics file holds no events")
        return n_events
    raise ValueError(
        f"{path}: the feature processor reads ROOT files ({', '.join(_ROOT_SUFFIXES)}) and LHC "
        f"Olympics HDF5 files ({', '.join(_LHCO_SUFFIXES)}), not {Path(path).suffix!r}"
    )


def check_fileset(
    datasets: Mapping[str, Sequence[str]], *, skip_bad_files: bool = False
) -> tuple[dict[str, dict[str, int]], dict[str, dict[str, Any]]]:
    """Check every file of a file set before any work starts.

    Returns
    -------
    readable : dict
        ``{dataset: {file: events}}`` of the files to process.
    skipped : dict
        ``{file: {"dataset", "reason", "entries"}}`` of the files left out
        (only with ``skip_bad_files``; ``entries`` is ``None`` when the file
        does not tell).

    Raises
    ------
    FileNotFoundError, EventFileError, ValueError
        For the first bad file, without ``skip_bad_files``; or if no file is given.
    """
    if not any(datasets.values()):
        raise ValueError("inputs: no input files given")
    readable: dict[str, dict[str, int]] = {}
    skipped: dict[str, dict[str, Any]] = {}
    for dataset, paths in datasets.items():
        for path in paths:
            try:
                readable.setdefault(dataset, {})[path] = count_events(path)
            except (OSError, EventFileError) as err:
                if not skip_bad_files:
                    raise
                skipped[path] = {
                    "dataset": dataset,
                    "reason": f"{type(err).__name__}: {err}",
                    "entries": _entries_told(path),
                }
                logging.getLogger("rosenblatt").warning("skipping %s: %s", path, err)
    return readable, skipped


def _entries_told(path: str) -> int | None:
    """The number of events a damaged ROOT file still tells, if any."""
    if not path.lower().endswith(_ROOT_SUFFIXES):
        return None
    try:
        from rosenblatt.io.root import root_info

        return int(root_info(path)["n_events"])
    except (OSError, EventFileError):
        return None


def run_processor(
    inputs: Sequence[str | os.PathLike[str]] | Mapping[str, Sequence[Any]],
    processor_instance: ParticleProcessor,
    pool: processor.executor.ExecutorBase,
    *,
    chunksize: int | None = None,
    skip_bad_files: bool = False,
    checked: CheckedFiles | None = None,
    pieces: PieceStore | None = None,
) -> dict[str, Any]:
    """Run a particle processor over a file set on an executor; return the merged output.

    Parameters
    ----------
    inputs : sequence of path-like, or mapping of str to sequence of path-like
        ``.root`` files (TTree ``Events``) and LHC Olympics ``.h5``/``.hdf5``
        files; a mapping names the dataset of each list of files, a sequence
        names every file's dataset after its stem (``qcd.root`` -> ``qcd``).
    processor_instance : ParticleProcessor
        The processor; it is copied to the workers.
    pool : coffea executor
        From :func:`make_executor`.
    chunksize : int, optional
        Target number of events per chunk (default:
        :data:`~rosenblatt.processors.chunksizes.PARTICLES`).
    skip_bad_files : bool, default False
        Leave out unreadable files (listed under ``"skipped"``) instead of failing.
    checked : CheckedFiles, optional
        What checks made before the run found of the files (their events and ROOT
        UUIDs): the files are not opened again before the pass.
    pieces : PieceStore, optional
        Keep each chunk's output there, run only the chunks without one and
        merge them in the order of the chunks (:mod:`rosenblatt.processors.pieces`).

    Returns
    -------
    dict
        The processor's merged accumulator, with ``"skipped"`` and ``"entries"``
        (``{file: events}`` of the files processed) added.
    """
    chunksize = events_per_chunk("particles", chunksize)
    if checked is None:
        readable, skipped = check_fileset(_datasets_of(inputs), skip_bad_files=skip_bad_files)
    else:
        readable, skipped = checked.of(_datasets_of(inputs)), {}
    root_fileset = {
        dataset: {
            "files": {path: EVENTS_TREE for path in files if path.lower().endswith(_ROOT_SUFFIXES)}
        }
        for dataset, files in readable.items()
    }
    root_fileset = {dataset: files for dataset, files in root_fileset.items() if files["files"]}
    lhco_items = [
        item
        for dataset, files in readable.items()
        for path, n_events in files.items()
        if path.lower().endswith(_LHCO_SUFFIXES)
        for item in _lhco_chunks(dataset, path, n_events, chunksize)
    ]
    outputs: list[dict[str, Any]] = []
    try:
        if pieces is not None:
            outputs.append(
                _particle_pieces(
                    pool, root_fileset, lhco_items, processor_instance, pieces, chunksize, checked
                )
            )
            lhco_items = []
        elif root_fileset:
            # the Runner stores its processor in a dask executor: give it its own copy
            runner = processor.Runner(
                executor=pool.copy(),
                schema=BaseSchema,
                chunksize=chunksize,
                metadata_cache=None if checked is None else checked.metadata_cache(root_fileset),
            )
            outputs.append(dict(runner(root_fileset, processor_instance, treename=EVENTS_TREE)))
        if lhco_items:
            outputs.append(
                map_items(pool, lhco_items, processor_instance.process_lhco, "LHCO chunks")
            )
    except (ValueError, EventFileError):
        raise
    except Exception as err:
        # coffea re-raises a chunk's error wrapped; surface the original message
        raise ValueError(_innermost_message(err)) from err
    # a postprocessed output may hold one joined array: merge arrays as lists of chunks
    outputs = [
        {key: [value] if isinstance(value, ak.Array) else value for key, value in output.items()}
        for output in outputs
    ]
    merged = processor.accumulate(outputs) if outputs else {}
    merged = dict(merged or {})
    merged["skipped"] = skipped
    merged["entries"] = {path: n for files in readable.values() for path, n in files.items()}
    return merged


def run_columnar(
    files: Mapping[str, Sequence[str]],
    trees: Mapping[str, str],
    processor_instance: processor.ProcessorABC,
    pool: processor.executor.ExecutorBase,
    *,
    schema: str,
    checked: CheckedFiles,
    chunksize: int | None = None,
    skip_bad_files: bool = False,
    pieces: PieceStore | None = None,
) -> dict[str, Any]:
    """Run a processor of NanoEvents over the user's files, checked beforehand.

    Parameters
    ----------
    files : mapping of str to sequence of str
        ``{dataset: [file, ...]}``.
    trees : mapping of str to str
        Per dataset, the TTree or RNTuple holding its events.
    processor_instance : coffea processor
        Copied to the workers.
    pool : coffea executor
        From :func:`make_executor`.
    schema : {"base", "nanoaod"}
        coffea's ``BaseSchema`` (every branch a field) or ``NanoAODSchema``.
    checked : CheckedFiles
        What the checks made before the run found of every file: not opened again
        before the pass.
    chunksize : int, optional
        Target number of events per chunk (default:
        :data:`~rosenblatt.processors.chunksizes.COLUMNAR`).
    skip_bad_files : bool
        Record unreadable chunks instead of failing.
    pieces : PieceStore, optional
        Keep each chunk's output there (see :func:`run_processor`).

    Returns
    -------
    dict
        The merged accumulator, with ``"skipped"`` and ``"entries"`` (``{file:
        events}``) added.
    """
    from coffea.nanoevents import NanoAODSchema

    schemas = {"base": BaseSchema, "nanoaod": NanoAODSchema}
    if schema not in schemas:
        raise ValueError(f"schema: the columnar analysis reads {sorted(schemas)}, not {schema!r}")
    fileset = {
        dataset: {"files": dict.fromkeys(paths, trees[dataset])}
        for dataset, paths in files.items()
        if paths
    }
    runner = processor.Runner(
        executor=pool.copy(),
        schema=schemas[schema],
        chunksize=events_per_chunk("columnar", chunksize),
        skipbadfiles=bool(skip_bad_files),
        metadata_cache=checked.metadata_cache(fileset),
    )
    try:
        with warnings.catch_warnings():
            # NanoAODSchema warns of every collection a slimmed file lacks the target of
            warnings.filterwarnings("ignore", message="Missing cross-reference")
            if pieces is None:
                output = dict(runner(fileset, processor_instance, treename=None))
            else:
                output = _root_pieces(runner, fileset, None, processor_instance, pieces)
    except (ValueError, EventFileError):
        raise
    except Exception as err:
        raise ValueError(_innermost_message(err)) from err
    output["skipped"] = {}
    output["entries"] = {
        path: int(checked.entries[dataset][path])
        for dataset, paths in files.items()
        for path in paths
    }
    return output


def _root_pieces(
    runner: processor.Runner,
    fileset: dict[str, Any],
    treename: str | None,
    processor_instance: processor.ProcessorABC,
    pieces: PieceStore,
) -> dict[str, Any]:
    """The Runner's output over ``fileset``, from the pieces kept and those it writes."""
    items = {
        Chunk.of_work_item(item): item for item in runner.preprocess(fileset, treename=treename)
    }

    def run_missing(chunks: list[Chunk]) -> None:
        todo = [items[chunk] for chunk in chunks]
        write_returned(runner(todo, PieceProcessor(processor_instance, pieces)))

    merged = run_in_pieces(pieces, list(items), run_missing)
    return dict(processor_instance.postprocess(merged))


def _particle_pieces(
    pool: processor.executor.ExecutorBase,
    root_fileset: dict[str, Any],
    lhco_items: list[LHCOChunk],
    processor_instance: ParticleProcessor,
    pieces: PieceStore,
    chunksize: int,
    checked: CheckedFiles | None,
) -> dict[str, Any]:
    """The particle processor's output over ROOT and LHCO files, kept in ``pieces``."""
    runner = processor.Runner(
        executor=pool.copy(),
        schema=BaseSchema,
        chunksize=chunksize,
        metadata_cache=None if checked is None else checked.metadata_cache(root_fileset),
    )
    items: dict[Chunk, Any] = {}
    if root_fileset:
        work = runner.preprocess(root_fileset, treename=EVENTS_TREE)
        items.update((Chunk.of_work_item(item), item) for item in work)
    items.update((_lhco_chunk(item), item) for item in lhco_items)

    def run_missing(chunks: list[Chunk]) -> None:
        todo = [items[chunk] for chunk in chunks]
        root = [item for item in todo if not isinstance(item, LHCOChunk)]
        if root:
            write_returned(runner(root, PieceProcessor(processor_instance, pieces)))
        lhco = [item for item in todo if isinstance(item, LHCOChunk)]
        task = PieceTask(processor_instance.process_lhco, _lhco_chunk, pieces)
        write_returned(map_items(pool, lhco, task, "LHCO chunks") or {})

    return dict(processor_instance.postprocess(run_in_pieces(pieces, list(items), run_missing)))


def _lhco_chunk(item: LHCOChunk) -> Chunk:
    """The chunk of an LHCO entry range."""
    return Chunk(item.dataset, item.path, item.start, item.stop)


def map_items(
    pool: processor.executor.ExecutorBase,
    items: Sequence[Any],
    function: Callable[[Any], Any],
    description: str,
) -> Any:
    """Map ``function`` over ``items`` on the executor's workers; return the sum of the results.

    The results are added in the order of ``items``, whatever order the
    workers finish in, so that a sum of floating-point numbers is the same
    bit for bit on every run.
    """
    if not items:
        return None
    result = pool.copy(desc=description)(list(enumerate(items)), _Indexed(function), None)
    results = result[0] if isinstance(result, tuple) else result
    return processor.accumulate(results[index] for index in sorted(results))


def iter_results(
    pool: processor.executor.ExecutorBase, items: Sequence[Any], function: Callable[[Any], Any]
) -> Iterator[Any]:
    """``function(item)`` of each of ``items`` on the executor's workers, yielded in their order.

    Every item is submitted at once (the iterative executor calls ``function``
    here, one item at a time); the results are yielded in the order of
    ``items`` as they come, so that the caller can save or write each one
    while the others run. ``function`` and the items travel to the workers by
    value (pickled); the tasks still running when the caller stops iterating
    are cancelled.
    """
    if isinstance(pool, processor.DaskExecutor):
        futures: list[Any] = pool.client.map(function, list(items), pure=False)
    elif isinstance(pool, processor.FuturesExecutor):
        futures = [pool.pool.submit(function, item) for item in items]
    else:
        for item in items:
            yield function(item)
        return
    try:
        for future in futures:
            yield future.result()
    finally:
        for future in futures:
            future.cancel()


@dataclass(frozen=True)
class _Indexed:
    """``function`` of the item of an ``(index, item)`` pair, as ``{index: result}`` (picklable)."""

    function: Callable[[Any], Any]

    def __call__(self, pair: tuple[int, Any]) -> dict[int, Any]:
        index, item = pair
        return {index: self.function(item)}


def run_dijet(
    inputs: Sequence[str | os.PathLike[str]] | Mapping[str, Sequence[Any]],
    *,
    executor: str = "iterative",
    workers: int = 1,
    chunksize: int | None = None,
    scheduler: str | None = None,
    radius: float = JET_RADIUS,
    progress: bool = True,
    output_dir: str | os.PathLike[str] | None = None,
    skip_bad_files: bool = False,
) -> DijetRun:
    """Run the dijet processor over event files.

    Parameters
    ----------
    inputs : sequence of path-like, or mapping of str to sequence of path-like
        Event files, as for :func:`run_processor`.
    executor : {"iterative", "futures", "dask"}, default "iterative"
        coffea executor.
    workers : int, default 1
        Worker processes (``futures`` and the local ``dask`` cluster).
    chunksize : int, optional
        Target number of events per chunk (default:
        :data:`~rosenblatt.processors.chunksizes.PARTICLES`).
    scheduler : str, optional
        Address of a running dask scheduler (``dask`` only).
    radius : float, default 1.0
        Anti-kT jet radius.
    progress : bool, default True
        Show progress bars.
    output_dir : path-like, optional
        The workers write each chunk's table there as parquet; the result then
        has ``"files"`` (sorted) instead of ``"table"``.
    skip_bad_files : bool, default False
        Leave out unreadable files and chunks, listed in the result.

    Returns
    -------
    DijetRun
        ``"table"`` (awkward records, ordered by ``(file, entry)``) or
        ``"files"``, ``"mjj"`` (:class:`hist.Hist` per dataset), ``"cutflow"``
        (``{dataset: {step: events}}``), ``"skipped"`` and ``"unreadable"``.

    Raises
    ------
    FileNotFoundError
        If an input file does not exist.
    ValueError
        If an input has an unsupported extension or an argument is invalid.
    """
    dijet = DijetProcessor(
        radius=radius,
        output_dir=None if output_dir is None else str(Path(output_dir).resolve()),
        skip_bad_chunks=skip_bad_files,
    )
    with make_executor(executor, workers, scheduler=scheduler, progress=progress) as pool:
        output = run_processor(
            inputs, dijet, pool, chunksize=chunksize, skip_bad_files=skip_bad_files
        )
    merged = processor.accumulate([{"mjj": mjj_histogram(), "cutflow": {}}, output])
    cutflow = {
        dataset: {step: counts.get(step, 0) for step in ("read", "fewer than two jets", "in table")}
        | ({"unreadable": counts["unreadable"]} if "unreadable" in counts else {})
        for dataset, counts in merged["cutflow"].items()
    }
    check_cutflow(
        {d: {k: v for k, v in c.items() if k != "unreadable"} for d, c in cutflow.items()}
    )
    result: DijetRun = {
        "mjj": merged["mjj"],
        "cutflow": cutflow,
        "skipped": output["skipped"],
        "unreadable": merged.get("unreadable", {}),
    }
    if output_dir is None:
        result["table"] = join_tables(_as_table_list(merged.get("table", [])))
    else:
        result["files"] = sorted(merged.get("files", []))
    return result


def _innermost_message(error: BaseException) -> str:
    """The message of the deepest cause of ``error`` (coffea wraps a chunk's exception)."""
    seen = {id(error)}
    while True:
        cause = error.__cause__ or error.__context__
        if cause is None or id(cause) in seen:
            return str(error)
        seen.add(id(cause))
        error = cause


def _as_table_list(table: Any) -> list[Any]:
    """Return the per-chunk tables of an accumulator (a list, or one joined table)."""
    return list(table) if isinstance(table, list) else [table]
