"""Dependence and classification figures of merit, all with per-event weights.

Distance correlation
    :func:`distance_correlation_sqr` is the squared distance correlation
    (dCor², the V-statistic of Székely, Rizzo & Bakirov 2007), the "DCC" of the
    Rosenblatt-transform paper and the DisCo penalty. :func:`distance_correlation`
    is its square root and :func:`distance_covariance_sqr` the squared distance
    covariance, with the same conventions as the ``dcor`` package. The
    one-dimensional statistic is evaluated exactly in :math:`O(n \\log n)` time
    and :math:`O(n)` memory (Huo & Székely 2016), so millions of events are routine.
    :func:`permutation_test` puts a value in context: it reports the floor that
    independent samples of the same size reach and a permutation p-value.

Classification
    :func:`roc_curve` and :func:`roc_auc` follow scikit-learn exactly;
    :func:`background_rejection` (R50 at the default 50 % signal efficiency) and
    :func:`inverse_jsd` (1/JSD of the background mass shape passing and failing
    that cut) are the figures quoted in the decorrelation literature
    (Kitouni et al. 2021; Klein & Golling 2022; Algren et al. 2023).

Weights
    Every function takes an optional per-event ``weight``. Weights act as
    frequencies: integer weights give exactly the result of repeating each event
    that many times. Weights may be negative (Monte Carlo weights), but the
    total must be positive; see each function for what negative weights do.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from rosenblatt._jit import compiled
from rosenblatt._validation import as_1d_float, as_weight, check_finite, check_same_length

__all__ = [
    "PermutationTestResult",
    "background_rejection",
    "distance_correlation",
    "distance_correlation_sqr",
    "distance_covariance_sqr",
    "inverse_jsd",
    "permutation_test",
    "roc_auc",
    "roc_curve",
]

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.intp]


# ---------------------------------------------------------------------------
# Distance correlation: input preparation
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class _SortedPair:
    """A weighted sample of pairs sorted by ``x``, rescaled for stable arithmetic.

    ``x_sorted`` ascending, ``y_by_x`` and ``prob_by_x`` follow the same order,
    ``y_rank`` is the ordinal rank (0 ... n-1, ties broken arbitrarily) of each
    ``y_by_x`` entry. Both coordinates are mapped onto [-1, 1] and then centred
    on their weighted mean (shift and scale leave dCor² unchanged);
    ``x_scale`` and ``y_scale`` undo the scaling for dCov².
    """

    x_sorted: FloatArray
    y_by_x: FloatArray
    prob_by_x: FloatArray
    y_rank: IntArray
    x_scale: float
    y_scale: float
    x_constant: bool
    y_constant: bool


def _standardise(values: FloatArray, support: NDArray[np.bool_]) -> tuple[FloatArray, float, bool]:
    """Map the range of ``values`` over the events in ``support`` onto [-1, 1].

    Returns the mapped values, the factor that undoes the scaling, and whether
    the values are constant on ``support``. Halves are taken before
    differences so that no intermediate overflows.
    """
    on_support = values[support]
    low, high = float(on_support.min()), float(on_support.max())
    if low == high:
        return np.zeros_like(values), 1.0, True
    half_range = 0.5 * high - 0.5 * low
    centre = 0.5 * low + 0.5 * high
    return (0.5 * values - 0.5 * centre) / (0.5 * half_range), half_range, False


def _prepare_pair(x: ArrayLike, y: ArrayLike, weight: ArrayLike | None) -> _SortedPair:
    """Validate ``x``, ``y`` and ``weight`` and sort them for the fast algorithm."""
    x_arr = as_1d_float(x, "x")
    y_arr = as_1d_float(y, "y")
    check_same_length(x=x_arr, y=y_arr)
    n_events = x_arr.size
    if n_events < 2:
        msg = f"x and y have {n_events} event: distance correlation needs at least 2"
        raise ValueError(msg)
    check_finite(x_arr, "x")
    check_finite(y_arr, "y")
    w = as_weight(weight, n_events)
    if w is None:
        prob = np.full(n_events, 1.0 / n_events)
        support = np.ones(n_events, dtype=bool)
    else:
        prob = w / math.fsum(w)
        support = w != 0
    x_std, x_scale, x_constant = _standardise(x_arr, support)
    y_std, y_scale, y_constant = _standardise(y_arr, support)
    # Centring on the weighted mean keeps E[v^2] - E[v]^2 and the marginal sums
    # free of cancellation when the weight sits near one end of the range.
    x_std -= np.clip(float(np.sum(prob * x_std)), -1.0, 1.0)
    y_std -= np.clip(float(np.sum(prob * y_std)), -1.0, 1.0)
    order = np.argsort(x_std)
    y_by_x = y_std[order]
    y_rank = np.empty(n_events, dtype=np.intp)
    y_rank[np.argsort(y_by_x)] = np.arange(n_events)
    return _SortedPair(
        x_sorted=x_std[order],
        y_by_x=y_by_x,
        prob_by_x=prob[order],
        y_rank=y_rank,
        x_scale=x_scale,
        y_scale=y_scale,
        x_constant=x_constant,
        y_constant=y_constant,
    )


# ---------------------------------------------------------------------------
# Distance correlation: the O(n log n) kernels
#
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
# ---------------------------------------------------------------------------


_N_SUMS = 12  # p, px, py, pxy, pxx, pyy, pa, pb, pab, paa, pbb, concordant
_BLOCK = 256  # events summed plainly before a compensated add


def _terms_loop(
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
    return values * (below_p - (total_p - cum_p)) + ((total_pv - cum_pv) - below_pv)


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


_NO_SHUFFLE = np.empty(0, dtype=np.intp)


def _dependence_terms(
    x_sorted: FloatArray,
    y_by_x: FloatArray,
    prob: FloatArray,
    y_rank: IntArray,
    shuffle: IntArray = _NO_SHUFFLE,
) -> tuple[float, float, float]:
    """Return (dCov², dVar²(x), dVar²(y)) of the standardised sorted sample."""
    kernel = compiled(_terms_loop)
    terms = _terms_numpy if kernel is None else kernel
    sums = terms(x_sorted, y_by_x, prob, y_rank, shuffle)
    total, sum_x, sum_y, sxy, sxx, syy, sum_a, sum_b, sab, saa, sbb, concordant = (
        float(v) for v in sums
    )
    # Every term is divided by the power of ``total`` that matches its degree
    # in the probabilities, so rounding in sum(prob) = 1 cancels out.
    total_2 = total * total
    total_3 = total_2 * total
    pair_xy = 2.0 * (total * sxy - sum_x * sum_y) / total_2
    pair_xx = 2.0 * (total * sxx - sum_x * sum_x) / total_2
    pair_yy = 2.0 * (total * syy - sum_y * sum_y) / total_2
    a_mean = sum_a / total_2
    b_mean = sum_b / total_2
    cross = 4.0 * concordant / total_2 - pair_xy
    dcov_sqr = cross - 2.0 * sab / total_3 + a_mean * b_mean
    dvar_x_sqr = pair_xx - 2.0 * saa / total_3 + a_mean * a_mean
    dvar_y_sqr = pair_yy - 2.0 * sbb / total_3 + b_mean * b_mean
    return dcov_sqr, dvar_x_sqr, dvar_y_sqr


#: Distance variances below this, in units of the squared half-range of the
#: variable, are rounding noise: the weights concentrate on a single value.
_VARIANCE_FLOOR = 1e-12


def _correlation_from_terms(
    pair: _SortedPair, dcov_sqr: float, dvar_x_sqr: float, dvar_y_sqr: float
) -> float:
    """dCor² from the distance covariance and variances of ``pair``."""
    if pair.x_constant or pair.y_constant:
        return 0.0
    if dvar_x_sqr <= _VARIANCE_FLOOR or dvar_y_sqr <= _VARIANCE_FLOOR:
        return 0.0
    return dcov_sqr / math.sqrt(dvar_x_sqr * dvar_y_sqr)


def distance_covariance_sqr(x: ArrayLike, y: ArrayLike, weight: ArrayLike | None = None) -> float:
    """Squared distance covariance dCov²(x, y), the V-statistic.

    Equal to ``dcor.distance_covariance_sqr(x, y)`` for unweighted
    one-dimensional data.

    Parameters
    ----------
    x, y
        One value per event, the same number of events (at least 2), finite.
    weight
        Optional per-event weights. They enter as probabilities
        ``p_i = w_i / sum(w)``, so integer weights reproduce the statistic of
        the sample with each event repeated ``w_i`` times. Negative weights are
        allowed (total positive); see :func:`distance_correlation_sqr`.

    Returns
    -------
    float
        ``sum_ij p_i p_j A_ij B_ij`` with ``A`` and ``B`` the doubly centred
        distance matrices of ``x`` and ``y``; in the units of ``x`` times ``y``.

    Raises
    ------
    ValueError
        On NaN or infinite values, mismatched lengths, fewer than two events
        or weights with a non-positive total.
    """
    pair = _prepare_pair(x, y, weight)
    if pair.x_constant or pair.y_constant:
        return 0.0
    dcov_sqr, _, _ = _dependence_terms(pair.x_sorted, pair.y_by_x, pair.prob_by_x, pair.y_rank)
    return dcov_sqr * pair.x_scale * pair.y_scale


def distance_correlation_sqr(x: ArrayLike, y: ArrayLike, weight: ArrayLike | None = None) -> float:
    """Squared distance correlation dCor²(x, y): the "DCC" of the paper.

    The V-statistic of Székely, Rizzo & Bakirov (2007),
    ``dCov²(x, y) / sqrt(dCov²(x, x) dCov²(y, y))``; equal to
    ``dcor.distance_correlation_sqr(x, y)`` for unweighted one-dimensional
    data. It is 0 for independent variables in the large-sample limit; for a
    finite independent sample it is positive (about 1e-4 at 2x10^4 events),
    see :func:`permutation_test` for that floor.

    Computed exactly in O(n log n) time and O(n) memory: sort by ``x``,
    prefix sums for the marginal terms, a Fenwick tree over the ranks of ``y``
    for the cross term (numba when installed, otherwise vectorised numpy merge
    passes). The data are shifted and scaled onto [-1, 1] first and the sums
    are compensated, so 10^7 events keep full precision.

    Parameters
    ----------
    x, y
        One value per event, the same number of events (at least 2), finite.
    weight
        Optional per-event weights, used as probabilities ``w_i / sum(w)`` in
        every sum over events and pairs: integer weights give exactly the value
        of the sample with each event repeated ``w_i`` times, and zero-weight
        events do not count. Negative weights are allowed as long as the total
        is positive: the same formula is evaluated with the signed weights.
        Distance covariance and variances are then still non-negative (they
        are weighted integrals of squared differences of characteristic
        functions, which needs no positivity), but the Cauchy-Schwarz bound
        is lost, so dCor² is ``>= 0`` but may exceed 1 when negative weights
        are large.

    Returns
    -------
    float
        dCor², in [0, 1] for non-negative weights. If ``x`` or ``y`` is
        constant over the events with non-zero weight, or the weights cancel
        down to one value so that its distance variance falls below 1e-12 of
        its squared half-range (rounding level), the distance variance
        vanishes and the result is defined as 0, as in ``dcor``.

    Raises
    ------
    ValueError
        On NaN or infinite values (naming the argument and the count),
        mismatched lengths, fewer than two events or weights with a
        non-positive total.
    """
    pair = _prepare_pair(x, y, weight)
    if pair.x_constant or pair.y_constant:
        return 0.0
    terms = _dependence_terms(pair.x_sorted, pair.y_by_x, pair.prob_by_x, pair.y_rank)
    return _correlation_from_terms(pair, *terms)


def distance_correlation(x: ArrayLike, y: ArrayLike, weight: ArrayLike | None = None) -> float:
    """Distance correlation dCor(x, y), the square root of :func:`distance_correlation_sqr`.

    Equal to ``dcor.distance_correlation(x, y)`` for unweighted data. dCor² is
    never negative in exact arithmetic; a rounding-level negative value of an
    almost independent sample is returned as 0.

    Parameters
    ----------
    x, y, weight
        As for :func:`distance_correlation_sqr`.

    Returns
    -------
    float
        dCor in [0, 1] for non-negative weights.
    """
    pair = _prepare_pair(x, y, weight)
    if pair.x_constant or pair.y_constant:
        return 0.0
    terms = _dependence_terms(pair.x_sorted, pair.y_by_x, pair.prob_by_x, pair.y_rank)
    return math.sqrt(max(_correlation_from_terms(pair, *terms), 0.0))


# ---------------------------------------------------------------------------
# Permutation floor and test
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class PermutationTestResult:
    """Outcome of :func:`permutation_test`.

    Attributes
    ----------
    statistic
        dCor² of the sample.
    floor
        Mean dCor² over the permuted samples: the value that independent
        variables with these marginals and this many events give.
    floor_std
        Standard deviation (``ddof=1``) of the permuted values; 0 for a single
        permutation.
    p_value
        ``(1 + #{permuted >= statistic}) / (1 + n_permutations)``, the
        probability of a value at least as large under independence. Its
        smallest possible value is ``1 / (1 + n_permutations)``.
    n_permutations
        Number of permutations drawn.
    """

    statistic: float
    floor: float
    floor_std: float
    p_value: float
    n_permutations: int


def _usable_cores() -> int:
    """Number of CPU cores this process may run on."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def permutation_test(
    x: ArrayLike,
    y: ArrayLike,
    weight: ArrayLike | None = None,
    n_permutations: int = 100,
    seed: int | np.random.Generator | None = None,
    *,
    n_jobs: int | None = None,
    progress: bool = False,
) -> PermutationTestResult:
    """Permutation floor and test of independence for dCor².

    Each permutation shuffles ``y`` across events while every event keeps its
    ``x`` and its weight, which destroys any dependence and keeps both
    marginal distributions (exactly for equal weights). The sort of ``x`` and
    the ranks of ``y`` are computed once and reused, so one permutation costs
    a single O(n) shuffle plus the O(n log n) pass of
    :func:`distance_correlation_sqr`.

    Parameters
    ----------
    x, y, weight
        As for :func:`distance_correlation_sqr`.
    n_permutations
        Number of permutations (at least 1).
    seed
        Seed or generator. Permutation ``k`` uses its own stream derived from
        it, so the result does not depend on ``n_jobs``.
    n_jobs
        Worker threads (the numba kernel releases the GIL). Default: all cores
        this process may use.
    progress
        Show a tqdm progress bar (needs ``tqdm``).

    Returns
    -------
    PermutationTestResult
        The statistic, the permutation floor and its spread, and the p-value.
        If ``x`` or ``y`` is constant (see :func:`distance_correlation_sqr`)
        every value is 0 and the p-value is 1.

    Raises
    ------
    ValueError
        On invalid input (as :func:`distance_correlation_sqr`), ``n_permutations < 1``
        or ``n_jobs < 1``.
    """
    if isinstance(n_permutations, bool) or int(n_permutations) != n_permutations:
        msg = f"n_permutations must be an integer, got {n_permutations!r}"
        raise ValueError(msg)
    n_permutations = int(n_permutations)
    if n_permutations < 1:
        msg = f"n_permutations must be at least 1, got {n_permutations}"
        raise ValueError(msg)
    workers = _usable_cores() if n_jobs is None else int(n_jobs)
    if workers < 1:
        msg = f"n_jobs must be at least 1, got {n_jobs}"
        raise ValueError(msg)

    pair = _prepare_pair(x, y, weight)
    if pair.x_constant or pair.y_constant:
        return PermutationTestResult(0.0, 0.0, 0.0, 1.0, n_permutations)

    def correlation(shuffle: IntArray) -> float:
        terms = _dependence_terms(pair.x_sorted, pair.y_by_x, pair.prob_by_x, pair.y_rank, shuffle)
        return _correlation_from_terms(pair, *terms)

    statistic = correlation(_NO_SHUFFLE)
    stream_seeds = np.random.default_rng(seed).integers(
        0, np.iinfo(np.int64).max, size=n_permutations, dtype=np.int64
    )
    n_events = pair.x_sorted.size

    def permuted(stream_seed: np.int64) -> float:
        return correlation(np.random.default_rng(int(stream_seed)).permutation(n_events))

    if workers == 1:
        values = _collect(map(permuted, stream_seeds), n_permutations, progress)
    else:
        with ThreadPoolExecutor(max_workers=workers) as pool:
            values = _collect(pool.map(permuted, stream_seeds), n_permutations, progress)
    floor_std = float(np.std(values, ddof=1)) if n_permutations > 1 else 0.0
    n_at_least = int(np.count_nonzero(values >= statistic))
    return PermutationTestResult(
        statistic=statistic,
        floor=float(np.mean(values)),
        floor_std=floor_std,
        p_value=(1 + n_at_least) / (1 + n_permutations),
        n_permutations=n_permutations,
    )


