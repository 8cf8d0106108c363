"""Distance correlation of a vector ``x`` of shape ``(n, k)`` with a scalar ``y``.

Two estimators:

- exact: the V-statistic over all pairs, with Euclidean distances in ``x``,
  summed row by row (numba when installed, numpy blocks of rows otherwise),
  so memory stays ``O(n)`` while time is ``O(n**2 k)``;
- random projections (Huang & Huo 2017): for ``u`` uniform on the unit sphere
  of ``R**k``, ``E_u |u . (x - x')| = |x - x'| / C_k`` with
  ``C_k = sqrt(pi) Gamma((k + 1) / 2) / Gamma(k / 2)``. The distance covariance
  is linear in the distances of ``x``, so
  ``dCov²(x, y) = C_k E_u dCov²(u . x, y)``, and the distance variance is
  quadratic, so ``dVar²(x) = C_k² E_{u, v} dCov²(u . x, v . x)`` with ``u`` and
  ``v`` independent. Each term is a one-dimensional distance covariance,
  computed exactly in ``O(n log n)``; the averages over ``n_projections``
  directions are unbiased for the exact V-statistics, and the spread over the
  directions gives the error of the estimate.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import special

from rosenblatt._jit import numba_enabled
from rosenblatt.typing import FloatArray

try:
    from numba import prange
except ImportError:  # pragma: no cover - numba is optional
    prange = range  # type: ignore[misc]

__all__ = ["ProjectedCorrelation", "exact_terms", "projected_correlation", "sphere_constant"]


#: rows per block of the numpy path (each block holds ``ROW_BLOCK * n`` distances)
ROW_BLOCK = 256


def sphere_constant(k: int) -> float:
    """``C_k = sqrt(pi) Gamma((k + 1) / 2) / Gamma(k / 2)``: ``|v| = C_k E_u |u . v|``."""
    return float(
        math.sqrt(math.pi) * math.exp(special.gammaln((k + 1) / 2) - special.gammaln(k / 2))
    )


def _rows_loop(
    x0: FloatArray, x1: FloatArray, x2: FloatArray, y: FloatArray, prob: FloatArray
) -> FloatArray:
    """Per row ``i``: ``a_i, b_i, sum_j p_j a_ij b_ij, sum_j p_j a_ij², sum_j p_j b_ij²``.

    ``a_ij`` is the Euclidean distance of the events' ``(x0, x1, x2)`` (pad
    with zeros for fewer observables), ``b_ij = |y_i - y_j|`` and
    ``a_i = sum_j p_j a_ij``. Written as loops for numba; rows run in parallel.
    """
    n = len(y)
    out = np.zeros((n, 5))
    for i in prange(n):
        s_a = 0.0
        s_b = 0.0
        s_ab = 0.0
        s_aa = 0.0
        s_bb = 0.0
        u0 = x0[i]
        u1 = x1[i]
        u2 = x2[i]
        yi = y[i]
        for j in range(n):
            d0 = u0 - x0[j]
            d1 = u1 - x1[j]
            d2 = u2 - x2[j]
            a = math.sqrt(d0 * d0 + d1 * d1 + d2 * d2)
            b = abs(yi - y[j])
            pa = prob[j] * a
            pb = prob[j] * b
            s_a += pa
            s_b += pb
            s_ab += pa * b
            s_aa += pa * a
            s_bb += pb * b
        out[i, 0] = s_a
        out[i, 1] = s_b
        out[i, 2] = s_ab
        out[i, 3] = s_aa
        out[i, 4] = s_bb
    return out


@functools.cache
def _compiled_rows() -> Any:
    """:func:`_rows_loop` compiled by numba (vectorised sums, rows in parallel), or ``None``."""
    if not numba_enabled():
        return None
    import numba

    return numba.njit(cache=True, nogil=True, parallel=True, fastmath=True)(_rows_loop)


def _rows_numpy(x: FloatArray, y: FloatArray, prob: FloatArray) -> FloatArray:
    """:func:`_rows_loop` in numpy, ``ROW_BLOCK`` rows at a time."""
    n = len(x)
    out = np.empty((n, 5))
    for start in range(0, n, ROW_BLOCK):
        rows = slice(start, min(start + ROW_BLOCK, n))
        diff = x[rows, None, :] - x[None, :, :]
        a = np.sqrt(np.einsum("ijk,ijk->ij", diff, diff))
        b = np.abs(y[rows, None] - y[None, :])
        pa, pb = a * prob, b * prob
        out[rows, 0] = pa.sum(axis=1)
        out[rows, 1] = pb.sum(axis=1)
        out[rows, 2] = np.einsum("ij,ij->i", pa, b)
        out[rows, 3] = np.einsum("ij,ij->i", pa, a)
        out[rows, 4] = np.einsum("ij,ij->i", pb, b)
    return out


def exact_terms(x: FloatArray, y: FloatArray, prob: FloatArray) -> tuple[float, float, float]:
    """``(dCov²(x, y), dVar²(x), dVar²(y))``, the exact V-statistics with probabilities ``prob``.

    Parameters
    ----------
    x
        ``(n, k)`` observables, finite (best centred and scaled to order one).
    y
        ``(n,)`` scores.
    prob
        ``(n,)`` event probabilities summing to one (may be negative).
    """
    kernel = _compiled_rows()
    if kernel is None or x.shape[1] > 3:
        rows = _rows_numpy(x, y, prob)
    else:
        columns = [np.ascontiguousarray(x[:, c]) for c in range(x.shape[1])]
        columns += [np.zeros(len(x))] * (3 - len(columns))
        rows = kernel(*columns, np.ascontiguousarray(y), np.ascontiguousarray(prob))
    a, b = rows[:, 0], rows[:, 1]
    total = math.fsum(prob)
    a_mean = math.fsum(prob * a) / total
    b_mean = math.fsum(prob * b) / total
    s_ab, s_aa, s_bb = (math.fsum(prob * rows[:, c]) / total for c in (2, 3, 4))
    dcov = s_ab - 2.0 * math.fsum(prob * a * b) / total + a_mean * b_mean
    dvar_x = s_aa - 2.0 * math.fsum(prob * a * a) / total + a_mean * a_mean
    dvar_y = s_bb - 2.0 * math.fsum(prob * b * b) / total + b_mean * b_mean
    return dcov, dvar_x, dvar_y


@dataclass(frozen=True)
class ProjectedCorrelation:
    """The random-projection estimate of dCor² and its error.

    Attributes
    ----------
    value
        The estimate of dCor² (of the exact V-statistic of the sample).
    error
        Its standard error from the spread over the random directions
        (jackknife over the directions).
    n_projections
        Number of random directions.
    """

    value: float
    error: float
    n_projections: int


def _directions(k: int, n: int, rng: np.random.Generator) -> FloatArray:
    u = rng.standard_normal((n, k))
    unit: FloatArray = u / np.linalg.norm(u, axis=1, keepdims=True)
    return unit


def projected_correlation(
    x: FloatArray,
    y: FloatArray,
    weight: FloatArray | None,
    n_projections: int,
    seed: Any,
    dvar_y: float,
    covariance: Callable[[FloatArray, FloatArray, FloatArray | None], float],
) -> ProjectedCorrelation:
    """Random-projection estimate of dCor²(x, y) (Huang & Huo 2017), see the module notes.

    Parameters
    ----------
    x, y, weight
        Validated ``(n, k)`` observables, ``(n,)`` scores and optional weights.
    n_projections
        Number of random directions (at least 2).
    seed
        Seed of the directions.
    dvar_y
        The exact one-dimensional dVar²(y) in the units of ``y``.
    covariance
        The one-dimensional weighted dCov², ``covariance(a, b, weight)``.
    """
    k = x.shape[1]
    rng = np.random.default_rng(seed)
    u, v = _directions(k, n_projections, rng), _directions(k, n_projections, rng)
    c_k = sphere_constant(k)
    cov = np.array([covariance(x @ d, y, weight) for d in u]) * c_k
    var = np.array([covariance(x @ d, x @ e, weight) for d, e in zip(u, v, strict=True)])
    var *= c_k * c_k

    def ratio(c: FloatArray, s: FloatArray) -> float:
        denominator = float(np.mean(s)) * dvar_y
        return float(np.mean(c)) / math.sqrt(denominator) if denominator > 0 else 0.0

    value = ratio(cov, var)
    keep = ~np.eye(n_projections, dtype=bool)
    leave_one_out = np.array([ratio(cov[keep[i]], var[keep[i]]) for i in range(n_projections)])
    spread = float(np.sum((leave_one_out - leave_one_out.mean()) ** 2))
    error = math.sqrt((n_projections - 1) / n_projections * spread)
    return ProjectedCorrelation(value, error, n_projections)
