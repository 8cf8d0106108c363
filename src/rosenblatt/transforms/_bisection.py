"""Recursive equal-occupancy bisection of sorted samples."""

from __future__ import annotations

import numpy as np

from rosenblatt.typing import FloatArray, IntArray

__all__ = ["bisect_segments", "max_depth"]


def max_depth(n_events: int) -> int:
    """Largest IRGI depth ``d`` that ``n_events`` support.

    Depth ``d`` bisects ``x`` to depth ``d + 1`` (``2**(d + 1)`` cells) and each
    column again in ``y`` to depth ``d``: the outer half-columns hold
    ``n / 2**(d + 1)`` events and need ``2**d`` of them, so ``n >= 2**(2 d + 1)``.
    """
    if n_events < 2:
        return -1
    return int((np.floor(np.log2(n_events)) - 1) // 2)


def bisect_segments(
    cumulative: FloatArray | None,
    bounds: IntArray,
    levels: int,
    *,
    empty: bool = False,
) -> IntArray:
    """Split every segment ``[bounds[i], bounds[i + 1])`` in two, ``levels`` times.

    Each split is placed where the cumulative weight crosses half of the
    segment's weight, so that both halves hold (as nearly as the events allow)
    the same summed weight, and never leaves a half of two or more events empty.

    Parameters
    ----------
    cumulative
        ``cumulative[i]`` is the summed weight of the first ``i`` events of the
        sorted sample (length ``n + 1``, starting at 0); ``None`` for unit
        weights (``cumulative[i] = i``).
    bounds
        Increasing event indices delimiting the initial segments, from 0 to ``n``.
    levels
        Number of bisection levels.
    empty
        Split a segment of fewer than two events too: its one event goes to
        the half where the weight crosses, and an empty segment splits into
        two empty ones. Segments of two or more events are split as without it.

    Returns
    -------
    numpy.ndarray
        The ``(len(bounds) - 1) * 2**levels + 1`` segment boundaries.

    Raises
    ------
    ValueError
        If a segment holds fewer than two events when it must be split (without ``empty``).
    """
    # The running maximum is non-decreasing even with negative weights, and its
    # first crossing of a level is the first crossing of the cumulative sum.
    running_max = None if cumulative is None else np.maximum.accumulate(cumulative)
    idx = np.asarray(bounds, dtype=np.intp)
    for _ in range(levels):
        lo, hi = idx[:-1], idx[1:]
        small = hi - lo < 2
        if not empty and np.any(small):
            n_small = int(np.count_nonzero(small))
            msg = f"{n_small} bisection cell(s) hold fewer than two events and cannot be split"
            raise ValueError(msg)
        # a split exactly at half the weight must not depend on rounding (or the
        # scale of the weights): accept crossings within a tiny fraction of it
        if cumulative is None or running_max is None:
            target = 0.5 * (lo + hi) - 1e-9 * (hi - lo)
            mid = np.ceil(target).astype(np.intp)
        else:
            target = 0.5 * (cumulative[lo] + cumulative[hi])
            target -= 1e-9 * np.abs(cumulative[hi] - cumulative[lo])
            mid = np.searchsorted(running_max, target, side="left")
        if empty and np.any(small):
            mid = np.where(small, np.clip(mid, lo, hi), np.clip(mid, lo + 1, hi - 1))
        else:
            mid = np.clip(mid, lo + 1, hi - 1)
        out = np.empty(2 * len(lo) + 1, dtype=np.intp)
        out[0:-1:2] = lo
        out[1::2] = mid
        out[-1] = idx[-1]
        idx = out
    return idx
