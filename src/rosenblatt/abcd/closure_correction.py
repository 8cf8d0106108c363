"""The closure factor of the ABCD estimate and its uncertainty, from the transform's bootstrap.

For the background, ``N_A = N_B N_C / N_D`` holds only where the score is
independent of ``x``. A fitted transform leaves a residual dependence of its
own, which differs from one defining sample to the next: the double ratio
``kappa = N_A N_D / (N_B N_C)`` of the background under the transform is 1 for
the exact conditional CDF and scatters about 1 (and may be biased) for a
fitted one. The data's prediction of ``A`` is therefore ``B C / D`` times
``kappa`` measured on the background simulation, and the uncertainty of that
measurement is part of the prediction's.

The uncertainty comes from a keyed bootstrap of the whole procedure. Replica
``k`` of the transform was fitted on the defining sample with Poisson(1)
counts that are a function of each event's ``(x, y)``
(:func:`~rosenblatt.transforms.ensemble.keyed_poisson_weights`). It is applied
to the simulation twice: with the simulation's weights (``kappa_k``) and with
those weights times the same keyed counts (``kappa*_k``). The difference
``delta_k = kappa*_k - kappa_k`` is the bootstrap counterpart of the error of
the measured ``kappa`` as an estimate of the population's double ratio under
the transform:

- a simulation independent of the defining sample reweights independently of
  the replica's fit, and ``delta_k`` is its own Poisson statistic (the
  transform's fit is then measured, not guessed);
- a simulation that *is* the defining sample (or shares events with it) is
  reweighted exactly as the replica's fit was, and ``delta_k`` holds the
  transform's fit as well: a transform evaluated on its own defining events
  closes better than it does on new events, and the bootstrap sees by how much.

The standard deviation of ``delta_k`` over the replicas is the closure factor's
uncertainty; its mean, the bootstrap's estimate of the measurement's bias,
is subtracted from the measured factor. Beside them, :class:`ClosureCorrection`
keeps the parts a reader asks for: the spread of ``kappa_k`` over the replicas
on the same simulated events (the transform's fit alone) and the
simulation's statistical error of ``kappa`` with the nominal transform.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from rosenblatt.abcd.closure import region_sums
from rosenblatt.typing import FloatArray

__all__ = [
    "AbcdPrediction",
    "ClosureCorrection",
    "abcd_prediction",
    "check_replica_pairs",
    "closure_correction",
    "measured_closure",
]


@dataclasses.dataclass(frozen=True)
class ClosureCorrection:
    """The background's closure factor over a grid of cuts, with its uncertainty.

    Arrays have the grid's shape ``(len(x0), len(y0))``.

    Attributes
    ----------
    factor
        The closure factor that multiplies ``B C / D``: the measured double
        ratio less the bootstrap's estimate of its bias.
    error
        Its standard deviation: that of ``delta_k`` over the keyed replicas.
    measured
        ``N_A N_D / (N_B N_C)`` of the background simulation under the
        nominal transform.
    bias
        The mean of ``delta_k``, subtracted from ``measured``.
    transform_fit
        The standard deviation of the double ratio over the replicas, on the
        simulation's events with their own weights: the transform's fit alone.
    simulation_statistics
        The statistical error of ``measured`` from the simulation's weights
        (sums of squared weights of the four regions), the transform fixed.
    background_estimate
        ``N_B N_C / N_D`` of the background simulation (the nominal transform).
    n_replicas
        The keyed replicas behind ``error`` and ``bias``.
    """

    factor: FloatArray
    error: FloatArray
    measured: FloatArray
    bias: FloatArray
    transform_fit: FloatArray
    simulation_statistics: FloatArray
    background_estimate: FloatArray
    n_replicas: int

    def nonclosure_error(self) -> FloatArray:
        """The uncertainty of ``N_A - N_B N_C / N_D`` of the simulation: ``error`` times ``B C / D``."""
        return self.error * self.background_estimate


def _background(histogram: Any) -> tuple[FloatArray, FloatArray]:
    """The background's (process 0) sums and variances, flow bins included, ``(x bins, y bins)``."""
    process = histogram.axes["process"]
    if 0 not in process:
        shape = tuple(len(axis) + 2 for axis in histogram.axes[:-1])
        return np.zeros(shape), np.zeros(shape)
    view = histogram.view(flow=True)
    k = process.index(0)
    return (
        np.asarray(view.value[..., k], dtype=np.float64),
        np.asarray(view.variance[..., k], dtype=np.float64),
    )


def _double_ratio(content: FloatArray) -> FloatArray:
    """``N_A N_D / (N_B N_C)`` of every cut (NaN where a control region is empty)."""
    a, b, c, d = region_sums(content)
    with np.errstate(divide="ignore", invalid="ignore"):
        kappa = a * d / (b * c)
    return np.where((b > 0) & (c > 0) & (d > 0), kappa, np.nan)


