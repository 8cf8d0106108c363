"""The toy population of the pseudo-experiments, and its exact yields under any fitted score cut.

The background's ``x`` falls exponentially on [0, 1] and its score ``y``
given ``x`` is a Beta distribution whose mean rises with ``x``; the signal is
a Gaussian peak in ``x`` with a Beta distribution in ``y``. Both densities
are known, so the expected number of events that a fitted transform puts in
each ABCD region is an integral over ``x``: at each ``x`` the transform passes
the events with ``y`` above ``y*(x)``, the smallest ``y`` where ``gamma(x, y)``
reaches the cut (found by bisection, as ``gamma`` is monotone in ``y``), and
the population's conditional distribution gives their fraction.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy import special, stats

from rosenblatt.studies.toys.config import PopulationConfig
from rosenblatt.typing import FloatArray

__all__ = ["Population", "RegionYields"]


#: sub-intervals and Gauss-Legendre nodes per sub-interval of the integrals over x
PANELS, NODES = 128, 8
#: bisection steps of y*(x) (to 2^-50 of [0, 1])
BISECTIONS = 50


@dataclass(frozen=True)
class RegionYields:
    """Expected events in the regions A, B, C, D of one cut."""

    a: float
    b: float
    c: float
    d: float

    def as_tuple(self) -> tuple[float, float, float, float]:
        """``(A, B, C, D)``."""
        return self.a, self.b, self.c, self.d


def _panel_nodes(low: float, high: float) -> tuple[FloatArray, FloatArray]:
    """Composite Gauss-Legendre nodes and weights on ``[low, high]``."""
    t, w = np.polynomial.legendre.leggauss(NODES)
    edges = np.linspace(low, high, PANELS + 1)
    half = 0.5 * np.diff(edges)[:, None]
    mid = 0.5 * (edges[1:] + edges[:-1])[:, None]
    return (mid + half * t).ravel(), (half * w).ravel()


@dataclass(frozen=True)
class Population:
    """The toy background and signal of :class:`~rosenblatt.studies.toys.config.PopulationConfig`."""

    config: PopulationConfig

    # ------------------------------------------------------------ densities
    def background_x_density(self, x: FloatArray) -> FloatArray:
        """The background's density in ``x`` on [0, 1]."""
        slope = self.config.slope
        if slope == 0:
            return np.ones_like(x)
        density: FloatArray = slope * np.exp(-slope * x) / -np.expm1(-slope)
        return density

    def _beta(self, x: FloatArray) -> tuple[FloatArray, FloatArray]:
        intercept, rise = self.config.mean
        mean = np.clip(intercept + rise * x, 1e-6, 1 - 1e-6)
        return mean * self.config.concentration, (1 - mean) * self.config.concentration

    def background_y_sf(self, y: FloatArray, x: FloatArray) -> FloatArray:
        """``P(Y >= y | x)`` of the background."""
        a, b = self._beta(x)
        return np.asarray(special.betaincc(a, b, np.clip(y, 0.0, 1.0)), dtype=np.float64)

    def signal_x_density(self, x: FloatArray) -> FloatArray:
        """The signal's density in ``x``: its Gaussian truncated to [0, 1]."""
        mean, sd = self.config.signal_x
        norm = stats.norm.cdf(1.0, mean, sd) - stats.norm.cdf(0.0, mean, sd)
        return np.asarray(stats.norm.pdf(x, mean, sd) / norm, dtype=np.float64)

    def signal_y_sf(self, y: FloatArray) -> FloatArray:
        """``P(Y >= y)`` of the signal."""
        a, b = self.config.signal_y
        return np.asarray(special.betaincc(a, b, np.clip(y, 0.0, 1.0)), dtype=np.float64)

    # ------------------------------------------------------------- samples
    def background(self, rng: np.random.Generator, n: int) -> tuple[FloatArray, FloatArray]:
        """``n`` background events ``(x, y)``."""
        slope = self.config.slope
        u = rng.random(n)
        x = u if slope == 0 else -np.log1p(u * np.expm1(-slope)) / slope
        a, b = self._beta(x)
        return x, rng.beta(a, b)

    def signal(self, rng: np.random.Generator, n: int) -> tuple[FloatArray, FloatArray]:
        """``n`` signal events ``(x, y)``, ``x`` within [0, 1]."""
        mean, sd = self.config.signal_x
        low, high = stats.norm.cdf([0.0, 1.0], mean, sd)
        x = stats.norm.ppf(rng.uniform(low, high, n), mean, sd)
        return np.asarray(x, dtype=np.float64), rng.beta(*self.config.signal_y, n)

    # --------------------------------------------------------------- yields
    def yields(
        self,
        threshold: Callable[[FloatArray], FloatArray],
        x0: float,
        n_background: float,
        n_signal: float,
    ) -> tuple[RegionYields, RegionYields]:
        """Expected background and signal events in A, B, C, D.

        Parameters
        ----------
        threshold
            ``y*(x)``: events at ``x`` with ``y >= y*(x)`` pass the score cut.
        x0
            The cut on ``x``.
        n_background, n_signal
            Expected events of each in the data set.
        """
        out = []
        for density, sf, total in (
            (self.background_x_density, self.background_y_sf, n_background),
            (self.signal_x_density, lambda y, _x: self.signal_y_sf(y), n_signal),
        ):
            parts = []
            for low, high in ((x0, 1.0), (0.0, x0)):
                x, w = _panel_nodes(low, high)
                weight = w * density(x)
                passing = float(np.sum(weight * sf(threshold(x), x)))
                parts += [total * passing, total * (float(np.sum(weight)) - passing)]
            out.append(RegionYields(*parts))
        return out[0], out[1]


def transform_threshold(transform: object, y0: float) -> Callable[[FloatArray], FloatArray]:
    """``y*(x)`` of a fitted transform: the smallest ``y`` with ``gamma(x, y) >= y0``."""

    def threshold(x: FloatArray) -> FloatArray:
        low, high = np.zeros_like(x), np.ones_like(x)
        for _ in range(BISECTIONS):
            mid = 0.5 * (low + high)
            above = np.asarray(transform.transform(x, mid)) >= y0  # type: ignore[attr-defined]
            high = np.where(above, mid, high)
            low = np.where(above, low, mid)
        return high

    return threshold


def constant_threshold(y0: float) -> Callable[[FloatArray], FloatArray]:
    """``y*(x) = y0`` for every ``x``: a cut on the raw score."""

    def threshold(x: FloatArray) -> FloatArray:
        return np.full_like(x, y0)

    return threshold
