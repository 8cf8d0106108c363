"""The pass/fail likelihood of several categories, profiled exactly over its backgrounds.

The model of :func:`~rosenblatt.abcd.passfail.passfail_categories_workspace`:
per bin of ``x`` one failing background ``b`` with
``Pois(f | b + mu s_f)``, and per category ``k`` a passing count
``Pois(p_k | R_k g_k b + mu s_k)`` with its own transfer ratio ``R_k`` and,
where its relative non-closure is positive, a factor ``g_k`` with the Poisson
constraint of pyhf's ``shapesys`` (auxiliary count ``aux`` of mean
``tau g_k``, ``tau = 1 / nonclosure**2``).

At given ``b`` each factor's maximum is the positive root of a quadratic,
and the derivative of the likelihood in ``b`` at those factors decreases to
its root: each bin's background is a one-dimensional search. The transfer
ratios, one per category, are found by Newton steps in ``log R`` (the
gradient in closed form, the Hessian from its differences), and ``mu`` by
the root of its derivative, as in :class:`~rosenblatt.abcd._profile.Profile`
(one category), whose numbers this class gives up to the precision of its
searches.
"""

from __future__ import annotations

import numpy as np

from rosenblatt.abcd._profile import (
    BISECTIONS,
    SHAPESYS_BOUNDS,
    increasing_root,
    nonclosure_constraint,
    xlogx,
)
from rosenblatt.abcd.passfail import TRANSFER_BOUNDS
from rosenblatt.typing import ArrayLike, BoolArray, FloatArray

__all__ = ["CategoryProfile"]


#: the most steps of a bin's background search
ROOT_STEPS = 80
#: a relative change this small of a bin's background ends its search
ROOT_TOLERANCE = 1e-15
#: the most Newton steps of the transfer ratios' fit
NEWTON_STEPS = 40
#: the relative rounding error of ``-2 ln L`` that a Newton step may raise it by
ROUNDING = 1e-14
#: the most halvings of one Newton step
HALVINGS = 40
#: the largest Newton step in ``log R``
MAX_STEP = 1.0
#: a full Newton step this small in ``log R`` ends the fit (the next would be rounding)
STEP_TOLERANCE = 1e-9


