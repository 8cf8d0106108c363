"""Reading back the nested cells of an IRGI fit on several observables from its saved state."""

from __future__ import annotations

from typing import Any

import numpy as np

from rosenblatt._schema import SchemaError, check_array
from rosenblatt._validation import check_int, is_int
from rosenblatt.transforms._grid_kde_vector import _vector_domain
from rosenblatt.transforms._irgi_grid import check_nested_boxes
from rosenblatt.transforms._irgi_vector import Cells

__all__ = ["cells_from_state"]


def cells_from_state(state: dict[str, Any]) -> tuple[Any, Cells]:
    """The domain and the nested cells of a saved state, every invariant checked (``SchemaError``)."""
    if "splits" not in state:
        msg = (
            "IRGI on several observables saved as k-d cells blended by hats, the layout "
            "before its nested cells, which is no longer read: fit the transform again"
        )
        raise SchemaError(msg)
    k = state["x_dims"]
    domain = _vector_domain(state["domain"], k)
    depth = check_int(state["depth"], "depth", low=1, high=24, error=SchemaError)
    splits = state["splits"]
    if (
        not isinstance(splits, list)
        or len(splits) != k
        or not all(is_int(s) and s >= 0 for s in splits)
        or sum(splits) != depth
    ):
        msg = (
            f"splits must be {k} non-negative integers summing to the depth {depth}, got {splits!r}"
        )
        raise SchemaError(msg)
    boxes = check_array(state["boxes"], "boxes", (2**depth, 2, k))
    width = len(state["y_edges"][0]) if state["y_edges"] else 0
    edges = check_array(state["y_edges"], "y_edges", (2**depth, max(width, 2)), nondecreasing=True)
    cdf = check_array(state["cdf"], "cdf", (2**depth, max(width, 2)), nondecreasing=True, unit=True)
    if not np.all(boxes[:, 1] >= boxes[:, 0]):
        msg = "every cell's box must have its upper corner at or above its lower corner"
        raise SchemaError(msg)
    if np.any(cdf[:, 0] != 0) or np.any(cdf[:, -1] != 1):
        msg = "cdf must start at 0 and end at 1 in every cell"
        raise SchemaError(msg)
    centre = check_array(state["trend_centre"], "trend_centre", (k,))
    slope = check_array(state["trend_slope"], "trend_slope", (k,))
    cells = Cells(
        boxes, edges, cdf, int(state["y_depth"]), centre, slope, tuple(int(s) for s in splits)
    )
    check_nested_boxes(cells)
    return domain, cells
