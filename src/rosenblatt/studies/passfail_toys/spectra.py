"""The expected spectra of a pseudo-experiment in bins of ``x``, passing and failing a cut.

The background is that of :class:`~rosenblatt.studies.toys.population.Population`
(``x`` falling exponentially on [0, 1], the score ``y`` given ``x`` a Beta
distribution whose mean rises with ``x``); the resonance is a Gaussian in ``x`` of
the configured width with the population's signal distribution of ``y``. A cut
passes the events with ``y`` above a threshold ``y*(x)``:

- ``exact``: the population's conditional quantile at ``y0``, so that the
  background passes with probability ``1 - y0`` at every ``x``;
- a fitted transform: the smallest ``y`` where its ``gamma`` reaches ``y0``, the
  transform fitted on the pseudo-experiment's own defining sample;
- ``score``: one threshold on the raw score, passing the same fraction ``1 - y0``
  of the whole background, so that the passing fraction rises with ``x``.

The expected events in each bin are integrals over ``x`` (Gauss-Legendre nodes);
a data set's counts in the bins are independent Poisson numbers of these means.

With keyed bootstrap replicas (``n_boot``), a fitted transform is fitted with
:func:`rosenblatt.bootstrap` (``keyed=True``) on the defining sample, which is
then the background simulation too: its per-bin non-closure of the pass/fail
ratio is measured on it, once with the simulation's statistical error alone
(:func:`~rosenblatt.abcd.transfer.transfer_check`, the fit's term without the
transform's own fit) and once with the keyed bootstrap's error
(:func:`~rosenblatt.abcd.transfer_correction.transfer_correction`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy import special, stats

from rosenblatt.abcd.templates import SignalTemplates
from rosenblatt.studies.abcd.config import TransformConfig
from rosenblatt.studies.passfail_toys.config import PassfailToysConfig
from rosenblatt.studies.toys.population import Population, transform_threshold
from rosenblatt.transforms import ConditionalCDFTransform
from rosenblatt.typing import FloatArray, Int64Array

__all__ = ["KEYED", "STATISTICAL", "Spectra", "expected_spectra", "scan_masses"]

#: the non-closure per bin with the keyed bootstrap's error (the transform's fit in it)
KEYED = "keyed bootstrap"
#: the non-closure per bin with the simulation's statistical error alone
STATISTICAL = "statistical"


#: sub-intervals and Gauss-Legendre nodes per sub-interval of each bin
PANELS, NODES = 4, 8
#: bisection steps of the raw score's threshold
BISECTIONS = 60


@dataclass(frozen=True)
class Spectra:
    """One pseudo-experiment's expected background and signal in bins of ``x``.

    Attributes
    ----------
    edges
        The bin edges of ``x``.
    background_pass, background_fail
        The background's expected events passing and failing the cut, per bin.
    templates
        The resonance's events passing and failing at ``mu = 1``, one row per
        mass of the scan.
    nonclosure
        With keyed replicas, the relative non-closure per bin measured on the
        defining sample: :data:`KEYED` with the bootstrap's error,
        :data:`STATISTICAL` with the statistical error alone (empty without).
    """

    edges: FloatArray
    background_pass: FloatArray
    background_fail: FloatArray
    templates: SignalTemplates
    nonclosure: dict[str, FloatArray] = field(default_factory=dict)


def scan_masses(cfg: PassfailToysConfig) -> FloatArray:
    """The bump hunt's mass grid, the injected masses added."""
    low, high, step = cfg.spectrum.scan
    grid = np.arange(low, high + 0.5 * step, step)
    return np.unique(np.round(np.concatenate([grid, cfg.spectrum.masses]), 10))


def _nodes(edges: FloatArray) -> tuple[FloatArray, FloatArray, Int64Array]:
    """Gauss-Legendre nodes, weights and the bin of each node."""
    t, w = np.polynomial.legendre.leggauss(NODES)
    fine = np.linspace(edges[:-1], edges[1:], PANELS + 1, axis=1)
    low, high = fine[:, :-1, None], fine[:, 1:, None]
    half = 0.5 * (high - low)
    x = (0.5 * (low + high) + half * t).reshape(-1)
    weights = (half * w).reshape(-1)
    bins = np.repeat(np.arange(edges.size - 1), PANELS * NODES)
    return x, weights, bins


def _binned(bins: Int64Array, values: FloatArray, size: int) -> FloatArray:
    """The sum of ``values`` in each bin."""
    return np.bincount(bins, values, minlength=size).astype(np.float64)


def _raw_threshold(population: Population, y0: float) -> float:
    """The raw score's cut passing the fraction ``1 - y0`` of the whole background."""
    x, w, _ = _nodes(np.linspace(0.0, 1.0, 65))
    density = w * population.background_x_density(x)
    low, high = 0.0, 1.0
    for _ in range(BISECTIONS):
        mid = 0.5 * (low + high)
        passing = float(np.sum(density * population.background_y_sf(np.full_like(x, mid), x)))
        if passing > (1.0 - y0) * float(np.sum(density)):
            low = mid
        else:
            high = mid
    return 0.5 * (low + high)


