"""IRGI on several protected observables: nested cells of equal weight, interpolated.

The defining sample is split into cells of equal summed weight by nested
bisection (:mod:`rosenblatt.transforms._irgi_nested`): ``s1`` levels along
the first observable, then ``s2`` levels along the second inside every slab,
and so on (``splits = (s1, ..., sk)``; a total ``depth`` is shared as evenly
as cycling over the observables would share it). In each cell ``y`` is
bisected again, ``y_depth`` times, at the weighted quantiles of the cell's
scores; the cumulative weight fraction below each edge is the cell's
conditional CDF, linear in ``y`` between edges (0 below the domain, 1 at and
above its top). Between cells, ``gamma`` is interpolated multilinearly over
the cells' centres, one observable at a time, so that a correctionlib
multibinning holds it exactly.

The cells' CDFs are those of the residual ``u = y - (x - c) . b`` about
the weighted least-squares plane of ``y`` on ``x`` (centre ``c``, slope
``b``), and ``gamma(x, y)`` is read at the query's own residual. The plane
is an exact change of variable, ``P(Y <= y | x) = P(U <= u | x)``, but
``U`` depends on ``x`` less than ``Y`` does, so the cells, whose CDFs are
mixtures over their extent in ``x``, smear it less: on the closed form of
:data:`rosenblatt.closed_forms.VECTOR_CASES` (a linear trend), the RMS error
at the best depth falls from 0.046 to 0.008 at 10^5 defining events. Where
the plane is not defined (summed weight or weighted spread of ``x`` not
positive), the slope is zero and the cells take ``y`` itself.

``splits="auto"`` (``IRGI(depth="auto")``) cross-validates the integrated
Brier score over the balanced splits of every depth, then moves one level at
a time between observables (or adds or removes one) while that lowers the
score, and takes the fewest levels within one standard error of the best.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np

from rosenblatt.transforms import _local_polynomial as lp
from rosenblatt.transforms._irgi_nested import balanced_splits, nested_cells, nested_gamma
from rosenblatt.typing import BoolArray, FloatArray, IntArray

__all__ = ["Cells", "fit_cells", "linear_trend", "select_splits"]


def linear_trend(x: FloatArray, y: FloatArray, w: FloatArray) -> tuple[FloatArray, FloatArray]:
    """The weighted least-squares plane of ``y`` on ``x``: its centre and slope, each ``(k,)``.

    The slope is zero where the plane is not defined: a summed weight or a
    weighted covariance of ``x`` that is not positive (negative weights can
    make either so).
    """
    k = x.shape[1]
    total = float(w.sum())
    if not total > 0:
        return np.zeros(k), np.zeros(k)
    centre = (w @ x) / total
    dx = x - centre
    covariance = (dx * w[:, None]).T @ dx / total
    moment = (dx * w[:, None]).T @ (y - (w @ y) / total) / total
    try:
        np.linalg.cholesky(covariance)
    except np.linalg.LinAlgError:
        return centre, np.zeros(k)
    slope = np.linalg.solve(covariance, moment)
    if not np.all(np.isfinite(slope)):
        return centre, np.zeros(k)
    return centre, slope


def residual(x: FloatArray, y: FloatArray, centre: FloatArray, slope: FloatArray) -> FloatArray:
    """``u = y - (x - centre) . slope``, the score about the plane."""
    u: FloatArray = y - (x - centre) @ slope
    return u


def cell_columns(
    y: FloatArray, w: FloatArray, cells: list[IntArray], y_depth: int, y_lo: float, y_hi: float
) -> tuple[FloatArray, FloatArray]:
    """Per cell the ``y`` edges at its weighted quantiles and the CDF at them, padded to one width."""
    edges_list, cdf_list = [], []
    for rows in cells:
        order = rows[np.argsort(y[rows], kind="stable")]
        cumulative = np.concatenate(([0.0], np.cumsum(w[order])))
        total = cumulative[-1]
        if not total > 0:
            msg = f"a cell's summed weight is {total:g}: negative weights dominate it; use a smaller depth"
            raise ValueError(msg)
        edges = lp.y_edges(y[order], cumulative, 2**y_depth)
        edges = np.unique(np.concatenate(([y_lo], edges, [y_hi])))
        below = cumulative[np.searchsorted(y[order], edges, side="left")] / total
        cdf = np.clip(np.maximum.accumulate(below), 0.0, 1.0)
        cdf[0], cdf[-1] = 0.0, 1.0
        edges_list.append(edges)
        cdf_list.append(cdf)
    width = max(len(e) for e in edges_list)
    pad = [(0, width - len(e)) for e in edges_list]
    edges_out = np.stack([np.pad(e, p, mode="edge") for e, p in zip(edges_list, pad, strict=True)])
    cdf_out = np.stack([np.pad(c, p, mode="edge") for c, p in zip(cdf_list, pad, strict=True)])
    return edges_out, cdf_out


def max_vector_depth(n_events: int) -> int:
    """Largest x depth for ``n_events``: cells of at least 16 events."""
    return max(1, math.floor(math.log2(max(n_events, 2) / 16)))


def y_depth_for(n_events: int, depth: int) -> int:
    """``y`` depth of a cell of ``n_events / 2**depth`` events: about three events per ``y`` bin, 1 to 6."""
    per_cell = max(n_events, 1) / 2**depth
    return int(min(6, max(1, math.floor(math.log2(max(per_cell / 3, 1.0))))))


class Cells(NamedTuple):
    """The learned state of IRGI on several observables."""

    #: ``(n_cells, 2, k)`` each cell's box: its lower and upper corner
    boxes: FloatArray
    #: ``(n_cells, n_edge)`` each cell's edges in the residual ``u``
    edges: FloatArray
    #: the CDF at the edges
    cdf: FloatArray
    #: bisection levels of ``u`` in each cell
    y_depth: int
    #: ``(k,)`` the centre of the plane of ``y`` on ``x``
    centre: FloatArray
    #: ``(k,)`` its slope
    slope: FloatArray
    #: levels of the nested bisection per observable
    splits: tuple[int, ...]

    def gamma(self, x: FloatArray, y: FloatArray, y_range: tuple[float, float]) -> FloatArray:
        """``gamma`` at ``(x, y)`` (``x`` within the domain; ``y_range`` the domain in ``y``)."""
        u = residual(x, y, self.centre, self.slope)
        gamma = nested_gamma(self.boxes, self.splits, self.edges, self.cdf, x, u)
        return np.where(y <= y_range[0], 0.0, np.where(y >= y_range[1], 1.0, gamma))


def fit_cells(x: FloatArray, y: FloatArray, w: FloatArray | None, splits: tuple[int, ...]) -> Cells:
    """The nested cells of ``splits`` levels per observable and the plane their CDFs are taken about."""
    weight = np.ones(len(y)) if w is None else w
    centre, slope = linear_trend(x, y, weight)
    u = residual(x, y, centre, slope)
    lo, hi = x.min(axis=0), x.max(axis=0)
    cells, boxes = nested_cells(x, weight, splits, lo, hi)
    y_depth = y_depth_for(len(y), sum(splits))
    edges, cdf = cell_columns(u, weight, cells, y_depth, float(u.min()), float(u.max()))
    return Cells(boxes, edges, cdf, y_depth, centre, slope, tuple(int(s) for s in splits))


#: scored held-out events per fold and score thresholds of :func:`select_splits`
SCORED_PER_FOLD = 10_000
N_THRESHOLDS = 32
#: most rounds of moving one level between observables after the balanced search
MAX_MOVES = 8


def _neighbours(splits: tuple[int, ...], largest: int) -> list[tuple[int, ...]]:
    """Splits one level away: a level moved between two observables, added or removed."""
    k = len(splits)
    out = []
    for a in range(k):
        for b in range(k):
            step = [0] * k
            if a == b:
                for sign in (1, -1):
                    step[a] = sign
                    out.append(tuple(s + d for s, d in zip(splits, step, strict=True)))
                    step[a] = 0
            else:
                step[a], step[b] = 1, -1
                out.append(tuple(s + d for s, d in zip(splits, step, strict=True)))
    return [c for c in out if min(c) >= 0 and 1 <= sum(c) <= largest]


def select_splits(x: FloatArray, y: FloatArray, w: FloatArray | None, folds: int, seed: int) -> Any:
    """Cross-validate the levels per observable by the integrated Brier score (a :class:`Selection`).

    The balanced splits of every depth from 1 to the largest a training fold
    supports are scored first; from the best, one level is moved between
    observables, added or removed, while that lowers the score. Of the splits
    scored, the chosen one has the fewest levels among those whose score is
    within one standard error of the best (the paired differences over the
    folds): finer cells must earn their place. Thresholds are the inner
    weighted quantiles of the defining scores; at most
    :data:`SCORED_PER_FOLD` held-out events of each fold are scored.
    """
    from rosenblatt.transforms.selection import (
        Selection,
        brier_thresholds,
        fold_labels,
        smallest_training_fold,
    )

    k = x.shape[1]
    label = fold_labels(len(y), folds, seed)
    thresholds = brier_thresholds(y, w, N_THRESHOLDS)
    largest = max_vector_depth(smallest_training_fold(len(y), folds))
    rng = np.random.default_rng([seed, 1])
    held_out = []
    for fold in range(folds):
        held = np.flatnonzero(label == fold)
        held_out.append(rng.choice(held, min(len(held), SCORED_PER_FOLD), replace=False))
    fold_weight = sum(float(len(h) if w is None else w[h].sum()) for h in held_out) / folds
    prepared = [
        _prepare_fold(x, y, w, label != fold, held, thresholds)
        for fold, held in enumerate(held_out)
    ]
    per_fold: dict[tuple[int, ...], FloatArray] = {}

    def score(splits: tuple[int, ...]) -> float:
        if splits not in per_fold:
            totals = np.zeros(folds)
            for fold, part in enumerate(prepared):
                cells = fit_cells(part.x, part.y, part.w, splits)
                gamma = cells.gamma(part.xq, part.yq, part.y_range)
                brier = ((gamma.reshape(part.below.shape) - part.below) ** 2).mean(axis=1)
                totals[fold] = float(np.dot(part.weight, brier)) / fold_weight
            per_fold[splits] = totals
        return float(per_fold[splits].mean())

    best = min((balanced_splits(d, k) for d in range(1, largest + 1)), key=score)
    for _ in range(MAX_MOVES):
        candidate = min(_neighbours(best, largest), key=score, default=best)
        if score(candidate) >= score(best):
            break
        best = candidate
    tried = sorted(per_fold)
    return Selection(
        "splits",
        tuple(tried),
        tuple(score(s) for s in tried),
        _fewest_levels_within_one_error(per_fold, best),
        folds,
        seed,
        len(thresholds),
    )


class _Fold(NamedTuple):
    """A cross-validation fold: its training events and the held-out queries, built once."""

    x: FloatArray
    y: FloatArray
    w: FloatArray | None
    weight: FloatArray
    below: FloatArray
    xq: FloatArray
    yq: FloatArray
    y_range: tuple[float, float]


def _prepare_fold(
    x: FloatArray,
    y: FloatArray,
    w: FloatArray | None,
    train: BoolArray,
    held: IntArray,
    thresholds: FloatArray,
) -> _Fold:
    """The fold's training events, and its held-out events at every threshold (``x`` clipped to the training range)."""
    xq = np.clip(
        np.repeat(x[held], len(thresholds), axis=0), x[train].min(axis=0), x[train].max(axis=0)
    )
    return _Fold(
        x[train],
        y[train],
        None if w is None else w[train],
        np.ones(len(held)) if w is None else w[held],
        (y[held, None] < thresholds[None, :]).astype(np.float64),
        xq,
        np.tile(thresholds, len(held)),
        (float(y[train].min()), float(y[train].max())),
    )


def _fewest_levels_within_one_error(
    per_fold: dict[tuple[int, ...], FloatArray], best: tuple[int, ...]
) -> tuple[int, ...]:
    """The splits with the fewest levels whose mean score is within one standard error of ``best``'s."""
    folds = len(per_fold[best])
    close = []
    for splits, totals in per_fold.items():
        difference = totals - per_fold[best]
        error = float(difference.std(ddof=1)) / np.sqrt(folds) if folds > 1 else 0.0
        if difference.mean() <= error:
            close.append(splits)
    return min(close, key=lambda s: (sum(s), float(per_fold[s].mean()), s))
