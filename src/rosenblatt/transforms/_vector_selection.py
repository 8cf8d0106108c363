"""Cross-validated choice of the kernel width of a tensor-grid estimate (several observables).

The counterpart of :func:`rosenblatt.transforms.selection.select_bandwidth` for
``x`` of shape ``(n, k)``: the same integrated Brier score, ``folds``-fold,
each fold's estimate computed from the binned weight of the other folds on
the tensor grid (:mod:`rosenblatt.transforms._tensor_grid`) and interpolated
multilinearly to the held-out events, as the fitted estimate is evaluated.
The thresholds are the inner weighted quantiles of the defining scores, the
same for every event (a proper score, whose expectation is the mean squared
distance of the estimate to the true conditional CDF averaged over those
thresholds). The common relative width ``sigma_r`` (the kernel width along
axis ``d`` is ``sigma_r * sigma_a[d]``) is searched from coarse to fine as in
one dimension (from :data:`MIN_SIGMA_R` up); then, with ``per_axis``, each axis's width is refined in turn
by factors of :data:`AXIS_FACTORS` while the score improves.
"""

from __future__ import annotations

import math

import numpy as np

from rosenblatt.transforms import _tensor_grid as tg
from rosenblatt.transforms._local_polynomial import rearrange
from rosenblatt.transforms.selection import (
    DEFAULT_THRESHOLDS,
    Selection,
    _coarse_to_fine,
    brier_thresholds,
    fold_labels,
)
from rosenblatt.typing import FloatArray

__all__ = ["AXIS_FACTORS", "TensorFolds", "select_vector_bandwidth"]


#: factors tried on one axis's width at a time after the common width is chosen
AXIS_FACTORS = (2.0**-0.5, 2.0**0.5)
#: smallest common ``sigma_r`` searched: narrower kernels in several dimensions hold
#: too few events to compete (and need the largest grids)
MIN_SIGMA_R = 0.08
#: most nodes times thresholds times folds of the binned sample scored per width
MAX_SCORED_ELEMENTS = 20_000_000


class TensorFolds:
    """Folds of a sample with ``k`` observables, scored for any kernel widths.

    Parameters
    ----------
    x, y, weight
        The validated defining sample, ``x`` of shape ``(n, k)``.
    degree
        Degree of the local polynomial.
    sigma_a
        ``(k,)`` spread of every observable.
    folds, seed
        The cross-validation folds and the seed of their assignment.
    spacing
        Node spacing in units of the kernel width.
    max_nodes
        Most nodes of a grid; wider kernels only beyond (and at most
        :data:`MAX_SCORED_ELEMENTS` nodes times thresholds times folds).
    """

    def __init__(
        self,
        x: FloatArray,
        y: FloatArray,
        weight: FloatArray | None,
        *,
        degree: int,
        sigma_a: FloatArray,
        folds: int,
        seed: int,
        spacing: float,
        max_nodes: int,
        adaptive: bool = False,
    ) -> None:
        self.x, self.weight, self.degree, self.sigma_a = x, weight, degree, sigma_a
        self.adaptive = adaptive
        self.folds, self.spacing, self.max_nodes = folds, spacing, max_nodes
        self.label = fold_labels(len(x), folds, seed)
        self.thresholds = brier_thresholds(y, weight, DEFAULT_THRESHOLDS)
        self.column = np.searchsorted(self.thresholds, y, side="right")
        self.event_weight = np.ones(len(x)) if weight is None else weight
        self.total_weight = float(self.event_weight.sum())
        exponent = 1.0 / (4 + x.shape[1]) if degree < 2 else 1.0 / (8 + x.shape[1])
        self.train_scale = (folds / (folds - 1)) ** exponent
        self.lo, self.hi = x.min(axis=0), x.max(axis=0)
        self.scores: dict[tuple[float, ...], float] = {}

    def steps(self, relative: FloatArray) -> FloatArray:
        """Node spacing along every axis for the relative widths ``relative``.

        With ``adaptive`` the spacing grows where the grid would exceed
        ``max_nodes``, so that every width can be scored.
        """
        step = relative * self.sigma_a * self.train_scale * self.spacing
        if self.adaptive:
            per_axis = max(2, int(self.max_nodes ** (1.0 / len(step))))
            step = np.maximum(step, (self.hi - self.lo) / (per_axis - 1) * (1 + 1e-9))
        return np.asarray(step, dtype=np.float64)

    def node_count(self, relative: FloatArray) -> int:
        """Nodes of the grid for the relative widths ``relative`` (per axis)."""
        step = self.steps(relative)
        return math.prod(
            max(2, math.ceil((h - lo) / s) + 1)
            for lo, h, s in zip(self.lo, self.hi, step, strict=True)
        )

    def score(self, relative: FloatArray) -> float:
        """Cross-validated integrated Brier score of the estimate of relative widths ``relative``."""
        key = tuple(float(v) for v in relative)
        if key in self.scores:
            return self.scores[key]
        bandwidth = np.asarray(relative) * self.sigma_a * self.train_scale
        axes = tg.tensor_nodes(self.lo, self.hi, self.steps(np.asarray(relative)), self.max_nodes)
        binning = tg.multilinear_binning(self.x, axes)
        n_nodes, n_edges = math.prod(len(a) for a in axes), len(self.thresholds)
        mass, below = tg.tensor_histograms(
            binning, self.column, self.weight, n_nodes, n_edges, self.label, self.folds
        )
        mass_all, below_all = mass.sum(axis=0), below.sum(axis=0)
        total = 0.0
        for fold in range(self.folds):
            raw = tg.local_polynomial_tensor(
                mass_all - mass[fold], below_all - below[fold], axes, bandwidth, self.degree
            )
            held = np.flatnonzero(self.label == fold)
            gamma = tg.interpolate_nodes(
                rearrange(raw, pin_ends=False), (binning[0][held], binning[1][held])
            )
            indicator = self.column[held, None] <= np.arange(n_edges)[None, :]
            total += float(np.dot(self.event_weight[held], ((gamma - indicator) ** 2).mean(axis=1)))
        self.scores[key] = total / self.total_weight
        return self.scores[key]


