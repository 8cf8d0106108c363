"""Estimators of the conditional CDF ``gamma(x, y) = P(Y <= y | X = x)``, one per module."""

from __future__ import annotations

from rosenblatt.transforms._base import (
    ConditionalCDFTransform,
    NaNInputWarning,
    NotFittedError,
    OutsideCounts,
)
from rosenblatt.transforms.ensemble import TransformEnsemble, bootstrap
from rosenblatt.transforms.grid_kde import GridKDE
from rosenblatt.transforms.irgi import IRGI
from rosenblatt.transforms.kde import KDE, absolute_sigma
from rosenblatt.transforms.mergeable import MergeableFit

__all__ = [
    "IRGI",
    "KDE",
    "ConditionalCDFTransform",
    "GridKDE",
    "MergeableFit",
    "NaNInputWarning",
    "NotFittedError",
    "OutsideCounts",
    "TransformEnsemble",
    "absolute_sigma",
    "bootstrap",
]
