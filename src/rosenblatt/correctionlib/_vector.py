"""The correctionlib correction of a transform fitted on several protected observables.

A transform fitted on ``k`` observables (``k = 2, 3``) is written as one
correction of the real inputs ``x1, ..., xk`` and ``y``:

- a ``multibinning`` over ``x1, ..., xk`` whose edges are the nodes of a
  tensor grid along every axis, with ``flow: clamp``: ``x`` beyond the grid
  is evaluated in the outer box, at its face;
- per box, one ``transform`` node per axis rewrites ``xd`` to
  ``ud = max(0, min(1, (xd - a) / w))``, its place between the box's two nodes
  ``a`` and ``a + w`` (clamped, so that ``x`` beyond the grid is evaluated at
  the nearest face);
- then a ``y`` binning over the union of the ``y`` edges of the box's ``2**k``
  corner nodes, ``-inf, y_min, ..., y_max, +inf``, with contents ``0``, one
  formula per bin and ``1``;
- in each bin, ``gamma`` is the multilinear blend of the corners' CDFs, each
  linear in ``y`` on the bin:
  ``sum_c prod_d (ud or 1 - ud) (g_c + s_c (y - y_b))`` (generic formula 0;
  its parameters are ``g_c, s_c`` per corner in C order of the corners, then
  the bin's lower edge ``y_b``).

A GridKDE fitted on several observables is this table (nodes: its tensor
grid; per node: its column): the correction equals its ``transform`` to
rounding. Its size is about 250 bytes (``k = 2``) or 400 bytes (``k = 3``)
per bin, and a box holds as many bins as the union of its corners' ``y``
edges: GridKDE(0.3) on 10**5 events of two observables has a 42 x 41 grid,
858368 bins and 211 MB; on three observables a 40 x 46 x 44 grid and 4.15
million bins (about 1.7 GB, beyond the default ``max_bins``). Raise
``sigma_r``, lower ``nodes_per_bandwidth`` or ``y_levels`` for a smaller
file, or tabulate it (give ``x_nodes`` or ``y_nodes``).

IRGI's nested cells are written exactly as nested binnings
(:mod:`rosenblatt.correctionlib._nested`). Any other transform of
several observables (KDE), or one given ``x_nodes`` or ``y_nodes``, is
tabulated: its ``transform`` is evaluated on a regular tensor grid of
``x_nodes`` nodes per axis over the ``x`` domain and, at every node, on ``y_nodes`` values shared
by all nodes (placed half by the transform's marginal CDF of ``y``, half
evenly over the ``y`` domain), and written in the same layout, linear in
``y`` between the values and multilinear in ``x``. The largest difference to
the transform measured on check points is written in the description and in
the metadata line (layout :data:`VECTOR_LAYOUT`), which the reader refuses.
The defaults (25 nodes per axis and 129 values for two observables, 11 and 65
for three) give files of 15 to 20 MB. Between the ``x`` nodes the table is
smoother than a rough transform: IRGI(12) on 10**5 events of two observables
(64 cells per axis) differs from its table by up to 0.27, RMS 0.019; IRGI(8)
by up to 0.13, RMS 0.0035.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import json
import math
from typing import Any

import numpy as np

from rosenblatt._validation import check_int
from rosenblatt._version import __version__
from rosenblatt.correctionlib._description import describe_table
from rosenblatt.correctionlib._layout import (
    METADATA_MARKER,
    TFORMULA_VARIABLES,
    formula_ref,
    y_binning,
)
from rosenblatt.correctionlib._nested import NestedTable, nested_formulas
from rosenblatt.correctionlib._numbers import ExactNumbers
from rosenblatt.correctionlib._tables import ColumnCDF, grid_columns
from rosenblatt.transforms._base import ConditionalCDFTransform
from rosenblatt.transforms._tensor_grid import TensorColumns
from rosenblatt.typing import FloatArray

__all__ = [
    "DEFAULT_X_NODES",
    "DEFAULT_Y_NODES",
    "VECTOR_LAYOUT",
    "VECTOR_LAYOUT_VERSION",
    "TensorTable",
    "VectorExport",
    "blend_expression",
    "check_points",
    "data_node",
    "export_vector",
    "generic_formulas",
    "input_names",
    "tabulate",
]


#: identifies the layout of a correction of several observables in its metadata line
VECTOR_LAYOUT = "rosenblatt-correctionlib-vector"
#: version of that layout
VECTOR_LAYOUT_VERSION = 1
#: nodes per axis of a tabulation, by number of observables
DEFAULT_X_NODES = {2: 25, 3: 11}
#: shared ``y`` values per node of a tabulation, by number of observables
DEFAULT_Y_NODES = {2: 129, 3: 65}
#: nodes per axis and ``y`` values of the pilot grid that places the tabulated ``y`` values
_PILOT_X, _PILOT_Y = 5, 513


def input_names(k: int) -> list[str]:
    """The names of the real inputs: ``x1, ..., xk`` and ``y``."""
    return [*(f"x{d + 1}" for d in range(k)), "y"]


def blend_expression(k: int) -> str:
    """The generic formula of a bin: the multilinear blend of ``2**k`` corners linear in ``y``."""
    u, y = TFORMULA_VARIABLES[:k], TFORMULA_VARIABLES[k]
    offset = 2 ** (k + 1)
    terms = []
    for c, corner in enumerate(itertools.product((0, 1), repeat=k)):
        weight = "*".join(v if step else f"(1-{v})" for v, step in zip(u, corner, strict=True))
        terms.append(f"{weight}*([{2 * c}]+[{2 * c + 1}]*({y}-[{offset}]))")
    return "+".join(terms)


def generic_formulas(k: int) -> list[dict[str, Any]]:
    """Formula 0: a bin's blend; formula ``d`` (1 to ``k``): the clamped rewrite of ``xd``."""
    names = input_names(k)
    blend = {
        "nodetype": "formula",
        "expression": blend_expression(k),
        "parser": "TFormula",
        "variables": names,
    }
    clamps = [
        {
            "nodetype": "formula",
            "expression": "max(0,min(1,(x-[0])/[1]))",
            "parser": "TFormula",
            "variables": [name],
        }
        for name in names[:-1]
    ]
    return [blend, *clamps]


