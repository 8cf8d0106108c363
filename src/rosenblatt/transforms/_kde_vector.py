"""KDE on several protected observables: the product-Gaussian-kernel sums, summed directly.

``gamma(x, y) = sum_i w_i H(y - y_i) K(x - x_i) / sum_i w_i K(x - x_i)`` with
``K(d) = exp(-sum_k (d_k / h_k)**2 / 2)``, one width ``h_k`` per observable.
The sums run over every defining event for every queried event (numba
threads when installed, numpy blocks otherwise): exact, ``O(M N k)`` time and
``O(M + N)`` memory. Where every kernel value underflows (a query far from all
defining events) the sums are taken relative to the nearest event, which
leaves the ratio unchanged.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np

from rosenblatt._jit import numba_enabled
from rosenblatt.typing import FloatArray

try:
    from numba import prange
except ImportError:  # pragma: no cover - numba is optional
    prange = range  # type: ignore[misc]

__all__ = ["product_kernel_cdf"]


#: elements of the largest temporary array of the numpy path
BLOCK_ELEMENTS = 2_000_000
#: kernel sums below this are recomputed relative to the nearest defining event
TINY = 1e-250


def _sums_loop(
    u: FloatArray, y: FloatArray, w: FloatArray, uq: FloatArray, yq: FloatArray, shift: bool
) -> FloatArray:
    """Per query: ``(sum w K H, sum w K)``; with ``shift``, relative to the nearest defining event."""
    n, k = u.shape
    out = np.zeros((len(yq), 2))
    for i in prange(len(yq)):
        offset = 0.0
        if shift:
            offset = np.inf
            for j in range(n):
                d2 = 0.0
                for c in range(k):
                    d = uq[i, c] - u[j, c]
                    d2 += d * d
                offset = min(offset, d2)
        num = 0.0
        den = 0.0
        for j in range(n):
            d2 = 0.0
            for c in range(k):
                d = uq[i, c] - u[j, c]
                d2 += d * d
            value = w[j] * math.exp(-0.5 * (d2 - offset))
            den += value
            if y[j] <= yq[i]:
                num += value
        out[i, 0] = num
        out[i, 1] = den
    return out


@functools.cache
def _compiled() -> Any:
    if not numba_enabled():
        return None
    import numba

    return numba.njit(cache=True, nogil=True, parallel=True)(_sums_loop)


def _sums_numpy(
    u: FloatArray, y: FloatArray, w: FloatArray, uq: FloatArray, yq: FloatArray, shift: bool
) -> FloatArray:
    out = np.empty((len(yq), 2))
    block = max(1, BLOCK_ELEMENTS // max(len(y), 1))
    for start in range(0, len(yq), block):
        rows = slice(start, start + block)
        d2 = ((uq[rows, None, :] - u[None, :, :]) ** 2).sum(axis=2)
        if shift:
            d2 -= d2.min(axis=1, keepdims=True)
        kernel = w * np.exp(-0.5 * d2)
        out[rows, 0] = np.where(y[None, :] <= yq[rows, None], kernel, 0.0).sum(axis=1)
        out[rows, 1] = kernel.sum(axis=1)
    return out


def product_kernel_cdf(
    u: FloatArray, y: FloatArray, w: FloatArray, uq: FloatArray, yq: FloatArray
) -> FloatArray:
    """``gamma`` at the queries ``(uq, yq)`` from the defining ``(u, y, w)``, ``u`` in units of the widths.

    Returns the ratio of the kernel sums; NaN where the weighted kernel sum is
    not positive (negative weights dominating).
    """
    kernel = _compiled()
    sums = _sums_numpy if kernel is None else kernel
    out = sums(u, y, w, uq, yq, False)
    far = np.abs(out[:, 1]) < TINY
    if far.any():
        out[far] = sums(u, y, w, np.ascontiguousarray(uq[far]), yq[far], True)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(out[:, 1] > 0, out[:, 0] / out[:, 1], np.nan)
