"""Exact fast evaluation of the kernel-weighted conditional CDF.

``num(x, y) = sum_i w_i K_h(x - x_i) [y_i <= y]`` and ``den(x) = sum_i w_i K_h(x - x_i)``
with a Gaussian ``K_h`` are evaluated with a Hermite expansion of the kernel
about the centres of boxes of width ``sqrt(2) h`` in ``x`` (the fast Gauss
transform). Inside each box the events are ordered by ``y``, and cumulative
sums of their expansion moments give the sum over ``y_i <= y`` for any ``y``
by one binary search. A query costs ``O(R P + R log N)`` for ``R`` neighbouring
boxes and ``P`` expansion terms, independent of ``N``; the truncation error is
far below 1e-9 relative to the kernel sum. Queries far from every defining
event (in gaps of the sample wider than a few ``h``), where the expansion
loses relative precision, are evaluated directly. A kernel so narrow that the
boxes would far outnumber the events (:meth:`ConditionalGaussTransform.suits`)
is left to the direct sum, whose memory does not grow with the number of boxes.
"""

from __future__ import annotations

import math

import numpy as np

from rosenblatt._jit import compiled
from rosenblatt.transforms._kernels import gauss_expansion
from rosenblatt.typing import FloatArray

__all__ = ["ConditionalGaussTransform", "direct_conditional_cdf"]

#: number of Hermite terms of the expansion
N_TERMS = 24
#: boxes on each side of the query's box that are summed
REACH = 8
#: queries whose nearest defining event is farther (in units of sqrt(2) h) are done directly
FAR = 3.0
#: queries per vectorised block
BLOCK = 1 << 14
#: most boxes per defining event (beyond a fixed allowance) for which the boxes are built
BOXES_PER_EVENT, BOX_ALLOWANCE = 8, 4096