class CategoryProfile:
    """The likelihood of a failing region and ``K`` passing categories, backgrounds profiled.

    ``S`` data sets at once: failing spectra of shape ``(S, n)`` (or
    ``(n,)``), passing ones ``(S, K, n)`` (or ``(K, n)``). The interface is
    that of :class:`~rosenblatt.abcd._profile.Profile`: :meth:`deviance`,
    :meth:`transfer`, :meth:`conditional`, :meth:`free`,
    :meth:`background_only`, :meth:`null_expected` and :meth:`asimov`, the
    signal's yields ``s_pass`` of shape ``(K, n)`` (or ``(S, K, n)``) and
    ``s_fail`` of shape ``(n,)`` (or ``(S, n)``).

    Parameters
    ----------
    failing, passing
        The observed spectra.
    ratios
        The expected transfer ratio of each category: ``TRANSFER_BOUNDS``
        times it bound the fitted one.
    nonclosure
        The relative non-closure of each category's bins, shape ``(K, n)``
        (0: no factor there), or ``None``.
    aux
        The auxiliary counts of the non-closure's constraints, shape
        ``(S, K, n)`` (default ``1 / nonclosure**2``).
    """

    def __init__(
        self,
        failing: ArrayLike,
        passing: ArrayLike,
        ratios: ArrayLike,
        nonclosure: FloatArray | None = None,
        aux: FloatArray | None = None,
    ) -> None:
        self.f = np.atleast_2d(np.asarray(failing, dtype=np.float64))
        p = np.asarray(passing, dtype=np.float64)
        self.p = p[None] if p.ndim == 2 else p
        if self.p.ndim != 3 or self.p.shape[::2] != self.f.shape:
            msg = f"passing has shape {p.shape}, failing {np.shape(failing)}"
            raise ValueError(msg)
        self.ratios = np.asarray(ratios, dtype=np.float64).reshape(-1)
        self.t_low = np.log(self.ratios * TRANSFER_BOUNDS[0])
        self.t_high = np.log(self.ratios * TRANSFER_BOUNDS[1])
        saturated = xlogx(self.f).sum(axis=1) + xlogx(self.p).sum(axis=(1, 2))
        self.saturated = saturated - self.f.sum(axis=1) - self.p.sum(axis=(1, 2))
        # the rounding error of -2 ln L: its terms are of the order of the counts
        total = self.f.sum(axis=1) + self.p.sum(axis=(1, 2))
        self.rounding = ROUNDING * (1.0 + total * np.log1p(total))
        self.nonclosure = nonclosure
        self._last: dict[int, FloatArray] = {}
        self.varied: BoolArray | None = None
        constraint = nonclosure_constraint(nonclosure, aux, self.p.shape)
        if constraint is not None:
            self.varied, self.tau, self.aux, self.log_tau, self.aux_saturated = constraint

    def factors(self, b: FloatArray, r: FloatArray, c: FloatArray) -> FloatArray:
        """Each category's non-closure factor ``g`` at its maximum given the background ``b``.

        ``b`` of shape ``(S, n)``, ``r`` the transfer ratios ``(S, K, 1)``,
        ``c`` the passing signal ``(S, K, n)``; 1 where no factor varies.
        """
        assert self.varied is not None
        tau, aux, p = self.tau, self.aux, self.p
        span = r * b[:, None, :]
        # g (span g + c) times the derivative in g: q2 g^2 + q1 g + q0 = 0
        q2 = (tau + span) * span
        q1 = (tau + span) * c - (p + aux) * span
        q0 = -aux * c
        root = np.sqrt(np.maximum(q1 * q1 - 4.0 * q2 * q0, 0.0))
        with np.errstate(divide="ignore", invalid="ignore"):
            g = np.where(
                (q1 > 0) & (c >= 0),
                -2.0 * q0 / (q1 + root),
                np.where(q2 > 0, (root - q1) / (2.0 * q2), aux / tau),
            )
            # no passing count: the factor's maximum does not depend on the signal
            g = np.where(p > 0, g, aux / (tau + span))
        g = np.clip(np.nan_to_num(g, nan=1.0), *SHAPESYS_BOUNDS)
        return np.where(self.varied, g, 1.0)

    def _slope(
        self, b: FloatArray, a: FloatArray, c: FloatArray, r: FloatArray
    ) -> tuple[FloatArray, FloatArray]:
        """Minus the derivative of ``ln L`` in each bin's ``b`` (the factors profiled), and its slope.

        The slope is that of the profiled likelihood: where a factor ``g`` is
        free, its change with ``b`` enters through the second derivatives.
        """
        f, p = self.f, self.p
        rg = r * self.factors(b, r, c) if self.varied is not None else r
        lam_p = rg * b[:, None, :] + c
        with np.errstate(divide="ignore", invalid="ignore"):
            w_f = np.where(f > 0, f / (b + a), 0.0)
            w_p = np.where(p > 0, p / lam_p, 0.0)
            curvature = w_f * w_f / np.where(f > 0, f, 1.0)
            bend = np.where(p > 0, w_p * w_p / np.where(p > 0, p, 1.0), 0.0)
        value = 1.0 - w_f + np.sum(rg * (1.0 - w_p), axis=1)
        # an expectation not positive where a count is (rounding at the domain's edge): b too small
        outside = ((f > 0) & (b + a <= 0)) | np.any((p > 0) & (lam_p <= 0), axis=1)
        value = np.where(outside, -np.inf, value)
        inner = rg * rg * bend
        if self.varied is not None:
            g = rg / r
            # the factor's own second derivatives, its change with b profiled away
            span = r * b[:, None, :]
            cross = r * (w_p - 1.0) - r * span * g * bend
            own = span * span * bend + self.aux / (g * g)
            interior = self.varied & (g > SHAPESYS_BOUNDS[0]) & (g < SHAPESYS_BOUNDS[1])
            with np.errstate(divide="ignore", invalid="ignore"):
                inner = inner - np.where(interior & (own > 0), cross * cross / own, 0.0)
        return value, curvature + np.sum(inner, axis=1)

    def background(self, a: FloatArray, c: FloatArray, r: FloatArray) -> FloatArray:
        """Each bin's background maximising the likelihood at signal yields ``a``, ``c``.

        ``a`` the failing signal ``(S, n)``, ``c`` the passing one
        ``(S, K, n)``, ``r`` the transfer ratios ``(S, K, 1)``. Newton steps
        kept inside the bracket of the root, bisecting where one leaves it.
        """
        a = np.broadcast_to(a, self.f.shape)
        c = np.broadcast_to(c, self.p.shape)
        with np.errstate(divide="ignore", invalid="ignore"):
            # a negative passing signal needs R g b > -c, at the largest factor where one varies
            fixed = -c / r
            if self.varied is not None:
                fixed = np.where(self.varied, fixed / SHAPESYS_BOUNDS[1], fixed)
        low = np.maximum(np.maximum(-a, 0.0), np.max(fixed, axis=1))
        high = low + self.f + self.p.sum(axis=1) + 1.0
        floor = low
        with np.errstate(divide="ignore", invalid="ignore"):
            at_low = self._slope(low, a, c, r)[0]
        empty = at_low >= 0
        x = np.clip((self.f + self.p.sum(axis=1)) / (1.0 + r.sum(axis=1)), low, high)
        x = np.where(x > low, x, 0.5 * (low + high))
        for _ in range(ROOT_STEPS):
            value, slope = self._slope(x, a, c, r)
            high = np.where(value > 0, x, high)
            low = np.where(value < 0, x, low)
            with np.errstate(divide="ignore", invalid="ignore"):
                newton = x - value / slope
            close = np.abs(newton - x) <= ROOT_TOLERANCE * np.abs(x)
            inside = (slope > 0) & (newton > low) & (newton < high)
            step = np.where(value == 0, x, np.where(inside | close, newton, 0.5 * (low + high)))
            moved = np.abs(step - x) > ROOT_TOLERANCE * np.abs(x)
            x = step
            if not np.any(moved & ~empty):
                break
        found: FloatArray = np.where(empty, floor, x)
        return found

    def _yields(
        self, mu: FloatArray, t: FloatArray, s_pass: FloatArray, s_fail: FloatArray
    ) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray]:
        """The background, the passing background's factor ``R g`` and the signal yields."""
        a = mu[:, None] * s_fail
        c = mu[:, None, None] * s_pass
        r = np.exp(t)[:, :, None]
        b = self.background(a, c, r)
        rg = r * self.factors(b, r, c) if self.varied is not None else r
        return b, np.broadcast_to(rg, self.p.shape), a, c

    def deviance(
        self, mu: FloatArray, t: FloatArray, s_pass: FloatArray, s_fail: FloatArray
    ) -> tuple[FloatArray, FloatArray, FloatArray]:
        """``-2 ln L`` over its saturated value, and its derivatives in ``mu`` and each ``t``.

        ``t`` is the logarithm of the transfer ratios, shape ``(S, K)``; its
        derivatives have that shape.
        """
        b, rg, a, c = self._yields(mu, t, s_pass, s_fail)
        lam_f, lam_p = b + a, rg * b[:, None, :] + c
        with np.errstate(divide="ignore", invalid="ignore"):
            w_f = np.where(self.f > 0, self.f / lam_f, 0.0)
            w_p = np.where(self.p > 0, self.p / lam_p, 0.0)
            log_f = np.where(self.f > 0, self.f * np.log(lam_f), 0.0)
            log_p = np.where(self.p > 0, self.p * np.log(lam_p), 0.0)
        value = np.sum(lam_f - log_f, axis=1) + np.sum(lam_p - log_p, axis=(1, 2))
        value = value + self.saturated
        d_mu = np.sum(s_fail * (1.0 - w_f), axis=-1) + np.sum(s_pass * (1.0 - w_p), axis=(-2, -1))
        d_mu = np.broadcast_to(d_mu, value.shape)
        d_t = np.sum(rg * b[:, None, :] * (1.0 - w_p), axis=2)
        if self.varied is not None:
            g = rg / np.exp(t)[:, :, None]
            constraint = self.tau * g - self.aux * (self.log_tau + np.log(g)) + self.aux_saturated
            value = value + np.sum(np.where(self.varied, constraint, 0.0), axis=(1, 2))
        return 2.0 * value, 2.0 * d_mu, 2.0 * d_t

    def curvature(
        self, mu: FloatArray, t: FloatArray, s_pass: FloatArray, s_fail: FloatArray
    ) -> tuple[FloatArray, FloatArray, FloatArray]:
        """``-2 ln L``, its gradient in ``t`` and its Hessian in ``t``, shape ``(S, K, K)``.

        The Hessian of the profiled likelihood: each bin's background and free
        factors change with ``t``, their change the solution of the bin's
        Hessian (an arrow matrix: ``b`` coupled to each ``g_k``, the factors
        not to each other), eliminated in closed form.
        """
        b, rg, a, c = self._yields(mu, t, s_pass, s_fail)
        f, p = self.f, self.p
        bb = b[:, None, :]
        lam_f, lam_p = b + a, rg * bb + c
        u = rg * bb
        with np.errstate(divide="ignore", invalid="ignore"):
            w_f = np.where(f > 0, f / lam_f, 0.0)
            w_p = np.where(p > 0, p / lam_p, 0.0)
            log_f = np.where(f > 0, f * np.log(lam_f), 0.0)
            log_p = np.where(p > 0, p * np.log(lam_p), 0.0)
            bend = np.where(p > 0, w_p / lam_p, 0.0)
            bend_f = np.where(f > 0, w_f / lam_f, 0.0)
        value = np.sum(lam_f - log_f, axis=1) + np.sum(lam_p - log_p, axis=(1, 2))
        value = value + self.saturated
        grad = np.sum(u * (1.0 - w_p), axis=2)
        # second derivatives of ln L: in t, in t and b, in b (all categories' terms)
        tt = (w_p - 1.0) * u - bend * u * u
        mixed = w_p - 1.0 - bend * u
        tb = rg * mixed
        alpha = -bend_f - np.sum(rg * rg * bend, axis=1)
        if self.varied is not None:
            g = rg / np.exp(t)[:, :, None]
            constraint = self.tau * g - self.aux * (self.log_tau + np.log(g)) + self.aux_saturated
            value = value + np.sum(np.where(self.varied, constraint, 0.0), axis=(1, 2))
            span = u / g
            interior = self.varied & (g > SHAPESYS_BOUNDS[0]) & (g < SHAPESYS_BOUNDS[1])
            delta = -(span * span * bend + self.aux / (g * g))
            beta = rg / g * (w_p - 1.0) - rg / g * span * g * bend
            tg = span * mixed
            with np.errstate(divide="ignore", invalid="ignore"):
                own = np.where(interior, tg / delta, 0.0)
            alpha = alpha - np.sum(np.where(interior, beta * beta / delta, 0.0), axis=1)
            tt = tt - own * tg
            tb = tb - own * beta
        moving = b > 0
        with np.errstate(divide="ignore", invalid="ignore"):
            inverse = np.where(moving & (alpha < 0), 1.0 / alpha, 0.0)
        hessian = -np.einsum("skn,sjn,sn->skj", tb, tb, inverse)
        hessian = hessian + np.einsum("kj,sk->skj", np.eye(grad.shape[1]), tt.sum(axis=2))
        return 2.0 * value, 2.0 * grad, -2.0 * hessian

    def _null_ratios(self) -> FloatArray:
        """Each category's ratio of the background-only fit without non-closure, ``(S, K)``."""
        ratios = self.p.sum(axis=2) / self.f.sum(axis=1)[:, None]
        clipped: FloatArray = np.clip(ratios, np.exp(self.t_low), np.exp(self.t_high))
        return clipped

    def background_only(self) -> tuple[FloatArray, FloatArray]:
        """The total transfer ratio and backgrounds of the background-only fit, closed form.

        Without non-closure each category's ratio is ``sum(p_k) / sum(f)`` and
        each bin's background ``(f + sum_k p_k) / (1 + sum_k R_k)``; with one
        it is a starting scale only (:meth:`null_expected` is the fit).
        """
        total = self._null_ratios().sum(axis=1)
        return total, (self.f + self.p.sum(axis=1)) / (1.0 + total[:, None])

    def null_expected(self) -> tuple[FloatArray, FloatArray, FloatArray | None]:
        """The failing, passing and auxiliary expectations of the background-only fit.

        Shapes ``(S, n)``, ``(S, K, n)`` and ``(S, K, n)`` (``None`` without
        a non-closure).
        """
        if self.varied is None:
            ratios = self._null_ratios()
            b = (self.f + self.p.sum(axis=1)) / (1.0 + ratios.sum(axis=1)[:, None])
            return b, ratios[:, :, None] * b[:, None, :], None
        zero = np.zeros(self.f.shape[0])
        s_pass, s_fail = np.zeros(self.p.shape[1:]), np.zeros(self.f.shape[1])
        t = self.transfer(zero, s_pass, s_fail)
        b, rg, _, _ = self._yields(zero, t, s_pass, s_fail)
        g = rg / np.exp(t)[:, :, None]
        return b, rg * b[:, None, :], np.where(self.varied, self.tau * g, self.aux)

    def asimov(self) -> CategoryProfile:
        """The likelihood of the background-only fit's expectations (the Asimov data set)."""
        fail_0, pass_0, aux_0 = self.null_expected()
        return CategoryProfile(fail_0, pass_0, self.ratios, self.nonclosure, aux_0)

    def transfer(self, mu: FloatArray, s_pass: FloatArray, s_fail: FloatArray) -> FloatArray:
        """The logarithms of the transfer ratios that maximise the likelihood at ``mu``.

        Newton steps (the Hessian of :meth:`curvature`; a step scaled by the
        diagonal where it is not positive definite) from the last fit's
        ratios for as many data sets, or from the background-only ones, each
        step halved until ``-2 ln L`` does not rise, within the ratios' bounds.
        """
        count = self.ratios.size
        warm = self._last.get(mu.size)
        start = np.log(self._null_ratios()) if warm is None else warm
        t = np.broadcast_to(start, (mu.size, count)).copy()
        value, grad, hessian = self.curvature(mu, t, s_pass, s_fail)
        identity = np.eye(count, dtype=bool)
        for _ in range(NEWTON_STEPS):
            # a ratio at its bound, the likelihood rising beyond it, stays there
            held = ((t <= self.t_low) & (grad > 0)) | ((t >= self.t_high) & (grad < 0))
            coupled = held[:, :, None] | held[:, None, :]
            hessian = np.where(coupled, np.where(identity, 1.0, 0.0), hessian)
            grad = np.where(held, 0.0, grad)
            convex = np.linalg.eigvalsh(hessian)[:, 0] > 0
            safe = np.where(convex[:, None, None], hessian, np.eye(count))
            newton = np.linalg.solve(safe, -grad[:, :, None])[:, :, 0]
            diagonal = np.maximum(np.abs(np.diagonal(hessian, axis1=1, axis2=2)), 1e-300)
            with np.errstate(over="ignore", invalid="ignore"):
                step = np.where(convex[:, None], newton, -grad / diagonal)
                largest = np.max(np.abs(step), axis=1, keepdims=True)
                step = step * np.minimum(1.0, MAX_STEP / np.maximum(largest, 1e-300))
            step = np.nan_to_num(step)
            full = convex & (largest[:, 0] <= MAX_STEP)
            done = np.zeros(mu.size, dtype=bool)
            scale = np.ones(mu.size)
            new_t, new_value = t.copy(), value.copy()
            new_grad, new_hessian = grad.copy(), hessian.copy()
            for _ in range(HALVINGS):
                trial = np.clip(t + scale[:, None] * step, self.t_low, self.t_high)
                trial_value, trial_grad, trial_hessian = self.curvature(mu, trial, s_pass, s_fail)
                good = ~done & (trial_value <= value + self.rounding)
                new_t = np.where(good[:, None], trial, new_t)
                new_value = np.where(good, trial_value, new_value)
                new_grad = np.where(good[:, None], trial_grad, new_grad)
                new_hessian = np.where(good[:, None, None], trial_hessian, new_hessian)
                done |= good
                if np.all(done):
                    break
                scale = np.where(done, scale, 0.5 * scale)
                full &= done
            moved = np.max(np.abs(new_t - t), axis=1)
            t, value, grad, hessian = new_t, new_value, new_grad, new_hessian
            if np.all((moved == 0) | (full & (moved <= STEP_TOLERANCE))):
                break
        self._last[mu.size] = t
        fitted: FloatArray = t
        return fitted

    def conditional(self, mu: FloatArray, s_pass: FloatArray, s_fail: FloatArray) -> FloatArray:
        """``-2 ln L`` maximised over the backgrounds at fixed ``mu``."""
        if not np.any(mu) and self.varied is None:
            t = np.broadcast_to(np.log(self._null_ratios()), (mu.size, self.ratios.size))
        else:
            t = self.transfer(mu, s_pass, s_fail)
        return self.deviance(mu, t, s_pass, s_fail)[0]

    def slope(self, mu: FloatArray, s_pass: FloatArray, s_fail: FloatArray) -> FloatArray:
        """The derivative in ``mu`` of the profiled ``-2 ln L`` (the envelope theorem)."""
        return self.deviance(mu, self.transfer(mu, s_pass, s_fail), s_pass, s_fail)[1]

    def free(self, s_pass: FloatArray, s_fail: FloatArray) -> tuple[FloatArray, FloatArray]:
        """The best ``mu >= 0`` and ``-2 ln L`` at the maximum."""
        k = self.f.shape[0]

        def slope(mu: FloatArray) -> FloatArray:
            return self.slope(mu, s_pass, s_fail)

        zero = np.zeros(k)
        signal = slope(zero) < 0
        ratio, b = self.background_only()
        total = np.sum(s_pass, axis=(-2, -1))
        high = np.sqrt(ratio * b.sum(axis=1) + 1.0) / total
        for _ in range(BISECTIONS):
            falling = signal & (slope(high) < 0)
            if not np.any(falling):
                break
            high = np.where(falling, 4.0 * high, high)
        mu_hat = np.where(signal, increasing_root(slope, zero, high), 0.0)
        return mu_hat, self.conditional(mu_hat, s_pass, s_fail)
