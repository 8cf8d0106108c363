"""Ctrl-C and a batch system's signals: the workers stopped, one line naming the step, 128 + signal.

A terminal sends SIGINT to every process of the foreground job. The worker
processes that rosenblatt starts ignore it (:func:`ignore_interrupt`, their
initializer): the main process alone raises :class:`KeyboardInterrupt`, stops
its pools as the exception unwinds, and the command line says which step was
running (:func:`step` marks the exception with it) and that the same command
resumes. :func:`stop_workers` ends whatever child process is left.

A batch system ends a job with SIGTERM (at its time limit, or when the job is
removed; SIGKILL follows after a grace time), SIGXCPU at a CPU-time limit, and
a closed terminal sends SIGHUP. Within :func:`stop_on_signals` each of them
raises :class:`Stopped`, a :class:`KeyboardInterrupt`, in the main process, so
that a run stops as it does on Ctrl-C: pools stopped, locks released, no
partial file under a final name, and exit status 128 + the signal's number
(:func:`interrupted_status`).

A process ended without a chance to stop its pools (SIGKILL after the grace
time; SIGTERM to a script of the user's, whose default action ends it at once)
cannot stop its workers: the workers rosenblatt starts watch the process
that started them and end once it is gone (:func:`end_with_parent`, part of
their initializer :func:`start_worker`), so that none outlives its run.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

__all__ = [
    "INTERRUPTED_STATUS",
    "STOP_SIGNALS",
    "Stopped",
    "end_with_parent",
    "feeder_joined",
    "ignore_interrupt",
    "interrupted_message",
    "interrupted_status",
    "interrupted_step",
    "interruption",
    "start_worker",
    "step",
    "stop_on_signals",
    "stop_pool",
    "stop_signal",
    "stop_workers",
    "workers_ignore_interrupt",
]

#: exit status of a command stopped by SIGINT (128 + 2, as a shell reports it)
INTERRUPTED_STATUS = 130

#: the signals that stop a run as Ctrl-C does: a batch system's notice to end (SIGTERM; SIGXCPU
#: at a CPU-time limit) and a closed terminal (SIGHUP)
STOP_SIGNALS: tuple[signal.Signals, ...] = tuple(
    getattr(signal, name) for name in ("SIGTERM", "SIGHUP", "SIGXCPU") if hasattr(signal, name)
)

#: seconds a child process has to end after SIGTERM before it is killed
_GRACE_SECONDS = 3.0

#: seconds between a worker's looks at the process that started it
_PARENT_POLL_SECONDS = 0.5

#: helper processes that end by themselves with this process (killing them early makes
#: the interpreter restart them, with a warning, when it frees what they track)
_SELF_ENDING = ("resource_tracker", "forkserver", "semaphore_tracker")


class Stopped(KeyboardInterrupt):
    """A run stopped by one of :data:`STOP_SIGNALS`: it unwinds as Ctrl-C does.

    Parameters
    ----------
    signum : int
        The signal's number.
    """

    def __init__(self, signum: int) -> None:
        self.signum = int(signum)
        super().__init__(f"stopped by {signal.Signals(self.signum).name}")


#: the process that handles the stop signals, the first stop signal it received, and whether
#: a step has seen the exception it raised on its way out (1) or not yet (None)
_handling: dict[str, int | None] = {"pid": None, "received": None, "unwinding": None}


def _on_stop_signal(signum: int, _frame: Any) -> None:
    """Raise :class:`Stopped` in the main process at the first stop signal."""
    if os.getpid() != _handling["pid"]:
        # a process forked from the handling one: end as the signal's default action does
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)
        return
    if _handling["received"] is not None:
        return  # already stopping: a repeated signal leaves the clean-up to finish
    _handling["received"] = signum
    raise Stopped(signum)


@contextmanager
def stop_on_signals() -> Iterator[None]:
    """Within the block, each of :data:`STOP_SIGNALS` raises :class:`Stopped`, once.

    A later stop signal is ignored while the run stops. A signal this process
    ignores (``nohup`` sets SIGHUP so) stays ignored. Outside the main thread,
    where signals cannot be set, the block runs unchanged. The handlers that
    were there are restored on leaving the block.
    """
    previous: dict[int, Any] = {}
    _handling.update(pid=os.getpid(), received=None, unwinding=None)
    try:
        for signum in STOP_SIGNALS:
            if signal.getsignal(signum) is signal.SIG_IGN:
                continue
            try:
                previous[signum] = signal.signal(signum, _on_stop_signal)
            except ValueError:
                break
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
        _handling.update(pid=None, received=None, unwinding=None)


def stop_signal() -> int | None:
    """The stop signal received within :func:`stop_on_signals`, or ``None``."""
    return _handling["received"]


def ignore_interrupt(*_: Any) -> None:
    """Worker initializer: leave SIGINT to the main process, which stops the workers."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def end_with_parent(creator: int | None = None) -> None:
    """Worker initializer: end this process once the process that started it is gone.

    A thread of the worker looks twice a second at its parent process: once
    that is gone (the worker is handed to another parent) or ``creator`` has
    ended, the worker exits at once with status 128 + SIGTERM, whatever task
    it runs. Its owner stops it as a run stops (:func:`stop_pool`); this is
    for an owner that was killed before it could. Called in ``creator``
    itself (a pool of threads), it does nothing.

    Parameters
    ----------
    creator : int, optional
        The id of the process that started the pool, where the worker's
        parent is a helper of it (multiprocessing's fork server).
    """
    if creator is not None and os.getpid() == creator:
        return
    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent and (creator is None or _exists(creator)):
            time.sleep(_PARENT_POLL_SECONDS)
        os._exit(128 + signal.SIGTERM)

    threading.Thread(target=watch, name="rosenblatt-end-with-parent", daemon=True).start()