def direct_conditional_cdf(
    x_def: FloatArray,
    y_def: FloatArray,
    w_def: FloatArray,
    bandwidth: float,
    x: FloatArray,
    y: FloatArray,
    block: int = 256,
) -> FloatArray:
    """The kernel-weighted conditional CDF by the direct ``O(M N)`` sum.

    The kernel of each query is scaled by that of its nearest defining event
    before exponentiation, which leaves the ratio unchanged and keeps it finite
    for queries far from the sample.
    """
    out = np.empty(len(x))
    scale = 1.0 / (2.0 * bandwidth * bandwidth)
    for start in range(0, len(x), block):
        xq, yq = x[start : start + block], y[start : start + block]
        exponent = (xq[:, None] - x_def[None, :]) ** 2 * scale
        exponent -= exponent.min(axis=1, keepdims=True)
        kernel = np.exp(-exponent) * w_def[None, :]
        den = kernel.sum(axis=1)
        num = np.where(y_def[None, :] <= yq[:, None], kernel, 0.0).sum(axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            out[start : start + block] = np.where(den > 0, num / den, np.nan)
    return out


class ConditionalGaussTransform:
    """Precomputed boxes and moments of a defining sample for fast queries.

    Parameters
    ----------
    x_def, y_def, w_def
        The defining sample and its weights.
    bandwidth
        Width ``h`` of the Gaussian kernel in ``x``.
    """

    @staticmethod
    def suits(x_def: FloatArray, bandwidth: float) -> bool:
        """Whether the boxes of a sample and width stay few: at most a few per event.

        The boxes span the sample's range in steps of ``sqrt(2) h``; a width far
        below the spacing of the events (a tampered file, a width of 1e-9) would
        make billions of them, nearly all empty.
        """
        span = float(np.max(x_def) - np.min(x_def)) / (math.sqrt(2.0) * bandwidth)
        return span < BOXES_PER_EVENT * len(x_def) + BOX_ALLOWANCE

    def __init__(
        self,
        x_def: FloatArray,
        y_def: FloatArray,
        w_def: FloatArray,
        bandwidth: float,
    ) -> None:
        if not self.suits(x_def, bandwidth):
            msg = (
                f"a kernel width of {bandwidth:g} makes too many boxes for {len(x_def)} "
                "events: evaluate it directly (direct_conditional_cdf)"
            )
            raise ValueError(msg)
        n = len(x_def)
        self.x_def, self.y_def, self.w_def = x_def, y_def, w_def
        self.bandwidth = bandwidth
        self.origin = float(x_def.min())
        self.unit = math.sqrt(2.0) * bandwidth
        self.y_sorted = np.sort(y_def)
        s = (x_def - self.origin) / self.unit
        self.s_sorted = np.sort(s)
        box = np.floor(s).astype(np.int64)
        self.n_boxes = int(box.max()) + 1
        self.stride = n + 1
        rank = np.searchsorted(self.y_sorted, y_def, side="right")
        key = box * self.stride + rank
        order = np.argsort(key, kind="stable")
        self.key = key[order]
        offset = s[order] - (box[order] + 0.5)
        factorial = np.array([math.factorial(p) for p in range(N_TERMS)], dtype=np.float64)
        moments = w_def[order, None] * offset[:, None] ** np.arange(N_TERMS) / factorial
        self.cumulative = np.zeros((n + 1, N_TERMS))
        np.cumsum(moments, axis=0, out=self.cumulative[1:])
        bounds = np.searchsorted(self.key, np.arange(self.n_boxes + 1) * self.stride, side="left")
        self.box_start = bounds[:-1]
        self.box_total = self.cumulative[bounds[1:]] - self.cumulative[bounds[:-1]]

    def __call__(self, x: FloatArray, y: FloatArray) -> FloatArray:
        """``gamma`` at the query points (``x`` inside the defining range)."""
        out = np.empty(len(x))
        for start in range(0, len(x), BLOCK):
            stop = start + BLOCK
            out[start:stop] = self._block(x[start:stop], y[start:stop])
        return out

    def _block(self, x: FloatArray, y: FloatArray) -> FloatArray:
        t = (x - self.origin) / self.unit
        nearest = self._nearest_distance(t)
        far = nearest > FAR
        near = ~far
        result = np.empty(len(x))
        if far.any():
            result[far] = direct_conditional_cdf(
                self.x_def, self.y_def, self.w_def, self.bandwidth, x[far], y[far]
            )
        if near.any():
            result[near] = self._expand(t[near], y[near])
        return result

    def _nearest_distance(self, t: FloatArray) -> FloatArray:
        s = self.s_sorted
        idx = np.searchsorted(s, t)
        left = np.abs(t - s[np.clip(idx - 1, 0, len(s) - 1)])
        right = np.abs(s[np.clip(idx, 0, len(s) - 1)] - t)
        return np.minimum(left, right)

    def _expand(self, t: FloatArray, y: FloatArray) -> FloatArray:
        rank = np.searchsorted(self.y_sorted, y, side="right")
        kernel = compiled(gauss_expansion, parallel=True)
        if kernel is not None:
            out = np.empty(len(t))
            kernel(
                t,
                rank.astype(np.int64),
                self.key,
                self.cumulative,
                self.box_start.astype(np.int64),
                self.box_total,
                self.stride,
                REACH,
                out,
            )
            return out
        home = np.floor(t).astype(np.int64)
        num = np.zeros(len(t))
        den = np.zeros(len(t))
        hermite = np.empty((len(t), N_TERMS))
        for shift in range(-REACH, REACH + 1):
            box = home + shift
            inside = (box >= 0) & (box < self.n_boxes)
            if not inside.any():
                continue
            b = box[inside]
            u = t[inside] - (b + 0.5)
            h = hermite[: len(b)]
            h[:, 0] = np.exp(-u * u)
            h[:, 1] = 2.0 * u * h[:, 0]
            for p in range(1, N_TERMS - 1):
                h[:, p + 1] = 2.0 * u * h[:, p] - 2.0 * p * h[:, p - 1]
            den[inside] += np.einsum("ij,ij->i", self.box_total[b], h)
            position = np.searchsorted(self.key, b * self.stride + rank[inside], side="right")
            below = self.cumulative[position] - self.cumulative[self.box_start[b]]
            num[inside] += np.einsum("ij,ij->i", below, h)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(den > 0, num / den, np.nan)
