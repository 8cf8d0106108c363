"""The bump hunt: a resonance searched for on a grid of masses with the pass/fail fit.

For each mass hypothesis a signal template in bins of ``x`` (:class:`SignalTemplates`:
a Gaussian of a given resolution, :func:`gaussian_templates`, or histograms of
the signal per mass point, :func:`signal_templates`) enters the pass/fail model
of :mod:`~rosenblatt.abcd.passfail`; :func:`bump_hunt` gives per hypothesis the
local significance (the discovery statistic ``q0``, asymptotic) and the CLs
upper limit on the signal strength ``mu`` with its expected band, and
:func:`global_significance` the probability of so large a local excess
anywhere on the grid: from pseudo-experiments of the background-only fit, and
from the number of upcrossings of Gross and Vitells (arXiv:1005.1891).

Two ways to compute the same asymptotic results:

- ``method="profile"`` (the default) profiles the likelihood exactly: at
  fixed ``mu`` and transfer ratio ``R`` the background of each bin
  maximising ``Pois(f | b + mu s_f) Pois(p | R b + mu s_p)`` is the positive
  root of a quadratic, so a fit is a minimisation over ``(mu, log R)`` alone,
  with its gradient in closed form. A non-closure per bin (the workspace's
  ``shapesys``: a factor ``g`` of the passing background with a Poisson
  constraint) adds a one-dimensional search per bin for ``g``, the
  background at each ``g`` still the quadratic's root. The test statistics
  and the CLs values are those of pyhf's asymptotic calculator (``q0``;
  ``qtilde`` with its Asimov data set generated at the background-only fit to
  the data), and a scan of many masses, or of many pseudo-experiments, takes
  seconds.
- ``method="pyhf"`` calls :func:`pyhf.infer.hypotest` and
  :func:`pyhf.infer.intervals.upper_limits.upper_limit` on each mass's
  :func:`~rosenblatt.abcd.passfail.passfail_workspace` (a non-closure per bin
  allowed); a fit of a model with one free parameter per bin takes about a
  second, an upper limit minutes.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

from rosenblatt.abcd.passfail import TRANSFER_BOUNDS, _spectrum
from rosenblatt.typing import ArrayLike, BoolArray, FloatArray, Int64Array

__all__ = [
    "BumpHunt",
    "GlobalSignificance",
    "SignalTemplates",
    "bump_hunt",
    "gaussian_templates",
    "global_significance",
    "local_significance_scan",
    "signal_strength",
    "signal_templates",
    "upcrossings",
]


#: the sigma of the expected band, in the order of :attr:`BumpHunt.expected_limits`
BAND = (-2, -1, 0, 1, 2)
METHODS = ("profile", "pyhf")
#: relative tolerance of an upper limit's root search
LIMIT_RTOL = 1e-6
#: the most steps of a root search in a fit (and of the widening of its interval)
BISECTIONS = 48
#: the bounds of a non-closure factor ``g`` (those pyhf gives a ``shapesys`` parameter)
SHAPESYS_BOUNDS = (1e-10, 10.0)


@dataclasses.dataclass(frozen=True)
class SignalTemplates:
    """The signal's expected yields per bin of ``x`` at ``mu = 1``, one row per mass hypothesis.

    Attributes
    ----------
    masses
        The mass hypotheses, shape ``(m,)``, increasing.
    edges
        The bin edges of ``x``, shape ``(n + 1,)``.
    passing, failing
        The yields passing and failing the cut, shape ``(m, n)``.
    """

    masses: FloatArray
    edges: FloatArray
    passing: FloatArray
    failing: FloatArray

    def __post_init__(self) -> None:
        masses = np.asarray(self.masses, dtype=np.float64)
        edges = np.asarray(self.edges, dtype=np.float64)
        if masses.ndim != 1 or masses.size == 0 or np.any(np.diff(masses) <= 0):
            msg = "masses must be a non-empty increasing 1-d array"
            raise ValueError(msg)
        if edges.ndim != 1 or edges.size < 2 or np.any(np.diff(edges) <= 0):
            msg = "edges must be increasing, at least two"
            raise ValueError(msg)
        shape = (masses.size, edges.size - 1)
        for name in ("passing", "failing"):
            array = np.asarray(getattr(self, name), dtype=np.float64)
            if array.shape != shape:
                msg = f"{name} has shape {array.shape}, expected (masses, bins) = {shape}"
                raise ValueError(msg)
            if not np.all(np.isfinite(array)) or np.any(array < 0):
                msg = f"{name} must be finite and non-negative"
                raise ValueError(msg)
            object.__setattr__(self, name, array)
        if np.any(self.passing.sum(axis=1) <= 0):
            bad = float(masses[np.flatnonzero(self.passing.sum(axis=1) <= 0)[0]])
            msg = f"the passing template of mass {bad:g} has no yield"
            raise ValueError(msg)
        object.__setattr__(self, "masses", masses)
        object.__setattr__(self, "edges", edges)


def gaussian_templates(
    edges: ArrayLike,
    masses: ArrayLike,
    resolution: float,
    *,
    relative: bool = False,
    signal_yield: float = 1.0,
    efficiency: float = 1.0,
    leakage: float | None = None,
) -> SignalTemplates:
    """Gaussian resonances in bins of ``x``, one per mass hypothesis.

    Parameters
    ----------
    edges
        Bin edges of ``x``.
    masses
        The mass hypotheses (increasing).
    resolution
        The Gaussian's standard deviation: in units of ``x``, or a fraction of
        the mass where ``relative``.
    relative
        Whether ``resolution`` is relative to the mass.
    signal_yield
        The signal's number of events at ``mu = 1`` before the cut (its part
        outside the bins is lost).
    efficiency
        The fraction of the signal passing the cut.
    leakage
        The fraction failing it (default ``1 - efficiency``; 0 for a signal
        left out of the failing region).

    Returns
    -------
    SignalTemplates

    Examples
    --------
    >>> import numpy as np
    >>> from rosenblatt.abcd.bumphunt import gaussian_templates
    >>> t = gaussian_templates(np.linspace(0, 1, 11), [0.3, 0.5], 0.05, efficiency=0.4)
    >>> t.passing.shape, round(float(t.passing[1].sum() + t.failing[1].sum()), 6)
    ((2, 10), 1.0)
    """
    from scipy import stats

    edges = np.asarray(edges, dtype=np.float64)
    masses = np.asarray(masses, dtype=np.float64)
    if leakage is None:
        leakage = 1.0 - efficiency
    for name, value in (("efficiency", efficiency), ("leakage", leakage)):
        if not 0.0 <= value <= 1.0:
            msg = f"{name} must be in [0, 1], got {value!r}"
            raise ValueError(msg)
    if not (math.isfinite(resolution) and resolution > 0):
        msg = f"resolution must be positive, got {resolution!r}"
        raise ValueError(msg)
    if not (math.isfinite(signal_yield) and signal_yield > 0):
        msg = f"signal_yield must be positive, got {signal_yield!r}"
        raise ValueError(msg)
    widths = resolution * masses if relative else np.full(masses.shape, resolution)
    shape = np.diff(stats.norm.cdf(edges[None, :], masses[:, None], widths[:, None]), axis=1)
    return SignalTemplates(
        masses=masses,
        edges=edges,
        passing=signal_yield * efficiency * shape,
        failing=signal_yield * leakage * shape,
    )


def signal_templates(
    masses: ArrayLike,
    edges: ArrayLike,
    passing: Any,
    failing: Any = None,
) -> SignalTemplates:
    """Templates from the signal's histograms in bins of ``x``, one per mass point.

    Parameters
    ----------
    masses
        The mass of each signal sample (increasing).
    edges
        Bin edges of ``x``, those of the data's spectra.
    passing, failing
        Per mass point the signal's yields passing and failing the cut at
        ``mu = 1``: an array of shape ``(masses, bins)`` or a sequence of
        one-dimensional ``hist`` histograms (their values are taken; their
        edges must be ``edges``). ``failing`` defaults to no signal there.
    """
    edges = np.asarray(edges, dtype=np.float64)
    rows = {"passing": passing, "failing": failing}
    arrays = {}
    for name, given in rows.items():
        if given is None:
            arrays[name] = np.zeros((np.size(masses), edges.size - 1))
            continue
        if isinstance(given, np.ndarray) or not hasattr(given[0], "axes"):
            arrays[name] = np.asarray(given, dtype=np.float64)
            continue
        values = []
        for histogram in given:
            if not np.allclose(histogram.axes[0].edges, edges, rtol=1e-12, atol=0.0):
                msg = f"a {name} histogram's edges differ from edges"
                raise ValueError(msg)
            values.append(np.asarray(histogram.values(), dtype=np.float64))
        arrays[name] = np.asarray(values)
    return SignalTemplates(
        masses=np.asarray(masses, dtype=np.float64),
        edges=edges,
        passing=arrays["passing"],
        failing=arrays["failing"],
    )


class _Profile:
    """The pass/fail likelihood, its background profiled bin by bin.

    ``k`` data sets at once (spectra of shape ``(k, n)``: the data, or
    pseudo-experiments). :meth:`deviance` is ``-2 ln L`` relative to the
    saturated model at signal strength ``mu`` and transfer ratio ``exp(t)``,
    each bin's background at its maximum; its derivatives in ``mu`` and ``t``
    follow from the envelope theorem, and the fits are searches for their
    roots by false position (the transfer ratio at fixed ``mu`` inside, ``mu``
    outside).

    With a relative non-closure ``nonclosure`` per bin, the passing
    background of each bin where it is positive is also multiplied by a
    factor ``g`` with the Poisson constraint of pyhf's ``shapesys``: an
    auxiliary count ``aux`` (default ``tau = 1 / nonclosure**2``) of mean
    ``tau g``, ``g`` within pyhf's bounds :data:`SHAPESYS_BOUNDS`. At given
    ``g`` each bin's background is the root of the same quadratic, so ``g``
    is profiled by a search for the root of the likelihood's derivative in
    ``log g`` (at most ``(aux + p) / tau``), bin by bin.
    """

    def __init__(
        self,
        failing: ArrayLike,
        passing: ArrayLike,
        ratio: float,
        nonclosure: FloatArray | None = None,
        aux: FloatArray | None = None,
    ) -> None:
        self.f = np.atleast_2d(np.asarray(failing, dtype=np.float64))
        self.p = np.atleast_2d(np.asarray(passing, dtype=np.float64))
        self.ratio = ratio
        self.t_bounds = (math.log(ratio * TRANSFER_BOUNDS[0]), math.log(ratio * TRANSFER_BOUNDS[1]))
        saturated = _xlogx(self.f).sum(axis=1) + _xlogx(self.p).sum(axis=1)
        self.saturated = saturated - self.f.sum(axis=1) - self.p.sum(axis=1)
        self.nonclosure = nonclosure
        self.varied: BoolArray | None = None
        if nonclosure is not None and np.any(nonclosure > 0):
            varied = np.broadcast_to(np.asarray(nonclosure) > 0, self.f.shape)
            with np.errstate(divide="ignore"):
                tau = np.where(varied, 1.0 / np.asarray(nonclosure, dtype=np.float64) ** 2, 1.0)
            self.varied = varied
            self.tau = np.broadcast_to(tau, self.f.shape)
            self.aux = np.broadcast_to(
                self.tau if aux is None else np.asarray(aux, dtype=np.float64), self.f.shape
            )
            self.log_tau = np.log(self.tau)
            self.aux_saturated = _xlogx(self.aux) - self.aux

    def background(self, a: FloatArray, c: FloatArray, r: FloatArray) -> FloatArray:
        """Each bin's background maximising the likelihood at signal yields ``a``, ``c``.

        ``r`` is the passing background's ratio to the failing one, shape
        ``(k, 1)`` or ``(k, n)``.
        """
        f, p = self.f, self.p
        qa = r * (1.0 + r)
        qb = (1.0 + r) * (c + a * r) - r * (f + p)
        qc = (1.0 + r) * a * c - f * c - r * p * a
        root = np.sqrt(np.maximum(qb * qb - 4.0 * qa * qc, 0.0))
        with np.errstate(divide="ignore", invalid="ignore"):
            b = np.where(qb > 0, -2.0 * qc / (qb + root), (root - qb) / (2.0 * qa))
        return np.asarray(np.maximum(np.nan_to_num(b), 0.0), dtype=np.float64)

    def factors(self, a: FloatArray, c: FloatArray, ratio: FloatArray) -> FloatArray:
        """The logarithm of each bin's non-closure factor ``g`` at its maximum (0 where fixed)."""
        assert self.varied is not None
        varied, tau, aux, p = self.varied, self.tau, self.aux, self.p
        r = ratio[:, None]

        def slope(g: FloatArray) -> FloatArray:
            # minus the derivative of ln L in log g, the background at its maximum
            u = r * g * self.background(a, c, r * g)
            with np.errstate(divide="ignore", invalid="ignore"):
                fitted = np.where(p > 0, p * u / (u + c), 0.0)
            return np.where(varied, tau * g - aux + u - fitted, g - 1.0)

        # at the root tau g = aux - u + p u / (u + c), at most aux + p
        low = np.full(self.f.shape, SHAPESYS_BOUNDS[0])
        high = np.clip((aux + p) / tau, 1.0, SHAPESYS_BOUNDS[1])
        return np.where(varied, np.log(_increasing_root(slope, low, high)), 0.0)

    def deviance(
        self, mu: FloatArray, t: FloatArray, s_pass: FloatArray, s_fail: FloatArray
    ) -> tuple[FloatArray, FloatArray, FloatArray]:
        """``-2 ln L`` over its saturated value, and its derivatives in ``mu`` and ``t``."""
        ratio = np.exp(t)
        a, c = mu[:, None] * s_fail, mu[:, None] * s_pass
        if self.varied is None:
            r = ratio[:, None]
            b = self.background(a, c, r)
            lam_f, lam_p = b + a, r * b + c
        else:
            log_g = self.factors(a, c, ratio)
            g = np.exp(log_g)
            r = ratio[:, None] * g
            b = self.background(a, c, r)
            lam_f, lam_p = b + a, r * b + c
        with np.errstate(divide="ignore", invalid="ignore"):
            w_f = np.where(self.f > 0, self.f / lam_f, 0.0)
            w_p = np.where(self.p > 0, self.p / lam_p, 0.0)
            logs = np.where(self.f > 0, self.f * np.log(lam_f), 0.0) + np.where(
                self.p > 0, self.p * np.log(lam_p), 0.0
            )
        value = np.sum(lam_f + lam_p - logs, axis=1) + self.saturated
        d_mu = np.sum(s_fail * (1.0 - w_f) + s_pass * (1.0 - w_p), axis=1)
        if self.varied is None:
            d_t = ratio * np.sum(b * (1.0 - w_p), axis=1)
        else:
            d_t = ratio * np.sum(g * b * (1.0 - w_p), axis=1)
            constraint = self.tau * g - self.aux * (self.log_tau + log_g) + self.aux_saturated
            value = value + np.sum(np.where(self.varied, constraint, 0.0), axis=1)
        return 2.0 * value, 2.0 * d_mu, 2.0 * d_t

    def background_only(self) -> tuple[FloatArray, FloatArray]:
        """The transfer ratio and backgrounds of the background-only fit without non-closure.

        Its closed form; with a non-closure it is a starting scale only
        (:meth:`null_expected` is the fit).
        """
        ratio = np.clip(self.p.sum(axis=1) / self.f.sum(axis=1), *np.exp(self.t_bounds))
        return ratio, (self.f + self.p) / (1.0 + ratio[:, None])

    def null_expected(self) -> tuple[FloatArray, FloatArray, FloatArray | None]:
        """The failing, passing and auxiliary expectations of the background-only fit.

        The auxiliary counts' expectations ``tau g`` are ``None`` without a non-closure.
        """
        if self.varied is None:
            ratio, b = self.background_only()
            return b, ratio[:, None] * b, None
        zero = np.zeros(self.f.shape[0])
        no_signal = np.zeros(self.f.shape[1])
        ratio = np.exp(self.transfer(zero, no_signal, no_signal))
        empty = np.zeros(self.f.shape)
        g = np.exp(self.factors(empty, empty, ratio))
        b = self.background(empty, empty, ratio[:, None] * g)
        return b, ratio[:, None] * g * b, np.where(self.varied, self.tau * g, self.aux)

    def transfer(self, mu: FloatArray, s_pass: FloatArray, s_fail: FloatArray) -> FloatArray:
        """The logarithm of the transfer ratio that maximises the likelihood at ``mu``."""
        return _increasing_root(
            lambda t: self.deviance(mu, t, s_pass, s_fail)[2],
            np.full(mu.shape, self.t_bounds[0]),
            np.full(mu.shape, self.t_bounds[1]),
        )

    def conditional(self, mu: FloatArray, s_pass: FloatArray, s_fail: FloatArray) -> FloatArray:
        """``-2 ln L`` maximised over the background at fixed ``mu``."""
        if not np.any(mu) and self.varied is None:
            t = np.log(self.background_only()[0])
        else:
            t = self.transfer(mu, s_pass, s_fail)
        return self.deviance(mu, t, s_pass, s_fail)[0]

    def free(self, s_pass: FloatArray, s_fail: FloatArray) -> tuple[FloatArray, FloatArray]:
        """The best ``mu >= 0`` and ``-2 ln L`` at the maximum."""
        k = self.f.shape[0]

        def slope(mu: FloatArray) -> FloatArray:
            return self.deviance(mu, self.transfer(mu, s_pass, s_fail), s_pass, s_fail)[1]

        zero = np.zeros(k)
        signal = slope(zero) < 0
        ratio, b = self.background_only()
        high = np.sqrt(ratio * b.sum(axis=1) + 1.0) / s_pass.sum()
        for _ in range(BISECTIONS):
            falling = signal & (slope(high) < 0)
            if not np.any(falling):
                break
            high = np.where(falling, 4.0 * high, high)
        mu_hat = np.where(signal, _increasing_root(slope, zero, high), 0.0)
        return mu_hat, self.conditional(mu_hat, s_pass, s_fail)


