"""Jet clustering of massless particles with FastJet on awkward arrays.

Particles are awkward arrays of records with fields ``pt``, ``eta`` and ``phi``
(GeV, massless), one jagged list per event. Jets are returned as
:mod:`vector` ``Momentum4D`` records with fields ``pt``, ``eta``, ``phi`` and
``mass`` (GeV), sorted by decreasing ``pt`` within each event. Events without
particles give events without jets.
"""

from __future__ import annotations

from typing import NamedTuple

import awkward as ak
import numpy as np

from rosenblatt._extras import optional_imports
from rosenblatt.hep.momenta import (
    PARTICLE_FIELDS,
    as_cartesian,
    as_collider,
    as_particle_lists,
    flat_components,
)

with optional_imports(__name__):
    import fastjet

__all__ = [
    "ALGORITHMS",
    "ClusteredJets",
    "cluster_jets",
    "cluster_jets_with_constituents",
    "cluster_sequence",
    "particles_to_momentum4d",
]

#: accepted ``algorithm`` names -> attribute of the :mod:`fastjet` module
ALGORITHMS = {
    "antikt": "antikt_algorithm",
    "kt": "kt_algorithm",
    "cambridge": "cambridge_algorithm",
}


class ClusteredJets(NamedTuple):
    """Jets of each event and the particles that make them.

    Attributes
    ----------
    jets : awkward.Array
        ``Momentum4D`` records (``pt, eta, phi, mass``), events x jets, sorted by
        decreasing ``pt``.
    constituents : awkward.Array
        ``Momentum4D`` records (``px, py, pz, E``, the coordinates FastJet
        works in), events x jets x particles, in the same jet order as ``jets``.
    """

    jets: ak.Array
    constituents: ak.Array


def particles_to_momentum4d(particles: ak.Array) -> ak.Array:
    """Return massless particles as float64 cartesian :mod:`vector` ``Momentum4D`` records.

    Parameters
    ----------
    particles : awkward.Array
        Records with fields ``pt``, ``eta``, ``phi``, one jagged list per event
        (or event records with jagged ``pt``, ``eta``, ``phi`` fields).

    Returns
    -------
    awkward.Array
        ``Momentum4D`` records with fields ``px, py, pz, E`` (massless).

    Raises
    ------
    ValueError
        If a field is missing, the array is not one list of particles per event,
        or a value is NaN or infinite.
    """
    particles = as_particle_lists(particles)
    missing = [name for name in PARTICLE_FIELDS if name not in ak.fields(particles)]
    if missing:
        raise ValueError(
            f"particles: missing field(s) {missing}; expected records with fields "
            f"{list(PARTICLE_FIELDS)}, got {ak.fields(particles)}"
        )
    if particles.ndim != 2:
        raise ValueError(
            f"particles: expected one list of particles per event (2 dimensions), "
            f"got {particles.ndim} dimensions (type {particles.type})"
        )
    pt, eta, phi = flat_components(particles, PARTICLE_FIELDS)
    finite = np.isfinite(pt) & np.isfinite(eta) & np.isfinite(phi)
    if not np.all(finite):
        counts = ak.to_numpy(ak.num(particles, axis=1))
        bad_events = np.unique(np.repeat(np.arange(len(counts)), counts)[~finite])
        raise ValueError(
            f"particles: {int(np.sum(~finite))} particle(s) in {len(bad_events)} event(s) have "
            f"non-finite pt, eta or phi (first event index {int(bad_events[0])})"
        )
    return as_cartesian(ak.zip({name: particles[name] for name in PARTICLE_FIELDS}))


def cluster_sequence(
    particles: ak.Array, radius: float = 1.0, algorithm: str = "antikt"
) -> fastjet.ClusterSequence:
    """Run FastJet on every event and return its awkward ``ClusterSequence``.

    Parameters
    ----------
    particles : awkward.Array
        Records with fields ``pt``, ``eta``, ``phi`` (GeV, massless), one jagged
        list per event.
    radius : float, default 1.0
        Jet radius parameter R.
    algorithm : {"antikt", "kt", "cambridge"}, default "antikt"
        Sequential recombination algorithm (E-scheme recombination).

    Returns
    -------
    fastjet.ClusterSequence
        The clustering history of all events (awkward interface).
    """
    if algorithm not in ALGORITHMS:
        raise ValueError(
            f"algorithm: unknown jet algorithm {algorithm!r}; choose one of {sorted(ALGORITHMS)}"
        )
    if not np.isfinite(radius) or radius <= 0:
        raise ValueError(f"radius: the jet radius must be a positive number, got {radius!r}")
    definition = fastjet.JetDefinition(getattr(fastjet, ALGORITHMS[algorithm]), float(radius))
    return fastjet.ClusterSequence(particles_to_momentum4d(particles), definition)


def cluster_jets_with_constituents(
    particles: ak.Array, radius: float = 1.0, algorithm: str = "antikt"
) -> ClusteredJets:
    """Cluster jets and return them with their constituents, sorted by decreasing pT.

    Parameters
    ----------
    particles : awkward.Array
        Records with fields ``pt``, ``eta``, ``phi`` (GeV, massless), one jagged
        list per event.
    radius : float, default 1.0
        Jet radius parameter R.
    algorithm : {"antikt", "kt", "cambridge"}, default "antikt"
        Sequential recombination algorithm.

    Returns
    -------
    ClusteredJets
        ``jets`` (``pt, eta, phi, mass``, events x jets) and ``constituents``
        (``px, py, pz, E``, events x jets x particles).
    """
    sequence = cluster_sequence(particles, radius=radius, algorithm=algorithm)
    jets = as_collider(sequence.inclusive_jets())
    constituents = sequence.constituents()
    order = ak.argsort(jets.pt, axis=1, ascending=False, stable=True)
    return ClusteredJets(jets=jets[order], constituents=constituents[order])


def cluster_jets(particles: ak.Array, radius: float = 1.0, algorithm: str = "antikt") -> ak.Array:
    """Cluster the particles of each event into jets, sorted by decreasing pT.

    Parameters
    ----------
    particles : awkward.Array
        Records with fields ``pt``, ``eta``, ``phi`` (GeV, massless), one jagged
        list per event.
    radius : float, default 1.0
        Jet radius parameter R.
    algorithm : {"antikt", "kt", "cambridge"}, default "antikt"
        Sequential recombination algorithm (E-scheme recombination).

    Returns
    -------
    awkward.Array
        ``Momentum4D`` records with fields ``pt, eta, phi, mass``, events x jets.

    Examples
    --------
    >>> import awkward as ak
    >>> particles = ak.Array([[{"pt": 50.0, "eta": 0.0, "phi": 0.0},
    ...                        {"pt": 30.0, "eta": 0.1, "phi": 0.2}], []])
    >>> jets = cluster_jets(particles, radius=1.0)
    >>> ak.num(jets).tolist()
    [1, 0]
    """
    return cluster_jets_with_constituents(particles, radius=radius, algorithm=algorithm).jets
