"""Visible final-state particles of Pythia events, in the LHC Olympics layout.

An *event array* holds one record per event with the jagged fields ``pt``,
``eta``, ``phi`` (massless particles, GeV, ordered by decreasing ``pt``) and the
scalar fields ``label`` (1 signal, 0 background) and ``weight``. A *particle
array* holds one jagged list of ``pt, eta, phi`` records per event; it is what
the jet clustering takes. :func:`event_particles` and :func:`make_events`
convert between the two.

The particles of an event are Pythia's final-state particles without the
neutrinos, inside a tracker-like acceptance, ``|eta| < ETA_MAX`` and
``pt > PT_MIN``, treated as massless (as in the LHC Olympics files). The pT
threshold is that of charged-particle tracking at the LHC; without it the soft
underlying event adds about 8 GeV to the median mass of the lighter
large-radius jet of the signal (123 instead of 115 GeV for a 100 GeV Y). An event keeps at most
``MAX_PARTICLES`` of them, the hardest ones, which is the room the LHC Olympics
HDF5 layout has; :func:`visible_final_state` counts the particles it leaves
out so that callers can record them.
"""

from __future__ import annotations

from typing import NamedTuple

import awkward as ak
import numpy as np

from rosenblatt.typing import ArrayLike, Int64Array

__all__ = [
    "ETA_MAX",
    "MAX_PARTICLES",
    "NEUTRINO_IDS",
    "PARTICLE_FIELDS",
    "PT_MIN",
    "VisibleParticles",
    "event_particles",
    "make_events",
    "visible_final_state",
]

#: pseudorapidity acceptance of the particles (tracker coverage)
ETA_MAX = 2.5

#: transverse momentum threshold of the particles in GeV
PT_MIN = 0.5

#: particles per event in the LHC Olympics layout (700 x (pT, eta, phi) columns)
MAX_PARTICLES = 700

#: PDG ids (absolute values) of the invisible final-state particles
NEUTRINO_IDS = (12, 14, 16)

#: fields of a particle record
PARTICLE_FIELDS = ("pt", "eta", "phi")


class VisibleParticles(NamedTuple):
    """Visible particles of a batch of events and what the particle limit left out.

    Attributes
    ----------
    particles : awkward.Array
        ``pt, eta, phi`` records, events x particles, by decreasing ``pt``.
    n_dropped : numpy.ndarray
        Per event, how many accepted particles were beyond the particle limit.
    """

    particles: ak.Array
    n_dropped: Int64Array


def visible_final_state(
    pythia_events: ak.Array,
    eta_max: float = ETA_MAX,
    pt_min: float = PT_MIN,
    max_particles: int = MAX_PARTICLES,
) -> VisibleParticles:
    """Select the visible final-state particles of Pythia events.

    Parameters
    ----------
    pythia_events : awkward.Array
        Events as returned by ``pythia8mc.Pythia.nextBatch`` (field ``prt`` with
        ``id``, ``status`` and four-momentum ``p``).
    eta_max : float, default :data:`ETA_MAX`
        Keep particles with ``|eta| < eta_max``.
    pt_min : float, default :data:`PT_MIN`
        Keep particles with ``pt > pt_min`` (GeV, at least 0).
    max_particles : int, default :data:`MAX_PARTICLES`
        Keep at most this many particles per event, the hardest ones.

    Returns
    -------
    VisibleParticles
        The massless ``pt, eta, phi`` records of each event (decreasing ``pt``)
        and the number of particles per event beyond ``max_particles``.
    """
    record = pythia_events.prt
    abs_id = abs(record.id)
    visible = (record.status > 0) & (abs_id != NEUTRINO_IDS[0])
    for neutrino in NEUTRINO_IDS[1:]:
        visible = visible & (abs_id != neutrino)
    momenta = record.p[visible]
    counts = ak.to_numpy(ak.num(momenta, axis=1))
    px = ak.to_numpy(ak.flatten(momenta.px))
    py = ak.to_numpy(ak.flatten(momenta.py))
    pz = ak.to_numpy(ak.flatten(momenta.pz))
    pt = np.hypot(px, py)
    with np.errstate(divide="ignore", invalid="ignore"):
        eta = np.arcsinh(pz / pt)
    phi = np.arctan2(py, px)
    accepted = (pt > max(pt_min, 0.0)) & (np.abs(eta) < eta_max)
    event_of_particle = np.repeat(np.arange(len(counts)), counts)
    kept_counts = np.bincount(event_of_particle[accepted], minlength=len(counts))
    particles = ak.unflatten(
        ak.zip({"pt": pt[accepted], "eta": eta[accepted], "phi": phi[accepted]}), kept_counts
    )
    order = ak.argsort(particles.pt, axis=1, ascending=False, stable=True)
    particles = particles[order][:, :max_particles]
    n_dropped = np.maximum(kept_counts - max_particles, 0).astype(np.int64)
    return VisibleParticles(particles=ak.to_packed(particles), n_dropped=n_dropped)


def make_events(particles: ak.Array, label: ArrayLike, weight: ArrayLike) -> ak.Array:
    """Return the event array of ``particles`` with their labels and weights.

    Parameters
    ----------
    particles : awkward.Array
        ``pt, eta, phi`` records, one jagged list per event.
    label : int or array_like of int
        Truth label of every event (broadcast) or of each event.
    weight : float or array_like of float
        Weight of every event (broadcast) or of each event.

    Returns
    -------
    awkward.Array
        Records with jagged ``pt``, ``eta``, ``phi`` (float64) and scalar
        ``label`` (int32) and ``weight`` (float64).
    """
    n_events = len(particles)
    labels = np.broadcast_to(np.asarray(label, dtype=np.int32), (n_events,))
    weights = np.broadcast_to(np.asarray(weight, dtype=np.float64), (n_events,))
    return ak.zip(
        {
            "pt": ak.values_astype(particles.pt, np.float64),
            "eta": ak.values_astype(particles.eta, np.float64),
            "phi": ak.values_astype(particles.phi, np.float64),
            "label": np.ascontiguousarray(labels),
            "weight": np.ascontiguousarray(weights),
        },
        depth_limit=1,
    )


def event_particles(events: ak.Array) -> ak.Array:
    """Return the ``pt, eta, phi`` particle records of an event array.

    Parameters
    ----------
    events : awkward.Array
        Event records with jagged fields ``pt``, ``eta``, ``phi``.

    Returns
    -------
    awkward.Array
        One jagged list of ``pt, eta, phi`` records per event.

    Raises
    ------
    ValueError
        If a particle field is missing.
    """
    missing = [name for name in PARTICLE_FIELDS if name not in ak.fields(events)]
    if missing:
        raise ValueError(
            f"events: missing particle field(s) {missing}; the events have {ak.fields(events)}"
        )
    return ak.zip({name: events[name] for name in PARTICLE_FIELDS})