def _increasing_root(function: Any, low: FloatArray, high: FloatArray) -> FloatArray:
    """Row by row the root of an increasing ``function`` in ``[low, high]`` (Illinois method).

    The false position with the Illinois method's halving of a retained end;
    an end where ``function`` has the root's sign already is the answer.
    """
    f_low, f_high = function(low), function(high)
    below, above = f_high <= 0, f_low >= 0
    low, high = low.copy(), high.copy()
    side = np.zeros(low.shape, dtype=np.int8)
    for _ in range(BISECTIONS):
        span = high - low
        if np.all((span <= 1e-14 * (1.0 + np.abs(high))) | below | above):
            break
        with np.errstate(divide="ignore", invalid="ignore"):
            point = low - f_low * span / (f_high - f_low)
        point = np.where(np.isfinite(point), np.clip(point, low, high), 0.5 * (low + high))
        value = function(point)
        rising = value > 0
        high = np.where(rising, point, high)
        low = np.where(rising, low, point)
        f_high = np.where(rising, value, np.where(side == -1, 0.5 * f_high, f_high))
        f_low = np.where(rising, np.where(side == 1, 0.5 * f_low, f_low), value)
        side = np.where(rising, 1, -1).astype(np.int8)
        converged = value == 0
        high = np.where(converged, point, high)
        low = np.where(converged, point, low)
    root = np.where(np.abs(f_high) < np.abs(f_low), high, low)
    return np.where(below, high, np.where(above, low, root))


