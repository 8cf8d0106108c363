"""Classifiers for the per-event feature table: the track-image CNN, DisCo, gradient boosting.

Library entry points:

* :func:`train_classifier` trains one model (``kind="cnn"`` with DisCo strength
  ``alpha``, or ``kind="gbdt"``) and returns a :class:`TrainedModel`.
* :func:`run_scan` trains the paper's grid (baseline x seeds, DisCo alpha x
  seeds) in parallel, resumably, and writes the scores back into the tables.
* :class:`TrackImageCNN` is the network and :func:`distance_correlation_sqr`
  the differentiable weighted dCor^2 of the DisCo loss (both need torch, the
  ``ml`` extra; the gradient boosting needs only scikit-learn).
* :class:`ConditionalFlow` is a conditional normalizing flow (zuko) of the
  score given ``x`` whose CDF decorrelates it, a transform like IRGI.
* :func:`make_scorer` turns a score specification (a column, a TorchScript
  file, a saved model) into a picklable callable on awkward records, for
  coffea processors; :func:`export_torchscript` writes the TorchScript file
  of a CNN saved before such files were written with it.
"""

from __future__ import annotations

import importlib
from typing import Any

from rosenblatt.ml.gbdt import GBDTOptions, TreeEnsemble
from rosenblatt.ml.scan import PAPER_ALPHAS, ModelSpec, ScanResult, plan_scan, run_scan
from rosenblatt.ml.scoring import Scorer, make_scorer
from rosenblatt.ml.tables import EventArrays, event_arrays, with_columns
from rosenblatt.ml.training import CNNOptions, TrainedModel, train_classifier, train_on_arrays

__all__ = [
    "PAPER_ALPHAS",
    "CNNOptions",
    "ConditionalFlow",
    "EventArrays",
    "GBDTOptions",
    "ModelSpec",
    "ScanResult",
    "Scorer",
    "TrackImageCNN",
    "TrainedModel",
    "TreeEnsemble",
    "distance_correlation_sqr",
    "event_arrays",
    "export_torchscript",
    "make_scorer",
    "plan_scan",
    "run_scan",
    "train_classifier",
    "train_on_arrays",
    "with_columns",
]

#: names that import torch, loaded on first use
_TORCH_NAMES = {
    "ConditionalFlow": "rosenblatt.ml.flow",
    "TrackImageCNN": "rosenblatt.ml.cnn",
    "distance_correlation_sqr": "rosenblatt.ml.disco",
    "export_torchscript": "rosenblatt.ml.torchscript",
}


def __getattr__(name: str) -> Any:
    if name in _TORCH_NAMES:
        return getattr(importlib.import_module(_TORCH_NAMES[name]), name)
    msg = f"module {__name__!r} has no attribute {name!r}"
    raise AttributeError(msg)


def __dir__() -> list[str]:
    return list(__all__)
