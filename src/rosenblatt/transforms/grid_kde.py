"""Local-polynomial kernel estimate of the conditional CDF, tabulated on a grid."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Literal

import numpy as np

from rosenblatt._validation import as_sigma_r, check_int, check_real
from rosenblatt.exceptions import NegativeWeightError
from rosenblatt.transforms import _local_polynomial as lp
from rosenblatt.transforms._column_grid import ColumnGridTransform
from rosenblatt.transforms._grid_kde_vector import (
    TensorFit,
    fit_tensor,
    tensor_from_state,
    tensor_state,
)
from rosenblatt.transforms._irgi_depth import fit_options, inner_levels, read_fit_options
from rosenblatt.transforms._tensor_grid import TensorColumns
from rosenblatt.transforms.kde import absolute_sigma
from rosenblatt.transforms.selection import (
    Selection,
    check_folds,
    check_seed,
    select_bandwidth,
)
from rosenblatt.typing import FloatArray

__all__ = ["GridKDE"]


#: largest number of shared ``y`` edges the estimate is computed on before compression
MAX_FINE_EDGES = 4096
#: defining events per shared ``y`` edge, at least
EVENTS_PER_FINE_EDGE = 8


class GridKDE(ColumnGridTransform):
    """Kernel estimate of ``gamma(x, y) = P(Y <= y | X = x)``, local-polynomial in ``x``, on a grid.

    The defining sample is binned on ``x`` nodes (``nodes_per_bandwidth`` per
    kernel width) and on the weighted quantiles of ``y`` (up to 4096 edges,
    at least 8 events apart); at every node a local polynomial of degree
    ``degree`` in ``x`` with a Gaussian kernel of width ``sigma_r * sigma_a``
    (``sigma_a`` as for :class:`~rosenblatt.KDE`) is fitted to the weight
    below every edge (see :mod:`rosenblatt.transforms._local_polynomial`).
    Each node's CDF is made monotone by rearrangement, clipped to ``[0, 1]``
    and stored on the edges where it reaches each multiple of
    ``1 / y_levels``. ``gamma`` is evaluated as for :class:`~rosenblatt.IRGI`:
    linear in ``y`` between a column's edges and linear in ``x`` between
    columns.

    Several protected observables (``x`` of shape ``(n, k)``, ``k <= 3``, or a
    list of ``k`` arrays) are smoothed on a tensor grid with a product
    Gaussian kernel of width ``sigma_r * sigma_a[d]`` along observable ``d``
    (``sigma_a`` per observable) and a local polynomial of degree
    ``degree <= 2`` in all of them (see
    :mod:`rosenblatt.transforms._tensor_grid`); ``gamma`` is multilinear in
    ``x`` between the ``2**k`` nodes around it. With ``sigma_r="auto"`` the
    common ``sigma_r`` is cross-validated, then each observable's width is
    refined in turn by factors of ``sqrt(2)``
    (:mod:`rosenblatt.transforms._vector_selection`).

    ``degree=0`` is the method paper's Gaussian-kernel (Nadaraya-Watson)
    estimate on a grid. Degree 1 (local linear) removes its bias from the
    slope of the density of ``x``, which dominates in the sparse tails;
    degree 2 (the default) also the bias from the curvature of ``gamma`` in
    ``x``, which allows a wider kernel and so a smaller statistical error.

    Parameters
    ----------
    sigma_r
        Kernel width relative to ``sigma_a``, or ``"auto"`` (default): chosen
        by ``folds``-fold cross-validation of the integrated Brier score on
        the defining sample (:func:`~rosenblatt.transforms.selection.select_bandwidth`).
    degree
        Degree of the local polynomial in ``x``: 0, 1, 2 or 3.
    y_levels
        The stored columns keep an edge wherever their CDF reaches a new
        multiple of ``1 / y_levels``.
    nodes_per_bandwidth
        ``x`` nodes per kernel width (half as many along each axis of a
        tensor grid).
    folds, seed
        Cross-validation folds and the seed of their random assignment
        (``sigma_r="auto"`` only); the choice is deterministic given both.
    max_nodes
        Most ``x`` nodes allowed (a clear error beyond); a tensor grid of
        several observables may hold ten times as many in all.
    cut_levels
        The levels of ``gamma`` that the transformed score will be cut at
        (an ABCD analysis's ``y0``), or ``None``. With ``sigma_r="auto"`` on
        one observable, a width whose held-out pass fraction at a level
        depends on ``x`` is not chosen while another passes; where none
        passes, :meth:`coarse_cut_note` says so.

    Attributes
    ----------
    sigma_r_ : float
        The kernel width used, relative to ``sigma_a_``.
    bandwidth_ : float
        The kernel width used, in units of ``x``.
    selection_ : Selection or None
        With ``sigma_r="auto"``: the widths tried and their scores.
    x_centres_, y_edges_, cdf_ : numpy.ndarray
        The grid, as :class:`~rosenblatt.IRGI` holds it: column ``x``
        positions, per column its ``y`` edges and the CDF at them.

    Notes
    -----
    The estimate is monotone in ``y`` and in ``[0, 1]`` by construction.
    Ties in ``y`` are treated as by IRGI: a tied value is an edge of the
    shared grid, where the CDF is the weight strictly below it, and stays an
    edge of every column in which it holds more than ``1 / y_levels`` of the
    weight, so that the step of the tie stays sharp; at the upper domain edge
    ``gamma = 1``. The edges depend on ``y`` only through the order of the
    defining scores (``gamma`` is linear in ``y`` between them). ``y`` below
    (above) the domain gives 0 (1); ``x`` beyond the domain is evaluated at
    the nearest edge.

    Negative weights (NLO simulation) can leave a node's local fit undefined:
    its kernel-weighted sum of the weights not positive, or (degree 1 and
    above) its local moment matrix not positive definite. The kernel of each
    such node alone is widened, by factors of 2, until its fit is defined
    (:func:`~rosenblatt.transforms._local_polynomial.node_bandwidths`; on a
    tensor grid the node takes the estimate of the widened grid); the
    rearrangement and clipping above then make its column a CDF, however the
    negative weights bend it. Every other node keeps ``sigma_r``, so where all
    kernel sums are positive the estimate is unchanged. With
    ``sigma_r="auto"`` a width at which some cross-validation fold's estimate
    is undefined is skipped. A
    :class:`~rosenblatt.exceptions.NegativeWeightError` remains only where
    negative weights dominate the sample however wide the kernel.
    """

    kind: ClassVar[str] = "grid_kde"
    max_x_dims: ClassVar[int] = 3
    negative_weights: ClassVar[bool] = True
    #: a replica keeps the nominal's width, chosen once
    replica_parameters: ClassVar[Mapping[str, Any]] = {"cut_levels": None}

    sigma_r_: float
    sigma_a_: Any
    bandwidth_: Any
    degree_: int
    selection_: Selection | None
    x_centres_: FloatArray
    y_edges_: FloatArray
    cdf_: FloatArray

    def __init__(
        self,
        sigma_r: float | Literal["auto"] = "auto",
        degree: int = 2,
        *,
        y_levels: int = 512,
        nodes_per_bandwidth: float = 4.0,
        folds: int = 10,
        seed: int = 0,
        max_nodes: int = 20_000,
        cut_levels: Sequence[float] | None = None,
    ) -> None:
        self.sigma_r = sigma_r
        self.degree = degree
        self.y_levels = y_levels
        self.nodes_per_bandwidth = nodes_per_bandwidth
        self.folds = folds
        self.seed = seed
        self.max_nodes = max_nodes
        self.cut_levels = cut_levels

    def __repr__(self) -> str:
        levels = "" if self.cut_levels is None else f", cut_levels={self.cut_levels!r}"
        return f"GridKDE(sigma_r={self.sigma_r!r}, degree={self.degree!r}{levels})"

    def coarse_cut_note(self) -> str | None:
        """Why the chosen width may not close at a level of ``cut_levels``, or ``None``.

        A note where no width tried by ``sigma_r="auto"`` passes the test of
        the held-out pass fraction at the levels (:meth:`Selection.cut_note`).
        """
        self._check_fitted()
        note = None if self.selection_ is None else self.selection_.cut_note()
        return None if note is None else f"GridKDE sigma_r {self.sigma_r_:.3g}: {note}"

    # ---------------------------------------------------------------- params
    def _checked(self) -> tuple[float | None, int, int, float, int]:
        """``(sigma_r or None for auto, degree, y_levels, nodes_per_bandwidth, max_nodes)``."""
        chosen = as_sigma_r(self.sigma_r)
        degree = check_int(self.degree, "degree", low=0, high=3, what="0, 1, 2 or 3")
        levels = check_int(self.y_levels, "y_levels", low=2, high=100_000)
        per = check_real(self.nodes_per_bandwidth, "nodes_per_bandwidth", low=1, high=64)
        most = check_int(self.max_nodes, "max_nodes", low=2)
        return chosen, degree, levels, per, most

    # ------------------------------------------------------------------- fit
    def _fit(self, x: FloatArray, y: FloatArray, w: FloatArray | None) -> None:
        inner_levels(self.cut_levels)
        self._fit_binned(x, y, w)

    def _fit_vector(self, x: FloatArray, y: FloatArray, w: FloatArray | None) -> None:
        sigma_r, degree, levels, per, most = self._checked()
        if len(y) < 2:
            msg = f"GridKDE needs at least two defining events, got {len(y)}"
            raise ValueError(msg)
        self._set_tensor(
            fit_tensor(
                x,
                y,
                w,
                sigma_r=sigma_r,
                degree=degree,
                y_levels=levels,
                nodes_per_bandwidth=per,
                max_nodes=most,
                folds=self.folds,
                seed=self.seed,
                fine_edges=fine_edge_count(len(y), levels),
            )
        )

    def _set_tensor(self, fit: TensorFit) -> None:
        """Store the learned state of a fit on several observables."""
        self.__dict__.pop("x_centres_", None)
        self.tensor_ = fit
        self.domain_ = fit.domain  # type: ignore[assignment]
        self.sigma_r_ = fit.sigma_r
        self.sigma_a_ = fit.sigma_a
        self.bandwidth_ = fit.axis_sigma_r * fit.sigma_a
        self.degree_ = self._checked()[1]
        self.selection_ = fit.selection
        self.axes_ = fit.axes
        self.y_edges_, self.cdf_ = fit.y_edges, fit.cdf
        self.__dict__["_tensor_columns"] = TensorColumns(fit.axes, fit.y_edges, fit.cdf)

    def _transform_vector(self, x: FloatArray, y: FloatArray) -> FloatArray:
        columns: TensorColumns = self.__dict__["_tensor_columns"]
        return columns(x, y)

    def _fit_binned(
        self,
        x: FloatArray,
        y: FloatArray,
        w: FloatArray | None,
        fine_edges: FloatArray | None = None,
    ) -> None:
        """Fit on validated arrays, on the shared ``y`` edges ``fine_edges`` if given.

        By default the edges are the weighted quantiles of ``y`` that :meth:`fit` uses.
        """
        sigma_r, degree, levels, per, most = self._checked()
        if len(x) < 2:
            msg = f"GridKDE needs at least two defining events, got {len(x)}"
            raise ValueError(msg)
        for values, name in ((x, "x"), (y, "y")):
            if values.min() == values.max():
                msg = (
                    f"{name} is constant ({len(values)} events all equal {values[0]:g}): "
                    "there is no conditional distribution to estimate"
                )
                raise ValueError(msg)
        sigma_a = absolute_sigma(x, w)
        if not sigma_a > 0 and w is not None:  # x is not constant: only weights make it zero
            effective = float(w.sum()) ** 2 / float(np.dot(w, w))
            msg = (
                "sigma_a, the weighted spread of x, is zero: with these weights the weighted "
                "variance of x is not positive (effective number of events sum(w)**2 / "
                f"sum(w**2) = {effective:.3g})"
            )
            raise NegativeWeightError(msg) if np.any(w < 0) else ValueError(msg)
        order = np.argsort(y, kind="stable")
        selection = None
        if sigma_r is None:
            folds = check_folds(self.folds, len(x))
            seed = check_seed(self.seed)
            selection = select_bandwidth(
                x,
                y,
                w,
                degree=degree,
                sigma_a=sigma_a,
                folds=folds,
                seed=seed,
                nodes_per_bandwidth=per,
                max_nodes=most,
                y_order=order,
                cut_levels=inner_levels(self.cut_levels),
            )
            sigma_r = selection.chosen
        bandwidth = sigma_r * sigma_a
        nodes = lp.node_grid(float(x.min()), float(x.max()), bandwidth / per, most)
        if fine_edges is None:
            cumulative = (
                np.arange(len(y) + 1.0)
                if w is None
                else np.concatenate(([0.0], np.cumsum(w[order])))
            )
            fine_edges = lp.y_edges(y[order], cumulative, fine_edge_count(len(y), levels))
        mass, below = lp.bin_sample(x, y, w, nodes, fine_edges)
        self._set_grid(
            ((float(x.min()), float(x.max())), (float(y.min()), float(y.max()))),
            float(sigma_r),
            sigma_a,
            degree,
            selection,
            grid_columns(nodes, bandwidth, degree, fine_edges, mass, below, levels),
        )

    def _set_grid(
        self,
        domain: tuple[tuple[float, float], tuple[float, float]],
        sigma_r: float,
        sigma_a: float,
        degree: int,
        selection: Selection | None,
        grid: tuple[FloatArray, FloatArray, FloatArray],
    ) -> None:
        """Store the learned state: the widths and the grid ``(nodes, column edges, column CDF)``."""
        self.domain_ = domain
        self.sigma_r_ = sigma_r
        self.sigma_a_ = sigma_a
        self.bandwidth_ = sigma_r * sigma_a
        self.degree_ = degree
        self.selection_ = selection
        self.x_centres_, self.y_edges_, self.cdf_ = grid

    def fixed_parameters(self) -> tuple[float, int, int, float, int]:
        """``(sigma_r, degree, y_levels, nodes_per_bandwidth, max_nodes)`` of a fit with a fixed width.

        Raises
        ------
        ValueError
            For ``sigma_r="auto"`` or a parameter out of range.
        """
        sigma_r, degree, levels, per, most = self._checked()
        if sigma_r is None:
            msg = "sigma_r='auto' is chosen by cross-validation on all defining events at once"
            raise ValueError(msg)
        return sigma_r, degree, levels, per, most

    def set_fitted_grid(
        self,
        domain: tuple[tuple[float, float], tuple[float, float]],
        sigma_a: float,
        grid: tuple[FloatArray, FloatArray, FloatArray],
        *,
        n_events: int,
        sum_weight: float,
    ) -> GridKDE:
        """Store a grid ``(nodes, column edges, column CDF)`` fitted outside :meth:`fit`; return ``self``.

        The grid is that of :func:`grid_columns` at this transform's fixed
        parameters (:meth:`fixed_parameters`) and the width ``sigma_a``.
        """
        sigma_r, degree, *_ = self.fixed_parameters()
        self.__dict__.pop("x_dims_", None)
        self._set_grid(domain, sigma_r, sigma_a, degree, None, grid)
        self.n_events_ = int(n_events)
        self.sum_weight_ = float(sum_weight)
        return self

    def describe(self) -> str:
        """The kernel width, the degree and the shape of ``gamma`` between nodes."""
        self._check_fitted()
        if self.x_dims > 1:
            shape = " x ".join(str(len(a)) for a in self.axes_)
            return (
                f"GridKDE (sigma_r = {self.sigma_r_:g}, degree {self.degree_}) on a {shape} tensor "
                "grid of x nodes, linear in y between the edges of each node's column and "
                "multilinear in x between nodes"
            )
        return (
            f"GridKDE (sigma_r = {self.sigma_r_:g}, degree {self.degree_}) on its "
            f"{len(self.x_centres_)} x nodes, linear in y between the edges of each node's "
            "column and linear in x between nodes"
        )

    def fitted_params(self) -> dict[str, Any]:
        """The kernel width relative to ``sigma_a`` and the degree used."""
        self._check_fitted()
        return {"sigma_r": float(self.sigma_r_), "degree": int(self.degree_)}

    # --------------------------------------------------------- serialisation
    def _params_state(self) -> dict[str, Any]:
        return {
            "sigma_r": self.sigma_r if self.sigma_r == "auto" else float(self.sigma_r),
            "degree": int(self.degree_),
            "y_levels": int(self.y_levels),
            "nodes_per_bandwidth": float(self.nodes_per_bandwidth),
            "folds": int(self.folds),
            "seed": int(self.seed),
            "max_nodes": int(self.max_nodes),
            **fit_options(self.cut_levels, False),
        }

    def get_state(self) -> dict[str, Any]:
        """Hyper-parameters, the chosen width and the grid as JSON-compatible data."""
        self._check_fitted()
        if self.x_dims > 1:
            return {
                "params": self._params_state(),
                "n_events": int(self.n_events_),
                "sum_weight": float(self.sum_weight_),
                **tensor_state(self.tensor_),
            }
        return {
            "params": self._params_state(),
            "sigma_r": self.sigma_r_,
            "sigma_a": self.sigma_a_,
            "selection": None if self.selection_ is None else self.selection_.to_dict(),
            "domain": [list(axis) for axis in self.domain_],
            "n_events": int(self.n_events_),
            "sum_weight": float(self.sum_weight_),
            "x_centres": self.x_centres_.tolist(),
            "y_edges": self.y_edges_.tolist(),
            "cdf": self.cdf_.tolist(),
        }

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> GridKDE:
        """Rebuild a fitted GridKDE from :meth:`get_state` output, checking every invariant."""
        from rosenblatt._schema import SchemaError, check_array, check_domain

        params = state["params"]
        obj = cls(
            params["sigma_r"],
            params["degree"],
            y_levels=params["y_levels"],
            nodes_per_bandwidth=params["nodes_per_bandwidth"],
            folds=params["folds"],
            seed=params["seed"],
            max_nodes=params["max_nodes"],
            cut_levels=read_fit_options(params)[0],
        )
        if state.get("x_dims", 1) != 1:
            return obj._with_tensor_state(state)
        try:
            obj._checked()
            sigma_r = float(check_array(state["sigma_r"], "sigma_r", ()))
            sigma_a = float(check_array(state["sigma_a"], "sigma_a", ()))
            if not (sigma_r > 0 and sigma_a > 0):
                msg = "sigma_r and sigma_a must be positive"
                raise ValueError(msg)
        except (TypeError, ValueError) as err:
            raise SchemaError(str(err)) from err
        selection = None if state["selection"] is None else Selection.from_dict(state["selection"])
        if (selection is None) != (obj.sigma_r != "auto"):
            msg = "a selection is stored exactly when sigma_r is 'auto'"
            raise SchemaError(msg)
        domain = check_domain(state["domain"])
        centres, edges, cdf = _checked_grid(state, domain)
        obj.domain_ = domain
        obj.sigma_r_ = sigma_r
        obj.sigma_a_ = sigma_a
        obj.bandwidth_ = sigma_r * sigma_a
        obj.degree_ = int(params["degree"])
        obj.selection_ = selection
        obj.x_centres_ = centres
        obj.y_edges_ = edges
        obj.cdf_ = cdf
        obj.n_events_ = int(state["n_events"])
        obj.sum_weight_ = float(state["sum_weight"])
        return obj

    def _with_tensor_state(self, state: dict[str, Any]) -> GridKDE:
        """Set the learned state of a fit on several observables from its saved state."""
        from rosenblatt._schema import SchemaError

        try:
            self._checked()
        except (TypeError, ValueError) as err:
            raise SchemaError(str(err)) from err
        fit = tensor_from_state(state)
        if (fit.selection is None) != (self.sigma_r != "auto"):
            msg = "a selection is stored exactly when sigma_r is 'auto'"
            raise SchemaError(msg)
        self._set_tensor(fit)
        self.x_dims_ = len(fit.axes)
        self.n_events_ = int(state["n_events"])
        self.sum_weight_ = float(state["sum_weight"])
        return self


def fine_edge_count(n_events: int, y_levels: int) -> int:
    """Number of quantile bins of the shared ``y`` edges for ``n_events`` defining events."""
    return int(min(MAX_FINE_EDGES, max(y_levels, n_events // EVENTS_PER_FINE_EDGE)))


def grid_columns(
    nodes: FloatArray,
    bandwidth: float,
    degree: int,
    fine_edges: FloatArray,
    mass: FloatArray,
    below: FloatArray,
    y_levels: int,
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """The fitted grid ``(nodes, column edges, column CDF)`` from the binned sample.

    Parameters
    ----------
    nodes
        The ``x`` nodes.
    bandwidth
        Kernel width in units of ``x``.
    degree
        Degree of the local polynomial.
    fine_edges
        The shared ``y`` edges.
    mass, below
        The binned weight (:func:`~rosenblatt.transforms._local_polynomial.bin_sample`
        on ``nodes`` and ``fine_edges``).
    y_levels
        Levels kept per column.

    Raises
    ------
    NegativeWeightError
        Where negative weights leave a node's fit undefined however wide its
        kernel (see :func:`~rosenblatt.transforms._local_polynomial.node_bandwidths`).
    """
    widths = lp.node_bandwidths(nodes, bandwidth, mass, degree)
    matrices = lp.kernel_matrices(nodes, widths, 2 * degree + 1)
    column_edges, column_cdf = lp.local_polynomial_columns(
        matrices, mass, below, degree, fine_edges, y_levels
    )
    return nodes, column_edges, column_cdf


def _checked_grid(
    state: dict[str, Any], domain: tuple[tuple[float, float], tuple[float, float]]
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """The saved node centres, column edges and CDF of a scalar GridKDE, each invariant checked."""
    from rosenblatt._schema import SchemaError, check_array

    n_col = len(state["x_centres"])
    if n_col < 2:
        msg = "a GridKDE needs at least two columns"
        raise SchemaError(msg)
    centres = check_array(state["x_centres"], "x_centres", (n_col,), increasing=True)
    n_edge = len(state["y_edges"][0]) if state["y_edges"] else 0
    if n_edge < 2:
        msg = "y_edges must hold at least two edges per column"
        raise SchemaError(msg)
    edges = check_array(state["y_edges"], "y_edges", (n_col, n_edge), nondecreasing=True)
    cdf = check_array(state["cdf"], "cdf", (n_col, n_edge), nondecreasing=True, unit=True)
    (x_lo, x_hi), (y_lo, y_hi) = domain
    if centres[0] != x_lo or centres[-1] != x_hi:
        msg = "x_centres must start and end on the x domain"
        raise SchemaError(msg)
    if np.any(edges[:, 0] != y_lo) or np.any(edges[:, -1] != y_hi):
        msg = "y_edges must start and end on the y domain in every column"
        raise SchemaError(msg)
    if np.any(cdf[:, 0] != 0) or np.any(cdf[:, -1] != 1):
        msg = "cdf must start at 0 and end at 1 in every column"
        raise SchemaError(msg)
    return centres, edges, cdf
