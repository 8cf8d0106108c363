"""Background populations whose conditional CDF is known in closed form.

Each case draws ``(x, y)`` events and gives the exact ``gamma(x, y) = P(Y <= y | X = x)``,
so the accuracy of an estimated transform is measured, not guessed:

``rms_to_exact(transform, case, ...)`` is the root mean square of the estimated
minus the exact ``gamma`` over independent testing events.

- ``"bivariate_normal"``: the method paper's Gaussian blob, a standard bivariate
  normal with correlation ``rho = 0.6``.
- ``"heteroscedastic"``: ``x ~ N(0, 1)``, ``y = x + exp(x / 2) eps`` with
  ``eps ~ N(0, 1)``: the width of ``y`` grows with ``x``.
- ``"skewed"``: ``x ~ Gamma(2, 1)`` (a falling spectrum with an exponential
  tail, like a dijet mass), ``y | x ~ Gamma(1 + x, 1)``: both skewed, the
  skewness of ``y`` falling from 2 to 0 as ``x`` grows.
- ``"classifier"``: a bounded score in ``(0, 1)`` shaped like a classifier's
  background output: ``y | x`` is a mixture of ``Beta(1, 6)`` (weight
  ``p(x) = 1 / (1 + exp(-(1 + x)))``) and ``Beta(5, 2)``, with ``x ~ N(0, 1)``;
  the balance of its two peaks follows ``x``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray
from scipy import special

if TYPE_CHECKING:
    from rosenblatt.transforms._base import ConditionalCDFTransform

__all__ = ["CASES", "ClosedForm", "closed_form", "rms_to_exact"]

Array = NDArray[np.float64]


@dataclasses.dataclass(frozen=True)
class ClosedForm:
    """A background population with an exact conditional CDF.

    Attributes
    ----------
    name
        Short identifier (a key of :data:`CASES`).
    description
        One line saying how ``x`` and ``y`` are distributed.
    draw
        ``draw(n, rng) -> (x, y)``: ``n`` independent events.
    conditional_cdf
        ``conditional_cdf(x, y) -> gamma``: the exact ``P(Y <= y | X = x)``.
    """

    name: str
    description: str
    draw: Callable[[int, np.random.Generator], tuple[Array, Array]]
    conditional_cdf: Callable[[Array, Array], Array]

    def sample(self, n: int, seed: int | np.random.Generator | None = None) -> tuple[Array, Array]:
        """Draw ``n`` events with :func:`numpy.random.default_rng` of ``seed``."""
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
            msg = f"n must be a positive integer number of events, got {n!r}"
            raise ValueError(msg)
        return self.draw(int(n), np.random.default_rng(seed))

    def exact(self, x: Any, y: Any) -> Array:
        """The exact conditional CDF at the events ``(x, y)``."""
        x_arr, y_arr = np.broadcast_arrays(np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64))
        return np.asarray(self.conditional_cdf(x_arr, y_arr), dtype=np.float64)


# ------------------------------------------------------------- bivariate normal
RHO = 0.6


def _normal_draw(n: int, rng: np.random.Generator) -> tuple[Array, Array]:
    x = rng.standard_normal(n)
    return x, RHO * x + np.sqrt(1.0 - RHO * RHO) * rng.standard_normal(n)


def _normal_cdf(x: Array, y: Array) -> Array:
    return np.asarray(special.ndtr((y - RHO * x) / np.sqrt(1.0 - RHO * RHO)))


# --------------------------------------------------------------- heteroscedastic
def _hetero_draw(n: int, rng: np.random.Generator) -> tuple[Array, Array]:
    x = rng.standard_normal(n)
    return x, x + np.exp(0.5 * x) * rng.standard_normal(n)


def _hetero_cdf(x: Array, y: Array) -> Array:
    return np.asarray(special.ndtr((y - x) * np.exp(-0.5 * x)))


# ------------------------------------------------------------------------ skewed
def _skewed_draw(n: int, rng: np.random.Generator) -> tuple[Array, Array]:
    x = rng.gamma(2.0, 1.0, n)
    return x, rng.gamma(1.0 + x, 1.0)


def _skewed_cdf(x: Array, y: Array) -> Array:
    return np.asarray(special.gammainc(1.0 + x, np.maximum(y, 0.0)))


# -------------------------------------------------------------------- classifier
LOW_PEAK = (1.0, 6.0)
HIGH_PEAK = (5.0, 2.0)


def _low_fraction(x: Array) -> Array:
    return np.asarray(special.expit(1.0 + x))


def _classifier_draw(n: int, rng: np.random.Generator) -> tuple[Array, Array]:
    x = rng.standard_normal(n)
    low = rng.uniform(size=n) < _low_fraction(x)
    y = np.where(low, rng.beta(*LOW_PEAK, n), rng.beta(*HIGH_PEAK, n))
    return x, y


def _classifier_cdf(x: Array, y: Array) -> Array:
    y = np.clip(y, 0.0, 1.0)
    p = _low_fraction(x)
    return np.asarray(p * special.betainc(*LOW_PEAK, y) + (1.0 - p) * special.betainc(*HIGH_PEAK, y))


#: the closed-form cases by name
CASES: dict[str, ClosedForm] = {
    case.name: case
    for case in (
        ClosedForm(
            "bivariate_normal",
            f"standard bivariate normal, correlation {RHO}",
            _normal_draw,
            _normal_cdf,
        ),
        ClosedForm(
            "heteroscedastic",
            "x ~ N(0, 1), y = x + exp(x/2) eps, eps ~ N(0, 1)",
            _hetero_draw,
            _hetero_cdf,
        ),
        ClosedForm(
            "skewed",
            "x ~ Gamma(2, 1), y | x ~ Gamma(1 + x, 1)",
            _skewed_draw,
            _skewed_cdf,
        ),
        ClosedForm(
            "classifier",
            "x ~ N(0, 1), y | x ~ p(x) Beta(1, 6) + (1 - p(x)) Beta(5, 2), p(x) = expit(1 + x)",
            _classifier_draw,
            _classifier_cdf,
        ),
    )
}


def closed_form(name: str) -> ClosedForm:
    """The case called ``name`` (see :data:`CASES`), with a clear error if unknown."""
    try:
        return CASES[name]
    except KeyError:
        msg = f"unknown closed-form case {name!r}; known: {sorted(CASES)}"
        raise KeyError(msg) from None


def rms_to_exact(
    transform: ConditionalCDFTransform,
    case: ClosedForm | str,
    x_test: Array,
    y_test: Array,
) -> float:
    """Root mean square of a fitted ``transform`` minus the exact ``gamma`` on testing events."""
    form = closed_form(case) if isinstance(case, str) else case
    gamma = np.asarray(transform.transform(x_test, y_test), dtype=np.float64)
    return float(np.sqrt(np.mean((gamma - form.exact(x_test, y_test)) ** 2)))

