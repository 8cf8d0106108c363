"""Run :class:`~rosenblatt.processors.dijet.DijetProcessor` over event files with a coffea executor.

ROOT files (TTree ``Events``) go through :class:`coffea.processor.Runner` with
``BaseSchema``. coffea has no HDF5 reader, so LHC Olympics ``.h5`` files are
split into entry ranges that the same executor processes with the
:mod:`rosenblatt.io.lhco` reader and the same feature code. Either way every
executor gives the same output: the event table is ordered by
``(file, entry)`` and the histogram and cut flow are sums.

Executors (:data:`EXECUTORS`): ``"iterative"`` (this process), ``"futures"``
(a pool of ``workers`` processes) and ``"dask"`` (a
:class:`dask.distributed.LocalCluster` of ``workers`` single-threaded worker
processes, or the existing cluster at ``scheduler``).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from coffea import processor
from coffea.nanoevents import BaseSchema

from rosenblatt.processors.dijet import (
    PARTICLE_BRANCHES,
    DijetProcessor,
    check_cutflow,
    chunk_accumulator,
    join_tables,
    mjj_histogram,
)
from rosenblatt.hep.features import JET_RADIUS, event_table
from rosenblatt.hep.particles import event_particles

__all__ = [
    "DEFAULT_CHUNKSIZE",
    "EXECUTORS",
    "ROOT_TREE",
    "LHCOChunk",
    "make_executor",
    "process_lhco_chunk",
    "run_dijet",
]

#: executor names accepted by :func:`make_executor`
EXECUTORS = ("iterative", "futures", "dask")

#: target number of events per chunk
DEFAULT_CHUNKSIZE = 10_000

#: tree holding the events in ROOT files
ROOT_TREE = "Events"

_ROOT_SUFFIXES = (".root",)
_LHCO_SUFFIXES = (".h5", ".hdf5")


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


def process_lhco_chunk(item: LHCOChunk, radius: float = JET_RADIUS) -> dict[str, Any]:
    """Return the processor accumulator of an entry range of an LHCO HDF5 file."""
    from rosenblatt.io.lhco import iter_lhco

    accumulator: dict[str, Any] | None = None
    for events in iter_lhco(item.path, item.stop - item.start, start=item.start, stop=item.stop):
        table, cutflow = event_table(
            event_particles(events),
            label=events["label"],
            weight=events["weight"],
            dataset=item.dataset,
            file=item.path,
            entry=events["entry"],
            radius=radius,
        )
        chunk = chunk_accumulator(table, cutflow, item.dataset)
        accumulator = chunk if accumulator is None else processor.accumulate([accumulator, chunk])
    if accumulator is None:
        raise ValueError(f"{item.path}: no events in entries [{item.start}, {item.stop})")
    return accumulator


def _lhco_chunks(dataset: str, path: str, chunksize: int) -> list[LHCOChunk]:
    from rosenblatt.io import EventFileError
    from rosenblatt.io.lhco import lhco_info

    n_events = int(lhco_info(path)["n_events"])
    if n_events == 0:
        raise EventFileError(f"{path}: the LHC Olympics file holds no events")
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

        # one pool for all the work of a run: the workers start (import) once
        with ProcessPoolExecutor(max_workers=int(workers)) as pool:
            yield processor.FuturesExecutor(pool=pool, workers=int(workers), status=progress, retries=0)
    else:
        from dask.distributed import Client, LocalCluster

        if scheduler is not None:
            with Client(scheduler) as client:
                yield processor.DaskExecutor(client=client, status=progress, retries=0)
        else:
            with (
                LocalCluster(
                    n_workers=int(workers),
                    threads_per_worker=1,
                    processes=True,
                    dashboard_address=None,
                    silence_logs=logging.ERROR,
                ) as cluster,
                Client(cluster) as client,
            ):
                yield processor.DaskExecutor(client=client, status=progress, retries=0)


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


def _check_root_file(path: str) -> None:
    """Raise if ``path`` has no ``Events`` tree with entries and particle branches."""
    import uproot

    from rosenblatt.io import EventFileError

    try:
        handle = uproot.open(path)
    except Exception as err:
        raise EventFileError(
            f"{path}: not a readable ROOT file: {type(err).__name__}: {err}"
        ) from err
    with handle:
        if ROOT_TREE not in handle:
            raise EventFileError(f"{path}: no TTree {ROOT_TREE!r}; the file has {handle.keys()}")
        tree = handle[ROOT_TREE]
        missing = [branch for branch in PARTICLE_BRANCHES.values() if branch not in tree]
        if missing:
            raise EventFileError(
                f"{path}: the tree {ROOT_TREE!r} lacks the particle branch(es) {missing}; "
                f"it has {sorted(tree.keys())}"
            )
        if tree.num_entries == 0:
            raise EventFileError(f"{path}: the tree {ROOT_TREE!r} holds no events")


def _check_inputs(datasets: Mapping[str, Sequence[str]]) -> None:
    from rosenblatt.io import check_input_file

    if not any(datasets.values()):
        raise ValueError("inputs: no input files given")
    for paths in datasets.values():
        for path in paths:
            check_input_file(path)
            if path.lower().endswith(_ROOT_SUFFIXES):
                _check_root_file(path)
            elif not path.lower().endswith(_LHCO_SUFFIXES):
                raise ValueError(
                    f"{path}: the feature processor reads ROOT files ({', '.join(_ROOT_SUFFIXES)}) "
                    f"and LHC Olympics HDF5 files ({', '.join(_LHCO_SUFFIXES)}), "
                    f"not {Path(path).suffix!r}"
                )


def run_dijet(
    inputs: Sequence[str | os.PathLike[str]] | Mapping[str, Sequence[Any]],
    *,
    executor: str = "iterative",
    workers: int = 1,
    chunksize: int = DEFAULT_CHUNKSIZE,
    scheduler: str | None = None,
    radius: float = JET_RADIUS,
    progress: bool = True,
) -> dict[str, Any]:
    """Run the dijet processor over event files.

    Parameters
    ----------
    inputs : sequence of path-like, or mapping of str to sequence of path-like
        ``.root`` files (TTree ``Events``) and LHC Olympics ``.h5``/``.hdf5``
        files; a mapping names the dataset of each list of files, a sequence
        names every file's dataset after its stem (``qcd.root`` -> ``qcd``).
    executor : {"iterative", "futures", "dask"}, default "iterative"
        coffea executor.
    workers : int, default 1
        Worker processes (``futures`` and the local ``dask`` cluster).
    chunksize : int, default 10000
        Target number of events per chunk.
    scheduler : str, optional
        Address of a running dask scheduler (``dask`` only).
    radius : float, default 1.0
        Anti-kT jet radius.
    progress : bool, default True
        Show progress bars.

    Returns
    -------
    dict
        ``"table"`` (awkward records, ordered by ``(file, entry)``), ``"mjj"``
        (:class:`hist.Hist` per dataset) and ``"cutflow"``
        (``{dataset: {step: events}}``).

    Raises
    ------
    FileNotFoundError
        If an input file does not exist.
    ValueError
        If an input has an unsupported extension or an argument is invalid.
    """
    if int(chunksize) != chunksize or chunksize < 1:
        raise ValueError(f"chunksize: must be a positive number of events, got {chunksize!r}")
    datasets = _datasets_of(inputs)
    _check_inputs(datasets)
    root_fileset = {
        dataset: {"files": {path: ROOT_TREE for path in paths if path.lower().endswith(".root")}}
        for dataset, paths in datasets.items()
    }
    root_fileset = {dataset: files for dataset, files in root_fileset.items() if files["files"]}
    lhco_items = [
        item
        for dataset, paths in datasets.items()
        for path in paths
        if path.lower().endswith(_LHCO_SUFFIXES)
        for item in _lhco_chunks(dataset, path, int(chunksize))
    ]
    outputs: list[dict[str, Any]] = []
    with make_executor(executor, workers, scheduler=scheduler, progress=progress) as pool:
        if root_fileset:
            # the Runner stores its processor in a dask executor: give it its own copy
            runner = processor.Runner(
                executor=pool.copy(), schema=BaseSchema, chunksize=int(chunksize)
            )
            try:
                root_output = runner(root_fileset, DijetProcessor(radius=radius), treename=ROOT_TREE)
            except ValueError:
                raise
            except Exception as err:
                # coffea re-raises a chunk's error wrapped; surface the original message
                raise ValueError(_innermost_message(err)) from err
            outputs.append(dict(root_output))
        if lhco_items:
            result = pool(lhco_items, partial(process_lhco_chunk, radius=radius), None)
            outputs.append(result[0] if isinstance(result, tuple) else result)
    tables = [table for output in outputs for table in _as_table_list(output["table"])]
    merged = processor.accumulate(
        [{"mjj": output["mjj"], "cutflow": output["cutflow"]} for output in outputs],
        {"mjj": mjj_histogram(), "cutflow": {}},
    )
    check_cutflow(merged["cutflow"])
    return {"table": join_tables(tables), "mjj": merged["mjj"], "cutflow": merged["cutflow"]}


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
