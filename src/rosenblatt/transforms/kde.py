"""Kernel Density Estimation (KDE) of the conditional CDF."""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Literal

import numpy as np

from rosenblatt._validation import as_sigma_r, check_int
from rosenblatt.transforms._base import ConditionalCDFTransform, Kinks
from rosenblatt.transforms._cell_resampling import nonnegative_weights
from rosenblatt.transforms._gauss_transform import ConditionalGaussTransform, direct_conditional_cdf
from rosenblatt.transforms._irgi_depth import check_levels, inner_levels, read_fit_options
from rosenblatt.transforms._kde_vector import product_kernel_cdf
from rosenblatt.typing import FloatArray

if TYPE_CHECKING:
    from rosenblatt.transforms.selection import Selection

__all__ = ["KDE", "KernelStaircase", "absolute_sigma"]

Method = Literal["fast", "direct"]

#: elements of the largest temporary array of :meth:`KernelStaircase.cdf`
BLOCK_ELEMENTS = 2_000_000
#: most nodes of the binned estimate that chooses the widths of several observables
VECTOR_SELECTION_NODES = 200_000


def absolute_sigma(x: FloatArray, weight: FloatArray | None = None) -> float:
    """The typical length scale ``sigma_a`` of a sample along ``x``.

    ``sigma_a**2 = 2 / (N (N - 1)) * sum_{i<j} (x_i - x_j)**2``, which equals
    twice the unbiased variance. With weights the pair sum is weighted by
    ``w_i w_j`` and normalised by ``sum_{i != j} w_i w_j = W**2 - sum w**2``,
    which reduces to the formula above for unit weights and does not depend on
    the scale of the weights.
    """
    scale = float(np.max(np.abs(x))) if len(x) else 0.0
    if scale > 1e100:
        # squares of such values overflow: compute in units of the largest
        return scale * absolute_sigma(x / scale, weight)
    if weight is None:
        return float(math.sqrt(2.0 * np.var(x, ddof=1))) if len(x) > 1 else 0.0
    total = float(weight.sum())
    mean = float(np.dot(weight, x)) / total
    spread = float(np.dot(weight, (x - mean) ** 2))
    pairs = total * total - float(np.dot(weight, weight))
    if pairs <= 0:
        return 0.0
    return math.sqrt(max(2.0 * total * spread / pairs, 0.0))


