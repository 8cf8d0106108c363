"""Saved transforms: versioned JSON, bit-identical after loading, safe against tampering."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from gaussian_blob import bivariate_normal

import rosenblatt as rb
from rosenblatt.serialization import SCHEMA_VERSION

pytestmark = pytest.mark.core


@pytest.fixture(params=["irgi", "kde", "irgi-weighted", "kde-weighted"])
def fitted(request: pytest.FixtureRequest):
    x, y = bivariate_normal(3000, seed=2)
    w = np.random.default_rng(3).uniform(0.2, 2.0, len(x)) if "weighted" in request.param else None
    t = rb.IRGI(3, domain=((-6, 6), (-6, 6))) if request.param.startswith("irgi") else rb.KDE(0.07)
    return t.fit(x, y, w)


def test_round_trip_bit_identical(fitted, tmp_path: Path) -> None:
    path = tmp_path / "t.json"
    fitted.save(path)
    loaded = rb.load(path)
    assert type(loaded) is type(fitted)
    xq, yq = bivariate_normal(2000, seed=4)
    xq = np.concatenate((xq, [-9.0, 9.0]))
    yq = np.concatenate((yq, [0.0, 9.0]))
    np.testing.assert_array_equal(loaded.transform(xq, yq), fitted.transform(xq, yq))
    assert loaded.domain_ == fitted.domain_


def test_file_is_plain_versioned_json(fitted, tmp_path: Path) -> None:
    path = tmp_path / "t.json"
    fitted.save(path)
    document = json.loads(path.read_text())
    assert document["format"] == "rosenblatt-transform"
    assert document["schema_version"] == SCHEMA_VERSION
    assert document["kind"] == fitted.kind


def _tamper(fitted, tmp_path: Path, edit) -> Path:
    path = tmp_path / "t.json"
    fitted.save(path)
    document = json.loads(path.read_text())
    edit(document)
    path.write_text(json.dumps(document))
    return path


def test_newer_schema_version(fitted, tmp_path: Path) -> None:
    path = _tamper(fitted, tmp_path, lambda d: d.update(schema_version=SCHEMA_VERSION + 1))
    with pytest.raises(rb.SchemaError, match="upgrade rosenblatt"):
        rb.load(path)


def test_unknown_kind_and_format(fitted, tmp_path: Path) -> None:
    with pytest.raises(rb.SchemaError, match="unknown transform kind"):
        rb.load(_tamper(fitted, tmp_path, lambda d: d.update(kind="os.system")))
    with pytest.raises(rb.SchemaError, match="not a saved rosenblatt transform"):
        rb.load(_tamper(fitted, tmp_path, lambda d: d.pop("format")))


def test_not_json(tmp_path: Path) -> None:
    path = tmp_path / "t.json"
    path.write_bytes(b"\x80\x04\x95 pickle bytes")
    with pytest.raises(rb.SchemaError, match="not valid JSON"):
        rb.load(path)


def test_nan_in_file(tmp_path: Path) -> None:
    x, y = bivariate_normal(3000, seed=2)
    path = tmp_path / "t.json"
    rb.IRGI(2).fit(x, y).save(path)
    path.write_text(path.read_text().replace('"cdf":[[0.0', '"cdf":[[NaN', 1))
    with pytest.raises(rb.SchemaError, match="non-finite"):
        rb.load(path)


IRGI_TAMPERING = {
    "non-monotone y edges": lambda s: s["y_edges"][2].__setitem__(3, s["y_edges"][2][1] - 1),
    "cdf above one": lambda s: s["cdf"][1].__setitem__(4, 1.5),
    "non-monotone cdf": lambda s: s["cdf"][1].__setitem__(2, 0.99),
    "shape": lambda s: s["x_centres"].pop(),
    "depth": lambda s: s["params"].__setitem__("depth", 40),
    "string values": lambda s: s.__setitem__("cdf", "[[0, 1]]"),
    "unsorted centres": lambda s: s["x_centres"].reverse(),
    "missing key": lambda s: s.pop("cdf"),
}


@pytest.mark.parametrize("edit", IRGI_TAMPERING.values(), ids=IRGI_TAMPERING.keys())
def test_tampered_irgi(tmp_path: Path, edit) -> None:
    x, y = bivariate_normal(3000, seed=2)
    t = rb.IRGI(3).fit(x, y)
    with pytest.raises(rb.SchemaError):
        rb.load(_tamper(t, tmp_path, lambda d: edit(d["state"])))


def test_tampered_kde(tmp_path: Path) -> None:
    x, y = bivariate_normal(300, seed=2)
    t = rb.KDE(0.1).fit(x, y)
    with pytest.raises(rb.SchemaError, match="sigma_a"):
        rb.load(_tamper(t, tmp_path, lambda d: d["state"]["x"].__setitem__(0, 99.0)))
    with pytest.raises(rb.SchemaError, match="sigma_r"):
        rb.load(_tamper(t, tmp_path, lambda d: d["state"]["params"].__setitem__("sigma_r", -1)))


def test_unfitted_cannot_be_saved(tmp_path: Path) -> None:
    with pytest.raises(rb.NotFittedError):
        rb.IRGI(3).save(tmp_path / "t.json")


def test_a_module_named_outside_the_package_is_never_imported(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Only modules of rosenblatt itself are imported for a kind a file names: loading runs no code."""
    import sys

    path = tmp_path / "foreign.json"
    document = {
        "format": "rosenblatt-transform",
        "schema_version": SCHEMA_VERSION,
        "kind": "zen",
        "module": "this",
        "state": {},
    }
    path.write_text(json.dumps(document))
    was_loaded = "this" in sys.modules
    with pytest.raises(rb.SchemaError, match="unknown transform kind 'zen'"):
        rb.load(path)
    assert ("this" in sys.modules) == was_loaded
    assert capsys.readouterr().out == ""


