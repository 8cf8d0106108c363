"""The rosenblatt layout of a correctionlib correction: its names, formulas and checks.

See :mod:`rosenblatt.correctionlib` for the layout; the exporter
(:mod:`rosenblatt.correctionlib._export`) and the reader
(:mod:`rosenblatt.correctionlib._import`) share what is here.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from rosenblatt._schema import SchemaError
from rosenblatt.transforms.tabulated import Table

__all__ = [
    "BILINEAR",
    "DEFAULT_NAME",
    "ENSEMBLE_LAYOUT",
    "ENSEMBLE_METADATA_MARKER",
    "GENERIC_FORMULAS",
    "LAYOUT",
    "LAYOUT_VERSION",
    "LINEAR",
    "METADATA_MARKER",
    "N_PARAMETERS",
    "TFORMULA_VARIABLES",
    "VALUE_SLACK",
    "X_TO_T",
    "check_table",
    "fail",
    "formula_ref",
    "y_binning",
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

#: the names TFormula gives its variables, in order
TFORMULA_VARIABLES = "xyzt"

#: slack allowed on values read back (they are rounded sums of exact node values)
VALUE_SLACK = 1e-9


def formula_ref(index: int, parameters: list[float]) -> dict[str, Any]:
    """A node evaluating generic formula ``index`` with ``parameters``."""
    return {"nodetype": "formularef", "index": index, "parameters": parameters}


def y_binning(edges: list[Any], rows: list[list[float]], index: int) -> dict[str, Any]:
    """A ``y`` binning: 0 below ``edges``, one formula ``index`` per bin, 1 above.

    Parameters
    ----------
    edges : list
        The bin edges from the domain's lower to its upper end (``len(rows) + 1``).
    rows : list of list of float
        Each bin's parameters of the generic formula.
    index : int
        The generic formula of the bins.
    """
    return {
        "nodetype": "binning",
        "input": "y",
        "edges": ["-inf", *edges, "inf"],
        "content": [0.0, *(formula_ref(index, row) for row in rows), 1.0],
        "flow": "clamp",
    }


def fail(where: str, what: str) -> SchemaError:
    """A :class:`SchemaError` saying where and what."""
    return SchemaError(f"{where}: {what}")


def check_table(table: Table, where: str) -> None:
    """Check that every bin starts at its edge, stays in [0, 1] and grows with y."""
    nodes = table.x_nodes
    if len(nodes) < 2 or len(table.y_edges) != len(nodes) + 1:
        raise fail(where, "expected at least two x nodes and one y binning per x bin")
    y_lo, y_hi = table.y_range
    for g, (edges, params) in enumerate(zip(table.y_edges, table.params, strict=True)):
        if g == 0:
            at = f"{where}, y binning for x < {nodes[0]:.10g}"
        elif g == len(nodes):
            at = f"{where}, y binning for x >= {nodes[-1]:.10g}"
        else:
            at = f"{where}, y binning for x in [{nodes[g - 1]:.10g}, {nodes[g]:.10g})"
        if edges[0] != y_lo or edges[-1] != y_hi:
            raise fail(at, "every y binning must span the same domain")
        if len(params) == 0:
            continue
        if np.any(params[:, -1] != edges[:-1]):
            n_bad = int((params[:, -1] != edges[:-1]).sum())
            raise fail(at, f"{n_bad} bin(s) whose formula does not start at the bin's edge")
        width = np.diff(edges)
        for first, slope in ((0, 1), (2, 3)) if params.shape[1] == 5 else ((0, 1),):
            start, rate = params[:, first], params[:, slope]
            end = start + rate * width
            if np.any(rate < 0) or np.any(start[1:] < end[:-1] - VALUE_SLACK):
                raise fail(at, "gamma decreases with y")
            if np.any(start < -VALUE_SLACK) or np.any(end > 1 + VALUE_SLACK):
                raise fail(at, "gamma outside [0, 1]")
