"""Distance covariance and distance correlation, weighted, in O(n log n).

:func:`distance_correlation_sqr` is the squared distance correlation (dCor²,
the V-statistic of Székely, Rizzo & Bakirov 2007), the "DCC" of the
Rosenblatt-transform paper and the DisCo penalty; :func:`distance_correlation`
is its square root and :func:`distance_covariance_sqr` the squared distance
covariance, with the same conventions as the ``dcor`` package. The sums are
formed by the kernels of :mod:`rosenblatt.metrics._distance_kernels` (numba
when installed, numpy otherwise).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from rosenblatt._jit import compiled
from rosenblatt._validation import (
    as_1d_float,
    as_weight,
    check_finite,
    check_int,
    check_same_length,
)
from rosenblatt.metrics._distance_kernels import _terms_loop, _terms_numpy
from rosenblatt.metrics._multivariate import (
    ProjectedCorrelation,
    exact_terms,
    projected_correlation,
)
from rosenblatt.typing import ArrayLike, BoolArray, FloatArray, IntArray

__all__ = [
    "EXACT_LIMIT",
    "distance_correlation",
    "distance_correlation_sqr",
    "distance_covariance_sqr",
    "projected_distance_correlation_sqr",
]

#: with ``method="auto"``, a vector ``x`` is handled exactly up to this many events
EXACT_LIMIT = 50_000
#: random directions of the projection estimate by default
DEFAULT_PROJECTIONS = 100


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


def _standardise(values: FloatArray, support: BoolArray) -> tuple[FloatArray, float, bool]:
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


@dataclass(frozen=True)
class _VectorSample:
    """A validated sample with a vector ``x``: ``x`` centred and scaled, ``y`` standardised."""

    x: FloatArray
    y: FloatArray
    weight: FloatArray | None
    prob: FloatArray
    x_scale: float
    y_scale: float
    constant: bool


def _vector_x(x: ArrayLike) -> FloatArray | None:
    """``x`` as an ``(n, k)`` float array when it holds ``k >= 2`` observables, else ``None``."""
    arr = np.asarray(x) if isinstance(x, (list, tuple)) else x
    if getattr(arr, "ndim", 1) != 2 or np.shape(arr)[1] == 1:
        return None
    arr = np.asarray(arr)
    if arr.dtype == object or not (np.issubdtype(arr.dtype, np.number) or arr.dtype == np.bool_):
        msg = f"x must be numeric, got an array of dtype {arr.dtype}"
        raise TypeError(msg)
    return np.ascontiguousarray(arr, dtype=np.float64)


def _scalar_x(x: ArrayLike) -> ArrayLike:
    """A column ``(n, 1)`` as ``(n,)``; anything else unchanged."""
    if getattr(x, "ndim", 1) == 2 and np.shape(x)[1] == 1:
        return np.ravel(x)
    return x


def _prepare_vector(x: FloatArray, y: ArrayLike, weight: ArrayLike | None) -> _VectorSample:
    """Validate a vector ``x`` (``(n, k)``) with ``y`` and ``weight``; shift and scale both."""
    y_arr = as_1d_float(y, "y")
    if len(x) != len(y_arr):
        msg = f"length mismatch: x has {len(x)}, y has {len(y_arr)} events"
        raise ValueError(msg)
    if len(x) < 2:
        msg = f"x and y have {len(x)} event: distance correlation needs at least 2"
        raise ValueError(msg)
    check_finite(x.ravel(), "x")
    check_finite(y_arr, "y")
    w = as_weight(weight, len(x))
    prob = np.full(len(x), 1.0 / len(x)) if w is None else w / math.fsum(w)
    support = np.ones(len(x), dtype=bool) if w is None else w != 0
    on_support = x[support]
    spread = on_support.max(axis=0) - on_support.min(axis=0)
    x_constant = not np.any(spread > 0)
    x_scale = float(spread.max()) if not x_constant else 1.0
    centred = (x - on_support.min(axis=0) - 0.5 * spread) / x_scale
    centred -= prob @ centred
    y_std, y_scale, y_constant = _standardise(y_arr, support)
    return _VectorSample(centred, y_std, w, prob, x_scale, y_scale, x_constant or y_constant)


def _vector_correlation(sample: _VectorSample, method: str, n_projections: int, seed: Any) -> float:
    """dCor² of a prepared vector sample by ``method`` (``"exact"`` or ``"projection"``)."""
    if sample.constant:
        return 0.0
    if method == "exact":
        dcov, dvar_x, dvar_y = exact_terms(sample.x, sample.y, sample.prob)
        if dvar_x <= _VARIANCE_FLOOR or dvar_y <= _VARIANCE_FLOOR:
            return 0.0
        return dcov / math.sqrt(dvar_x * dvar_y)
    return _projected(sample, n_projections, seed).value


def _projected(sample: _VectorSample, n_projections: int, seed: Any) -> ProjectedCorrelation:
    dvar_y = distance_covariance_sqr(sample.y, sample.y, sample.weight)
    return projected_correlation(
        sample.x, sample.y, sample.weight, n_projections, seed, dvar_y, distance_covariance_sqr
    )


def _check_method(method: str, n_projections: int, n_events: int) -> str:
    """The method a vector ``x`` of ``n_events`` is handled with."""
    if method not in ("auto", "exact", "projection"):
        msg = f"method must be 'auto', 'exact' or 'projection', got {method!r}"
        raise ValueError(msg)
    check_int(n_projections, "n_projections", low=2)
    if method == "auto":
        return "exact" if n_events <= EXACT_LIMIT else "projection"
    return method


def projected_distance_correlation_sqr(
    x: ArrayLike,
    y: ArrayLike,
    weight: ArrayLike | None = None,
    *,
    n_projections: int = DEFAULT_PROJECTIONS,
    seed: Any = 0,
) -> ProjectedCorrelation:
    """The random-projection estimate of dCor²(x, y) for ``x`` of shape ``(n, k)``, with its error.

    The estimator of Huang & Huo (2017): the distance covariance and the
    distance variance of ``x`` are averages of one-dimensional ones of random
    projections ``u . x`` (see :mod:`rosenblatt.metrics._multivariate`), each
    exact in ``O(n log n)``; ``dVar²(y)`` is exact. Its expectation over the
    directions is the exact V-statistic's numerator and denominator, so the
    estimate converges to :func:`distance_correlation_sqr` with
    ``method="exact"`` as ``n_projections`` grows, with the stated error.

    Parameters
    ----------
    x
        ``(n, k)`` observables (``k >= 2``).
    y, weight
        As for :func:`distance_correlation_sqr`.
    n_projections
        Number of random directions (at least 2); the time is that of
        ``2 n_projections`` one-dimensional distance covariances.
    seed
        Seed of the directions.

    Returns
    -------
    ProjectedCorrelation
        ``value`` (dCor²), ``error`` (its jackknife standard error over the
        directions) and ``n_projections``.
    """
    x_arr = _vector_x(x)
    if x_arr is None:
        msg = f"x must have shape (n, k) with k >= 2, got shape {np.shape(x)}"
        raise ValueError(msg)
    _check_method("projection", n_projections, len(x_arr))
    sample = _prepare_vector(x_arr, y, weight)
    if sample.constant:
        return ProjectedCorrelation(0.0, 0.0, int(n_projections))
    return _projected(sample, int(n_projections), seed)


def distance_covariance_sqr(x: ArrayLike, y: ArrayLike, weight: ArrayLike | None = None) -> float:
    """Squared distance covariance dCov²(x, y), the V-statistic.

    Equal to ``dcor.distance_covariance_sqr(x, y)`` for unweighted data.

    Parameters
    ----------
    x, y
        One value per event, the same number of events (at least 2), finite.
        ``x`` may also hold ``k >= 2`` observables per event, shape ``(n, k)``,
        with Euclidean distances (computed exactly, ``O(n**2 k)`` time).
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
    x_vector = _vector_x(x)
    if x_vector is not None:
        sample = _prepare_vector(x_vector, y, weight)
        if sample.constant:
            return 0.0
        return exact_terms(sample.x, sample.y, sample.prob)[0] * sample.x_scale * sample.y_scale
    pair = _prepare_pair(x, y, weight)
    if pair.x_constant or pair.y_constant:
        return 0.0
    dcov_sqr, _, _ = _dependence_terms(pair.x_sorted, pair.y_by_x, pair.prob_by_x, pair.y_rank)
    return dcov_sqr * pair.x_scale * pair.y_scale


