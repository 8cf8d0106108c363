"""Irregular Grid Interpolation (IRGI) of the conditional CDF."""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Literal, NamedTuple

import numpy as np

from rosenblatt._validation import check_int, check_ints, is_int
from rosenblatt.transforms._bisection import max_depth
from rosenblatt.transforms._column_grid import ColumnGridTransform
from rosenblatt.transforms._irgi_depth import (
    COARSE_CUT_MESSAGE,
    MIN_BINS_BEYOND_CUT,
    check_levels,
    coarse_cut_note,
    cut_depth,
    fit_options,
    read_fit_options,
    select_depth,
    unresolved_levels,
)
from rosenblatt.transforms._irgi_grid import (
    Domain,
    check_column_weight,
    column_cdf,
    column_edges,
    domain_list,
    midpoint,
    parse_domain,
    sparse_weight_error,
    x_columns,
    y_by_column,
    y_edges_and_cdf,
)
from rosenblatt.typing import FloatArray

if TYPE_CHECKING:
    import boost_histogram as bh
    import hist

    from rosenblatt.transforms._irgi_vector import Cells
    from rosenblatt.transforms.selection import Selection

__all__ = [
    "COARSE_CUT_MESSAGE",
    "IRGI",
    "MIN_BINS_BEYOND_CUT",
    "ScalarGrid",
    "check_column_weight",
    "column_cdf",
    "column_edges",
    "midpoint",
    "parse_domain",
    "sparse_weight_error",
]


class ScalarGrid(NamedTuple):
    """The learned grid of an IRGI fit on one observable (the attributes of the same names).

    What a fit outside :meth:`IRGI.fit` (:class:`~rosenblatt.MergeableFit`)
    hands to :meth:`IRGI.set_fitted_grid`.
    """

    domain: Domain
    depth: int
    x_centres: FloatArray
    x_boundaries: FloatArray
    y_edges: FloatArray
    cdf: FloatArray
    column_weight: FloatArray


#: what IRGI's columns in ``x`` hold equal shares of
OCCUPANCIES = ("weight", "events")


def check_occupancy(occupancy: Any) -> Literal["weight", "events"]:
    """``occupancy``, checked to be one of :data:`OCCUPANCIES` (else a ``ValueError``)."""
    if not isinstance(occupancy, str) or occupancy not in OCCUPANCIES:
        msg = f"occupancy must be one of {list(OCCUPANCIES)}, got {occupancy!r}"
        raise ValueError(msg)
    return occupancy  # type: ignore[return-value]


