"""The weighted Brier score of tabulated conditional CDFs at held-out events.

Event ``i`` of fold ``f_i`` lies between nodes ``j_i`` and ``j_i + 1`` of the
fold's table ``cdf[f_i]`` at fraction ``s_i``; its thresholds ``t_k`` weigh
``omega_ik``, interpolated the same way from a pilot table ``pilot[f_i]``
(nodes ``p_i``, fraction ``r_i``), and ``y_i < t_k`` exactly for
``k >= c_i``. The score is

``sum_i w_i sum_k omega_ik (F_ik - [k >= c_i])**2``,  ``F_ik = (1 - s_i) cdf[f_i, j_i, k] + s_i cdf[f_i, j_i + 1, k]``.

:func:`weighted_brier` uses the compiled loop when numba is in use, and
blocks of vectorised numpy otherwise; both give the same sum up to rounding.
"""

from __future__ import annotations

import numpy as np

from rosenblatt._jit import compiled
from rosenblatt.typing import FloatArray, IntArray

try:
    from numba import prange
except ImportError:  # pragma: no cover - the numpy path is used instead
    prange = range  # type: ignore[misc]

__all__ = ["brier_loop", "weighted_brier"]


#: events per block of the numpy path
BLOCK = 4096


def brier_loop(
    cdf: FloatArray,
    pilot: FloatArray,
    fold: IntArray,
    left: IntArray,
    share: FloatArray,
    pilot_left: IntArray,
    pilot_share: FloatArray,
    column: IntArray,
    weight: FloatArray,
) -> float:
    """The score as a loop over events, in parallel when compiled by numba."""
    n_thresholds = cdf.shape[2]
    total = 0.0
    for i in prange(len(fold)):
        f, j, s = fold[i], left[i], share[i]
        p, r = pilot_left[i], pilot_share[i]
        c = column[i]
        acc = 0.0
        for k in range(n_thresholds):
            value = cdf[f, j, k] + s * (cdf[f, j + 1, k] - cdf[f, j, k])
            omega = pilot[f, p, k] + r * (pilot[f, p + 1, k] - pilot[f, p, k])
            if k >= c:
                value -= 1.0
            acc += omega * value * value
        total += weight[i] * acc
    return total


def _brier_numpy(
    cdf: FloatArray,
    pilot: FloatArray,
    fold: IntArray,
    left: IntArray,
    share: FloatArray,
    pilot_left: IntArray,
    pilot_share: FloatArray,
    column: IntArray,
    weight: FloatArray,
) -> float:
    n_thresholds = cdf.shape[2]
    k = np.arange(n_thresholds)
    total = 0.0
    for start in range(0, len(fold), BLOCK):
        b = slice(start, start + BLOCK)
        f, j, s = fold[b], left[b], share[b][:, None]
        p, r = pilot_left[b], pilot_share[b][:, None]
        value = cdf[f, j] + s * (cdf[f, j + 1] - cdf[f, j]) - (k[None, :] >= column[b][:, None])
        omega = pilot[f, p] + r * (pilot[f, p + 1] - pilot[f, p])
        total += float(np.dot(weight[b], np.einsum("ik,ik->i", omega, value * value)))
    return total


def weighted_brier(
    cdf: FloatArray,
    pilot: FloatArray,
    fold: IntArray,
    left: IntArray,
    share: FloatArray,
    pilot_left: IntArray,
    pilot_share: FloatArray,
    column: IntArray,
    weight: FloatArray,
) -> float:
    """The weighted Brier score summed over events (see the module).

    Parameters
    ----------
    cdf
        ``(n_folds, n_nodes, n_thresholds)``: each fold's table.
    pilot
        ``(n_folds, n_pilot_nodes, n_thresholds)``: each fold's threshold weights.
    fold, left, share
        Each event's fold, left node and fraction towards the next node.
    pilot_left, pilot_share
        The same on the pilot's nodes.
    column
        IntArray of the first threshold above each event's ``y``.
    weight
        Event weights.
    """
    kernel = compiled(brier_loop, parallel=True)
    arguments = (cdf, pilot, fold, left, share, pilot_left, pilot_share, column, weight)
    if kernel is not None:
        return float(kernel(*arguments))
    return _brier_numpy(*arguments)
