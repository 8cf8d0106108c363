"""The O(n log n) kernels of the distance covariance terms.

:func:`_terms_loop` is written as loops for numba; :func:`_terms_numpy` is its
vectorised numpy twin. Both return the twelve event sums that
:func:`rosenblatt.metrics.distance._dependence_terms` combines.
"""

from __future__ import annotations

import math

import numpy as np

from rosenblatt.typing import FloatArray, IntArray

# With probabilities p_i (sum 1), a_i = sum_j p_j |x_i - x_j|, a = sum_i p_i a_i
# and the same for y (b_i, b):
#   dCov^2 = sum_ij p_i p_j |x_i - x_j| |y_i - y_j| - 2 sum_i p_i a_i b_i + a b
# The marginal sums a_i come from prefix sums over the sorted values. For the
# cross term, order the pairs i < j by x; a pair is concordant when
# rank(y_i) < rank(y_j). Then
#   sum_ij p_i p_j |dx| |dy| = 4 K - sum_ij p_i p_j (x_i - x_j)(y_i - y_j),
#   K = sum over concordant pairs of p_i p_j (x_j - x_i)(y_j - y_i),
# and K is accumulated per j from the sums of p, p x, p y and p x y over the
# concordant partners (Fenwick tree over y ranks, or bottom-up merge passes).


_N_SUMS = 12  # p, px, py, pxy, pxx, pyy, pa, pb, pab, paa, pbb, concordant
_BLOCK = 256  # events summed plainly before a compensated add


# one pass that keeps the twelve running sums in local variables of a single compiled loop
def _terms_loop(  # noqa: PLR0912, PLR0915
    x_sorted: FloatArray,
    y_by_x: FloatArray,
    prob: FloatArray,
    y_rank: IntArray,
    shuffle: IntArray,
) -> FloatArray:
    """The twelve event sums that :func:`_dependence_terms` combines.

    Written as loops for numba (see :mod:`rosenblatt._jit`); without numba,
    or with ``ROSENBLATT_NO_NUMBA=1``, :func:`_terms_numpy` does the same work.

    ``shuffle`` (empty for none) reassigns ``y``: event ``k`` in ``x`` order
    gets ``y_by_x[shuffle[k]]`` and rank ``y_rank[shuffle[k]]``. Sums are
    formed in blocks of ``_BLOCK`` events added with Neumaier compensation.
    """
    n = x_sorted.shape[0]
    if shuffle.shape[0] > 0:
        y_values = y_by_x[shuffle]
        ranks = y_rank[shuffle]
    else:
        y_values = y_by_x
        ranks = y_rank
    a = np.empty(n)
    b = np.empty(n)
    by_rank = np.empty(n, dtype=np.intp)
    for k in range(n):
        by_rank[ranks[k]] = k

    for coordinate in range(2):
        total_p = 0.0
        total_pv = 0.0
        comp_p = 0.0
        comp_pv = 0.0
        for r in range(n):
            k = r if coordinate == 0 else by_rank[r]
            v = x_sorted[k] if coordinate == 0 else y_values[k]
            p = prob[k]
            pv = p * v
            t = total_p + p
            comp_p += (total_p - t) + p if abs(total_p) >= abs(p) else (p - t) + total_p
            total_p = t
            t = total_pv + pv
            comp_pv += (total_pv - t) + pv if abs(total_pv) >= abs(pv) else (pv - t) + total_pv
            total_pv = t
        total_p += comp_p
        total_pv += comp_pv

        left_p = 0.0
        left_pv = 0.0
        comp_p = 0.0
        comp_pv = 0.0
        for r in range(n):
            k = r if coordinate == 0 else by_rank[r]
            v = x_sorted[k] if coordinate == 0 else y_values[k]
            p = prob[k]
            pv = p * v
            below_p = left_p + comp_p
            below_pv = left_pv + comp_pv
            above_p = total_p - below_p - p
            above_pv = total_pv - below_pv - pv
            value = v * (below_p - above_p) + (above_pv - below_pv)
            if coordinate == 0:
                a[k] = value
            else:
                b[k] = value
            t = left_p + p
            comp_p += (left_p - t) + p if abs(left_p) >= abs(p) else (p - t) + left_p
            left_p = t
            t = left_pv + pv
            comp_pv += (left_pv - t) + pv if abs(left_pv) >= abs(pv) else (pv - t) + left_pv
            left_pv = t

    sums = np.zeros(_N_SUMS)
    compensation = np.zeros(_N_SUMS)
    block = np.zeros(_N_SUMS)
    tree = np.zeros((n + 1, 4))
    for j in range(n):
        rank = ranks[j]
        c0 = 0.0
        cx = 0.0
        cy = 0.0
        cxy = 0.0
        i = rank
        while i > 0:
            c0 += tree[i, 0]
            cx += tree[i, 1]
            cy += tree[i, 2]
            cxy += tree[i, 3]
            i -= i & (-i)
        xj = x_sorted[j]
        yj = y_values[j]
        pj = prob[j]
        pxj = pj * xj
        pyj = pj * yj
        pxyj = pxj * yj
        i = rank + 1
        while i <= n:
            tree[i, 0] += pj
            tree[i, 1] += pxj
            tree[i, 2] += pyj
            tree[i, 3] += pxyj
            i += i & (-i)
        paj = pj * a[j]
        pbj = pj * b[j]
        block[0] += pj
        block[1] += pxj
        block[2] += pyj
        block[3] += pxyj
        block[4] += pxj * xj
        block[5] += pyj * yj
        block[6] += paj
        block[7] += pbj
        block[8] += paj * b[j]
        block[9] += paj * a[j]
        block[10] += pbj * b[j]
        block[11] += pxyj * c0 - pxj * cy - pyj * cx + pj * cxy
        if (j + 1) % _BLOCK == 0 or j == n - 1:
            for q in range(_N_SUMS):
                t = sums[q] + block[q]
                if abs(sums[q]) >= abs(block[q]):
                    compensation[q] += (sums[q] - t) + block[q]
                else:
                    compensation[q] += (block[q] - t) + sums[q]
                sums[q] = t
                block[q] = 0.0
    return sums + compensation


