"""The exact correctionlib correction of IRGI's nested cells on several observables.

IRGI fitted on ``k`` observables (``k = 2, 3``) interpolates its cells'
CDFs multilinearly between the cells' centres, one observable at a time
(:mod:`rosenblatt.transforms._irgi_nested`), and reads them at the residual
``u = y - (x - c) . b``. The correction of the real inputs ``x1, ..., xk``
and ``y`` follows the evaluation step by step:

- a binning of ``y`` over ``-inf, y_min+, y_max, +inf`` with contents 0, the
  rest and 1 (``y_min+`` is the float after ``y_min``: ``gamma`` is 0 at and
  below ``y_min``, 1 at and above ``y_max``);
- a ``transform`` node per observable that clamps ``xd`` to the domain
  (generic formula ``d``: ``max([0], min([1], x))``; ``x`` beyond the domain
  is evaluated at its nearest face, as ``transform`` does);
- a ``transform`` node that rewrites ``y`` to ``u`` (generic formula ``k + 1``);
- nested binnings: along ``x1`` over the slabs' centres (and the domain's
  ends), inside each bin along ``x2`` over the union of the centres of the
  two slabs that bin blends, and so on: in every box the ``2**k`` cells that
  contribute and their multilinear weights are fixed;
- per box a binning of ``u`` over the union of those cells' edges, each bin a
  formula (generic formula 0) ``sum_c W_c(x) (g_c + s_c (u - u_b))``: every
  interpolation weight ``t`` is written ``p + q xd`` (``p = q = 0`` where one
  cell is all there is), the cells' CDFs are linear on the bin.

The correction equals IRGI's ``transform`` up to floating-point rounding.
"""

from __future__ import annotations

import functools
import itertools
from typing import Any

import numpy as np

from rosenblatt.correctionlib._layout import TFORMULA_VARIABLES, formula_ref, y_binning
from rosenblatt.correctionlib._tables import ColumnCDF, grid_columns
from rosenblatt.transforms._irgi_nested import cell_centres
from rosenblatt.typing import FloatArray

__all__ = ["NestedTable", "nested_formulas"]


def _weight_terms(k: int) -> list[str]:
    """Per corner (C order of the lower/upper choices), its multilinear weight in the ``t`` parameters.

    Factor ``j`` (``0 .. 2**k - 2``, level by level, node by node) is
    ``[2j] + [2j + 1] * v`` with ``v`` the variable of its level.
    """
    terms = []
    for corner in itertools.product((0, 1), repeat=k):
        factors, node = [], 0
        for level, step in enumerate(corner):
            j = 2**level - 1 + node
            t = f"([{2 * j}]+[{2 * j + 1}]*{TFORMULA_VARIABLES[level]})"
            factors.append(t if step else f"(1-{t})")
            node = 2 * node + step
        terms.append("*".join(factors))
    return terms


def nested_formulas(k: int) -> list[dict[str, Any]]:
    """Generic formula 0: a bin's blend; ``d`` (1 to ``k``): the clamp of ``xd``; ``k + 1``: ``y`` to ``u``."""
    names = [*(f"x{d + 1}" for d in range(k)), "y"]
    u = TFORMULA_VARIABLES[k]
    offset = 2 * (2**k - 1)
    corners = 2**k
    blend = "+".join(
        f"{w}*([{offset + 2 * c}]+[{offset + 2 * c + 1}]*({u}-[{offset + 2 * corners}]))"
        for c, w in enumerate(_weight_terms(k))
    )
    plane = "+".join(f"({TFORMULA_VARIABLES[d]}-[{2 * d}])*[{2 * d + 1}]" for d in range(k))
    clamps = [
        {
            "nodetype": "formula",
            "expression": "max([0],min([1],x))",
            "parser": "TFormula",
            "variables": [name],
        }
        for name in names[:-1]
    ]
    return [
        {"nodetype": "formula", "expression": blend, "parser": "TFormula", "variables": names},
        *clamps,
        {
            "nodetype": "formula",
            "expression": f"{u}-({plane})",
            "parser": "TFormula",
            "variables": names,
        },
    ]


