"""The track-image CNN as a TorchScript file, the model format of coffea's ``torch_wrapper``.

The TorchScript module maps a float32 tensor of raw track images
``(n, 36, 36)`` (pixels in GeV, before any normalisation) to the classifier
scores ``(n,)`` in [0, 1] as float64: the network's own input
standardisation, its logits in float32 and their sigmoid in float64, exactly
as :func:`rosenblatt.ml.cnn.predict_scores`. Loading it needs only torch, not
this package.

torch 2.13 marks ``torch.jit`` as deprecated; coffea's ``torch_wrapper``
loads nothing else, so the deprecation warnings of ``torch.jit`` are silenced
where this package writes or reads such a file.
"""

from __future__ import annotations

import copy
import io
import os
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from rosenblatt._atomic import atomic_write
from rosenblatt._extras import optional_imports
from rosenblatt.ml.cnn import TrackImageCNN, load_network
from rosenblatt.ml.files import torchscript_file
from rosenblatt.ml.tables import IMAGE_SHAPE

with optional_imports(__name__):
    import torch
    from torch import nn

__all__ = ["ScoreModule", "export_torchscript", "load_torchscript", "save_torchscript"]


class ScoreModule(nn.Module):
    """A :class:`~rosenblatt.ml.cnn.TrackImageCNN` followed by a float64 sigmoid."""

    def __init__(self, network: TrackImageCNN) -> None:
        super().__init__()
        self.network = network

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        """Return the scores ``(n,)`` (float64) of raw images ``(n, 36, 36)`` (float32)."""
        return torch.sigmoid(self.network(images).to(torch.float64))


@contextmanager
def _quiet_jit() -> Iterator[None]:
    """Silence the deprecation warnings that ``torch.jit`` functions emit."""
    with warnings.catch_warnings():
        warnings.filterwarnings(
            "ignore", message=r"`torch\.jit\.\w+` is deprecated", category=DeprecationWarning
        )
        yield


def save_torchscript(network: TrackImageCNN, path: str | os.PathLike[str]) -> Path:
    """Trace ``network`` with its score sigmoid on the CPU and write it to ``path``.

    The file is written through a temporary file beside it. Returns ``path``.
    """
    path = Path(path)
    module = ScoreModule(copy.deepcopy(network).to("cpu").eval())
    example = torch.ones((2, *IMAGE_SHAPE), dtype=torch.float32)
    with _quiet_jit(), torch.no_grad(), atomic_write(path) as temporary:
        traced = torch.jit.trace(module, example)
        torch.jit.save(traced, str(temporary))
    return path


def load_torchscript(path: str | os.PathLike[str] | bytes, map_location: Any = None) -> Any:
    """Read a TorchScript file (``torch.jit.load``) in evaluation mode.

    ``path`` may also be the file's bytes, read without opening any file.
    """
    source = io.BytesIO(path) if isinstance(path, bytes) else os.fspath(path)
    with _quiet_jit():
        module = torch.jit.load(source, map_location=map_location)
    return module.eval()


def export_torchscript(
    model_path: str | os.PathLike[str], output_path: str | os.PathLike[str] | None = None
) -> Path:
    """Write the TorchScript file of a CNN saved as a state dict (``<name>.pt``).

    For models trained before TorchScript files were saved with them.

    Parameters
    ----------
    model_path
        The CNN weights written by :meth:`~rosenblatt.ml.TrainedModel.save` or
        :func:`~rosenblatt.ml.run_scan` (read with ``weights_only=True``).
    output_path
        Where to write; default ``<name>.torchscript.pt`` beside ``model_path``.

    Returns
    -------
    pathlib.Path
        The TorchScript file.

    Raises
    ------
    FileNotFoundError
        If ``model_path`` does not exist.
    ValueError
        If ``output_path`` would overwrite ``model_path``.
    """
    weights = Path(model_path)
    output = Path(output_path) if output_path is not None else torchscript_file(weights)
    if output.resolve() == weights.resolve():
        msg = f"the TorchScript file must not overwrite the weights {weights}"
        raise ValueError(msg)
    return save_torchscript(load_network(weights), output)
