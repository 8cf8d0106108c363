"""What the LHCO study's steps hand to each other and to its report."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from rosenblatt.abcd import ClosureScan

__all__ = ["Closure", "Decorrelation"]


@dataclass
class Decorrelation:
    """IRGI and KDE of the best baseline: the scans over their parameter and the chosen fits."""

    x_def: NDArray[np.float64]
    y_def: NDArray[np.float64]
    scans: dict[str, list[dict[str, Any]]]
    fitted: dict[str, dict[float, Any]]
    chosen: dict[str, Any]

    def transform(self, name: str) -> Any:
        """The chosen fit of ``name`` (``"irgi"`` or ``"kde"``)."""
        return self.fitted[name][self.chosen[name]]


@dataclass
class Closure:
    """The testing sample's scores, its ABCD closure per classifier, and the statistics stage's output."""

    scores: dict[str, NDArray[np.float64]]
    closures: dict[str, ClosureScan]
    agreement: dict[str, Any]
    classifiers: dict[str, dict[str, Any]]
    statistics: dict[str, Any]
