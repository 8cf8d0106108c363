"""The per-event feature table of the dijet study.

For every event: anti-kT jets (:mod:`rosenblatt.hep.jets`), the two leading
jets (:mod:`rosenblatt.hep.dijet`), their N-subjettiness ratios
(:mod:`rosenblatt.hep.nsubjettiness`) and the event's track image
(:mod:`rosenblatt.hep.images`). An event without two jets cannot have a dijet
mass: it leaves the table and is counted in the cut flow, which therefore
always satisfies ``read = fewer than two jets + in table``.

The table (:data:`TABLE_COLUMNS`), one row per event with two jets:

===========  =========  ======================================================
``mjj``      float64    invariant mass of the two leading jets (GeV)
``pt_j1``    float64    transverse momentum of the leading (harder) jet (GeV)
``deta_jj``  float64    absolute pseudorapidity difference of the two leading jets
``mj1``      float64    mass of the heavier of the two (GeV)
``mj2``      float64    mass of the lighter of the two (GeV)
``tau21_1``  float64    tau2/tau1 of the heavier jet
``tau21_2``  float64    tau2/tau1 of the lighter jet
``image``    float32    the 36 x 36 track image, 1296 values, row-major, eta first
``label``    int32      1 signal, 0 background (-1 unknown)
``weight``   float64    event weight
``dataset``  string     dataset the event belongs to
``file``     string     input file
``entry``    int64      entry number of the event in ``file``
===========  =========  ======================================================
"""

from __future__ import annotations

from typing import Any, NamedTuple

import awkward as ak
import numpy as np
from numpy.typing import ArrayLike, NDArray

from rosenblatt.hep.dijet import delta_eta, invariant_mass, leading_dijet, leading_pt
from rosenblatt.hep.images import track_images
from rosenblatt.hep.jets import cluster_jets_with_constituents
from rosenblatt.hep.momenta import as_particle_lists
from rosenblatt.hep.nsubjettiness import tau21
from rosenblatt.typing import BoolArray

__all__ = [
    "CUTFLOW_STEPS",
    "FEATURE_COLUMNS",
    "JET_RADIUS",
    "TABLE_COLUMNS",
    "DijetFeatures",
    "dijet_features",
    "event_table",
]

#: anti-kT radius of the jets
JET_RADIUS = 1.0

#: columns computed from the particles
FEATURE_COLUMNS = ("mjj", "pt_j1", "deta_jj", "mj1", "mj2", "tau21_1", "tau21_2", "image")

#: all columns of the event table, in order
TABLE_COLUMNS = (*FEATURE_COLUMNS, "label", "weight", "dataset", "file", "entry")

#: cut-flow steps: events read = events without two jets + events in the table
CUTFLOW_STEPS = ("read", "fewer than two jets", "in table")


class DijetFeatures(NamedTuple):
    """Features of the events that have two jets.

    Attributes
    ----------
    features : awkward.Array
        Records with the fields :data:`FEATURE_COLUMNS`, one per event with
        two jets, in input order.
    has_two_jets : numpy.ndarray of bool
        Per input event, whether it has two jets (is in ``features``).
    """

    features: ak.Array
    has_two_jets: BoolArray


