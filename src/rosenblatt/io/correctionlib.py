"""Fitted transforms as correctionlib (schema v2) corrections, and back.

correctionlib evaluates binned look-up tables and formulas in Python and C++
but has no interpolation node. A transform is written as one correction of the
inputs ``x``, ``y`` (real) and the output ``gamma``, laid out as follows:

- an ``x`` binning with edges ``-inf, c_0, ..., c_n, +inf`` over the column
  centres ``c_k``; beyond the outer centres ``gamma`` is that of the outer
  column, so ``x`` outside the domain is evaluated at the nearest edge;
- between two centres a ``transform`` node rewrites ``x`` to
  ``t = (x - c_k) / (c_(k+1) - c_k)`` in ``[0, 1)``, followed by a ``y``
  binning over the union of the two columns' ``y`` nodes, with edges
  ``-inf, y_min, ..., y_max, +inf`` and contents ``0``, one formula per bin,
  ``1``: ``y`` below the domain gives 0, ``y`` at or above its upper end 1;
- in each bin ``gamma = (1 - t) (g_0 + s_0 (y - y_b)) + t (g_1 + s_1 (y - y_b))``,
  linear in ``y`` within each column and linear in ``x`` between them, where
  ``y_b`` is the lower edge of the bin. The expression is written once as a
  generic formula; each bin holds only its five parameters.

For :class:`~rosenblatt.IRGI` this is the transform itself: the values agree
with :meth:`~rosenblatt.IRGI.transform` to rounding (about 1e-16). A
:class:`~rosenblatt.KDE` is a step function in ``y`` whose steps sit at the
defining scores, so it is tabulated: ``x`` nodes on a grid refined until the
interpolation between neighbours is within the tolerance, and per node the
``y`` nodes of a piecewise-linear approximation of its staircase within the
tolerance. The largest difference to the KDE, measured on a dense sample of
points, is written in the correction's description. Every step of the KDE
larger than the tolerance needs its own bins, so the table grows when the
kernel holds few events (small samples, narrow kernels, tails in ``x``).

correctionlib reads JSON numbers up to 2 units in the last place off; the
edges and offsets are written in decimal forms that it reads exactly (see
:mod:`rosenblatt.io._correctionlib_numbers`), so that a bin edge on a defining
score or a steep segment evaluates the same in Python, C++ and rosenblatt.

The correction's description also carries a line ``rosenblatt-metadata:``
followed by a JSON object (kind, parameters, domain, defining-sample size,
measured error), from which :func:`from_correctionlib` rebuilds a
:class:`TabulatedTransform`. Reading never evaluates expressions from the file:
only the layout above is accepted, and every edge, parameter and value is
checked.

A :class:`~rosenblatt.TransformEnsemble` of IRGI or GridKDE is written as one
correction with a third, string input ``variation``: a ``category`` node whose
entries ``"nominal"``, ``"up"``, ``"down"`` and ``"replica_<k>"`` each hold the
``x`` binning above for one table. Its description carries a line
``rosenblatt-ensemble-metadata:`` instead; it is not read back.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import math
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from rosenblatt._schema import SchemaError
from rosenblatt._version import __version__
from rosenblatt.io._correctionlib_kde import KDESteps, kde_columns, kde_x_nodes
from rosenblatt.io._correctionlib_numbers import ExactNumbers
from rosenblatt.transforms._base import ConditionalCDFTransform, NotFittedError

if TYPE_CHECKING:
    import correctionlib.schemav2

    from rosenblatt.transforms import IRGI, KDE, GridKDE
    from rosenblatt.transforms.ensemble import TransformEnsemble

__all__ = [
    "DEFAULT_NAME",
    "LAYOUT",
    "LAYOUT_VERSION",
    "TabulatedTransform",
    "correctionlib_document",
    "from_correctionlib",
    "read_correctionlib",
    "to_correctionlib",
    "write_correctionlib",
]

#: name of the correction when none is given
DEFAULT_NAME = "rosenblatt_gamma"
#: identifies the layout in the metadata line
LAYOUT = "rosenblatt-correctionlib"
#: version of the layout written here; older versions stay readable
LAYOUT_VERSION = 1
#: starts the metadata line of the correction's description
METADATA_MARKER = "rosenblatt-metadata: "
#: identifies the layout of an ensemble's correction (a category of tables on ``variation``)
ENSEMBLE_LAYOUT = "rosenblatt-correctionlib-ensemble"
#: starts the metadata line of an ensemble's correction
ENSEMBLE_METADATA_MARKER = "rosenblatt-ensemble-metadata: "

#: generic formula 0: gamma in a bin between two columns (``x`` already rewritten to ``t``)
BILINEAR = "(1-x)*([0]+[1]*(y-[4]))+x*([2]+[3]*(y-[4]))"
#: generic formula 1: the rewrite of ``x`` into ``t`` between two column centres
X_TO_T = "(x-[0])/[1]"
#: generic formula 2: gamma beyond the outer columns, of ``y`` only (TFormula names its
#: first variable ``x``)
LINEAR = "[0]+[1]*(x-[2])"
GENERIC_FORMULAS: tuple[dict[str, Any], ...] = (
    {"nodetype": "formula", "expression": BILINEAR, "parser": "TFormula", "variables": ["x", "y"]},
    {"nodetype": "formula", "expression": X_TO_T, "parser": "TFormula", "variables": ["x"]},
    {"nodetype": "formula", "expression": LINEAR, "parser": "TFormula", "variables": ["y"]},
)
#: number of parameters of each generic formula
N_PARAMETERS = (5, 2, 3)

#: slack allowed on values read back (they are rounded sums of exact node values)
VALUE_SLACK = 1e-9


# --------------------------------------------------------------------- grid
@dataclasses.dataclass(frozen=True)
class ColumnCDF:
    """A piecewise-linear conditional CDF at one ``x`` node.

    Segment ``j`` covers ``[nodes[j], nodes[j + 1])`` (the last one ends at
    ``y_max``) and goes linearly from ``start[j]`` to ``end[j]``.
    """

    nodes: NDArray[np.float64]
    start: NDArray[np.float64]
    end: NDArray[np.float64]

    def pieces(
        self, lower: NDArray[np.float64], upper: NDArray[np.float64], y_max: float
    ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """Value at ``lower`` and slope of the segment holding each bin ``[lower, upper)``.

        Every bin lies inside one segment. A bin that holds a single floating
        point number gets slope 0: its value at ``lower`` is all there is.
        """
        seg = np.searchsorted(self.nodes, lower, side="right") - 1
        left = self.nodes[seg]
        right = np.append(self.nodes, y_max)[seg + 1]
        start, end = self.start[seg], self.end[seg]
        width = right - left
        value = start + (end - start) * ((lower - left) / width)
        with np.errstate(over="ignore"):
            slope = (end - start) / width
        slope[np.nextafter(lower, np.inf) >= upper] = 0.0
        if not np.all(np.isfinite(slope)):
            msg = (
                f"{int((~np.isfinite(slope)).sum())} segment(s) of a column are too narrow "
                "for a finite slope"
            )
            raise ValueError(msg)
        return value, slope


@dataclasses.dataclass(frozen=True)
class _Table:
    """The bins of the correction: what is written, read and evaluated."""

    x_nodes: NDArray[np.float64]
    #: per group (below x_0, each interval between nodes, above x_n): finite y edges
    y_edges: list[NDArray[np.float64]]
    #: per group: (bins, 3) for the outer groups, (bins, 5) between nodes
    params: list[NDArray[np.float64]]

    @property
    def n_bins(self) -> int:
        return sum(len(p) for p in self.params)

    @property
    def y_range(self) -> tuple[float, float]:
        return float(self.y_edges[0][0]), float(self.y_edges[0][-1])


def _table(x_nodes: NDArray[np.float64], columns: list[ColumnCDF], y_max: float) -> _Table:
    """Tabulate ``gamma`` from piecewise-linear columns at ``x_nodes``."""
    y_edges: list[NDArray[np.float64]] = []
    params: list[NDArray[np.float64]] = []

    def outer(column: ColumnCDF) -> None:
        edges = np.append(column.nodes, y_max)
        value, slope = column.pieces(column.nodes, edges[1:], y_max)
        y_edges.append(edges)
        params.append(np.column_stack((value, slope, column.nodes)))

    outer(columns[0])
    for left, right in itertools.pairwise(columns):
        lower = np.union1d(left.nodes, right.nodes)
        edges = np.append(lower, y_max)
        g0, s0 = left.pieces(lower, edges[1:], y_max)
        g1, s1 = right.pieces(lower, edges[1:], y_max)
        y_edges.append(edges)
        params.append(np.column_stack((g0, s0, g1, s1, lower)))
    outer(columns[-1])
    return _Table(np.asarray(x_nodes, dtype=np.float64), y_edges, params)


def _evaluate(table: _Table, x: NDArray[np.float64], y: NDArray[np.float64]) -> NDArray[np.float64]:
    """Evaluate the table as correctionlib does (same bins, same arithmetic)."""
    nodes = table.x_nodes
    out = np.empty(len(x))
    group = np.searchsorted(nodes, x, side="right")
    order = np.argsort(group, kind="stable")
    bounds = np.searchsorted(group[order], np.arange(len(nodes) + 2))
    for g in range(len(nodes) + 1):
        index = order[bounds[g] : bounds[g + 1]]
        if len(index) == 0:
            continue
        edges, params = table.y_edges[g], table.params[g]
        yg = y[index]
        where = np.searchsorted(edges, yg, side="right")
        values = np.where(where == 0, 0.0, 1.0)
        inside = (where > 0) & (where < len(edges))
        p = params[where[inside] - 1]
        dy = yg[inside] - p[:, -1]
        if g in (0, len(nodes)):
            values[inside] = p[:, 0] + p[:, 1] * dy
        else:
            lo = nodes[g - 1]
            t = (x[index][inside] - lo) / (nodes[g] - lo)
            values[inside] = (1 - t) * (p[:, 0] + p[:, 1] * dy) + t * (p[:, 2] + p[:, 3] * dy)
        out[index] = values
    return out


# ------------------------------------------------------------------ IRGI
def _irgi_columns(transform: IRGI | GridKDE) -> list[ColumnCDF]:
    """IRGI's columns as they evaluate: tied edges merged, top tie jumping to 1 at y_max."""
    return _grid_columns(transform.y_edges_, transform.cdf_, transform.domain_[1][1])


