"""The decorrelation strength: a family of scores between the raw score and ``gamma``.

Full decorrelation is not always the best trade: a score independent of ``x``
gives up some of the discrimination the raw score drew from its correlation
with ``x``. The family

.. math::

    s_p(x, y) = (1 - p)\\, F(y) + p\\, \\gamma(x, y), \\qquad 0 \\le p \\le 1,

mixes the conditional CDF ``gamma`` with the raw score's marginal CDF ``F`` on
the same defining (background) sample, as the optimal-transport method CDOT
mixes its decorrelated and raw scores. ``F`` is a strictly increasing map of
``y``, so ``p = 0`` ranks every event as the raw score does (the same ROC
curve, AUC and background rejection), and ``p = 1`` is ``gamma`` itself. Both
terms are uniform on [0, 1] for the background, so the strength ``p`` weighs
them on one scale; in between, the dependence on ``x`` falls as ``p`` rises.

* :class:`MarginalCDF` -- ``F``, the weighted mid-distribution function of the
  defining scores, strictly increasing everywhere;
* :func:`partial_decorrelation` -- ``s_p`` from ``gamma`` and ``F(y)``;
* :class:`PartialDecorrelation` -- a transform and ``F`` fitted on one
  defining sample, evaluated at one strength or at several.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from rosenblatt._validation import as_1d_float, as_weight, check_finite, check_real
from rosenblatt.exceptions import NotFittedError
from rosenblatt.transforms._base import ConditionalCDFTransform
from rosenblatt.transforms._quantiles import _ecdf
from rosenblatt.typing import ArrayLike, FloatArray

if TYPE_CHECKING:
    from typing_extensions import Self

__all__ = ["MarginalCDF", "PartialDecorrelation", "check_strength", "partial_decorrelation"]


def check_strength(strength: object) -> float:
    """``strength`` as a float if it is a finite number in [0, 1].

    Parameters
    ----------
    strength
        The decorrelation strength ``p``.

    Returns
    -------
    float
        ``p``.

    Raises
    ------
    ValueError
        When ``p`` is not a number, is NaN or infinite, or lies outside [0, 1].
    """
    return check_real(
        strength,
        "strength",
        low=0.0,
        high=1.0,
        what="a number in [0, 1] (0: the raw score's CDF, 1: gamma)",
    )


class MarginalCDF:
    """The raw score's marginal CDF ``F(y)`` on a weighted sample, strictly increasing.

    At each distinct defining score ``v`` the level is the mid-distribution
    function ``P(Y < v) + P(Y = v) / 2`` (weighted; negative weights allowed,
    the cumulative sum kept non-decreasing); between them ``F`` is linear.
    Beyond the sample's range ``F`` tends to 0 (below) and 1 (above) as
    ``1 / (1 + d / scale)`` of the distance ``d`` from the nearest score, with
    ``scale`` the range divided by the number of distinct scores. Where
    negative weights leave levels equal, 10^-6 of the distinct scores' uniform
    ranks is blended in. So ``F`` is strictly increasing on the whole real
    line, and a cut on ``F(y)`` is a cut on ``y``: ``F`` keeps every ranking,
    including those of events outside the defining sample's range.

    Integer weights give the function of the events each repeated as often
    (an event of weight 0 is one left out).

    Attributes
    ----------
    knots_ : numpy.ndarray
        The distinct defining scores, increasing.
    levels_ : numpy.ndarray
        ``F`` at each knot, strictly increasing, inside (0, 1).
    scale_ : float
        The length over which the tails approach 0 and 1.

    Examples
    --------
    >>> import numpy as np
    >>> from rosenblatt.transforms.strength import MarginalCDF
    >>> F = MarginalCDF().fit(np.array([1.0, 2.0, 3.0, 4.0]))
    >>> F(np.array([2.0, 3.0])).tolist()
    [0.375, 0.625]
    """

    knots_: FloatArray
    levels_: FloatArray
    scale_: float

    def __repr__(self) -> str:
        return "MarginalCDF()"

    def fit(self, y: ArrayLike, weight: ArrayLike | None = None) -> Self:
        """Tabulate ``F`` on the defining scores ``y`` with optional ``weight``.

        Parameters
        ----------
        y
            The raw scores of the defining (background) sample.
        weight
            Event weights, negative ones allowed; their sum must be positive.

        Returns
        -------
        MarginalCDF
            ``self``.

        Raises
        ------
        ValueError
            On an empty sample, NaN or infinite scores or weights, a weight
            array of another length, or weights that do not sum to a positive
            number.
        """
        values = as_1d_float(y, "y")
        check_finite(values, "y")
        w = as_weight(weight, len(values))
        if w is not None:  # an event of weight 0 is one left out
            values, w = values[w != 0], w[w != 0]
            if not len(values):
                msg = "every weight is 0: no defining score is left"
                raise ValueError(msg)
        knots, cdf = _ecdf(values, w)
        below = np.r_[0.0, cdf[:-1]]
        levels = 0.5 * (below + cdf)
        if len(levels) > 1 and not np.all(np.diff(levels) > 0):
            ranks = (np.arange(len(levels)) + 0.5) / len(levels)
            levels = (1.0 - 1e-6) * levels + 1e-6 * ranks
        span = float(knots[-1] - knots[0])
        self.knots_ = knots
        self.levels_ = levels
        self.scale_ = span / len(knots) if span > 0 else 1.0
        return self

    def __call__(self, y: ArrayLike) -> FloatArray:
        """``F(y)``, in (0, 1) for finite ``y``.

        Parameters
        ----------
        y
            Scores, finite or infinite (``F(-inf) = 0``, ``F(inf) = 1``).

        Returns
        -------
        numpy.ndarray
            One value per score.

        Raises
        ------
        NotFittedError
            Before :meth:`fit`.
        ValueError
            When a score is NaN.
        """
        if not hasattr(self, "knots_"):
            msg = "this MarginalCDF is not fitted yet: call fit(y, weight) first"
            raise NotFittedError(msg)
        values = as_1d_float(y, "y", allow_empty=True)
        if np.isnan(values).any():
            msg = f"y has {int(np.isnan(values).sum())} NaN value(s) out of {values.size}"
            raise ValueError(msg)
        knots, levels, scale = self.knots_, self.levels_, self.scale_
        out = np.interp(values, knots, levels)
        below, above = values < knots[0], values > knots[-1]
        with np.errstate(over="ignore", invalid="ignore"):
            out[below] = levels[0] / (1.0 + (knots[0] - values[below]) / scale)
            out[above] = 1.0 - (1.0 - levels[-1]) / (1.0 + (values[above] - knots[-1]) / scale)
        return out


def partial_decorrelation(gamma: ArrayLike, marginal: ArrayLike, strength: float) -> FloatArray:
    """The partially decorrelated score ``s_p = (1 - p) * marginal + p * gamma``.

    Parameters
    ----------
    gamma
        The conditional CDF ``gamma(x, y)`` of each event.
    marginal
        The raw score's marginal CDF ``F(y)`` of each event
        (:class:`MarginalCDF` on the same defining sample).
    strength
        The decorrelation strength ``p`` in [0, 1]: 0 gives ``marginal``
        exactly, 1 gives ``gamma`` exactly.

    Returns
    -------
    numpy.ndarray
        ``s_p`` per event, in [0, 1] where both inputs are.

    Raises
    ------
    ValueError
        When ``strength`` is NaN or outside [0, 1], the two arrays differ in
        length, or either holds NaN.
    """
    p = check_strength(strength)
    g = as_1d_float(gamma, "gamma", allow_empty=True)
    f = as_1d_float(marginal, "marginal", allow_empty=True)
    if len(g) != len(f):
        msg = f"length mismatch: gamma has {len(g)} events, marginal has {len(f)}"
        raise ValueError(msg)
    for name, values in (("gamma", g), ("marginal", f)):
        if np.isnan(values).any():
            msg = f"{name} has {int(np.isnan(values).sum())} NaN value(s) out of {values.size}"
            raise ValueError(msg)
    mixed: FloatArray = f.copy() if p == 0.0 else g.copy() if p == 1.0 else (1.0 - p) * f + p * g
    return mixed


class PartialDecorrelation:
    """A transform and the raw score's marginal CDF, mixed at a decorrelation strength.

    ``transform(x, y)`` returns ``(1 - p) * F(y) + p * gamma(x, y)``
    (:func:`partial_decorrelation`), with ``gamma`` from ``estimator`` and
    ``F`` the :class:`MarginalCDF` of the same defining sample. ``p = 1`` is the
    estimator's ``gamma``; ``p = 0`` ranks events as ``y`` does.

    Parameters
    ----------
    estimator
        A conditional-CDF transform (:class:`~rosenblatt.IRGI`,
        :class:`~rosenblatt.KDE`, ...), fitted by :meth:`fit`.
    strength
        The decorrelation strength ``p`` in [0, 1].

    Attributes
    ----------
    marginal_ : MarginalCDF
        ``F``, fitted on the defining sample's scores and weights.

    Examples
    --------
    >>> import numpy as np, rosenblatt as rb
    >>> from rosenblatt.transforms.strength import PartialDecorrelation
    >>> rng = np.random.default_rng(0)
    >>> x = rng.normal(size=2000)
    >>> y = 0.6 * x + 0.8 * rng.normal(size=2000)
    >>> knob = PartialDecorrelation(rb.IRGI(depth=4), strength=0.5).fit(x, y)
    >>> knob.scores(x, y, [0.0, 0.5, 1.0]).shape
    (3, 2000)
    """

    marginal_: MarginalCDF

    def __init__(self, estimator: ConditionalCDFTransform, strength: float = 1.0) -> None:
        self.estimator = estimator
        self.strength = strength

    def __repr__(self) -> str:
        return f"PartialDecorrelation({self.estimator!r}, strength={self.strength!r})"

    def fit(self, x: ArrayLike, y: ArrayLike, weight: ArrayLike | None = None) -> Self:
        """Fit the estimator and ``F`` on the defining sample ``(x, y, weight)``.

        Parameters
        ----------
        x, y, weight
            As for :meth:`rosenblatt.transforms.ConditionalCDFTransform.fit`.

        Returns
        -------
        PartialDecorrelation
            ``self``.

        Raises
        ------
        ValueError
            When ``strength`` is not in [0, 1], or as the estimator's fit.
        """
        check_strength(self.strength)
        self.estimator.fit(x, y, weight)
        self.marginal_ = MarginalCDF().fit(y, weight)
        return self

    @classmethod
    def from_fitted(
        cls,
        estimator: ConditionalCDFTransform,
        y: ArrayLike,
        weight: ArrayLike | None = None,
        strength: float = 1.0,
    ) -> PartialDecorrelation:
        """Wrap an estimator already fitted; fit ``F`` on its defining scores ``y``.

        Parameters
        ----------
        estimator
            A fitted conditional-CDF transform.
        y, weight
            The scores and weights of the sample the estimator was fitted on.
        strength
            The decorrelation strength ``p`` in [0, 1].

        Returns
        -------
        PartialDecorrelation
            Ready to evaluate.

        Raises
        ------
        NotFittedError
            When ``estimator`` is not fitted.
        """
        check_strength(strength)
        if not estimator.is_fitted():
            msg = f"{estimator!r} is not fitted: fit it first, or call PartialDecorrelation.fit"
            raise NotFittedError(msg)
        obj = cls(estimator, strength)
        obj.marginal_ = MarginalCDF().fit(y, weight)
        return obj

    def with_strength(self, strength: float) -> PartialDecorrelation:
        """The same fitted estimator and ``F`` at another strength (a shallow copy).

        Parameters
        ----------
        strength
            The decorrelation strength ``p`` in [0, 1].

        Returns
        -------
        PartialDecorrelation
            A new object sharing the fitted estimator and ``F``.
        """
        check_strength(strength)
        other = copy.copy(self)
        other.strength = strength
        return other

    def _check_fitted(self) -> None:
        if not hasattr(self, "marginal_"):
            msg = "this PartialDecorrelation is not fitted yet: call fit(x, y, weight) first"
            raise NotFittedError(msg)

    def transform(self, x: ArrayLike, y: ArrayLike) -> FloatArray:
        """``s_p(x, y)`` at this object's strength.

        Parameters
        ----------
        x, y
            One-dimensional numpy arrays (or array-likes) of equal length.

        Returns
        -------
        numpy.ndarray
            The partially decorrelated score per event.

        Raises
        ------
        NotFittedError
            Before :meth:`fit`.
        ValueError
            When the strength is not in [0, 1] or an input holds NaN.
        """
        row: FloatArray = self.scores(x, y, [self.strength])[0]
        return row

    def scores(self, x: ArrayLike, y: ArrayLike, strengths: Sequence[float]) -> FloatArray:
        """``s_p(x, y)`` at each of ``strengths``, ``gamma`` and ``F`` evaluated once.

        Parameters
        ----------
        x, y
            One-dimensional numpy arrays (or array-likes) of equal length.
        strengths
            Decorrelation strengths, each in [0, 1].

        Returns
        -------
        numpy.ndarray
            Shape ``(len(strengths), n)``: one row per strength.

        Raises
        ------
        NotFittedError
            Before :meth:`fit`.
        ValueError
            When a strength is not in [0, 1] or an input holds NaN.
        """
        self._check_fitted()
        ps = [check_strength(p) for p in strengths]
        gamma = np.asarray(self.estimator.transform(_as_numpy(x), _as_numpy(y)), dtype=np.float64)
        marginal = self.marginal_(y)
        if not ps:
            return np.empty((0, len(marginal)))
        return np.stack([partial_decorrelation(gamma, marginal, p) for p in ps])


def _as_numpy(values: ArrayLike) -> Any:
    """``values`` as a float64 numpy array (scalars as one-element arrays)."""
    return np.atleast_1d(np.asarray(values, dtype=np.float64))