class KDE(ConditionalCDFTransform):
    """Gaussian-kernel estimate of ``gamma(x, y) = P(Y <= y | X = x)``.

    ``gamma(x, y) = sum_i w_i H(y - y_i) K(x - x_i) / sum_i w_i K(x - x_i)`` with
    the Heaviside step ``H`` (``H(0) = 1``) and a Gaussian ``K`` of width
    ``sigma_r * sigma_a`` (see :func:`absolute_sigma`).

    Parameters
    ----------
    sigma_r
        Kernel width relative to ``sigma_a`` (the paper's free parameter), or
        ``"auto"``: chosen from the defining sample by ``folds``-fold
        cross-validation of the integrated Brier score of the conditional CDF
        (:func:`~rosenblatt.transforms.selection.select_bandwidth`, scoring
        this estimate binned on a grid of a quarter kernel width).
    method
        ``"fast"`` (default): an exact expansion of the kernel sums, ``O(N log N)``
        to prepare and ``O(log N)`` per event, equal to the direct sum to far
        better than 1e-9, and monotone in ``y`` up to rounding (1e-15); a width
        so narrow that the expansion's boxes would far outnumber the events is
        summed directly.
        ``"direct"``: the ``O(M N)`` sum of the formula, exactly monotone.
    folds, seed
        Cross-validation folds and the seed of their random assignment
        (``sigma_r="auto"`` only); the choice is deterministic given both.
    cut_levels
        The levels of ``gamma`` that the transformed score will be cut at
        (an ABCD analysis's ``y0``), or ``None``. With ``sigma_r="auto"`` on
        one observable, a width whose held-out pass fraction at a level
        depends on ``x`` is not chosen while another passes; where none
        passes, :meth:`coarse_cut_note` says so.

    Attributes
    ----------
    sigma_r_ : float
        The kernel width used, relative to ``sigma_a_``.
    bandwidth_ : float
        The kernel width used, in units of ``x``.
    selection_ : Selection or None
        With ``sigma_r="auto"``: the widths tried and their scores.

    Several protected observables (``x`` of shape ``(n, k)``, ``k <= 3``, or a
    list of ``k`` arrays) use a product Gaussian kernel of width
    ``sigma_r * sigma_a[d]`` along observable ``d`` (``sigma_a`` per
    observable), summed directly over the defining events for every event
    (exact, ``O(M N k)``, numba threads when installed; ``method`` does not
    apply). With ``sigma_r="auto"`` the common ``sigma_r`` is cross-validated
    on the binned estimate, then each observable's width is refined in turn
    (:mod:`rosenblatt.transforms._vector_selection`); ``axis_sigma_r_`` holds
    the relative width used along each observable.

    Notes
    -----
    ``gamma`` depends on ``y`` only through the order of the defining scores,
    so it is unchanged by any strictly increasing map of ``y``. ``x`` outside
    the defining sample's range is evaluated at the nearest end of the range;
    ``y`` below (above) every defining score gives 0 (1).

    Negative weights (NLO simulation) would make the kernel sums fall in
    ``y`` and, where they dominate near ``x``, leave the kernel-weighted sum
    of the weights not positive. :meth:`fit` first removes them by cell
    resampling (:mod:`rosenblatt.transforms._cell_resampling`): each negative
    weight is pooled with its nearest neighbours in the ranks of ``x`` and
    ``y`` until the pool's weight is not negative, and the pool's weight is
    shared among its events in proportion to their absolute weights. Every
    weight is then non-negative, ``gamma`` is a CDF in ``y`` at every ``x``,
    and the width is chosen and the estimate evaluated as for any weights;
    ``weight_`` holds the weights used. Without a negative weight the fit is
    unchanged.
    """

    kind: ClassVar[str] = "kde"
    max_x_dims: ClassVar[int] = 3
    negative_weights: ClassVar[bool] = True
    #: a replica keeps the nominal's width, chosen once
    replica_parameters: ClassVar[Mapping[str, Any]] = {"cut_levels": None}

    x_: FloatArray
    y_: FloatArray
    weight_: FloatArray | None
    sigma_a_: Any
    sigma_r_: float
    bandwidth_: Any
    selection_: Selection | None

    def __init__(
        self,
        sigma_r: float | Literal["auto"] = 0.05,
        method: Method = "fast",
        *,
        folds: int = 10,
        seed: int = 0,
        cut_levels: Sequence[float] | None = None,
    ) -> None:
        self.sigma_r = sigma_r
        self.method = method
        self.folds = folds
        self.seed = seed
        self.cut_levels = cut_levels

    def __repr__(self) -> str:
        method = "" if self.method == "fast" else f", method={self.method!r}"
        levels = "" if self.cut_levels is None else f", cut_levels={self.cut_levels!r}"
        return f"KDE(sigma_r={self.sigma_r!r}{method}{levels})"

    def coarse_cut_note(self) -> str | None:
        """Why the chosen width may not close at a level of ``cut_levels``, or ``None``.

        A note where no width tried by ``sigma_r="auto"`` passes the test of
        the held-out pass fraction at the levels (:meth:`Selection.cut_note`).
        """
        self._check_fitted()
        note = None if self.selection_ is None else self.selection_.cut_note()
        return None if note is None else f"KDE sigma_r {self.sigma_r_:.3g}: {note}"

    def _checked_params(self) -> tuple[float | None, Method]:
        """``(sigma_r, method)``; ``sigma_r`` is ``None`` for ``"auto"``."""
        chosen = as_sigma_r(self.sigma_r)
        if self.method not in ("fast", "direct"):
            msg = f"method must be 'fast' or 'direct', got {self.method!r}"
            raise ValueError(msg)
        return chosen, self.method

    def _fit(self, x: FloatArray, y: FloatArray, w: FloatArray | None) -> None:
        sigma_r, _ = self._checked_params()
        inner_levels(self.cut_levels)
        if len(x) < 2:
            msg = f"KDE needs at least two defining events, got {len(x)}"
            raise ValueError(msg)
        if w is not None:
            w = nonnegative_weights(x, y, w)
        sigma_a = absolute_sigma(x, w)
        if not sigma_a > 0:
            msg = f"x is constant ({len(x)} events all equal {x[0]:g}): sigma_a is zero"
            raise ValueError(msg)
        selection = None
        if sigma_r is None:
            from rosenblatt.transforms.selection import check_folds, check_seed, select_bandwidth

            selection = select_bandwidth(
                x,
                y,
                w,
                degree=0,
                sigma_a=sigma_a,
                folds=check_folds(self.folds, len(x)),
                seed=check_seed(self.seed),
                cut_levels=inner_levels(self.cut_levels),
            )
            sigma_r = selection.chosen
        self._set_state(x, y, w, sigma_r, sigma_a)
        self.selection_ = selection

    def _fit_vector(self, x: FloatArray, y: FloatArray, w: FloatArray | None) -> None:
        sigma_r, _ = self._checked_params()
        if len(y) < 2:
            msg = f"KDE needs at least two defining events, got {len(y)}"
            raise ValueError(msg)
        if w is not None:
            w = nonnegative_weights(x, y, w)
        sigma_a = np.array([absolute_sigma(x[:, d], w) for d in range(x.shape[1])])
        constant = np.flatnonzero(~(sigma_a > 0))
        if len(constant):
            msg = f"x[:, {int(constant[0])}] is constant: sigma_a is zero along it"
            raise ValueError(msg)
        selection = None
        if sigma_r is None:
            from rosenblatt.transforms._vector_selection import select_vector_bandwidth
            from rosenblatt.transforms.selection import check_folds, check_seed

            relative, selection = select_vector_bandwidth(
                x,
                y,
                w,
                degree=0,
                sigma_a=sigma_a,
                folds=check_folds(self.folds, len(y)),
                seed=check_seed(self.seed),
                spacing=0.5,
                max_nodes=VECTOR_SELECTION_NODES,
                adaptive=True,
            )
            sigma_r = selection.chosen
        else:
            relative = np.full(x.shape[1], sigma_r)
        self._set_vector_state(x, y, w, sigma_r, relative, sigma_a)
        self.selection_ = selection

    def _set_vector_state(
        self,
        x: FloatArray,
        y: FloatArray,
        w: FloatArray | None,
        sigma_r: float,
        relative: FloatArray,
        sigma_a: FloatArray,
    ) -> None:
        """Store the defining sample and the widths of a fit on several observables."""
        self.x_, self.y_, self.weight_ = x.copy(), y.copy(), None if w is None else w.copy()
        self.sigma_r_, self.axis_sigma_r_, self.sigma_a_ = float(sigma_r), relative, sigma_a
        self.bandwidth_ = relative * sigma_a
        lo, hi = x.min(axis=0), x.max(axis=0)
        self.domain_ = (  # type: ignore[assignment]
            (tuple(map(float, lo)), tuple(map(float, hi))),
            (float(y.min()), float(y.max())),
        )
        self._x_origin_vector = 0.5 * lo + 0.5 * hi

    def _transform_vector(self, x: FloatArray, y: FloatArray) -> FloatArray:
        if len(y) == 0:
            return np.empty(0)
        weights = np.ones(len(self.y_)) if self.weight_ is None else self.weight_
        carrying = weights != 0
        scale = self.bandwidth_
        u = np.ascontiguousarray((self.x_[carrying] - self._x_origin_vector) / scale)
        uq = np.ascontiguousarray((x - self._x_origin_vector) / scale)
        gamma = product_kernel_cdf(u, self.y_[carrying], weights[carrying], uq, y)
        return self._checked_gamma(gamma)

    def _checked_gamma(self, gamma: FloatArray) -> FloatArray:
        """``gamma`` clipped to [0, 1]; an error where negative weights make it undefined."""
        bad = ~np.isfinite(gamma) | (gamma < -1e-9) | (gamma > 1 + 1e-9)
        if bad.any():
            msg = (
                f"the kernel-weighted sum of the defining weights is not positive, or gives a "
                f"value outside [0, 1], at {int(bad.sum())} event(s): negative weights dominate "
                "there; use a wider sigma_r"
            )
            raise ValueError(msg)
        return np.clip(gamma, 0.0, 1.0)

    def _set_state(
        self,
        x: FloatArray,
        y: FloatArray,
        w: FloatArray | None,
        sigma_r: float,
        sigma_a: float,
    ) -> None:
        self.x_, self.y_, self.weight_ = x.copy(), y.copy(), None if w is None else w.copy()
        self.sigma_a_ = sigma_a
        self.sigma_r_ = sigma_r
        self.bandwidth_ = sigma_r * sigma_a
        if not 1e-150 < sigma_r < 1e150:
            msg = (
                f"sigma_r = {sigma_r:g}: a kernel width this far from the spread of x cannot be "
                "evaluated in double precision; choose sigma_r in (1e-150, 1e150)"
            )
            raise ValueError(msg)
        if not np.isfinite(sigma_a):
            msg = (
                f"x spans [{x.min():g}, {x.max():g}], too wide for its spread sigma_a to be "
                "represented in double precision; rescale x"
            )
            raise ValueError(msg)
        self.domain_ = ((float(x.min()), float(x.max())), (float(y.min()), float(y.max())))
        # the kernel sums depend on x only through (x - x_i) / bandwidth: they are
        # evaluated in units of sigma_a about the middle of the domain, where no
        # square of x overflows whatever its scale
        (x_lo, x_hi), _ = self.domain_
        self._x_origin = 0.5 * x_lo + 0.5 * x_hi
        self._x_standard = self._standardised(self.x_)
        self._engine: ConditionalGaussTransform | None = None

    def _standardised(self, x: FloatArray) -> FloatArray:
        standardised: FloatArray = (x - self._x_origin) / self.sigma_a_
        return standardised

    def _weights(self) -> FloatArray:
        return np.ones_like(self.x_) if self.weight_ is None else self.weight_

    def _transform(self, x: FloatArray, y: FloatArray) -> FloatArray:
        _, method = self._checked_params()
        (x_lo, x_hi), _ = self.domain_
        x = self._standardised(np.clip(x, x_lo, x_hi))
        if len(x) == 0:
            return np.empty(0)
        if method == "direct" or not ConditionalGaussTransform.suits(
            self._x_standard, self.sigma_r_
        ):
            gamma = self._direct(x, y)
        else:
            if self._engine is None:
                self._engine = ConditionalGaussTransform(
                    self._x_standard, self.y_, self._weights(), self.sigma_r_
                )
            gamma = self._engine(x, y)
            # far from every weighted event the expansion's sums underflow: the direct
            # formula, scaled by the nearest weighted event, is exact there
            far = ~np.isfinite(gamma) | (gamma < -1e-9) | (gamma > 1 + 1e-9)
            if far.any():
                gamma[far] = self._direct(x[far], y[far])
        # with negative weights the kernel sums can vanish or leave [0, 1]
        return self._checked_gamma(gamma)

    def _direct(self, x: FloatArray, y: FloatArray) -> FloatArray:
        """The paper's formula summed directly over the events that carry weight."""
        weights = self._weights()
        carrying = weights != 0
        return direct_conditional_cdf(
            self._x_standard[carrying], self.y_[carrying], weights[carrying], self.sigma_r_, x, y
        )

    def describe(self) -> str:
        """The kernel width, relative and in units of ``x``."""
        self._check_fitted()
        if self.x_dims > 1:
            widths = ", ".join(f"{h:.6g}" for h in self.bandwidth_)
            return (
                f"KDE with a product Gaussian kernel, sigma_r = {self.sigma_r_:g} (widths {widths})"
            )
        return f"KDE with sigma_r = {self.sigma_r_:g} (kernel width {self.bandwidth_:.6g})"

    def fitted_params(self) -> dict[str, Any]:
        """The kernel width relative to ``sigma_a`` and in units of ``x``."""
        self._check_fitted()
        bandwidth = self.bandwidth_ if self.x_dims == 1 else self.bandwidth_.tolist()
        return {"sigma_r": float(self.sigma_r_), "bandwidth": bandwidth}

    def kinks(self) -> Kinks:
        """``gamma`` jumps at the defining scores and changes fastest near the defining ``x``."""
        self._check_scalar()
        return Kinks(self.x_, self.y_, self.bandwidth_)

    def staircase(self) -> KernelStaircase:
        """``gamma`` as a staircase in ``y``: its steps, and its value on them at any ``x``."""
        self._check_scalar()
        return KernelStaircase(self)

    def _check_scalar(self) -> None:
        self._check_fitted()
        if self.x_dims > 1:
            msg = f"this KDE is fitted on {self.x_dims} observables: it has no staircase in a single x"
            raise TypeError(msg)

    def _with_vector_state(self, state: dict[str, Any], sigma_r: float) -> None:
        """Set a fit on several observables from its saved state, checking it."""
        from rosenblatt._schema import SchemaError, check_array
        from rosenblatt.transforms._observables import MAX_OBSERVABLES

        k, n = state["x_dims"], len(state["x"])
        check_int(k, "x_dims", low=2, high=MAX_OBSERVABLES, error=SchemaError)
        x = check_array(state["x"], "x", (n, k))
        y = check_array(state["y"], "y", (n,))
        w = None if state["weight"] is None else check_array(state["weight"], "weight", (n,))
        if w is not None and not w.sum() > 0:
            msg = "weight must have a positive sum"
            raise SchemaError(msg)
        relative = check_array(state["axis_sigma_r"], "axis_sigma_r", (k,))
        sigma_a = np.array([absolute_sigma(x[:, d], w) for d in range(k)])
        if not np.array_equal(sigma_a, check_array(state["sigma_a"], "sigma_a", (k,))):
            msg = "sigma_a does not match the defining sample"
            raise SchemaError(msg)
        if not (np.all(relative > 0) and np.all(sigma_a > 0)):
            msg = "axis_sigma_r and sigma_a must be positive"
            raise SchemaError(msg)
        self._set_vector_state(x, y, w, sigma_r, relative, sigma_a)
        self.x_dims_ = k
        self.n_events_ = int(state["n_events"])
        self.sum_weight_ = float(state["sum_weight"])

    def get_state(self) -> dict[str, Any]:
        """Hyper-parameters and the defining sample as JSON-compatible data."""
        self._check_fitted()
        state: dict[str, Any] = {
            "params": {"sigma_r": float(self.sigma_r_), "method": self.method},
            "sigma_a": self.sigma_a_ if self.x_dims == 1 else self.sigma_a_.tolist(),
            "x": self.x_.tolist(),
            "y": self.y_.tolist(),
            "weight": None if self.weight_ is None else self.weight_.tolist(),
            "n_events": int(self.n_events_),
            "sum_weight": float(self.sum_weight_),
        }
        if self.x_dims > 1:
            state["x_dims"] = self.x_dims
            state["axis_sigma_r"] = self.axis_sigma_r_.tolist()
        if self.selection_ is not None:
            # the chosen width stays in params, so that any reader evaluates the same KDE
            state["selection"] = self.selection_.to_dict()
            state["params"]["folds"] = int(self.folds)
            state["params"]["seed"] = int(self.seed)
        if self.cut_levels is not None:
            state["params"]["cut_levels"] = list(check_levels(self.cut_levels))
        return state

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> KDE:
        """Rebuild a fitted KDE from :meth:`get_state` output, checking it."""
        from rosenblatt._schema import SchemaError, check_array
        from rosenblatt.transforms.selection import Selection

        params = state["params"]
        obj = cls(sigma_r=params["sigma_r"], method=params["method"])
        obj.cut_levels = read_fit_options(params)[0]
        try:
            sigma_r, _ = obj._checked_params()
            if sigma_r is None:
                msg = "a saved KDE must hold the numeric sigma_r it evaluates with"
                raise ValueError(msg)
        except (TypeError, ValueError) as err:
            raise SchemaError(str(err)) from err
        selection = None
        if state.get("selection") is not None:
            selection = Selection.from_dict(state["selection"])
            if selection.chosen != sigma_r:
                msg = f"sigma_r {sigma_r!r} is not the selection's choice {selection.chosen!r}"
                raise SchemaError(msg)
            obj.sigma_r = "auto"
            obj.folds, obj.seed = params["folds"], params["seed"]
        n = len(state["x"])
        if n < 2:
            msg = "a KDE state needs at least two defining events"
            raise SchemaError(msg)
        if state.get("x_dims", 1) != 1:
            obj._with_vector_state(state, sigma_r)
            obj.selection_ = selection
            return obj
        x = check_array(state["x"], "x", (n,))
        y = check_array(state["y"], "y", (n,))
        w = None if state["weight"] is None else check_array(state["weight"], "weight", (n,))
        if w is not None and not w.sum() > 0:
            msg = "weight must have a positive sum"
            raise SchemaError(msg)
        sigma_a = absolute_sigma(x, w)
        if sigma_a != state["sigma_a"]:
            msg = f"sigma_a {state['sigma_a']!r} does not match the defining sample ({sigma_a!r})"
            raise SchemaError(msg)
        obj._set_state(x, y, w, sigma_r, sigma_a)
        obj.selection_ = selection
        obj.n_events_ = n
        obj.sum_weight_ = float(n if w is None else w.sum())
        return obj


