"""ROC curve, area under it, and background rejection at a signal efficiency (R50).

:func:`roc_curve` and :func:`roc_auc` follow scikit-learn exactly;
:func:`background_rejection` is ``1 / eps_B`` at a fixed signal efficiency.
"""

from __future__ import annotations

import math

import numpy as np

from rosenblatt._validation import as_1d_float, as_weight, check_finite, check_same_length
from rosenblatt.typing import ArrayLike, BoolArray, FloatArray

__all__ = ["background_rejection", "roc_auc", "roc_curve"]


def _as_label(label: ArrayLike) -> BoolArray:
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
    signal: BoolArray = values == 1
    return signal


def _classification_inputs(
    label: ArrayLike, score: ArrayLike, weight: ArrayLike | None
) -> tuple[BoolArray, FloatArray, FloatArray | None]:
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
    is_signal: BoolArray, score: FloatArray, weight: FloatArray | None
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
