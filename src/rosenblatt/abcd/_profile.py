"""The pass/fail likelihood of the bump hunt, profiled exactly over its backgrounds.

At fixed signal strength ``mu`` and transfer ratio ``R`` the background of
each bin maximising ``Pois(f | b + mu s_f) Pois(p | R b + mu s_p)`` is the
positive root of a quadratic, so a fit is a minimisation over
``(mu, log R)`` alone, with its gradient in closed form. A non-closure per
bin (the workspace's ``shapesys``: a factor ``g`` of the passing background
with a Poisson constraint) adds a one-dimensional search per bin for ``g``,
the background at each ``g`` still the quadratic's root. :class:`Profile`
holds the likelihood of ``k`` data sets at once and its fits;
:func:`increasing_root` is the root search they share, row by row.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np

from rosenblatt.abcd.passfail import TRANSFER_BOUNDS
from rosenblatt.typing import ArrayLike, BoolArray, FloatArray

__all__ = [
    "BISECTIONS",
    "SHAPESYS_BOUNDS",
    "NonclosureConstraint",
    "Profile",
    "increasing_root",
    "nonclosure_constraint",
    "xlogx",
]


#: the most steps of a root search in a fit (and of the widening of its interval)
BISECTIONS = 48
#: the bounds of a non-closure factor ``g`` (those pyhf gives a ``shapesys`` parameter)
SHAPESYS_BOUNDS = (1e-10, 10.0)


class Profile:
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
        saturated = xlogx(self.f).sum(axis=1) + xlogx(self.p).sum(axis=1)
        self.saturated = saturated - self.f.sum(axis=1) - self.p.sum(axis=1)
        self.nonclosure = nonclosure
        self.varied: BoolArray | None = None
        constraint = nonclosure_constraint(nonclosure, aux, self.f.shape)
        if constraint is not None:
            self.varied, self.tau, self.aux, self.log_tau, self.aux_saturated = constraint

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
        return np.where(varied, np.log(increasing_root(slope, low, high)), 0.0)

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

    def asimov(self) -> Profile:
        """The likelihood of the background-only fit's expectations (the Asimov data set)."""
        fail_0, pass_0, aux_0 = self.null_expected()
        return Profile(fail_0, pass_0, self.ratio, self.nonclosure, aux_0)

    def transfer(self, mu: FloatArray, s_pass: FloatArray, s_fail: FloatArray) -> FloatArray:
        """The logarithm of the transfer ratio that maximises the likelihood at ``mu``."""
        return increasing_root(
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
        mu_hat = np.where(signal, increasing_root(slope, zero, high), 0.0)
        return mu_hat, self.conditional(mu_hat, s_pass, s_fail)


def increasing_root(function: Any, low: FloatArray, high: FloatArray) -> FloatArray:
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


def xlogx(values: FloatArray) -> FloatArray:
    """``x log x``, 0 at ``x = 0`` (a Poisson likelihood's saturated term)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(values > 0, values * np.log(values), 0.0)


class NonclosureConstraint(NamedTuple):
    """The Poisson constraints of the passing background's non-closure factors, per bin.

    ``varied`` where a factor varies; ``tau = 1 / relative**2``, the
    auxiliary counts ``aux`` (``tau`` at the nominal), ``log tau`` and
    ``aux log aux - aux``, each broadcast to the spectra's shape.
    """

    varied: BoolArray
    tau: FloatArray
    aux: FloatArray
    log_tau: FloatArray
    aux_saturated: FloatArray


def nonclosure_constraint(
    nonclosure: ArrayLike | None, aux: ArrayLike | None, shape: tuple[int, ...]
) -> NonclosureConstraint | None:
    """The constraints of relative non-closures ``nonclosure``; None where no factor varies."""
    if nonclosure is None or not np.any(np.asarray(nonclosure) > 0):
        return None
    relative = np.asarray(nonclosure, dtype=np.float64)
    varied = np.broadcast_to(relative > 0, shape)
    with np.errstate(divide="ignore"):
        tau = np.broadcast_to(np.where(varied, 1.0 / relative**2, 1.0), shape)
    counts = np.broadcast_to(tau if aux is None else np.asarray(aux, dtype=np.float64), shape)
    return NonclosureConstraint(varied, tau, counts, np.log(tau), xlogx(counts) - counts)
