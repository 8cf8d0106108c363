"""Jet clustering, the leading dijet and N-subjettiness."""

from __future__ import annotations

import itertools
import warnings

import awkward as ak
import fastjet
import numpy as np
import pytest
import vector

from rosenblatt.hep.dijet import delta_eta, invariant_mass, leading_dijet, leading_pt
from rosenblatt.hep.jets import cluster_jets, cluster_jets_with_constituents
from rosenblatt.hep.nsubjettiness import (
    TAU21_WHEN_TAU1_IS_ZERO,
    exclusive_kt_axes,
    nsubjettiness,
    tau21,
)

vector.register_awkward()


@pytest.fixture(scope="module")
def pythia_particles() -> ak.Array:
    """Visible particles of 30 W' and 30 QCD events from Pythia, with two empty events."""
    from rosenblatt.hep.generation import generate_events
    from rosenblatt.hep.particles import event_particles

    signal = event_particles(generate_events("wprime", 30, seed=5, chunk_size=30))
    background = event_particles(generate_events("qcd", 30, seed=6, chunk_size=30))
    no_particles = particles_from_rows([[], []])
    return ak.concatenate([signal[:15], no_particles, signal[15:], background])


def particles_from_rows(rows: list[list[tuple[float, float, float]]]) -> ak.Array:
    """Particle records ``pt, eta, phi`` from per-event lists of (pt, eta, phi)."""
    counts = [len(event) for event in rows]
    flat = np.array([particle for event in rows for particle in event], dtype=float)
    flat = flat.reshape(-1, 3)
    return ak.unflatten(ak.zip({"pt": flat[:, 0], "eta": flat[:, 1], "phi": flat[:, 2]}), counts)


# --- jets ---------------------------------------------------------------------------------


@pytest.mark.slow
def test_jets_match_a_direct_fastjet_call(pythia_particles: ak.Array) -> None:
    particles = pythia_particles
    momenta = ak.zip(
        {
            "pt": particles.pt,
            "eta": particles.eta,
            "phi": particles.phi,
            "mass": ak.zeros_like(particles.pt),
        },
        with_name="Momentum4D",
    )
    sequence = fastjet.ClusterSequence(
        momenta, fastjet.JetDefinition(fastjet.antikt_algorithm, 1.0)
    )
    reference = sequence.inclusive_jets()
    jets = cluster_jets(particles, radius=1.0)

    assert ak.num(jets).tolist() == ak.num(reference).tolist()
    order = ak.argsort(reference.pt, ascending=False)
    for field in ("pt", "eta", "phi"):
        np.testing.assert_allclose(
            ak.to_numpy(ak.flatten(getattr(jets, field))),
            ak.to_numpy(ak.flatten(getattr(reference[order], field))),
            rtol=1e-12,
            atol=1e-12,
        )
    np.testing.assert_allclose(
        ak.to_numpy(ak.flatten(jets.mass)),
        ak.to_numpy(ak.flatten(reference[order].mass)),
        rtol=1e-9,
        atol=1e-6,
    )


def test_jets_are_sorted_by_decreasing_pt(pythia_particles: ak.Array) -> None:
    jets = cluster_jets(pythia_particles)
    assert ak.all(jets.pt[:, 1:] <= jets.pt[:, :-1])
    assert ak.fields(jets) == ["pt", "eta", "phi", "mass"]
    assert jets.type.content.content.parameter("__record__") == "Momentum4D"


def test_events_without_particles_have_no_jets(pythia_particles: ak.Array) -> None:
    jets = cluster_jets(pythia_particles)
    no_particles = ak.to_numpy(ak.num(pythia_particles) == 0)
    assert no_particles.sum() == 2
    assert np.all(ak.to_numpy(ak.num(jets))[no_particles] == 0)
    assert np.all(ak.to_numpy(ak.num(jets))[~no_particles] >= 1)
    assert len(cluster_jets(pythia_particles[no_particles])) == 2
    assert len(cluster_jets(pythia_particles[:0])) == 0


def test_constituents_sum_to_their_jet_and_use_every_particle(pythia_particles: ak.Array) -> None:
    clustered = cluster_jets_with_constituents(pythia_particles)
    summed = ak.zip(
        {
            "px": ak.sum(clustered.constituents.px, axis=-1),
            "py": ak.sum(clustered.constituents.py, axis=-1),
            "pz": ak.sum(clustered.constituents.pz, axis=-1),
            "E": ak.sum(clustered.constituents.E, axis=-1),
        },
        with_name="Momentum4D",
    )
    for field in ("px", "py", "pz", "E"):
        np.testing.assert_allclose(
            ak.to_numpy(ak.flatten(getattr(summed, field))),
            ak.to_numpy(ak.flatten(getattr(clustered.jets, field))),
            rtol=1e-9,
            atol=1e-6,
        )
    assert (
        ak.sum(ak.num(clustered.constituents, axis=2), axis=1).tolist()
        == ak.num(pythia_particles).tolist()
    )


