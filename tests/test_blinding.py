"""Blinding in the analysis processors: the data's events in region A are filled and counted nowhere."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

pytest.importorskip("coffea")

from rosenblatt.processors.analysis import (
    DATA,
    PlaneBinning,
    Variant,
    blind_cutflow,
    empty_output,
    fill_variants,
    region_stage,
)

X0 = (2500.0, 3000.0, 3500.0)
BOX = (3000.0, 0.5)
#: the pass/fail fit's bins of x: one straddles the blinded x0
PASSFAIL_EDGES = tuple(np.linspace(2000.0, 4500.0, 12))


def _filled() -> tuple[dict[str, Any], dict[str, int], dict[str, np.ndarray]]:
    rng = np.random.default_rng(5)
    n = 5000
    events = {
        "x": rng.uniform(2000.0, 4500.0, n),
        "score": rng.uniform(size=n),
        "process": rng.choice([0, 1, DATA], n, p=[0.3, 0.1, 0.6]).astype(np.int64),
    }
    variants = [Variant("cut", "score", (0.3, 0.5, 0.7)), Variant("uncut", "score", (0.3, 0.7))]
    plane = PlaneBinning(25, (2000.0, 4500.0), 10)
    output = empty_output(variants, X0, plane, "x", "mixed", passfail=PASSFAIL_EDGES)
    regions = fill_variants(
        output,
        variants,
        dataset="mixed",
        x=events["x"],
        scores={"score": events["score"]},
        process=events["process"],
        weight=np.ones(n),
        blind={"cut": BOX},
    )
    return output, regions, events


def _data(h: Any) -> np.ndarray:
    hist = h[{"dataset": sum}]
    if DATA not in hist.axes["process"]:
        return np.zeros(0)
    return hist[{"process": hist.axes["process"].index(DATA)}].values(flow=True)


def test_data_in_region_a_are_filled_nowhere_and_uncut_variants_get_no_data() -> None:
    output, regions, events = _filled()
    x, y, data = events["x"], events["score"], events["process"] == DATA
    in_x, in_y = x >= BOX[0], y >= BOX[1]
    for kind in ("abcd", "plane", "passfail"):
        cut = _data(output[kind]["cut"])
        assert cut.sum() == np.count_nonzero(data & ~(in_x & in_y))
        assert not _data(output[kind]["uncut"]).any()
    # the ABCD histogram's bins of A (x >= 3000: index 3 on, y >= 0.5: index 3 on) are empty
    assert _data(output["abcd"]["cut"])[3:, 3:].sum() == 0
    # the pass/fail histogram's passing data (y >= 0.5: flow index 2 on) above x0: none in the
    # bins above, and in the bin that straddles x0 only its part below
    passing = _data(output["passfail"]["cut"])[1:-1, 2:].sum(axis=1)
    edges = np.asarray(PASSFAIL_EDGES)
    below = np.histogram(x[data & in_y & ~in_x], edges)[0]
    np.testing.assert_array_equal(passing, below)
    assert passing[edges[:-1] >= BOX[0]].sum() == 0
    simulated = output["abcd"]["uncut"][{"dataset": sum}][{"process": 0}].values(flow=True)
    assert simulated.sum() == np.count_nonzero(events["process"] == 0)
    assert regions == {
        region_stage("B", "cut"): np.count_nonzero(data & in_x & ~in_y),
        region_stage("C", "cut"): np.count_nonzero(data & ~in_x & in_y),
        region_stage("D", "cut"): np.count_nonzero(data & ~in_x & ~in_y),
    }


def test_blinded_cutflow_counts_the_data_only_outside_region_a() -> None:
    _, regions, events = _filled()
    n_data = int(np.count_nonzero(events["process"] == DATA))
    n = len(events["x"])
    # a chunk holding data loses the stages before the split: they and B, C, D would tile read
    mixed = {"read": n + 9, "not selected": 2, "x above x_max": 7, "in ABCD": n}
    blind_cutflow(mixed, regions, n_data=n_data, data=False)
    assert mixed == {"read": n + 9, "in ABCD": n - n_data, **regions}
    data = {"read": n_data + 5, "not selected": 2, "x above x_max": 3, "in ABCD": n_data}
    blind_cutflow(data, regions, n_data=n_data, data=True)
    assert data == {"read": n_data + 5, **regions}
    in_a = n_data - sum(regions.values())
    assert in_a > 0
    # no sum of stages with signs +-1 (read's sign +1) leaves the data's count in A
    others = [v for k, v in data.items() if k != "read"]
    signs = np.array(np.meshgrid(*[[-1, 0, 1]] * len(others))).reshape(len(others), -1)
    assert in_a not in data["read"] + np.asarray(others) @ signs
    simulation = {"read": 10, "not selected": 1, "in ABCD": 9}
    blind_cutflow(simulation, {}, n_data=0, data=False)
    assert simulation == {"read": 10, "not selected": 1, "in ABCD": 9}