@dataclasses.dataclass(frozen=True)
class TensorTable:
    """A tensor grid of columns: ``gamma`` multilinear in ``x``, per node linear in ``y``.

    Attributes
    ----------
    axes
        The regular nodes along every axis.
    y_edges, cdf
        ``(n_nodes, n_edge)`` in C order of the grid: per node its ``y`` edges
        (from the lower to the upper end of the ``y`` domain) and the CDF at them.
    """

    axes: tuple[FloatArray, ...]
    y_edges: FloatArray
    cdf: FloatArray

    @property
    def y_max(self) -> float:
        """The upper end of the ``y`` domain."""
        return float(self.y_edges[0, -1])

    @functools.cached_property
    def columns(self) -> list[ColumnCDF]:
        """Every node's CDF as it evaluates, C order."""
        return grid_columns(self.y_edges, self.cdf, self.y_max)

    def evaluate(self, x: FloatArray, y: FloatArray) -> FloatArray:
        """``gamma`` at ``x`` of shape ``(n, k)`` and ``y``, as the grid transforms evaluate it."""
        return TensorColumns(self.axes, self.y_edges, self.cdf)(x, y)

    def boxes(self) -> list[tuple[tuple[int, ...], list[int]]]:
        """Every box (C order): its lower node along every axis and its corners' node indices."""
        shape = [len(a) for a in self.axes]
        strides = [math.prod(shape[d + 1 :]) for d in range(len(shape))]
        corners = list(itertools.product((0, 1), repeat=len(shape)))
        return [
            (
                box,
                [
                    sum((i + c) * s for i, c, s in zip(box, cn, strides, strict=True))
                    for cn in corners
                ],
            )
            for box in itertools.product(*(range(n - 1) for n in shape))
        ]

    def n_bins(self) -> int:
        """Number of ``y`` bins in all boxes (the union of every box's corners' edges)."""
        nodes = [c.nodes for c in self.columns]
        return sum(
            len(functools.reduce(np.union1d, (nodes[c] for c in corners)))
            for _, corners in self.boxes()
        )

    def box_bins(self, corners: list[int]) -> tuple[FloatArray, FloatArray]:
        """A box's ``y`` edges (union of its corners', with ``y_max``) and its bins' parameters."""
        columns = [self.columns[c] for c in corners]
        lower = functools.reduce(np.union1d, (c.nodes for c in columns))
        edges = np.append(lower, self.y_max)
        parts: list[FloatArray] = []
        for column in columns:
            parts.extend(column.pieces(lower, edges[1:], self.y_max))
        return edges, np.column_stack((*parts, lower))