def test_two_far_apart_particles_make_two_massless_jets() -> None:
    particles = particles_from_rows([[(100.0, 0.5, 0.0), (300.0, -0.5, 3.0)]])
    jets = cluster_jets(particles, radius=1.0)
    assert jets.pt[0].tolist() == pytest.approx([300.0, 100.0])
    assert jets.eta[0].tolist() == pytest.approx([-0.5, 0.5])
    # massless up to the rounding of E^2 - p^2
    assert jets.mass[0].tolist() == pytest.approx([0.0, 0.0], abs=1e-4)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"radius": 0.0}, "radius"),
        ({"radius": float("nan")}, "radius"),
        ({"algorithm": "siscone"}, "algorithm"),
    ],
)
def test_bad_jet_parameters_are_named(kwargs: dict[str, object], message: str) -> None:
    particles = particles_from_rows([[(100.0, 0.0, 0.0)]])
    with pytest.raises(ValueError, match=message):
        cluster_jets(particles, **kwargs)  # type: ignore[arg-type]


def test_bad_particles_are_reported_with_counts() -> None:
    with pytest.raises(ValueError, match=r"missing field\(s\) \['phi'\]"):
        cluster_jets(ak.Array([[{"pt": 1.0, "eta": 0.0}]]))
    particles = particles_from_rows(
        [[(10.0, 0.0, 0.0)], [(10.0, np.nan, 0.0), (5.0, np.inf, 0.0)], [(1.0, 0.0, 0.0)]]
    )
    with pytest.raises(ValueError, match=r"2 particle\(s\) in 1 event\(s\).*first event index 1"):
        cluster_jets(particles)
    with pytest.raises(ValueError, match="2 dimensions"):
        cluster_jets(ak.flatten(particles))


# --- the leading dijet --------------------------------------------------------------------


def test_dijet_mass_matches_the_four_momentum_formula(pythia_particles: ak.Array) -> None:
    jets = cluster_jets(pythia_particles)
    dijet = leading_dijet(jets)
    mjj = invariant_mass(dijet.heavier, dijet.lighter)

    pair = jets[dijet.has_two_jets][:, :2]
    pt, eta, phi, mass = (ak.to_numpy(getattr(pair, name)) for name in ("pt", "eta", "phi", "mass"))
    px, py, pz = pt * np.cos(phi), pt * np.sin(phi), pt * np.sinh(eta)
    energy = np.sqrt(px**2 + py**2 + pz**2 + mass**2)
    expected = np.sqrt(
        energy.sum(axis=1) ** 2 - px.sum(axis=1) ** 2 - py.sum(axis=1) ** 2 - pz.sum(axis=1) ** 2
    )
    np.testing.assert_allclose(mjj, expected, rtol=1e-9)
    assert np.median(mjj) > 2000.0  # triggered events: a TeV-scale dijet


def test_leading_dijet_orders_the_two_hardest_jets_by_mass(pythia_particles: ak.Array) -> None:
    jets = cluster_jets(pythia_particles)
    dijet = leading_dijet(jets)
    assert dijet.has_two_jets.tolist() == (ak.num(jets) >= 2).tolist()
    pair = jets[dijet.has_two_jets][:, :2]
    masses = np.sort(ak.to_numpy(pair.mass), axis=1)
    np.testing.assert_array_equal(ak.to_numpy(dijet.heavier.mass), masses[:, 1])
    np.testing.assert_array_equal(ak.to_numpy(dijet.lighter.mass), masses[:, 0])
    heavier_pt = ak.to_numpy(pair.pt)[np.arange(len(pair)), dijet.heavier_index]
    np.testing.assert_array_equal(ak.to_numpy(dijet.heavier.pt), heavier_pt)


def test_leading_dijet_flags_events_with_fewer_than_two_jets() -> None:
    particles = particles_from_rows(
        [[], [(100.0, 0.0, 0.0)], [(100.0, 0.0, 0.0), (80.0, 0.0, 3.0)], [(5.0, 0.0, 1.0)]]
    )
    dijet = leading_dijet(cluster_jets(particles))
    assert dijet.has_two_jets.tolist() == [False, False, True, False]
    assert len(dijet.heavier) == 1


def test_leading_pt_and_delta_eta_of_the_two_leading_jets() -> None:
    particles = particles_from_rows(
        [
            [(300.0, 1.5, 0.0), (500.0, -0.5, 3.0), (20.0, 4.0, 1.5)],
            [(400.0, -2.0, 0.0), (350.0, 0.25, 3.0)],
        ]
    )
    dijet = leading_dijet(cluster_jets(particles))
    np.testing.assert_allclose(leading_pt(dijet), [500.0, 400.0])
    np.testing.assert_allclose(delta_eta(dijet), [2.0, 2.25])


