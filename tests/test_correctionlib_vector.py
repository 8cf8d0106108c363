"""correctionlib export of transforms fitted on several observables: GridKDE exact, others tabulated."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import rosenblatt as rb
from rosenblatt._schema import SchemaError
from rosenblatt.cli import main as cli_main
from rosenblatt.closed_forms import VECTOR_CASES
from rosenblatt.correctionlib import (
    correctionlib_document,
    read_correctionlib,
    to_correctionlib,
    write_correctionlib,
)
from rosenblatt.correctionlib._vector import check_points, tabulate

correctionlib = pytest.importorskip("correctionlib")

CASES = {2: "two_observables", 3: "three_observables"}


def sample(k: int, n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``n`` events of the closed form with ``k`` observables."""
    return VECTOR_CASES[CASES[k]].sample(n, seed=seed)


@pytest.fixture(scope="module", params=[2, 3])
def grid_kde(request: pytest.FixtureRequest) -> rb.GridKDE:
    """A small GridKDE on two or three observables."""
    k = request.param
    x, y = sample(k, 2000, seed=k)
    return rb.GridKDE(0.8 if k == 2 else 1.5, y_levels=16 if k == 2 else 6).fit(x, y)


def written(transform: Any, path: Path, **options: Any) -> tuple[Any, dict[str, Any]]:
    """Write ``transform``; return correctionlib's evaluator of the file and the metadata."""
    metadata = write_correctionlib(transform, path, "gamma", **options)
    return correctionlib.CorrectionSet.from_file(str(path))["gamma"], metadata