def _collect(values: Any, total: int, progress: bool) -> FloatArray:
    """Gather an iterator of floats into an array, with an optional progress bar."""
    if progress:
        try:
            from tqdm.auto import tqdm
        except ImportError as err:
            msg = "progress=True needs tqdm: pip install tqdm"
            raise ImportError(msg) from err
        values = tqdm(values, total=total, desc="permutations", unit="perm")
    return np.fromiter(values, dtype=np.float64, count=total)


# ---------------------------------------------------------------------------
# ROC curve, AUC, background rejection, 1/JSD
# ---------------------------------------------------------------------------


def _as_label(label: ArrayLike) -> NDArray[np.bool_]:
    """Validate a 0/1 (or boolean) label array and return it as booleans."""
    values = as_1d_float(label, "label")
    not_binary = (values != 0) & (values != 1)
    if not_binary.any():
        first = int(np.flatnonzero(not_binary)[0])
        msg = (
            f"label must be 0 (background) or 1 (signal): {int(not_binary.sum())} of "
            f"{values.size} value(s) are neither (first at index {first}: {values[first]!r})"
        )
        raise ValueError(msg)
    return values == 1


def _classification_inputs(
    label: ArrayLike, score: ArrayLike, weight: ArrayLike | None
) -> tuple[NDArray[np.bool_], FloatArray, FloatArray | None]:
    """Validate label, score and weight; require both classes with positive weight."""
    is_signal = _as_label(label)
    score_arr = as_1d_float(score, "score")
    check_same_length(label=is_signal, score=score_arr)
    check_finite(score_arr, "score")
    w = as_weight(weight, score_arr.size)
    for name, members in (("signal (label 1)", is_signal), ("background (label 0)", ~is_signal)):
        count = int(members.sum())
        if count == 0:
            msg = f"label has no {name} events out of {is_signal.size}: both classes are needed"
            raise ValueError(msg)
        if w is not None:
            total = math.fsum(w[members])
            if not total > 0:
                msg = (
                    f"the {count} {name} events have total weight {total:g}: "
                    "each class needs a positive total weight"
                )
                raise ValueError(msg)
    return is_signal, score_arr, w


