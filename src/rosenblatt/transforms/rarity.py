"""The marginal rarity transform: the score's CDF, ignoring ``x``.

TMVA's *rarity* and :class:`sklearn.preprocessing.QuantileTransformer` with a
uniform output: ``gamma(x, y) = P(Y <= y)`` over the whole defining sample.
Its output is uniform on [0, 1] for the background, like the Rosenblatt
transform's, but it is a monotone map of ``y`` alone: it keeps every bit of
the dependence on ``x``. It is the baseline that shows why the CDF must be
conditional.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from rosenblatt._schema import SchemaError, check_array, check_domain
from rosenblatt._validation import check_int
from rosenblatt.transforms._base import ConditionalCDFTransform
from rosenblatt.transforms._quantiles import cdf_knots, evaluate_knots
from rosenblatt.typing import FloatArray

__all__ = ["Rarity"]


def _x_domain(x: FloatArray) -> tuple[float, float]:
    lo, hi = float(x.min()), float(x.max())
    return (lo, hi if hi > lo else float(np.nextafter(lo, np.inf)))


class Rarity(ConditionalCDFTransform):
    """Marginal CDF of the score, ``gamma(x, y) = P(Y <= y)``, independent of ``x``.

    The weighted empirical CDF of the defining sample's scores is tabulated on
    ``n_quantiles`` knots (its quantiles at evenly spaced levels) and
    interpolated linearly between them.

    Parameters
    ----------
    n_quantiles
        Number of knots, at least 2 (``sklearn``'s ``QuantileTransformer``
        uses 1000).

    Attributes
    ----------
    knots_ : numpy.ndarray
        Distinct score values at which the CDF is tabulated, increasing.
    levels_ : numpy.ndarray
        ``P(Y <= knot)`` at each knot, non-decreasing, the last 1.

    Examples
    --------
    >>> import numpy as np, rosenblatt as rb
    >>> rng = np.random.default_rng(0)
    >>> x, y = rng.normal(size=1000), rng.normal(size=1000)
    >>> gamma = rb.Rarity().fit(x, y).transform(x, y)
    >>> bool(0 <= gamma.min() and gamma.max() <= 1)
    True
    """

    kind: ClassVar[str] = "rarity"
    weights_replicate: ClassVar[bool] = True

    knots_: FloatArray
    levels_: FloatArray

    def __init__(self, n_quantiles: int = 1000) -> None:
        self.n_quantiles = n_quantiles

    def __repr__(self) -> str:
        return f"Rarity(n_quantiles={self.n_quantiles!r})"

    def _check_params(self) -> int:
        return check_int(self.n_quantiles, "n_quantiles", low=2)

    def _fit(self, x: FloatArray, y: FloatArray, w: FloatArray | None) -> None:
        n_quantiles = self._check_params()
        if y.min() == y.max():
            msg = "y of the defining sample is constant: its CDF is a single step"
            raise ValueError(msg)
        self.knots_, self.levels_ = cdf_knots(y, w, n_quantiles)
        self.domain_ = (_x_domain(x), (float(y.min()), float(y.max())))

    def _transform(self, x: FloatArray, y: FloatArray) -> FloatArray:
        return evaluate_knots(y, self.knots_, self.levels_)

    def describe(self) -> str:
        """The number of knots; ``gamma`` does not depend on ``x``."""
        return f"marginal CDF of y (rarity) on {len(self.knots_)} knots, linear between them, independent of x"

    def fitted_params(self) -> dict[str, Any]:
        """The number of knots asked for."""
        return {"n_quantiles": int(self.n_quantiles)}

    def get_state(self) -> dict[str, Any]:
        """The knots, their levels, the domain and the defining sample's size."""
        self._check_fitted()
        return {
            "params": {"n_quantiles": int(self.n_quantiles)},
            "domain": [list(axis) for axis in self.domain_],
            "knots": self.knots_.tolist(),
            "levels": self.levels_.tolist(),
            "n_events": int(self.n_events_),
            "sum_weight": float(self.sum_weight_),
        }

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> Rarity:
        """Rebuild from :meth:`get_state` output, checking the knots and levels."""
        obj = cls(n_quantiles=state["params"]["n_quantiles"])
        try:
            obj._check_params()
        except ValueError as err:
            raise SchemaError(str(err)) from err
        obj.domain_ = check_domain(state["domain"])
        knots = state["knots"]
        if not isinstance(knots, list) or not knots:
            msg = "knots must be a non-empty list"
            raise SchemaError(msg)
        obj.knots_ = check_array(knots, "knots", (len(knots),), increasing=True)
        obj.levels_ = check_array(
            state["levels"], "levels", (len(knots),), nondecreasing=True, unit=True
        )
        obj.n_events_ = int(state["n_events"])
        obj.sum_weight_ = float(state["sum_weight"])
        return obj