class NestedTable:
    """IRGI's nested cells laid out as correctionlib nodes.

    Parameters
    ----------
    boxes, splits, edges, cdf, centre, slope
        The fit (:class:`rosenblatt.transforms._irgi_vector.Cells`).
    x_lo, x_hi, y_lo, y_hi
        The domain.
    """

    def __init__(
        self,
        boxes: FloatArray,
        splits: tuple[int, ...],
        edges: FloatArray,
        cdf: FloatArray,
        centre: FloatArray,
        slope: FloatArray,
        domain: tuple[FloatArray, FloatArray, float, float],
    ) -> None:
        self.splits = splits
        self.k = len(splits)
        self.centres = cell_centres(boxes, splits)
        self.centre, self.slope = centre, slope
        self.x_lo, self.x_hi, self.y_lo, self.y_hi = domain
        self.u_max = float(edges[0, -1])
        self.columns: list[ColumnCDF] = grid_columns(edges, cdf, self.u_max)
        self.places: set[float] = set()
        self.n_bins = 0

    def _bins(
        self, axis: int, nodes: tuple[int, ...]
    ) -> tuple[FloatArray, list[list[tuple[int, int, float, float]]]]:
        """Edges along ``axis`` for the level's parent ``nodes`` and, per bin, each parent's child pair.

        A pair is ``(lower child, upper child, p, q)``: the upper child's
        weight is ``p + q x`` on the bin.
        """
        count = 2 ** self.splits[axis]
        rows = [self.centres[axis][node * count : (node + 1) * count] for node in nodes]
        inner = functools.reduce(np.union1d, rows) if count > 1 else np.empty(0)
        lo, hi = float(self.x_lo[axis]), float(self.x_hi[axis])
        edges = np.unique(np.concatenate(([lo], inner, [hi])))
        if len(edges) == 1 or (len(inner) and inner[-1] >= edges[-1]):
            # a centre on the domain's top (a tied top value) opens a bin of its own
            edges = np.append(edges, np.nextafter(edges[-1], np.inf))
        pairs = []
        for lower in edges[:-1]:
            per_node = []
            for node, row in zip(nodes, rows, strict=True):
                first = node * count
                j = int(np.searchsorted(row, lower, side="right")) - 1
                if j < 0:
                    per_node.append((first, first, 0.0, 0.0))
                elif j >= count - 1:
                    per_node.append((first + count - 1, first + count - 1, 0.0, 0.0))
                else:
                    width = float(row[j + 1] - row[j])
                    per_node.append((first + j, first + j + 1, -float(row[j]) / width, 1.0 / width))
            pairs.append(per_node)
        return edges, pairs

    def node(
        self, axis: int = 0, nodes: tuple[int, ...] = (0,), factors: tuple[float, ...] = ()
    ) -> dict[str, Any]:
        """The binning along ``axis`` of the parents ``nodes`` (the whole tree by default)."""
        if axis == self.k:
            return self._leaf(nodes, factors)
        edges, pairs = self._bins(axis, nodes)
        self.places.update(edges.tolist())
        content = []
        for per_node in pairs:
            children: list[int] = []
            level = list(factors)
            for lower, upper, p, q in per_node:
                children += [lower, upper]
                level += [p, q]
            content.append(self.node(axis + 1, tuple(children), tuple(level)))
        return {
            "nodetype": "binning",
            "input": f"x{axis + 1}",
            "edges": edges.tolist(),
            "content": content,
            "flow": "clamp",
        }

    def _leaf(self, cells: tuple[int, ...], factors: tuple[float, ...]) -> dict[str, Any]:
        """The ``u`` binning of a box whose corners are ``cells`` (C order)."""
        columns = [self.columns[c] for c in cells]
        lower = functools.reduce(np.union1d, (c.nodes for c in columns))
        upper = np.append(lower[1:], self.u_max)
        parts: list[FloatArray] = []
        for column in columns:
            parts.extend(column.pieces(lower, upper, self.u_max))
        params = np.column_stack((*parts, lower))
        self.places.update(lower.tolist())
        self.places.add(self.u_max)
        self.n_bins += len(lower)
        head = list(factors)
        return y_binning([*lower.tolist(), self.u_max], [head + row for row in params.tolist()], 0)

    def data(self) -> dict[str, Any]:
        """The correction's ``data`` node (see module)."""
        inner: dict[str, Any] = self.node()
        plane = [float(v) for pair in zip(self.centre, self.slope, strict=True) for v in pair]
        inner = {
            "nodetype": "transform",
            "input": "y",
            "rule": formula_ref(self.k + 1, plane),
            "content": inner,
        }
        for d in reversed(range(self.k)):
            inner = {
                "nodetype": "transform",
                "input": f"x{d + 1}",
                "rule": formula_ref(d + 1, [float(self.x_lo[d]), float(self.x_hi[d])]),
                "content": inner,
            }
        y_first = float(np.nextafter(self.y_lo, np.inf))
        self.places.update([y_first, self.y_hi, *self.x_lo.tolist(), *self.x_hi.tolist(), *plane])
        return {
            "nodetype": "binning",
            "input": "y",
            "edges": ["-inf", y_first, self.y_hi, "inf"],
            "content": [0.0, inner, 1.0],
            "flow": "clamp",
        }
