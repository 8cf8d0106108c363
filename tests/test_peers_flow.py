"""The conditional normalizing flow (zuko) against the blob's exact conditional CDF.

A small flow trains for a few seconds on the paper's Gaussian blob; its
``gamma = Phi(z)`` is compared with the closed form, checked for the
invariants of a conditional CDF, and saved and loaded as JSON.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from gaussian_blob import bivariate_normal, exact_gamma

import rosenblatt as rb

pytest.importorskip("zuko")
from rosenblatt.ml import ConditionalFlow

SMALL = {
    "bins": 8,
    "transforms": 1,
    "hidden": (32, 32),
    "batch_size": 1024,
    "learning_rate": 1e-2,
    "max_epochs": 40,
    "patience": 5,
}


@pytest.fixture(scope="module")
def flow() -> ConditionalFlow:
    x, y = bivariate_normal(10_000, seed=51)
    return ConditionalFlow(**SMALL).fit(x, y)


def test_close_to_the_exact_cdf(flow: ConditionalFlow) -> None:
    xt, yt = bivariate_normal(20_000, seed=52)
    gamma = flow.transform(xt, yt)
    rms = np.sqrt(np.mean((gamma - exact_gamma(xt, yt)) ** 2))
    assert rms < 0.02
    # it decorrelates: far below dCor^2(x, y) = 0.30
    assert rb.distance_correlation_sqr(xt, gamma) < 3e-3
    history = flow.history_
    assert history["epochs"] <= SMALL["max_epochs"]
    assert 0 <= history["best_epoch"] < history["epochs"]
    assert min(history["validation_loss"]) == history["validation_loss"][history["best_epoch"]]


def test_unit_interval_and_monotone(flow: ConditionalFlow) -> None:
    y = np.linspace(-8, 8, 1601)
    for x0 in (-6.0, -1.5, 0.0, 2.0, 6.0):
        gamma = flow.transform(np.full_like(y, x0), y)
        assert gamma.min() >= 0
        assert gamma.max() <= 1
        assert np.all(np.diff(gamma) >= 0)
        assert gamma[0] == 0
        assert gamma[-1] == 1


def test_saved_and_loaded(flow: ConditionalFlow, tmp_path: Path) -> None:
    flow.save(tmp_path / "flow.json")
    loaded = rb.load(tmp_path / "flow.json")
    assert type(loaded) is ConditionalFlow
    xt, yt = bivariate_normal(3000, seed=53)
    np.testing.assert_array_equal(loaded.transform(xt, yt), flow.transform(xt, yt))
    text = (tmp_path / "flow.json").read_text()
    (tmp_path / "bad.json").write_text(text.replace('"x_scale":[', '"x_scale":[1.0,', 1))
    with pytest.raises(rb.SchemaError, match="x_scale"):
        rb.load(tmp_path / "bad.json")


def test_weights_change_the_fit() -> None:
    x, y = bivariate_normal(4000, seed=54)
    options = {**SMALL, "max_epochs": 3}
    plain = ConditionalFlow(**options).fit(x, y)
    # weights that favour high y shift the conditional CDF down
    weighted = ConditionalFlow(**options).fit(x, y, np.where(y > 0, 3.0, 1.0))
    probe = np.zeros(5), np.linspace(-1, 1, 5)
    assert np.all(weighted.transform(*probe) < plain.transform(*probe))


def test_bad_input() -> None:
    x, y = bivariate_normal(100, seed=55)
    with pytest.raises(rb.NotFittedError):
        ConditionalFlow().transform(x, y)
    with pytest.raises(ValueError, match="length"):
        ConditionalFlow().fit(x, y[:-1])
    bad = x.copy()
    bad[3] = np.nan
    with pytest.raises(ValueError, match="x"):
        ConditionalFlow().fit(bad, y)
    with pytest.raises(ValueError, match="constant"):
        ConditionalFlow().fit(x, np.zeros_like(y))
    with pytest.raises(ValueError, match="validation_fraction"):
        ConditionalFlow(validation_fraction=1.0).fit(x, y)
    with pytest.raises(ValueError, match="bins"):
        ConditionalFlow(bins=0).fit(x, y)
    with pytest.raises(ValueError, match="hidden"):
        ConditionalFlow(hidden=()).fit(x, y)


@pytest.mark.slow
def test_loaded_without_importing_the_flow_module(flow: ConditionalFlow, tmp_path: Path) -> None:
    """``rb.load`` imports the module of an optional kind when it reads one."""
    flow.save(tmp_path / "flow.json")
    code = (
        "import sys, rosenblatt as rb\n"
        "assert 'rosenblatt.ml.flow' not in sys.modules\n"
        f"t = rb.load({str(tmp_path / 'flow.json')!r})\n"
        "print(type(t).__name__, float(t.transform([0.0], [0.0])[0]))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.split()
    assert out[0] == "ConditionalFlow"
    assert float(out[1]) == pytest.approx(float(flow.transform([0.0], [0.0])[0]), abs=1e-12)
