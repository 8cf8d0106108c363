"""The designed decorrelated tagger (DDT): the score shifted in bins of ``x``.

The practice of CMS and ATLAS (Dolen et al. 2016): in bins of ``x`` the
quantile ``q(x)`` of the background score at a chosen background efficiency
``eps`` is measured, and the score is replaced by ``y - q(x)``, so that the cut
``y - q(x) > 0`` keeps the fraction ``eps`` of the background at every ``x``.
It decorrelates that one working point; the others keep whatever dependence
the shift leaves.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

from rosenblatt._schema import SchemaError, check_array, check_domain
from rosenblatt._validation import check_int
from rosenblatt.transforms._base import ConditionalCDFTransform
from rosenblatt.transforms._quantiles import cdf_knots, evaluate_knots, weighted_quantiles
from rosenblatt.transforms.rarity import _x_domain
from rosenblatt.typing import ArrayLike, FloatArray

__all__ = ["DDT"]

#: fewest defining events per x bin and working point: ``min_events / min(eps, 1 - eps)``
_MIN_TAIL_EVENTS = 10


class DDT(ConditionalCDFTransform):
    """Per-``x``-bin quantile map of the score at fixed background efficiencies.

    The defining sample is cut into ``n_bins`` bins of ``x`` of equal
    (weighted) occupancy. In each bin the score's quantile ``q_j`` at
    background efficiency ``eps_j`` (the fraction above it) is measured; it is
    interpolated linearly in ``x`` between the bins' median ``x`` and
    extrapolated along the line through the two outer medians beyond them
    (up to the edge of the defining sample's ``x`` range). The node values
    are then shifted, a few passes over the sample, until the interpolated
    cut ``y > q_j(x)`` keeps exactly ``eps_j`` of the defining events around
    each node. The DDT score :meth:`score` maps ``q_j(x)``
    to ``r_j``, the quantile of ``y`` over the whole sample at the same
    efficiency: with one working point it is the classic shift
    ``y - q(x) + r``; with several it is linear in ``y`` between the ``q_j(x)``
    and a shift outside them. ``gamma`` is the marginal CDF of that score on
    the defining sample (so it lies in [0, 1] and is monotone in ``y``), and
    the cut ``gamma > cuts_[j]`` is exactly ``y > q_j(x)``: background
    efficiency ``eps_j`` at every ``x``.

    Parameters
    ----------
    efficiency
        Background efficiency of the working point(s), each in (0, 1): the
        share of the background above the cut. Default 10%.
    n_bins
        Number of ``x`` bins.
    n_quantiles
        Knots of the tabulated CDF of the DDT score (see :class:`Rarity`).

    Attributes
    ----------
    efficiencies_ : numpy.ndarray
        The working points, decreasing (so that their quantiles increase).
    x_centres_ : numpy.ndarray
        Median ``x`` of each bin, increasing.
    quantiles_ : numpy.ndarray
        ``(n_bins, n_points)``: ``q_j`` per bin, non-decreasing along each row.
    references_ : numpy.ndarray
        ``r_j``, the quantiles of ``y`` over the whole defining sample.
    cuts_ : numpy.ndarray
        The ``gamma`` cut of each working point: ``gamma > cuts_[j]`` keeps
        ``eps_j`` of the background in every ``x`` bin.
    knots_, levels_ : numpy.ndarray
        The tabulated CDF of the DDT score.

    Examples
    --------
    >>> import numpy as np, rosenblatt as rb
    >>> rng = np.random.default_rng(0)
    >>> x = rng.normal(size=20_000)
    >>> y = 0.6 * x + 0.8 * rng.normal(size=20_000)
    >>> ddt = rb.DDT(efficiency=0.1).fit(x, y)
    >>> passed = ddt.transform(x, y) > ddt.cuts_[0]
    >>> [round(float(passed[x < 0].mean()), 2), round(float(passed[x > 0].mean()), 2)]
    [0.1, 0.1]
    """

    kind: ClassVar[str] = "ddt"
    weights_replicate: ClassVar[bool] = True

    efficiencies_: FloatArray
    x_centres_: FloatArray
    quantiles_: FloatArray
    references_: FloatArray
    cuts_: FloatArray
    knots_: FloatArray
    levels_: FloatArray

    def __init__(
        self, efficiency: float | Sequence[float] = 0.1, n_bins: int = 20, n_quantiles: int = 1000
    ) -> None:
        self.efficiency = efficiency
        self.n_bins = n_bins
        self.n_quantiles = n_quantiles

    def __repr__(self) -> str:
        return f"DDT(efficiency={self.efficiency!r}, n_bins={self.n_bins!r})"

    # ------------------------------------------------------------ parameters
    def _check_params(self) -> FloatArray:
        check_int(self.n_bins, "n_bins", low=1, what="an integer >= 1")
        check_int(self.n_quantiles, "n_quantiles", low=2)
        raw = np.atleast_1d(np.asarray(self.efficiency, dtype=np.float64))
        if raw.ndim != 1 or len(raw) == 0 or not np.all((raw > 0) & (raw < 1)):
            msg = f"efficiency must be one or more numbers in (0, 1), got {self.efficiency!r}"
            raise ValueError(msg)
        if len(np.unique(raw)) != len(raw):
            msg = f"efficiency has repeated working points: {self.efficiency!r}"
            raise ValueError(msg)
        descending: FloatArray = np.sort(raw)[::-1].copy()
        return descending

    # ------------------------------------------------------------ fit
    def _fit(self, x: FloatArray, y: FloatArray, w: FloatArray | None) -> None:
        eff = self._check_params()
        n_bins = int(self.n_bins)
        least = int(np.ceil(_MIN_TAIL_EVENTS / min(eff.min(), 1 - eff.max())))
        if len(x) < n_bins * least:
            msg = (
                f"a DDT with {n_bins} x bins at efficiencies {eff.tolist()} needs at least "
                f"{n_bins * least} defining events ({least} per bin), got {len(x)}: use fewer bins"
            )
            raise ValueError(msg)
        if y.min() == y.max():
            msg = "y of the defining sample is constant: it has no quantiles to flatten"
            raise ValueError(msg)
        levels = 1.0 - eff
        edges = weighted_quantiles(x, w, np.linspace(0.0, 1.0, n_bins + 1))
        which = np.clip(np.searchsorted(edges, x, side="right") - 1, 0, n_bins - 1)
        centres, quantiles = [], []
        for b in range(n_bins):
            inside = which == b
            if inside.sum() < least:
                continue  # a bin emptied by ties in x; its neighbours cover it
            wb = None if w is None else w[inside]
            if wb is not None and not wb.sum() > 0:
                continue
            centres.append(float(weighted_quantiles(x[inside], wb, np.array([0.5]))[0]))
            quantiles.append(np.maximum.accumulate(weighted_quantiles(y[inside], wb, levels)))
        centre_arr = np.asarray(centres)
        keep = np.r_[True, np.diff(centre_arr) > 0]
        self.efficiencies_ = eff
        self.x_centres_ = centre_arr[keep]
        self.quantiles_ = _calibrate(x, y, w, self.x_centres_, np.asarray(quantiles)[keep], levels)
        self.references_ = np.maximum.accumulate(weighted_quantiles(y, w, levels))
        self.domain_ = (_x_domain(x), (float(y.min()), float(y.max())))
        s = self.score(x, y)
        self.knots_, self.levels_ = cdf_knots(s, w, int(self.n_quantiles))
        self.cuts_ = evaluate_knots(self.references_, self.knots_, self.levels_)

    # ------------------------------------------------------------ evaluate
    def quantile(self, x: ArrayLike) -> FloatArray:
        """The score's quantiles ``q_j(x)`` at each working point, ``(len(x), n_points)``.

        Parameters
        ----------
        x
            Values of the protected observable, one-dimensional.
        """
        self._check_fitted()
        return _interpolate(
            np.asarray(x, dtype=np.float64).ravel(), self.x_centres_, self.quantiles_
        )

    def score(self, x: ArrayLike, y: ArrayLike) -> FloatArray:
        """The DDT score: ``q_j(x)`` mapped to ``r_j``, linear between, shifted outside.

        With one working point this is ``y - q(x) + r``; ``score > r_j`` is
        the cut ``y > q_j(x)``.

        Parameters
        ----------
        x, y
            One-dimensional arrays of equal length.
        """
        self._check_fitted()
        y_arr = np.asarray(y, dtype=np.float64).ravel()
        q = self.quantile(x)
        if len(q) != len(y_arr):
            msg = f"x and y must have the same length, got {len(q)} and {len(y_arr)}"
            raise ValueError(msg)
        r = self.references_
        out: FloatArray = y_arr - q[:, 0] + r[0]
        for j in range(len(r) - 1):
            lo, hi = q[:, j], q[:, j + 1]
            width = hi - lo
            between = (y_arr > lo) & (y_arr <= hi) & (width > 0)
            frac = np.divide(y_arr - lo, width, out=np.zeros_like(width), where=width > 0)
            out = np.where(between, r[j] + frac * (r[j + 1] - r[j]), out)
            out = np.where(y_arr > hi, y_arr - hi + r[j + 1], out)
        return out

    def _transform(self, x: FloatArray, y: FloatArray) -> FloatArray:
        (x_lo, x_hi), (y_lo, y_hi) = self.domain_
        out = evaluate_knots(self.score(np.clip(x, x_lo, x_hi), y), self.knots_, self.levels_)
        out[y < y_lo] = 0.0
        out[y > y_hi] = 1.0
        return out

    def describe(self) -> str:
        """The working points and the number of ``x`` bins."""
        points = ", ".join(f"{e:g}" for e in self.efficiencies_)
        return (
            f"DDT: score quantiles at background efficiency {points} in {len(self.x_centres_)} "
            "x bins, linear in x through the bin medians; gamma is the CDF of the DDT score"
        )

    def fitted_params(self) -> dict[str, Any]:
        """The working points and the number of bins."""
        return {
            "efficiency": [float(e) for e in np.atleast_1d(self.efficiency)],
            "n_bins": int(self.n_bins),
        }

    # ------------------------------------------------------------ state
    def get_state(self) -> dict[str, Any]:
        """Working points, bin medians, quantiles, references, the score's CDF and the domain."""
        self._check_fitted()
        return {
            "params": {
                "efficiency": [float(e) for e in np.atleast_1d(self.efficiency)],
                "n_bins": int(self.n_bins),
                "n_quantiles": int(self.n_quantiles),
            },
            "domain": [list(axis) for axis in self.domain_],
            "x_centres": self.x_centres_.tolist(),
            "quantiles": self.quantiles_.tolist(),
            "references": self.references_.tolist(),
            "knots": self.knots_.tolist(),
            "levels": self.levels_.tolist(),
            "n_events": int(self.n_events_),
            "sum_weight": float(self.sum_weight_),
        }

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> DDT:
        """Rebuild from :meth:`get_state` output, checking every array."""
        params = state["params"]
        obj = cls(
            efficiency=params["efficiency"],
            n_bins=params["n_bins"],
            n_quantiles=params["n_quantiles"],
        )
        try:
            eff = obj._check_params()
        except ValueError as err:
            raise SchemaError(str(err)) from err
        obj.domain_ = check_domain(state["domain"])
        n_x = _length(state["x_centres"], "x_centres")
        n_k = _length(state["knots"], "knots")
        obj.efficiencies_ = eff
        obj.x_centres_ = check_array(state["x_centres"], "x_centres", (n_x,), increasing=True)
        obj.quantiles_ = check_array(
            state["quantiles"], "quantiles", (n_x, len(eff)), nondecreasing=True
        )
        obj.references_ = check_array(
            state["references"], "references", (len(eff),), nondecreasing=True
        )
        obj.knots_ = check_array(state["knots"], "knots", (n_k,), increasing=True)
        obj.levels_ = check_array(state["levels"], "levels", (n_k,), nondecreasing=True, unit=True)
        obj.cuts_ = evaluate_knots(obj.references_, obj.knots_, obj.levels_)
        obj.n_events_ = int(state["n_events"])
        obj.sum_weight_ = float(state["sum_weight"])
        return obj


def _interpolate(x: FloatArray, centres: FloatArray, nodes: FloatArray) -> FloatArray:
    """Node values ``(n_centres, n_points)`` linear in ``x`` through the centres and beyond the outer two."""
    out = np.column_stack([np.interp(x, centres, column) for column in nodes.T])
    if len(centres) > 1:
        for side, (a, b) in (((x < centres[0]), (0, 1)), ((x > centres[-1]), (-2, -1))):
            if side.any():
                slope = (nodes[b] - nodes[a]) / (centres[b] - centres[a])
                out[side] = nodes[b] + np.outer(x[side] - centres[b], slope)
    return np.maximum.accumulate(out, axis=1)


def _calibrate(
    x: FloatArray,
    y: FloatArray,
    w: FloatArray | None,
    centres: FloatArray,
    nodes: FloatArray,
    levels: FloatArray,
    iterations: int = 10,
) -> FloatArray:
    """Shift the node values until the interpolated cut keeps ``1 - levels`` of every bin.

    The bins are the intervals between the midpoints of neighbouring centres.
    Each pass moves every node by the quantile of ``y - q(x)`` in its bin, so
    that the cut ``y > q(x)``, with ``q`` interpolated between the nodes,
    keeps exactly the working point's share of the bin's defining events.
    """
    edges = np.r_[-np.inf, 0.5 * (centres[1:] + centres[:-1]), np.inf]
    which = np.searchsorted(edges, x, side="right") - 1
    members = [np.flatnonzero(which == b) for b in range(len(centres))]
    tolerance = 1e-4 * (float(np.std(y)) or 1.0)
    nodes = nodes.copy()
    for _ in range(iterations):
        residual = y[:, None] - _interpolate(x, centres, nodes)
        shift = np.zeros_like(nodes)
        for b, index in enumerate(members):
            if len(index) == 0:
                continue
            wb = None if w is None else w[index]
            for j, level in enumerate(levels):
                shift[b, j] = weighted_quantiles(residual[index, j], wb, np.array([level]))[0]
        nodes = np.maximum.accumulate(nodes + shift, axis=1)
        if np.max(np.abs(shift)) < tolerance:
            break
    return nodes


def _length(values: Any, name: str) -> int:
    if not isinstance(values, list) or not values:
        msg = f"{name} must be a non-empty list"
        raise SchemaError(msg)
    return len(values)