def _box_node(
    table: TensorTable, box: tuple[int, ...], edges: FloatArray, params: FloatArray
) -> dict[str, Any]:
    node = y_binning(edges.tolist(), params.tolist(), 0)
    for d in reversed(range(len(box))):
        lo, hi = table.axes[d][box[d]], table.axes[d][box[d] + 1]
        node = {
            "nodetype": "transform",
            "input": f"x{d + 1}",
            "rule": formula_ref(d + 1, [float(lo), float(hi - lo)]),
            "content": node,
        }
    return node


def data_node(table: TensorTable, max_bins: int) -> tuple[dict[str, Any], int, set[float]]:
    """The correction's ``data`` node, its number of bins and the numbers that place bins."""
    n_bins = table.n_bins()
    if n_bins > max_bins:
        shape = " x ".join(str(len(a)) for a in table.axes)
        msg = (
            f"the table on a {shape} grid has {n_bins} bins, more than max_bins = {max_bins} "
            f"(about {n_bins * (40 + 45 * 2 ** len(table.axes)) / 1e6:.0f} MB); raise max_bins, fit a "
            "coarser grid (a larger sigma_r, fewer nodes_per_bandwidth or y_levels) or tabulate "
            "it (x_nodes, y_nodes)"
        )
        raise ValueError(msg)
    content: list[dict[str, Any]] = []
    places: set[float] = set()
    for box, corners in table.boxes():
        edges, params = table.box_bins(corners)
        places.update(edges.tolist())
        content.append(_box_node(table, box, edges, params))
    for axis in table.axes:
        places.update(axis.tolist())
        places.update(np.diff(axis).tolist())
    data = {
        "nodetype": "multibinning",
        "inputs": input_names(len(table.axes))[:-1],
        "edges": [axis.tolist() for axis in table.axes],
        "content": content,
        "flow": "clamp",
    }
    return data, n_bins, places


def _domain(transform: ConditionalCDFTransform) -> tuple[FloatArray, FloatArray, float, float]:
    """The domain of a fit on several observables: ``x_lo``, ``x_hi`` (``(k,)``), ``y_lo``, ``y_hi``."""
    domain: Any = transform.domain_
    (x_lo, x_hi), (y_lo, y_hi) = domain
    return np.asarray(x_lo, dtype=np.float64), np.asarray(x_hi, dtype=np.float64), y_lo, y_hi


def tabulate(transform: ConditionalCDFTransform, x_nodes: int, y_nodes: int) -> TensorTable:
    """Evaluate ``transform`` on a regular tensor grid and shared ``y`` values (see module)."""
    x_lo, x_hi, _, _ = _domain(transform)
    axes = tuple(np.linspace(lo, hi, x_nodes) for lo, hi in zip(x_lo, x_hi, strict=True))
    for axis, hi in zip(axes, x_hi, strict=True):
        axis[-1] = hi
    values = _y_values(transform, y_nodes)
    points = _grid_points(axes)
    x = np.repeat(points, len(values), axis=0)
    y = np.tile(values, len(points))
    cdf = np.asarray(transform.transform(x, y), dtype=np.float64).reshape(len(points), -1)
    cdf = np.clip(np.maximum.accumulate(cdf, axis=1), 0.0, 1.0)
    edges = np.broadcast_to(values, cdf.shape).copy()
    return TensorTable(axes, edges, cdf)


