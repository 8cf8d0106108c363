"""Four-momentum records of jagged awkward arrays, converted with numpy.

:mod:`vector` gives awkward records the behaviour of four-momenta; these
functions build such ``Momentum4D`` records in either coordinate system by
computing on the flat numpy contents of a jagged array (any depth) and
restoring its lists, which is much faster than broadcasting through awkward.

- *cartesian*: fields ``px, py, pz, E`` (what FastJet takes and returns);
- *collider*: fields ``pt, eta, phi, mass``.

:func:`as_particle_lists` accepts the two layouts of event data: one list of
``pt, eta, phi`` records per event, or event records with jagged fields.
"""

from __future__ import annotations

import awkward as ak
import numpy as np

from rosenblatt._extras import optional_imports
from rosenblatt.hep.particles import PARTICLE_FIELDS
from rosenblatt.typing import FloatArray

with optional_imports(__name__):
    import vector

vector.register_awkward()

__all__ = [
    "CARTESIAN_FIELDS",
    "PARTICLE_FIELDS",
    "as_cartesian",
    "as_collider",
    "as_particle_lists",
    "flat_components",
]

#: fields of cartesian four-momentum records
CARTESIAN_FIELDS = ("px", "py", "pz", "E")


def _flatten_lists(array: ak.Array) -> tuple[ak.Array, list[ak.Array]]:
    """Return the flat records of a jagged array and the list sizes, outermost first."""
    counts = []
    while array.ndim > 1:
        counts.append(ak.num(array, axis=1))
        array = ak.flatten(array, axis=1)
    return array, counts


def _restore_lists(flat: ak.Array, counts: list[ak.Array]) -> ak.Array:
    for sizes in reversed(counts):
        flat = ak.unflatten(flat, sizes)
    return flat


def flat_components(momenta: ak.Array, fields: tuple[str, ...]) -> list[FloatArray]:
    """Return the given fields of all records of a jagged array as flat float64 arrays."""
    flat, _ = _flatten_lists(momenta)
    return [np.asarray(ak.to_numpy(flat[name]), dtype=np.float64) for name in fields]


def as_cartesian(momenta: ak.Array) -> ak.Array:
    """Return four-momenta as ``Momentum4D`` records ``px, py, pz, E`` (float64).

    Parameters
    ----------
    momenta : awkward.Array
        Jagged records with fields ``px, py, pz, E`` (returned as float64) or
        ``pt, eta, phi`` and optionally ``mass`` (massless without it).

    Returns
    -------
    awkward.Array
        Same lists, ``Momentum4D`` records with fields ``px, py, pz, E``.
    """
    fields = ak.fields(momenta)
    flat, counts = _flatten_lists(momenta)
    if all(name in fields for name in CARTESIAN_FIELDS):
        px, py, pz, energy = (
            np.asarray(ak.to_numpy(flat[name]), dtype=np.float64) for name in CARTESIAN_FIELDS
        )
    elif all(name in fields for name in ("pt", "eta", "phi")):
        pt, eta, phi = (
            np.asarray(ak.to_numpy(flat[name]), dtype=np.float64) for name in ("pt", "eta", "phi")
        )
        px, py, pz = pt * np.cos(phi), pt * np.sin(phi), pt * np.sinh(eta)
        if "mass" in fields:
            mass = np.asarray(ak.to_numpy(flat["mass"]), dtype=np.float64)
            energy = np.sqrt(px**2 + py**2 + pz**2 + mass**2)
        else:
            energy = pt * np.cosh(eta)
    else:
        raise ValueError(
            f"momenta: expected fields {list(CARTESIAN_FIELDS)} or pt, eta, phi (and mass), "
            f"got {fields}"
        )
    records = ak.zip({"px": px, "py": py, "pz": pz, "E": energy}, with_name="Momentum4D")
    return _restore_lists(records, counts)


def as_collider(momenta: ak.Array) -> ak.Array:
    """Return cartesian four-momenta as ``Momentum4D`` records ``pt, eta, phi, mass``.

    The mass is ``sqrt(max(E^2 - p^2, 0))``: rounding can make ``E^2 - p^2`` of a
    (nearly) massless object slightly negative, which gives mass 0, not NaN.

    Parameters
    ----------
    momenta : awkward.Array
        Jagged records with fields ``px, py, pz, E``.

    Returns
    -------
    awkward.Array
        Same lists, ``Momentum4D`` records with fields ``pt, eta, phi, mass``.
    """
    flat, counts = _flatten_lists(momenta)
    px, py, pz, energy = (
        np.asarray(ak.to_numpy(flat[name]), dtype=np.float64) for name in CARTESIAN_FIELDS
    )
    pt = np.hypot(px, py)
    with np.errstate(divide="ignore", invalid="ignore"):
        eta = np.where(pt > 0, np.arcsinh(pz / pt), np.sign(pz) * np.inf)
    mass_squared = energy**2 - px**2 - py**2 - pz**2
    records = ak.zip(
        {
            "pt": pt,
            "eta": eta,
            "phi": np.arctan2(py, px),
            "mass": np.sqrt(np.maximum(mass_squared, 0.0)),
        },
        with_name="Momentum4D",
    )
    return _restore_lists(records, counts)


def as_particle_lists(particles: ak.Array) -> ak.Array:
    """Return one list of ``pt, eta, phi`` records per event.

    Accepts particle records (events x particles, returned as they are) or event
    records whose ``pt``, ``eta`` and ``phi`` fields are jagged lists (as the
    :mod:`rosenblatt.io` readers return them; other fields are left out).
    """
    particles = ak.Array(particles)
    fields = ak.fields(particles)
    if particles.ndim == 1 and all(name in fields for name in PARTICLE_FIELDS):
        return ak.zip({name: particles[name] for name in PARTICLE_FIELDS})
    return particles
