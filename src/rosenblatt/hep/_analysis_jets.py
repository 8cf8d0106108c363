"""The jets of the analysis files: anti-kT R = 1.0 jets, soft-drop mass, N-subjettiness, the tagger.

See :mod:`rosenblatt.hep.analysis_files` for what each column holds.
"""

from __future__ import annotations

from typing import Any

import awkward as ak
import numpy as np
from numpy.typing import ArrayLike, NDArray

from rosenblatt._extras import optional_imports
from rosenblatt.hep.dijet import invariant_mass
from rosenblatt.hep.features import JET_RADIUS
from rosenblatt.hep.jets import cluster_jets_with_constituents
from rosenblatt.hep.momenta import as_cartesian, as_particle_lists
from rosenblatt.hep.nsubjettiness import TAU21_WHEN_TAU1_IS_ZERO, nsubjettiness
from rosenblatt.typing import FloatArray

with optional_imports(__name__):
    import fastjet

__all__ = [
    "FAT_JET_FIELDS",
    "JET_PT_MIN",
    "SOFTDROP_BETA",
    "SOFTDROP_Z_CUT",
    "TAGGER_FORMULA",
    "TAGGER_MASS_SCALE",
    "fat_jets",
    "ntuple_columns",
    "softdrop_mass",
    "tagger_score",
]

#: jets below this pT (GeV) are not kept
JET_PT_MIN = 200.0

#: soft-drop angular exponent
SOFTDROP_BETA = 0.0

#: soft-drop momentum-sharing threshold
SOFTDROP_Z_CUT = 0.1

#: mass scale m0 of the tagger in GeV
TAGGER_MASS_SCALE = 200.0

#: the tagger, as stored in the files' settings
TAGGER_FORMULA = "(1 - clip(tau21, 0, 1)) * mass / (mass + 200 GeV)"

#: fields of each jet (:func:`fat_jets`)
FAT_JET_FIELDS = (
    "pt",
    "eta",
    "phi",
    "mass",
    "msoftdrop",
    "tau1",
    "tau2",
    "tau3",
    "tau21",
    "tagger",
)

#: Cambridge/Aachen radius of the soft-drop reclustering: every constituent joins one jet
_RECLUSTER_RADIUS = 1000.0


def tagger_score(mass: ArrayLike, tau21: ArrayLike) -> FloatArray:
    """Return the two-prong tagger ``(1 - clip(tau21, 0, 1)) * m / (m + 200 GeV)``.

    Parameters
    ----------
    mass : array_like
        Jet mass in GeV (negative values count as 0).
    tau21 : array_like
        tau2/tau1 of the jet.

    Returns
    -------
    numpy.ndarray
        Scores in [0, 1) (float64).

    Examples
    --------
    >>> tagger_score([500.0, 100.0], [0.2, 0.6]).round(3).tolist()
    [0.571, 0.133]
    """
    m = np.maximum(np.asarray(mass, dtype=np.float64), 0.0)
    ratio = np.clip(np.asarray(tau21, dtype=np.float64), 0.0, 1.0)
    return (1.0 - ratio) * m / (m + TAGGER_MASS_SCALE)


def softdrop_mass(
    constituents: ak.Array, *, beta: float = SOFTDROP_BETA, z_cut: float = SOFTDROP_Z_CUT
) -> FloatArray:
    """Return the soft-drop mass of each jet, groomed by FastJet's ``SoftDrop``.

    Parameters
    ----------
    constituents : awkward.Array
        Four-momentum records (``px, py, pz, E`` or ``pt, eta, phi`` and
        optionally ``mass``), jets x particles; every jet needs a constituent.
    beta : float, default 0
        Angular exponent.
    z_cut : float, default 0.1
        Momentum-sharing threshold.

    Returns
    -------
    numpy.ndarray
        Groomed mass per jet in GeV (float64).

    Notes
    -----
    The constituents of each jet are reclustered with Cambridge/Aachen at a
    radius that merges them all (one exclusive jet), and FastJet contrib's
    ``SoftDrop`` (scalar-z symmetry measure, following the harder branch)
    grooms it; the angular scale ``R0`` is the jet radius, 1.0.
    """
    momenta = as_cartesian(ak.Array(constituents))
    if len(momenta) == 0:
        return np.zeros(0)
    definition = fastjet.JetDefinition(fastjet.cambridge_algorithm, _RECLUSTER_RADIUS)
    sequence = fastjet.ClusterSequence(momenta, definition)
    groomed = sequence.exclusive_jets_softdrop_grooming(
        njets=1, beta=beta, symmetry_cut=z_cut, R0=JET_RADIUS
    )
    return np.asarray(ak.to_numpy(groomed.msoftdrop), dtype=np.float64)