def _xlogx(values: FloatArray) -> FloatArray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(values > 0, values * np.log(values), 0.0)


def _sqrt_pos(value: float) -> float:
    return math.sqrt(max(value, 0.0))


def _cls(q: float, q_asimov: float) -> float:
    """pyhf's asymptotic ``CLs`` of ``qtilde`` (normal base distribution)."""
    from scipy import stats

    sq, sq_a = _sqrt_pos(q), _sqrt_pos(q_asimov)
    if sq_a == 0.0:
        return 1.0
    teststat = sq - sq_a if sq <= sq_a else (q - q_asimov) / (2.0 * sq_a)
    return float(stats.norm.sf(teststat + sq_a) / stats.norm.sf(teststat))


def _root(function: Any, start: float) -> float:
    """The ``mu > 0`` where the increasing ``function`` crosses 0, bracketed from ``start``."""
    from scipy import optimize

    low, high = 0.5 * start, start
    for _ in range(60):
        if function(high) > 0:
            break
        low, high = high, 2.0 * high
    else:
        msg = "no upper limit found: the signal hardly changes the likelihood"
        raise ValueError(msg)
    while function(low) > 0 and low > 1e-12 * start:
        high, low = low, 0.5 * low
    return float(optimize.brentq(function, low, high, xtol=1e-12 * start, rtol=LIMIT_RTOL))


