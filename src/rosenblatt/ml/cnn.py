"""The convolutional network on 36x36 track images.

The paper's network takes the 36x36 track image through three convolutional
layers and one dense layer. Its quoted "stride 12, no pooling, no padding"
cannot stack three convolutions on a 36x36 input (a stride-12 layer already
leaves 3x3 or less), so this network keeps the three-convolutions-plus-one-dense
shape with strides that shrink the image gradually::

    input                                    1 x 36 x 36   (eta x phi)
    conv 4x4, stride 2, ReLU                 8 x 18 x 18
    conv 4x4, stride 2, ReLU                16 x  9 x  9
    conv 3x3, stride 1, ReLU                32 x  9 x  9
    maximum over the 9 x 9 positions        32
    dense 32 -> 1                           logit

Every convolution pads its input by one pixel: periodically along phi (the
image is the unrolled cylinder, so pixel column 0 neighbours column 35; 36,
18 and 9 columns each cover the full turn) and with zeros along eta. The
maximum over positions makes the score independent of where the jets sit in
the event, which the events' rotational symmetry in phi and the spread of jet
rapidities call for: with a position-dependent dense layer on the 3x3 map of a
stride-3 third convolution instead, the same budget reached a validation AUC
of 0.77 instead of 0.88 (2000 Pythia events per class, 15 epochs).

About 0.58 M multiply-adds per image and 7 k parameters, narrow so an epoch
over 10^4 images takes seconds on one CPU core (see
``benchmarks/bench_training.py``); 16/32/32 channels gained 0.02 in AUC on the
same events for twice the time.

Input normalisation: each pixel (the scalar sum of track pT in the bin, GeV) is
replaced by ``log1p(pixel)``, which compresses the few hard pixels of a jet
core against the many soft ones, and then standardised as
``(log1p(pixel) - pixel_mean) / pixel_std`` with two scalars measured on the
training images (:meth:`TrackImageCNN.fit_input_scale`) and stored as buffers
in the state dict, so a saved model carries its own normalisation.
"""

from __future__ import annotations

import io
import os
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from rosenblatt._extras import optional_imports
from rosenblatt.ml.tables import IMAGE_SHAPE
from rosenblatt.typing import FloatArray

with optional_imports(__name__):
    import torch
    from torch import nn
    from torch.nn import functional

__all__ = ["ARCHITECTURE", "TrackImageCNN", "check_images", "load_network", "predict_scores"]

#: a short description stored in the metadata of every trained network
ARCHITECTURE = (
    "conv(1->8,k4,s2)-relu-conv(8->16,k4,s2)-relu-conv(16->32,k3,s1)-relu-maxpool(all)-"
    "dense(32->1); padding 1 periodic in phi, zero in eta; "
    "input log1p(pixel) standardised with training-set mean and std"
)

#: events per chunk when measuring the input scale (bounds the float64 copy)
_SCALE_CHUNK = 4096


def check_images(images: NDArray[Any], name: str = "images") -> None:
    """Raise a :class:`ValueError` unless ``images`` has shape ``(n, 36, 36)`` and no negative pixel.

    Pixels are sums of track pT and cannot be negative; ``log1p`` needs
    ``pixel > -1``.
    """
    if images.ndim != 3 or tuple(images.shape[1:]) != IMAGE_SHAPE:
        msg = f"{name} must have shape (n, 36, 36), got {tuple(images.shape)}"
        raise ValueError(msg)
    negative = (images < 0).any(axis=(1, 2))
    if negative.any():
        msg = (
            f"{name}: {int(negative.sum())} of {len(images)} events have negative pixels "
            f"(first at row {int(np.flatnonzero(negative)[0])}); pixels are track pT sums"
        )
        raise ValueError(msg)


class TrackImageCNN(nn.Module):
    """Three convolutions and one dense layer from a 36x36 track image to a logit.

    The architecture and the input normalisation are described in the module
    docstring. :meth:`forward` returns the logit; the classifier score in
    [0, 1] is its sigmoid.
    """

    pixel_mean: torch.Tensor
    pixel_std: torch.Tensor

    def __init__(self) -> None:
        super().__init__()
        self.convolutions = nn.ModuleList(
            [
                nn.Conv2d(1, 8, kernel_size=4, stride=2),
                nn.Conv2d(8, 16, kernel_size=4, stride=2),
                nn.Conv2d(16, 32, kernel_size=3, stride=1),
            ]
        )
        self.dense = nn.Linear(32, 1)
        self.register_buffer("pixel_mean", torch.zeros(()))
        self.register_buffer("pixel_std", torch.ones(()))

    def fit_input_scale(self, images: NDArray[np.float32]) -> None:
        """Set ``pixel_mean`` and ``pixel_std`` from training images ``(n, 36, 36)``."""
        check_images(images)
        total = total_sqr = 0.0
        for start in range(0, len(images), _SCALE_CHUNK):
            logged = np.log1p(np.asarray(images[start : start + _SCALE_CHUNK], dtype=np.float64))
            total += float(logged.sum())
            total_sqr += float((logged * logged).sum())
        n_pixels = images.size
        mean = total / n_pixels
        std = float(np.sqrt(max(total_sqr / n_pixels - mean * mean, 0.0)))
        self.pixel_mean.fill_(mean)
        self.pixel_std.fill_(std if std > 0 else 1.0)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        """Return the logits ``(n,)`` of raw pixel images ``(n, 36, 36)``."""
        hidden = ((torch.log1p(images) - self.pixel_mean) / self.pixel_std).unsqueeze(1)
        for convolution in self.convolutions:
            hidden = torch.relu(convolution(_pad_cylinder(hidden)))
        score: torch.Tensor = self.dense(hidden.amax(dim=(2, 3)))
        return score.squeeze(1)


def _pad_cylinder(images: torch.Tensor) -> torch.Tensor:
    """Pad ``(n, c, eta, phi)`` by one pixel: periodic along phi, zeros along eta."""
    wrapped = torch.cat([images[..., -1:], images, images[..., :1]], dim=-1)
    return functional.pad(wrapped, (0, 0, 1, 1))


def load_network(path: str | os.PathLike[str] | bytes) -> TrackImageCNN:
    """Read a network from its state-dict file (``torch.load`` with ``weights_only=True``).

    ``path`` may also be the file's bytes, read without opening any file. The
    network is returned on the CPU in evaluation mode.

    Raises
    ------
    FileNotFoundError
        If ``path`` does not exist.
    """
    if isinstance(path, bytes):
        source: Any = io.BytesIO(path)
    else:
        source = Path(path)
        if not source.is_file():
            msg = f"CNN weights {source} do not exist"
            raise FileNotFoundError(msg)
    network = TrackImageCNN()
    network.load_state_dict(torch.load(source, map_location="cpu", weights_only=True))
    return network.eval()


def predict_scores(
    network: TrackImageCNN, images: NDArray[np.float32], batch_size: int = 4096
) -> FloatArray:
    """Return the classifier scores in [0, 1] (float64) of raw images ``(n, 36, 36)``.

    The logits are computed in float32 on the network's device, batch by
    batch; their sigmoid is taken in float64.
    """
    device = next(network.parameters()).device
    network.eval()
    logits = []
    with torch.no_grad():
        for start in range(0, len(images), batch_size):
            batch = torch.from_numpy(np.array(images[start : start + batch_size], dtype=np.float32))
            logits.append(network(batch.to(device)).to("cpu", torch.float64))
    if not logits:
        return np.empty(0, dtype=np.float64)
    return torch.sigmoid(torch.cat(logits)).numpy()
