"""A transform defined in its own module is saved, loaded and exported to correctionlib unchanged.

The toy of ``tests/toy_transform.py`` is a column grid with an exact
conditional CDF at its nodes; nothing in rosenblatt names it, yet it travels
through ``t.save``/``rb.load`` and the correctionlib export and import, equal
to 1e-12.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from toy_transform import ShiftedUniform

import rosenblatt as rb
from rosenblatt.correctionlib import TabulatedTransform, read_correctionlib, write_correctionlib
from rosenblatt.transforms._base import transform_classes


@pytest.fixture(scope="module")
def toy() -> ShiftedUniform:
    rng = np.random.default_rng(31)
    x = rng.uniform(0.0, 3.0, 2000)
    fitted = ShiftedUniform(7)
    fitted.fit(x, x + rng.uniform(0.0, 1.0, len(x)))
    return fitted


def probe(toy: Any, n: int = 20_000) -> tuple[np.ndarray, np.ndarray]:
    """Points inside and beyond the domain, a quarter on the nodes and a quarter on the edges."""
    rng = np.random.default_rng(32)
    (x_lo, x_hi), (y_lo, y_hi) = toy.domain_
    x = rng.uniform(x_lo - 1.0, x_hi + 1.0, n)
    y = rng.uniform(y_lo - 1.0, y_hi + 1.0, n)
    q = n // 4
    x[:q] = rng.choice(toy.x_centres_, q)
    y[q : 2 * q] = rng.choice(np.unique(toy.y_edges_), q)
    return x, y


def test_the_toy_is_registered_by_kind_alone() -> None:
    assert transform_classes()["toy_test"] is ShiftedUniform


def test_the_toy_is_exact_at_its_nodes(toy: ShiftedUniform) -> None:
    y = np.linspace(-1.0, 5.0, 601)
    for centre in toy.x_centres_:
        gamma = toy.transform(np.full_like(y, centre), y)
        np.testing.assert_allclose(gamma, np.clip(y - centre, 0.0, 1.0), rtol=0, atol=1e-12)


def test_saved_and_loaded(toy: ShiftedUniform, tmp_path: Path) -> None:
    toy.save(tmp_path / "toy.json")
    loaded = rb.load(tmp_path / "toy.json")
    assert type(loaded) is ShiftedUniform
    assert loaded.domain_ == toy.domain_
    x, y = probe(toy)
    np.testing.assert_allclose(loaded.transform(x, y), toy.transform(x, y), rtol=0, atol=1e-12)


def test_exported_to_correctionlib_and_read_back(toy: ShiftedUniform, tmp_path: Path) -> None:
    path = tmp_path / "toy.correctionlib.json"
    metadata = write_correctionlib(toy, path, "gamma_toy")
    assert metadata["kind"] == "toy_test"
    assert metadata["params"] == {"n_columns": 7}
    assert metadata["max_abs_error"] <= 1e-12
    loaded = rb.load(path)
    assert isinstance(loaded, TabulatedTransform)
    assert loaded.source_kind_ == "toy_test"
    assert "shifted uniform on 7 columns" in loaded.description_
    x, y = probe(toy)
    expected = toy.transform(x, y)
    np.testing.assert_allclose(loaded.transform(x, y), expected, rtol=0, atol=1e-12)
    np.testing.assert_allclose(
        read_correctionlib(path, "gamma_toy").transform(x, y), expected, rtol=0, atol=1e-12
    )
    correctionlib = pytest.importorskip("correctionlib")
    evaluated = correctionlib.CorrectionSet.from_file(str(path))["gamma_toy"].evaluate(x, y)
    np.testing.assert_allclose(evaluated, expected, rtol=0, atol=1e-12)


def test_to_correctionlib(toy: ShiftedUniform) -> None:
    pytest.importorskip("correctionlib")
    cset = toy.to_correctionlib("gamma_toy", n_check=1000)
    x, y = probe(toy, 2000)
    gamma = cset.to_evaluator()["gamma_toy"].evaluate(x, y)
    np.testing.assert_allclose(gamma, toy.transform(x, y), rtol=0, atol=1e-12)


def test_an_ensemble_of_toys_is_exported(toy: ShiftedUniform, tmp_path: Path) -> None:
    rng = np.random.default_rng(33)
    x = rng.uniform(0.0, 3.0, 500)
    ensemble = rb.bootstrap(ShiftedUniform(4), x, x + rng.uniform(0.0, 1.0, len(x)), n=2)
    path = tmp_path / "ensemble.json"
    metadata = write_correctionlib(ensemble, path, "gamma", n_check=1000)
    assert metadata["member_kind"] == "toy_test"
    correctionlib = pytest.importorskip("correctionlib")
    correction = correctionlib.CorrectionSet.from_file(str(path))["gamma"]
    xq, yq = probe(ensemble.nominal_, 2000)
    for variation in ("nominal", "replica_1"):
        np.testing.assert_allclose(
            correction.evaluate(xq, yq, variation),
            ensemble.transform(xq, yq, variation=variation),
            rtol=0,
            atol=1e-12,
        )
