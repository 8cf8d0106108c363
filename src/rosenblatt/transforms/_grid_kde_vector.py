"""GridKDE on several protected observables: the fit on a tensor grid and its saved state."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

from rosenblatt._validation import check_int
from rosenblatt.transforms import _tensor_grid as tg
from rosenblatt.transforms._local_polynomial import y_edges
from rosenblatt.transforms._vector_selection import select_vector_bandwidth
from rosenblatt.transforms.kde import absolute_sigma
from rosenblatt.transforms.selection import Selection, check_folds, check_seed
from rosenblatt.typing import FloatArray

__all__ = ["NODE_FACTOR", "TensorFit", "fit_tensor", "tensor_from_state", "tensor_state"]


#: a tensor grid may hold this many times ``max_nodes`` nodes in all
NODE_FACTOR = 10
#: the grid's nodes times its shared ``y`` edges, at most (memory of the binned sample)
MAX_ELEMENTS = 8_000_000
#: fewest shared ``y`` edges of a tensor grid
MIN_EDGES = 64
#: largest degree of the local polynomial in several observables
MAX_VECTOR_DEGREE = 2

VectorDomain = tuple[tuple[tuple[float, ...], tuple[float, ...]], tuple[float, float]]


@dataclasses.dataclass(frozen=True)
class TensorFit:
    """The learned state of a GridKDE on ``k`` observables.

    Attributes
    ----------
    domain
        ``((x_lo, x_hi), (y_lo, y_hi))`` with ``x_lo``, ``x_hi`` tuples of ``k``.
    sigma_r
        The common relative width chosen or given.
    axis_sigma_r
        ``(k,)`` the relative width used along every axis.
    sigma_a
        ``(k,)`` the spread of every observable.
    selection
        The search of ``sigma_r="auto"``, else ``None``.
    axes
        The nodes along every axis.
    y_edges, cdf
        ``(n_nodes, n_edge)`` per node (C order of the grid): its edges and CDF.
    """

    domain: VectorDomain
    sigma_r: float
    axis_sigma_r: FloatArray
    sigma_a: FloatArray
    selection: Selection | None
    axes: tuple[FloatArray, ...]
    y_edges: FloatArray
    cdf: FloatArray


def _spreads(x: FloatArray, w: FloatArray | None) -> FloatArray:
    sigma_a = np.array([absolute_sigma(x[:, d], w) for d in range(x.shape[1])])
    constant = np.flatnonzero(~(sigma_a > 0))
    if len(constant):
        msg = f"x[:, {int(constant[0])}] is constant: there is no conditional distribution along it"
        raise ValueError(msg)
    return sigma_a


def _shared_edges(y: FloatArray, w: FloatArray | None, n_bins: int) -> FloatArray:
    order = np.argsort(y, kind="stable")
    cumulative = (
        np.arange(len(y) + 1.0) if w is None else np.concatenate(([0.0], np.cumsum(w[order])))
    )
    return y_edges(y[order], cumulative, n_bins)


def fit_tensor(
    x: FloatArray,
    y: FloatArray,
    w: FloatArray | None,
    *,
    sigma_r: float | None,
    degree: int,
    y_levels: int,
    nodes_per_bandwidth: float,
    max_nodes: int,
    folds: int,
    seed: int,
    fine_edges: int,
) -> TensorFit:
    """Fit the local-polynomial estimate on a tensor grid (``sigma_r=None``: cross-validated).

    The grid has ``nodes_per_bandwidth / 2`` nodes per kernel width along every
    axis, at most ``NODE_FACTOR * max_nodes`` in all, and up to ``fine_edges``
    shared ``y`` edges (fewer on large grids, at most :data:`MAX_ELEMENTS`
    nodes times edges).
    """
    if degree > MAX_VECTOR_DEGREE:
        msg = f"degree must be 0, 1 or 2 for several observables, got {degree}"
        raise ValueError(msg)
    if np.min(y) == np.max(y):
        msg = f"y is constant ({len(y)} events all equal {y[0]:g}): there is no conditional distribution"
        raise ValueError(msg)
    sigma_a = _spreads(x, w)
    spacing, most = 2.0 / nodes_per_bandwidth, NODE_FACTOR * max_nodes
    selection = None
    if sigma_r is None:
        relative, selection = select_vector_bandwidth(
            x,
            y,
            w,
            degree=degree,
            sigma_a=sigma_a,
            folds=check_folds(folds, len(y)),
            seed=check_seed(seed),
            spacing=spacing,
            max_nodes=most,
        )
        sigma_r = selection.chosen
    else:
        relative = np.full(x.shape[1], sigma_r)
    bandwidth = relative * sigma_a
    lo, hi = x.min(axis=0), x.max(axis=0)
    axes = tg.tensor_nodes(lo, hi, bandwidth * spacing, most)
    n_nodes = math.prod(len(a) for a in axes)
    edges = _shared_edges(y, w, max(MIN_EDGES, min(fine_edges, MAX_ELEMENTS // n_nodes)))
    mass, below = tg.bin_tensor(x, y, w, axes, edges)
    raw = tg.local_polynomial_tensor(mass, below, axes, bandwidth, degree)
    column_edges, column_cdf = tg.compress(edges, raw, y_levels)
    domain = ((tuple(map(float, lo)), tuple(map(float, hi))), (float(y.min()), float(y.max())))
    return TensorFit(
        domain, float(sigma_r), relative, sigma_a, selection, axes, column_edges, column_cdf
    )


def tensor_state(fit: TensorFit) -> dict[str, Any]:
    """The learned state of a tensor fit as JSON-compatible data."""
    return {
        "x_dims": len(fit.axes),
        "sigma_r": fit.sigma_r,
        "axis_sigma_r": fit.axis_sigma_r.tolist(),
        "sigma_a": fit.sigma_a.tolist(),
        "selection": None if fit.selection is None else fit.selection.to_dict(),
        "domain": [[list(fit.domain[0][0]), list(fit.domain[0][1])], list(fit.domain[1])],
        "axes": [a.tolist() for a in fit.axes],
        "y_edges": fit.y_edges.tolist(),
        "cdf": fit.cdf.tolist(),
    }


def _vector_domain(values: Any, k: int) -> VectorDomain:
    from rosenblatt._schema import SchemaError, check_array

    try:
        (x_lo, x_hi), y_range = values
    except (TypeError, ValueError) as err:
        msg = f"malformed domain ({err})"
        raise SchemaError(msg) from err
    lo = check_array(x_lo, "domain x_lo", (k,))
    hi = check_array(x_hi, "domain x_hi", (k,))
    y_lo, y_hi = check_array(y_range, "domain y", (2,), increasing=True)
    if not (np.all(lo < hi) and np.all(np.isfinite([*lo, *hi, y_lo, y_hi]))):
        msg = "domain must be finite and increasing along every axis"
        raise SchemaError(msg)
    return (tuple(map(float, lo)), tuple(map(float, hi))), (float(y_lo), float(y_hi))


def tensor_from_state(state: dict[str, Any]) -> TensorFit:
    """Rebuild a tensor fit from :func:`tensor_state` output, checking every invariant."""
    from rosenblatt._schema import SchemaError, check_array

    k = state["x_dims"]
    check_int(k, "x_dims", low=2, high=tg_max_dims(), error=SchemaError)
    domain = _vector_domain(state["domain"], k)
    axes = tuple(
        check_array(a, f"axes[{d}]", (len(a),), increasing=True)
        for d, a in enumerate(state["axes"])
    )
    if len(axes) != k or any(len(a) < 2 for a in axes):
        msg = f"axes must hold {k} increasing arrays of at least two nodes"
        raise SchemaError(msg)
    if any(a[0] != lo or a[-1] != hi for a, lo, hi in zip(axes, *domain[0], strict=True)):
        msg = "the axes must start and end on the x domain"
        raise SchemaError(msg)
    n_nodes = math.prod(len(a) for a in axes)
    n_edge = len(state["y_edges"][0]) if state["y_edges"] else 0
    edges = check_array(state["y_edges"], "y_edges", (n_nodes, max(n_edge, 2)), nondecreasing=True)
    cdf = check_array(state["cdf"], "cdf", (n_nodes, max(n_edge, 2)), nondecreasing=True, unit=True)
    (y_lo, y_hi) = domain[1]
    if np.any(edges[:, 0] != y_lo) or np.any(edges[:, -1] != y_hi):
        msg = "y_edges must start and end on the y domain at every node"
        raise SchemaError(msg)
    if np.any(cdf[:, 0] != 0) or np.any(cdf[:, -1] != 1):
        msg = "cdf must start at 0 and end at 1 at every node"
        raise SchemaError(msg)
    sigma_r = float(check_array(state["sigma_r"], "sigma_r", ()))
    relative = check_array(state["axis_sigma_r"], "axis_sigma_r", (k,))
    sigma_a = check_array(state["sigma_a"], "sigma_a", (k,))
    if not (sigma_r > 0 and np.all(relative > 0) and np.all(sigma_a > 0)):
        msg = "sigma_r, axis_sigma_r and sigma_a must be positive"
        raise SchemaError(msg)
    selection = None if state["selection"] is None else Selection.from_dict(state["selection"])
    return TensorFit(domain, sigma_r, relative, sigma_a, selection, axes, edges, cdf)


def tg_max_dims() -> int:
    """The most observables a tensor grid takes."""
    from rosenblatt.transforms._observables import MAX_OBSERVABLES

    return MAX_OBSERVABLES
