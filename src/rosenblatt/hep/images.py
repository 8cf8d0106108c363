"""Track images: the particles of each event histogrammed in the (eta, phi) plane.

The image is the detector's cylindrical surface unrolled: pseudorapidity along
the first axis, azimuth along the second. Defaults (:data:`IMAGE_BINS`, the
particles' acceptance :data:`~rosenblatt.hep.particles.ETA_MAX`):

- 36 x 36 pixels; pseudorapidity in ``[-2.5, 2.5)`` (the acceptance of the LHC
  trackers, so the image holds what a tracker sees), azimuth in ``[-pi, pi)``
  with a periodic axis (``phi = pi`` is the same pixel column as ``-pi``);
- every pixel holds the scalar sum of the transverse momenta (GeV) of the
  particles in it (pT-weighted images as in the LHC Olympics CNN studies);
  particles outside the pseudorapidity range are not in the image;
- optionally normalised so that each event's image sums to 1.

Images are flattened row-major, pseudorapidity first: pixel ``(i_eta, i_phi)``
is element ``i_eta * n_phi + i_phi``, stored as float32.
"""

from __future__ import annotations

import awkward as ak
import boost_histogram as bh
import numpy as np

from rosenblatt.hep.particles import ETA_MAX, PARTICLE_FIELDS

__all__ = ["ETA_MAX", "IMAGE_BINS", "IMAGE_SHAPE", "image_axes", "track_images"]

#: number of pixels along pseudorapidity and azimuth
IMAGE_BINS = 36

#: the shape of one event's image: (pseudorapidity bins, azimuth bins)
IMAGE_SHAPE = (IMAGE_BINS, IMAGE_BINS)


def image_axes(
    n_eta: int = IMAGE_BINS, n_phi: int = IMAGE_BINS, eta_max: float = ETA_MAX
) -> tuple[bh.axis.Regular, bh.axis.Regular]:
    """Return the pseudorapidity and (periodic) azimuth axes of the track image.

    Parameters
    ----------
    n_eta, n_phi : int, default 36
        Number of pixels along pseudorapidity and azimuth.
    eta_max : float, default 2.5
        The image covers pseudorapidity in ``[-eta_max, eta_max)``.

    Returns
    -------
    tuple of boost_histogram.axis.Regular
        ``(eta_axis, phi_axis)``.
    """
    if int(n_eta) != n_eta or n_eta < 1 or int(n_phi) != n_phi or n_phi < 1:
        raise ValueError(f"n_eta, n_phi: expected positive integers, got {n_eta!r}, {n_phi!r}")
    if not np.isfinite(eta_max) or eta_max <= 0:
        raise ValueError(f"eta_max: expected a positive pseudorapidity, got {eta_max!r}")
    eta_axis = bh.axis.Regular(int(n_eta), -eta_max, eta_max, metadata="eta")
    phi_axis = bh.axis.Regular(int(n_phi), -np.pi, np.pi, circular=True, metadata="phi")
    return eta_axis, phi_axis


def track_images(
    particles: ak.Array,
    n_eta: int = IMAGE_BINS,
    n_phi: int = IMAGE_BINS,
    eta_max: float = ETA_MAX,
    normalize: bool = False,
) -> np.ndarray:
    """Return the pT-weighted (eta, phi) image of every event, flattened.

    All events are filled into one histogram whose first axis is the event
    number, so the work is a single vectorised fill.

    Parameters
    ----------
    particles : awkward.Array
        Records with fields ``pt``, ``eta``, ``phi`` (GeV), one jagged list per
        event, or event records with jagged ``pt``, ``eta``, ``phi`` fields.
    n_eta, n_phi : int, default 36
        Number of pixels along pseudorapidity and azimuth.
    eta_max : float, default 2.5
        The image covers pseudorapidity in ``[-eta_max, eta_max)``.
    normalize : bool, default False
        Divide each image by its sum (the scalar pT sum of the particles in the
        pseudorapidity range), so that it sums to 1; an empty image stays 0.

    Returns
    -------
    numpy.ndarray
        float32 array of shape ``(n_events, n_eta * n_phi)``; element
        ``i_eta * n_phi + i_phi`` is pixel ``(i_eta, i_phi)``.

    Examples
    --------
    >>> import awkward as ak
    >>> images = track_images(ak.Array([[{"pt": 10.0, "eta": 0.0, "phi": 0.0}]]))
    >>> images.shape, float(images.sum())
    ((1, 1296), 10.0)
    """
    from rosenblatt.hep.momenta import as_particle_lists

    particles = as_particle_lists(particles)
    missing = [name for name in PARTICLE_FIELDS if name not in ak.fields(particles)]
    if missing:
        raise ValueError(
            f"particles: missing field(s) {missing}; expected records with fields pt, eta, phi"
        )
    eta_axis, phi_axis = image_axes(n_eta, n_phi, eta_max)
    n_events = len(particles)
    counts = ak.to_numpy(ak.num(particles, axis=1))
    pt = ak.to_numpy(ak.flatten(particles.pt)).astype(np.float64)
    eta = ak.to_numpy(ak.flatten(particles.eta)).astype(np.float64)
    phi = ak.to_numpy(ak.flatten(particles.phi)).astype(np.float64)
    bad = ~(np.isfinite(pt) & np.isfinite(eta) & np.isfinite(phi))
    if np.any(bad):
        bad_events = np.unique(np.repeat(np.arange(n_events), counts)[bad])
        raise ValueError(
            f"particles: {int(np.sum(bad))} particle(s) in {len(bad_events)} event(s) have "
            f"non-finite pt, eta or phi (first event index {int(bad_events[0])})"
        )
    event_axis = bh.axis.Integer(0, max(n_events, 1), underflow=False, overflow=False)
    histogram = bh.Histogram(event_axis, eta_axis, phi_axis, storage=bh.storage.Double())
    histogram.fill(np.repeat(np.arange(n_events), counts), eta, phi, weight=pt)
    images = histogram.view(flow=False)[:n_events].reshape(n_events, eta_axis.size * phi_axis.size)
    if normalize:
        totals = images.sum(axis=1, keepdims=True)
        images = np.divide(images, totals, out=np.zeros_like(images), where=totals > 0)
    return images.astype(np.float32)
