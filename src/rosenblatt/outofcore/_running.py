"""Running a mergeable fit's passes where the user's events are processed: coffea executors.

A fit runs its first pass through the user's coffea ``processor.Runner``
(their processor, or :class:`ObservablesPass` around their function) and the
passes over the skims on the same executor:

- ``IterativeExecutor``: in this process;
- ``FuturesExecutor``: one pool for the whole fit (the user's pool if they
  gave one, else one pool of ``workers`` processes started once and shut
  down at the end), never a new pool per pass;
- ``DaskExecutor``: the user's client (or one client for the whole fit);
- any other executor through coffea's executor protocol.

One progress bar covers the fit: it names the pass and counts its chunks or
tasks (coffea's own bars are silenced meanwhile).
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import dataclasses
import os
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rosenblatt._interrupt import start_worker, stop_pool
from rosenblatt.outofcore._first_pass import Partial, Request
from rosenblatt.outofcore._tasks import run_task

if TYPE_CHECKING:
    from rosenblatt.processors.pieces import PieceStore

__all__ = [
    "Executor",
    "FitProgress",
    "KeptPartials",
    "ObservablesPass",
    "chunk_key",
    "executor_for",
    "piece_output",
    "read_with_runner",
    "start_pool",
]

Mapper = Callable[[list[Any], Callable[[int], None]], dict[str, Any]]


class FitProgress:
    """One progress bar for a whole fit; each pass is named on it.

    Parameters
    ----------
    title
        What is fitted (``"IRGI fit"``).
    enabled
        Show the bar (needs :mod:`rich`, which coffea installs). While it is
        shown, coffea's own bars are silenced: in a notebook two live bars
        would write into each other's output area.
    """

    def __init__(self, title: str, enabled: bool) -> None:
        self.title = title
        self.description = title
        self.passes = 0
        self._bar: Any = None
        self._task: Any = None
        self._lock = threading.Lock()
        self._silenced = contextlib.ExitStack()
        if enabled:
            try:
                from rich.progress import (
                    BarColumn,
                    MofNCompleteColumn,
                    Progress,
                    TextColumn,
                    TimeElapsedColumn,
                )
            except ImportError:  # pragma: no cover - rich comes with coffea
                return
            self._bar = Progress(
                TextColumn("[bold blue]{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                transient=False,
            )
            self._task = self._bar.add_task(title, total=None)
            self._silenced.enter_context(_quiet_coffea())
            self._bar.start()

    def start(self, description: str, total: int | None) -> None:
        """Begin a pass of ``total`` chunks or tasks."""
        self.passes += 1
        self.description = description
        if self._bar is not None:
            label = f"{self.title}, pass {self.passes}: {description.split(': ', 1)[-1]}"
            self._bar.reset(self._task, total=total, description=label)

    def advance(self, steps: int = 1) -> None:
        """Count finished chunks or tasks (callable from any thread)."""
        if self._bar is not None:
            with self._lock:
                self._bar.advance(self._task, steps)

    def complete(self) -> None:
        """Mark the pass's chunks or tasks all done."""
        if self._bar is not None:
            task = self._bar.tasks[0]
            if task.total is not None:
                self._bar.update(self._task, completed=task.total)

    def close(self) -> None:
        """Stop the bar (it stays on screen)."""
        if self._bar is not None:
            self._bar.stop()
            self._bar = None
        self._silenced.close()


@dataclass
class Executor:
    """Where a fit's passes run.

    Attributes
    ----------
    map : callable
        ``map(tasks, tick)`` runs the tasks, calls ``tick(1)`` as each ends and
        returns their merged results.
    workers : int
        How many tasks run at once.
    read : object or None
        The coffea executor for the first pass through a Runner, reusing the
        same pool or client (``None`` outside coffea).
    """

    map: Mapper
    workers: int
    read: Any = None


