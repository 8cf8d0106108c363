"""Weighted empirical CDFs and quantiles, tabulated on knots (for Rarity and DDT)."""

from __future__ import annotations

import numpy as np

from rosenblatt.typing import FloatArray

__all__ = ["cdf_knots", "evaluate_knots", "weighted_quantiles"]


def _ecdf(values: FloatArray, w: FloatArray | None) -> tuple[FloatArray, FloatArray]:
    """Distinct sorted values and ``P(V <= v)`` at each, non-decreasing even for negative weights."""
    order = np.argsort(values, kind="stable")
    v = values[order]
    weights = np.ones(len(v)) if w is None else w[order]
    cum = np.cumsum(weights)
    total = cum[-1]
    if not total > 0:
        msg = "the weights of a sample must have a positive sum"
        raise ValueError(msg)
    last = np.r_[v[1:] != v[:-1], True]
    levels = np.clip(np.maximum.accumulate(cum[last] / total), 0.0, 1.0)
    return v[last], levels


def weighted_quantiles(values: FloatArray, w: FloatArray | None, levels: FloatArray) -> FloatArray:
    """Quantiles at ``levels``: the inverse of the weighted ECDF, linear between distinct values."""
    v, cdf = _ecdf(values, w)
    if len(v) == 1:
        return np.full(len(levels), v[0])
    # linear interpolation of the ECDF through (v_i, F(v_i)) with F = 0 just below v_0
    return np.interp(levels, np.r_[0.0, cdf], np.r_[v[0], v])


def cdf_knots(
    values: FloatArray, w: FloatArray | None, n_knots: int
) -> tuple[FloatArray, FloatArray]:
    """The weighted ECDF on at most ``n_knots`` distinct knots: ``(knots, levels)``.

    Between knots the CDF is linear; each knot carries ``P(V <= knot)``. With
    fewer distinct values than ``n_knots`` every value is a knot.
    """
    v, cdf = _ecdf(values, w)
    if len(v) > n_knots:
        probe = np.linspace(0.0, 1.0, n_knots)
        knots = np.interp(probe, np.r_[0.0, cdf], np.r_[v[0], v])
        levels = np.interp(knots, v, cdf)
        keep = np.r_[knots[1:] != knots[:-1], True]
        v, cdf = knots[keep], levels[keep]
    return v, cdf


def evaluate_knots(values: FloatArray, knots: FloatArray, levels: FloatArray) -> FloatArray:
    """The tabulated CDF at ``values``: 0 below the first knot, 1 above the last, linear between."""
    out = np.interp(values, knots, levels)
    out[values < knots[0]] = 0.0
    out[values > knots[-1]] = 1.0
    return out