def _grid_points(axes: tuple[FloatArray, ...]) -> FloatArray:
    mesh = np.meshgrid(*axes, indexing="ij")
    return np.stack([m.ravel() for m in mesh], axis=1)


def _y_values(transform: ConditionalCDFTransform, n: int) -> FloatArray:
    """``n`` increasing ``y`` values from ``y_min`` to ``y_max``: half by the marginal CDF, half even."""
    x_lo, x_hi, y_lo, y_hi = _domain(transform)
    pilot = _grid_points(
        tuple(np.linspace(lo, hi, _PILOT_X) for lo, hi in zip(x_lo, x_hi, strict=True))
    )
    grid = np.linspace(y_lo, y_hi, _PILOT_Y)
    x = np.repeat(pilot, len(grid), axis=0)
    y = np.tile(grid, len(pilot))
    marginal = np.asarray(transform.transform(x, y)).reshape(len(pilot), -1).mean(axis=0)
    marginal = np.maximum.accumulate(np.clip(marginal, 0.0, 1.0))
    level = 0.5 * (marginal - marginal[0]) / max(marginal[-1] - marginal[0], 1e-300)
    level += 0.5 * (grid - y_lo) / (y_hi - y_lo)
    values = np.interp(np.linspace(0.0, 1.0, n), level, grid)
    values[0], values[-1] = y_lo, y_hi
    return np.unique(values)


def check_points(
    table: TensorTable, domain: Any, n: int, seed: int
) -> tuple[FloatArray, FloatArray]:
    """Points to measure a table's error: the widened domain, the grid's nodes and edges in ``y``.

    A quarter of the points is uniform over the domain widened by 5% on every
    side; the others have ``y`` on a ``y`` edge of the table or the largest
    float below it, and a third of those sit on a node of the grid.
    """
    rng = np.random.default_rng(seed)
    (x_lo, x_hi), (y_lo, y_hi) = domain
    lo, hi = np.asarray(x_lo), np.asarray(x_hi)
    wide = 0.05 * (hi - lo)
    x = rng.uniform(lo - wide, hi + wide, (n, len(lo)))
    dy = 0.05 * (y_hi - y_lo)
    y = rng.uniform(y_lo - dy, y_hi + dy, n)
    quarter = n // 4
    edges = np.unique(table.y_edges)
    special = edges[rng.integers(0, len(edges), n - quarter)]
    below = rng.random(len(special)) < 0.5
    special[below] = np.nextafter(special[below], -np.inf)
    y[quarter:] = special
    nodes = _grid_points(table.axes)
    x[3 * quarter :] = nodes[rng.integers(0, len(nodes), n - 3 * quarter)]
    return x, y


@dataclasses.dataclass(frozen=True)
class VectorExport:
    """The correction of a transform on several observables, with how its numbers are written."""

    correction_data: dict[str, Any]
    k: int
    metadata: dict[str, Any]
    description: str
    numbers: ExactNumbers
    places: set[float]
    formulas: list[dict[str, Any]] | None = None

    def positions(self) -> set[float]:
        """The numbers that place bins: edges, lower ends of the bins, the rewrite of ``x``."""
        return self.places

    def correction(self, name: str) -> dict[str, Any]:
        """The correction named ``name``."""
        metadata = json.dumps(self.metadata, allow_nan=False, separators=(",", ":"))
        inputs = [
            {"name": f"x{d + 1}", "type": "real", "description": f"protected observable {d + 1}"}
            for d in range(self.k)
        ]
        inputs.append({"name": "y", "type": "real", "description": "classifier score"})
        return {
            "name": name,
            "description": f"{self.description}\n{METADATA_MARKER}{metadata}",
            "version": 1,
            "inputs": inputs,
            "output": {
                "name": "gamma",
                "type": "real",
                "description": "decorrelated score in [0, 1]",
            },
            "generic_formulas": self.formulas or generic_formulas(self.k),
            "data": self.correction_data,
        }


def _check_count(value: Any, label: str) -> None:
    check_int(value, label, low=2)


