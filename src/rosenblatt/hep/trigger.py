"""The LHC Olympics 2020 trigger: one large-radius jet above 1.2 TeV.

An event passes when at least one anti-kT jet of radius
:data:`TRIGGER_RADIUS` has a transverse momentum above
:data:`TRIGGER_PT_MIN`. The jets come from :func:`rosenblatt.hep.jets.cluster_jets`.
"""

from __future__ import annotations

import awkward as ak
import numpy as np

from rosenblatt.hep.jets import cluster_jets
from rosenblatt.typing import BoolArray, FloatArray

__all__ = ["TRIGGER_PT_MIN", "TRIGGER_RADIUS", "leading_jet_pt", "passes_trigger"]

#: trigger threshold on the leading jet pT in GeV
TRIGGER_PT_MIN = 1200.0

#: anti-kT radius of the trigger jets
TRIGGER_RADIUS = 1.0


def leading_jet_pt(particles: ak.Array, radius: float = TRIGGER_RADIUS) -> FloatArray:
    """Return the pT of the hardest anti-kT jet of each event (0 without jets).

    Parameters
    ----------
    particles : awkward.Array
        ``pt, eta, phi`` records (GeV, massless), one jagged list per event.
    radius : float, default :data:`TRIGGER_RADIUS`
        Jet radius.

    Returns
    -------
    numpy.ndarray
        Leading jet pT per event in GeV.
    """
    if len(particles) == 0:
        return np.zeros(0)
    jets = cluster_jets(particles, radius=radius)
    leading = ak.fill_none(ak.firsts(jets.pt, axis=1), 0.0)
    return np.asarray(ak.to_numpy(leading), dtype=np.float64)


def passes_trigger(
    particles: ak.Array, pt_min: float = TRIGGER_PT_MIN, radius: float = TRIGGER_RADIUS
) -> BoolArray:
    """Return, per event, whether a jet of radius ``radius`` has pT above ``pt_min``.

    Parameters
    ----------
    particles : awkward.Array
        ``pt, eta, phi`` records (GeV, massless), one jagged list per event.
    pt_min : float, default :data:`TRIGGER_PT_MIN`
        Threshold on the leading jet pT in GeV.
    radius : float, default :data:`TRIGGER_RADIUS`
        Anti-kT jet radius.

    Returns
    -------
    numpy.ndarray of bool
        Trigger decision per event.
    """
    return leading_jet_pt(particles, radius=radius) > pt_min
