"""The chosen cut on the edge of the scanned grid: flagged on its own axis only."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any, cast

import numpy as np
import pytest

from rosenblatt.studies.abcd.estimate import EstimateJson, GridCut, _edge_axes
from rosenblatt.studies.abcd.report import _estimate_cells, _estimate_notes

GRID = SimpleNamespace(x0=np.array([1200.0, 1400.0, 1600.0, 1800.0]), y0=np.linspace(0.6, 0.95, 8))


def _cut(i: int, j: int) -> GridCut:
    return GridCut(
        i=i,
        j=j,
        x0=float(GRID.x0[i]),
        y0=float(GRID.y0[j]),
        expected_z_a=1.0,
        closes_within_2sd=True,
    )


@pytest.mark.parametrize(
    ("i", "j", "axes"),
    [(1, 7, ["y0"]), (0, 3, ["x0"]), (3, 0, ["x0", "y0"]), (2, 4, [])],
)
def test_the_axes_on_the_edge_are_those_of_the_cut(i: int, j: int, axes: list[str]) -> None:
    assert _edge_axes(cast("Any", GRID), _cut(i, j)) == axes


def test_the_report_marks_the_axis_on_the_edge_and_names_it() -> None:
    inner_x = cast(
        "EstimateJson",
        {"x0": 1400.0, "y0": 0.95, "cut_on_grid_edge": True, "cut_on_grid_edge_axes": ["y0"]},
    )
    inside = cast(
        "EstimateJson",
        {"x0": 1400.0, "y0": 0.8, "cut_on_grid_edge": False, "cut_on_grid_edge_axes": []},
    )
    cells = _estimate_cells(inner_x)
    assert cells[:2] == ["1400", "0.95 (grid edge)"]
    assert _estimate_cells(inside)[:2] == ["1400", "0.8"]
    notes = "\n".join(_estimate_notes({"irgi": inner_x, "kde": inside}))
    assert "the cut of `irgi` (y0) is the first or last value of that axis" in notes
    assert "`kde`" not in notes
    assert _estimate_notes({"kde": inside}) == []
