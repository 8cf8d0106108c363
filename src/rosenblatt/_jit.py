"""Optional compilation of loop kernels with numba (the ``fast`` extra).

Kernels are written as plain Python loops that numba compiles; without numba,
or with the environment variable ``ROSENBLATT_NO_NUMBA=1``, callers use their
vectorised numpy path instead.
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable
from typing import Any

__all__ = ["compiled", "numba_enabled", "one_thread_in_a_dask_worker"]


def numba_enabled() -> bool:
    """Whether numba is importable and not disabled by ``ROSENBLATT_NO_NUMBA``."""
    if os.environ.get("ROSENBLATT_NO_NUMBA", "") not in ("", "0"):
        return False
    try:
        import numba  # noqa: F401
    except ImportError:
        return False
    return True


@functools.cache
def _compile(function: Callable[..., Any], parallel: bool) -> Callable[..., Any]:
    import numba

    return numba.njit(cache=True, nogil=True, parallel=parallel, fastmath=False)(function)


def compiled(function: Callable[..., Any], *, parallel: bool = False) -> Callable[..., Any] | None:
    """The numba-compiled ``function``, or ``None`` when numba is not in use."""
    if not numba_enabled():
        return None
    return _compile(function, parallel)


def one_thread_in_a_dask_worker() -> None:
    """In a dask worker's task, run this thread's parallel kernels on one thread.

    A pool's worker processes share the cores; a futures worker starts with
    ``NUMBA_NUM_THREADS=1`` in its environment. A dask worker imports numba
    before the environment its nanny was given reaches it, and numba refuses
    a thread count changed once its threads run; numba's
    ``set_num_threads`` holds per thread, so each task sets it for the
    thread it runs in. Nothing is done outside a dask worker, without numba,
    or where ``NUMBA_NUM_THREADS`` is set (the user's choice).
    """
    if "NUMBA_NUM_THREADS" in os.environ or "distributed" not in sys.modules:
        return
    if not numba_enabled():
        return
    from distributed import get_worker

    try:
        get_worker()
    except ValueError:
        return
    import numba

    numba.set_num_threads(1)
