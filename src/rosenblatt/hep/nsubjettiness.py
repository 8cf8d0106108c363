"""N-subjettiness of jets from their constituents (Thaler and Van Tilburg).

For a jet with constituents ``k`` and ``N`` axes ``a``,

.. math::

    \\tau_N = \\frac{\\sum_k p_{T,k} \\min_a \\Delta R_{k,a}^\\beta}{\\sum_k p_{T,k} R_0^\\beta},

with :math:`\\Delta R^2 = \\Delta y^2 + \\Delta\\phi^2` (rapidity and azimuth).
The axes are the exclusive-kT axes: the constituents are reclustered with the kT
algorithm (E-scheme, radius :data:`EXCLUSIVE_KT_RADIUS` so that no particle is
merged with the beam) until exactly ``N`` subjets remain (FastJet
``exclusive_jets``). No axis minimisation follows. This is the ``KT_Axes``
choice with the ``NormalizedMeasure`` of the FastJet contrib ``Nsubjettiness``
package, whose values it reproduces.

A jet with at most ``N`` constituents has :math:`\\tau_N = 0` (every constituent
is its own axis); a jet without constituents or without transverse momentum has
:math:`\\tau_N = 0` as well.

:func:`tau21` returns :math:`\\tau_2/\\tau_1`. Where :math:`\\tau_1 = 0` (all
constituents on the jet axis, e.g. a single constituent) the ratio is 0/0; it is
set to :data:`TAU21_WHEN_TAU1_IS_ZERO` = 1, the one-prong value: a second axis
describes such a jet no better than one.
"""

from __future__ import annotations

import warnings

import awkward as ak
import numpy as np

from rosenblatt._extras import optional_imports
from rosenblatt.hep.momenta import CARTESIAN_FIELDS, as_cartesian, flat_components
from rosenblatt.typing import FloatArray

with optional_imports(__name__):
    import fastjet

__all__ = [
    "EXCLUSIVE_KT_RADIUS",
    "TAU21_WHEN_TAU1_IS_ZERO",
    "exclusive_kt_axes",
    "nsubjettiness",
    "tau21",
]

#: kT radius of the exclusive reclustering; FastJet's ``max_allowable_R``, so
#: that the beam distance never wins and exactly ``N`` subjets of all
#: constituents remain
EXCLUSIVE_KT_RADIUS = 1000.0

#: value of tau2/tau1 for jets with tau1 = 0 (all constituents on the jet axis)
TAU21_WHEN_TAU1_IS_ZERO = 1.0


def _jets_by_particles(constituents: ak.Array) -> tuple[ak.Array, ak.Array | None]:
    """Return constituents as cartesian jets x particles records and the jets per event.

    ``constituents`` may be jets x particles (the second value is ``None``) or
    events x jets x particles (the jet lists are joined; the second value holds
    the number of jets per event to restore the event structure).
    """
    constituents = ak.Array(constituents)
    if constituents.ndim not in (2, 3):
        raise ValueError(
            "constituents: expected jets x particles (2 dimensions) or events x jets x "
            f"particles (3 dimensions), got {constituents.ndim} dimensions ({constituents.type})"
        )
    try:
        momenta = as_cartesian(constituents)
    except ValueError as err:
        raise ValueError(f"constituents: {err}") from None
    if momenta.ndim == 2:
        return momenta, None
    return ak.flatten(momenta, axis=1), ak.num(momenta, axis=1)


def _exclusive_kt_sequence(momenta: ak.Array) -> fastjet.ClusterSequence:
    """Recluster jets x particles ``Momentum4D`` records with the exclusive kT definition."""
    definition = fastjet.JetDefinition(fastjet.kt_algorithm, EXCLUSIVE_KT_RADIUS)
    return fastjet.ClusterSequence(momenta, definition)


def _exclusive_jets(sequence: fastjet.ClusterSequence, n_axes: int) -> ak.Array:
    """Return the ``n_axes`` exclusive jets of every reclustered jet."""
    with warnings.catch_warnings():
        # fastjet warns about exclusive jets for every algorithm, kT included
        warnings.filterwarnings("ignore", message="dcut and exclusive jets", category=UserWarning)
        return sequence.exclusive_jets(n_jets=n_axes)


def exclusive_kt_axes(constituents: ak.Array, n_axes: int) -> ak.Array:
    """Return the exclusive-kT axes of each jet.

    Parameters
    ----------
    constituents : awkward.Array
        Four-momentum records (``px, py, pz, E`` or ``pt, eta, phi`` and
        optionally ``mass``),
        jets x particles. Every jet must have at least ``n_axes`` constituents.
    n_axes : int
        Number of axes (exclusive subjets) per jet.

    Returns
    -------
    awkward.Array
        ``Momentum4D`` records, jets x ``n_axes``.

    Raises
    ------
    ValueError
        If a jet has fewer than ``n_axes`` constituents.
    """
    _check_parameters(n_axes, 1.0, 1.0)
    momenta, jets_per_event = _jets_by_particles(constituents)
    if jets_per_event is not None:
        raise ValueError(f"constituents: expected jets x particles, got {constituents.type}")
    too_few = ak.to_numpy(ak.num(momenta, axis=1) < n_axes)
    if np.any(too_few):
        raise ValueError(
            f"constituents: {int(np.sum(too_few))} jet(s) have fewer than n_axes={n_axes} "
            "constituents; exclusive kT axes need at least n_axes constituents"
        )
    if len(momenta) == 0:
        return momenta[:, :0]
    return _exclusive_jets(_exclusive_kt_sequence(momenta), n_axes)


