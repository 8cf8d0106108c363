"""Binned local-polynomial smoothing of a conditional CDF on a grid.

The defining sample is binned on ``x`` nodes (linear binning: an event between
two nodes gives each a share of its weight proportional to its closeness) and
on ``y`` edges (the weight strictly below each edge, per node). A local
polynomial of degree ``p`` in ``x`` with a Gaussian kernel, fitted at every
node to the binned weights, gives the conditional CDF at every node and edge:

``F(x_j, e_k) = sum_q a_q(x_j) N_q(x_j, e_k)`` with
``N_q(x_j, e_k) = sum_l K_jl ((x_l - x_j) / h_j)**q C(x_l, e_k)``,
where ``C`` is the binned weight below ``e_k`` and ``a(x_j)`` the first row of
the inverse of the local moment matrix ``A_qr = sum_l K_jl ((x_l - x_j)/h_j)**(q+r) S_l``
(``S`` the binned weight). Degree 0 is the Nadaraya-Watson (Gaussian-kernel)
estimate of the method paper, degree 1 removes its bias from the slope of the
density of ``x`` (largest in the sparse tails), degree 2 and 3 also the bias
from the curvature of ``gamma`` in ``x``. Their equivalent kernels take
negative values, so each column is made monotone by rearrangement (its values
sorted, which never increases the distance to a monotone target) and clipped
to ``[0, 1]``.

Negative event weights (NLO simulation) can leave a node's local fit
undefined: its kernel-weighted weight not positive, or (degree 1 and above)
its local moment matrix not positive definite. :func:`node_bandwidths` widens
the kernel of each such node alone, doubling it until the fit is defined
there; the rearrangement then makes the node's column a CDF. Where every
node's fit is defined, nothing changes, and with no negative binned weight
no node is examined.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy import sparse

from rosenblatt.exceptions import NegativeWeightError
from rosenblatt.typing import BoolArray, FloatArray, IntArray

__all__ = [
    "KERNEL_REACH",
    "bin_sample",
    "check_positive_total",
    "compress_columns",
    "defined_fits",
    "fold_histograms",
    "kernel_matrices",
    "linear_binning",
    "local_polynomial_cdf",
    "local_polynomial_columns",
    "local_polynomial_folds",
    "node_bandwidths",
    "node_grid",
    "rearrange",
    "y_edges",
]

#: kernel windows end at this many bandwidths (the Gaussian is 1.5e-8 there)
KERNEL_REACH = 6.0
#: nodes per block of :func:`local_polynomial_columns`
BLOCK_NODES = 256
#: tolerance, in levels, of :func:`compress_columns`
LEVEL_TOLERANCE = 1e-6
#: ridge added to the slope and curvature terms of the local moment matrix,
#: relative to its zeroth moment: negligible where the window holds data on
#: several nodes, it keeps the fit defined where it does not
RIDGE = 1e-6
#: a node's kernel is widened until it reaches this far beyond the whole grid (in bandwidths)
WIDEST_REACH = 2.0


def node_grid(lo: float, hi: float, spacing: float, max_nodes: int) -> FloatArray:
    """Regular ``x`` nodes from ``lo`` to ``hi`` at most ``spacing`` apart (at least two).

    Raises
    ------
    ValueError
        If more than ``max_nodes`` nodes would be needed.
    """
    if not spacing > 0:
        msg = f"the x nodes would be {spacing:g} apart: the kernel width must be positive"
        raise ValueError(msg)
    n_nodes = max(2, math.ceil((hi - lo) / spacing) + 1)
    if n_nodes > max_nodes:
        msg = (
            f"the grid needs {n_nodes} x nodes (range {hi - lo:g} at a spacing of {spacing:g}), "
            f"more than max_nodes = {max_nodes}; use a larger sigma_r, fewer nodes per "
            "bandwidth, or raise max_nodes"
        )
        raise ValueError(msg)
    nodes = np.linspace(lo, hi, n_nodes)
    nodes[-1] = hi
    return nodes


def y_edges(y_sorted: FloatArray, cumulative: FloatArray, n_bins: int) -> FloatArray:
    """Edges at the weighted quantiles ``k / n_bins`` of a sorted sample, tied edges merged.

    Inner edges lie midway between the two neighbouring scores where the
    cumulative weight crosses the quantile, or on the score itself when the
    two are tied; the outer edges are the smallest and the largest score.

    Parameters
    ----------
    y_sorted
        The scores, increasing.
    cumulative
        ``cumulative[i]``: summed weight of the first ``i`` scores (length ``n + 1``).
    n_bins
        Number of quantile bins.
    """
    n = len(y_sorted)
    running_max = np.maximum.accumulate(cumulative)
    targets = cumulative[-1] * np.arange(1, n_bins) / n_bins
    cut = np.clip(np.searchsorted(running_max, targets, side="left"), 1, n - 1)
    inner = 0.5 * (y_sorted[cut - 1] + y_sorted[cut])
    return np.unique(np.concatenate(([y_sorted[0]], inner, [y_sorted[-1]])))


def linear_binning(x: FloatArray, nodes: FloatArray) -> tuple[IntArray, FloatArray]:
    """Left node of each ``x`` on a regular grid, and its share ``f`` for the right node.

    The left node receives ``1 - f``; ``x`` beyond the grid goes to the nearest end.
    """
    n = len(nodes)
    lo, hi = nodes[0], nodes[-1]
    position = (np.clip(x, lo, hi) - lo) * ((n - 1) / (hi - lo))
    left = np.minimum(position.astype(np.intp), n - 2)
    share = np.clip((x - nodes[left]) / (nodes[left + 1] - nodes[left]), 0.0, 1.0)
    return left, share


def fold_histograms(
    binning: tuple[IntArray, FloatArray],
    column: IntArray,
    weight: FloatArray | None,
    n_nodes: int,
    n_edges: int,
    fold: IntArray | None = None,
    n_folds: int = 1,
) -> tuple[FloatArray, FloatArray]:
    """Binned weight per fold: ``mass[f, j]`` and ``below[f, j, k]`` (weight with ``y < edges[k]``).

    Parameters
    ----------
    binning
        :func:`linear_binning` of the events' ``x`` on the ``n_nodes`` nodes.
    column
        Number of edges ``<= y`` of each event (``numpy.searchsorted(edges, y, "right")``).
    weight
        Event weights (``None`` for unit weights).
    n_nodes, n_edges
        Numbers of ``x`` nodes and ``y`` edges.
    fold, n_folds
        Fold of each event in ``range(n_folds)``; ``None`` puts all in one.
    """
    left, share = binning
    w = np.ones(len(left)) if weight is None else weight
    stride = n_edges + 1
    base = column if fold is None else fold * (n_nodes * stride) + column
    base = base + left * stride
    size = n_folds * n_nodes * stride
    w_right = w * share
    counts = np.asarray(np.bincount(base, weights=w - w_right, minlength=size), dtype=np.float64)
    counts += np.bincount(base + stride, weights=w_right, minlength=size)
    counts = counts.reshape(n_folds, n_nodes, stride)
    mass = counts.sum(axis=2)
    below = np.cumsum(counts[:, :, :n_edges], axis=2)
    return mass, below


def bin_sample(
    x: FloatArray, y: FloatArray, weight: FloatArray | None, nodes: FloatArray, edges: FloatArray
) -> tuple[FloatArray, FloatArray]:
    """Binned weight of the whole sample: ``mass[j]`` and ``below[j, k]``."""
    column = np.searchsorted(edges, y, side="right")
    mass, below = fold_histograms(linear_binning(x, nodes), column, weight, len(nodes), len(edges))
    return mass[0], below[0]


def kernel_matrices(nodes: FloatArray, bandwidth: FloatArray, n_powers: int) -> list[Any]:
    """``W_q[j, l] = K((x_l - x_j) / h_j) ((x_l - x_j) / h_j)**q`` for ``q < n_powers``.

    ``K`` is the unnormalised Gaussian ``exp(-u**2 / 2)``, cut at :data:`KERNEL_REACH`.
    The matrices are sparse (CSR): each row holds the nodes within reach.
    """
    n = len(nodes)
    lo = np.searchsorted(nodes, nodes - KERNEL_REACH * bandwidth, side="left")
    hi = np.searchsorted(nodes, nodes + KERNEL_REACH * bandwidth, side="right")
    width = hi - lo
    indptr = np.concatenate(([0], np.cumsum(width)))
    row = np.repeat(np.arange(n), width)
    column = np.arange(indptr[-1]) - np.repeat(indptr[:-1] - lo, width)
    u = (nodes[column] - nodes[row]) / bandwidth[row]
    kernel = np.exp(-0.5 * u * u)
    out = []
    power = np.ones_like(u)
    for _ in range(n_powers):
        out.append(sparse.csr_matrix((kernel * power, column, indptr), shape=(n, n)))
        power = power * u
    return out


def local_polynomial_coefficients(
    matrices: list[Any], mass: FloatArray, degree: int
) -> tuple[FloatArray, BoolArray]:
    """First row of the inverse local moment matrix at every node, ``(n_nodes, degree + 1)``.

    Nodes whose kernel window holds no defining event are returned as a mask
    (their coefficients are zero): they lie in a gap of the sample and are
    filled by :func:`fill_gaps`.

    Raises
    ------
    NegativeWeightError
        Where the kernel-weighted mass is not positive although the window
        holds events (negative weights dominate; :func:`node_bandwidths`
        gives the widths at which it is positive).
    """
    total, empty, matrix = _local_moments(matrices, mass, degree)
    check_positive_total(total, empty)
    if matrix is None:
        coefficients = (1.0 / np.where(empty, 1.0, total))[:, None]
    else:
        unit = np.zeros((len(total), degree + 1, 1))
        unit[:, 0, 0] = 1.0
        coefficients = np.asarray(np.linalg.solve(matrix, unit)[:, :, 0], dtype=np.float64)
    coefficients[empty] = 0.0
    return coefficients, empty


def _local_moments(
    matrices: list[Any], mass: FloatArray, degree: int
) -> tuple[FloatArray, BoolArray, FloatArray | None]:
    """Per node: the kernel-weighted weight, whether no event is in reach, and the ridged moment matrix.

    The matrix (``None`` for degree 0) is the identity at nodes with no event in reach.
    """
    moments = np.stack([matrices[q] @ mass for q in range(2 * degree + 1)], axis=1)
    total = moments[:, 0]
    empty = (matrices[0] @ (mass != 0).astype(np.float64)) == 0
    if degree == 0:
        return total, empty, None
    safe = np.where(empty, 1.0, total)
    index = np.arange(degree + 1)
    matrix = moments[:, index[:, None] + index[None, :]]
    matrix[empty] = np.eye(degree + 1)
    matrix[:, index[1:], index[1:]] += RIDGE * safe[:, None]
    return total, empty, matrix


def defined_fits(total: FloatArray, empty: BoolArray, matrix: FloatArray | None) -> BoolArray:
    """Which nodes' local fits are defined, from :func:`_local_moments`.

    A node with no event in reach is (its row is filled from its neighbours);
    any other needs a positive kernel-weighted weight and, for degree 1 and
    above, a positive definite moment matrix.
    """
    defined = empty | (total > 0)
    if matrix is not None and defined.any():
        rows = np.flatnonzero(defined & ~empty)
        defined[rows] = np.linalg.eigvalsh(matrix[rows])[:, 0] > 0
    return defined


def node_bandwidths(
    nodes: FloatArray, bandwidth: float, mass: FloatArray, degree: int
) -> FloatArray:
    """Kernel width of every node: ``bandwidth``, doubled where negative weights leave the fit undefined.

    A node whose kernel-weighted weight is not positive, or whose local
    moment matrix is not positive definite (:func:`defined_fits`), has its
    width doubled until its fit is defined; the other nodes keep
    ``bandwidth``, and so their estimate. Without a negative binned weight
    every node keeps ``bandwidth``.

    Raises
    ------
    NegativeWeightError
        If some node's fit is undefined even once its kernel reaches
        :data:`WIDEST_REACH` times across the grid (negative weights dominate
        the whole sample near it); its ``x_range`` spans those nodes.
    """
    widths = np.full(len(nodes), float(bandwidth))
    if not np.any(mass < 0):
        return widths
    widest = max(WIDEST_REACH * float(nodes[-1] - nodes[0]), float(bandwidth))
    while True:
        matrices = kernel_matrices(nodes, widths, 2 * degree + 1)
        undefined = ~defined_fits(*_local_moments(matrices, mass, degree))
        if not undefined.any():
            return widths
        stuck = undefined & ~((widths > 0) & (widths < widest))
        if stuck.any():
            where = nodes[stuck]
            msg = (
                f"negative weights dominate the defining sample near x in [{where.min():g}, "
                f"{where.max():g}]: the kernel-weighted sum of the weights is not positive (or "
                f"the local fit of degree {degree} is singular) at {int(stuck.sum())} grid "
                "node(s) however wide their kernel"
            )
            raise NegativeWeightError(msg, (float(where.min()), float(where.max())))
        widths[undefined] *= 2.0


def local_polynomial_cdf(
    matrices: list[Any], mass: FloatArray, below: FloatArray, degree: int
) -> FloatArray:
    """Raw local-polynomial estimate of the weight fraction below each edge, per node.

    ``below`` may hold several samples side by side (``(n_nodes, m * n_edges)``),
    all smoothed with the moments of ``mass``. Rows of nodes in gaps of the
    sample are interpolated from the nearest nodes on either side.
    """
    coefficients, empty = local_polynomial_coefficients(matrices, mass, degree)
    out = coefficients[:, 0:1] * (matrices[0] @ below)
    for q in range(1, degree + 1):
        out += coefficients[:, q : q + 1] * (matrices[q] @ below)
    return _fill_gaps(out, empty)


def _fill_gaps(rows: FloatArray, empty: BoolArray) -> FloatArray:
    """Rows of nodes in gaps of the sample, interpolated from the nearest filled rows."""
    if not empty.any():
        return rows
    filled = np.flatnonzero(~empty)
    if len(filled) == 0:
        msg = "no grid node has defining events within its kernel window"
        raise ValueError(msg)
    for k in np.flatnonzero(empty):
        right = int(np.searchsorted(filled, k))
        lo = filled[max(right - 1, 0)]
        hi = filled[min(right, len(filled) - 1)]
        t = 0.0 if hi == lo else (k - lo) / (hi - lo)
        rows[k] = (1.0 - t) * rows[lo] + t * rows[hi]
    return rows


def local_polynomial_folds(
    matrices: list[Any], mass: FloatArray, below: FloatArray, degree: int
) -> FloatArray:
    """Raw estimates of every fold from the binned weight of the others, ``(folds, n_nodes, n_edges)``.

    ``mass`` is ``(folds, n_nodes)`` and ``below`` ``(folds, n_nodes, n_edges)``:
    the binned weight of each fold. The estimate of fold ``f`` uses the
    weight of all folds minus its own; the kernel sums of all folds are
    computed in one product per power.
    """
    n_folds, n_nodes, n_edges = below.shape
    stacked = below.transpose(1, 0, 2).reshape(n_nodes, n_folds * n_edges)
    sums = [(matrices[q] @ stacked).reshape(n_nodes, n_folds, n_edges) for q in range(degree + 1)]
    totals = [s.sum(axis=1) for s in sums]
    mass_all = mass.sum(axis=0)
    out = np.empty((n_folds, n_nodes, n_edges))
    for fold in range(n_folds):
        coefficients, empty = local_polynomial_coefficients(matrices, mass_all - mass[fold], degree)
        estimate = coefficients[:, 0:1] * (totals[0] - sums[0][:, fold])
        for q in range(1, degree + 1):
            estimate += coefficients[:, q : q + 1] * (totals[q] - sums[q][:, fold])
        out[fold] = _fill_gaps(estimate, empty)
    return out


def local_polynomial_columns(
    matrices: list[Any],
    mass: FloatArray,
    below: FloatArray,
    degree: int,
    edges: FloatArray,
    n_levels: int,
) -> tuple[FloatArray, FloatArray]:
    """The monotone estimate at every node, compressed per column (see :func:`compress_columns`).

    Equal to ``compress_columns(edges, rearrange(local_polynomial_cdf(...)), n_levels)``,
    computed in blocks of :data:`BLOCK_NODES` nodes so that the temporary
    arrays stay small on long grids.
    """
    coefficients, empty = local_polynomial_coefficients(matrices, mass, degree)
    filled = np.flatnonzero(~empty)
    if len(filled) == 0:
        msg = "no grid node has defining events within its kernel window"
        raise ValueError(msg)

    def raw(rows: IntArray) -> FloatArray:
        out = coefficients[rows, 0:1] * (matrices[0][rows] @ below)
        for q in range(1, degree + 1):
            out += coefficients[rows, q : q + 1] * (matrices[q][rows] @ below)
        return np.asarray(out)

    kept_edges, kept_cdf = [], []
    n_nodes = len(mass)
    for start in range(0, n_nodes, BLOCK_NODES):
        rows = np.arange(start, min(start + BLOCK_NODES, n_nodes))
        block = raw(rows)
        for i in np.flatnonzero(empty[rows]):
            k = rows[i]
            right = int(np.searchsorted(filled, k))
            lo, hi = filled[max(right - 1, 0)], filled[min(right, len(filled) - 1)]
            t = 0.0 if hi == lo else (k - lo) / (hi - lo)
            pair = raw(np.array([lo, hi]))
            block[i] = (1.0 - t) * pair[0] + t * pair[1]
        e, c = compress_columns(edges, rearrange(block), n_levels)
        kept_edges.append(e)
        kept_cdf.append(c)
    width = max(e.shape[1] for e in kept_edges)
    column_edges = np.vstack(
        [np.pad(e, ((0, 0), (0, width - e.shape[1])), mode="edge") for e in kept_edges]
    )
    column_cdf = np.vstack(
        [np.pad(c, ((0, 0), (0, width - c.shape[1])), mode="edge") for c in kept_cdf]
    )
    return column_edges, column_cdf


def rearrange(cdf: FloatArray, *, pin_ends: bool = True) -> FloatArray:
    """Monotone, ``[0, 1]``-valued rows: each row sorted and clipped.

    With ``pin_ends`` the rows span the whole ``y`` domain: the first value is
    set to 0 and the last to 1.
    """
    out = np.clip(np.sort(cdf, axis=-1), 0.0, 1.0)
    if pin_ends:
        out[..., 0] = 0.0
        out[..., -1] = 1.0
    return out


def compress_columns(
    edges: FloatArray, cdf: FloatArray, n_levels: int
) -> tuple[FloatArray, FloatArray]:
    """Per-column ``y`` edges keeping a piecewise-linear CDF within about ``1 / n_levels``.

    A column keeps, of the shared ``edges``, its first and last, each edge at
    which its CDF reaches a new multiple of ``1 / n_levels``, and the edge
    before any step larger than ``1 / n_levels`` (a tie in ``y``), so that such
    a step stays as sharp as on the full grid. Columns with fewer edges are
    padded with copies of their last edge.

    Parameters
    ----------
    edges
        The shared edges, increasing, ``(n_edges,)``.
    cdf
        Monotone rows from 0 to 1, ``(n_columns, n_edges)``.
    n_levels
        Number of levels.

    Returns
    -------
    tuple of numpy.ndarray
        ``(column_edges, column_cdf)``, both ``(n_columns, n_kept)``.
    """
    # a value within rounding of a multiple counts as reaching it (values clipped to
    # exactly 0 or 1 sit on one), so that rounding never moves a kept edge
    level = np.floor(cdf * n_levels + LEVEL_TOLERANCE)
    keep = np.zeros(cdf.shape, dtype=bool)
    keep[:, 1:] = level[:, 1:] != level[:, :-1]
    keep[:, :-1] |= np.diff(cdf, axis=1) > 1.0 / n_levels
    keep[:, 0] = True
    keep[:, -1] = True
    n_kept = keep.sum(axis=1)
    width = int(n_kept.max())
    order = np.argsort(~keep, axis=1, kind="stable")[:, :width]
    pad = np.arange(width)[None, :] >= n_kept[:, None]
    order[pad] = cdf.shape[1] - 1
    return edges[order], np.take_along_axis(cdf, order, axis=1)


def check_positive_total(total: FloatArray, empty: BoolArray) -> None:
    """Refuse grid nodes, reached by some defining event, whose kernel-weighted weight is not positive."""
    bad = ~(total > 0) & ~empty
    if bad.any():
        msg = (
            f"the kernel-weighted sum of the defining weights is not positive at {int(bad.sum())} "
            "grid node(s): negative weights dominate there"
        )
        raise NegativeWeightError(msg)