def _grid_columns(
    y_edges: Iterable[NDArray[np.float64]], column_cdf: Iterable[NDArray[np.float64]], y_max: float
) -> list[ColumnCDF]:
    """Columns of a grid (per column its ``y`` edges and the CDF at them) as they evaluate."""
    columns = []
    for edges, cdf in zip(y_edges, column_cdf, strict=True):
        below = edges < y_max
        e, c = edges[below], cdf[below]
        last = np.append(e[1:] != e[:-1], True)
        first = np.insert(e[1:] != e[:-1], 0, True)
        top = cdf[np.argmax(edges >= y_max)]
        columns.append(ColumnCDF(e[last], c[last], np.append(c[first][1:], top)))
    return columns


def _check_points(
    transform: ConditionalCDFTransform, n_points: int, seed: int
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Points to measure the table's error: the domain box and where ``gamma`` has kinks.

    A quarter is uniform over the domain widened by 5% on each side. The rest
    sit exactly on, or at the largest float below, the ``y`` values where
    ``gamma`` jumps or bends (the defining scores of a KDE, the edges of an
    IRGI); a third of those at or near the ``x`` of the defining events (KDE)
    or the column centres (IRGI), the others at ``x`` uniform over the
    widened domain.
    """
    from rosenblatt.transforms import IRGI, KDE, GridKDE

    rng = np.random.default_rng(seed)
    (x_lo, x_hi), (y_lo, y_hi) = transform.domain_
    dx, dy = 0.05 * (x_hi - x_lo), 0.05 * (y_hi - y_lo) or 1.0
    x = rng.uniform(x_lo - dx, x_hi + dx, n_points)
    y = rng.uniform(y_lo - dy, y_hi + dy, n_points)
    if isinstance(transform, KDE):
        x_special, y_special, spread = transform.x_, transform.y_, transform.bandwidth_
    elif isinstance(transform, (IRGI, GridKDE)):
        x_special, y_special, spread = transform.x_centres_, transform.y_edges_.ravel(), 0.0
    else:
        return x, y
    quarter = n_points // 4
    special = y_special[rng.integers(0, len(y_special), n_points - quarter)]
    below = rng.random(len(special)) < 0.5
    special[below] = np.nextafter(special[below], -np.inf)
    y[quarter:] = special
    near = x_special[rng.integers(0, len(x_special), n_points - 3 * quarter)]
    x[3 * quarter :] = near + rng.normal(0.0, spread, len(near)) * (rng.random(len(near)) < 0.5)
    return x, y


# ------------------------------------------------------------- the export
@dataclasses.dataclass(frozen=True)
class _Export:
    """A table with what is written about it, and how its numbers are written."""

    table: _Table
    metadata: dict[str, Any]
    description: str
    numbers: ExactNumbers
    #: an ensemble's tables by variation (``table`` is the nominal's); empty for a transform
    variations: dict[str, _Table] = dataclasses.field(default_factory=dict)

    def positions(self) -> set[float]:
        """The numbers that place bins in every table (see :func:`_positions`)."""
        return set().union(*(_positions(t) for t in (self.table, *self.variations.values())))


def _positions(table: _Table) -> set[float]:
    """The numbers that place bins: edges, formula offsets and the rewrite of ``x``."""
    values = set(table.x_nodes.tolist()) | set(np.diff(table.x_nodes).tolist())
    for edges in table.y_edges:
        values.update(edges.tolist())
    return values


def _check_readable(table: _Table, numbers: ExactNumbers) -> int:
    """Check that correctionlib reads every binning's edges in order; count inexact numbers."""
    read = np.vectorize(numbers.read, otypes=[np.float64])
    for edges in (table.x_nodes, *table.y_edges):
        if len(edges) > 1 and np.any(np.diff(read(edges)) <= 0):
            msg = (
                "correctionlib would read two bin edges out of order (they are a few floats "
                "apart and have no decimal form it reads exactly); the table cannot be written"
            )
            raise ValueError(msg)
    return sum(not numbers.is_exact(v) for v in _positions(table))


def _measured_error(
    table: _Table, transform: ConditionalCDFTransform, n_check: int, seed: int
) -> float:
    x, y = _check_points(transform, n_check, seed)
    return float(np.max(np.abs(_evaluate(table, x, y) - transform.transform(x, y)), initial=0.0))


def _export(
    transform: ConditionalCDFTransform,
    *,
    tolerance: float,
    x_step: float,
    n_check: int,
    max_x_nodes: int,
    max_bins: int,
    progress: bool,
    seed: int,
) -> _Export:
    from rosenblatt.transforms import IRGI, KDE, GridKDE

    if not isinstance(transform, ConditionalCDFTransform):
        msg = f"cannot export a {type(transform).__name__}; export a fitted IRGI or KDE"
        raise TypeError(msg)
    if not transform.is_fitted():
        msg = f"this {type(transform).__name__} is not fitted yet: fit it before exporting it"
        raise NotFittedError(msg)
    numbers = ExactNumbers()
    if isinstance(transform, TabulatedTransform):
        stored = {
            **transform.metadata_,
            "inexact_numbers": _check_readable(transform.table_, numbers),
        }
        return _Export(transform.table_, stored, transform.description_, numbers)
    for value, label, upper in ((tolerance, "tolerance", 1.0), (x_step, "x_step", math.inf)):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < upper:
            msg = f"{label} must be a number in (0, {upper:g}), got {value!r}"
            raise ValueError(msg)
    if isinstance(n_check, bool) or not isinstance(n_check, int) or n_check < 4:
        msg = f"n_check must be an integer >= 4, got {n_check!r}"
        raise ValueError(msg)
    (x_lo, x_hi), (y_lo, y_hi) = transform.domain_
    if isinstance(transform, IRGI):
        table = _table(transform.x_centres_, _irgi_columns(transform), y_hi)
        error = _measured_error(table, transform, n_check, seed)
        what = (
            f"IRGI of depth {transform.depth_}: linear in y between the edges of each of its "
            f"{len(transform.x_centres_)} columns and linear in x between column centres, "
            "exact up to floating-point rounding"
        )
        metadata: dict[str, Any] = {"kind": "irgi", "params": {"depth": int(transform.depth_)}}
    elif isinstance(transform, GridKDE):
        table = _table(transform.x_centres_, _irgi_columns(transform), y_hi)
        error = _measured_error(table, transform, n_check, seed)
        what = (
            f"GridKDE (sigma_r = {transform.sigma_r_:g}, degree {transform.degree_}) on its "
            f"{len(transform.x_centres_)} x nodes, linear in y between the edges of each node's "
            "column and linear in x between nodes, exact up to floating-point rounding"
        )
        metadata = {
            "kind": "grid_kde",
            "params": {"sigma_r": float(transform.sigma_r_), "degree": int(transform.degree_)},
        }
    elif isinstance(transform, KDE):
        table, error, what = _tabulate_kde(
            transform, numbers, tolerance, x_step, max_x_nodes, max_bins, progress, n_check, seed
        )
        metadata = {
            "kind": "kde",
            "params": {"sigma_r": float(transform.sigma_r_), "bandwidth": transform.bandwidth_},
            "tolerance": float(tolerance),
        }
    else:
        msg = f"cannot export a {type(transform).__name__}; export an IRGI or a KDE"
        raise TypeError(msg)
    if table.n_bins > max_bins:
        msg = f"the table has {table.n_bins} bins, more than max_bins = {max_bins}"
        raise ValueError(msg)
    _check_table(table, "the exported table")
    inexact = _check_readable(table, numbers)
    metadata = {
        "layout": LAYOUT,
        "layout_version": LAYOUT_VERSION,
        "written_by": f"rosenblatt {__version__}",
        **metadata,
        "domain": [[x_lo, x_hi], [y_lo, y_hi]],
        "n_events": int(transform.n_events_),
        "sum_weight": float(transform.sum_weight_),
        "n_bins": table.n_bins,
        "max_abs_error": error,
        "n_check_points": n_check,
        "inexact_numbers": inexact,
    }
    reading = "Edges and offsets are written in decimal forms that correctionlib reads exactly" + (
        f", except {inexact} read up to 2 units in the last place off." if inexact else "."
    )
    description = (
        "gamma(x, y) = P(Y <= y | X = x) of the defining background sample "
        f"({transform.n_events_} events): the Rosenblatt transform of the score y against x. "
        f"{what}. Measured max |gamma - rosenblatt| = {error:.3g} on {n_check} points. "
        f"Domain x in [{x_lo:.10g}, {x_hi:.10g}], y in [{y_lo:.10g}, {y_hi:.10g}]: y below "
        "it gives 0, y at or above its upper end 1, x beyond it is evaluated at the nearest "
        f"end. {reading}"
    )
    return _Export(table, metadata, description, numbers)


def _tabulate_kde(
    transform: KDE,
    numbers: ExactNumbers,
    tolerance: float,
    x_step: float,
    max_x_nodes: int,
    max_bins: int,
    progress: bool,
    n_check: int,
    seed: int,
) -> tuple[_Table, float, str]:
    """Tabulate a KDE, refining until the error measured on the check points is within bounds.

    Returns the table, the measured error and a description.
    """
    steps = KDESteps(transform)
    (x_lo, x_hi), (_, y_hi) = transform.domain_
    x, y = _check_points(transform, n_check, seed)
    exact = transform.transform(x, y)
    share = 0.4 * tolerance
    for _ in range(4):
        x_nodes = kde_x_nodes(
            steps, x_lo, x_hi, x_step * transform.bandwidth_, share, max_x_nodes, progress
        )
        columns = [ColumnCDF(*c) for c in kde_columns(steps, x_nodes, share, numbers, progress)]
        table = _table(x_nodes, columns, y_hi)
        if table.n_bins > max_bins:
            msg = (
                f"the KDE table needs {table.n_bins} bins for a tolerance of {tolerance:g}, "
                f"more than max_bins = {max_bins}; use a larger tolerance or raise max_bins"
            )
            raise ValueError(msg)
        error = float(np.max(np.abs(_evaluate(table, x, y) - exact), initial=0.0))
        if error <= tolerance:
            break
        share /= 2
    else:
        msg = (
            f"the KDE table reached a max error of {error:.3g}, above the tolerance "
            f"{tolerance:g}, after refining three times"
        )
        raise ValueError(msg)
    what = (
        f"KDE with sigma_r = {transform.sigma_r_:g} (kernel width {transform.bandwidth_:.6g}) "
        f"tabulated on {len(x_nodes)} x nodes: at each node a piecewise-linear approximation "
        "of its steps in y, linear in x between nodes, built for a max error of "
        f"{tolerance:g}"
    )
    return table, error, what


# ------------------------------------------------------------- ensembles
def _export_ensemble(
    ensemble: TransformEnsemble,
    *,
    n_check: int,
    max_bins: int,
    seed: int,
    envelope_refine: int,
    **options: Any,
) -> _Export:
    """The tables of an ensemble of grid transforms: nominal, up, down and every replica.

    Each member is tabulated as :func:`_export` tabulates it alone; ``up`` and
    ``down`` by :func:`_envelope_tables`.
    """
    from rosenblatt.transforms import IRGI, GridKDE

    nominal = ensemble.nominal_
    if not isinstance(nominal, (IRGI, GridKDE)):
        msg = (
            f"an ensemble of {type(nominal).__name__} cannot be exported: correctionlib "
            "ensembles are written for grid transforms (IRGI, GridKDE)"
        )
        raise TypeError(msg)
    if isinstance(envelope_refine, bool) or not isinstance(envelope_refine, int) or not (
        1 <= envelope_refine <= 64
    ):
        msg = f"envelope_refine must be an integer in [1, 64], got {envelope_refine!r}"
        raise ValueError(msg)
    members = [nominal, *ensemble.replicas_]
    exports = [
        _export(m, n_check=n_check, max_bins=max_bins, seed=seed, **options) for m in members
    ]
    up, down, envelope_errors = _envelope_tables(ensemble, nominal, envelope_refine, n_check, seed)
    variations = {"nominal": exports[0].table, "up": up, "down": down}
    variations.update({f"replica_{k}": e.table for k, e in enumerate(exports[1:])})
    for name in ("up", "down"):
        if variations[name].n_bins > max_bins:
            msg = (
                f"the {name} table has {variations[name].n_bins} bins, more than max_bins = "
                f"{max_bins}; use a smaller envelope_refine"
            )
            raise ValueError(msg)
    numbers = ExactNumbers()
    inexact = sum(_check_readable(table, numbers) for table in (up, down))
    member_error = max(float(e.metadata["max_abs_error"]) for e in exports)
    metadata = {
        "layout": ENSEMBLE_LAYOUT,
        "layout_version": LAYOUT_VERSION,
        "written_by": f"rosenblatt {__version__}",
        "kind": "ensemble",
        "member_kind": exports[0].metadata["kind"],
        "params": exports[0].metadata["params"],
        "n_replicas": len(ensemble.replicas_),
        "seed": int(ensemble.seed),
        "n_refits": ensemble.n_refits_,
        "domain": exports[0].metadata["domain"],
        "n_events": int(ensemble.n_events_),
        "sum_weight": float(ensemble.sum_weight_),
        "n_bins": sum(table.n_bins for table in variations.values()),
        "max_abs_error": member_error,
        "envelope_refine": envelope_refine,
        "envelope_error": envelope_errors,
        "n_check_points": n_check,
        "inexact_numbers": inexact + sum(int(e.metadata["inexact_numbers"]) for e in exports),
    }
    grid = (
        "at the nominal's grid vertices"
        if envelope_refine == 1
        else f"on the nominal's grid refined {envelope_refine} times in x and in y"
    )
    description = (
        f"{exports[0].description} The string input 'variation' chooses the table: "
        f"'nominal'; 'replica_<k>' (k = 0..{len(members) - 2}), the transform fitted with "
        "Poisson(1) event weights of bootstrap draw k, each tabulated as the nominal (measured "
        f"max |gamma - rosenblatt| over all = {member_error:.3g}); 'up' and 'down', the nominal "
        "plus and minus the replicas' standard deviation of gamma per event, clipped to "
        f"[0, 1], tabulated {grid} and linear between vertices (measured max |difference to "
        f"the exact envelope| = {envelope_errors['up']['max_abs_error']:.3g} up, "
        f"{envelope_errors['down']['max_abs_error']:.3g} down, RMS "
        f"{envelope_errors['up']['rms_error']:.3g} and {envelope_errors['down']['rms_error']:.3g}, "
        f"on {n_check} points)."
    )
    return _Export(exports[0].table, metadata, description, numbers, variations)


def _envelope_tables(
    ensemble: TransformEnsemble, nominal: IRGI | GridKDE, refine: int, n_check: int, seed: int
) -> tuple[_Table, _Table, dict[str, dict[str, float]]]:
    """The ``up`` and ``down`` tables, and their differences to the exact envelope.

    The vertices are the nominal's grid, with ``refine - 1`` columns added
    between neighbouring columns and ``refine - 1`` values of ``y`` between
    neighbouring edges. The nominal is linear between them, so the tables
    hold it exactly (its steps included); the replicas' standard deviation is
    interpolated linearly between vertices, which is the approximation. The
    tables are not made monotone in ``y``: they follow the envelope.
    """
    (_, _), (_, y_hi) = nominal.domain_
    nodes, columns = _refined_grid(nominal.x_centres_, nominal.y_edges_, refine)
    x = np.repeat(nodes, [len(edges) for edges, _ in columns])
    y = np.concatenate([np.where(left, np.nextafter(edges, -np.inf), edges) for edges, left in columns])
    gamma = np.asarray(ensemble.transform(x, y))
    spread = np.asarray(ensemble.std(x, y))
    bounds = np.cumsum([0, *(len(edges) for edges, _ in columns)])
    x_check, y_check = _check_points(nominal, n_check, seed)
    tables, errors = [], {}
    for name, sign in (("up", 1.0), ("down", -1.0)):
        values = np.clip(gamma + sign * spread, 0.0, 1.0)
        rows = [values[lo:hi] for lo, hi in itertools.pairwise(bounds)]
        table = _table(nodes, _grid_columns([edges for edges, _ in columns], rows, y_hi), y_hi)
        exact = ensemble.transform(x_check, y_check, variation=name)
        difference = _evaluate(table, x_check, y_check) - exact
        errors[name] = {
            "max_abs_error": float(np.max(np.abs(difference), initial=0.0)),
            "rms_error": float(np.sqrt(np.mean(difference**2))),
        }
        tables.append(table)
    return tables[0], tables[1], errors


def _refined_grid(
    centres: NDArray[np.float64], y_edges: NDArray[np.float64], refine: int
) -> tuple[NDArray[np.float64], list[tuple[NDArray[np.float64], NDArray[np.bool_]]]]:
    """``x`` nodes and, per node, its ``y`` vertices and which of them are left limits.

    A node on a column centre has that column's edges, a node between two
    centres the edges of both; ``refine - 1`` values are added between
    neighbouring edges. An edge where the grid steps (a tied edge) is written
    twice, first as a left limit; so is the upper end of the domain.
    """
    nodes: list[float] = []
    columns = []
    for k, centre in enumerate(centres):
        nodes.append(float(centre))
        columns.append(_refined_edges([y_edges[k]], refine))
        if k + 1 < len(centres):
            shared = _refined_edges([y_edges[k], y_edges[k + 1]], refine)
            step = (centres[k + 1] - centre) / refine
            for j in range(1, refine):
                nodes.append(float(centre + j * step))
                columns.append(shared)
    return np.array(nodes), columns


def _refined_edges(
    rows: list[NDArray[np.float64]], refine: int
) -> tuple[NDArray[np.float64], NDArray[np.bool_]]:
    """The union of the edges of ``rows``, refined; ties and the top doubled as left limits."""
    values = np.unique(np.concatenate(rows))
    fractions = np.arange(1, refine) / refine
    inner = (values[:-1, None] + np.diff(values)[:, None] * fractions[None, :]).ravel()
    points = np.unique(np.concatenate((values, inner)))
    steps = np.concatenate([row[1:][row[1:] == row[:-1]] for row in rows])
    doubled = np.isin(points, steps)
    doubled[-1] = True
    edges = np.sort(np.concatenate((points, points[doubled])), kind="stable")
    left = np.zeros(len(edges), dtype=bool)
    left[np.searchsorted(edges, points[doubled], side="left")] = True
    return edges, left


def _formula_ref(index: int, parameters: list[float]) -> dict[str, Any]:
    return {"nodetype": "formularef", "index": index, "parameters": parameters}


def _y_binning(
    edges: NDArray[np.float64], params: NDArray[np.float64], index: int
) -> dict[str, Any]:
    return {
        "nodetype": "binning",
        "input": "y",
        "edges": ["-inf", *edges.tolist(), "inf"],
        "content": [0.0, *(_formula_ref(index, row) for row in params.tolist()), 1.0],
        "flow": "clamp",
    }


def _data(table: _Table) -> dict[str, Any]:
    """The correction's ``data`` node: the ``x`` binning of per-interval ``y`` binnings."""
    nodes = table.x_nodes
    between = [
        {
            "nodetype": "transform",
            "input": "x",
            "rule": _formula_ref(1, [float(lo), float(hi - lo)]),
            "content": _y_binning(table.y_edges[k + 1], table.params[k + 1], 0),
        }
        for k, (lo, hi) in enumerate(itertools.pairwise(nodes))
    ]
    return {
        "nodetype": "binning",
        "input": "x",
        "edges": ["-inf", *nodes.tolist(), "inf"],
        "content": [
            _y_binning(table.y_edges[0], table.params[0], 2),
            *between,
            _y_binning(table.y_edges[-1], table.params[-1], 2),
        ],
        "flow": "clamp",
    }


def _correction(export: _Export, name: str) -> dict[str, Any]:
    metadata = json.dumps(export.metadata, allow_nan=False, separators=(",", ":"))
    inputs = [
        {
            "name": "x",
            "type": "real",
            "description": "protected observable (e.g. dijet mass in GeV)",
        },
        {"name": "y", "type": "real", "description": "classifier score"},
    ]
    marker, data = METADATA_MARKER, _data(export.table)
    if export.variations:
        marker = ENSEMBLE_METADATA_MARKER
        inputs.append({
            "name": "variation",
            "type": "string",
            "description": "'nominal', 'up', 'down' (+- 1 bootstrap sd) or 'replica_<k>'",
        })
        data = {
            "nodetype": "category",
            "input": "variation",
            "content": [
                {"key": key, "value": _data(table)} for key, table in export.variations.items()
            ],
        }
    return {
        "name": name,
        "description": f"{export.description}\n{marker}{metadata}",
        "version": 1,
        "inputs": inputs,
        "output": {"name": "gamma", "type": "real", "description": "decorrelated score in [0, 1]"},
        "generic_formulas": [dict(f) for f in GENERIC_FORMULAS],
        "data": data,
    }


def _build(
    transform: ConditionalCDFTransform,
    name: str,
    *,
    tolerance: float = 1e-3,
    x_step: float = 0.5,
    n_check: int = 100_000,
    max_x_nodes: int = 20_000,
    max_bins: int = 2_000_000,
    progress: bool = False,
    seed: int = 0,
    envelope_refine: int = 2,
) -> tuple[dict[str, Any], _Export]:
    from rosenblatt.transforms.ensemble import TransformEnsemble

    if not isinstance(name, str) or not name.strip():
        msg = f"name must be a non-empty string, got {name!r}"
        raise ValueError(msg)
    options: dict[str, Any] = {
        "tolerance": tolerance,
        "x_step": x_step,
        "n_check": n_check,
        "max_x_nodes": max_x_nodes,
        "max_bins": max_bins,
        "progress": progress,
        "seed": seed,
    }
    if isinstance(transform, TransformEnsemble):
        export = _export_ensemble(transform, envelope_refine=envelope_refine, **options)
    else:
        export = _export(transform, **options)
    document = {
        "schema_version": 2,
        "description": f"Rosenblatt transform written by rosenblatt {__version__}",
        "corrections": [_correction(export, name)],
    }
    return document, export


def correctionlib_document(
    transform: ConditionalCDFTransform, name: str = DEFAULT_NAME, **options: Any
) -> dict[str, Any]:
    """Return the correctionlib (schema v2) document of a fitted transform as plain data.

    Parameters
    ----------
    transform
        A fitted :class:`~rosenblatt.IRGI`, :class:`~rosenblatt.KDE`,
        :class:`~rosenblatt.GridKDE`, a :class:`TabulatedTransform` read from
        such a file, or a :class:`~rosenblatt.TransformEnsemble` of IRGI or
        GridKDE: then the correction has a third, string input ``variation``,
        a ``category`` node over one table per variation, each built as for
        the transform alone: ``"nominal"``, ``"replica_<k>"`` and ``"up"`` /
        ``"down"`` (the nominal plus or minus the replicas' standard deviation,
        clipped to ``[0, 1]``, tabulated at the nominal's grid vertices and
        linear between them; the largest and RMS difference to the exact
        envelope measured on the check points is written in the description
        and under ``envelope_error`` in the metadata line, which starts with
        ``rosenblatt-ensemble-metadata:``).
    name
        Name of the correction in the set.
    **options
        ``tolerance`` (KDE only, default 1e-3): largest difference allowed
        between the table and the KDE; the table is refined until the
        difference measured on the check points is below it, and a smaller
        tolerance makes a larger file. ``x_step`` (KDE only, default 0.5):
        starting spacing of the ``x`` nodes in kernel widths.
        ``n_check`` (default 100000): number of points on which the difference
        to the transform is measured and written in the description.
        ``max_x_nodes``, ``max_bins`` (KDE only, default 20000 and 2000000):
        limits on the table, beyond which export is an error. ``progress``:
        show a progress bar while tabulating a KDE. ``seed``: seed of the
        check points. ``envelope_refine`` (ensembles only, default 2): the
        ``up`` and ``down`` tables have ``envelope_refine - 1`` more columns
        between neighbouring columns of the nominal and as many more ``y``
        values between neighbouring edges, for a smaller error (about
        ``envelope_refine**2`` times the bins).

    Notes
    -----
    ``json.dumps`` of this document writes numbers that correctionlib may
    read up to 2 units in the last place off; :func:`write_correctionlib`
    writes them in forms it reads exactly.
    """
    return _build(transform, name, **options)[0]


def to_correctionlib(
    transform: ConditionalCDFTransform, name: str = DEFAULT_NAME, **options: Any
) -> correctionlib.schemav2.CorrectionSet:
    """Return a fitted transform as a validated correctionlib ``CorrectionSet``.

    Takes the options of :func:`correctionlib_document` and needs correctionlib
    (the ``correctionlib`` extra). Evaluate files written by
    :func:`write_correctionlib` for values exact to rounding: correctionlib
    may read the bin edges of the model's own JSON up to 2 units in the last
    place off.
    """
    import correctionlib.schemav2 as cs

    return cs.CorrectionSet.model_validate(correctionlib_document(transform, name, **options))


def write_correctionlib(
    transform: ConditionalCDFTransform, path: str | Path, name: str = DEFAULT_NAME, **options: Any
) -> dict[str, Any]:
    """Write a fitted transform to ``path`` as a correctionlib JSON file.

    Takes the options of :func:`correctionlib_document`; needs no
    correctionlib. Bin edges and formula offsets are written in decimal forms
    that correctionlib reads exactly.

    Returns
    -------
    dict
        The metadata written in the correction's description (kind, number of
        bins, measured max error, ...).
    """
    document, export = _build(transform, name, **options)
    text = json.dumps(document, allow_nan=False, separators=(",", ":"))
    text = export.numbers.dumps(text, export.positions())
    Path(path).write_text(text, encoding="utf-8")
    return dict(export.metadata)


# ----------------------------------------------------------------- import
class TabulatedTransform(ConditionalCDFTransform, register=False):
    """A transform read from a correctionlib file written by rosenblatt.

    Evaluates the file's bins exactly as correctionlib does, so that
    :meth:`transform` equals the correction's values to rounding: for an
    exported IRGI these are the IRGI's values, for a KDE its table. It cannot
    be fitted; :meth:`save` writes the correctionlib file again, which
    :func:`rosenblatt.load` reads, so it has no ``kind`` of the JSON format
    (``register=False``).

    Attributes
    ----------
    name_ : str
        Name of the correction.
    source_kind_ : str
        Kind of the exported transform (``"irgi"`` or ``"kde"``).
    metadata_ : dict
        The metadata of the file (parameters, measured error, ...).
    max_abs_error_ : float
        Largest difference to the exported transform measured at export.
    x_nodes_ : numpy.ndarray
        The ``x`` nodes (column centres).
    """

    kind: ClassVar[str] = "tabulated"

    table_: _Table
    name_: str
    source_kind_: str
    metadata_: dict[str, Any]
    description_: str
    max_abs_error_: float

    def __repr__(self) -> str:
        if not self.is_fitted():
            return "TabulatedTransform()"
        return f"TabulatedTransform(name={self.name_!r}, source_kind={self.source_kind_!r})"

    @property
    def x_nodes_(self) -> NDArray[np.float64]:
        return self.table_.x_nodes

    def _fit(
        self, x: NDArray[np.float64], y: NDArray[np.float64], w: NDArray[np.float64] | None
    ) -> None:
        msg = (
            "a TabulatedTransform is read from a correctionlib file and cannot be fitted; "
            "fit an IRGI or KDE"
        )
        raise TypeError(msg)

    def _transform(self, x: NDArray[np.float64], y: NDArray[np.float64]) -> NDArray[np.float64]:
        return _evaluate(self.table_, x, y)

    def save(self, path: str | Path) -> None:
        """Write the correctionlib file again (the table as read)."""
        write_correctionlib(self, path, self.name_)

    def get_state(self) -> dict[str, Any]:
        """The correctionlib document (plain JSON data)."""
        self._check_fitted()
        return correctionlib_document(self, self.name_)

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> TabulatedTransform:
        """Rebuild from :meth:`get_state` output (a correctionlib document), checking it."""
        return from_correctionlib(state)


def _fail(where: str, what: str) -> SchemaError:
    return SchemaError(f"{where}: {what}")


def _dict(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _fail(where, f"expected an object, got {type(value).__name__}")
    return value


def _list(value: Any, where: str) -> list[Any]:
    if not isinstance(value, list):
        raise _fail(where, f"expected a list, got {type(value).__name__}")
    return value


def _numbers(values: Any, where: str) -> NDArray[np.float64]:
    items = _list(values, where)
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in items):
        raise _fail(where, "expected a list of numbers")
    arr = np.array(items, dtype=np.float64)
    if not np.all(np.isfinite(arr)):
        raise _fail(where, f"{int((~np.isfinite(arr)).sum())} non-finite number(s)")
    return arr


def _keys(node: dict[str, Any], allowed: set[str], where: str) -> None:
    extra = set(node) - allowed
    if extra:
        raise _fail(where, f"unexpected field(s) {sorted(extra)} in the rosenblatt layout")


def _edges(node: dict[str, Any], variable: str, where: str) -> NDArray[np.float64]:
    """The finite edges of a binning laid out as ``-inf, e_0, ..., e_m, +inf``."""
    _keys(node, {"nodetype", "input", "edges", "content", "flow"}, where)
    if node.get("nodetype") != "binning" or node.get("input") != variable:
        raise _fail(where, f"expected a binning in {variable}")
    if node.get("flow") != "clamp":
        raise _fail(where, f"flow must be 'clamp', got {node.get('flow')!r}")
    edges = _list(node.get("edges"), f"{where}.edges")
    if len(edges) < 3 or edges[0] != "-inf" or edges[-1] not in ("inf", "+inf"):
        raise _fail(f"{where}.edges", "must start at '-inf', end at 'inf' and hold a finite edge")
    finite = _numbers(edges[1:-1], f"{where}.edges")
    if np.any(np.diff(finite) <= 0):
        raise _fail(
            f"{where}.edges", f"{int((np.diff(finite) <= 0).sum())} edge(s) not strictly increasing"
        )
    content = _list(node.get("content"), f"{where}.content")
    if len(content) != len(finite) + 1:
        raise _fail(f"{where}.content", f"expected {len(finite) + 1} bins, got {len(content)}")
    return finite


def _parameters(node: Any, index: int, where: str) -> NDArray[np.float64]:
    node = _dict(node, where)
    _keys(node, {"nodetype", "index", "parameters"}, where)
    if node.get("nodetype") != "formularef" or node.get("index") != index:
        raise _fail(where, f"expected a formularef to generic formula {index}")
    params = _numbers(node.get("parameters"), f"{where}.parameters")
    if len(params) != N_PARAMETERS[index]:
        raise _fail(where, f"expected {N_PARAMETERS[index]} parameters, got {len(params)}")
    return params


def _y_group(node: Any, index: int, where: str) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    node = _dict(node, where)
    edges = _edges(node, "y", where)
    content = node["content"]
    if not (content[0] == 0 and content[-1] == 1) or any(
        isinstance(c, bool) for c in (content[0], content[-1])
    ):
        raise _fail(f"{where}.content", "must be 0 below the y domain and 1 above it")
    params = np.array(
        [_parameters(c, index, f"{where}.content[{i + 1}]") for i, c in enumerate(content[1:-1])]
    )
    return edges, params.reshape(len(edges) - 1, N_PARAMETERS[index])


def _check_table(table: _Table, where: str) -> None:
    """Check that every bin starts at its edge, stays in [0, 1] and grows with y."""
    nodes = table.x_nodes
    if len(nodes) < 2 or len(table.y_edges) != len(nodes) + 1:
        raise _fail(where, "expected at least two x nodes and one y binning per x bin")
    y_lo, y_hi = table.y_range
    for g, (edges, params) in enumerate(zip(table.y_edges, table.params, strict=True)):
        if g == 0:
            at = f"{where}, y binning for x < {nodes[0]:.10g}"
        elif g == len(nodes):
            at = f"{where}, y binning for x >= {nodes[-1]:.10g}"
        else:
            at = f"{where}, y binning for x in [{nodes[g - 1]:.10g}, {nodes[g]:.10g})"
        if edges[0] != y_lo or edges[-1] != y_hi:
            raise _fail(at, "every y binning must span the same domain")
        if len(params) == 0:
            continue
        if np.any(params[:, -1] != edges[:-1]):
            n_bad = int((params[:, -1] != edges[:-1]).sum())
            raise _fail(at, f"{n_bad} bin(s) whose formula does not start at the bin's edge")
        width = np.diff(edges)
        for first, slope in ((0, 1), (2, 3)) if params.shape[1] == 5 else ((0, 1),):
            start, rate = params[:, first], params[:, slope]
            end = start + rate * width
            if np.any(rate < 0) or np.any(start[1:] < end[:-1] - VALUE_SLACK):
                raise _fail(at, "gamma decreases with y")
            if np.any(start < -VALUE_SLACK) or np.any(end > 1 + VALUE_SLACK):
                raise _fail(at, "gamma outside [0, 1]")


def _read_metadata(correction: dict[str, Any], where: str) -> dict[str, Any]:
    description = correction.get("description")
    if not isinstance(description, str) or METADATA_MARKER not in description:
        raise _fail(where, f"no '{METADATA_MARKER.strip()}' line: not written by rosenblatt")
    line = description.split(METADATA_MARKER, 1)[1].split("\n", 1)[0]

    def reject_constant(constant: str) -> float:
        raise _fail(where, f"non-finite number {constant} in the metadata")

    try:
        metadata = json.loads(line, parse_constant=reject_constant)
    except json.JSONDecodeError as err:
        raise _fail(where, f"the metadata line is not valid JSON ({err})") from err
    metadata = _dict(metadata, f"{where} metadata")
    if metadata.get("layout") != LAYOUT:
        raise _fail(where, f"unknown layout {metadata.get('layout')!r}")
    version = metadata.get("layout_version")
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise _fail(where, f"layout_version must be a positive integer, got {version!r}")
    if version > LAYOUT_VERSION:
        msg = (
            f"written with layout version {version} ({metadata.get('written_by', 'unknown writer')}); "
            f"this rosenblatt ({__version__}) reads up to version {LAYOUT_VERSION}: upgrade rosenblatt"
        )
        raise _fail(where, msg)
    if metadata.get("kind") not in ("irgi", "kde", "grid_kde"):
        raise _fail(where, f"unknown transform kind {metadata.get('kind')!r}")
    for key in ("n_events", "sum_weight", "max_abs_error"):
        value = metadata.get(key)
        if (
            isinstance(value, bool)
            or not isinstance(value, (int, float))
            or not (value >= 0 and math.isfinite(value))
        ):
            raise _fail(where, f"metadata {key} must be a non-negative number, got {value!r}")
    return metadata


def _parse(correction: dict[str, Any], where: str) -> tuple[_Table, dict[str, Any], str]:
    metadata = _read_metadata(correction, where)
    inputs = _list(correction.get("inputs"), f"{where}.inputs")
    if [(_dict(v, f"{where}.inputs").get("name"), v.get("type")) for v in inputs] != [
        ("x", "real"),
        ("y", "real"),
    ]:
        raise _fail(f"{where}.inputs", "expected the real inputs x and y")
    if _dict(correction.get("output"), f"{where}.output").get("type") != "real":
        raise _fail(f"{where}.output", "expected a real output")
    if correction.get("generic_formulas") != [dict(f) for f in GENERIC_FORMULAS]:
        raise _fail(f"{where}.generic_formulas", "not the formulas of the rosenblatt layout")
    data = _dict(correction.get("data"), f"{where}.data")
    nodes = _edges(data, "x", f"{where}.data")
    if len(nodes) < 2:
        raise _fail(f"{where}.data.edges", "expected at least two x nodes")
    content = data["content"]
    y_edges, params = [], []
    low = _y_group(content[0], 2, f"{where}.data.content[0]")
    for k, item in enumerate(content[1:-1]):
        at = f"{where}.data.content[{k + 1}]"
        node = _dict(item, at)
        _keys(node, {"nodetype", "input", "rule", "content"}, at)
        if node.get("nodetype") != "transform" or node.get("input") != "x":
            raise _fail(at, "expected a transform of x")
        rule = _parameters(node.get("rule"), 1, f"{at}.rule")
        if rule[0] != nodes[k] or rule[1] != nodes[k + 1] - nodes[k]:
            raise _fail(f"{at}.rule", "does not map the x bin onto [0, 1)")
        edges, group = _y_group(node.get("content"), 0, f"{at}.content")
        y_edges.append(edges)
        params.append(group)
    high = _y_group(content[-1], 2, f"{where}.data.content[{len(content) - 1}]")
    table = _Table(nodes, [low[0], *y_edges, high[0]], [low[1], *params, high[1]])
    _check_table(table, where)
    y_lo, y_hi = table.y_range
    if metadata.get("domain") != [[nodes[0], nodes[-1]], [y_lo, y_hi]]:
        raise _fail(where, "the metadata domain does not match the bins")
    description = correction["description"].split(f"\n{METADATA_MARKER}", 1)[0]
    return table, metadata, description


def from_correctionlib(
    document: Any, *, source: str = "<document>", name: str | None = None
) -> TabulatedTransform:
    """Rebuild a transform from a correctionlib document written by rosenblatt.

    Parameters
    ----------
    document
        The parsed JSON of the file.
    source
        Where the document comes from, for error messages.
    name
        The correction to read; by default the only one written by rosenblatt.

    Raises
    ------
    SchemaError
        If the document is not a correctionlib v2 set holding a correction of
        the rosenblatt layout, or any of its values is out of place.
    """
    document = _dict(document, source)
    version = document.get("schema_version")
    if version != 2 or isinstance(version, bool):
        raise _fail(
            source, f"correctionlib schema version {version!r}; this rosenblatt reads version 2"
        )
    corrections = _list(document.get("corrections"), f"{source}.corrections")
    ours = [
        c
        for c in corrections
        if isinstance(c, dict)
        and isinstance(c.get("description"), str)
        and METADATA_MARKER in c["description"]
    ]
    names = [c.get("name") for c in ours]
    if name is not None:
        ours = [c for c in ours if c.get("name") == name]
        if not ours:
            raise _fail(source, f"no correction {name!r} written by rosenblatt; there are {names}")
    if not ours:
        raise _fail(
            source, "no correction written by rosenblatt (no metadata line in any description)"
        )
    if len(ours) > 1:
        raise _fail(
            source, f"several corrections written by rosenblatt ({names}): pick one with name="
        )
    correction = ours[0]
    where = f"{source}: correction {correction.get('name')!r}"
    if not isinstance(correction.get("name"), str) or not correction["name"]:
        raise _fail(where, "a correction needs a non-empty string 'name'")
    table, metadata, description = _parse(correction, where)
    obj = TabulatedTransform()
    obj.table_ = table
    obj.name_ = str(correction["name"])
    obj.source_kind_ = metadata["kind"]
    obj.metadata_ = metadata
    obj.description_ = description
    obj.max_abs_error_ = float(metadata["max_abs_error"])
    obj.domain_ = ((float(table.x_nodes[0]), float(table.x_nodes[-1])), table.y_range)
    obj.n_events_ = int(metadata["n_events"])
    obj.sum_weight_ = float(metadata["sum_weight"])
    return obj


def read_correctionlib(path: str | Path, name: str | None = None) -> TabulatedTransform:
    """Read a correctionlib file written by rosenblatt (see :func:`from_correctionlib`).

    :func:`rosenblatt.load` reads these files too, when they hold one such correction.
    """
    path = Path(path)

    def reject_constant(constant: str) -> float:
        raise _fail(str(path), f"non-finite number {constant}")

    try:
        document = json.loads(path.read_bytes(), parse_constant=reject_constant)
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise _fail(str(path), f"not valid JSON ({err})") from err
    return from_correctionlib(document, source=str(path), name=name)