class IRGI(ColumnGridTransform):
    """Irregular Grid Interpolation estimate of ``gamma(x, y) = P(Y <= y | X = x)``.

    The defining sample is bisected recursively to depth ``depth + 1`` in ``x``
    by summed weight (or by events, ``occupancy="events"``): the even-indexed
    edges are the ``2**depth + 1`` column centres (the outer two on the domain
    edges), the odd-indexed edges and the domain ends the column boundaries. Each column is bisected again in ``y``
    to depth ``depth``; the cumulative sums of the bin contents, normalised per
    column, are the conditional CDF at the ``y`` edges of the column. ``gamma``
    is linear in ``y`` between the edges of a column and linear in ``x``
    between column centres.

    Parameters
    ----------
    depth
        Bisection depth ``d`` (the paper's single free parameter). A sample of
        ``N`` events supports ``d`` up to ``floor((log2 N - 1) / 2)``. Or
        ``"auto"``: the depth from 1 to the largest a training fold supports
        with the best ``folds``-fold cross-validated integrated Brier score
        of the conditional CDF on the defining sample
        (:func:`~rosenblatt.transforms.selection.cross_validate`).
    domain
        ``((x_min, x_max), (y_min, y_max))``; by default the range of the
        defining sample. Defining events outside the domain are an error.
    folds, seed
        Cross-validation folds and the seed of their random assignment
        (``depth="auto"`` only); the choice is deterministic given both.
    cut_levels
        The levels of ``gamma`` that the transformed score will be cut at
        (an ABCD analysis's ``y0``), or ``None``. A depth resolves a level
        ``l`` in ``(0, 1)`` when at least :data:`MIN_BINS_BEYOND_CUT` of the
        ``2**depth`` equal-occupancy ``y`` bins of a column lie beyond it on
        either side: ``2**depth * min(l, 1 - l) >= 2``
        (:meth:`cut_depth`). With ``depth="auto"`` only such depths are
        tried; where uneven weights leave every one of them a one-event cell
        in some training fold, the smallest that fits the whole sample is
        chosen; where none does, the largest depth the folds fit is chosen
        (the finest grid the sample allows) and a :class:`UserWarning` says
        so, as it does for a given depth that does not resolve them
        (:meth:`coarse_cut_note`).
    empty_bins
        Where uneven weights leave a single event in a cell of equal weight
        that must be split in ``y``, leave an empty bin (two coincident edges)
        instead of refusing the depth. A bootstrap replica's Poisson(1)
        weights need it at the largest depth its sample supports;
        :func:`rosenblatt.bootstrap` fits every replica so.
    occupancy : {"weight", "events"}
        What the columns in ``x`` hold equal shares of: the summed weight
        (integer weights then equal replicated events), or the events of
        non-zero weight, each counted once. ``"events"`` suits simulation
        generated in slices of ``x`` (or of a variable that rises with it),
        whose weights fall steeply with ``x``: by summed weight, the few
        heavy events of the lowest slice take most columns and the many
        light events where ``x`` is large share a column or two; by events,
        the columns lie where the sample's events are. The conditional CDF
        of each column is weighted either way. One observable only.

    Attributes
    ----------
    x_centres_ : numpy.ndarray
        ``x`` of the ``2**d + 1`` columns' interpolation vertices.
    x_boundaries_ : numpy.ndarray
        The ``2**d + 2`` column boundaries.
    y_edges_ : numpy.ndarray
        ``(2**d + 1, 2**d + 1)``: per column, the ``y`` edges (vertices).
    cdf_ : numpy.ndarray
        Same shape: the normalised cumulative weight below each edge.
    column_weight_ : numpy.ndarray
        Summed weight of each column.
    depth_ : int
        The depth used.
    selection_ : Selection or None
        With ``depth="auto"``: the depths tried and their scores (with
        ``cut_levels``, those that resolve the levels).

    Several protected observables (``x`` of shape ``(n, k)``, ``k <= 3``, or a
    list of ``k`` arrays): the sample is bisected by summed weight into
    ``2**depth`` nested cells of equal weight, ``s1`` levels along the first
    observable, then ``s2`` along the second inside every slab, and so on;
    ``depth`` is a total shared as evenly as cycling over the observables
    shares it, or the levels per observable ``(s1, ..., sk)``. Each cell is
    bisected in ``y`` at its weighted quantiles (``y_depth_`` levels, about
    three events per bin) and ``gamma`` is multilinear in ``x`` between the
    cells' centres, one observable at a time, so that a correctionlib
    multibinning holds it exactly. The cells' CDFs are those of the score
    about its weighted least-squares plane in ``x``,
    ``u = y - (x - trend_centre_) . trend_slope_``, read at the query's own
    ``u``: the same conditional CDF, with less of ``y``'s dependence on ``x``
    left for the cells to smear (see :mod:`rosenblatt.transforms._irgi_vector`,
    which says why and what it gains). ``depth="auto"`` cross-validates the
    balanced levels of every depth, then moves single levels between the
    observables while the score improves, and takes the fewest levels within
    one standard error of the best score; ``domain`` is not used. Attributes
    of such a fit: ``boxes_`` (``(2**depth, 2, k)``), ``splits_`` (levels per
    observable), ``y_edges_`` and ``cdf_`` per cell, ``trend_centre_``,
    ``trend_slope_``, ``depth_`` (the total), ``y_depth_``, ``selection_``.

    Notes
    -----
    Ties in ``y`` (a saturated score) are exact: an edge that falls on a tied
    value carries the weight strictly below it, so ``gamma`` is continuous and
    the tied events share one value, except at the upper domain edge, where
    ``gamma = 1``. ``y`` below (above) the domain gives 0 (1); ``x`` beyond the
    domain is evaluated at the nearest column centre.
    """

    kind: ClassVar[str] = "irgi"
    max_x_dims: ClassVar[int] = 3
    #: a replica keeps the nominal's depth, and Poisson weights may leave a bin empty
    replica_parameters: ClassVar[Mapping[str, Any]] = {"empty_bins": True, "cut_levels": None}

    x_centres_: FloatArray
    x_boundaries_: FloatArray
    y_edges_: FloatArray
    cdf_: FloatArray
    column_weight_: FloatArray

    depth_: int
    selection_: Selection | None

    def __init__(
        self,
        depth: int | Sequence[int] | Literal["auto"] = 7,
        domain: Domain | None = None,
        *,
        folds: int = 10,
        seed: int = 0,
        cut_levels: Sequence[float] | None = None,
        empty_bins: bool = False,
        occupancy: Literal["weight", "events"] = "weight",
    ) -> None:
        self.depth = depth
        self.domain = domain
        self.folds = folds
        self.seed = seed
        self.cut_levels = cut_levels
        self.empty_bins = empty_bins
        self.occupancy = occupancy

    def __repr__(self) -> str:
        domain = "" if self.domain is None else f", domain={self.domain!r}"
        levels = "" if self.cut_levels is None else f", cut_levels={self.cut_levels!r}"
        empty = ", empty_bins=True" if self.empty_bins else ""
        occupancy = "" if self.occupancy == "weight" else f", occupancy={self.occupancy!r}"
        return f"IRGI(depth={self.depth!r}{domain}{levels}{empty}{occupancy})"

    @staticmethod
    def max_depth(n_events: int) -> int:
        """Largest depth a defining sample of ``n_events`` events supports."""
        return max_depth(n_events)

    @staticmethod
    def cut_depth(levels: Sequence[float]) -> int:
        """Smallest depth whose ``y`` bins resolve every cut level (0 for none in ``(0, 1)``).

        A depth ``d`` resolves a level ``l`` when ``2**d * min(l, 1 - l)`` is at
        least :data:`MIN_BINS_BEYOND_CUT`; it needs ``2**(2 d + 1)`` defining events.
        """
        return cut_depth(levels)

    def unresolved_cut_levels(self) -> tuple[float, ...]:
        """The levels of ``cut_levels`` that the fitted grid's ``y`` bins do not resolve."""
        self._check_fitted()
        if self.cut_levels is None:
            return ()
        return unresolved_levels(
            self.cut_levels, 2 ** (self.y_depth_ if self.x_dims > 1 else self.depth_)
        )

    def coarse_cut_note(self) -> str | None:
        """Why the fit may not close at a level of ``cut_levels``, or ``None`` where it may.

        A grid whose ``y`` bins do not resolve a level, or a ``depth="auto"``
        none of whose depths (each resolving the levels) passes the test of
        the held-out pass fraction at the levels (:meth:`Selection.cut_note`).
        """
        unresolved = self.unresolved_cut_levels()
        if not unresolved:
            dependence = None if self.selection_ is None else self.selection_.cut_note()
            if dependence is None:
                return None
            bins = 2 ** (self.y_depth_ if self.x_dims > 1 else self.depth_)
            return (
                f"IRGI depth {self.depth_} ({bins} y bins, at least {MIN_BINS_BEYOND_CUT:g} "
                f"bins beyond the cut levels): {dependence}"
            )
        if self.x_dims > 1:
            return coarse_cut_note(unresolved, f"{2**self.y_depth_} y bins per cell")
        if self.selection_ is None:
            return coarse_cut_note(
                unresolved, f"depth {self.depth_} ({2**self.depth_} y bins per column)"
            )
        from rosenblatt.transforms.selection import smallest_training_fold

        return coarse_cut_note(
            unresolved,
            f"depth {self.depth_} ({2**self.depth_} y bins per column) (depth='auto': the "
            "finest its training folds fit)",
            n_train=smallest_training_fold(self.n_events_, self.selection_.folds),
        )

    # ------------------------------------------------------------------ fit
    def _fit(self, x: FloatArray, y: FloatArray, w: FloatArray | None) -> None:
        selection = None
        check_occupancy(self.occupancy)
        if self.cut_levels is not None:
            check_levels(self.cut_levels)
        if isinstance(self.depth, str) and self.depth == "auto":
            domain = self._resolve_domain(x, y)
            selection = self._select_depth(x, y, w, domain)
            depth = int(selection.chosen)
        else:
            depth = self.fixed_depth(len(x))
            domain = self._resolve_domain(x, y)
        self._fit_grid(x, y, w, depth, domain)
        self.selection_ = selection
        self.n_events_ = len(x)  # the note of a coarse cut names the folds' size
        self._warn_coarse_cut()

    def _warn_coarse_cut(self) -> None:
        """Warn where the fitted grid does not resolve a cut level."""
        note = self.coarse_cut_note()
        if note is not None:
            warnings.warn(note, UserWarning, stacklevel=4)

    def _fit_vector(self, x: FloatArray, y: FloatArray, w: FloatArray | None) -> None:
        from rosenblatt.transforms import _irgi_vector as iv
        from rosenblatt.transforms.selection import check_folds, check_seed

        if self.domain is not None:
            msg = "domain is not used with several observables: give domain=None"
            raise ValueError(msg)
        if check_occupancy(self.occupancy) != "weight":
            msg = (
                "occupancy='events' is for one observable: the nested cells of several "
                "observables hold equal shares of the summed weight; give occupancy='weight'"
            )
            raise ValueError(msg)
        selection = None
        if isinstance(self.depth, str) and self.depth == "auto":
            selection = iv.select_splits(
                x, y, w, check_folds(self.folds, len(y)), check_seed(self.seed)
            )
            splits = tuple(selection.chosen)
        else:
            splits = self.fixed_splits(len(y), x.shape[1])
        cells = iv.fit_cells(x, y, w, splits)
        lo, hi = x.min(axis=0), x.max(axis=0)
        domain = ((tuple(map(float, lo)), tuple(map(float, hi))), (float(y.min()), float(y.max())))
        self._set_cells(domain, cells)
        self.selection_ = selection
        self._warn_coarse_cut()

    def fixed_splits(self, n_events: int, k: int) -> tuple[int, ...]:
        """The levels per observable a fit of ``n_events`` events on ``k`` observables uses.

        Raises
        ------
        ValueError
            For ``depth="auto"`` or a depth these events do not support.
        """
        from rosenblatt.transforms._irgi_nested import balanced_splits
        from rosenblatt.transforms._irgi_vector import max_vector_depth

        depth, largest = self.depth, max_vector_depth(n_events)
        if isinstance(depth, (tuple, list)):
            splits = check_ints(
                depth,
                "depth as levels per observable",
                low=0,
                length=k,
                what=f"{k} non-negative integers, one per observable",
            )
        elif is_int(depth):
            splits = balanced_splits(int(depth), k)
        else:
            splits = ()
        if not splits or not 1 <= sum(splits) <= largest:
            msg = (
                f"depth must be 'auto', an integer in [1, {largest}] or {k} levels per observable "
                f"summing to it, for {n_events} events on several observables (cells of at "
                f"least 16 events), got {depth!r}"
            )
            raise ValueError(msg)
        return splits

    def _set_cells(self, domain: Any, cells: Cells) -> None:
        """Store the cells of a fit on several observables."""
        for name in ("x_centres_", "x_boundaries_", "column_weight_"):
            self.__dict__.pop(name, None)
        self.domain_ = domain
        self.boxes_, self.y_edges_, self.cdf_ = cells.boxes, cells.edges, cells.cdf
        self.trend_centre_, self.trend_slope_ = cells.centre, cells.slope
        self.splits_ = cells.splits
        self.depth_ = int(np.log2(len(cells.boxes)))
        self.y_depth_ = cells.y_depth

    def _cells(self) -> Cells:
        from rosenblatt.transforms._irgi_vector import Cells

        return Cells(
            self.boxes_,
            self.y_edges_,
            self.cdf_,
            self.y_depth_,
            self.trend_centre_,
            self.trend_slope_,
            self.splits_,
        )

    def _transform_vector(self, x: FloatArray, y: FloatArray) -> FloatArray:
        return self._cells().gamma(x, y, self.domain_[1])

    def _vector_depth(self) -> list[int]:
        """The depth a fit on several observables used: its levels per observable."""
        return [int(s) for s in self.splits_]

    def _vector_state(self) -> dict[str, Any]:
        (x_lo, x_hi), y_range = self.domain_
        return {
            "params": {
                "depth": self.depth if self.depth == "auto" else self._vector_depth(),
                "folds": int(self.folds),
                "seed": int(self.seed),
                **self._fit_options(),
            },
            "x_dims": self.x_dims,
            "depth": int(self.depth_),
            "y_depth": int(self.y_depth_),
            "domain": [[list(x_lo), list(x_hi)], list(y_range)],  # type: ignore[call-overload]
            "boxes": self.boxes_.tolist(),
            "trend_centre": self.trend_centre_.tolist(),
            "trend_slope": self.trend_slope_.tolist(),
            "y_edges": self.y_edges_.tolist(),
            "cdf": self.cdf_.tolist(),
            "selection": None if self.selection_ is None else self.selection_.to_dict(),
            "n_events": int(self.n_events_),
            "sum_weight": float(self.sum_weight_),
            "splits": self._vector_depth(),
        }

    @classmethod
    def _from_vector_state(cls, state: dict[str, Any]) -> IRGI:
        from rosenblatt.transforms._irgi_vector_state import cells_from_state
        from rosenblatt.transforms.selection import Selection

        domain, cells = cells_from_state(state)
        params = state["params"]
        obj = cls(params["depth"], folds=params["folds"], seed=params["seed"])
        obj._read_fit_options(params)
        obj._set_cells(domain, cells)
        obj.selection_ = (
            None if state["selection"] is None else Selection.from_dict(state["selection"])
        )
        obj.x_dims_ = state["x_dims"]
        obj.n_events_ = int(state["n_events"])
        obj.sum_weight_ = float(state["sum_weight"])
        return obj

    def _select_depth(
        self,
        x: FloatArray,
        y: FloatArray,
        w: FloatArray | None,
        domain: Domain,
    ) -> Selection:
        """Cross-validate the depths (:func:`~rosenblatt.transforms._irgi_depth.select_depth`)."""
        return select_depth(
            lambda depth: IRGI(depth=int(depth), domain=domain, occupancy=self.occupancy),
            x,
            y,
            w,
            folds=self.folds,
            seed=self.seed,
            cut_levels=self.cut_levels,
        )

    def _fit_grid(
        self,
        x: FloatArray,
        y: FloatArray,
        w: FloatArray | None,
        depth: int,
        domain: Domain,
    ) -> None:
        occupying = w if w is None or self.occupancy == "weight" else (w != 0).astype(np.float64)
        columns = x_columns(x, occupying, depth, domain[0])
        ys, cumulative, column_weight = y_by_column(x, y, w, columns)
        check_column_weight(column_weight, columns.boundaries)
        y_edges, cdf = y_edges_and_cdf(
            ys,
            cumulative,
            column_weight,
            columns.bounds,
            w,
            depth,
            domain[1],
            empty_bins=bool(self.empty_bins) and w is not None,
        )
        self._set_grid(
            domain, depth, columns.centres, columns.boundaries, y_edges, cdf, column_weight
        )

    def _set_grid(
        self,
        domain: Domain,
        depth: int,
        centres: FloatArray,
        boundaries: FloatArray,
        y_edges: FloatArray,
        cdf: FloatArray,
        column_weight: FloatArray,
    ) -> None:
        """Store the learned grid."""
        self.domain_ = domain
        self.depth_ = depth
        self.x_centres_ = centres
        self.x_boundaries_ = boundaries
        self.y_edges_ = y_edges
        self.cdf_ = cdf
        self.column_weight_ = column_weight

    def set_fitted_grid(self, grid: ScalarGrid, *, n_events: int, sum_weight: float) -> IRGI:
        """Store a grid fitted outside :meth:`fit` on one observable; return ``self``, fitted."""
        self.__dict__.pop("x_dims_", None)
        self._set_grid(
            grid.domain,
            grid.depth,
            grid.x_centres,
            grid.x_boundaries,
            grid.y_edges,
            grid.cdf,
            grid.column_weight,
        )
        self.selection_ = None
        self.n_events_ = int(n_events)
        self.sum_weight_ = float(sum_weight)
        return self

    def set_fitted_cells(
        self, domain: Any, cells: Cells, *, n_events: int, sum_weight: float
    ) -> IRGI:
        """Store nested cells fitted outside :meth:`fit` on several observables; return ``self``."""
        self._set_cells(domain, cells)
        self.selection_ = None
        self.x_dims_ = int(cells.boxes.shape[2])
        self.n_events_ = int(n_events)
        self.sum_weight_ = float(sum_weight)
        return self

    def fixed_depth(self, n_events: int) -> int:
        """The depth a fit of ``n_events`` events on one observable uses.

        Raises
        ------
        ValueError
            For ``depth="auto"`` or a depth these events do not support.
        """
        depth = check_int(self.depth, "depth", low=0, what="a non-negative integer or 'auto'")
        largest = max_depth(n_events)
        if depth > largest:
            msg = (
                f"too few events for IRGI depth {depth}: it needs at least {2 ** (2 * depth + 1)} "
                f"events, the sample has {n_events}; the largest depth this sample supports is "
                f"{largest}"
            )
            raise ValueError(msg)
        return depth

    def _resolve_domain(self, x: FloatArray, y: FloatArray) -> Domain:
        for values, name in ((x, "x"), (y, "y")):
            if values.min() == values.max():
                msg = (
                    f"{name} is constant ({len(values)} events all equal {values[0]:g}): "
                    "there is no conditional distribution to estimate"
                )
                raise ValueError(msg)
        if self.domain is None:
            return ((float(x.min()), float(x.max())), (float(y.min()), float(y.max())))
        domain = parse_domain(self.domain)
        for (lo, hi), values, name in zip(domain, (x, y), ("x", "y"), strict=True):
            n_out = int(((values < lo) | (values > hi)).sum())
            if n_out:
                msg = (
                    f"{n_out} defining event(s) have {name} outside the domain [{lo:g}, {hi:g}]; "
                    "widen the domain or leave it to the sample range"
                )
                raise ValueError(msg)
        return domain

    # ------------------------------------------------------------ grid views
    @property
    def x_axis(self) -> bh.axis.Variable:
        """The column boundaries as a boost-histogram ``Variable`` axis."""
        import boost_histogram as bh

        self._check_fitted()
        return bh.axis.Variable(self.x_boundaries_, metadata="x")

    def y_axis(self, column: int) -> bh.axis.Variable:
        """The ``y`` edges of one column as a ``Variable`` axis (tied edges merged)."""
        import boost_histogram as bh

        self._check_fitted()
        return bh.axis.Variable(np.unique(self.y_edges_[column]), metadata="y")

    @property
    def y_axes(self) -> list[bh.axis.Variable]:
        """One ``Variable`` axis of ``y`` edges per column."""
        return [self.y_axis(k) for k in range(len(self.x_centres_))]

    def column_histograms(self) -> list[hist.Hist[Any]]:
        """The defining sample's weight in the IRGI bins, one ``hist.Hist`` per column.

        These are the histogram matrix ``H`` of the method: the bins of column
        ``k`` hold (up to ties) equal weight.
        """
        import hist as hist_module

        self._check_fitted()
        out = []
        for k in range(len(self.x_centres_)):
            edges = self.y_edges_[k]
            keep = np.concatenate((np.diff(edges) > 0, [True]))
            content = np.diff(self.cdf_[k][keep]) * self.column_weight_[k]
            h = hist_module.Hist(
                hist_module.axis.Variable(edges[keep], name="y", label="y"),
                storage=hist_module.storage.Double(),
                name=f"column {k}",
            )
            h.view()[...] = content
            out.append(h)
        return out

    def column_weight_histogram(self) -> hist.Hist[Any]:
        """Summed defining weight per column on the ``x`` column-boundary axis."""
        import hist as hist_module

        self._check_fitted()
        h = hist_module.Hist(
            hist_module.axis.Variable(self.x_boundaries_, name="x", label="x"),
            storage=hist_module.storage.Double(),
        )
        h.view()[...] = self.column_weight_
        return h

    def vertices(self) -> tuple[FloatArray, FloatArray]:
        """The interpolation vertices ``(x, y)``: column centres times their ``y`` edges."""
        self._check_fitted()
        xs = np.repeat(self.x_centres_, self.y_edges_.shape[1])
        return xs, self.y_edges_.ravel().copy()

    def describe(self) -> str:
        """The depth and the shape of ``gamma`` between the grid's vertices."""
        self._check_fitted()
        if self.x_dims > 1:
            levels = ", ".join(map(str, self.splits_))
            return (
                f"IRGI of depth {self.depth_} on {self.x_dims} observables: {len(self.boxes_)} "
                f"nested cells ({levels} levels per observable), linear in the score about its "
                "plane in x between each cell's edges, multilinear in x between cell centres"
            )
        share = "numbers of events" if self.occupancy == "events" else "summed weight"
        return (
            f"IRGI of depth {self.depth_}: linear in y between the edges of each of its "
            f"{len(self.x_centres_)} columns (of equal {share}) and linear in x between column "
            "centres"
        )

    def fitted_params(self) -> dict[str, Any]:
        """The depth used (on several observables: the levels per observable)."""
        self._check_fitted()
        if self.x_dims > 1:
            return {"depth": self._vector_depth()}
        return {"depth": int(self.depth_)}

    # -------------------------------------------------------- serialisation
    def _fit_options(self) -> dict[str, Any]:
        """``cut_levels``, ``empty_bins`` and ``occupancy`` for the saved state, where not default."""
        options = fit_options(self.cut_levels, bool(self.empty_bins))
        if self.occupancy != "weight":
            options["occupancy"] = self.occupancy
        return options

    def _read_fit_options(self, params: dict[str, Any]) -> None:
        """Set ``cut_levels``, ``empty_bins`` and ``occupancy`` from a saved state's parameters."""
        from rosenblatt._schema import SchemaError

        self.cut_levels, self.empty_bins = read_fit_options(params)
        try:
            self.occupancy = check_occupancy(params.get("occupancy", "weight"))
        except ValueError as err:
            raise SchemaError(str(err)) from err

    def get_state(self) -> dict[str, Any]:
        """Hyper-parameters and learned state as JSON-compatible data."""
        self._check_fitted()
        if self.x_dims > 1:
            return self._vector_state()
        state: dict[str, Any] = {
            "params": {
                "depth": int(self.depth_),
                "domain": domain_list(self.domain),
                **self._fit_options(),
            },
            "domain": domain_list(self.domain_),
            "n_events": int(self.n_events_),
            "sum_weight": float(self.sum_weight_),
            "x_centres": self.x_centres_.tolist(),
            "x_boundaries": self.x_boundaries_.tolist(),
            "y_edges": self.y_edges_.tolist(),
            "cdf": self.cdf_.tolist(),
            "column_weight": self.column_weight_.tolist(),
        }
        if self.selection_ is not None:
            # the chosen depth stays in params, so that any reader evaluates the same grid
            state["selection"] = self.selection_.to_dict()
            state["params"]["folds"] = int(self.folds)
            state["params"]["seed"] = int(self.seed)
        return state

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> IRGI:
        """Rebuild a fitted IRGI from :meth:`get_state` output, checking every invariant."""
        from rosenblatt._schema import SchemaError, check_array, check_domain

        if state.get("x_dims", 1) != 1:
            return cls._from_vector_state(state)
        params = state["params"]
        depth = check_int(params["depth"], "IRGI depth", low=0, high=30, error=SchemaError)
        n_col = 2**depth + 1
        obj = cls(
            depth=depth, domain=None if params["domain"] is None else check_domain(params["domain"])
        )
        obj._read_fit_options(params)
        obj.domain_ = check_domain(state["domain"])
        obj.depth_ = depth
        obj.x_centres_ = check_array(state["x_centres"], "x_centres", (n_col,), increasing=True)
        obj.x_boundaries_ = check_array(
            state["x_boundaries"], "x_boundaries", (n_col + 1,), increasing=True
        )
        obj.y_edges_ = check_array(state["y_edges"], "y_edges", (n_col, n_col), nondecreasing=True)
        obj.cdf_ = check_array(state["cdf"], "cdf", (n_col, n_col), nondecreasing=True, unit=True)
        obj.column_weight_ = check_array(state["column_weight"], "column_weight", (n_col,))
        if np.any(obj.column_weight_ <= 0):
            msg = "column_weight must be positive"
            raise SchemaError(msg)
        if np.any(obj.cdf_[:, 0] != 0) or np.any(obj.cdf_[:, -1] != 1):
            msg = "cdf must start at 0 and end at 1 in every column"
            raise SchemaError(msg)
        (x_lo, x_hi), (y_lo, y_hi) = obj.domain_
        if obj.x_centres_[0] != x_lo or obj.x_centres_[-1] != x_hi:
            msg = "x_centres must start and end on the x domain"
            raise SchemaError(msg)
        if np.any(obj.y_edges_[:, 0] != y_lo) or np.any(obj.y_edges_[:, -1] != y_hi):
            msg = "y_edges must start and end on the y domain in every column"
            raise SchemaError(msg)
        obj.n_events_ = int(state["n_events"])
        obj.sum_weight_ = float(state["sum_weight"])
        obj.selection_ = None
        if state.get("selection") is not None:
            from rosenblatt.transforms.selection import Selection

            obj.selection_ = Selection.from_dict(state["selection"])
            if obj.selection_.chosen != depth:
                msg = f"depth {depth} is not the selection's choice {obj.selection_.chosen:g}"
                raise SchemaError(msg)
            obj.depth = "auto"
            obj.folds, obj.seed = params["folds"], params["seed"]
        return obj
