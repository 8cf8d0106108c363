"""Whether a transform's held-out pass fraction at a cut level depends on ``x``.

An ABCD estimate at a cut ``gamma >= l`` closes when the fraction of events
passing the cut does not depend on ``x``. Cross-validation gives a fit's
``gamma`` at events it was not fitted on (each event is held out once), so
that this can be checked on the defining sample at no further cost: the
events are split into :data:`X_BINS` bins of ``x`` of equal summed ``|w|``,
and in each bin ``k`` the weighted sums ``T_k = sum w``, ``V_k = sum w**2``
and ``S_k = sum w [gamma >= l]`` give the residuals ``r_k = S_k - p T_k``
about the pooled fraction ``p = sum S / sum T``. Their covariance for
independent events passing with probability ``p`` is
``p (1 - p) (V_k d_km - (T_k V_m + T_m V_k) / W + T_k T_m V / W**2)``
(``W = sum T``, ``V = sum V_k``); the statistic ``r' C^-1 r`` over all bins but
one (the residuals sum to zero) is chi-square distributed with
``X_BINS - 1`` degrees of freedom. With unit weights it is Pearson's
statistic of the ``2 x X_BINS`` table. One test per level covers a cut on
either side (``gamma >= l`` and ``gamma < l`` pass complementary fractions).

A candidate passes when every level's p-value is at least :data:`ALPHA`
divided by the number of levels. The test asks whether the dependence would
be significant in an independent sample of the defining sample's size, with
binomial errors. On the held-out events it is conservative where the fit
follows the conditional distribution: the fit of each fold moves with the
events of the other folds against those of its own, and the fluctuations
largely cancel in the sum over folds (for an empirical quantile in a single
column of ``x`` they cancel exactly to first order). Measured with IRGI,
10 folds, 20k events per toy and the levels ``(0.5, 0.8, 0.95)``
(threshold ``0.01 / 3``) unless stated:

========================================  =====  ==============  =====================
population, depths tested                 toys   failing         least p (median)
========================================  =====  ==============  =====================
``y`` independent of ``x``, 5 and 6       40     0 of 80         0.61 (0.97)
25% negative weights, 5 and 6             40     0 of 67 fitted  0.19 (0.74)
correlated, 6                             40     0 of 40         0.92 (0.98)
correlated, 4 (0.8 bins beyond 0.95)      40     2 of 40         0.0004 (0.08)
correlated, 3 (0.4 bins beyond 0.95)      40     40 of 40        7e-22 (8e-16)
tail only, 3 (best score), level 0.95     3      3 of 3          p 1e-6, 1e-3, 4e-6
tail only, 4, level 0.95                  3      0 of 3          p 0.94 to 0.96
========================================  =====  ==============  =====================

``x`` has density ``e^(-3x)`` on ``[0, 1]``; correlated: ``y | x`` Beta of mean
``0.3 + 0.4 x`` and concentration 5 (the population of
:mod:`rosenblatt.transforms._irgi_depth`); negative weights:
:func:`rosenblatt.testing.negative_weight_sample`; tail only: ``x`` uniform,
``y`` uniform but a share ``0.1 x`` of the events uniform in ``[0.97, 1)``,
where the cross-validated score prefers depth 3 to depth 4. Depth 4 at the
level 0.95 (fewer bins beyond it than :func:`~rosenblatt.transforms._irgi_depth.cut_depth`
asks) leaves a held-out ``A / (B C / D)`` (``x >= 0.6``) of 1.15 and 1.32 in two
of those toys, 1.2 and 2.6 times the Poisson error of A: a dependence at the
edge of what 20k events show, which the test then rejects in a few toys.

The kernel estimates (:func:`~rosenblatt.transforms.selection.select_bandwidth`,
the held-out ``gamma`` from the binned estimate of each fold) in 20 toys of
20k events per row, every width the search tried, the same levels:

=======================================  =====================  =================================
population, degree                       widths failing         the choice
=======================================  =====================  =================================
``y`` independent of ``x``, 0 and 2      0 of 410 (p >= 0.006)  kept in 40 of 40
correlated, 0 (Nadaraya-Watson)          62 of 160, the wide    kept in 20 of 20
correlated, 2                            1 of 160               kept in 20 of 20
25% negative weights, 0 (as GridKDE)     83 of 121, the wide    noted in 2 (no narrow width fits)
25% negative weights, 2                  18 of 125              kept in 20 of 20
tail only, 0, widths 0.01 and 0.64 only  0.64 in 3 of 3         0.01 (the score: 0.64)
=======================================  =====================  =================================

In the tail-only toys the score prefers ``sigma_r = 0.64`` (p 1e-4 to 5e-4 at
the level 0.95); 0.01 passes (p >= 0.98).
"""

from __future__ import annotations

import numpy as np
from scipy import stats

from rosenblatt.typing import FloatArray, IntArray

__all__ = ["ALPHA", "X_BINS", "homogeneity_pvalue", "x_bins"]


#: bins of ``x`` (equal summed ``|w|``) in which the pass fraction is compared
X_BINS = 5
#: significance of the test, shared among the cut levels (Bonferroni)
ALPHA = 0.01


def x_bins(x: FloatArray, weight: FloatArray | None, n_bins: int | None = None) -> IntArray:
    """Bin of each event: ``n_bins`` bins of ``x`` of equal summed ``|weight|`` (ties share one).

    ``n_bins`` is :data:`X_BINS` by default.
    """
    if n_bins is None:
        n_bins = X_BINS
    order = np.argsort(x, kind="stable")
    size = np.ones(len(x)) if weight is None else np.abs(weight[order])
    cumulative = np.cumsum(size)
    total = cumulative[-1] if len(cumulative) else 0.0
    if not total > 0:
        return np.zeros(len(x), dtype=np.intp)
    inner = np.searchsorted(cumulative, total * np.arange(1, n_bins) / n_bins, side="left")
    edges = x[order][np.minimum(inner, len(x) - 1)]
    return np.asarray(np.searchsorted(edges, x, side="right"), dtype=np.intp)


def homogeneity_pvalue(passing: FloatArray, total: FloatArray, squares: FloatArray) -> float:
    """P-value of a constant pass fraction across bins, from per-bin weighted sums.

    Parameters
    ----------
    passing, total, squares
        Per bin: ``sum w`` of the passing events, ``sum w`` and ``sum w**2``
        of all events.

    Returns
    -------
    float
        The chi-square p-value (1 where fewer than two bins hold events or
        where every event passes, or none does).
    """
    keep = squares > 0
    s, t, v = passing[keep], total[keep], squares[keep]
    if len(t) < 2:
        return 1.0
    w = float(t.sum())
    p = float(s.sum()) / w if w > 0 else float("nan")
    if not 0.0 < p < 1.0:
        return 1.0
    r = s - p * t
    cov = (
        p
        * (1.0 - p)
        * (
            np.diag(v)
            - (np.outer(t, v) + np.outer(v, t)) / w
            + np.outer(t, t) * float(v.sum()) / w**2
        )
    )
    try:
        chi2 = float(r[:-1] @ np.linalg.solve(cov[:-1, :-1], r[:-1]))
    except np.linalg.LinAlgError:
        chi2 = float(r[:-1] @ np.linalg.pinv(cov[:-1, :-1]) @ r[:-1])
    return float(stats.chi2.sf(max(chi2, 0.0), len(t) - 1))