def dijet_features(particles: ak.Array, radius: float = JET_RADIUS) -> DijetFeatures:
    """Compute the dijet features of every event that has at least two jets.

    Parameters
    ----------
    particles : awkward.Array
        Records with fields ``pt``, ``eta``, ``phi`` (GeV, massless), one jagged
        list per event, or event records with jagged ``pt``, ``eta``, ``phi``
        fields.
    radius : float, default 1.0
        Anti-kT jet radius.

    Returns
    -------
    DijetFeatures
        The feature records and which events they belong to.
    """
    particles = as_particle_lists(particles)
    clustered = cluster_jets_with_constituents(particles, radius=radius)
    dijet = leading_dijet(clustered.jets)
    n_selected = int(np.sum(dijet.has_two_jets))
    pair_constituents = clustered.constituents[dijet.has_two_jets][:, :2]
    ratios = ak.to_numpy(tau21(ak.flatten(pair_constituents, axis=1), r0=radius))
    ratios = ratios.reshape(n_selected, 2)
    rows = np.arange(n_selected)
    image = track_images(particles[dijet.has_two_jets])
    features = ak.zip(
        {
            "mjj": invariant_mass(dijet.heavier, dijet.lighter),
            "pt_j1": leading_pt(dijet),
            "deta_jj": delta_eta(dijet),
            "mj1": ak.to_numpy(dijet.heavier.mass).astype(np.float64),
            "mj2": ak.to_numpy(dijet.lighter.mass).astype(np.float64),
            "tau21_1": ratios[rows, dijet.heavier_index],
            "tau21_2": ratios[rows, 1 - dijet.heavier_index],
            "image": ak.from_numpy(image, regulararray=True),
        },
        depth_limit=1,
    )
    return DijetFeatures(features=features, has_two_jets=dijet.has_two_jets)


def _repeated_string(value: str, n: int) -> ak.Array:
    """Return an awkward array of ``n`` copies of the string ``value``."""
    return ak.to_packed(ak.Array([value])[np.zeros(n, dtype=np.int64)])


def event_table(
    particles: ak.Array,
    *,
    label: ArrayLike,
    weight: ArrayLike,
    dataset: str,
    file: str,
    entry: ArrayLike,
    radius: float = JET_RADIUS,
) -> tuple[ak.Array, dict[str, int]]:
    """Return the event table and the cut flow of a batch of events.

    Parameters
    ----------
    particles : awkward.Array
        Records with fields ``pt``, ``eta``, ``phi`` (GeV, massless), one jagged
        list per event, or event records with jagged ``pt``, ``eta``, ``phi``
        fields.
    label, weight, entry : array_like
        Per event: truth label (int), weight and entry number in ``file``.
    dataset, file : str
        Dataset name and input file of the batch.
    radius : float, default 1.0
        Anti-kT jet radius.

    Returns
    -------
    table : awkward.Array
        Records with the fields :data:`TABLE_COLUMNS`, one per event with two jets.
    cutflow : dict of str to int
        Event counts of :data:`CUTFLOW_STEPS`.

    Raises
    ------
    ValueError
        If ``label``, ``weight`` or ``entry`` do not have one value per event.
    """
    n_events = len(particles)
    columns: dict[str, NDArray[Any]] = {
        "label": np.asarray(label).astype(np.int32, copy=False),
        "weight": np.asarray(weight).astype(np.float64, copy=False),
        "entry": np.asarray(entry).astype(np.int64, copy=False),
    }
    for name, values in columns.items():
        if values.shape != (n_events,):
            raise ValueError(
                f"{name}: expected one value per event ({n_events} events), "
                f"got shape {values.shape} ({file})"
            )
    bad_weight = ~np.isfinite(columns["weight"])
    if np.any(bad_weight):
        raise ValueError(
            f"weight: {int(np.sum(bad_weight))} of {n_events} events have a non-finite "
            f"weight ({file}, first entry {int(columns['entry'][bad_weight][0])})"
        )
    computed = dijet_features(particles, radius=radius)
    selected = computed.has_two_jets
    n_selected = int(np.sum(selected))
    table = ak.zip(
        {
            **{name: computed.features[name] for name in FEATURE_COLUMNS},
            "label": columns["label"][selected],
            "weight": columns["weight"][selected],
            "dataset": _repeated_string(dataset, n_selected),
            "file": _repeated_string(file, n_selected),
            "entry": columns["entry"][selected],
        },
        depth_limit=1,
    )
    cutflow = dict(zip(CUTFLOW_STEPS, (n_events, n_events - n_selected, n_selected), strict=True))
    return table, cutflow
