"""Track images: pT-weighted (eta, phi) histograms of each event's particles."""

from __future__ import annotations

import awkward as ak
import numpy as np
import pytest

from rosenblatt.hep.images import ETA_MAX, IMAGE_BINS, image_axes, track_images


def random_particles(seed: int, n_events: int = 40) -> ak.Array:
    """Events with 0-60 particles spread over |eta| < 4 (some outside the image)."""
    rng = np.random.default_rng(seed)
    counts = rng.integers(0, 60, n_events)
    counts[3] = 0
    n = int(counts.sum())
    return ak.unflatten(
        ak.zip(
            {
                "pt": rng.exponential(20.0, n),
                "eta": rng.uniform(-4.0, 4.0, n),
                "phi": rng.uniform(-np.pi, np.pi, n),
            }
        ),
        counts,
    )


def test_image_shape_and_type() -> None:
    images = track_images(random_particles(1))
    assert images.shape == (40, IMAGE_BINS * IMAGE_BINS)
    assert images.shape[1] == 1296
    assert images.dtype == np.float32
    assert track_images(random_particles(1)[:0]).shape == (0, 1296)


def test_image_sum_is_the_pt_sum_inside_the_eta_range() -> None:
    particles = random_particles(2)
    images = track_images(particles)
    inside = (particles.eta >= -ETA_MAX) & (particles.eta < ETA_MAX)
    expected = ak.to_numpy(ak.sum(particles.pt[inside], axis=1))
    np.testing.assert_allclose(images.sum(axis=1, dtype=np.float64), expected, rtol=1e-5)
    assert images[3].sum() == 0.0
    assert np.all(images >= 0.0)


def test_each_event_matches_a_per_event_numpy_histogram() -> None:
    particles = random_particles(3)
    images = track_images(particles)
    eta_edges = np.linspace(-ETA_MAX, ETA_MAX, IMAGE_BINS + 1)
    phi_edges = np.linspace(-np.pi, np.pi, IMAGE_BINS + 1)
    for event, image in zip(particles, images, strict=True):
        expected, _, _ = np.histogram2d(
            ak.to_numpy(event.eta),
            ak.to_numpy(event.phi),
            bins=(eta_edges, phi_edges),
            weights=ak.to_numpy(event.pt),
        )
        np.testing.assert_allclose(image.reshape(IMAGE_BINS, IMAGE_BINS), expected, rtol=1e-6)


def test_orientation_eta_along_rows_phi_along_columns() -> None:
    eta_width = 2 * ETA_MAX / IMAGE_BINS
    phi_width = 2 * np.pi / IMAGE_BINS
    # pixel (i_eta=30, i_phi=4): near eta = +1.7, phi = -2.4
    eta = -ETA_MAX + 30.5 * eta_width
    phi = -np.pi + 4.5 * phi_width
    particles = ak.Array([[{"pt": 7.0, "eta": eta, "phi": phi}]])
    image = track_images(particles)[0]
    assert np.flatnonzero(image).tolist() == [30 * IMAGE_BINS + 4]
    assert image.reshape(IMAGE_BINS, IMAGE_BINS)[30, 4] == 7.0


def test_phi_is_periodic() -> None:
    particles = ak.Array(
        [[{"pt": 1.0, "eta": 0.01, "phi": np.pi}, {"pt": 2.0, "eta": 0.01, "phi": -np.pi}]]
    )
    image = track_images(particles)[0].reshape(IMAGE_BINS, IMAGE_BINS)
    row = IMAGE_BINS // 2
    assert image[row, 0] == 3.0
    assert image.sum() == 3.0


def test_normalised_images_sum_to_one() -> None:
    particles = random_particles(4)
    images = track_images(particles, normalize=True)
    sums = images.sum(axis=1, dtype=np.float64)
    empty = track_images(particles).sum(axis=1) == 0
    assert empty[3]
    np.testing.assert_allclose(sums[~empty], 1.0, rtol=1e-5)
    assert np.all(sums[empty] == 0.0)


def test_other_image_sizes_and_ranges() -> None:
    particles = ak.Array([[{"pt": 5.0, "eta": 2.9, "phi": 0.1}]])
    assert track_images(particles).sum() == 0.0  # outside |eta| < 2.5
    wide = track_images(particles, n_eta=10, n_phi=20, eta_max=3.0)
    assert wide.shape == (1, 200)
    assert np.flatnonzero(wide).tolist() == [9 * 20 + 10]
    eta_axis, phi_axis = image_axes(10, 20, 3.0)
    assert eta_axis.index(2.9) == 9
    assert phi_axis.index(0.1) == 10


def test_bad_particles_are_reported() -> None:
    with pytest.raises(ValueError, match="missing field"):
        track_images(ak.Array([[{"pt": 1.0, "eta": 0.0}]]))
    particles = ak.Array(
        [[{"pt": 1.0, "eta": 0.0, "phi": 0.0}], [{"pt": np.nan, "eta": 0.0, "phi": 0.0}]]
    )
    with pytest.raises(ValueError, match=r"1 particle\(s\) in 1 event\(s\).*first event index 1"):
        track_images(particles)
    with pytest.raises(ValueError, match="eta_max"):
        track_images(particles[:1], eta_max=-1.0)
    with pytest.raises(ValueError, match="n_eta"):
        track_images(particles[:1], n_eta=0)
