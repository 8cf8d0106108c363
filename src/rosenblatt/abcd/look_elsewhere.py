"""The look-elsewhere effect of the bump hunt: the global significance over the grid.

The local significance of :func:`~rosenblatt.abcd.bumphunt.bump_hunt` at its
largest is not the probability of so large a local excess anywhere on the grid
of masses. :func:`global_significance` gives that probability two ways: from
pseudo-experiments of the background-only fit, each scanned over the grid like
the data (:func:`~rosenblatt.abcd.bumphunt.local_significance_scan`), and from
the number of upcrossings of a low level of ``q0`` (:func:`upcrossings`) of
Gross and Vitells (arXiv:1005.1891). One cut, or several as categories with
one ``mu``, as for the bump hunt.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

from rosenblatt.abcd._hunt_inputs import first_category, hunt_likelihood, hunt_spectra, single_cut
from rosenblatt.abcd.bumphunt import local_significance_scan
from rosenblatt.abcd.templates import SignalTemplates
from rosenblatt.typing import ArrayLike, FloatArray, Int64Array

__all__ = ["GlobalSignificance", "global_significance", "upcrossings"]


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
    ratio: float | ArrayLike | None = None,
    nonclosure: ArrayLike | None = None,
) -> GlobalSignificance:
    """The look-elsewhere effect over the grid: pseudo-experiments and Gross-Vitells.

    The pseudo-experiments are drawn from the background-only fit to the data
    (Poisson counts in each bin of both regions; without non-closure its
    closed form: transfer ratio ``sum(pass) / sum(fail)``, each bin's
    background ``(fail + pass) / (1 + ratio)``), each scanned over the grid
    like the data. With a non-closure per bin, each pseudo-experiment also
    draws the auxiliary counts of its constraints (Poisson, of mean ``tau g``
    at the fitted factors ``g``), as pyhf samples a ``shapesys``. With
    categories, each category's passing counts are drawn alike about its own
    transfer ratio.

    Parameters
    ----------
    pass_counts, fail_counts, edges, templates
        As for :func:`~rosenblatt.abcd.bumphunt.bump_hunt` (passing ``(K, n)`` with
        categories).
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
        As for :func:`~rosenblatt.abcd.bumphunt.bump_hunt`.

    Returns
    -------
    GlobalSignificance
    """
    from scipy import stats

    if int(n_toys) < 1:
        msg = f"n_toys must be at least 1, got {n_toys!r}"
        raise ValueError(msg)
    failing, passing = hunt_spectra(pass_counts, fail_counts, edges, templates)
    if passing.ndim == 2 and passing.shape[0] == 1:
        passing, templates = passing[0], single_cut(templates)
        ratio, nonclosure = first_category(ratio, nonclosure)
    likelihood, fitted_ratio, relative = hunt_likelihood(failing, passing, ratio, nonclosure)
    observed = local_significance_scan(
        passing, failing, templates, ratio=ratio, nonclosure=relative
    )
    local_z = float(observed.max()) if threshold is None else float(threshold)
    expected_fail, expected_pass, expected_aux = likelihood.null_expected()
    rng = np.random.default_rng(seed)
    size = (int(n_toys), expected_fail.shape[1])
    shape = (int(n_toys), *expected_pass.shape[1:])
    toy_fail = rng.poisson(np.broadcast_to(expected_fail, size)).astype(np.float64)
    toy_pass = rng.poisson(np.broadcast_to(expected_pass, shape))
    toy_aux = (
        None
        if expected_aux is None
        else rng.poisson(np.broadcast_to(expected_aux, shape)).astype(np.float64)
    )
    scans = local_significance_scan(
        toy_pass.astype(np.float64),
        toy_fail,
        templates,
        ratio=fitted_ratio,
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