def probe_points(transform: Any, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Points inside and far outside the domain, on grid nodes, on y edges, beyond the y range."""
    rng = np.random.default_rng(seed)
    (x_lo, x_hi), (y_lo, y_hi) = transform.domain_
    lo, hi = np.asarray(x_lo), np.asarray(x_hi)
    n, k = 4000, len(lo)
    x = rng.uniform(lo - 0.5 * (hi - lo), hi + 0.5 * (hi - lo), (n, k))
    x[: n // 4] = rng.uniform(lo, hi, (n // 4, k))
    y = rng.uniform(y_lo, y_hi, n)
    y[:400] = rng.uniform(y_lo - 2.0, y_lo, 400)
    y[400:800] = rng.uniform(y_hi, y_hi + 2.0, 400)
    y[800:810] = y_lo
    y[810:820] = y_hi
    edges = np.asarray(transform.y_edges_).ravel()
    on_edges = edges[rng.integers(0, len(edges), 1200)]
    on_edges[::2] = np.nextafter(on_edges[::2], -np.inf)
    y[1000:2200] = on_edges
    nodes = np.stack([m.ravel() for m in np.meshgrid(*transform.axes_, indexing="ij")], axis=1)
    x[1500:2500] = nodes[rng.integers(0, len(nodes), 1000)]
    return x, y


def test_grid_kde_exact_in_correctionlib(grid_kde: rb.GridKDE, tmp_path: Path) -> None:
    k = grid_kde.x_dims
    correction, metadata = written(grid_kde, tmp_path / "gamma.json", n_check=2000)
    assert [v.name for v in correction.inputs] == [*(f"x{d + 1}" for d in range(k)), "y"]
    assert metadata["exact"] is True
    assert metadata["x_dims"] == k
    assert metadata["max_abs_error"] <= 1e-12
    x, y = probe_points(grid_kde, seed=k)
    got = correction.evaluate(*x.T, y)
    np.testing.assert_allclose(got, grid_kde.transform(x, y), rtol=0, atol=1e-12)
    below, above = y < grid_kde.domain_[1][0], y >= grid_kde.domain_[1][1]
    assert np.all(got[below] == 0.0)
    assert np.all(got[above] == 1.0)


@pytest.mark.slow
def test_document_validates(grid_kde: rb.GridKDE) -> None:
    import correctionlib.schemav2 as cs

    document = correctionlib_document(grid_kde, n_check=100)
    cs.CorrectionSet.model_validate(json.loads(json.dumps(document)))
    assert isinstance(to_correctionlib(grid_kde, n_check=100), cs.CorrectionSet)


@pytest.mark.parametrize("kind", ["irgi", "kde"])
def test_tabulated_within_stated_error(kind: str, tmp_path: Path) -> None:
    import correctionlib.schemav2 as cs

    x, y = sample(2, 3000 if kind == "irgi" else 400, seed=5)
    t = (rb.IRGI(depth=6) if kind == "irgi" else rb.KDE(0.5)).fit(x, y)
    correction, metadata = written(
        t, tmp_path / "gamma.json", x_nodes=9, y_nodes=33, n_check=4000, seed=3
    )
    document = json.loads((tmp_path / "gamma.json").read_text())
    cs.CorrectionSet.model_validate(document)
    assert metadata["exact"] is False
    assert (metadata["x_nodes"], metadata["y_nodes"], metadata["grid"]) == (9, 33, [9, 9])
    assert 0 < metadata["rms_abs_error"] <= metadata["max_abs_error"] < 1
    assert f"{metadata['max_abs_error']:.3g}" in document["corrections"][0]["description"]
    assert metadata["n_bins"] == 8 * 8 * 32
    # the stated error holds on the check points, evaluated by correctionlib
    table = tabulate(t, 9, 33)
    xc, yc = check_points(table, t.domain_, 4000, 3)
    got = correction.evaluate(*xc.T, yc)
    np.testing.assert_allclose(got, table.evaluate(xc, yc), rtol=0, atol=1e-12)
    assert np.max(np.abs(got - t.transform(xc, yc))) <= metadata["max_abs_error"] + 1e-12


def test_scalar_export_unchanged() -> None:
    x, y = sample(2, 1500, seed=9)
    for make in (lambda: rb.GridKDE(0.5), lambda: rb.IRGI(depth=4)):
        scalar = correctionlib_document(make().fit(x[:, 0], y), n_check=500)
        column = correctionlib_document(make().fit(x[:, :1], y), n_check=500)
        assert scalar == column
        correction = scalar["corrections"][0]
        assert [v["name"] for v in correction["inputs"]] == ["x", "y"]
        assert correction["data"]["nodetype"] == "binning"
        assert "rosenblatt-correctionlib" in correction["description"]
        assert "rosenblatt-correctionlib-vector" not in correction["description"]


@pytest.mark.slow
@pytest.mark.parametrize(("k", "depth"), [(2, (2, 3)), (2, (0, 3)), (3, (1, 2, 1))])
def test_irgi_exact_in_correctionlib(k: int, depth: tuple[int, ...], tmp_path: Path) -> None:
    import correctionlib.schemav2 as cs

    x, y = sample(k, 3000, seed=20 + k)
    w = np.random.default_rng(4).uniform(0.5, 1.5, len(y))
    t = rb.IRGI(depth).fit(x, y, w)
    correction, metadata = written(t, tmp_path / "gamma.json", n_check=3000, seed=2)
    cs.CorrectionSet.model_validate(json.loads((tmp_path / "gamma.json").read_text()))
    assert metadata["exact"] is True
    assert metadata["splits"] == list(depth)
    assert metadata["max_abs_error"] <= 1e-12
    # inside and far outside the domain, beyond the y range, on the cells' edges and centres
    rng = np.random.default_rng(k)
    (x_lo, x_hi), (y_lo, y_hi) = t.domain_
    lo, hi = np.asarray(x_lo), np.asarray(x_hi)
    xq = rng.uniform(lo - 0.5 * (hi - lo), hi + 0.5 * (hi - lo), (4000, k))
    yq = rng.uniform(y_lo - 1.0, y_hi + 1.0, 4000)
    yq[:10], yq[10:20] = y_lo, y_hi
    middles = 0.5 * (t.boxes_[:, 0] + t.boxes_[:, 1])
    xq[1000:2000] = middles[rng.integers(0, len(middles), 1000)]
    knots = t.y_edges_.ravel()[rng.integers(0, t.y_edges_.size, 1000)]
    inside = np.clip(xq[2000:3000], lo, hi)
    yq[2000:3000] = knots + (inside - t.trend_centre_) @ t.trend_slope_
    got = correction.evaluate(*np.ascontiguousarray(xq.T), yq)
    np.testing.assert_allclose(got, t.transform(xq, yq), rtol=0, atol=1e-12)
    assert np.all(got[yq <= y_lo] == 0.0)
    assert np.all(got[yq >= y_hi] == 1.0)
    # asked for a tabulation, it is tabulated
    _, tabulated = written(t, tmp_path / "tab.json", x_nodes=5, y_nodes=9, n_check=200)
    assert tabulated["exact"] is False


def test_irgi_exact_with_a_discrete_observable(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    n = 4000
    x = np.column_stack([rng.normal(size=n), rng.integers(0, 4, n).astype(float)])
    y = x[:, 0] + x[:, 1] + rng.normal(size=n)
    t = rb.IRGI((1, 3)).fit(x, y)
    assert np.any(t.boxes_[:, 1, 1] == t.boxes_[:, 0, 1])
    correction, metadata = written(t, tmp_path / "gamma.json", n_check=2000)
    assert metadata["max_abs_error"] <= 1e-12
    got = correction.evaluate(*np.ascontiguousarray(x.T), y)
    np.testing.assert_allclose(got, t.transform(x, y), rtol=0, atol=1e-12)


def test_irgi_nested_max_bins() -> None:
    x, y = sample(2, 2000, seed=3)
    with pytest.raises(ValueError, match="max_bins"):
        correctionlib_document(rb.IRGI(4).fit(x, y), max_bins=10, n_check=100)


@pytest.mark.slow
def test_reader_refuses_several_observables(grid_kde: rb.GridKDE, tmp_path: Path) -> None:
    path = tmp_path / "gamma.json"
    write_correctionlib(grid_kde, path, n_check=100)
    with pytest.raises(SchemaError, match="protected observables"):
        read_correctionlib(path)
    with pytest.raises(SchemaError, match="protected observables"):
        rb.load(path)


def test_max_bins(grid_kde: rb.GridKDE) -> None:
    with pytest.raises(ValueError, match="max_bins"):
        correctionlib_document(grid_kde, max_bins=10)


def test_cli_export_vector(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    x, y = sample(2, 1500, seed=11)
    t = rb.GridKDE(1.0, y_levels=16).fit(x, y)
    saved, out = tmp_path / "t.json", tmp_path / "t.correctionlib.json"
    t.save(saved)
    assert cli_main(["export", "--correctionlib", str(out), str(saved), "--quiet"]) == 0
    assert "grid_kde" in capsys.readouterr().out or out.exists()
    correction = correctionlib.CorrectionSet.from_file(str(out))["rosenblatt_gamma"]
    xq, yq = probe_points(t, seed=12)
    np.testing.assert_allclose(correction.evaluate(*xq.T, yq), t.transform(xq, yq), atol=1e-12)
    tabulated = tmp_path / "tab.json"
    args = ["export", "--correctionlib", str(tabulated), str(saved), "--x-nodes", "5"]
    assert cli_main([*args, "--y-nodes", "9", "--quiet"]) == 0
    metadata = json.loads(tabulated.read_text())["corrections"][0]["description"]
    assert '"x_nodes":5' in metadata
