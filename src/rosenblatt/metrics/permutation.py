"""Permutation floor and permutation test of independence for dCor²."""

from __future__ import annotations

import dataclasses
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np

from rosenblatt._validation import check_int
from rosenblatt.metrics.distance import (
    _NO_SHUFFLE,
    DEFAULT_PROJECTIONS,
    _check_method,
    _correlation_from_terms,
    _dependence_terms,
    _prepare_pair,
    _prepare_vector,
    _scalar_x,
    _vector_correlation,
    _vector_x,
)
from rosenblatt.typing import ArrayLike, FloatArray, IntArray

__all__ = ["PermutationTestResult", "permutation_test"]


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
    method: str = "auto",
    n_projections: int = DEFAULT_PROJECTIONS,
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
        this process may use. A vector ``x`` is permuted in one thread (its
        exact kernel is itself parallel).
    progress
        Show a tqdm progress bar (needs ``tqdm``).
    method, n_projections
        For ``x`` of shape ``(n, k)``: how each dCor² is computed (see
        :func:`distance_correlation_sqr`); the projection estimate uses the
        same directions for the sample and every permutation.

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
    n_permutations = check_int(n_permutations, "n_permutations", low=1)
    workers = _usable_cores() if n_jobs is None else int(n_jobs)
    if workers < 1:
        msg = f"n_jobs must be at least 1, got {n_jobs}"
        raise ValueError(msg)

    x_vector = _vector_x(x)
    if x_vector is not None:
        chosen = _check_method(method, n_projections, len(x_vector))
        correlation, n_events, constant = _vector_statistic(
            x_vector, y, weight, chosen, int(n_projections)
        )
        workers = 1
    else:
        correlation, n_events, constant = _scalar_statistic(_scalar_x(x), y, weight)
    if constant:
        return PermutationTestResult(0.0, 0.0, 0.0, 1.0, n_permutations)

    statistic = correlation(_NO_SHUFFLE)
    stream_seeds = np.random.default_rng(seed).integers(
        0, np.iinfo(np.int64).max, size=n_permutations, dtype=np.int64
    )

    def permuted(stream_seed: np.int64) -> float:
        value: float = correlation(np.random.default_rng(int(stream_seed)).permutation(n_events))
        return value

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


def _scalar_statistic(
    x: ArrayLike, y: ArrayLike, weight: ArrayLike | None
) -> tuple[Any, int, bool]:
    """dCor² of a scalar ``x`` as a function of a shuffle of ``y``, the event count, constancy."""
    pair = _prepare_pair(x, y, weight)

    def correlation(shuffle: IntArray) -> float:
        terms = _dependence_terms(pair.x_sorted, pair.y_by_x, pair.prob_by_x, pair.y_rank, shuffle)
        return _correlation_from_terms(pair, *terms)

    return correlation, pair.x_sorted.size, pair.x_constant or pair.y_constant


def _vector_statistic(
    x: FloatArray, y: ArrayLike, weight: ArrayLike | None, method: str, n_projections: int
) -> tuple[Any, int, bool]:
    """dCor² of a vector ``x`` as a function of a shuffle of ``y``, the event count, constancy."""
    sample = _prepare_vector(x, y, weight)

    def correlation(shuffle: IntArray) -> float:
        shuffled = sample if len(shuffle) == 0 else dataclasses.replace(sample, y=sample.y[shuffle])
        return _vector_correlation(shuffled, method, n_projections, 0)

    return correlation, len(sample.y), sample.constant


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