# --- N-subjettiness -----------------------------------------------------------------------


def _four_momentum(pt: float, y: float, phi: float, mass: float = 0.0) -> np.ndarray:
    mt = np.hypot(pt, mass)
    return np.array([pt * np.cos(phi), pt * np.sin(phi), mt * np.sinh(y), mt * np.cosh(y)])


def _rapidity_phi(p: np.ndarray) -> tuple[float, float]:
    return 0.5 * np.log((p[3] + p[2]) / (p[3] - p[2])), float(np.arctan2(p[1], p[0]))


def _delta_r2(a: np.ndarray, b: np.ndarray) -> float:
    ya, phia = _rapidity_phi(a)
    yb, phib = _rapidity_phi(b)
    dphi = (phia - phib + np.pi) % (2 * np.pi) - np.pi
    return (ya - yb) ** 2 + dphi**2


def brute_force_tau(particles: list[tuple[float, float, float]], n_axes: int) -> float:
    """tau_N (beta=1, R0=1) with exclusive-kT axes from a plain pairwise kT merging."""
    momenta = [_four_momentum(*particle) for particle in particles]
    if len(momenta) <= n_axes:
        return 0.0
    axes = list(momenta)
    while len(axes) > n_axes:
        best = min(
            itertools.combinations(range(len(axes)), 2),
            key=lambda ij: (
                min(np.hypot(*axes[ij[0]][:2]), np.hypot(*axes[ij[1]][:2])) ** 2
                * _delta_r2(axes[ij[0]], axes[ij[1]])
            ),
        )
        merged = axes[best[0]] + axes[best[1]]
        axes = [axis for k, axis in enumerate(axes) if k not in best] + [merged]
    numerator = sum(
        pt * min(np.sqrt(_delta_r2(p, axis)) for axis in axes)
        for (pt, _, _), p in zip(particles, momenta, strict=True)
    )
    return numerator / sum(pt for pt, _, _ in particles)


def test_nsubjettiness_matches_a_brute_force_kt_reference() -> None:
    rng = np.random.default_rng(7)
    jets = []
    for n_particles in (3, 4, 5, 6, 7, 6, 5):
        pts = rng.uniform(1.0, 100.0, n_particles)
        etas = rng.normal(0.3, 0.3, n_particles)
        phis = rng.normal(3.0, 0.3, n_particles)  # across the phi = +-pi seam
        phis = (phis + np.pi) % (2 * np.pi) - np.pi
        jets.append(list(zip(pts, etas, phis, strict=True)))
    constituents = particles_from_rows(jets)
    for n_axes in (1, 2, 3):
        expected = [brute_force_tau(jet, n_axes) for jet in jets]
        np.testing.assert_allclose(
            ak.to_numpy(nsubjettiness(constituents, n_axes)), expected, rtol=1e-10, atol=1e-14
        )
    ratio = [brute_force_tau(jet, 2) / brute_force_tau(jet, 1) for jet in jets]
    np.testing.assert_allclose(ak.to_numpy(tau21(constituents)), ratio, rtol=1e-10)


def test_tau21_separates_two_prong_from_one_prong_jets() -> None:
    two_prong = [(500.0, 0.0, 0.0), (20.0, 0.05, 0.02), (480.0, 0.0, 0.6), (15.0, 0.03, 0.62)]
    one_prong = [(900.0, 0.0, 0.0), (60.0, 0.3, 0.1), (50.0, -0.2, -0.3), (40.0, 0.1, 0.4)]
    ratios = ak.to_numpy(tau21(particles_from_rows([two_prong, one_prong])))
    # two prongs: tau2 only counts the soft particles next to their prong
    assert ratios[0] < 0.1
    assert ratios[1] > 0.5
    # tau1 of two equal prongs 0.6 apart: each prong is 0.3 from the single axis
    tau1 = ak.to_numpy(nsubjettiness(particles_from_rows([[(1.0, 0.0, -0.3), (1.0, 0.0, 0.3)]]), 1))
    assert tau1 == pytest.approx([0.3], rel=1e-12)


def test_tau21_conventions_for_jets_with_few_constituents() -> None:
    constituents = particles_from_rows(
        [[(50.0, 0.0, 0.0)], [(50.0, 0.0, 0.0), (30.0, 0.2, 0.1)], [(50.0, 0.0, 0.0)] * 2]
    )
    assert ak.to_numpy(nsubjettiness(constituents, 2)).tolist() == [0.0, 0.0, 0.0]
    tau1 = ak.to_numpy(nsubjettiness(constituents, 1))
    assert tau1[0] == 0.0
    assert tau1[1] > 0.0
    assert tau1[2] == pytest.approx(0.0, abs=1e-12)
    ratios = ak.to_numpy(tau21(constituents))
    # one constituent: tau1 = 0, ratio set to the one-prong value
    assert ratios[0] == TAU21_WHEN_TAU1_IS_ZERO
    # two separated constituents: tau2 = 0, a perfect two-prong jet
    assert ratios[1] == 0.0
    assert not np.any(np.isnan(ratios))