def _in_process(tasks: list[Any], tick: Callable[[int], None]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for task in tasks:
        out.update(run_task(task))
        tick(1)
    return out


def _on_pool(pool: concurrent.futures.Executor) -> Mapper:
    def run(tasks: list[Any], tick: Callable[[int], None]) -> dict[str, Any]:
        futures = [pool.submit(run_task, task) for task in tasks]
        out: dict[str, Any] = {}
        try:
            for future in concurrent.futures.as_completed(futures):
                out.update(future.result())
                tick(1)
        except BaseException:
            for future in futures:
                future.cancel()
            raise
        return out

    return run


def _on_client(client: Any, retries: int) -> Mapper:
    def run(tasks: list[Any], tick: Callable[[int], None]) -> dict[str, Any]:
        from dask import distributed

        futures = client.map(run_task, tasks, pure=False, retries=retries)
        out: dict[str, Any] = {}
        completed: Any = distributed.as_completed
        try:
            for future in completed(futures):
                out.update(future.result())
                tick(1)
        except BaseException:
            client.cancel(futures)
            raise
        return out

    return run


def _on_protocol(executor: Any) -> Mapper:
    """Any coffea executor, through ``executor(items, function, accumulator)``."""

    def run(tasks: list[Any], tick: Callable[[int], None]) -> dict[str, Any]:
        result = executor.copy(status=False)(tasks, run_task, None)
        tick(len(tasks))
        out = result[0] if isinstance(result, tuple) else result
        return dict(out or {})

    return run


def _on_function(function: Callable[..., Any], description: Callable[[], str]) -> Mapper:
    """A mapper ``function(items, function, description)`` that returns the merged results."""

    def run(tasks: list[Any], tick: Callable[[int], None]) -> dict[str, Any]:
        result = function(tasks, run_task, description())
        tick(len(tasks))
        return dict(result or {})

    return run


class _TickingPool(concurrent.futures.Executor):
    """A pool that counts the chunks it finishes (merge jobs aside); shutting it down is the owner's."""

    def __init__(self, pool: concurrent.futures.Executor, tick: Callable[[int], None]) -> None:
        self.pool = pool
        self.tick = tick

    def submit(self, fn: Any, /, *args: Any, **kwargs: Any) -> concurrent.futures.Future[Any]:
        future = self.pool.submit(fn, *args, **kwargs)
        if type(fn).__name__ != "_reduce":
            future.add_done_callback(lambda _: self.tick(1))
        return future

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """Leave the pool running: it is shared by the whole fit."""


#: the process pools whose workers :func:`start_pool` starts with rosenblatt's initializer
_PROCESS_POOLS = (
    "concurrent.futures.process.ProcessPoolExecutor",
    "loky.process_executor.ProcessPoolExecutor",
)


def start_pool(
    kind: Callable[..., concurrent.futures.Executor], workers: int
) -> concurrent.futures.Executor:
    """A pool of ``workers`` started by ``kind`` (an executor class, as coffea's ``pool``).

    The workers of a process pool (the standard library's or loky's, coffea's
    default) leave SIGINT to this process and end once it is gone
    (:func:`rosenblatt._interrupt.start_worker`): a script killed by SIGTERM
    leaves none behind. Any other ``kind`` is called with ``max_workers``
    alone.
    """
    names = {f"{base.__module__}.{base.__qualname__}" for base in getattr(kind, "__mro__", ())}
    if names.intersection(_PROCESS_POOLS):
        return kind(max_workers=workers, initializer=start_worker, initargs=(os.getpid(),))
    return kind(max_workers=workers)


def _closing(pool: concurrent.futures.Executor) -> Callable[..., bool]:
    """The exit of a pool the fit started: its workers killed if the fit fails or is stopped.

    After a fit that ended well, the idle workers exit in the background and
    nothing waits for them; after an exception (``KeyboardInterrupt``,
    ``SystemExit`` from a signal handler, an error), they are stopped at once
    (:func:`rosenblatt._interrupt.stop_pool`), not after their tasks.
    """

    def close(kind: type[BaseException] | None, *_: Any) -> bool:
        if kind is None:
            pool.shutdown(wait=False)
        else:
            stop_pool(pool)
        return False

    return close


@contextlib.contextmanager
def executor_for(runner: Any, progress: FitProgress) -> Iterator[Executor]:
    """The :class:`Executor` of a coffea Runner or executor, a mapper function, or ``None``.

    A pool or client the fit starts itself is closed on exit.
    """
    if runner is None:
        yield Executor(_in_process, 1)
        return
    executor = getattr(runner, "executor", runner)
    kind = type(executor).__name__
    with contextlib.ExitStack() as stack:
        if kind == "IterativeExecutor":
            yield Executor(_in_process, 1, _ticking_iterative(executor, progress))
        elif kind == "FuturesExecutor":
            pool = executor.pool
            if not isinstance(pool, concurrent.futures.Executor):
                pool = start_pool(pool, int(executor.workers))
                stack.push(_closing(pool))
            read = executor.copy(pool=_TickingPool(pool, progress.advance), status=False)
            yield Executor(_on_pool(pool), int(executor.workers), read)
        elif kind == "DaskExecutor":
            client = executor.client
            if client is None:
                from dask import distributed

                start: Any = distributed.Client
                client = stack.enter_context(start(threads_per_worker=1))
            workers = sum(client.nthreads().values()) or 1
            read = executor.copy(client=client, status=False)
            yield Executor(_on_client(client, int(executor.retries)), workers, read)
        elif hasattr(executor, "copy") and callable(executor):
            yield Executor(_on_protocol(executor), int(getattr(executor, "workers", 1)), executor)
        elif callable(runner):
            yield Executor(_on_function(runner, lambda: progress.description), 1)
        else:
            msg = (
                "runner must be a coffea processor.Runner, a coffea executor, a function "
                f"(items, function, description) -> merged results, or None; got {kind}"
            )
            raise TypeError(msg)


def _ticking_iterative(executor: Any, progress: FitProgress) -> Any:
    """A copy of an ``IterativeExecutor`` that counts the chunks it finishes, without its own bar."""
    base = type(executor)

    def call(self: Any, items: Any, function: Any, accumulator: Any) -> Any:
        def counted(item: Any) -> Any:
            out = function(item)
            progress.advance()
            return out

        return base.__call__(self, items, counted, accumulator)

    ticking = dataclasses.make_dataclass("TickingIterativeExecutor", [], bases=(base,))
    ticking.__call__ = call  # type: ignore[method-assign]
    fields = {f.name: getattr(executor, f.name) for f in dataclasses.fields(executor) if f.init}
    return ticking(**{**fields, "status": False})


@dataclass(frozen=True)
class ObservablesPass:
    """The first pass's processor around a user's function ``observables(events) -> (x, y[, weight])``.

    Calls the function once per chunk and hands its values to the request
    (which writes the chunk's skim); ``ordinals`` gives each chunk its place
    in the file set's order, keyed by :func:`chunk_key`.
    """

    request: Request
    observables: Callable[[Any], Any]
    ordinals: Mapping[tuple[Any, ...], int]

    def __call__(self, events: Any) -> dict[str, Partial]:
        """The chunk's partial, under ``"fit"``."""
        values = self.observables(events)
        if not isinstance(values, tuple) or len(values) not in (2, 3):
            msg = (
                "observables(events) must return (x, y) or (x, y, weight), one value per "
                f"event; got {type(values).__name__}"
            )
            raise TypeError(msg)
        x, y, *rest = values
        chunk = getattr(events, "metadata", None)
        identity = chunk if isinstance(chunk, Mapping) else None
        ordinal = None if identity is None else self.ordinals.get(chunk_key(identity))
        weight = rest[0] if rest else None
        return {"fit": self.request(x, y, weight, chunk=identity, ordinal=ordinal)}


@dataclass(frozen=True)
class KeptPartials:
    """The first pass's processor whose chunk's output is kept as a piece: the partial as data.

    Returns ``{"partials": [document], "skim": [its skim file]}``
    (:meth:`Partial.to_document`): merged over chunks, the partials' list is in
    the chunks' order and the skims are checked with their pieces.
    """

    inner: ObservablesPass

    def process(self, events: Any) -> dict[str, Any]:
        """The chunk's partial as data, and its skim."""
        return piece_output(self.inner(events)["fit"], self.inner.request)


def piece_output(partial: Partial, request: Request) -> dict[str, Any]:
    """A first-pass chunk's output as a piece holds it: its partial as data, and its skims."""
    skims = [request.store.skim_path(name) for _, name, _ in partial.chunks]
    return {"partials": [partial.to_document()], "skim": skims}


def _kept(
    own: Any,
    chunks: list[Any],
    processor: Any,
    store: PieceStore,
    progress: FitProgress,
    treename: str | None,
    uproot: dict[str, Any],
    options: dict[str, Any],
) -> dict[str, Any]:
    """The merge of the pieces of ``chunks`` in their order, the chunks without one run first."""
    from rosenblatt.processors.pieces import (
        Chunk,
        PieceProcessor,
        run_in_pieces,
        write_returned,
    )

    items = {Chunk.of_work_item(item): item for item in chunks}
    kept = KeptPartials(processor)

    def run_missing(missing: list[Chunk]) -> None:
        progress.start("reading events", len(missing))
        todo = [items[chunk] for chunk in missing]
        pieces = PieceProcessor(kept, store)
        write_returned(own(todo, pieces, treename=treename, uproot_options=uproot, **options))

    return run_in_pieces(store, list(items), run_missing)


def chunk_key(chunk: Any) -> tuple[Any, ...]:
    """A chunk's dataset, file, tree and entry range, from a coffea ``WorkItem`` or chunk metadata."""
    fields = ("dataset", "filename", "treename", "entrystart", "entrystop")
    if isinstance(chunk, Mapping):
        return tuple(chunk.get(name) for name in fields)
    return tuple(getattr(chunk, name, None) for name in fields)


@contextlib.contextmanager
def _quiet_coffea() -> Iterator[None]:
    """Silence coffea's own progress bars (its executors show them whatever ``status`` says).

    In a notebook a quiet console still opens an output widget for each bar;
    it is told it is not in one, so its bars never touch the notebook.
    """
    try:
        from coffea.util import coffea_console
    except ImportError:  # pragma: no cover - the first pass through a Runner needs coffea
        yield
        return
    quiet, in_notebook = coffea_console.quiet, coffea_console.is_jupyter
    coffea_console.quiet, coffea_console.is_jupyter = True, False
    try:
        yield
    finally:
        coffea_console.quiet, coffea_console.is_jupyter = quiet, in_notebook


def read_with_runner(
    runner: Any,
    executor: Executor,
    fileset: Any,
    make_processor: Callable[[dict[tuple[Any, ...], int]], Any],
    progress: FitProgress,
    options: dict[str, Any],
    keep: Callable[[list[Any]], PieceStore] | None = None,
) -> Any:
    """Run the first pass through ``runner`` on the fit's executor; return the processor's output.

    ``make_processor(ordinals)`` makes the processor once the file set's
    chunks are known (``ordinals`` maps each chunk's :func:`chunk_key` to its
    place in the file set). With ``keep(chunks)``, the store of the pass's
    pieces (:mod:`rosenblatt.processors.pieces`) given its coffea work items,
    each chunk's output is kept as a piece, only the chunks without a sound
    one are run, and the output is the merge of every piece in the chunks'
    order (see :class:`KeptPartials`).
    """
    read = executor.read if executor.read is not None else runner.executor
    quiet = read.copy(status=False) if hasattr(read, "copy") else read
    if type(read).__name__ == "FuturesExecutor":
        quiet = read.copy(pool=read.pool.pool, status=False)
    own = dataclasses.replace(runner, executor=read, pre_executor=quiet)
    treename = options.pop("treename", None)
    uproot = options.pop("uproot_options", {})
    with _quiet_coffea():
        chunks = list(own.preprocess(fileset, treename=treename, uproot_options=uproot))
        processor = make_processor({chunk_key(c): k for k, c in enumerate(chunks)})
        output: Any
        if keep is not None:
            output = _kept(
                own, chunks, processor, keep(chunks), progress, treename, uproot, options
            )
        else:
            progress.start("reading events", len(chunks))
            output = own(chunks, processor, treename=treename, uproot_options=uproot, **options)
    progress.complete()
    if hasattr(output, "unwrap"):
        output = output.unwrap()
    return output[0] if isinstance(output, tuple) else output