def check_replica_pairs(fitted: int, resampled: int, correction: str, kind: str) -> None:
    """Check that each of at least two replicas gives its ``kind`` both ways.

    A correction from the keyed bootstrap of the transform's fit compares, per
    replica, the events under the replica's transform with the same events
    reweighted by the replica's keyed Poisson counts.

    Parameters
    ----------
    fitted, resampled
        How many replicas gave their ``kind`` under their own fit, and reweighted.
    correction
        The correction's name in the error (``"closure"``, ``"transfer"``).
    kind
        What each replica gives, in the error (``"histograms"``, ``"spectra"``).

    Raises
    ------
    ValueError
        If the two numbers differ, or are below 2.
    """
    if fitted != resampled:
        msg = f"{fitted} replica {kind} but {resampled} resampled ones: each replica needs both"
        raise ValueError(msg)
    if fitted < 2:
        msg = f"a {correction} correction needs at least 2 replicas, got {fitted}"
        raise ValueError(msg)


def closure_correction(
    histogram: Any,
    replica_histograms: Sequence[Any],
    resampled_histograms: Sequence[Any],
) -> ClosureCorrection:
    """The background simulation's closure factor and its keyed-bootstrap uncertainty.

    Parameters
    ----------
    histogram
        The ABCD histogram of the background simulation (process 0) under the
        nominal transform (``x``, ``y`` and ``process`` axes; other axes summed
        over first), as :func:`~rosenblatt.abcd.abcd_histogram` fills it.
    replica_histograms
        The same events under each keyed replica of the transform, with their
        own weights.
    resampled_histograms
        The same events under the same replicas, each event's weight times the
        replica's keyed Poisson count (same order as ``replica_histograms``).

    Returns
    -------
    ClosureCorrection

    Raises
    ------
    ValueError
        If fewer than two replicas are given, or the two lists differ in length.
    """
    check_replica_pairs(len(replica_histograms), len(resampled_histograms), "closure", "histograms")
    alone = measured_closure(histogram)
    fitted = np.asarray([_double_ratio(_background(h)[0]) for h in replica_histograms])
    resampled = np.asarray([_double_ratio(_background(h)[0]) for h in resampled_histograms])
    delta = resampled - fitted
    bias = delta.mean(axis=0)
    return dataclasses.replace(
        alone,
        factor=alone.measured - bias,
        error=delta.std(axis=0, ddof=1),
        bias=bias,
        transform_fit=fitted.std(axis=0, ddof=1),
        n_replicas=len(replica_histograms),
    )


def measured_closure(histogram: Any) -> ClosureCorrection:
    """The closure factor of a histogram with the simulation's statistical error alone.

    For a score with no fit of its own (a raw score), or a transform without
    keyed replicas: ``factor`` is the measured double ratio and ``error`` its
    statistical error from the simulation's weights; ``transform_fit`` is NaN.
    """
    content, variance = _background(histogram)
    measured = _double_ratio(content)
    a, b, c, d = region_sums(content)
    var = region_sums(variance)
    with np.errstate(divide="ignore", invalid="ignore"):
        relative = sum(v / n**2 for v, n in zip(var, (a, b, c, d), strict=True))
        statistics = np.abs(measured) * np.sqrt(relative)
        estimate = b * c / d
    return ClosureCorrection(
        factor=measured,
        error=statistics,
        measured=measured,
        bias=np.zeros_like(measured),
        transform_fit=np.full_like(measured, np.nan),
        simulation_statistics=statistics,
        background_estimate=estimate,
        n_replicas=0,
    )


@dataclasses.dataclass(frozen=True)
class AbcdPrediction:
    """The data-driven prediction of the background in ``A`` at one cut.

    Attributes
    ----------
    value
        ``B C / D`` of the data times the closure factor.
    uncorrected
        ``B C / D`` of the data.
    stat
        Statistical uncertainty from the data's ``B``, ``C`` and ``D``.
    syst
        Uncertainty from the closure factor: ``B C / D`` times its error.
    """

    value: float
    uncorrected: float
    stat: float
    syst: float

    @property
    def error(self) -> float:
        """The total uncertainty, ``sqrt(stat**2 + syst**2)``."""
        return math.hypot(self.stat, self.syst)


def abcd_prediction(
    counts: Sequence[float],
    variances: Sequence[float],
    factor: float,
    factor_error: float,
) -> AbcdPrediction:
    """``B C / D`` of the data corrected by the closure factor, with its uncertainties.

    Parameters
    ----------
    counts
        The data's ``(B, C, D)`` (sums of weights).
    variances
        Their variances (sums of squared weights; the counts themselves for
        unweighted data).
    factor, factor_error
        The closure factor at the cut and its standard deviation
        (:class:`ClosureCorrection`).

    Returns
    -------
    AbcdPrediction
        NaN everywhere if a control region is empty.
    """
    n_b, n_c, n_d = (float(v) for v in counts)
    v_b, v_c, v_d = (float(v) for v in variances)
    if min(n_b, n_c, n_d) <= 0:
        nan = float("nan")
        return AbcdPrediction(nan, nan, nan, nan)
    uncorrected = n_b * n_c / n_d
    value = uncorrected * factor
    stat = abs(value) * math.sqrt(v_b / n_b**2 + v_c / n_c**2 + v_d / n_d**2)
    return AbcdPrediction(value, uncorrected, stat, uncorrected * factor_error)
