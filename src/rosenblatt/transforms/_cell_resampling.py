"""Negative event weights made non-negative by cell resampling, for the KDE.

With negative weights (NLO simulation) the KDE's kernel sums are not a CDF in
``y``: a negative weight makes ``sum_i w_i H(y - y_i) K(x - x_i)`` fall at its
score at every ``x`` (the Gaussian kernel reaches every event), and where
negative weights dominate near ``x`` the kernel-weighted sum of the weights is
not positive. Rearranging the estimate in ``y`` at every queried ``x`` would
cost a pass over the whole defining sample per event; instead the weights are
rearranged once, before the fit, by cell resampling (J. R. Andersen and
A. Maier, arXiv:2109.07851):

- each event of negative weight, in the order of the sample, seeds a cell;
- the cell takes the seed's nearest neighbours, nearest first, until its
  summed weight is not negative;
- every weight ``w_i`` of the cell becomes ``|w_i| * sum(w) / sum(|w|)``.

The weight of every cell, and so the sample's total, is kept; the cells are
small (a few events where a fifth of the weights are negative), so weight
moves only between neighbours. Distance is measured between the events'
ranks in each observable and in ``y``, divided by the number of events: the
result does not depend on the scale of ``x`` or on any increasing map of
``y``, as the KDE's ``gamma`` does not. Afterwards no weight is negative, so
every kernel sum is positive, ``gamma`` is a CDF in ``y`` at every ``x``, and
the exact fast Gauss transform applies unchanged. A sample without a negative
weight is returned as it is.
"""

from __future__ import annotations

import numpy as np
from scipy.spatial import cKDTree
from scipy.stats import rankdata

from rosenblatt._jit import compiled
from rosenblatt.transforms._kernels import resample_cells
from rosenblatt.typing import FloatArray, IntArray

__all__ = ["nonnegative_weights"]


#: neighbours looked up at once for every seed; a cell that needs more looks up four times as many
NEIGHBOURS = 8


def nonnegative_weights(x: FloatArray, y: FloatArray, weight: FloatArray) -> FloatArray:
    """The weights with every negative one removed by cell resampling (see the module).

    Parameters
    ----------
    x
        The protected observable(s), ``(n,)`` or ``(n, k)``.
    y
        The scores, ``(n,)``.
    weight
        The event weights, with a positive sum.

    Returns
    -------
    numpy.ndarray
        ``weight`` itself when no weight is negative, otherwise new
        non-negative weights of the same sum (to rounding).
    """
    seeds = np.flatnonzero(weight < 0)
    if len(seeds) == 0:
        return weight
    n = len(y)
    columns = [x] if x.ndim == 1 else [x[:, d] for d in range(x.shape[1])]
    points = np.column_stack([rankdata(c) / n for c in (*columns, y)])
    tree = cKDTree(points)
    out = np.array(weight, dtype=np.float64)
    kernel = compiled(resample_cells) or resample_cells
    count = min(NEIGHBOURS, n)
    _, neighbours = tree.query(points[seeds], k=count)
    neighbours = np.ascontiguousarray(neighbours.reshape(len(seeds), count), dtype=np.intp)
    position = 0
    while True:
        position = int(kernel(out, seeds, neighbours, position))
        if position == len(seeds):
            return out
        _close_cell(kernel, tree, points, out, seeds[position : position + 1], count)
        position += 1


def _close_cell(
    kernel: object,
    tree: cKDTree,
    points: FloatArray,
    weight: FloatArray,
    seed: IntArray,
    count: int,
) -> None:
    """Resample the cell of one seed, looking up four times more neighbours until it closes."""
    n = len(points)
    while count < n:
        count = min(4 * count, n)
        _, row = tree.query(points[seed[0]], k=count)
        neighbours = np.ascontiguousarray(np.reshape(row, (1, count)), dtype=np.intp)
        if kernel(weight, seed, neighbours, 0) == 1:  # type: ignore[operator]
            return
    msg = "the weights have no positive sum: no cell of the negative weights closes"
    raise ValueError(msg)