class KernelStaircase:
    """A KDE's conditional CDF at any ``x``, on every distinct defining score.

    Attributes
    ----------
    levels : numpy.ndarray
        The distinct defining scores, increasing: ``gamma`` steps there and
        is flat in between.
    x_scale : float
        The kernel width: the scale in ``x`` over which ``gamma`` changes.
    block : int
        Queries per block of :meth:`cdf` held in memory at once.
    """

    def __init__(self, transform: KDE) -> None:
        order = np.argsort(transform.y_, kind="stable")
        scores = transform.y_[order]
        self.x = transform.x_[order]
        self.w = np.ones(len(scores)) if transform.weight_ is None else transform.weight_[order]
        self.last = np.flatnonzero(np.append(scores[1:] != scores[:-1], True))
        self.levels = scores[self.last]
        self.x_scale = transform.bandwidth_
        self.scale = 1.0 / (2.0 * transform.bandwidth_**2)
        self.block = max(1, BLOCK_ELEMENTS // len(scores))

    def cdf(self, xq: FloatArray) -> FloatArray:
        """``gamma(xq[i], levels[j])`` as an array ``(len(xq), len(levels))``.

        Each query's kernel is scaled by that of its nearest defining event,
        which leaves the ratio unchanged and keeps it finite far from the sample.
        """
        out = np.empty((len(xq), len(self.levels)))
        for start in range(0, len(xq), self.block):
            exponent = (xq[start : start + self.block, None] - self.x[None, :]) ** 2 * self.scale
            exponent -= exponent.min(axis=1, keepdims=True)
            cumulative = np.cumsum(np.exp(-exponent) * self.w, axis=1)
            total = cumulative[:, -1:]
            if not np.all(total > 0):
                msg = (
                    "the kernel-weighted sum of the defining weights is not positive at "
                    f"{int((~(total > 0)).sum())} x node(s): negative weights dominate there"
                )
                raise ValueError(msg)
            out[start : start + self.block] = cumulative[:, self.last] / total
        return out

    def blocks(self, xq: FloatArray) -> Iterator[tuple[int, FloatArray]]:
        """:meth:`cdf` of consecutive blocks of ``xq``, with the first index of each."""
        for start in range(0, len(xq), self.block):
            yield start, self.cdf(xq[start : start + self.block])