def _pt_rapidity_phi(momenta: ak.Array) -> tuple[FloatArray, ...]:
    """Return flat pT, rapidity and azimuth of cartesian ``Momentum4D`` records."""
    px, py, pz, energy = flat_components(momenta, CARTESIAN_FIELDS)
    with np.errstate(divide="ignore", invalid="ignore"):
        rapidity = 0.5 * np.log((energy + pz) / (energy - pz))
    return np.hypot(px, py), rapidity, np.arctan2(py, px)


def _tau_from_axes(
    momenta: ak.Array, axes: ak.Array, n_axes: int, beta: float, r0: float
) -> FloatArray:
    """Return tau_N of jets (jets x particles) given their axes (jets x ``n_axes``)."""
    counts = ak.to_numpy(ak.num(momenta, axis=1))
    pt, rapidity, phi = _pt_rapidity_phi(momenta)
    _, axis_rapidity, axis_phi = _pt_rapidity_phi(axes)
    axis_rapidity = axis_rapidity.reshape(-1, n_axes)
    axis_phi = axis_phi.reshape(-1, n_axes)
    jet_of_particle = np.repeat(np.arange(len(counts)), counts)
    delta_rapidity = rapidity[:, np.newaxis] - axis_rapidity[jet_of_particle]
    delta_phi = np.remainder(phi[:, np.newaxis] - axis_phi[jet_of_particle] + np.pi, 2 * np.pi)
    delta_phi -= np.pi
    min_delta_r2 = np.min(delta_rapidity**2 + delta_phi**2, axis=1)
    numerator = np.bincount(
        jet_of_particle, weights=pt * min_delta_r2 ** (0.5 * beta), minlength=len(counts)
    )
    denominator = np.bincount(jet_of_particle, weights=pt, minlength=len(counts)) * r0**beta
    tau = np.zeros(len(counts))
    np.divide(numerator, denominator, out=tau, where=denominator > 0)
    return tau


def _check_parameters(n_axes: int, beta: float, r0: float) -> None:
    if int(n_axes) != n_axes or n_axes < 1:
        raise ValueError(f"n_axes: expected a positive integer, got {n_axes!r}")
    if not np.isfinite(beta) or beta <= 0:
        raise ValueError(f"beta: expected a positive angular exponent, got {beta!r}")
    if not np.isfinite(r0) or r0 <= 0:
        raise ValueError(f"r0: expected a positive characteristic radius, got {r0!r}")


def nsubjettiness(
    constituents: ak.Array, n_axes: int, beta: float = 1.0, r0: float = 1.0
) -> ak.Array:
    """Return the normalised N-subjettiness tau_N of each jet with exclusive-kT axes.

    Parameters
    ----------
    constituents : awkward.Array
        Four-momentum records (``px, py, pz, E`` or ``pt, eta, phi`` and
        optionally ``mass``),
        jets x particles or events x jets x particles.
    n_axes : int
        Number of axes N.
    beta : float, default 1.0
        Angular exponent.
    r0 : float, default 1.0
        Characteristic jet radius of the normalisation (the jet radius).

    Returns
    -------
    awkward.Array
        tau_N per jet, jets or events x jets (float64, in [0, 1] for ``beta=1``).
    """
    _check_parameters(n_axes, beta, r0)
    momenta, jets_per_event = _jets_by_particles(constituents)
    tau = np.zeros(len(momenta))
    enough = ak.to_numpy(ak.num(momenta, axis=1) > n_axes)
    if np.any(enough):
        selected = momenta[enough]
        axes = _exclusive_jets(_exclusive_kt_sequence(selected), n_axes)
        tau[enough] = _tau_from_axes(selected, axes, n_axes, beta, r0)
    result = ak.Array(tau)
    return result if jets_per_event is None else ak.unflatten(result, jets_per_event)


def tau21(constituents: ak.Array, beta: float = 1.0, r0: float = 1.0) -> ak.Array:
    """Return tau2/tau1 of each jet, 1 where tau1 = 0.

    Parameters
    ----------
    constituents : awkward.Array
        Four-momentum records (``px, py, pz, E`` or ``pt, eta, phi`` and
        optionally ``mass``),
        jets x particles or events x jets x particles.
    beta : float, default 1.0
        Angular exponent.
    r0 : float, default 1.0
        Characteristic jet radius of the normalisation (cancels in the ratio).

    Returns
    -------
    awkward.Array
        tau2/tau1 per jet, jets or events x jets (float64, never NaN).
    """
    _check_parameters(1, beta, r0)
    momenta, jets_per_event = _jets_by_particles(constituents)
    tau1 = np.zeros(len(momenta))
    tau2 = np.zeros(len(momenta))
    counts = ak.to_numpy(ak.num(momenta, axis=1))
    more_than_one = counts > 1
    if np.any(more_than_one):
        selected = momenta[more_than_one]
        sequence = _exclusive_kt_sequence(selected)
        tau1[more_than_one] = _tau_from_axes(selected, _exclusive_jets(sequence, 1), 1, beta, r0)
        tau2_selected = _tau_from_axes(selected, _exclusive_jets(sequence, 2), 2, beta, r0)
        tau2[more_than_one] = np.where(counts[more_than_one] > 2, tau2_selected, 0.0)
    ratio = np.full(len(momenta), TAU21_WHEN_TAU1_IS_ZERO)
    np.divide(tau2, tau1, out=ratio, where=tau1 > 0)
    result = ak.Array(ratio)
    return result if jets_per_event is None else ak.unflatten(result, jets_per_event)