def _profile_hypothesis(
    profile: _Profile, s_pass: FloatArray, s_fail: FloatArray, level: float
) -> tuple[float, float, float, FloatArray]:
    """``q0``, ``mu_hat``, the observed limit and the expected band of one hypothesis."""
    from scipy import stats

    mu_fit, best_fit = profile.free(s_pass, s_fail)
    mu_hat, best = float(mu_fit[0]), float(best_fit[0])
    null = float(profile.conditional(np.zeros(1), s_pass, s_fail)[0])
    q0 = max(null - best, 0.0) if mu_hat > 0 else 0.0
    ratio, b = profile.background_only()
    fail_0, pass_0, aux_0 = profile.null_expected()
    asimov = _Profile(fail_0, pass_0, profile.ratio, profile.nonclosure, aux_0)
    scale = math.sqrt(float(ratio[0] * b.sum()) + 1.0) / s_pass.sum()

    def q_asimov(mu: float) -> float:
        return float(asimov.conditional(np.array([mu]), s_pass, s_fail)[0])

    def q_tilde(mu: float) -> float:
        if mu_hat > mu:
            return 0.0
        return max(float(profile.conditional(np.array([mu]), s_pass, s_fail)[0]) - best, 0.0)

    observed = _root(lambda mu: level - _cls(q_tilde(mu), q_asimov(mu)), max(mu_hat, scale))
    expected = np.empty(len(BAND))
    for index, n_sigma in enumerate(BAND):
        # the expected CLs at -n_sigma of the background-only distribution equals level
        target = float(stats.norm.isf(level * stats.norm.sf(-n_sigma))) + n_sigma
        expected[index] = _root(lambda mu, t=target: _sqrt_pos(q_asimov(mu)) - t, 2.0 * scale)
    return q0, mu_hat, observed, expected


