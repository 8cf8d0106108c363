"""The closure claim as a test: is the background's ABCD non-closure consistent with statistics?

For the background alone, the non-closure of the cut ``(x0[i], y0[j])`` is
``N_A - N_B N_C / N_D``. Its covariance over the grid of cuts comes from a
Poisson(1) bootstrap of the testing sample: every replica weights each event
by an independent Poisson(1) count and refills the ABCD histogram (one
``bincount`` per block of replicas, the regions of every cut from cumulative
sums, :func:`~rosenblatt.abcd.closure.region_sums`).

The chi-square is taken over a thinned grid of cuts (``thin`` values of each
axis, evenly spaced among the given cuts), leaving out cuts where a
background region holds fewer than ``min_events`` effective events. Over a
full 100x100 grid the sample covariance of a few hundred replicas is
singular, and neighbouring cuts share nearly all their events; on the
thinned grid it is estimated well. Its pseudo-inverse (eigenvalues below
``1e-10`` of the largest dropped) gives ``chi2``, with the rank as the
degrees of freedom. As the covariance is itself estimated from ``n_boot``
replicas, the p-value is that of Hotelling's ``T^2``:
``chi2 (n_boot - k) / (k (n_boot - 1))`` follows ``F(k, n_boot - k)`` for
``k`` degrees of freedom, which tends to the chi-square distribution for
many replicas. Its power needs many more replicas than cuts: for 25 cuts, a
p-value of 0.01 takes ``chi2 / k`` = 5.1 with 50 replicas, 2.1 with 200
(1.8 for a known covariance).

The chi-square is that of the whole grid at the resolution ``thin``: the
thinned cuts span it evenly, its first and last cut of each axis included.
Neighbouring cuts of a fine grid share nearly all their events, so the cuts
left out add little information, and a covariance over all of them could not
be estimated from the replicas.

The transform's own statistical uncertainty enters through
``replica_scores``: the testing sample's scores under each replica of a
:func:`rosenblatt.bootstrap` ensemble (the transform refitted on a Poisson
replica of its defining sample). Replica ``k`` then both reweights the testing
events and takes its scores from ``replica_scores[k]``, so the covariance
combines the statistics of the testing sample and of the transform's fit
(the two samples are independent). Per cut,
:meth:`ClosureTest.fraction_consistent` counts the cuts whose non-closure
lies within ``n_sigma`` standard deviations of zero.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from rosenblatt._validation import check_int
from rosenblatt.abcd.closure import ClosureScan, closure_scan, region_sums
from rosenblatt.abcd.histograms import abcd_histogram
from rosenblatt.typing import BoolArray, FloatArray, IntArray

__all__ = [
    "ClosureTest",
    "closure_test",
    "closure_test_histogram",
    "expected_nonclosure_error",
    "thinned_indices",
]


#: eigenvalues of the covariance below this fraction of the largest are dropped
RANK_TOLERANCE = 1e-10
#: most event weights drawn at once (replicas times events)
BLOCK_SIZE = 1 << 22
#: replicas of the testing sample alone when no replica scores are given
DEFAULT_N_BOOT = 200


@dataclasses.dataclass(frozen=True)
class ClosureTest:
    """Bootstrap closure test of the background's ABCD estimate over a grid of cuts.

    Arrays over the grid have shape ``(len(x0), len(y0))``.

    Attributes
    ----------
    scan
        The :class:`~rosenblatt.abcd.ClosureScan` of all events (background and signal).
    nonclosure, nonclosure_error
        ``N_A - N_B N_C / N_D`` of the background alone and its bootstrap
        standard deviation (with ``replica_scores``, that of the testing
        sample and the transform's fit together).
    background_estimate
        ``N_B N_C / N_D`` of the background alone.
    independence_estimate
        ``(N_A + N_B)(N_A + N_C) / N`` of the background alone: ``N_A`` from
        the plane's margins, as independence of its two axes gives it. Its
        Poisson fluctuations are uncorrelated, to first order, with those of
        the closure factor ``N_A N_D / (N_B N_C)``, where
        ``background_estimate``'s are not: a cut chosen by it leaves the
        closure factor measured there unbiased.
    expected_nonclosure_error
        ``nonclosure_error`` with the testing sample's statistical variance
        at what the plane's margins expect (:func:`expected_nonclosure_error`).
        ``nonclosure_error`` shrinks where the sample's ``N_A`` or
        ``N_B N_C / N_D`` fluctuated low, and the closure factor moves with
        them; this error does not follow those fluctuations, so a cut chosen
        by it leaves the closure factor measured there unbiased.
    measurable
        Whether the background's weights sum above zero in each of A, B, C
        and D: where one does not, its closure factor
        ``N_A N_D / (N_B N_C)`` cannot be measured.
    eta_error
        Bootstrap standard deviation of ``scan.eta`` (the relative signal
        non-closure ``eta_A`` of all events).
    chi2, ndof, p_value
        Chi-square of the non-closure over the cuts ``chi2_cuts`` with the
        pseudo-inverse of their bootstrap covariance, its degrees of freedom
        (the covariance's rank) and the p-value of "non-closure consistent
        with statistics" (Hotelling's ``T^2``; see the module). This is the
        chi-square of the whole grid at the resolution ``thin`` (the module
        says why not at every cut).
    chi2_cuts
        Indices ``(i, j)`` into ``x0`` and ``y0`` of the cuts in the chi-square.
    covariance
        Their bootstrap covariance, ``(len(i), len(i))``.
    n_boot, seed
        Replicas and the seed of their Poisson draws.
    transform_replicas
        Whether the replicas also refitted the transform (``replica_scores``).
    """

    scan: ClosureScan
    nonclosure: FloatArray
    nonclosure_error: FloatArray
    background_estimate: FloatArray
    independence_estimate: FloatArray
    expected_nonclosure_error: FloatArray
    measurable: BoolArray
    eta_error: FloatArray
    chi2: float
    ndof: int
    p_value: float
    chi2_cuts: tuple[IntArray, IntArray]
    covariance: FloatArray
    n_boot: int
    seed: int
    transform_replicas: bool = False

    @property
    def x0(self) -> FloatArray:
        """The ``x`` cuts."""
        return self.scan.x0

    @property
    def y0(self) -> FloatArray:
        """The ``y`` cuts."""
        return self.scan.y0

    @property
    def eta(self) -> FloatArray:
        """``eta_A`` of all events over the grid (``scan.eta``)."""
        return self.scan.eta

    @property
    def relative_nonclosure(self) -> FloatArray:
        """``|N_A - N_B N_C / N_D| / (N_B N_C / N_D)`` of the background: a ``normsys`` size."""
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.abs(self.nonclosure) / self.background_estimate

    @property
    def chi2_per_dof(self) -> float:
        """``chi2 / ndof``."""
        return self.chi2 / self.ndof

    @property
    def closed_fraction(self) -> float:
        """Fraction of the grid where ``|eta_A|`` is below both 1e-2 and twice its uncertainty."""
        return self.fraction_closed()

    def fraction_closed(self, tolerance: float = 1e-2, n_sigma: float = 2.0) -> float:
        """Fraction of the grid with ``|eta_A| < tolerance`` and ``|eta_A| < n_sigma * eta_error``.

        Cuts with an empty region count as not closed.
        """
        with np.errstate(invalid="ignore"):
            closed = (np.abs(self.eta) < tolerance) & (np.abs(self.eta) < n_sigma * self.eta_error)
        return float((closed & self.scan.valid).mean())

    @property
    def consistent_fraction(self) -> float:
        """Fraction of the grid where the background's non-closure is within 2 sd of zero."""
        return self.fraction_consistent()

    def fraction_consistent(self, n_sigma: float = 2.0) -> float:
        """Fraction of the grid with ``|N_A - N_B N_C / N_D| <= n_sigma * nonclosure_error``.

        Every cut of the grid counts (not only those of the chi-square); a cut
        where a background region is empty or the error is not finite counts
        as not consistent. Each cut is tested alone: for a background that
        closes, about 95% of the cuts are within 2 sd, but neighbouring cuts
        share their events, so the fraction scatters far more than a binomial
        fraction of independent cuts would.
        """
        with np.errstate(invalid="ignore"):
            usable = (
                np.isfinite(self.background_estimate)
                & (self.background_estimate > 0)
                & np.isfinite(self.nonclosure_error)
                & (self.nonclosure_error > 0)
            )
            consistent = np.abs(self.nonclosure) <= n_sigma * self.nonclosure_error
        return float((consistent & usable).mean())


def closure_test(
    x: ArrayLike,
    score: ArrayLike,
    label: ArrayLike,
    weight: ArrayLike | None = None,
    *,
    x0: ArrayLike,
    y0: ArrayLike,
    n_boot: int | None = None,
    seed: int = 0,
    thin: int | None = 5,
    min_events: float = 25.0,
    replica_scores: Iterable[ArrayLike] | None = None,
) -> ClosureTest:
    """Test whether the background's ABCD non-closure over a grid of cuts is statistical.

    Parameters
    ----------
    x, score, label, weight
        The testing sample: protected observable, (transformed) score, label
        (0 background, 1 signal) and optional weights (may be negative).
    x0, y0
        The cut values (as for :func:`~rosenblatt.abcd.abcd_histogram`).
    n_boot
        Bootstrap replicas; more than the cuts in the chi-square. Default 200,
        or the number of ``replica_scores``.
    seed
        Seed of the Poisson draws; the result is deterministic given it.
        Without weights a replica's count in each bin is drawn at once as
        Poisson of the bin's count, which is the sum of its events' Poisson(1)
        counts.
    thin
        Cuts per axis in the chi-square, evenly spaced among ``x0`` and ``y0``
        (``None``: every cut).
    min_events
        Cuts where a background region holds fewer effective events
        (``(sum w)**2 / sum w**2``) are left out of the chi-square.
    replica_scores
        The testing events' score in each replica of the transform, one array
        of ``len(x)`` per replica: e.g. the rows of
        ``ensemble.variations(x, raw_score)`` for an ensemble from
        :func:`rosenblatt.bootstrap`, or a generator that yields them one at a
        time (only the histogram of each is kept). Replica ``k`` then weights
        the testing events by Poisson(1) counts and fills them with
        ``replica_scores[k]``, so that the covariance holds the transform's
        fit as well.

    Returns
    -------
    ClosureTest

    Raises
    ------
    ValueError
        If no cut qualifies for the chi-square, ``n_boot`` does not exceed
        the number of cuts in it, or the replica scores do not match the
        events (in length, or in number when ``n_boot`` is given too).
    """
    histogram = abcd_histogram(x, score, label, x0=x0, y0=y0, weight=weight)
    seed = _check_count(seed, "seed", 0)
    if thin is not None:
        thin = _check_count(thin, "thin", 1)
    view = histogram.view(flow=True)
    process = histogram.axes["process"]
    columns = [process.index(0), process.index(1)]
    values, variances = view.value[..., columns], view.variance[..., columns]
    content = np.moveaxis(values, -1, 0)  # (process, x bin, y bin)

    if replica_scores is None:
        n_boot = _check_count(DEFAULT_N_BOOT if n_boot is None else n_boot, "n_boot", 2)
        replicas = _bootstrap_contents(
            histogram, x, score, label, weight, content.shape, n_boot, seed
        )
    else:
        replicas = _replica_contents(
            histogram, x, replica_scores, label, weight, content.shape, seed
        )
        if n_boot is not None and n_boot != len(replicas):
            msg = f"n_boot = {n_boot} but {len(replicas)} replica scores given"
            raise ValueError(msg)
        n_boot = _check_count(len(replicas), "the number of replica scores", 2)
    return _test_replicas(
        histogram,
        values,
        variances,
        replicas,
        n_boot,
        seed,
        thin,
        min_events,
        transform_replicas=replica_scores is not None,
    )


def closure_test_histogram(
    histogram: Any,
    *,
    n_boot: int = DEFAULT_N_BOOT,
    seed: int = 0,
    thin: int | None = 5,
    min_events: float = 25.0,
    replica_histograms: Sequence[Any] | None = None,
    resampled_histograms: Sequence[Any] | None = None,
) -> ClosureTest:
    """:func:`closure_test` of a filled ABCD histogram, without its events.

    The histogram's bins are disjoint, so in a Poisson(1) bootstrap of its
    events their contents are independent: a replica draws each bin alone,
    Poisson of its count where its weights are one (sum of squares equal to
    the sum), else a normal of the bin's sum and variance (weighted events,
    negative weights too). Histograms filled in workers and summed are
    tested without gathering a single event.

    Parameters
    ----------
    histogram
        An ABCD histogram (``x``, ``y`` and ``process`` axes with ``Weight``
        storage), such as :func:`~rosenblatt.abcd.abcd_histogram` returns;
        other axes must be summed over first. Process bins other than 0
        (background) and 1 (signal) are ignored.
    n_boot, seed, thin, min_events
        As for :func:`closure_test`.
    replica_histograms
        The same events filled with each replica of the transform (e.g. the
        replicas of a :func:`rosenblatt.bootstrap` ensemble), same axes. The
        transform's own statistics then enter the covariance: bootstrap
        replica ``r`` of the testing sample is shifted by the difference
        between transform replica ``r mod len(replica_histograms)`` and the
        nominal (the two samples are independent, so their covariances add).
    resampled_histograms
        With ``replica_histograms`` of keyed replicas, the same events filled
        with each replica and their weights times its keyed Poisson counts
        (:mod:`~rosenblatt.abcd.closure_correction`). The test then asks
        whether the transform closes within the statistics of its fit and of
        the testing sample: the non-closure tested is the measured one less
        the mean of ``delta_k`` (the difference of replica ``k``'s non-closure
        between the two fills; its mean is the bootstrap's estimate of the
        measurement's bias, which the closure correction subtracts too), and
        its replicas are the non-closures of the keyed fills, each varying
        with replica ``k``'s fit and its keyed counts; the chi-square uses
        their covariance (over a grid thinned to fewer cuts than replicas).
        ``delta_k`` alone is the error of the measured closure factor, not the
        spread of a closing transform's non-closure: it leaves out the fit
        where the testing sample is independent of the defining one, and it
        exceeds the spread of the non-closure measured on the defining events
        themselves.
    """
    n_boot = _check_count(n_boot, "n_boot", 2)
    seed = _check_count(seed, "seed", 0)
    if thin is not None:
        thin = _check_count(thin, "thin", 1)
    view = histogram.view(flow=True)
    process = histogram.axes["process"]
    columns = [process.index(0), process.index(1)]
    values, variances = view.value[..., columns], view.variance[..., columns]
    content = np.moveaxis(values, -1, 0)
    spread = np.moveaxis(variances, -1, 0)
    rng = np.random.default_rng(seed)
    counting = np.isclose(spread, content) & (content >= 0)
    poisson = rng.poisson(np.where(counting, content, 0.0), size=(n_boot, *content.shape))
    normal = rng.normal(content, np.sqrt(np.maximum(spread, 0.0)), size=(n_boot, *content.shape))
    replicas = np.where(counting, poisson, normal).astype(np.float64)
    keyed = None
    if resampled_histograms:
        keyed = _keyed_nonclosure(values[..., 0], replica_histograms, resampled_histograms)
        if thin is not None:
            thin = min(thin, max(2, math.isqrt(len(keyed[0]) - 2)))
    elif replica_histograms:
        shifts = np.asarray([_background_signal(h) - content for h in replica_histograms])
        replicas += shifts[np.arange(n_boot) % len(shifts)]
    return _test_replicas(
        histogram,
        values,
        variances,
        replicas,
        n_boot,
        seed,
        thin,
        min_events,
        transform_replicas=bool(replica_histograms),
        keyed=keyed,
    )


def _keyed_nonclosure(
    background: FloatArray,
    replicas: Sequence[Any] | None,
    resampled: Sequence[Any],
) -> tuple[FloatArray, FloatArray]:
    """The non-closure's keyed replicas ``(replicas, x0, y0)``, and the bootstrap's bias.

    Replica ``k`` is the nominal non-closure plus the deviation of the keyed
    fill's non-closure from the mean of the replicas' non-closures on the
    testing events; the bias is the mean of ``delta_k``.
    """
    if not replicas or len(replicas) != len(resampled):
        msg = "resampled_histograms needs replica_histograms of the same replicas, as many"
        raise ValueError(msg)
    if len(replicas) < 3:
        msg = f"a keyed closure test needs at least 3 replicas, got {len(replicas)}"
        raise ValueError(msg)

    def nonclosure(content: FloatArray) -> FloatArray:
        a, b, c, d = region_sums(content)
        return a - _estimate(b, c, d)

    fitted = np.asarray([nonclosure(_background_signal(h)[0]) for h in replicas])
    reweighted = np.asarray([nonclosure(_background_signal(h)[0]) for h in resampled])
    keyed: FloatArray = nonclosure(background) + reweighted - fitted.mean(axis=0)
    bias: FloatArray = (reweighted - fitted).mean(axis=0)
    return keyed, bias


def _background_signal(histogram: Any) -> FloatArray:
    """``(2, x bins, y bins)``: a histogram's background and signal contents, flow bins included."""
    process = histogram.axes["process"]
    columns = [process.index(0), process.index(1)]
    return np.moveaxis(histogram.view(flow=True).value[..., columns], -1, 0)


def _test_replicas(
    histogram: Any,
    values: FloatArray,
    variances: FloatArray,
    replicas: FloatArray,
    n_boot: int,
    seed: int,
    thin: int | None,
    min_events: float,
    *,
    transform_replicas: bool,
    keyed: tuple[FloatArray, FloatArray] | None = None,
) -> ClosureTest:
    """The closure test of a histogram's background and signal contents from their replicas.

    ``keyed``, where given, holds the background non-closure's replicas and
    the bootstrap's bias (:func:`_keyed_nonclosure`): the replicas replace
    those of ``replicas`` and the chi-square tests the non-closure less the bias.
    """
    replica_a, replica_b, replica_c, replica_d = region_sums(replicas[:, 0])
    background = replica_a - _estimate(replica_b, replica_c, replica_d)
    bias: FloatArray | float = 0.0
    if keyed is not None:
        (background, bias), n_boot = keyed, len(keyed[0])
    eta = _eta(replicas)
    a, b, c, d = region_sums(values[..., 0])
    estimate = _estimate(b, c, d)
    var = region_sums(variances[..., 0])
    with np.errstate(divide="ignore", invalid="ignore"):
        effective = np.min([n**2 / v for n, v in zip((a, b, c, d), var, strict=True)], axis=0)
    cuts = _chi2_cuts(effective, thin, min_events)
    nonclosure = a - estimate
    tested = (nonclosure - bias)[cuts]
    chi2, ndof, p_value, covariance = _chi2(tested, background[:, cuts[0], cuts[1]])
    error = _std(background)
    return ClosureTest(
        scan=closure_scan(histogram),
        nonclosure=nonclosure,
        nonclosure_error=error,
        background_estimate=estimate,
        independence_estimate=_independence_estimate(a, b, c, d),
        expected_nonclosure_error=expected_nonclosure_error(error, (a, b, c, d), var),
        measurable=(a > 0) & (b > 0) & (c > 0) & (d > 0),
        eta_error=_std(eta),
        chi2=chi2,
        ndof=ndof,
        p_value=p_value,
        chi2_cuts=cuts,
        covariance=covariance,
        n_boot=n_boot,
        seed=seed,
        transform_replicas=transform_replicas,
    )


def _check_count(value: Any, name: str, low: int) -> int:
    return check_int(value, name, low=low, what=f"an integer >= {low}")


def _flat(values: ArrayLike) -> FloatArray:
    """``values`` as a flat float64 array."""
    return np.asarray(values, dtype=np.float64).ravel()


def _replica_contents(
    histogram: Any,
    x: ArrayLike,
    replica_scores: Iterable[ArrayLike],
    label: ArrayLike,
    weight: ArrayLike | None,
    shape: tuple[int, ...],
    seed: int,
) -> FloatArray:
    """``(n_boot, process, x bin, y bin)``: replica ``k`` fills its scores with Poisson(1) weights.

    The replica scores are read one at a time (a generator works). Without
    weights the Poisson counts of a bin are drawn at once (the sum of its
    events' independent Poisson(1) counts is Poisson of their number).
    """
    rng = np.random.default_rng(seed)
    x_edges, y_edges = histogram.axes["x"].edges, histogram.axes["y"].edges
    x_flat = _flat(x)
    x_bin = np.searchsorted(x_edges, x_flat, side="right")
    base = (np.asarray(label).astype(np.intp) * shape[1] + x_bin) * shape[2]
    n_bins = int(np.prod(shape))
    w = None if weight is None else _flat(weight)
    rows: list[NDArray[Any]] = []
    for k, scores in enumerate(replica_scores):
        replica = _flat(scores)
        if len(replica) != len(x_flat):
            msg = f"replica_scores[{k}] has {len(replica)} values for {len(x_flat)} events"
            raise ValueError(msg)
        if not np.isfinite(replica).all():
            msg = f"replica_scores[{k}] is not finite everywhere"
            raise ValueError(msg)
        index = base + np.searchsorted(y_edges, replica, side="right")
        if w is None:
            rows.append(rng.poisson(np.bincount(index, minlength=n_bins)).astype(np.float64))
        else:
            draws = rng.poisson(1.0, len(index)) * w
            rows.append(np.bincount(index, weights=draws, minlength=n_bins))
    return np.asarray(rows, dtype=np.float64).reshape(len(rows), *shape)


def _bootstrap_contents(
    histogram: Any,
    x: ArrayLike,
    score: ArrayLike,
    label: ArrayLike,
    weight: ArrayLike | None,
    shape: tuple[int, ...],
    n_boot: int,
    seed: int,
) -> FloatArray:
    """``(n_boot, process, x bin, y bin)``: the histogram's content in each Poisson replica."""
    rng = np.random.default_rng(seed)
    x_edges, y_edges = histogram.axes["x"].edges, histogram.axes["y"].edges
    x_bin = np.searchsorted(x_edges, np.asarray(x, dtype=np.float64), side="right")
    y_bin = np.searchsorted(y_edges, np.asarray(score, dtype=np.float64), side="right")
    label_arr = np.asarray(label).astype(np.intp)
    index = (label_arr * shape[1] + x_bin) * shape[2] + y_bin
    n_bins = int(np.prod(shape))
    if weight is None:
        counts = np.bincount(index, minlength=n_bins)
        return rng.poisson(counts, size=(n_boot, n_bins)).astype(np.float64).reshape(n_boot, *shape)
    w = np.asarray(weight, dtype=np.float64)
    out = np.empty((n_boot, n_bins))
    block = max(1, BLOCK_SIZE // max(len(index), 1))
    for start in range(0, n_boot, block):
        stop = min(start + block, n_boot)
        draws = rng.poisson(1.0, (stop - start, len(index))) * w
        flat = (np.arange(stop - start)[:, None] * n_bins + index).ravel()
        sums = np.bincount(flat, weights=draws.ravel(), minlength=(stop - start) * n_bins)
        out[start:stop] = sums.reshape(stop - start, n_bins)
    return out.reshape(n_boot, *shape)


def _estimate(b: FloatArray, c: FloatArray, d: FloatArray) -> FloatArray:
    """``N_B N_C / N_D``."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return b * c / d


def _independence_estimate(
    a: FloatArray, b: FloatArray, c: FloatArray, d: FloatArray
) -> FloatArray:
    """``(N_A + N_B)(N_A + N_C) / N``."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return (a + b) * (a + c) / (a + b + c + d)


def expected_nonclosure_error(
    error: FloatArray,
    sums: tuple[FloatArray, FloatArray, FloatArray, FloatArray],
    variances: tuple[FloatArray, FloatArray, FloatArray, FloatArray],
) -> FloatArray:
    """The non-closure's error with the sample's statistics at the margins' expectation.

    The statistical variance of ``N_A - N_B N_C / N_D`` is, to first order,
    ``V_A + (N_B N_C / N_D)**2 (V_B / N_B**2 + V_C / N_C**2 + V_D / N_D**2)``
    with ``V`` a region's sum of squared weights. Both terms follow the
    sample's fluctuations, and so does the closure factor
    ``N_A N_D / (N_B N_C)``. This error takes that variance out of ``error``
    (what remains is the transform's fit and the bootstrap's own noise) and
    puts back the variance expected from the margins: ``V_A`` from the
    margins of the squared weights, ``(V_A + V_B)(V_A + V_C) / V``, and
    ``N_B N_C / N_D`` by the independence estimate
    ``(N_A + N_B)(N_A + N_C) / N``, whose fluctuations are uncorrelated with
    the closure factor's.

    Parameters
    ----------
    error
        The bootstrap standard deviation of the non-closure over the grid.
    sums, variances
        Sums of weights and of squared weights of A, B, C, D over the grid.
    """
    a, b, c, d = sums
    with np.errstate(divide="ignore", invalid="ignore"):
        relative = sum(v / n**2 for v, n in zip(variances[1:], (b, c, d), strict=True))
        observed = variances[0] + _estimate(b, c, d) ** 2 * relative
        expected = (
            _independence_estimate(*variances) + _independence_estimate(a, b, c, d) ** 2 * relative
        )
        out: FloatArray = np.sqrt(np.maximum(error**2 - observed, 0.0) + expected)
    return out


def _eta(replicas: FloatArray) -> FloatArray:
    """``eta_A`` of all events in every replica (as :attr:`ClosureScan.eta`)."""
    a, b, c, d = region_sums(replicas.sum(axis=1))
    signal_a = region_sums(replicas[:, 1])[0]
    with np.errstate(divide="ignore", invalid="ignore"):
        return (signal_a - (a - _estimate(b, c, d))) / a


def _std(replicas: FloatArray) -> FloatArray:
    """Standard deviation over replicas (``ddof=1``); NaN where a replica is not finite."""
    finite = np.isfinite(replicas).all(axis=0)
    out = np.full(replicas.shape[1:], np.nan)
    out[finite] = replicas[:, finite].std(axis=0, ddof=1)
    return out


def thinned_indices(n: int, thin: int | None) -> IntArray:
    """``thin`` indices evenly spaced over ``range(n)``, the first and last included (all if ``None``)."""
    if thin is None or thin >= n:
        return np.arange(n, dtype=np.intp)
    return np.unique(np.round(np.linspace(0, n - 1, thin)).astype(np.intp))


def _chi2_cuts(
    effective: FloatArray, thin: int | None, min_events: float
) -> tuple[IntArray, IntArray]:
    """Indices of the cuts in the chi-square: a thinned grid, well-populated regions only."""
    rows, cols = (thinned_indices(n, thin) for n in effective.shape)
    i, j = (a.ravel() for a in np.meshgrid(rows, cols, indexing="ij"))
    keep = np.isfinite(effective[i, j]) & (effective[i, j] >= min_events)
    if not keep.any():
        msg = (
            f"no cut of the thinned grid has {min_events:g} effective background events in "
            "every region: widen the cuts or lower min_events"
        )
        raise ValueError(msg)
    return i[keep], j[keep]


def _chi2(value: FloatArray, replicas: FloatArray) -> tuple[float, int, float, FloatArray]:
    """Chi-square of ``value`` with the pseudo-inverse of the replicas' covariance, and its p-value."""
    from scipy import stats

    n_boot, n_cuts = replicas.shape
    if n_boot <= n_cuts:
        msg = (
            f"n_boot = {n_boot} replicas cannot estimate the covariance of {n_cuts} cuts: "
            "use more replicas or a smaller thin"
        )
        raise ValueError(msg)
    covariance = np.atleast_2d(np.cov(replicas, rowvar=False, ddof=1))
    eigenvalues, eigenvectors = np.linalg.eigh(covariance)
    kept = eigenvalues > RANK_TOLERANCE * max(float(eigenvalues.max()), 0.0)
    if not kept.any():
        msg = "the non-closure does not vary over the replicas: no covariance to test against"
        raise ValueError(msg)
    projected = eigenvectors[:, kept].T @ value
    chi2 = float(np.sum(projected**2 / eigenvalues[kept]))
    ndof = int(kept.sum())
    statistic = chi2 * (n_boot - ndof) / (ndof * (n_boot - 1))
    p_value = float(stats.f.sf(statistic, ndof, n_boot - ndof))
    return chi2, ndof, p_value, covariance
