"""Dependence and classification figures of merit, all with per-event weights.

Distance correlation
    :func:`distance_correlation_sqr` is the squared distance correlation
    (dCor², the V-statistic of Székely, Rizzo & Bakirov 2007), the "DCC" of the
    Rosenblatt-transform paper and the DisCo penalty. :func:`distance_correlation`
    is its square root and :func:`distance_covariance_sqr` the squared distance
    covariance, with the same conventions as the ``dcor`` package. The
    one-dimensional statistic is evaluated exactly in :math:`O(n \\log n)` time
    and :math:`O(n)` memory (Huo & Székely 2016), so millions of events are routine.
    :func:`permutation_test` puts a value in context: it reports the floor that
    independent samples of the same size reach and a permutation p-value.
    ``x`` may hold several observables, shape ``(n, k)``: the statistic is then
    exact over all pairs up to 5x10^4 events and estimated from random
    projections beyond (:func:`projected_distance_correlation_sqr`, Huang & Huo 2017).

Classification
    :func:`roc_curve` and :func:`roc_auc` follow scikit-learn exactly;
    :func:`background_rejection` (R50 at the default 50 % signal efficiency) and
    :func:`inverse_jsd` (1/JSD of the background mass shape passing and failing
    that cut) are the figures quoted in the decorrelation literature
    (Kitouni et al. 2021; Klein & Golling 2022; Algren et al. 2023).

Weights
    Every function takes an optional per-event ``weight``. Weights act as
    frequencies: integer weights give exactly the result of repeating each event
    that many times. Weights may be negative (Monte Carlo weights), but the
    total must be positive; see each function for what negative weights do.
"""

from __future__ import annotations

from rosenblatt.metrics._multivariate import ProjectedCorrelation
from rosenblatt.metrics.distance import (
    distance_correlation,
    distance_correlation_sqr,
    distance_covariance_sqr,
    projected_distance_correlation_sqr,
)
from rosenblatt.metrics.divergence import inverse_jsd
from rosenblatt.metrics.permutation import PermutationTestResult, permutation_test
from rosenblatt.metrics.roc import background_rejection, roc_auc, roc_curve

__all__ = [
    "PermutationTestResult",
    "ProjectedCorrelation",
    "background_rejection",
    "distance_correlation",
    "distance_correlation_sqr",
    "distance_covariance_sqr",
    "inverse_jsd",
    "permutation_test",
    "projected_distance_correlation_sqr",
    "roc_auc",
    "roc_curve",
]


def __dir__() -> list[str]:
    return list(__all__)
