"""A TorchScript classifier's score on a table of features, through coffea's ``torch_wrapper``.

The counterpart of :mod:`rosenblatt.processors.xgboost_model` for PyTorch:
coffea's wrapper holds the TorchScript file's path and loads the module
lazily in each process, so the scorer travels to workers as a path; given the
file's bytes instead, each process loads the module from them
(``torch.jit.load`` of an ``io.BytesIO``) without opening the path. The model
is called on one ``float32`` tensor ``(n, k)`` of the listed features and
returns one score per event (``(n,)`` or ``(n, 1)``).
"""

from __future__ import annotations

import io
import warnings
from typing import Any

import numpy as np

from rosenblatt.typing import FloatArray

__all__ = ["TorchScriptScore"]


class TorchScriptScore:
    """Scores ``(n,)`` of a TorchScript module for a feature matrix ``(n, k)``.

    Parameters
    ----------
    path : str
        A module saved by ``torch.jit.save``, taking a ``float32`` tensor
        ``(n, k)``.
    content : bytes, optional
        That file's bytes: the module is loaded from them, the path only
        names it in messages.

    Raises
    ------
    ImportError
        If torch is missing, naming the extra that brings it.
    ValueError
        If the module does not return one score per event.
    """

    def __init__(self, path: str, content: bytes | None = None) -> None:
        try:
            import torch  # noqa: F401
            from coffea.ml_tools import torch_wrapper
        except ImportError as err:
            msg = 'a torchscript score needs the ml extra: pip install "rosenblatt[ml]"'
            raise ImportError(msg) from err

        class _Matrix(torch_wrapper):  # type: ignore[misc]  # coffea has no type hints
            """The wrapper for a feature matrix given as it is."""

            def prepare_awkward(self, matrix: Any) -> tuple[list[Any], dict[str, Any]]:
                return [matrix], {}

            def validate_numpy_input(self, matrix: Any) -> None:
                if matrix.ndim != 2 or matrix.dtype != np.float32:
                    msg = f"expected a float32 matrix (events, features), got {matrix.dtype} {matrix.shape}"
                    raise ValueError(msg)

        self.path = path
        # the wrapper hands its argument to torch.jit.load, which reads a path or a file object
        self._wrapper: Any = _Matrix(path if content is None else io.BytesIO(content))

    def __call__(self, matrix: FloatArray) -> FloatArray:
        """The module's score for every row of ``matrix``."""
        if len(matrix) == 0:
            return np.empty(0, dtype=np.float64)
        with warnings.catch_warnings():
            # torch.jit.load, called by the wrapper on first use, warns of its deprecation
            warnings.filterwarnings(
                "ignore", message=r"`torch\.jit\.\w+` is deprecated", category=DeprecationWarning
            )
            scores = np.asarray(self._wrapper(np.ascontiguousarray(matrix, dtype=np.float32)))
        if scores.ndim == 2 and scores.shape[1] == 1:
            scores = scores[:, 0]
        if scores.shape != (len(matrix),):
            msg = (
                f"torchscript {self.path}: the module returned an array of shape "
                f"{scores.shape} for {len(matrix)} events; it must give one score per event"
            )
            raise ValueError(msg)
        return scores.astype(np.float64)