def defining_rng(cfg: PassfailToysConfig, toy: int) -> np.random.Generator:
    """The generator of pseudo-experiment ``toy``'s defining sample."""
    return np.random.default_rng((cfg.seed, toy, 0))


def expected_spectra(
    cfg: PassfailToysConfig, score: str, transform: TransformConfig | None, toy: int
) -> Spectra:
    """The expected spectra of pseudo-experiment ``toy`` cut on ``score``.

    Parameters
    ----------
    cfg
        The configuration.
    score
        ``"exact"``, ``"score"`` or the name of a fitted transform.
    transform
        The transform's configuration (``None`` for ``exact`` and ``score``).
    toy
        The pseudo-experiment's number: it seeds the defining sample.
    """
    spectrum = cfg.spectrum
    population = Population(cfg.population)
    edges = np.linspace(0.0, 1.0, spectrum.bins + 1)
    x, w, bins = _nodes(edges)
    nonclosure: dict[str, FloatArray] = {}
    if transform is not None:
        defining = population.background(defining_rng(cfg, toy), cfg.n_defining)
        if cfg.replicas:
            fitted, nonclosure = _keyed_fit(cfg, transform, defining, edges, toy)
        else:
            fitted = transform.build()
            fitted.fit(*defining)
        threshold = transform_threshold(fitted, spectrum.y0)(x)
    elif score == "exact":
        a, b = population._beta(x)
        threshold = np.asarray(special.betaincinv(a, b, spectrum.y0), dtype=np.float64)
    else:
        threshold = np.full_like(x, _raw_threshold(population, spectrum.y0))
    density = w * population.background_x_density(x) * cfg.population.background
    passing = density * population.background_y_sf(threshold, x)
    background_pass = _binned(bins, passing, spectrum.bins)
    background_fail = _binned(bins, density - passing, spectrum.bins)
    masses = scan_masses(cfg)
    signal_pass = population.signal_y_sf(threshold)
    shape = stats.norm.pdf(x[None, :], masses[:, None], spectrum.resolution) * w
    signal = spectrum.signal_yield * shape
    s_pass = np.stack([_binned(bins, row * signal_pass, spectrum.bins) for row in signal])
    s_fail = np.stack([_binned(bins, row * (1 - signal_pass), spectrum.bins) for row in signal])
    return Spectra(
        edges=edges,
        background_pass=background_pass,
        background_fail=background_fail,
        templates=SignalTemplates(masses=masses, edges=edges, passing=s_pass, failing=s_fail),
        nonclosure=nonclosure,
    )


def _keyed_fit(
    cfg: PassfailToysConfig,
    transform: TransformConfig,
    defining: tuple[FloatArray, FloatArray],
    edges: FloatArray,
    toy: int,
) -> tuple[ConditionalCDFTransform, dict[str, FloatArray]]:
    """The transform fitted with its keyed ensemble; the per-bin non-closure on its sample.

    The defining sample is the background simulation: each replica's
    spectra are taken with unit weights and with its keyed Poisson counts.
    """
    import rosenblatt as rb
    from rosenblatt.abcd.transfer import transfer_check
    from rosenblatt.abcd.transfer_correction import transfer_correction
    from rosenblatt.transforms.ensemble import keyed_poisson_weights

    x, y = defining
    seed = int(np.random.default_rng((cfg.seed, toy, 2)).integers(2**31))
    ensemble = rb.bootstrap(transform.build(), x, y, n=cfg.replicas, seed=seed, keyed=True)
    nominal = ensemble.nominal_
    one = np.ones(x.size)
    index = np.clip(np.searchsorted(edges, x, side="right") - 1, 0, edges.size - 2)

    def split(gamma: FloatArray, weight: FloatArray) -> tuple[FloatArray, FloatArray]:
        passed = gamma >= cfg.spectrum.y0
        fail = _binned(index, np.where(passed, 0.0, weight), edges.size - 1)
        return fail, _binned(index, np.where(passed, weight, 0.0), edges.size - 1)

    replicas, resampled = [], []
    for replica, draw in zip(ensemble.replicas_, ensemble.replica_draws_, strict=True):
        gamma = replica.transform(x, y)
        counts = keyed_poisson_weights(x, y, seed, draw).astype(np.float64)
        replicas.append(split(gamma, one))
        resampled.append(split(gamma, counts))
    fail, passed = split(nominal.transform(x, y), one)
    centres = 0.5 * (edges[1:] + edges[:-1])
    statistical = transfer_check(fail, passed, centres).uncertainty
    keyed = transfer_correction(fail, passed, replicas, resampled).uncertainty
    return nominal, {KEYED: keyed, STATISTICAL: statistical}
