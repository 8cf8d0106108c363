"""The names of a saved model's files.

A model named ``disco_a3.5_s2`` is saved as ``disco_a3.5_s2.pt`` (CNN weights)
or ``.npz`` (gradient boosting), ``.torchscript.pt`` (the CNN as TorchScript),
``.scores.npz`` (its scores) and ``.json`` (metadata). Names may contain dots,
so a suffix is appended to the full name, never put in place of what follows
the last dot.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["MODEL_SUFFIXES", "TORCHSCRIPT_SUFFIX", "model_file", "model_stem", "torchscript_file"]

#: suffix of the TorchScript file of a CNN
TORCHSCRIPT_SUFFIX = ".torchscript.pt"

#: suffixes of the files of a model, longest first
MODEL_SUFFIXES = (TORCHSCRIPT_SUFFIX, ".scores.npz", ".json", ".npz", ".pt")


def model_file(stem: str | os.PathLike[str], suffix: str) -> Path:
    """Return ``stem`` with ``suffix`` appended to its full name."""
    stem = Path(stem)
    return stem.with_name(stem.name + suffix)


def model_stem(path: str | os.PathLike[str]) -> Path:
    """Return the stem of any file of a model (``models/a.json`` -> ``models/a``).

    A path without one of :data:`MODEL_SUFFIXES` is returned unchanged.
    """
    path = Path(path)
    for suffix in MODEL_SUFFIXES:
        if path.name.endswith(suffix) and len(path.name) > len(suffix):
            return path.with_name(path.name[: -len(suffix)])
    return path


def torchscript_file(path: str | os.PathLike[str]) -> Path:
    """Return the TorchScript file beside a model's weights (``a.pt`` -> ``a.torchscript.pt``)."""
    return model_file(model_stem(path), TORCHSCRIPT_SUFFIX)