def _pyhf_hypothesis(
    failing: FloatArray,
    passing: FloatArray,
    s_pass: FloatArray,
    s_fail: FloatArray,
    level: float,
    options: dict[str, Any],
) -> tuple[float, float, float, FloatArray]:
    import pyhf

    from rosenblatt.abcd.passfail import passfail_workspace

    workspace = passfail_workspace(failing, passing, s_pass, s_fail, **options)
    model = workspace.model()
    data = workspace.data(model)
    q0, (_, free) = pyhf.infer.test_statistics.q0(
        0.0,
        data,
        model,
        model.config.suggested_init(),
        model.config.suggested_bounds(),
        model.config.suggested_fixed(),
        return_fitted_pars=True,
    )
    observed, expected = pyhf.infer.intervals.upper_limits.upper_limit(
        data, model, level=level, rtol=1e-4
    )
    return (
        float(q0),
        float(np.asarray(free)[model.config.poi_index]),
        float(observed),
        np.asarray(expected, dtype=np.float64),
    )


@dataclasses.dataclass(frozen=True)
class BumpHunt:
    """The local significance and the CLs limit per mass hypothesis.

    Attributes
    ----------
    masses
        The mass hypotheses.
    q0
        The discovery test statistic of each (0 where the best fit has no signal).
    local_p, local_z
        The local p-value ``1 - Phi(sqrt(q0))`` and significance ``sqrt(q0)``.
    mu_hat
        The best-fit signal strength (at least 0).
    observed_limit
        The observed CLs upper limit on ``mu`` at confidence ``1 - level``.
    expected_limits
        The expected limits, shape ``(m, 5)``: at -2, -1, 0, +1 and +2 standard
        deviations of the background-only distribution (column 2 the median).
    level
        The CLs level (0.05 for 95% limits).
    method
        ``"profile"`` or ``"pyhf"``.
    """

    masses: FloatArray
    q0: FloatArray
    local_p: FloatArray
    local_z: FloatArray
    mu_hat: FloatArray
    observed_limit: FloatArray
    expected_limits: FloatArray
    level: float
    method: str

    @property
    def best(self) -> int:
        """The index of the hypothesis of the largest local significance."""
        return int(np.argmax(self.local_z))

    def to_dict(self) -> dict[str, Any]:
        """The results as JSON-compatible data (lists of floats)."""
        out: dict[str, Any] = {
            name: np.asarray(getattr(self, name)).tolist()
            for name in ("masses", "q0", "local_p", "local_z", "mu_hat", "observed_limit")
        }
        out["expected_limits"] = {
            f"{sigma:+d}" if sigma else "median": self.expected_limits[:, index].tolist()
            for index, sigma in enumerate(BAND)
        }
        out["level"] = self.level
        out["method"] = self.method
        return out


def _inputs(
    pass_counts: ArrayLike, fail_counts: ArrayLike, edges: ArrayLike, templates: SignalTemplates
) -> tuple[FloatArray, FloatArray]:
    failing = _spectrum(fail_counts, "fail_counts")
    passing = _spectrum(pass_counts, "pass_counts", failing.size)
    edges = np.asarray(edges, dtype=np.float64)
    if edges.shape != templates.edges.shape or not np.allclose(edges, templates.edges):
        msg = "the templates' edges differ from edges"
        raise ValueError(msg)
    if edges.size != failing.size + 1:
        msg = f"edges has {edges.size} entries, the spectra {failing.size} bins"
        raise ValueError(msg)
    if not failing.sum() > 0 or not passing.sum() > 0:
        msg = "the failing and passing spectra must both hold events"
        raise ValueError(msg)
    return failing, passing


def _ratio(failing: FloatArray, passing: FloatArray, ratio: float | None) -> float:
    return float(passing.sum() / failing.sum()) if ratio is None else float(ratio)


def _nonclosure(nonclosure: ArrayLike | None, bins: int) -> FloatArray | None:
    """The validated relative non-closure per bin, ``None`` where none is positive."""
    if nonclosure is None:
        return None
    relative = _spectrum(nonclosure, "nonclosure", bins)
    return relative if np.any(relative > 0) else None