def _table_of(
    transform: ConditionalCDFTransform, x_nodes: int | None, y_nodes: int | None
) -> tuple[TensorTable, bool, dict[str, Any]]:
    """The table, whether it is the transform itself, and the tabulation's options."""
    k = transform.x_dims
    tensor = getattr(transform, "tensor_", None)
    if x_nodes is None and y_nodes is None and tensor is not None:
        return TensorTable(tensor.axes, tensor.y_edges, tensor.cdf), True, {}
    nx = DEFAULT_X_NODES[k] if x_nodes is None else x_nodes
    ny = DEFAULT_Y_NODES[k] if y_nodes is None else y_nodes
    _check_count(nx, "x_nodes")
    _check_count(ny, "y_nodes")
    return tabulate(transform, nx, ny), False, {"x_nodes": nx, "y_nodes": ny}


def export_vector(
    transform: ConditionalCDFTransform,
    *,
    n_check: int,
    max_bins: int,
    seed: int,
    x_nodes: int | None = None,
    y_nodes: int | None = None,
) -> VectorExport:
    """The correction of a fitted transform on several observables (see module).

    A GridKDE and IRGI's nested cells are written exactly unless ``x_nodes``
    or ``y_nodes`` is given; any other transform is tabulated on ``x_nodes`` per axis and ``y_nodes``
    shared ``y`` values (defaults :data:`DEFAULT_X_NODES`,
    :data:`DEFAULT_Y_NODES`).
    """
    check_int(n_check, "n_check", low=4)
    if getattr(transform, "splits_", None) is not None and x_nodes is None and y_nodes is None:
        return _export_nested(transform, n_check=n_check, max_bins=max_bins, seed=seed)
    table, exact, options = _table_of(transform, x_nodes, y_nodes)
    x_lo, x_hi, y_lo, y_hi = _domain(transform)
    data, n_bins, places = data_node(table, max_bins)
    numbers = ExactNumbers()
    inexact = _check_readable(places, table, numbers)
    x, y = check_points(table, transform.domain_, n_check, seed)
    difference = np.abs(table.evaluate(x, y) - transform.transform(x, y))
    error, rms = float(np.max(difference, initial=0.0)), float(np.sqrt(np.mean(difference**2)))
    shape = " x ".join(str(len(a)) for a in table.axes)
    if exact:
        what = f"{transform.describe()}, exact up to floating-point rounding"
    else:
        what = (
            f"{transform.describe()} tabulated on a regular {shape} tensor grid of x nodes and "
            f"{options['y_nodes']} y values per node, linear in y between them and "
            "multilinear in x between nodes"
        )
    metadata = {
        **_identity(transform, len(table.axes)),
        "exact": exact,
        **options,
        "grid": [len(a) for a in table.axes],
        "domain": [[x_lo.tolist(), x_hi.tolist()], [y_lo, y_hi]],
        "n_events": int(transform.n_events_),
        "sum_weight": float(transform.sum_weight_),
        "n_bins": n_bins,
        "max_abs_error": error,
        "rms_abs_error": rms,
        "n_check_points": n_check,
        "inexact_numbers": inexact,
    }
    description = describe_table(transform, what, n_check, inexact, error, rms)
    return VectorExport(data, len(table.axes), metadata, description, numbers, places)


def _identity(transform: ConditionalCDFTransform, k: int) -> dict[str, Any]:
    """The metadata that says what wrote the file and which transform it holds."""
    return {
        "layout": VECTOR_LAYOUT,
        "layout_version": VECTOR_LAYOUT_VERSION,
        "written_by": f"rosenblatt {__version__}",
        "kind": transform.kind,
        "params": transform.fitted_params(),
        "x_dims": k,
    }


