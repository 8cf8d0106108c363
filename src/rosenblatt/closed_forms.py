"""Background populations whose conditional CDF is known in closed form.

Each case draws ``(x, y)`` events and gives the exact ``gamma(x, y) = P(Y <= y | X = x)``,
so the accuracy of an estimated transform is measured, not guessed:
:func:`rms_to_exact` is the root mean square of the estimated minus the exact
``gamma`` over independent testing events, and :func:`accuracy_rows` tabulates
it for several estimators, cases, sample sizes and independent draws.

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

Two cases protect a vector ``x`` of shape ``(n, k)`` (:data:`VECTOR_CASES`,
also found by :func:`closed_form`):

- ``"two_observables"``: ``(x1, x2)`` standard bivariate normal with
  correlation 0.5, ``y | x ~ N(0.6 x1 + 0.4 x2, (0.6 exp(0.15 x2))**2)``: the
  mean follows both observables and the width only the second.
- ``"three_observables"``: ``(x1, x2, x3)`` standard trivariate normal with
  pairwise correlation 0.5, ``y | x ~ N(0.5 x1 + 0.3 x2 - 0.4 x3,
  (0.6 exp(0.15 x2 + 0.1 x3))**2)``.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from scipy import special

from rosenblatt._validation import check_int
from rosenblatt.typing import ArrayLike, FloatArray

if TYPE_CHECKING:
    from rosenblatt.transforms._base import ConditionalCDFTransform

__all__ = [
    "CASES",
    "VECTOR_CASES",
    "ClosedForm",
    "VectorClosedForm",
    "accuracy_rows",
    "chosen_parameter",
    "closed_form",
    "rms_to_exact",
    "summarize",
]


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
    draw: Callable[[int, np.random.Generator], tuple[FloatArray, FloatArray]]
    conditional_cdf: Callable[[FloatArray, FloatArray], FloatArray]

    def sample(
        self, n: int, seed: int | np.random.Generator | None = None
    ) -> tuple[FloatArray, FloatArray]:
        """Draw ``n`` events with :func:`numpy.random.default_rng` of ``seed``."""
        n = check_int(n, "n", low=1, what="a positive integer number of events")
        return self.draw(n, np.random.default_rng(seed))

    def exact(self, x: ArrayLike, y: ArrayLike) -> FloatArray:
        """The exact conditional CDF at the events ``(x, y)``."""
        x_arr, y_arr = np.broadcast_arrays(
            np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
        )
        return np.asarray(self.conditional_cdf(x_arr, y_arr), dtype=np.float64)


# ------------------------------------------------------------- bivariate normal
RHO = 0.6


def _normal_draw(n: int, rng: np.random.Generator) -> tuple[FloatArray, FloatArray]:
    x = rng.standard_normal(n)
    return x, RHO * x + np.sqrt(1.0 - RHO * RHO) * rng.standard_normal(n)


def _normal_cdf(x: FloatArray, y: FloatArray) -> FloatArray:
    return np.asarray(special.ndtr((y - RHO * x) / np.sqrt(1.0 - RHO * RHO)))


# --------------------------------------------------------------- heteroscedastic
def _hetero_draw(n: int, rng: np.random.Generator) -> tuple[FloatArray, FloatArray]:
    x = rng.standard_normal(n)
    return x, x + np.exp(0.5 * x) * rng.standard_normal(n)


def _hetero_cdf(x: FloatArray, y: FloatArray) -> FloatArray:
    return np.asarray(special.ndtr((y - x) * np.exp(-0.5 * x)))


# ------------------------------------------------------------------------ skewed
def _skewed_draw(n: int, rng: np.random.Generator) -> tuple[FloatArray, FloatArray]:
    x = rng.gamma(2.0, 1.0, n)
    return x, rng.gamma(1.0 + x, 1.0)


def _skewed_cdf(x: FloatArray, y: FloatArray) -> FloatArray:
    return np.asarray(special.gammainc(1.0 + x, np.maximum(y, 0.0)))


# -------------------------------------------------------------------- classifier
LOW_PEAK = (1.0, 6.0)
HIGH_PEAK = (5.0, 2.0)


def _low_fraction(x: FloatArray) -> FloatArray:
    return np.asarray(special.expit(1.0 + x))


def _classifier_draw(n: int, rng: np.random.Generator) -> tuple[FloatArray, FloatArray]:
    x = rng.standard_normal(n)
    low = rng.uniform(size=n) < _low_fraction(x)
    y = np.where(low, rng.beta(*LOW_PEAK, n), rng.beta(*HIGH_PEAK, n))
    return x, y


def _classifier_cdf(x: FloatArray, y: FloatArray) -> FloatArray:
    y = np.clip(y, 0.0, 1.0)
    p = _low_fraction(x)
    return np.asarray(
        p * special.betainc(*LOW_PEAK, y) + (1.0 - p) * special.betainc(*HIGH_PEAK, y)
    )


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


# ---------------------------------------------------------- vector observables
@dataclasses.dataclass(frozen=True)
class VectorClosedForm(ClosedForm):
    """A population whose protected observable is a vector ``x`` of shape ``(n, k)``.

    ``y | x ~ N(sum_d slope_d x_d, (width exp(sum_d log_width_d x_d))**2)`` with
    ``x`` a standard ``k``-variate normal of pairwise correlation ``correlation``.

    Attributes
    ----------
    slopes, log_widths
        The coefficients of the mean and of the logarithm of the width of ``y``.
    width
        The width of ``y`` at ``x = 0``.
    correlation
        The correlation of every pair of observables.
    """

    slopes: tuple[float, ...] = ()
    log_widths: tuple[float, ...] = ()
    width: float = 1.0
    correlation: float = 0.0

    @property
    def dims(self) -> int:
        """The number ``k`` of protected observables."""
        return len(self.slopes)

    def exact(self, x: ArrayLike, y: ArrayLike) -> FloatArray:
        """The exact ``P(Y <= y | X = x)`` for ``x`` of shape ``(n, k)`` (or ``(k,)``) and ``y``."""
        x_arr = np.asarray(x, dtype=np.float64)
        if x_arr.ndim == 0 or x_arr.shape[-1] != self.dims:
            msg = f"x must have {self.dims} observables in its last axis, got shape {x_arr.shape}"
            raise ValueError(msg)
        y_arr = np.asarray(y, dtype=np.float64)
        return np.asarray(self.conditional_cdf(x_arr, y_arr), dtype=np.float64)


def _vector_form(
    name: str,
    description: str,
    slopes: tuple[float, ...],
    log_widths: tuple[float, ...],
    width: float,
    correlation: float,
) -> VectorClosedForm:
    k = len(slopes)
    covariance = np.full((k, k), correlation) + (1.0 - correlation) * np.eye(k)
    factor = np.linalg.cholesky(covariance)
    mean_coefficients, width_coefficients = np.array(slopes), np.array(log_widths)

    def cdf(x: FloatArray, y: FloatArray) -> FloatArray:
        mean = x @ mean_coefficients
        sd = width * np.exp(x @ width_coefficients)
        return np.asarray(special.ndtr((y - mean) / sd))

    def draw(n: int, rng: np.random.Generator) -> tuple[FloatArray, FloatArray]:
        x = rng.standard_normal((n, k)) @ factor.T
        y = x @ mean_coefficients + width * np.exp(x @ width_coefficients) * rng.standard_normal(n)
        return x, y

    return VectorClosedForm(name, description, draw, cdf, slopes, log_widths, width, correlation)


#: the closed-form cases with a vector protected observable, by name
VECTOR_CASES: dict[str, VectorClosedForm] = {
    case.name: case
    for case in (
        _vector_form(
            "two_observables",
            "(x1, x2) bivariate normal, correlation 0.5; y | x ~ N(0.6 x1 + 0.4 x2, (0.6 exp(0.15 x2))^2)",
            (0.6, 0.4),
            (0.0, 0.15),
            0.6,
            0.5,
        ),
        _vector_form(
            "three_observables",
            "(x1, x2, x3) trivariate normal, pairwise correlation 0.5; "
            "y | x ~ N(0.5 x1 + 0.3 x2 - 0.4 x3, (0.6 exp(0.15 x2 + 0.1 x3))^2)",
            (0.5, 0.3, -0.4),
            (0.0, 0.15, 0.1),
            0.6,
            0.5,
        ),
    )
}


def closed_form(name: str) -> ClosedForm:
    """The case called ``name`` (see :data:`CASES` and :data:`VECTOR_CASES`), with a clear error if unknown."""
    if name in VECTOR_CASES:
        return VECTOR_CASES[name]
    try:
        return CASES[name]
    except KeyError:
        msg = f"unknown closed-form case {name!r}; known: {sorted(CASES) + sorted(VECTOR_CASES)}"
        raise KeyError(msg) from None


def rms_to_exact(
    transform: ConditionalCDFTransform,
    case: ClosedForm | str,
    x_test: FloatArray,
    y_test: FloatArray,
) -> float:
    """Root mean square of a fitted ``transform`` minus the exact ``gamma`` on testing events."""
    form = closed_form(case) if isinstance(case, str) else case
    gamma = np.asarray(transform.transform(x_test, y_test), dtype=np.float64)
    return float(np.sqrt(np.mean((gamma - form.exact(x_test, y_test)) ** 2)))


def chosen_parameter(transform: ConditionalCDFTransform) -> float | None:
    """The free parameter a fitted transform used: ``depth_`` or ``sigma_r_`` (``None`` if neither)."""
    for name in ("depth_", "sigma_r_"):
        value = getattr(transform, name, None)
        if value is not None:
            return float(value)
    return None


def accuracy_rows(
    estimators: Mapping[str, Callable[[], ConditionalCDFTransform]],
    cases: Sequence[str] = tuple(CASES),
    sizes: Sequence[int] = (10_000, 100_000),
    *,
    draws: int = 3,
    n_testing: int = 20_000,
    seed: int = 0,
    progress: bool = True,
) -> list[dict[str, Any]]:
    """RMS of each estimator against the exact ``gamma``, per case, defining-sample size and draw.

    Draw ``k`` of a case and size uses the defining sample
    ``case.sample(n, [seed, n, k, 0])`` and the testing sample
    ``case.sample(n_testing, [seed, n, k, 1])``: every estimator sees the same
    events, and the draws are independent.

    Parameters
    ----------
    estimators
        Name to a function returning a new, unfitted transform.
    cases
        Names of :data:`CASES`.
    sizes
        Defining-sample sizes.
    draws, n_testing, seed
        Independent draws per case and size, testing events per draw, seed.
    progress
        Show a progress bar (where tqdm is installed).

    Returns
    -------
    list of dict
        One row per case, size, draw and estimator: ``case``, ``n_defining``,
        ``draw``, ``estimator``, ``rms``, ``seconds`` (fit on the defining
        sample plus transform of the testing sample), ``parameter`` (the depth
        or ``sigma_r`` used) and ``selection`` (the score curve of an automatic
        choice, or ``None``).
    """
    from rosenblatt._extras import progress_bar

    rows = []
    jobs = [(case, n, k) for case in cases for n in sizes for k in range(draws)]
    for case_name, n, k in progress_bar(jobs, desc="closed-form accuracy", disable=not progress):
        case = closed_form(case_name)
        x, y = case.sample(n, np.random.default_rng([seed, n, k, 0]))
        x_test, y_test = case.sample(n_testing, np.random.default_rng([seed, n, k, 1]))
        exact = case.exact(x_test, y_test)
        for name, make in estimators.items():
            start = time.perf_counter()
            transform = make().fit(x, y)
            gamma = np.asarray(transform.transform(x_test, y_test), dtype=np.float64)
            seconds = time.perf_counter() - start
            selection = getattr(transform, "selection_", None)
            rows.append(
                {
                    "case": case_name,
                    "n_defining": int(n),
                    "draw": k,
                    "estimator": name,
                    "rms": float(np.sqrt(np.mean((gamma - exact) ** 2))),
                    "seconds": seconds,
                    "parameter": chosen_parameter(transform),
                    "selection": None if selection is None else selection.to_dict(),
                }
            )
    return rows


def summarize(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Mean and standard deviation over draws of the rows of :func:`accuracy_rows`.

    Returns one row per case, size and estimator, with ``rms``, ``rms_std``,
    ``seconds`` (mean), ``parameters`` (per draw) and ``draws``.
    """
    groups: dict[tuple[str, int, str], list[Mapping[str, Any]]] = {}
    for row in rows:
        groups.setdefault((row["case"], row["n_defining"], row["estimator"]), []).append(row)
    out = []
    for (case, n, name), members in groups.items():
        rms = np.array([m["rms"] for m in members])
        out.append(
            {
                "case": case,
                "n_defining": n,
                "estimator": name,
                "rms": float(rms.mean()),
                "rms_std": float(rms.std(ddof=1)) if len(rms) > 1 else 0.0,
                "seconds": float(np.mean([m["seconds"] for m in members])),
                "parameters": [m["parameter"] for m in members],
                "draws": len(members),
            }
        )
    return out
