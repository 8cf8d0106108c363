"""The signal of a bump hunt: its expected yields in bins of ``x``, one row per mass hypothesis.

:class:`SignalTemplates` holds per mass hypothesis the signal's yields at
``mu = 1`` passing and failing the cut; :func:`gaussian_templates` makes them
Gaussian resonances of a given resolution (absolute, or relative to the
mass), :func:`signal_templates` takes them from the signal's histograms per
mass point. :func:`~rosenblatt.abcd.bumphunt.bump_hunt` tests each hypothesis.

With several cuts as disjoint categories
(:func:`~rosenblatt.abcd.passfail.passfail_categories_workspace`) the
passing yields have one row per category: shape ``(m, K, n)``.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from rosenblatt.typing import ArrayLike, FloatArray

__all__ = ["SignalTemplates", "gaussian_templates", "signal_templates"]


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
        The yields passing and failing the cut, shape ``(m, n)``; with ``K``
        categories passing, ``passing`` has shape ``(m, K, n)``, one row per
        category, and ``failing`` (the region below the lowest cut) ``(m, n)``.
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
            categorised = name == "passing" and array.ndim == 3
            if (array.shape[::2] if categorised else array.shape) != shape or (
                categorised and array.shape[1] == 0
            ):
                expected = "(masses, categories, bins)" if categorised else "(masses, bins)"
                msg = f"{name} has shape {array.shape}, expected {expected} with {shape}"
                raise ValueError(msg)
            if not np.all(np.isfinite(array)) or np.any(array < 0):
                msg = f"{name} must be finite and non-negative"
                raise ValueError(msg)
            object.__setattr__(self, name, array)
        total = self.passing.reshape(masses.size, -1).sum(axis=1)
        if np.any(total <= 0):
            bad = float(masses[np.flatnonzero(total <= 0)[0]])
            msg = f"the passing template of mass {bad:g} has no yield"
            raise ValueError(msg)
        object.__setattr__(self, "masses", masses)
        object.__setattr__(self, "edges", edges)

    @property
    def categories(self) -> int | None:
        """The number of passing categories; ``None`` for one cut (``passing`` of shape ``(m, n)``)."""
        return int(self.passing.shape[1]) if self.passing.ndim == 3 else None


def gaussian_templates(
    edges: ArrayLike,
    masses: ArrayLike,
    resolution: float,
    *,
    relative: bool = False,
    signal_yield: float = 1.0,
    efficiency: float | Sequence[float] = 1.0,
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
        The fraction of the signal passing the cut; a sequence gives the
        fraction in each of several categories (the templates' ``passing``
        then has shape ``(m, K, n)``).
    leakage
        The fraction failing it (default ``1 - efficiency``, with categories
        one minus their sum; 0 for a signal left out of the failing region).

    Returns
    -------
    SignalTemplates

    Examples
    --------
    >>> import numpy as np
    >>> from rosenblatt.abcd.templates import gaussian_templates
    >>> t = gaussian_templates(np.linspace(0, 1, 11), [0.3, 0.5], 0.05, efficiency=0.4)
    >>> t.passing.shape, round(float(t.passing[1].sum() + t.failing[1].sum()), 6)
    ((2, 10), 1.0)
    """
    from scipy import stats

    edges = np.asarray(edges, dtype=np.float64)
    masses = np.asarray(masses, dtype=np.float64)
    shares = np.asarray(efficiency, dtype=np.float64)
    if shares.ndim > 1 or shares.size == 0:
        msg = f"efficiency must be a number or a sequence of numbers, got {efficiency!r}"
        raise ValueError(msg)
    if shares.ndim and not shares.sum() <= 1.0 + 1e-12:
        msg = f"the categories' efficiencies sum to {float(shares.sum())!r}, more than 1"
        raise ValueError(msg)
    if leakage is None:
        leakage = max(1.0 - float(shares.sum()), 0.0) if shares.ndim else 1.0 - float(shares)
    for name, value in (*(("efficiency", float(v)) for v in shares.ravel()), ("leakage", leakage)):
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
        passing=signal_yield * shares[None, :, None] * shape[:, None, :]
        if shares.ndim
        else signal_yield * float(shares) * shape,
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
        With several categories, ``passing`` is an array of shape
        ``(masses, categories, bins)``.
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
