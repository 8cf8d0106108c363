"""The per-chunk histogram sums of the analysis processors equal boost-histogram's own fill."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("coffea")

from rosenblatt.processors.analysis import (
    PlaneBinning,
    abcd_histogram,
    add_values_to_histogram,
    plane_histogram,
)
from rosenblatt.processors.binned_sums import binned_sums, flow_index


def _events(n: int, x_edges: np.ndarray, y_edges: np.ndarray) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(11)
    x = rng.uniform(x_edges[0] - 300.0, x_edges[-1] + 300.0, n)
    y = rng.uniform(-0.2, 1.2, n)
    # values on every edge and just beside it: the bin above an edge holds the edge
    on_x = np.concatenate([x_edges, np.nextafter(x_edges, -np.inf), np.nextafter(x_edges, np.inf)])
    on_y = np.concatenate([y_edges, np.nextafter(y_edges, -np.inf), np.nextafter(y_edges, np.inf)])
    x[: len(on_x)] = on_x
    y[len(on_x) : len(on_x) + len(on_y)] = on_y
    weight = rng.choice([-0.5, 1.0, 2.25], n)
    process = rng.integers(0, 3, n)
    return x, y, weight, process


@pytest.mark.parametrize("numba", [True, False])
@pytest.mark.parametrize(
    "make",
    [
        lambda: abcd_histogram(
            np.linspace(2200.0, 3800.0, 17), np.sort(np.random.default_rng(2).beta(2, 5, 12))
        ),
        lambda: abcd_histogram(np.linspace(2200.0, 3800.0, 17), np.linspace(0.05, 0.95, 40)),
        lambda: plane_histogram(PlaneBinning(x_range=(1500.0, 4500.0)), (0.0, 1.0)),
    ],
)
def test_added_sums_equal_fill(make: object, numba: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    if not numba:
        monkeypatch.setenv("ROSENBLATT_NO_NUMBA", "1")
    filled, added = make(), make()  # type: ignore[operator]
    x, y, weight, process = _events(20_000, filled.axes["x"].edges, filled.axes["y"].edges)
    y[:5] = np.nan
    for dataset, labels in (("qcd", process), ("data", np.full(len(x), 2)), ("qcd", process)):
        filled.fill(dataset=dataset, x=x, y=y, process=labels, weight=weight)
        add_values_to_histogram(added, dataset, flow_index(added.axes["x"], x), y, labels, weight)
    assert list(added.axes["dataset"]) == list(filled.axes["dataset"])
    assert list(added.axes["process"]) == list(filled.axes["process"])
    np.testing.assert_allclose(added.view(flow=True).value, filled.view(flow=True).value, atol=1e-9)
    np.testing.assert_allclose(
        added.view(flow=True).variance, filled.view(flow=True).variance, atol=1e-9
    )


@pytest.mark.parametrize("regular", [True, False])
def test_compiled_and_numpy_sums_are_identical(
    regular: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    import hist

    x_axis = (
        hist.axis.Regular(7, 0.1, 3.0) if regular else hist.axis.Variable([0.1, 0.15, 0.7, 3.0])
    )
    y_axis = hist.axis.Variable([0.1, 0.15, 0.7, 0.71])
    x, y, weight, _ = _events(50_000, x_axis.edges, y_axis.edges)
    x[:3] = np.nan
    shape = (len(x_axis) + 2, len(y_axis) + 2)
    compiled = binned_sums(flow_index(x_axis, x), flow_index(y_axis, y), weight, shape)
    monkeypatch.setenv("ROSENBLATT_NO_NUMBA", "1")
    plain = binned_sums(flow_index(x_axis, x), flow_index(y_axis, y), weight, shape)
    for a, b in zip(compiled, plain, strict=True):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(flow_index(x_axis, x[:3]), len(x_axis.edges))


@pytest.mark.parametrize(
    "edges",
    [
        np.linspace(2200.0, 3800.0, 41),  # equally spaced within rounding
        np.linspace(0.05, 0.95, 40) * (1.0 + 1e-12 * np.sin(np.arange(40))),  # nearly so
        np.array([0.0, 0.1, 0.15, 0.7, 3.0]),  # any edges
    ],
)
def test_flow_index_is_boost_histograms_index(edges: np.ndarray) -> None:
    import boost_histogram as bh

    rng = np.random.default_rng(5)
    width = edges[-1] - edges[0]
    values = np.concatenate(
        [
            rng.uniform(edges[0] - width, edges[-1] + width, 100_000),
            edges,
            np.nextafter(edges, -np.inf),
            np.nextafter(edges, np.inf),
            [np.inf, -np.inf, np.nan, 1e300, -1e300],
        ]
    )
    for axis in (bh.axis.Variable(edges), bh.axis.Regular(len(edges) - 1, edges[0], edges[-1])):
        expected = axis.index(values) + 1
        np.testing.assert_array_equal(flow_index(axis, values), expected)
        # every short length: values on an edge in the last, partial group of eight
        edgy = np.concatenate([rng.uniform(edges[0], edges[-1], 24), edges])
        for n in range(1, 25):
            part = edgy[-n:]
            np.testing.assert_array_equal(flow_index(axis, part), axis.index(part) + 1)
