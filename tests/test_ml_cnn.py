"""The track-image CNN: shapes, input normalisation, input checks."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from rosenblatt.ml.cnn import TrackImageCNN, check_images


def sparse_images(n: int, seed: int) -> np.ndarray:
    """Track-image-shaped inputs: a few pixels per event carrying pT (GeV)."""
    rng = np.random.default_rng(seed)
    images = np.zeros((n, 36, 36), dtype=np.float32)
    hit = rng.random((n, 36, 36)) < 0.04
    images[hit] = rng.exponential(20.0, int(hit.sum())).astype(np.float32)
    return images


@pytest.mark.parametrize("n", [1, 5, 64])
def test_forward_gives_one_logit_per_event(n: int) -> None:
    torch.manual_seed(0)
    network = TrackImageCNN()
    logits = network(torch.from_numpy(sparse_images(n, seed=n)))
    assert logits.shape == (n,)
    assert logits.dtype == torch.float32
    assert torch.isfinite(logits).all()


def test_architecture_is_three_convolutions_and_one_dense_layer() -> None:
    network = TrackImageCNN()
    convolutions = [m for m in network.modules() if isinstance(m, torch.nn.Conv2d)]
    dense = [m for m in network.modules() if isinstance(m, torch.nn.Linear)]
    assert len(convolutions) == 3
    assert len(dense) == 1
    assert dense[0].out_features == 1


def test_score_is_invariant_under_phi_rotations_by_the_total_stride() -> None:
    """Periodic phi padding and the maximum over positions: rotating the event in phi
    by a multiple of 4 pixels (the product of the strides) leaves the logit unchanged."""
    torch.manual_seed(3)
    network = TrackImageCNN().eval()
    images = torch.from_numpy(sparse_images(8, seed=3))
    with torch.no_grad():
        logits = network(images)
        for shift in (4, 8, 20, -12):
            rotated = network(torch.roll(images, shifts=shift, dims=2))
            assert torch.equal(rotated, logits), shift
        # a shift that is not a multiple of the stride changes the sampling grid
        assert not torch.equal(network(torch.roll(images, shifts=1, dims=2)), logits)


def test_input_scale_is_the_mean_and_std_of_log1p_pixels() -> None:
    images = sparse_images(200, seed=1)
    network = TrackImageCNN()
    network.fit_input_scale(images)
    logged = np.log1p(images.astype(np.float64))
    assert float(network.pixel_mean) == pytest.approx(logged.mean(), rel=1e-6)
    assert float(network.pixel_std) == pytest.approx(logged.std(), rel=1e-6)
    state = network.state_dict()
    assert "pixel_mean" in state
    assert "pixel_std" in state


def test_scores_do_not_depend_on_the_batch() -> None:
    """Each event's logit is a function of its own image only (no batch statistics)."""
    torch.manual_seed(2)
    network = TrackImageCNN().eval()
    images = torch.from_numpy(sparse_images(40, seed=2))
    with torch.no_grad():
        together = network(images)
        alone = torch.cat([network(images[i : i + 1]) for i in range(40)])
    np.testing.assert_allclose(together.numpy(), alone.numpy(), rtol=1e-5, atol=1e-6)


def test_bad_images_are_named() -> None:
    with pytest.raises(ValueError, match=r"shape \(n, 36, 36\), got \(3, 36, 35\)"):
        check_images(np.zeros((3, 36, 35), dtype=np.float32))
    images = sparse_images(10, seed=3)
    images[[2, 7], 0, 0] = -1.0
    with pytest.raises(ValueError, match="2 of 10 events have negative pixels"):
        check_images(images, "train images")
