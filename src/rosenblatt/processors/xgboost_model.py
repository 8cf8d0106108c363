"""An XGBoost classifier's score through coffea's ``xgboost_wrapper``.

coffea's convention for models inside processors: the wrapper holds the model
file's path and creates the ``xgboost.Booster`` lazily in each process, so the
scorer travels to workers as a path. Given the file's bytes instead, the
scorer carries them and each process builds the booster from them
(``Booster.load_model`` of a ``bytearray``, JSON or UBJSON alike) without
opening the path.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from rosenblatt.typing import FloatArray

__all__ = ["XGBoostScore"]


class XGBoostScore:
    """Scores ``(n,)`` of an XGBoost model file for a feature matrix ``(n, k)``.

    Parameters
    ----------
    path : str
        A model saved by ``xgboost.Booster.save_model`` (JSON or UBJSON).
    content : bytes, optional
        That file's bytes: the booster is built from them, the path only
        names the model in messages.

    Raises
    ------
    ImportError
        If xgboost is missing, naming the extra that brings it.
    ValueError
        If the matrix has another number of columns than the model's features.
    """

    def __init__(self, path: str, content: bytes | None = None) -> None:
        try:
            from coffea.ml_tools import xgboost_wrapper
        except ImportError as err:
            msg = 'an xgboost score needs the xgboost extra: pip install "rosenblatt[xgboost]"'
            raise ImportError(msg) from err

        class _Matrix(xgboost_wrapper):  # type: ignore[misc]  # coffea has no type hints
            """The wrapper for a feature matrix given as it is."""

            def prepare_awkward(self, matrix: Any) -> tuple[list[Any], dict[str, Any]]:
                return [matrix], {}

            def _create_xgbooster(self) -> Any:
                if content is None:
                    return super()._create_xgbooster()
                import xgboost

                booster = xgboost.Booster()
                booster.load_model(bytearray(content))
                return booster

        self.path = path
        self._wrapper: Any = _Matrix(path)

    def __call__(self, matrix: FloatArray) -> FloatArray:
        """The model's prediction for every row of ``matrix``."""
        expected = int(self._wrapper.xgbooster.num_features())
        if matrix.shape[1] != expected:
            msg = (
                f"xgboost {self.path}: the model takes {expected} features, "
                f"{matrix.shape[1]} are listed under features:"
            )
            raise ValueError(msg)
        if len(matrix) == 0:
            return np.empty(0, dtype=np.float64)
        return np.asarray(self._wrapper(matrix), dtype=np.float64)