def _exists(pid: int) -> bool:
    """Whether process ``pid`` exists (a zombie, ended but not yet waited for, counts)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # pragma: no cover - another user's process under that id
        return True
    return True


def start_worker(creator: int | None = None) -> None:
    """Initializer of the worker processes rosenblatt starts.

    The worker leaves SIGINT to the process that started it
    (:func:`ignore_interrupt`) and ends once that process is gone
    (:func:`end_with_parent`). Give the starting process's id as the
    initializer's argument (``initargs=(os.getpid(),)``).

    Parameters
    ----------
    creator : int, optional
        The id of the process that started the pool.
    """
    if creator is not None and os.getpid() == creator:
        return
    ignore_interrupt()
    end_with_parent(creator)


@contextmanager
def workers_ignore_interrupt() -> Iterator[None]:
    """Start worker processes within the block: they inherit SIGINT ignored.

    For pools without an initializer (dask's nannies spawn their workers): an
    ignored signal stays ignored across ``fork`` and ``exec``, and Python keeps
    it so. This process ignores SIGINT meanwhile too (a Ctrl-C while the
    workers start is lost; the next one stops the run). Outside the main
    thread, where signals cannot be set, the block runs unchanged.
    """
    try:
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    except ValueError:
        previous = None
    try:
        yield
    finally:
        if previous is not None:
            signal.signal(signal.SIGINT, previous)


@contextmanager
def step(name: str) -> Iterator[None]:
    """Run a block as step ``name``: an interrupt inside it is marked with that step.

    The innermost step wins (a step within a step names the inner one). Once
    a stop signal was received, any exception is marked: the one the signal
    raised may be replaced as the run unwinds (a pool whose workers the same
    signal ended).

    A stop signal whose exception no step has seen on its way out was lost
    where the interpreter cannot pass an exception on (a callback from C code,
    as numba's compiler makes into Python, prints it and drops it): a step
    raises it again as it starts or ends, so that the run stops all the same.
    """
    _raise_lost_stop(name)
    try:
        yield
    except BaseException as err:
        stopping = isinstance(err, KeyboardInterrupt) or stop_signal() is not None
        if stopping:
            _handling["unwinding"] = 1
            if interrupted_step(err) is None:
                with contextlib.suppress(AttributeError):
                    err.rosenblatt_step = name  # type: ignore[attr-defined]
        raise
    _raise_lost_stop(name)


def _raise_lost_stop(name: str) -> None:
    """Raise :class:`Stopped` (in step ``name``) for a stop signal whose exception was lost."""
    received = _handling["received"]
    if received is None or _handling["unwinding"] is not None:
        return
    _handling["unwinding"] = 1
    stopped = Stopped(received)
    stopped.rosenblatt_step = name  # type: ignore[attr-defined]
    raise stopped


def interrupted_step(error: BaseException) -> str | None:
    """The step an interrupt was raised in, or ``None`` outside any step."""
    name = getattr(error, "rosenblatt_step", None)
    return name if isinstance(name, str) else None


def _signal_of(error: BaseException) -> int | None:
    """The stop signal that ended a command: the one received, or the one ``error`` carries."""
    received = stop_signal()
    if received is not None:
        return received
    return error.signum if isinstance(error, Stopped) else None


def interrupted_message(command: str, error: BaseException) -> str:
    """The one line said when ``command`` is interrupted (by Ctrl-C or a stop signal)."""
    where = interrupted_step(error)
    during = f" during step {where!r}" if where is not None else ""
    return (
        f"{command}: {interruption(error)}{during}; its workers are stopped and every finished "
        "step is kept: run the same command to resume"
    )


def interruption(error: BaseException) -> str:
    """What ended a command: ``"interrupted"`` (Ctrl-C) or ``"stopped by SIGTERM"`` (a signal)."""
    signum = _signal_of(error)
    return "interrupted" if signum is None else f"stopped by {signal.Signals(signum).name}"


def interrupted_status(error: BaseException) -> int:
    """The exit status of a command ended by ``error``: 128 + the signal (130 for Ctrl-C)."""
    signum = _signal_of(error)
    return INTERRUPTED_STATUS if signum is None else 128 + int(signum)


def stop_pool(pool: Any) -> None:
    """Stop a :class:`concurrent.futures.ProcessPoolExecutor` (or loky's) at once.

    Pending work is cancelled and the worker processes are terminated, where
    leaving the ``with`` block would wait for the running tasks to finish.
    """
    if type(pool).__module__.split(".")[0] == "loky":
        _stop_loky_pool(pool)
        return
    with contextlib.suppress(Exception):
        pool.shutdown(wait=False, cancel_futures=True)
    terminate = getattr(pool, "terminate_workers", None)
    if callable(terminate):
        with contextlib.suppress(Exception):
            terminate()
        return
    for process in list((getattr(pool, "_processes", None) or {}).values()):
        with contextlib.suppress(Exception):
            process.terminate()
    for process in list((getattr(pool, "_processes", None) or {}).values()):
        with contextlib.suppress(Exception):
            process.join(_GRACE_SECONDS)


def _stop_loky_pool(pool: Any) -> None:
    """Stop a loky pool: its workers terminated first, then the pool shut down.

    loky's ``shutdown(kill_workers=True)`` sets an error on every pending
    task, and its manager thread fails (with a traceback, before it kills the
    workers) on a task its caller cancelled meanwhile; workers that end first
    make it take the path that leaves a cancelled task as it is.
    """
    processes = list((getattr(pool, "_processes", None) or {}).values())
    if not processes:
        with contextlib.suppress(Exception):
            pool.shutdown(wait=False, kill_workers=True)
        return
    for process in processes:
        with contextlib.suppress(Exception):
            process.terminate()
    with contextlib.suppress(Exception):
        pool.shutdown(wait=False)
    for process in processes:
        with contextlib.suppress(Exception):
            process.join(_GRACE_SECONDS)
            if process.is_alive():
                process.kill()
                process.join(_GRACE_SECONDS)


@contextmanager
def feeder_joined(pool: Any) -> Iterator[None]:
    """Use and shut down a loky pool within the block; on leaving, its feeder thread has ended.

    loky never joins the thread that feeds a pool's call queue in the process
    that made the queue (the standard library's pools do); as the thread ends
    it frees the queue's semaphores. Still running at the interpreter's exit (a
    pool just stopped by a signal), it can be halted between unlinking a
    semaphore and telling loky's resource tracker, which then reports a leaked
    semaphore after the command's last line. The queue is held until the
    thread has ended (a few seconds at most), so that its semaphores are freed
    here.
    """
    call_queue = getattr(pool, "_call_queue", None)
    try:
        yield
    finally:
        feeder = getattr(call_queue, "_thread", None)
        if feeder is not None:
            with contextlib.suppress(Exception):
                feeder.join(_GRACE_SECONDS)


def stop_workers() -> list[int]:
    """Terminate every descendant process of this one still running; return their ids.

    Each gets SIGTERM, then SIGKILL after a few seconds. The interpreter's
    own helpers (resource trackers, the fork server: children of this process
    that end with it) are left alone; the workers forked from the fork server
    are not.
    Needs psutil (installed with dask's ``distributed``); without it nothing
    is done and an empty list returned.
    """
    try:
        import psutil  # type: ignore[import-untyped]
    except ImportError:  # pragma: no cover - the pools stop their own workers
        return []
    try:
        this = psutil.Process(os.getpid())
        helpers = {child.pid for child in this.children() if _self_ending(child)}
        workers = [child for child in this.children(recursive=True) if child.pid not in helpers]
    except psutil.Error:  # pragma: no cover
        return []
    for child in workers:
        with contextlib.suppress(psutil.Error):
            child.terminate()
    _, alive = psutil.wait_procs(workers, timeout=_GRACE_SECONDS)
    for child in alive:
        with contextlib.suppress(psutil.Error):
            child.kill()
    psutil.wait_procs(alive, timeout=_GRACE_SECONDS)
    return [child.pid for child in workers]


def _self_ending(process: Any) -> bool:
    """Whether a child is one of the interpreter's helpers that end with this process."""
    import psutil

    try:
        command = " ".join(process.cmdline())
    except psutil.Error:
        return False
    return any(name in command for name in _SELF_ENDING)
