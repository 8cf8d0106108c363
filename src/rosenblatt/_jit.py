"""Optional compilation of loop kernels with numba (the ``fast`` extra).

Kernels are written as plain Python loops that numba compiles; without numba,
or with the environment variable ``ROSENBLATT_NO_NUMBA=1``, callers use their
vectorised numpy path instead.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from typing import Any

__all__ = ["compiled", "numba_enabled"]


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