def bump_hunt(
    pass_counts: ArrayLike,
    fail_counts: ArrayLike,
    edges: ArrayLike,
    templates: SignalTemplates,
    *,
    level: float = 0.05,
    method: str = "profile",
    ratio: float | None = None,
    nonclosure: ArrayLike | None = None,
) -> BumpHunt:
    """The local significance and the CLs upper limit of each mass hypothesis.

    Parameters
    ----------
    pass_counts, fail_counts
        The observed spectra in bins of ``x``, passing and failing the cut.
    edges
        Their bin edges (those of ``templates``).
    templates
        The signal per mass hypothesis (:func:`gaussian_templates`,
        :func:`signal_templates`).
    level
        The CLs level of the limits (0.05: 95% confidence).
    method
        ``"profile"`` (the exact profile of the likelihood) or ``"pyhf"``
        (pyhf's ``q0`` and ``upper_limit`` on each
        :func:`~rosenblatt.abcd.passfail.passfail_workspace`).
    ratio
        The expected transfer ratio, whose bounds (``TRANSFER_BOUNDS`` times
        it) bound the fitted one (default: ``sum(pass) / sum(fail)``).
    nonclosure
        Relative non-closure per bin of the passing background: the relative
        uncertainty of a factor per bin with the Poisson constraint of the
        workspace's ``shapesys`` modifier (0 or none: no factor in that bin).

    Returns
    -------
    BumpHunt

    Examples
    --------
    >>> import numpy as np
    >>> from rosenblatt.abcd.bumphunt import bump_hunt, gaussian_templates
    >>> edges = np.linspace(0.0, 1.0, 11)
    >>> fail = np.array([950, 800, 700, 600, 500, 430, 360, 300, 260, 220])
    >>> passed = np.array([50, 42, 37, 32, 26, 23, 19, 16, 14, 12])
    >>> templates = gaussian_templates(edges, [0.3, 0.5, 0.7], 0.05, signal_yield=10.0)
    >>> hunt = bump_hunt(passed, fail, edges, templates)
    >>> hunt.expected_limits.shape
    (3, 5)
    """
    if method not in METHODS:
        msg = f"method must be one of {METHODS}, got {method!r}"
        raise ValueError(msg)
    if not 0 < level < 1:
        msg = f"level must be in (0, 1), got {level!r}"
        raise ValueError(msg)
    failing, passing = _inputs(pass_counts, fail_counts, edges, templates)
    relative = _nonclosure(nonclosure, failing.size)
    rows = []
    if method == "profile":
        profile = _Profile(failing, passing, _ratio(failing, passing, ratio), relative)
        for s_pass, s_fail in zip(templates.passing, templates.failing, strict=True):
            rows.append(_profile_hypothesis(profile, s_pass, s_fail, level))
    else:
        from rosenblatt.abcd.likelihood import quiet_pyhf

        options = {"ratio": ratio, "nonclosure": nonclosure}
        with quiet_pyhf():
            for s_pass, s_fail in zip(templates.passing, templates.failing, strict=True):
                rows.append(_pyhf_hypothesis(failing, passing, s_pass, s_fail, level, options))
    return _collect(templates.masses, rows, level, method)


def _collect(masses: FloatArray, rows: list[Any], level: float, method: str) -> BumpHunt:
    from scipy import stats

    q0 = np.array([row[0] for row in rows])
    z = np.sqrt(np.maximum(q0, 0.0))
    return BumpHunt(
        masses=masses,
        q0=q0,
        local_p=stats.norm.sf(z),
        local_z=z,
        mu_hat=np.array([row[1] for row in rows]),
        observed_limit=np.array([row[2] for row in rows]),
        expected_limits=np.array([row[3] for row in rows]),
        level=level,
        method=method,
    )


def local_significance_scan(
    pass_counts: ArrayLike,
    fail_counts: ArrayLike,
    templates: SignalTemplates,
    *,
    ratio: float | None = None,
    nonclosure: ArrayLike | None = None,
    aux: ArrayLike | None = None,
) -> FloatArray:
    """The local significance ``sqrt(q0)`` of each mass hypothesis (the exact profile).

    The part of :func:`bump_hunt` that :func:`global_significance` repeats on
    the pseudo-experiments: spectra of shape ``(n,)`` give one scan, shape
    ``(k, n)`` one scan per row, ``(k, masses)``. ``nonclosure`` is as for
    :func:`bump_hunt`; ``aux``, the auxiliary counts of its constraints per
    row (default ``1 / nonclosure**2``, their nominal value), shape ``(k, n)``.
    """
    failing = np.atleast_2d(np.asarray(fail_counts, dtype=np.float64))
    passing = np.atleast_2d(np.asarray(pass_counts, dtype=np.float64))
    if failing.shape != passing.shape or failing.shape[1] != templates.passing.shape[1]:
        msg = (
            f"the spectra have shapes {passing.shape} and {failing.shape}, "
            f"the templates {templates.passing.shape[1]} bins"
        )
        raise ValueError(msg)
    if ratio is None:
        ratio = float(passing.sum() / failing.sum())
    relative = _nonclosure(nonclosure, failing.shape[1])
    counts = None if aux is None or relative is None else np.asarray(aux, dtype=np.float64)
    profile = _Profile(failing, passing, ratio, relative, counts)
    null = profile.conditional(
        np.zeros(failing.shape[0]), templates.passing[0], templates.failing[0]
    )
    z = np.empty((failing.shape[0], templates.masses.size))
    for index, (s_pass, s_fail) in enumerate(
        zip(templates.passing, templates.failing, strict=True)
    ):
        mu_hat, best = profile.free(s_pass, s_fail)
        z[:, index] = np.where(mu_hat > 0, np.sqrt(np.maximum(null - best, 0.0)), 0.0)
    return z[0] if np.ndim(fail_counts) == 1 else z