def _marginal_sums_sorted(values: FloatArray, prob: FloatArray) -> FloatArray:
    """``sum_j p_j |v_k - v_j|`` for ascending ``values``, by prefix sums."""
    cum_p = np.cumsum(prob)
    weighted = prob * values
    cum_pv = np.cumsum(weighted)
    total_p = cum_p[-1]
    total_pv = cum_pv[-1]
    below_p = cum_p - prob
    below_pv = cum_pv - weighted
    sums: FloatArray = values * (below_p - (total_p - cum_p)) + ((total_pv - cum_pv) - below_pv)
    return sums


def _concordant_sum_numpy(
    x_sorted: FloatArray, y_by_x: FloatArray, prob: FloatArray, y_rank: IntArray
) -> float:
    """The concordant-pair sum ``K`` by vectorised bottom-up merge passes.

    The events (padded with zero-probability events to a power of two) are
    held ordered by rank inside blocks of consecutive ``x`` positions. At each
    level a block is split into its left and right halves: every left event
    precedes every right event in ``x``, so the right events' concordant
    partners in the left half are the left events before them in rank order,
    a running sum along the block. A stable partition then yields the
    rank-ordered halves for the next level. Each level costs O(n).
    """
    n = x_sorted.size
    levels = max(1, (n - 1).bit_length())
    size = 1 << levels
    quantities = np.zeros((size, 4))
    quantities[:n, 0] = prob
    quantities[:n, 1] = prob * x_sorted
    quantities[:n, 2] = prob * y_by_x
    quantities[:n, 3] = quantities[:n, 1] * y_by_x
    rank = np.empty(size, dtype=np.intp)
    rank[:n] = y_rank
    rank[n:] = np.arange(n, size)
    position = np.empty(size, dtype=np.intp)
    position[rank] = np.arange(size)
    quantities = quantities[position]
    # K_j = p_j x_j y_j C0 - p_j x_j Cy - p_j y_j Cx + p_j Cxy, with C the sums
    # of (p, p x, p y, p x y) over partners: pair column k of C with coefficient
    # column partner[k] of the quantities times sign[k].
    partner = (3, 2, 1, 0)
    sign = (1.0, -1.0, -1.0, 1.0)
    partial_sums: list[float] = []
    for level in range(levels - 1, -1, -1):
        width = 2 << level
        blocks = position.reshape(-1, width)
        in_right = ((blocks >> level) & 1).astype(bool)
        by_block = quantities.reshape(-1, width, 4)
        for column in range(4):
            partner_sums = np.cumsum(np.where(in_right, 0.0, by_block[:, :, column]), axis=1)
            coefficient = np.where(in_right, by_block[:, :, partner[column]], 0.0)
            partial_sums.append(sign[column] * float(np.sum(partner_sums * coefficient)))
        within = np.argsort(in_right, axis=1, kind="stable")
        flat = (within + (np.arange(blocks.shape[0]) * width)[:, None]).ravel()
        position = position[flat]
        quantities = quantities[flat]
    return math.fsum(partial_sums)


def _terms_numpy(
    x_sorted: FloatArray,
    y_by_x: FloatArray,
    prob: FloatArray,
    y_rank: IntArray,
    shuffle: IntArray,
) -> FloatArray:
    """Pure-numpy counterpart of :func:`_terms_loop`."""
    if shuffle.size > 0:
        y_by_x = y_by_x[shuffle]
        y_rank = y_rank[shuffle]
    a = _marginal_sums_sorted(x_sorted, prob)
    by_rank = np.empty_like(y_rank)
    by_rank[y_rank] = np.arange(y_rank.size)
    b = np.empty_like(a)
    b[by_rank] = _marginal_sums_sorted(y_by_x[by_rank], prob[by_rank])
    px = prob * x_sorted
    py = prob * y_by_x
    pa = prob * a
    pb = prob * b
    sums = [
        np.sum(prob),
        np.sum(px),
        np.sum(py),
        np.sum(px * y_by_x),
        np.sum(px * x_sorted),
        np.sum(py * y_by_x),
        np.sum(pa),
        np.sum(pb),
        np.sum(pa * b),
        np.sum(pa * a),
        np.sum(pb * b),
        _concordant_sum_numpy(x_sorted, y_by_x, prob, y_rank),
    ]
    return np.array(sums, dtype=np.float64)