class _CommonWidth:
    """The ``score``/``scores`` interface of :func:`_coarse_to_fine` for one relative width on every axis."""

    def __init__(self, folds: TensorFolds) -> None:
        self.folds = folds
        self.scores: dict[float, float] = {}

    def score(self, sigma_r: float) -> float:
        k = len(self.folds.sigma_a)
        self.scores[sigma_r] = self.folds.score(np.full(k, sigma_r))
        return self.scores[sigma_r]


def select_vector_bandwidth(
    x: FloatArray,
    y: FloatArray,
    weight: FloatArray | None,
    *,
    degree: int,
    sigma_a: FloatArray,
    folds: int,
    seed: int,
    spacing: float,
    max_nodes: int,
    per_axis: bool = True,
    adaptive: bool = False,
) -> tuple[FloatArray, Selection]:
    """Choose the relative kernel widths (per axis) of a tensor-grid estimate of degree ``degree``.

    ``adaptive`` widens the node spacing of narrow kernels instead of leaving
    them out where their grid would hold too many nodes (for an estimate whose
    fit is not on that grid, as the KDE's).

    Returns
    -------
    relative, selection
        ``(k,)`` relative widths (``sigma_r`` of every axis) and the search
        over the common width (its values and scores).
    """
    tensor = TensorFolds(
        x,
        y,
        weight,
        degree=degree,
        sigma_a=sigma_a,
        folds=folds,
        seed=seed,
        spacing=spacing,
        max_nodes=min(max_nodes, MAX_SCORED_ELEMENTS // (folds * DEFAULT_THRESHOLDS)),
        adaptive=adaptive,
    )
    k = x.shape[1]
    common = _CommonWidth(tensor)
    most = min(max_nodes, MAX_SCORED_ELEMENTS // (folds * len(tensor.thresholds)))

    def feasible(value: float) -> bool:
        return value >= MIN_SIGMA_R and tensor.node_count(np.full(k, value)) <= most

    chosen = _coarse_to_fine(common, feasible)  # type: ignore[arg-type]
    values = sorted(common.scores)
    selection = Selection(
        "sigma_r",
        tuple(values),
        tuple(common.scores[v] for v in values),
        chosen,
        folds,
        seed,
        len(tensor.thresholds),
    )
    relative = np.full(k, chosen)
    if per_axis:
        relative = _refine_axes(tensor, relative, most)
    return relative, selection


def _refine_axes(tensor: TensorFolds, relative: FloatArray, max_nodes: int) -> FloatArray:
    """Scale one axis's width at a time by :data:`AXIS_FACTORS` while the score falls."""
    best = tensor.score(relative)
    for axis in range(len(relative)):
        for factor in AXIS_FACTORS:
            trial = relative.copy()
            trial[axis] *= factor
            if tensor.node_count(trial) > max_nodes:
                continue
            score = tensor.score(trial)
            if score < best:
                best, relative = score, trial
    return relative