def signal_strength(
    pass_counts: ArrayLike,
    fail_counts: ArrayLike,
    s_pass: ArrayLike,
    s_fail: ArrayLike,
    *,
    ratio: float | None = None,
    rise: float = 1.0,
    nonclosure: ArrayLike | None = None,
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """The best-fit signal strength of one hypothesis and its profile-likelihood interval.

    The exact profile of :func:`bump_hunt` with ``mu`` free on both sides of
    zero (a downward fluctuation gives a negative ``mu``), down to where the
    smallest bin of either region would be emptied by the signal; the
    interval's ends are where ``-2 ln L`` rises by ``rise`` above its minimum
    (1: the 68% interval). Spectra of shape ``(n,)`` give one fit, ``(k, n)``
    one per row.

    Parameters
    ----------
    pass_counts, fail_counts
        The observed spectra in bins of ``x``, passing and failing the cut.
    s_pass, s_fail
        The signal's yields per bin at ``mu = 1``, passing and failing: shape
        ``(n,)``, or ``(k, n)`` for a signal of its own per data set.
    ratio
        As for :func:`bump_hunt` (default: ``sum(pass) / sum(fail)`` of all rows).
    rise
        Rise of ``-2 ln L`` at the interval's ends.
    nonclosure
        As for :func:`bump_hunt`.

    Returns
    -------
    tuple of numpy.ndarray
        ``(mu_hat, low, high)``, each of shape ``(k,)`` (``(1,)`` for one fit).

    Examples
    --------
    >>> import numpy as np
    >>> from rosenblatt.abcd.bumphunt import signal_strength
    >>> fail = np.full(10, 900.0)
    >>> passed = np.full(10, 100.0) + np.array([0, 0, 0, 0, 30, 0, 0, 0, 0, 0])
    >>> s_pass = np.array([0, 0, 0, 0, 30.0, 0, 0, 0, 0, 0])
    >>> mu, low, high = signal_strength(passed, fail, s_pass, np.zeros(10))
    >>> bool(low[0] < 1.0 < high[0])
    True
    """
    failing = np.atleast_2d(np.asarray(fail_counts, dtype=np.float64))
    passing = np.atleast_2d(np.asarray(pass_counts, dtype=np.float64))
    s_pass = np.asarray(s_pass, dtype=np.float64)
    s_fail = np.asarray(s_fail, dtype=np.float64)
    if (
        failing.shape != passing.shape
        or s_pass.shape != s_fail.shape
        or s_pass.shape not in (failing.shape[1:], failing.shape)
    ):
        msg = (
            f"the spectra have shapes {passing.shape} and {failing.shape}, "
            f"the signal's yields {s_pass.shape} and {s_fail.shape}"
        )
        raise ValueError(msg)
    if not np.all(np.atleast_2d(s_pass).sum(axis=1) + np.atleast_2d(s_fail).sum(axis=1) > 0):
        msg = "the signal has no yield"
        raise ValueError(msg)
    if not rise > 0:
        msg = f"rise must be positive, got {rise!r}"
        raise ValueError(msg)
    if ratio is None:
        ratio = float(passing.sum() / failing.sum())
    profile = _Profile(failing, passing, ratio, _nonclosure(nonclosure, failing.shape[1]))
    with np.errstate(divide="ignore", invalid="ignore"):
        room = np.minimum(
            np.where(s_pass > 0, passing / s_pass, np.inf),
            np.where(s_fail > 0, failing / s_fail, np.inf),
        ).min(axis=1)
    floor = -0.99 * np.minimum(room, 1e6)

    def conditional(mu: FloatArray) -> FloatArray:
        return profile.deviance(mu, profile.transfer(mu, s_pass, s_fail), s_pass, s_fail)[0]

    def slope(mu: FloatArray) -> FloatArray:
        return profile.deviance(mu, profile.transfer(mu, s_pass, s_fail), s_pass, s_fail)[1]

    ratio_0, b = profile.background_only()
    step = np.sqrt(ratio_0 * b.sum(axis=1) + 1.0) / np.maximum(
        np.atleast_2d(s_pass).sum(axis=1), 1e-12
    )
    high = np.abs(floor) + step
    for _ in range(BISECTIONS):
        short = slope(high) < 0
        if not np.any(short):
            break
        high = np.where(short, 4.0 * high, high)
    mu_hat = _increasing_root(slope, floor, high)
    best = conditional(mu_hat)

    def above(mu: FloatArray) -> FloatArray:
        return conditional(mu) - best - rise

    top = mu_hat + step
    for _ in range(BISECTIONS):
        short = above(top) < 0
        if not np.any(short):
            break
        top = np.where(short, mu_hat + 4.0 * (top - mu_hat), top)
    upper = _increasing_root(above, mu_hat, top)
    lower = -_increasing_root(lambda m: above(-m), -mu_hat, -floor)
    return mu_hat, lower, upper


def upcrossings(q0: ArrayLike, level: float) -> Int64Array:
    """The number of times each scan of ``q0`` over the masses rises through ``level``.

    ``q0`` is one scan (shape ``(m,)``) or one per row (``(toys, m)``); an
    upcrossing is a pair of neighbouring masses with ``q0`` below ``level`` at
    the first and at or above it at the second.
    """
    scans = np.atleast_2d(np.asarray(q0, dtype=np.float64))
    above = scans >= level
    counts: Int64Array = np.sum(~above[:, :-1] & above[:, 1:], axis=1).astype(np.int64)
    return counts


@dataclasses.dataclass(frozen=True)
class GlobalSignificance:
    """The global p-value of the largest local excess on the grid, two ways.

    Attributes
    ----------
    local_z, local_p
        The local significance tested (the observed largest, unless another
        threshold was given) and its local p-value.
    toys_max_z
        The largest local significance over the grid of each background-only
        pseudo-experiment.
    p_toys, p_toys_error
        The fraction of pseudo-experiments whose largest local significance is
        at least ``local_z``, and its binomial error.
    reference_level
        The level ``u0`` of ``q0`` at which upcrossings are counted.
    upcrossings_toys, upcrossings_observed
        The mean number of upcrossings of ``u0`` over the pseudo-experiments,
        and that of the observed scan.
    p_gross_vitells, p_gross_vitells_observed
        ``p_local + <N(u0)> exp(-(u - u0) / 2)`` with ``u = local_z**2`` and
        ``<N(u0)>`` from the pseudo-experiments, and from the observed scan.
    """

    local_z: float
    local_p: float
    toys_max_z: FloatArray
    p_toys: float
    p_toys_error: float
    reference_level: float
    upcrossings_toys: float
    upcrossings_observed: int
    p_gross_vitells: float
    p_gross_vitells_observed: float

    @property
    def z_toys(self) -> float:
        """The global significance from the pseudo-experiments (one-sided)."""
        from scipy import stats

        return float(stats.norm.isf(self.p_toys))

    @property
    def z_gross_vitells(self) -> float:
        """The global significance from the Gross-Vitells estimate (one-sided)."""
        from scipy import stats

        return float(stats.norm.isf(min(self.p_gross_vitells, 1.0)))

    def to_dict(self) -> dict[str, Any]:
        """The results as JSON-compatible data (the toys' maxima as a list)."""
        out = {
            field.name: getattr(self, field.name)
            for field in dataclasses.fields(self)
            if field.name != "toys_max_z"
        }
        out["toys_max_z"] = np.asarray(self.toys_max_z).tolist()
        out["n_toys"] = int(np.size(self.toys_max_z))
        out["z_toys"] = self.z_toys
        out["z_gross_vitells"] = self.z_gross_vitells
        return out


def global_significance(
    pass_counts: ArrayLike,
    fail_counts: ArrayLike,
    edges: ArrayLike,
    templates: SignalTemplates,
    *,
    n_toys: int = 1000,
    seed: int | None = None,
    threshold: float | None = None,
    reference_level: float = 1.0,
    ratio: float | None = None,
    nonclosure: ArrayLike | None = None,
) -> GlobalSignificance:
    """The look-elsewhere effect over the grid: pseudo-experiments and Gross-Vitells.

    The pseudo-experiments are drawn from the background-only fit to the data
    (Poisson counts in each bin of both regions; without non-closure its
    closed form: transfer ratio ``sum(pass) / sum(fail)``, each bin's
    background ``(fail + pass) / (1 + ratio)``), each scanned over the grid
    like the data. With a non-closure per bin, each pseudo-experiment also
    draws the auxiliary counts of its constraints (Poisson, of mean ``tau g``
    at the fitted factors ``g``), as pyhf samples a ``shapesys``.

    Parameters
    ----------
    pass_counts, fail_counts, edges, templates
        As for :func:`bump_hunt`.
    n_toys
        The number of pseudo-experiments.
    seed
        Seed of numpy's random generator.
    threshold
        The local significance whose global p-value is wanted (default: the
        largest observed).
    reference_level
        The low level ``u0`` of ``q0`` where upcrossings are counted (about 1:
        low enough for several per scan, high enough to be resolved by the grid).
    ratio, nonclosure
        As for :func:`bump_hunt`.

    Returns
    -------
    GlobalSignificance
    """
    from scipy import stats

    if int(n_toys) < 1:
        msg = f"n_toys must be at least 1, got {n_toys!r}"
        raise ValueError(msg)
    failing, passing = _inputs(pass_counts, fail_counts, edges, templates)
    relative = _nonclosure(nonclosure, failing.size)
    observed = local_significance_scan(
        passing, failing, templates, ratio=ratio, nonclosure=relative
    )
    local_z = float(observed.max()) if threshold is None else float(threshold)
    expected_fail, expected_pass, expected_aux = _Profile(
        failing, passing, _ratio(failing, passing, ratio), relative
    ).null_expected()
    rng = np.random.default_rng(seed)
    size = (int(n_toys), expected_fail.shape[1])
    toy_fail = rng.poisson(np.broadcast_to(expected_fail, size)).astype(np.float64)
    toy_pass = rng.poisson(np.broadcast_to(expected_pass, size))
    toy_aux = (
        None
        if expected_aux is None
        else rng.poisson(np.broadcast_to(expected_aux, size)).astype(np.float64)
    )
    scans = local_significance_scan(
        toy_pass.astype(np.float64),
        toy_fail,
        templates,
        ratio=_ratio(failing, passing, ratio),
        nonclosure=relative,
        aux=toy_aux,
    )
    maxima = scans.max(axis=1)
    p_toys = float(np.mean(maxima >= local_z))
    local_p = float(stats.norm.sf(local_z))
    u = local_z**2
    decay = math.exp(-(u - reference_level) / 2.0)
    n_toys_mean = float(upcrossings(scans**2, reference_level).mean())
    n_observed = int(upcrossings(observed**2, reference_level)[0])
    return GlobalSignificance(
        local_z=local_z,
        local_p=local_p,
        toys_max_z=maxima,
        p_toys=p_toys,
        p_toys_error=math.sqrt(p_toys * (1.0 - p_toys) / maxima.size),
        reference_level=float(reference_level),
        upcrossings_toys=n_toys_mean,
        upcrossings_observed=n_observed,
        p_gross_vitells=local_p + n_toys_mean * decay,
        p_gross_vitells_observed=local_p + n_observed * decay,
    )
