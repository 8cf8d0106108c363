"""coffea's ``torch_wrapper`` for the TorchScript file of the track-image CNN.

:class:`TrackImageWrapper` follows coffea's convention for models inside
processors (:mod:`coffea.ml_tools`): it is created with the path of a
TorchScript file (and, for workers that do not see it, the file's bytes),
pickled to the workers without the model, and loads the model on first use
there (on CUDA when available, as ``torch_wrapper`` does).
Called on awkward records with an ``image`` field (1296 pixels per event,
row-major 36x36) it returns one float64 score per event.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import awkward as ak
import numpy as np
from numpy.typing import NDArray

from rosenblatt._extras import optional_imports
from rosenblatt.ml.cache import cached_content, cached_model
from rosenblatt.ml.cnn import check_images
from rosenblatt.ml.tables import IMAGE_SHAPE
from rosenblatt.ml.torchscript import load_torchscript

with optional_imports(__name__):
    from coffea.ml_tools.torch_wrapper import torch_wrapper

__all__ = ["TrackImageWrapper"]


class TrackImageWrapper(torch_wrapper):  # type: ignore[misc]  # coffea has no type hints
    """Scores of the track-image CNN's TorchScript file on awkward records.

    Parameters
    ----------
    torch_jit
        Path of the TorchScript file (``<name>.torchscript.pt``), as the
        workers see it.
    content
        That file's bytes, for workers that do not see it: the model is
        loaded from them and the path only names it in messages.

    Notes
    -----
    The model is loaded once per process and device (and again if the file
    changes; once per distinct bytes), not once per unpickled wrapper.
    """

    def __init__(self, torch_jit: str, content: bytes | None = None) -> None:
        super().__init__(torch_jit, expected_output_shape=(None,))
        self.content = content
        self.digest = (
            "" if content is None else hashlib.blake2b(content, digest_size=16).hexdigest()
        )

    def _create_model(self) -> Any:
        device = self.device
        if self.content is not None:
            path = Path(self.torch_jit)
            return cached_content(
                f"torchscript:{device}",
                self.digest,
                self.content,
                lambda content: _load(path, device, content),
            )
        return cached_model(
            f"torchscript:{device}",
            Path(self.torch_jit),
            lambda path: _load(path, device),
        )

    def prepare_awkward(self, records: Any) -> tuple[tuple[Any, ...], dict[str, Any]]:
        """Turn the records' ``image`` field into float32 images ``n * 36 * 36``."""
        lib = self.get_awkward_lib(records)
        if lib is None:
            msg = f"records must be an awkward array, got {type(records).__name__}"
            raise TypeError(msg)
        if lib is ak and len(records) == 0:
            return (np.zeros((0, *IMAGE_SHAPE), dtype=np.float32),), {}
        pixels = lib.values_astype(records["image"], np.float32)
        return (lib.unflatten(pixels, IMAGE_SHAPE[1], axis=-1),), {}

    def validate_numpy_input(self, images: NDArray[np.float32]) -> None:
        """Raise a :class:`ValueError` unless the images are ``(n, 36, 36)``, finite, non-negative."""
        check_images(images)
        bad = ~np.isfinite(images).all(axis=(1, 2))
        if bad.any():
            msg = (
                f"images: {int(bad.sum())} of {len(images)} events have NaN or infinite "
                f"pixels (first at row {int(np.flatnonzero(bad)[0])})"
            )
            raise ValueError(msg)


def _load(path: Path, device: Any, content: bytes | None = None) -> Any:
    """Read a TorchScript file (or its bytes) onto ``device``; a file of another kind is named."""
    try:
        return load_torchscript(path if content is None else content, map_location=device)
    except RuntimeError as error:
        msg = f"{path} is not a TorchScript file that torch can load: {error}"
        raise ValueError(msg) from error
