"""The per-bin non-closure of the pass/fail fit with its uncertainty from the transform's bootstrap.

The pass/fail fit (:mod:`~rosenblatt.abcd.passfail`) takes from the background
simulation, per bin ``i`` of ``x``, the ratio ``q_i = (P_i / F_i) / (P / F)`` of
its passing and failing sums of weights in the bin over the overall one: 1 in
every bin where the score is independent of ``x``. A fitted transform leaves a
residual dependence of its own, which differs from one defining sample to the
next, and ``q_i`` measured on the simulation is an estimate of it with an error
of its own. Where the simulation *is* the defining sample (or shares events
with it), the transform closes on those events better than on new ones, and the
measured ``q_i`` alone hides the transform's fit.

As for the ABCD estimate's closure factor
(:mod:`~rosenblatt.abcd.closure_correction`), the error comes from a keyed
bootstrap: replica ``k`` of the transform was fitted on the defining sample with
Poisson(1) counts that are a function of each event's ``(x, y)``; the
simulation's spectra under it are taken with the simulation's weights
(``q_ik``) and with those weights times the same keyed counts (``q*_ik``). The
difference ``delta_ik = q*_ik - q_ik`` is the bootstrap counterpart of the error
of the measured ``q_i``: its standard deviation over the replicas is that
error (the simulation's statistics where it is independent of the defining
sample, the transform's fit as well where it is not), and its mean the
measurement's bias, subtracted from it.

The relative non-closure of bin ``i`` in the fit is then the measured
``q_i - 1`` less the bias, in quadrature with the bootstrap's error, at most
:data:`~rosenblatt.abcd.transfer.MAX_RELATIVE`: the bootstrap's error takes the
place of the simulation's statistical error of
:func:`~rosenblatt.abcd.transfer.transfer_check`, which it contains.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np

from rosenblatt.abcd.closure_correction import check_replica_pairs
from rosenblatt.abcd.transfer import MAX_RELATIVE
from rosenblatt.typing import ArrayLike, FloatArray

__all__ = ["TransferCorrection", "bin_ratios", "transfer_correction"]


def bin_ratios(failing: ArrayLike, passing: ArrayLike) -> FloatArray:
    """``q_i = (P_i / F_i) / (P / F)`` per bin of ``x`` (NaN where a region of the bin is empty).

    ``failing`` and ``passing`` are a background's sums of weights per bin of
    ``x``, or several spectra at once (one per row, bins along the last axis).

    Examples
    --------
    >>> from rosenblatt.abcd.transfer_correction import bin_ratios
    >>> bin_ratios([900, 800], [100, 120]).round(4).tolist()
    [0.8586, 1.1591]
    """
    fail = np.asarray(failing, dtype=np.float64)
    passed = np.asarray(passing, dtype=np.float64)
    if fail.shape != passed.shape or fail.ndim == 0:
        msg = f"failing and passing must have one shape, got {fail.shape} and {passed.shape}"
        raise ValueError(msg)
    total = passed.sum(axis=-1, keepdims=True) / fail.sum(axis=-1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = passed / fail / total
    return np.where((fail > 0) & (passed > 0) & (total > 0), ratio, np.nan)


@dataclasses.dataclass(frozen=True)
class TransferCorrection:
    """The background simulation's per-bin pass/fail ratio and its keyed-bootstrap uncertainty.

    Arrays have one entry per bin of ``x``.

    Attributes
    ----------
    relative
        ``q_i - 1`` of the simulation under the nominal transform, less ``bias``.
    error
        The standard deviation of ``delta_i`` over the keyed replicas: the
        error of the measured ``q_i``.
    bias
        The mean of ``delta_i``, subtracted from the measured ``q_i - 1``.
    transform_fit
        The standard deviation of ``q_i`` over the replicas on the simulation's
        events with their own weights: the transform's fit alone.
    uncertainty
        ``relative`` in quadrature with ``error``, at most
        :data:`~rosenblatt.abcd.transfer.MAX_RELATIVE` (which a bin where a
        region is empty gets): the relative non-closure of the passing
        background in the fit.
    n_replicas
        The keyed replicas behind ``error`` and ``bias``.
    """

    relative: FloatArray
    error: FloatArray
    bias: FloatArray
    transform_fit: FloatArray
    uncertainty: FloatArray
    n_replicas: int


def transfer_correction(
    failing: ArrayLike,
    passing: ArrayLike,
    replicas: Sequence[tuple[ArrayLike, ArrayLike]],
    resampled: Sequence[tuple[ArrayLike, ArrayLike]],
) -> TransferCorrection:
    """The simulation's per-bin non-closure of the pass/fail ratio with its bootstrap error.

    Parameters
    ----------
    failing, passing
        The background simulation's sums of weights per bin of ``x`` failing
        and passing the cut under the nominal transform.
    replicas
        Per keyed replica of the transform, the same ``(failing, passing)``
        spectra of the same events under the replica, with their own weights.
    resampled
        Per replica (same order), the spectra under it with each event's
        weight times the replica's keyed Poisson count.

    Returns
    -------
    TransferCorrection

    Raises
    ------
    ValueError
        If fewer than two replicas are given, the two lists differ in length,
        or a spectrum's shape differs from the nominal's.

    Examples
    --------
    >>> import numpy as np
    >>> from rosenblatt.abcd.transfer_correction import transfer_correction
    >>> fail, passed = np.array([900.0, 800.0]), np.array([100.0, 90.0])
    >>> replicas = [(fail, passed * [1.02, 0.98]), (fail, passed * [0.98, 1.02])]
    >>> resampled = [(fail, passed), (fail, passed)]
    >>> transfer_correction(fail, passed, replicas, resampled).error.round(4).tolist()
    [0.0266, 0.03]
    """
    check_replica_pairs(len(replicas), len(resampled), "transfer", "spectra")
    measured = bin_ratios(failing, passing)
    fitted = bin_ratios(*_stacked(replicas, measured.shape))
    reweighted = bin_ratios(*_stacked(resampled, measured.shape))
    delta = reweighted - fitted
    bias = delta.mean(axis=0)
    error = delta.std(axis=0, ddof=1)
    relative = measured - 1.0 - bias
    with np.errstate(invalid="ignore"):
        uncertainty = np.minimum(np.hypot(relative, error), MAX_RELATIVE)
    return TransferCorrection(
        relative=relative,
        error=error,
        bias=bias,
        transform_fit=fitted.std(axis=0, ddof=1),
        uncertainty=np.where(np.isfinite(uncertainty), uncertainty, MAX_RELATIVE),
        n_replicas=len(replicas),
    )


def _stacked(
    spectra: Sequence[tuple[ArrayLike, ArrayLike]], shape: tuple[int, ...]
) -> tuple[FloatArray, FloatArray]:
    """The failing and passing spectra of every replica, one row each."""
    fail = np.asarray([np.asarray(f, dtype=np.float64) for f, _ in spectra])
    passed = np.asarray([np.asarray(p, dtype=np.float64) for _, p in spectra])
    if fail.shape[1:] != shape or passed.shape[1:] != shape:
        msg = (
            f"a replica's spectra have shapes {fail.shape[1:]} and {passed.shape[1:]}, the "
            f"nominal {shape}"
        )
        raise ValueError(msg)
    return fail, passed
