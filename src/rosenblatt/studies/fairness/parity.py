"""Group fairness of a score: the rates per group of a protected attribute at a working point.

Demographic parity compares the positive rate across groups, equalised odds the true-
and false-positive rates; their spread (largest minus smallest rate across groups) is
measured at every working point, with ties passed at random so that each point rejects
its share of people exactly.
"""

from __future__ import annotations

import numpy as np

from rosenblatt.typing import BoolArray, FloatArray, Int64Array, IntArray

__all__ = ["age_groups", "group_rates", "parity_spreads"]


def age_groups(values: FloatArray, n_groups: int = 5) -> tuple[IntArray, FloatArray]:
    """Quantile groups of a protected attribute: group ``g`` holds ``edges[g-1] <= v < edges[g]``.

    Parameters
    ----------
    values
        The protected attribute of every person.
    n_groups
        Number of groups (5: quintiles).

    Returns
    -------
    groups : ndarray of int
        Group of every person, 0 to ``n_groups - 1``.
    edges : ndarray
        The inner edges, the ``k / n_groups`` quantiles (tied values share a group,
        so the groups are only as even as the ties allow).
    """
    edges = np.quantile(values, np.arange(1, n_groups) / n_groups)
    return np.searchsorted(edges, values, side="right").astype(np.intp), edges


def group_rates(
    score: FloatArray,
    groups: IntArray,
    n_groups: int,
    rejected: float,
    weight: FloatArray | None = None,
    subset: BoolArray | None = None,
) -> FloatArray:
    """Fraction of each group above the cut that rejects a fraction ``rejected`` of everyone.

    Events tied at the cut pass with the probability that makes the overall
    passing fraction exactly ``1 - rejected`` (a randomised cut), so scores
    with ties or few distinct values (a thresholded classifier) are compared
    at the same working point as continuous ones.

    Parameters
    ----------
    score
        Score of every person; higher means positive.
    groups
        Group of every person, 0 to ``n_groups - 1``.
    n_groups
        Number of groups.
    rejected
        Fraction of all (weighted) people below the cut, in [0, 1].
    weight
        Optional non-negative weights (bootstrap counts).
    subset
        Optional mask: the passing fractions are those of the people in it
        (the positives for a true-positive rate), at the cut set on everyone.

    Returns
    -------
    ndarray of shape (n_groups,)
        Passing fraction of every group (NaN for an empty group).
    """
    w = np.ones(len(score)) if weight is None else np.asarray(weight, dtype=np.float64)
    passing = _passing(score, np.argsort(-score, kind="stable"), w, rejected)
    if subset is not None:
        w = w * subset
    total = np.bincount(groups, weights=w, minlength=n_groups)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.bincount(groups, weights=w * passing, minlength=n_groups) / total


def _passing(score: FloatArray, order: IntArray, w: FloatArray, rejected: float) -> FloatArray:
    """Probability that each event passes the randomised cut rejecting a fraction ``rejected``.

    ``order`` sorts ``score`` from the highest down.
    """
    cumulative = np.cumsum(w[order])
    target = (1.0 - rejected) * cumulative[-1]
    k = min(int(np.searchsorted(cumulative, target, side="left")), len(score) - 1)
    cut = score[order[k]]
    above = score > cut
    at = score == cut
    w_at = w[at].sum()
    fraction = float(np.clip((target - w[above].sum()) / w_at, 0.0, 1.0)) if w_at > 0 else 0.0
    selected: FloatArray = above + fraction * at
    return selected


def parity_spreads(
    score: FloatArray,
    label: Int64Array,
    groups: IntArray,
    n_groups: int,
    working_points: FloatArray,
    weight: FloatArray | None = None,
) -> dict[str, FloatArray]:
    """Spread across groups of the positive, true- and false-positive rates at each working point.

    The cut at working point ``q`` rejects a fraction ``q`` of everyone
    (:func:`group_rates`); the true- and false-positive rates are the passing
    fractions of the positives and negatives of each group at that same cut.

    Parameters
    ----------
    score, label, groups
        Score, binary label and group of every person.
    n_groups
        Number of groups.
    working_points
        Fractions rejected, e.g. 0.1 to 0.9.
    weight
        Optional non-negative weights (bootstrap counts).

    Returns
    -------
    dict
        ``demographic_parity`` (spread of the positive rate), ``tpr`` and
        ``fpr`` (spreads of the true- and false-positive rates) and
        ``equalised_odds`` (the larger of the two), one value per working point.
    """
    w = np.ones(len(score)) if weight is None else np.asarray(weight, dtype=np.float64)
    order = np.argsort(-score, kind="stable")
    positive = label == 1
    subsets = {"demographic_parity": w, "tpr": w * positive, "fpr": w * ~positive}
    totals = {
        key: np.bincount(groups, weights=ws, minlength=n_groups) for key, ws in subsets.items()
    }
    out: dict[str, list[float]] = {key: [] for key in subsets}
    for q in working_points:
        passing = _passing(score, order, w, float(q))
        for key, ws in subsets.items():
            with np.errstate(invalid="ignore", divide="ignore"):
                rates = np.bincount(groups, weights=ws * passing, minlength=n_groups) / totals[key]
            out[key].append(float(np.nanmax(rates) - np.nanmin(rates)))
    result = {key: np.asarray(values) for key, values in out.items()}
    result["equalised_odds"] = np.maximum(result["tpr"], result["fpr"])
    return result


# ----------------------------------------------------------------- methods