def test_the_defining_module_is_written() -> None:
    x, y = bivariate_normal(500, seed=1)
    document = json.loads(rb.serialization.dumps(rb.IRGI(depth=2).fit(x, y)))
    assert document["module"] == "rosenblatt.transforms.irgi"


FITTED_ON = {
    "x": "m_jj",
    "y": "tagger_out",
    "weight": None,
    "treename": "nominal",
    "schema": "base",
    "jets": "FatJet",
    "files": [{"name": "a.root", "size": 10, "blake2b": "00ff"}],
    "n_events": 3000,
    "sum_weight": 3000.0,
}


def test_fitted_on_is_kept_by_save_and_load_and_dropped_by_a_new_fit(tmp_path: Path) -> None:
    x, y = bivariate_normal(3000, seed=2)
    t = rb.IRGI(3).fit(x, y)
    t.fitted_on_ = dict(FITTED_ON)
    t.save(tmp_path / "t.json")
    loaded = rb.load(tmp_path / "t.json")
    assert rb.serialization.fitted_on(loaded) == FITTED_ON
    assert rb.serialization.dumps(loaded) == (tmp_path / "t.json").read_text()
    loaded.fit(x, y)
    assert rb.serialization.fitted_on(loaded) is None
    assert "fitted_on" not in json.loads(rb.serialization.dumps(loaded))


def test_a_file_without_fitted_on_loads(fitted, tmp_path: Path) -> None:
    fitted.save(tmp_path / "t.json")
    assert "fitted_on" not in json.loads((tmp_path / "t.json").read_text())
    assert rb.serialization.fitted_on(rb.load(tmp_path / "t.json")) is None


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda b: b.update(x=3), r"fitted_on\.x must be str, got 3"),
        (lambda b: b.pop("treename"), "fitted_on lacks 'treename'"),
        (lambda b: b["files"][0].pop("blake2b"), r"fitted_on\.files\[0\] lacks 'blake2b'"),
        (lambda b: b.update(sum_weight=-1.0), "sum_weight must be finite and positive"),
        (lambda b: b.update(n_events=True), "n_events must be int"),
    ],
)
def test_a_malformed_fitted_on_is_refused(tmp_path: Path, edit, message: str) -> None:
    x, y = bivariate_normal(3000, seed=2)
    t = rb.IRGI(3).fit(x, y)
    t.fitted_on_ = json.loads(json.dumps(FITTED_ON))
    path = _tamper(t, tmp_path, lambda d: edit(d["fitted_on"]))
    with pytest.raises(rb.SchemaError, match=message):
        rb.load(path)
