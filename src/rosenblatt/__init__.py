"""rosenblatt: post-hoc decorrelation with the numerical Rosenblatt transform.

Make a classifier score ``y`` statistically independent of a protected
observable ``x`` for a background population by replacing it with the
conditional CDF ``gamma(x, y) = P(Y <= y | X = x)`` estimated on a defining
background sample, with :class:`IRGI` (adaptive grid) or :class:`KDE`
(Gaussian kernel in ``x``).

>>> import rosenblatt as rb
>>> t = rb.IRGI(depth=7).fit(x, y)          # doctest: +SKIP
>>> gamma = t.transform(x_test, y_test)     # doctest: +SKIP
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rosenblatt._version import __version__
from rosenblatt.exceptions import RosenblattError
from rosenblatt.outofcore import MergeableFit
from rosenblatt.serialization import SchemaError, load
from rosenblatt.transforms import (
    DDT,
    IRGI,
    KDE,
    GridKDE,
    NaNInputWarning,
    NotFittedError,
    OutsideCounts,
    Rarity,
    SequentialTransform,
    TransformEnsemble,
    bootstrap,
)

if TYPE_CHECKING:  # imported on first use (__getattr__), typed for type checkers here
    from rosenblatt.metrics import (
        PermutationTestResult,
        background_rejection,
        distance_correlation,
        distance_correlation_sqr,
        distance_covariance_sqr,
        inverse_jsd,
        permutation_test,
        roc_auc,
        roc_curve,
    )

_METRICS = (
    "PermutationTestResult",
    "background_rejection",
    "distance_correlation",
    "distance_correlation_sqr",
    "distance_covariance_sqr",
    "inverse_jsd",
    "permutation_test",
    "roc_auc",
    "roc_curve",
)

__all__ = [
    "DDT",
    "IRGI",
    "KDE",
    "GridKDE",
    "MergeableFit",
    "NaNInputWarning",
    "NotFittedError",
    "OutsideCounts",
    "PermutationTestResult",
    "Rarity",
    "RosenblattError",
    "SchemaError",
    "SequentialTransform",
    "TransformEnsemble",
    "__version__",
    "background_rejection",
    "bootstrap",
    "distance_correlation",
    "distance_correlation_sqr",
    "distance_covariance_sqr",
    "inverse_jsd",
    "load",
    "permutation_test",
    "roc_auc",
    "roc_curve",
]


def __getattr__(name: str) -> Any:
    if name in _METRICS:
        from rosenblatt import metrics

        return getattr(metrics, name)
    msg = f"module 'rosenblatt' has no attribute {name!r}"
    raise AttributeError(msg)


def __dir__() -> list[str]:
    return list(__all__)