def _export_nested(
    transform: ConditionalCDFTransform, *, n_check: int, max_bins: int, seed: int
) -> VectorExport:
    """IRGI's nested cells written exactly (:mod:`rosenblatt.correctionlib._nested`)."""
    t: Any = transform
    domain = _domain(transform)
    table = NestedTable(
        t.boxes_, t.splits_, t.y_edges_, t.cdf_, t.trend_centre_, t.trend_slope_, domain
    )
    data = table.data()
    if table.n_bins > max_bins:
        msg = (
            f"the nested cells need {table.n_bins} bins, more than max_bins = {max_bins}: raise "
            "max_bins or fit a smaller depth"
        )
        raise ValueError(msg)
    numbers = ExactNumbers()
    inexact = sum(not numbers.is_exact(v) for v in table.places)
    k = table.k
    export = VectorExport(data, k, {}, "", numbers, table.places, nested_formulas(k))
    x, y = nested_check_points(table, n_check, seed)
    difference = np.abs(_evaluate(export, x, y) - transform.transform(x, y))
    error, rms = float(np.max(difference, initial=0.0)), float(np.sqrt(np.mean(difference**2)))
    x_lo, x_hi, y_lo, y_hi = domain
    metadata = {
        **_identity(transform, k),
        "exact": True,
        "splits": list(table.splits),
        "domain": [[x_lo.tolist(), x_hi.tolist()], [y_lo, y_hi]],
        "n_events": int(transform.n_events_),
        "sum_weight": float(transform.sum_weight_),
        "n_bins": table.n_bins,
        "max_abs_error": error,
        "rms_abs_error": rms,
        "n_check_points": n_check,
        "inexact_numbers": inexact,
    }
    what = (
        f"{transform.describe()}; nested binnings along the observables, exact up to "
        "floating-point rounding"
    )
    description = describe_table(transform, what, n_check, inexact, error, rms)
    return dataclasses.replace(export, metadata=metadata, description=description)


def nested_check_points(table: NestedTable, n: int, seed: int) -> tuple[FloatArray, FloatArray]:
    """Points to measure the nested correction: the widened domain, cells' edges and centres.

    A quarter of the points is uniform over the domain widened by 5% on every
    side; the others have ``u`` on an edge of a cell (or the float below it)
    and, a third of them, ``x`` on a cell centre along every observable.
    """
    rng = np.random.default_rng(seed)
    lo, hi = table.x_lo, table.x_hi
    wide = 0.05 * (hi - lo)
    x = rng.uniform(lo - wide, hi + wide, (n, table.k))
    dy = 0.05 * (table.y_hi - table.y_lo)
    y = rng.uniform(table.y_lo - dy, table.y_hi + dy, n)
    quarter = n // 4
    for d, centres in enumerate(table.centres):
        x[3 * quarter :, d] = centres[rng.integers(0, len(centres), n - 3 * quarter)]
    knots = np.unique(np.concatenate([c.nodes for c in table.columns]))
    u = knots[rng.integers(0, len(knots), n - quarter)]
    below = rng.random(len(u)) < 0.5
    u[below] = np.nextafter(u[below], -np.inf)
    inside = np.clip(x[quarter:], lo, hi)
    y[quarter:] = u + (inside - table.centre) @ table.slope
    return x, y


def _evaluate(export: VectorExport, x: FloatArray, y: FloatArray) -> FloatArray:
    """The correction evaluated by correctionlib, as a reader of the written file would."""
    import correctionlib

    document = {
        "schema_version": 2,
        "description": "check",
        "corrections": [export.correction("check")],
    }
    text = export.numbers.dumps(json.dumps(document, allow_nan=False), export.positions())
    correction = correctionlib.CorrectionSet.from_string(text)["check"]
    values: FloatArray = np.asarray(correction.evaluate(*x.T, y), dtype=np.float64)
    return values


def _check_readable(places: set[float], table: TensorTable, numbers: ExactNumbers) -> int:
    """Check that correctionlib reads every edge in order; count the inexact numbers."""
    read = np.vectorize(numbers.read, otypes=[np.float64])
    for edges in (*table.axes, np.unique(table.y_edges)):
        if np.any(np.diff(read(edges)) <= 0):
            msg = (
                "correctionlib would read two bin edges out of order (they are a few floats "
                "apart and have no decimal form it reads exactly); the table cannot be written"
            )
            raise ValueError(msg)
    return sum(not numbers.is_exact(v) for v in places)
