"""The peers of the Rosenblatt transform without torch: DDT and the marginal rarity transform.

Both are checked against exact answers on the paper's Gaussian blob: the
rarity transform is the marginal normal CDF of ``y`` (and keeps the dependence
on ``x``); the DDT keeps its working point's background efficiency in every
``x`` bin within twice the binomial expectation, and not the other working
points.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from gaussian_blob import RHO, bivariate_normal
from scipy.stats import norm

import rosenblatt as rb
from rosenblatt.transforms._base import transform_classes


def bin_efficiencies(x: np.ndarray, passed: np.ndarray, n_bins: int = 10) -> np.ndarray:
    """Share of events passing in ``n_bins`` equal-occupancy bins of ``x``."""
    edges = np.quantile(x, np.linspace(0, 1, n_bins + 1))
    which = np.clip(np.searchsorted(edges, x, side="right") - 1, 0, n_bins - 1)
    return np.array([passed[which == b].mean() for b in range(n_bins)])


@pytest.fixture(scope="module")
def blob() -> tuple[np.ndarray, ...]:
    x, y = bivariate_normal(100_000, seed=41)
    xt, yt = bivariate_normal(50_000, seed=42)
    return x, y, xt, yt


def test_registered_kinds() -> None:
    kinds = transform_classes()
    assert kinds["ddt"] is rb.DDT
    assert kinds["rarity"] is rb.Rarity


def test_rarity_is_the_marginal_cdf(blob: tuple[np.ndarray, ...]) -> None:
    x, y, xt, yt = blob
    gamma = rb.Rarity().fit(x, y).transform(xt, yt)
    # y is marginally standard normal: the rarity is Phi(y), whatever x is
    assert np.sqrt(np.mean((gamma - norm.cdf(yt)) ** 2)) < 0.004
    # a monotone map of y alone keeps the dependence on x
    assert rb.distance_correlation_sqr(xt[:20_000], gamma[:20_000]) > 0.25


def test_rarity_weights_act_as_counts() -> None:
    rng = np.random.default_rng(5)
    x, y = rng.normal(size=300), rng.normal(size=300)
    counts = rng.integers(1, 4, size=300)
    weighted = rb.Rarity().fit(x, y, counts)
    repeated = rb.Rarity().fit(np.repeat(x, counts), np.repeat(y, counts))
    probe = np.linspace(-3, 3, 101)
    np.testing.assert_allclose(
        weighted.transform(probe * 0, probe), repeated.transform(probe * 0, probe), atol=1e-12
    )


def test_ddt_flattens_its_working_point(blob: tuple[np.ndarray, ...]) -> None:
    x, y, xt, yt = blob
    ddt = rb.DDT(efficiency=0.1, n_bins=20).fit(x, y)
    gamma = ddt.transform(xt, yt)
    n_per_bin = len(xt) / 10
    eff = bin_efficiencies(xt, gamma > ddt.cuts_[0])
    # binomial spread of the testing bins, and the defining sample's quantile error per DDT bin
    expected = np.sqrt(0.1 * 0.9 * (1 / n_per_bin + 1 / (len(x) / 20)))
    assert abs(eff.mean() - 0.1) < 3 * np.sqrt(0.09 / len(xt)) + 0.003
    assert eff.std(ddof=1) < 2 * expected
    # the same cut on y keeps from ~0 to ~50% across x: the DDT is what flattens it
    raw = bin_efficiencies(xt, yt > np.quantile(y, 0.9))
    assert raw.max() - raw.min() > 0.3


def test_ddt_leaves_other_working_points(blob: tuple[np.ndarray, ...]) -> None:
    x, y, xt, yt = blob
    wide = rb.DDT(efficiency=0.1).fit(x, 0.6 * x + np.exp(0.5 * x) * (y - RHO * x))
    ddt_gamma = wide.transform(xt, 0.6 * xt + np.exp(0.5 * xt) * (yt - RHO * xt))
    # a score whose width grows with x: the 50% point is not flat after a shift at 10%
    eff50 = bin_efficiencies(xt, ddt_gamma > np.quantile(ddt_gamma, 0.5))
    assert eff50.max() - eff50.min() > 0.1


def test_ddt_several_working_points(blob: tuple[np.ndarray, ...]) -> None:
    x, y, xt, yt = blob
    ddt = rb.DDT(efficiency=[0.5, 0.1, 0.9]).fit(x, y)
    np.testing.assert_allclose(ddt.efficiencies_, [0.9, 0.5, 0.1])
    np.testing.assert_allclose(ddt.cuts_, [0.1, 0.5, 0.9], atol=0.01)
    gamma = ddt.transform(xt, yt)
    expected = np.sqrt(0.25 * (1 / 5000 + 1 / 5000))
    for eff, cut in zip(ddt.efficiencies_, ddt.cuts_, strict=True):
        assert bin_efficiencies(xt, gamma > cut).std(ddof=1) < 2 * expected, eff
    # the DDT score's cut r_j is the cut y > q_j(x)
    q = ddt.quantile(xt)
    s = ddt.score(xt, yt)
    for j, r in enumerate(ddt.references_):
        np.testing.assert_array_equal(s > r, yt > q[:, j])


@pytest.mark.parametrize("make", [lambda: rb.DDT(efficiency=[0.1, 0.5]), rb.Rarity])
def test_gamma_in_unit_interval_and_monotone(make: type, blob: tuple[np.ndarray, ...]) -> None:
    x, y, _, _ = blob
    t = make().fit(x[:20_000], y[:20_000])
    grid_y = np.linspace(-7, 7, 801)
    for x0 in (-6.0, -2.0, 0.0, 1.3, 6.0):
        gamma = t.transform(np.full_like(grid_y, x0), grid_y)
        assert gamma.min() >= 0
        assert gamma.max() <= 1
        assert np.all(np.diff(gamma) >= 0)
        assert gamma[0] == 0
        assert gamma[-1] == 1


@pytest.mark.parametrize("make", [lambda: rb.DDT(efficiency=[0.2, 0.7], n_bins=8), rb.Rarity])
def test_saved_and_loaded(make: type, tmp_path: Path) -> None:
    x, y = bivariate_normal(5000, seed=3)
    t = make().fit(x, y)
    t.save(tmp_path / "t.json")
    loaded = rb.load(tmp_path / "t.json")
    assert type(loaded) is type(t)
    xt, yt = bivariate_normal(2000, seed=4)
    np.testing.assert_array_equal(loaded.transform(xt, yt), t.transform(xt, yt))
    text = (tmp_path / "t.json").read_text()
    (tmp_path / "bad.json").write_text(text.replace('"levels":[', '"levels":[2.0,', 1))
    with pytest.raises(rb.SchemaError):
        rb.load(tmp_path / "bad.json")


@pytest.mark.parametrize("make", [rb.DDT, rb.Rarity])
def test_bad_input(make: type) -> None:
    x, y = bivariate_normal(5000, seed=6)
    with pytest.raises(rb.NotFittedError):
        make().transform(x, y)
    with pytest.raises(ValueError, match="length"):
        make().fit(x, y[:-1])
    bad = y.copy()
    bad[7] = np.nan
    with pytest.raises(ValueError, match="y"):
        make().fit(x, bad)
    with pytest.raises(ValueError, match="empty"):
        make().fit(x[:0], y[:0])
    with pytest.raises(ValueError, match="constant"):
        make().fit(x, np.ones_like(y))


def test_ddt_bad_parameters() -> None:
    x, y = bivariate_normal(5000, seed=7)
    for efficiency in (0.0, 1.0, [0.1, 0.1], [], 1.5):
        with pytest.raises(ValueError, match="efficiency"):
            rb.DDT(efficiency=efficiency).fit(x, y)
    with pytest.raises(ValueError, match="n_bins"):
        rb.DDT(n_bins=0).fit(x, y)
    with pytest.raises(ValueError, match="fewer bins"):
        rb.DDT(efficiency=0.01, n_bins=50).fit(x, y)


def test_ddt_weights_act_as_counts() -> None:
    rng = np.random.default_rng(12)
    x, y = bivariate_normal(3000, seed=12)
    counts = rng.integers(1, 4, size=3000)
    weighted = rb.DDT(efficiency=[0.2, 0.6], n_bins=6).fit(x, y, counts)
    repeated = rb.DDT(efficiency=[0.2, 0.6], n_bins=6).fit(
        np.repeat(x, counts), np.repeat(y, counts)
    )
    np.testing.assert_allclose(weighted.quantiles_, repeated.quantiles_, atol=1e-9)
    xt, yt = bivariate_normal(2000, seed=13)
    np.testing.assert_allclose(weighted.transform(xt, yt), repeated.transform(xt, yt), atol=1e-9)
