"""The leading dijet pair: its invariant mass, the masses of its two jets, its kinematics.

Jets are :mod:`vector` ``Momentum4D`` records sorted by decreasing pT (as
:func:`rosenblatt.hep.jets.cluster_jets` returns them). The *leading dijet* is
the pair of the two hardest jets; ``mj1`` is the mass of the heavier of the
two and ``mj2`` the mass of the lighter; ``pt_j1`` is the transverse momentum
of the harder of the two (the leading jet) and ``deta_jj`` the absolute
difference of their pseudorapidities.
"""

from __future__ import annotations

from typing import NamedTuple

import awkward as ak
import numpy as np

from rosenblatt._extras import optional_imports
from rosenblatt.typing import BoolArray, FloatArray, Int64Array

with optional_imports(__name__):
    import vector

vector.register_awkward()

__all__ = ["LeadingDijet", "delta_eta", "invariant_mass", "leading_dijet", "leading_pt"]


class LeadingDijet(NamedTuple):
    """The two leading jets of events that have at least two jets.

    Attributes
    ----------
    has_two_jets : numpy.ndarray of bool
        Per input event, whether it has at least two jets.
    heavier, lighter : awkward.Array
        ``Momentum4D`` records, one per event with two jets: the heavier and the
        lighter of its two leading jets.
    heavier_index : numpy.ndarray of int
        Per event with two jets, the position (0 or 1) of the heavier jet among
        the two leading jets.
    """

    has_two_jets: BoolArray
    heavier: ak.Array
    lighter: ak.Array
    heavier_index: Int64Array


def leading_dijet(jets: ak.Array) -> LeadingDijet:
    """Select the two leading jets of each event and order them by mass.

    Parameters
    ----------
    jets : awkward.Array
        ``Momentum4D`` records, events x jets, sorted by decreasing pT.

    Returns
    -------
    LeadingDijet
        The selection mask and the heavier and lighter jet of the selected
        events (ties in mass go to the harder jet).
    """
    has_two_jets = ak.to_numpy(ak.num(jets, axis=1) >= 2)
    pair = jets[has_two_jets][:, :2]
    first, second = pair[:, 0], pair[:, 1]
    second_heavier = ak.to_numpy(second.mass > first.mass)
    heavier_index = second_heavier.astype(np.int64)
    heavier = ak.where(second_heavier, second, first)
    lighter = ak.where(second_heavier, first, second)
    return LeadingDijet(
        has_two_jets=has_two_jets,
        heavier=ak.with_name(heavier, "Momentum4D"),
        lighter=ak.with_name(lighter, "Momentum4D"),
        heavier_index=heavier_index,
    )


def invariant_mass(first: ak.Array, second: ak.Array) -> FloatArray:
    """Return the invariant mass of two four-momenta, event by event.

    Parameters
    ----------
    first, second : awkward.Array
        ``Momentum4D`` records, one per event.

    Returns
    -------
    numpy.ndarray
        ``sqrt(max((p1 + p2)^2, 0))`` in GeV (float64).
    """
    mass_squared = np.asarray(ak.to_numpy((first + second).tau2), dtype=np.float64)
    return np.sqrt(np.maximum(mass_squared, 0.0))


def leading_pt(dijet: LeadingDijet) -> FloatArray:
    """Return the transverse momentum of the leading (harder) jet of each pair.

    Parameters
    ----------
    dijet : LeadingDijet
        The two leading jets of each event (:func:`leading_dijet`).

    Returns
    -------
    numpy.ndarray
        ``max(pT)`` of the two jets, in GeV (float64), one value per pair.
    """
    return np.maximum(*_both(dijet, "pt"))


def delta_eta(dijet: LeadingDijet) -> FloatArray:
    """Return the absolute pseudorapidity difference of the two jets of each pair.

    Parameters
    ----------
    dijet : LeadingDijet
        The two leading jets of each event (:func:`leading_dijet`).

    Returns
    -------
    numpy.ndarray
        ``|eta_1 - eta_2|`` (float64), one value per pair.
    """
    heavier, lighter = _both(dijet, "eta")
    return np.abs(heavier - lighter)


def _both(dijet: LeadingDijet, field: str) -> tuple[FloatArray, FloatArray]:
    """``field`` of the heavier and of the lighter jet of each pair, as float64 arrays."""
    return (
        ak.to_numpy(dijet.heavier[field]).astype(np.float64),
        ak.to_numpy(dijet.lighter[field]).astype(np.float64),
    )
