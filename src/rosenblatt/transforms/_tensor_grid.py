"""Binned local-polynomial smoothing of a conditional CDF on a tensor grid in ``x`` (k = 2, 3).

The k-dimensional counterpart of :mod:`rosenblatt.transforms._local_polynomial`.
The defining sample is binned on a regular grid of nodes in every observable
(multilinear binning: an event gives each of the ``2**k`` corners of its cell
a share of its weight, the product of its closeness along every axis) and on
``y`` edges (the weight strictly below each edge, per node). A local
polynomial of degree ``p`` in ``x`` (all monomials ``x**alpha`` with
``|alpha| <= p``), with a product Gaussian kernel of width ``h_d`` along axis
``d``, fitted at every node to the binned weights, gives the conditional CDF
at every node and edge:

``F(x_j, e) = sum_alpha a_alpha(x_j) N_alpha(x_j, e)``, with the kernel sums
``N_alpha = sum_l K_jl u_jl**alpha C(x_l, e)`` (``u = (x_l - x_j) / h``, ``C``
the binned weight below ``e``) and ``a(x_j)`` the first row of the inverse of
the local moment matrix ``A_ab = sum_l K_jl u_jl**(a + b) S_l`` (``S`` the
binned weight). The product kernel makes every kernel sum separable: it is
one matrix product along each axis of the grid. Each node's CDF is then made
monotone by rearrangement and clipped to ``[0, 1]``, as in one dimension.

``gamma`` between nodes is multilinear in ``x`` over the ``2**k`` corners of
the cell, each corner's CDF linear in ``y`` between its edges: continuous in
``x`` and ``y``, monotone in ``y`` and within ``[0, 1]``.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np
from scipy import sparse

from rosenblatt.exceptions import NegativeWeightError
from rosenblatt.transforms import _local_polynomial as lp
from rosenblatt.transforms._column_grid import ColumnGrid
from rosenblatt.typing import BoolArray, FloatArray, IntArray

__all__ = [
    "TensorColumns",
    "bin_tensor",
    "local_polynomial_tensor",
    "monomials",
    "multilinear_binning",
    "tensor_histograms",
    "tensor_nodes",
]

Binning = tuple[IntArray, FloatArray]

#: ridge added to the non-constant terms of the local moment matrix, relative to its zeroth moment
RIDGE = 1e-6
#: a node whose kernel-weighted count of defining events is below the kernel's value at
#: this many bandwidths (the reach of the one-dimensional grids) has no event in reach
REACH = lp.KERNEL_REACH


def tensor_nodes(
    lo: FloatArray, hi: FloatArray, spacing: FloatArray, max_nodes: int
) -> tuple[FloatArray, ...]:
    """Regular nodes along every axis, at most ``spacing[d]`` apart.

    Raises
    ------
    ValueError
        If the grid would hold more than ``max_nodes`` nodes in all.
    """
    counts = [
        max(2, math.ceil((h - low) / s) + 1) for low, h, s in zip(lo, hi, spacing, strict=True)
    ]
    total = math.prod(counts)
    if total > max_nodes:
        shape = " x ".join(map(str, counts))
        msg = (
            f"the grid needs {shape} = {total} x nodes, more than max_nodes = {max_nodes}; "
            "use a larger sigma_r, fewer nodes per bandwidth, or raise max_nodes"
        )
        raise ValueError(msg)
    axes = []
    for low, h, n in zip(lo, hi, counts, strict=True):
        nodes = np.linspace(low, h, n)
        nodes[-1] = h
        axes.append(nodes)
    return tuple(axes)


def monomials(k: int, degree: int) -> list[tuple[int, ...]]:
    """The exponents ``alpha`` of the monomials of ``k`` variables with ``|alpha| <= degree``, constant first."""
    out = [a for a in itertools.product(range(degree + 1), repeat=k) if sum(a) <= degree]
    return sorted(out, key=lambda a: (sum(a), tuple(-v for v in a)))


def multilinear_binning(x: FloatArray, axes: tuple[FloatArray, ...]) -> Binning:
    """Flat index of the ``2**k`` corner nodes of each event's cell and each corner's share.

    ``x`` beyond the grid goes to the nearest face. Returns ``(index, share)``,
    both ``(n, 2**k)``; the shares of an event sum to one.
    """
    lefts, fractions = [], []
    for d, nodes in enumerate(axes):
        left, share = lp.linear_binning(x[:, d], nodes)
        lefts.append(left)
        fractions.append(share)
    shape = tuple(len(a) for a in axes)
    strides = np.array([math.prod(shape[d + 1 :]) for d in range(len(shape))], dtype=np.intp)
    corners = list(itertools.product((0, 1), repeat=len(axes)))
    index = np.empty((len(x), len(corners)), dtype=np.intp)
    share = np.ones((len(x), len(corners)))
    for c, corner in enumerate(corners):
        flat = np.zeros(len(x), dtype=np.intp)
        for d, step in enumerate(corner):
            flat += (lefts[d] + step) * strides[d]
            share[:, c] *= fractions[d] if step else 1.0 - fractions[d]
        index[:, c] = flat
    return index, share


def tensor_histograms(
    binning: Binning,
    column: IntArray,
    weight: FloatArray | None,
    n_nodes: int,
    n_edges: int,
    fold: IntArray | None = None,
    n_folds: int = 1,
) -> tuple[FloatArray, FloatArray]:
    """Binned weight per fold: ``mass[f, j]`` and ``below[f, j, e]`` (weight with ``y < edges[e]``).

    ``column`` is the number of edges ``<= y`` of each event; ``fold`` the fold
    of each event in ``range(n_folds)`` (``None``: one fold).
    """
    index, share = binning
    w = np.ones(len(column)) if weight is None else weight
    stride = n_edges + 1
    base = column if fold is None else fold * (n_nodes * stride) + column
    size = n_folds * n_nodes * stride
    flat: FloatArray = np.zeros(size)
    for c in range(index.shape[1]):
        flat += np.bincount(base + index[:, c] * stride, weights=w * share[:, c], minlength=size)
    counts = flat.reshape(n_folds, n_nodes, stride)
    return counts.sum(axis=2), np.cumsum(counts[:, :, :n_edges], axis=2)


def bin_tensor(
    x: FloatArray,
    y: FloatArray,
    weight: FloatArray | None,
    axes: tuple[FloatArray, ...],
    edges: FloatArray,
) -> tuple[FloatArray, FloatArray]:
    """Binned weight of the whole sample on the grid: ``mass[j]`` and ``below[j, e]``."""
    column = np.searchsorted(edges, y, side="right")
    n_nodes = math.prod(len(a) for a in axes)
    mass, below = tensor_histograms(
        multilinear_binning(x, axes), column, weight, n_nodes, len(edges)
    )
    return mass[0], below[0]


def kernel_matrices(
    axes: tuple[FloatArray, ...], bandwidth: FloatArray, max_power: int
) -> list[list[Any]]:
    """``W[d][q][j, l] = K(u) u**q`` with ``u = (x_l - x_j) / h_d`` along axis ``d``, for ``q <= max_power``.

    ``K`` is the unnormalised Gaussian cut at :data:`REACH` bandwidths; the
    matrices are sparse (CSR).
    """
    out = []
    for nodes, h in zip(axes, bandwidth, strict=True):
        u = (nodes[None, :] - nodes[:, None]) / h
        kernel = np.where(np.abs(u) <= REACH, np.exp(-0.5 * u * u), 0.0)
        out.append([sparse.csr_matrix(kernel * u**q) for q in range(max_power + 1)])
    return out


def _smooth(
    values: FloatArray, shape: tuple[int, ...], matrices: list[list[Any]], power: tuple[int, ...]
) -> FloatArray:
    """The kernel sum of ``values`` (``(n_nodes, m)``) with the exponents ``power``, one product per axis."""
    grid: FloatArray = values.reshape((*shape, -1))
    for d, q in enumerate(power):
        moved = np.moveaxis(grid, d, 0)
        product = matrices[d][q] @ moved.reshape(shape[d], -1)
        grid = np.moveaxis(np.asarray(product).reshape(moved.shape), 0, d)
    return np.ascontiguousarray(grid).reshape(values.shape)


def _coefficients(
    mass: FloatArray,
    shape: tuple[int, ...],
    matrices: list[list[Any]],
    terms: list[tuple[int, ...]],
) -> tuple[FloatArray, BoolArray, BoolArray]:
    """First row of the inverse local moment matrix at every node, and which nodes are special.

    Returns the coefficients, the nodes with no event in reach, and the nodes
    whose fit is defined
    (:func:`~rosenblatt.transforms._local_polynomial.defined_fits`, examined
    only where some binned weight is negative); the coefficients of the
    others are zero.
    """
    m = len(terms)
    sums = {tuple(int(a + b) for a, b in zip(s, t, strict=True)) for s in terms for t in terms}
    moments = {p: _smooth(mass[:, None], shape, matrices, p)[:, 0] for p in sums}
    total = moments[terms[0]]
    reach = _smooth((mass != 0).astype(np.float64)[:, None], shape, matrices, terms[0])[:, 0]
    empty = ~(reach >= math.exp(-0.5 * REACH * REACH))
    safe = np.where(empty, 1.0, total)
    signed = bool(np.any(mass < 0))
    if m == 1:
        defined = lp.defined_fits(total, empty, None) if signed else np.ones(len(mass), bool)
        return np.where(defined, 1.0 / np.where(defined, safe, 1.0), 0.0)[:, None], empty, defined
    matrix = np.empty((len(mass), m, m))
    for i, s in enumerate(terms):
        for j, t in enumerate(terms):
            matrix[:, i, j] = moments[tuple(int(a + b) for a, b in zip(s, t, strict=True))]
    matrix[empty] = np.eye(m)
    matrix[:, np.arange(1, m), np.arange(1, m)] += RIDGE * safe[:, None]
    defined = lp.defined_fits(total, empty, matrix) if signed else np.ones(len(mass), bool)
    matrix[~defined] = np.eye(m)
    unit = np.zeros((len(mass), m, 1))
    unit[:, 0, 0] = 1.0
    solved = np.asarray(np.linalg.solve(matrix, unit)[:, :, 0], dtype=np.float64)
    solved[~defined] = 0.0
    return solved, empty, defined


def local_polynomial_tensor(
    mass: FloatArray,
    below: FloatArray,
    axes: tuple[FloatArray, ...],
    bandwidth: FloatArray,
    degree: int,
) -> FloatArray:
    """Raw local-polynomial estimate of the weight fraction below each edge, per node, ``(n_nodes, n_edges)``.

    Nodes with no defining event within reach of the kernel take the estimate
    of the nearest node that has one. Nodes whose fit negative weights leave
    undefined take the estimate of the kernel widened by factors of 2 until it
    is defined there (the other nodes are unchanged).

    Raises
    ------
    NegativeWeightError
        If a node's fit is undefined even once its kernel reaches
        ``WIDEST_REACH`` times across the grid along every axis.
    """
    shape = tuple(len(a) for a in axes)
    terms = monomials(len(axes), degree)

    def estimate(scale: float) -> tuple[FloatArray, BoolArray, BoolArray]:
        matrices = kernel_matrices(axes, bandwidth * scale, 2 * degree)
        coefficients, empty, defined = _coefficients(mass, shape, matrices, terms)
        out = np.zeros(below.shape)
        for i, term in enumerate(terms):
            out += coefficients[:, i : i + 1] * _smooth(below, shape, matrices, term)
        return out, empty, defined

    out, empty, defined = estimate(1.0)
    undefined = ~defined
    spans = np.array([a[-1] - a[0] for a in axes])
    scale = 1.0
    while undefined.any():
        if np.all(~(scale * bandwidth < lp.WIDEST_REACH * spans)) or not np.all(bandwidth > 0):
            msg = (
                f"negative weights dominate the defining sample near {int(undefined.sum())} node(s) "
                "of the tensor grid: the kernel-weighted sum of the weights is not positive (or "
                f"the local fit of degree {degree} is singular) there however wide the kernel"
            )
            raise NegativeWeightError(msg)
        scale *= 2.0
        wider, _, defined = estimate(scale)
        taken = undefined & defined
        out[taken] = wider[taken]
        undefined &= ~defined
    return _fill_empty(out, empty, shape)


def _fill_empty(rows: FloatArray, empty: BoolArray, shape: tuple[int, ...]) -> FloatArray:
    """Rows of nodes with no event in reach, copied from the nearest node with one."""
    if not empty.any():
        return rows
    if empty.all():
        msg = "no grid node has defining events within its kernel window"
        raise ValueError(msg)
    from scipy import ndimage

    nearest = ndimage.distance_transform_edt(
        empty.reshape(shape), return_distances=False, return_indices=True
    )
    source = np.ravel_multi_index(tuple(nearest), shape).ravel()
    nearest_rows: FloatArray = rows[source]
    return nearest_rows


def interpolate_nodes(values: FloatArray, binning: Binning) -> FloatArray:
    """Multilinear interpolation of per-node rows ``values[j, :]`` at events binned by ``binning``."""
    index, share = binning
    out = np.zeros((len(index), values.shape[1]))
    for c in range(index.shape[1]):
        out += share[:, c : c + 1] * values[index[:, c]]
    return out


class TensorColumns:
    """A tensor grid of columns: per node a CDF linear in ``y`` between its edges.

    ``gamma(x, y)`` is the multilinear interpolation, over the ``2**k``
    corners of the cell of ``x`` (clamped to the grid), of the corners'
    piecewise-linear CDFs at ``y``.

    Parameters
    ----------
    axes
        The nodes along every axis, increasing.
    y_edges, cdf
        ``(n_nodes, n_edge)`` in C order of the grid: per node the edges
        (non-decreasing) and the CDF at them.
    """

    def __init__(self, axes: tuple[FloatArray, ...], y_edges: FloatArray, cdf: FloatArray) -> None:
        self.axes = axes
        self.columns = ColumnGrid(np.arange(len(y_edges), dtype=np.float64), y_edges, cdf)

    def __call__(self, x: FloatArray, y: FloatArray) -> FloatArray:
        """``gamma`` at each ``(x, y)``, ``x`` of shape ``(n, k)``."""
        index, share = multilinear_binning(x, self.axes)
        out, total = np.zeros(len(y)), np.zeros(len(y))
        for c in range(index.shape[1]):
            used = share[:, c] > 0
            out[used] += share[used, c] * self.columns._column_cdf(index[used, c], y[used])
            total[used] += share[used, c]
        # dividing by the summed shares (one up to rounding) keeps gamma exactly 1 where every corner is 1
        return np.clip(out / total, 0.0, 1.0)


def compress(edges: FloatArray, raw: FloatArray, n_levels: int) -> tuple[FloatArray, FloatArray]:
    """Monotone ``[0, 1]`` columns from the raw estimate, compressed to about ``1 / n_levels``."""
    return lp.compress_columns(edges, lp.rearrange(raw), n_levels)