def _cumulative_rates(
    is_signal: NDArray[np.bool_], score: FloatArray, weight: FloatArray | None
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Cumulative background and signal weight above each distinct score (descending)."""
    if weight is not None:
        keep = weight != 0
        is_signal, score, weight = is_signal[keep], score[keep], weight[keep]
    order = np.argsort(score, kind="stable")[::-1]
    score = score[order]
    truth = is_signal[order].astype(np.float64)
    distinct = np.flatnonzero(np.diff(score))
    threshold_index = np.r_[distinct, truth.size - 1]
    if weight is None:
        true_pos = np.cumsum(truth)[threshold_index]
        false_pos = 1 + threshold_index - true_pos
    else:
        w = weight[order]
        true_pos = np.cumsum(truth * w)[threshold_index]
        false_pos = np.cumsum((1 - truth) * w)[threshold_index]
    return false_pos, true_pos, score[threshold_index]


def roc_curve(
    label: ArrayLike,
    score: ArrayLike,
    weight: ArrayLike | None = None,
    *,
    drop_intermediate: bool = True,
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Receiver operating characteristic, as ``sklearn.metrics.roc_curve``.

    An event is selected when ``score >= threshold``. The curve starts at
    (0, 0) with threshold ``+inf``; tied scores form one point; zero-weight
    events are ignored; with ``drop_intermediate`` collinear points are
    dropped, exactly as scikit-learn does.

    Parameters
    ----------
    label
        1 (or True) for signal, 0 (or False) for background.
    score
        Classifier output, larger meaning more signal-like.
    weight
        Optional per-event weights (each class needs a positive total).
    drop_intermediate
        Drop thresholds whose point lies on a straight segment of the curve.

    Returns
    -------
    fpr, tpr, thresholds
        Background efficiency, signal efficiency, and the thresholds in
        decreasing order.

    Raises
    ------
    ValueError
        If a label is not 0/1, a class is missing or has non-positive total
        weight, or scores/weights are not finite.
    """
    is_signal, score_arr, w = _classification_inputs(label, score, weight)
    false_pos, true_pos, thresholds = _cumulative_rates(is_signal, score_arr, w)
    if drop_intermediate and false_pos.size > 2:
        corner = np.logical_or(np.diff(false_pos, 2), np.diff(true_pos, 2))
        keep = np.flatnonzero(np.r_[True, corner, True])
        false_pos, true_pos, thresholds = false_pos[keep], true_pos[keep], thresholds[keep]
    false_pos = np.r_[0.0, false_pos]
    true_pos = np.r_[0.0, true_pos]
    thresholds = np.r_[np.inf, thresholds]
    return false_pos / false_pos[-1], true_pos / true_pos[-1], thresholds


def roc_auc(label: ArrayLike, score: ArrayLike, weight: ArrayLike | None = None) -> float:
    """Area under the ROC curve, as ``sklearn.metrics.roc_auc_score``.

    The trapezoidal area under :func:`roc_curve`: the probability that a
    signal event scores higher than a background event, ties counting one
    half. With negative weights the curve need not be monotone; the signed
    trapezoidal area is returned.

    Parameters
    ----------
    label, score, weight
        As for :func:`roc_curve`.

    Returns
    -------
    float
        The AUC (0.5 for a score independent of the label).
    """
    from scipy.integrate import trapezoid

    false_rate, true_rate, _ = roc_curve(label, score, weight)
    return float(trapezoid(true_rate, false_rate))


def _check_efficiency(signal_efficiency: float) -> float:
    value = float(signal_efficiency)
    if not 0 < value <= 1:
        msg = f"signal_efficiency must be in (0, 1], got {signal_efficiency!r}"
        raise ValueError(msg)
    return value


def background_rejection(
    label: ArrayLike,
    score: ArrayLike,
    signal_efficiency: float = 0.5,
    weight: ArrayLike | None = None,
) -> float:
    """Background rejection ``1 / eps_B`` at a fixed signal efficiency (R50 by default).

    ``eps_B`` is read off the ROC curve at signal efficiency
    ``signal_efficiency``: at the tightest threshold whose signal efficiency
    equals it when one does, otherwise by linear interpolation between the two
    neighbouring thresholds (the usual ``np.interp`` of the ROC curve).

    Parameters
    ----------
    label, score, weight
        As for :func:`roc_curve`.
    signal_efficiency
        Target fraction of the signal weight passing the cut, in (0, 1].

    Returns
    -------
    float
        ``1 / eps_B``; ``inf`` when no background passes.
    """
    efficiency = _check_efficiency(signal_efficiency)
    false_rate, true_rate, _ = roc_curve(label, score, weight, drop_intermediate=False)
    k = int(np.argmax(true_rate >= efficiency))
    if true_rate[k] == efficiency:
        background_efficiency = float(false_rate[k])
    else:
        fraction = (efficiency - true_rate[k - 1]) / (true_rate[k] - true_rate[k - 1])
        background_efficiency = float(
            false_rate[k - 1] + fraction * (false_rate[k] - false_rate[k - 1])
        )
    if background_efficiency <= 0:
        return math.inf
    return 1.0 / background_efficiency


def _jsd_base2(first: FloatArray, second: FloatArray) -> float:
    """Jensen-Shannon divergence (bits) of two normalised histograms."""
    from scipy.special import rel_entr

    middle = 0.5 * (first + second)
    nats = 0.5 * (np.sum(rel_entr(first, middle)) + np.sum(rel_entr(second, middle)))
    return float(nats) / math.log(2.0)


def _x_axis(bins: int | Sequence[float] | Any, x_background: FloatArray) -> Any:
    """The ``hist`` axis described by ``bins`` (see :func:`inverse_jsd`)."""
    import hist

    if isinstance(bins, bool):
        msg = f"bins must be a number of bins, bin edges or an axis, got {bins!r}"
        raise TypeError(msg)
    if isinstance(bins, (int, np.integer)):
        if bins < 1:
            msg = f"bins must be at least 1, got {bins}"
            raise ValueError(msg)
        low, high = float(x_background.min()), float(x_background.max())
        if low == high:
            high = low + 1.0
        return hist.axis.Regular(int(bins), low, float(np.nextafter(high, np.inf)))
    if hasattr(bins, "edges"):
        return bins
    edges = np.asarray(bins, dtype=np.float64)
    if edges.ndim != 1 or edges.size < 2 or not np.all(np.isfinite(edges)):
        msg = f"bins edges must be at least two finite numbers, got {edges.size} value(s)"
        raise ValueError(msg)
    if not np.all(np.diff(edges) > 0):
        msg = f"bins edges must be strictly increasing, {int((np.diff(edges) <= 0).sum())} are not"
        raise ValueError(msg)
    return hist.axis.Variable(edges)


def inverse_jsd(
    x: ArrayLike,
    label: ArrayLike,
    score: ArrayLike,
    signal_efficiency: float = 0.5,
    weight: ArrayLike | None = None,
    bins: int | Sequence[float] | Any = 50,
) -> float:
    """1/JSD of the background ``x`` shape passing and failing a score cut.

    The mass-sculpting figure of the decorrelation literature (Kitouni et al.
    2021, Algren et al. 2023): cut on ``score`` at a fixed signal efficiency,
    fill the background ``x`` values that pass and those that fail into two
    weighted histograms (boost-histogram via ``hist``), normalise each to unit
    sum and return the inverse of their Jensen-Shannon divergence
    ``JSD(P, Q) = KL(P, M)/2 + KL(Q, M)/2``, ``M = (P + Q)/2``, in bits
    (log base 2, so JSD is in [0, 1] and 1/JSD >= 1). Larger is better; a
    score independent of ``x`` gives a value limited only by the histogram
    statistics.

    The cut keeps events with ``score >= t``, ``t`` the largest threshold of
    :func:`roc_curve` whose signal efficiency reaches ``signal_efficiency``.

    Parameters
    ----------
    x
        Protected observable (e.g. the dijet mass in GeV), one per event.
    label, score, weight
        As for :func:`roc_curve`.
    signal_efficiency
        Signal efficiency of the cut, in (0, 1].
    bins
        Binning of ``x``: a number of equal-width bins spanning the background
        ``x`` range from its minimum to its maximum (both included, default
        50); an increasing sequence of bin edges; or a ``hist``/boost-histogram
        axis. With explicit edges or an axis every background event must fall
        inside, nothing is dropped silently.

    Returns
    -------
    float
        ``1 / JSD``; ``inf`` when the two shapes are identical.

    Raises
    ------
    ValueError
        On invalid inputs, when no background event passes or none fails the
        cut, when a background event lies outside the given binning, or when
        negative weights leave a bin with negative content.
    """
    import hist

    efficiency = _check_efficiency(signal_efficiency)
    x_arr = as_1d_float(x, "x")
    check_finite(x_arr, "x")
    is_signal, score_arr, w = _classification_inputs(label, score, weight)
    check_same_length(x=x_arr, label=is_signal)
    _, true_rate, thresholds = roc_curve(is_signal, score_arr, w, drop_intermediate=False)
    threshold = thresholds[int(np.argmax(true_rate >= efficiency))]

    background = ~is_signal
    x_bkg = x_arr[background]
    w_bkg = np.ones(x_bkg.size) if w is None else w[background]
    passing = score_arr[background] >= threshold

    axis = _x_axis(bins, x_bkg)
    edges = np.asarray(axis.edges, dtype=np.float64)
    outside = (x_bkg < edges[0]) | (x_bkg >= edges[-1])
    if outside.any():
        msg = (
            f"bins: {int(outside.sum())} of {x_bkg.size} background x value(s) lie outside "
            f"[{edges[0]:g}, {edges[-1]:g}); widen the binning"
        )
        raise ValueError(msg)

    contents = []
    for name, members in (("passes", passing), ("fails", ~passing)):
        histogram = hist.Hist(axis, storage=hist.storage.Weight())
        histogram.fill(x_bkg[members], weight=w_bkg[members])
        inside = histogram.values()
        total = float(inside.sum())
        if not total > 0:
            msg = (
                f"no background weight {name} the cut at signal efficiency {efficiency:g} "
                f"({int(members.sum())} of {x_bkg.size} background events, total weight "
                f"{total:g}): the JSD is undefined"
            )
            raise ValueError(msg)
        if (inside < 0).any():
            msg = (
                f"{int((inside < 0).sum())} bin(s) of the background that {name} the cut "
                "have negative content (negative weights): the JSD is undefined"
            )
            raise ValueError(msg)
        contents.append(inside / total)
    divergence = _jsd_base2(contents[0], contents[1])
    if divergence <= 0:
        return math.inf
    return 1.0 / divergence