def fat_jets(particles: ak.Array, *, pt_min: float = JET_PT_MIN) -> ak.Array:
    """Cluster anti-kT R=1.0 jets and compute their substructure.

    Parameters
    ----------
    particles : awkward.Array
        Records with fields ``pt``, ``eta``, ``phi`` (GeV, massless), one jagged
        list per event, or event records with jagged ``pt``, ``eta``, ``phi``
        fields.
    pt_min : float, default 200
        Jets below this pT (GeV) are left out.

    Returns
    -------
    awkward.Array
        ``Momentum4D`` records with the fields :data:`FAT_JET_FIELDS`
        (float64), events x jets, by decreasing pT.
    """
    clustered = cluster_jets_with_constituents(as_particle_lists(particles), radius=JET_RADIUS)
    kept = clustered.jets.pt > pt_min
    jets = ak.flatten(clustered.jets[kept])
    constituents = ak.flatten(clustered.constituents[kept], axis=1)
    columns = {
        name: ak.to_numpy(jets[name]).astype(np.float64) for name in ("pt", "eta", "phi", "mass")
    }
    columns["msoftdrop"] = softdrop_mass(constituents)
    for n_axes in (1, 2, 3):
        columns[f"tau{n_axes}"] = ak.to_numpy(
            nsubjettiness(constituents, n_axes, r0=JET_RADIUS)
        ).astype(np.float64)
    tau21 = np.full(len(jets), TAU21_WHEN_TAU1_IS_ZERO)
    np.divide(columns["tau2"], columns["tau1"], out=tau21, where=columns["tau1"] > 0)
    columns["tau21"] = tau21
    columns["tagger"] = tagger_score(columns["mass"], tau21)
    records = ak.zip(columns, with_name="Momentum4D")
    return ak.unflatten(records, ak.num(clustered.jets[kept], axis=1))


def ntuple_columns(
    jets: ak.Array, event_number: ArrayLike, weight: ArrayLike | None = None
) -> dict[str, NDArray[Any]]:
    """Return the flat-ntuple branches of events with at least two jets.

    Parameters
    ----------
    jets : awkward.Array
        :func:`fat_jets` records, events x jets, each event with two or more jets.
    event_number : array_like of int
        Per event.
    weight : array_like of float, optional
        Per event; the ``mc_weight`` branch (left out when None).

    Returns
    -------
    dict of str to numpy.ndarray
        The branches of :data:`rosenblatt.io.ntuple.NTUPLE_BRANCHES` (without
        ``mc_weight`` when ``weight`` is None).

    Raises
    ------
    ValueError
        If an event has fewer than two jets.
    """
    n_jets = ak.to_numpy(ak.num(jets, axis=1))
    if np.any(n_jets < 2):
        raise ValueError(
            f"jets: {int(np.sum(n_jets < 2))} event(s) have fewer than two jets; "
            "the ntuple holds events with two"
        )
    leading = [ak.with_name(jets[:, i], "Momentum4D") for i in (0, 1)]
    columns: dict[str, NDArray[Any]] = {
        "event_number": np.asarray(event_number, dtype=np.int64),
        "dijet_mass": invariant_mass(*leading),
    }
    for i, jet in enumerate(leading, start=1):
        for field in ("pt", "eta", "phi", "mass", "tau21"):
            columns[f"jet{i}_{field}"] = ak.to_numpy(jet[field]).astype(np.float64)
    second_heavier = columns["jet2_mass"] > columns["jet1_mass"]
    columns["tagger_score"] = np.where(
        second_heavier, ak.to_numpy(leading[1].tagger), ak.to_numpy(leading[0].tagger)
    ).astype(np.float64)
    if weight is not None:
        columns["mc_weight"] = np.asarray(weight, dtype=np.float64)
    return columns