def distance_correlation_sqr(
    x: ArrayLike,
    y: ArrayLike,
    weight: ArrayLike | None = None,
    *,
    method: str = "auto",
    n_projections: int = DEFAULT_PROJECTIONS,
    seed: Any = 0,
) -> float:
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

    ``x`` may hold ``k >= 2`` protected observables per event, shape
    ``(n, k)``; distances in ``x`` are then Euclidean, as in ``dcor``, and the
    statistic is computed by ``method``: ``"exact"`` sums all pairs row by row
    (``O(n**2 k)`` time, ``O(n)`` memory: 5x10^4 events take seconds),
    ``"projection"`` is the random-projection estimate of Huang & Huo (2017)
    (:func:`projected_distance_correlation_sqr`, which also gives its error),
    and ``"auto"`` (default) is exact up to :data:`EXACT_LIMIT` events. A
    shape ``(n, 1)`` is the same as ``(n,)``.

    Parameters
    ----------
    x, y
        One value per event, the same number of events (at least 2), finite;
        ``x`` may be ``(n, k)``.
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
    method
        For a vector ``x``: ``"auto"``, ``"exact"`` or ``"projection"``;
        ignored for a scalar ``x`` (always exact).
    n_projections, seed
        The random directions of ``method="projection"``.

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
    x_vector = _vector_x(x)
    if x_vector is not None:
        chosen = _check_method(method, n_projections, len(x_vector))
        return _vector_correlation(
            _prepare_vector(x_vector, y, weight), chosen, int(n_projections), seed
        )
    pair = _prepare_pair(_scalar_x(x), y, weight)
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
        As for :func:`distance_correlation_sqr` (a vector ``x`` with ``method="auto"``).

    Returns
    -------
    float
        dCor in [0, 1] for non-negative weights.
    """
    return math.sqrt(max(distance_correlation_sqr(x, y, weight), 0.0))