def test_tau21_matches_the_fastjet_nsubjettiness_contrib(pythia_particles: ak.Array) -> None:
    clustered = cluster_jets_with_constituents(pythia_particles)
    leading = ak.flatten(clustered.constituents[:, :2], axis=1)
    leading = leading[ak.num(leading) > 2]
    assert ak.fields(leading) == ["px", "py", "pz", "E"]
    sequence = fastjet.ClusterSequence(leading, fastjet.JetDefinition(fastjet.kt_algorithm, 1.0))
    if not hasattr(sequence, "njettiness"):
        pytest.skip("this fastjet build has no Nsubjettiness contrib")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        reference = ak.to_numpy(
            sequence.njettiness(
                measure_definition="NormalizedMeasure",
                axes_definition="KT_Axes",
                njets=[1, 2],
                R0=1.0,
            )
        )
    np.testing.assert_allclose(ak.to_numpy(nsubjettiness(leading, 1)), reference[:, 0], rtol=1e-10)
    np.testing.assert_allclose(ak.to_numpy(nsubjettiness(leading, 2)), reference[:, 1], rtol=1e-10)
    np.testing.assert_allclose(
        ak.to_numpy(tau21(leading)), reference[:, 1] / reference[:, 0], rtol=1e-10
    )


def test_nsubjettiness_keeps_the_event_structure(pythia_particles: ak.Array) -> None:
    clustered = cluster_jets_with_constituents(pythia_particles[:6])
    per_event = tau21(clustered.constituents)
    assert ak.num(per_event).tolist() == ak.num(clustered.jets).tolist()
    np.testing.assert_array_equal(
        ak.to_numpy(ak.flatten(per_event)),
        ak.to_numpy(tau21(ak.flatten(clustered.constituents, axis=1))),
    )


def test_exclusive_kt_axes_need_enough_constituents() -> None:
    constituents = particles_from_rows([[(50.0, 0.0, 0.0)], [(5.0, 0.0, 0.0), (5.0, 0.0, 1.0)]])
    with pytest.raises(ValueError, match=r"1 jet\(s\) have fewer than n_axes=2"):
        exclusive_kt_axes(constituents, 2)
    axes = exclusive_kt_axes(constituents[1:], 2)
    assert sorted(ak.to_numpy(axes.phi[0]).tolist()) == pytest.approx([0.0, 1.0])
    with pytest.raises(ValueError, match="beta"):
        nsubjettiness(constituents, 1, beta=0.0)
    with pytest.raises(ValueError, match="n_axes"):
        nsubjettiness(constituents, 0)


def test_momentum_conversions_agree_with_vector(pythia_particles: ak.Array) -> None:
    from rosenblatt.hep.momenta import as_cartesian, as_collider

    cartesian = as_cartesian(pythia_particles)
    assert ak.num(cartesian).tolist() == ak.num(pythia_particles).tolist()
    reference = ak.zip(
        {
            "pt": pythia_particles.pt,
            "eta": pythia_particles.eta,
            "phi": pythia_particles.phi,
            "mass": ak.zeros_like(pythia_particles.pt),
        },
        with_name="Momentum4D",
    )
    for name in ("px", "py", "pz", "E"):
        np.testing.assert_allclose(
            ak.to_numpy(ak.flatten(cartesian[name])),
            ak.to_numpy(ak.flatten(getattr(reference, name))),
            rtol=1e-12,
        )
    back = as_collider(cartesian)
    for name in ("pt", "eta", "phi"):
        np.testing.assert_allclose(
            ak.to_numpy(ak.flatten(back[name])),
            ak.to_numpy(ak.flatten(pythia_particles[name])),
            rtol=1e-9,
            atol=1e-12,
        )
    with pytest.raises(ValueError, match="expected fields"):
        as_cartesian(ak.Array([[{"x": 1.0}]]))


def test_event_records_with_jagged_fields_are_accepted(pythia_particles: ak.Array) -> None:
    from rosenblatt.hep.images import track_images

    events = ak.zip(
        {
            "pt": pythia_particles.pt,
            "eta": pythia_particles.eta,
            "phi": pythia_particles.phi,
            "label": np.ones(len(pythia_particles), dtype=np.int32),
        },
        depth_limit=1,
    )
    assert events.ndim == 1
    assert ak.to_list(cluster_jets(events)) == ak.to_list(cluster_jets(pythia_particles))
    np.testing.assert_array_equal(track_images(events), track_images(pythia_particles))
