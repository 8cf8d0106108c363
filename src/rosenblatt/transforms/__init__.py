"""Estimators of the conditional CDF ``gamma(x, y) = P(Y <= y | X = x)``, one per module."""

from __future__ import annotations

from rosenblatt.exceptions import NegativeWeightError
from rosenblatt.transforms._base import (
    ConditionalCDFTransform,
    NaNInputWarning,
    NotFittedError,
    OutsideCounts,
)
from rosenblatt.transforms.ddt import DDT
from rosenblatt.transforms.ensemble import TransformEnsemble, bootstrap, keyed_poisson_weights
from rosenblatt.transforms.grid_kde import GridKDE
from rosenblatt.transforms.irgi import IRGI
from rosenblatt.transforms.kde import KDE, absolute_sigma
from rosenblatt.transforms.rarity import Rarity
from rosenblatt.transforms.sequential import SequentialTransform
from rosenblatt.transforms.strength import (
    MarginalCDF,
    PartialDecorrelation,
    partial_decorrelation,
)

__all__ = [
    "DDT",
    "IRGI",
    "KDE",
    "ConditionalCDFTransform",
    "GridKDE",
    "MarginalCDF",
    "NaNInputWarning",
    "NegativeWeightError",
    "NotFittedError",
    "OutsideCounts",
    "PartialDecorrelation",
    "Rarity",
    "SequentialTransform",
    "TransformEnsemble",
    "absolute_sigma",
    "bootstrap",
    "keyed_poisson_weights",
    "partial_decorrelation",
]
