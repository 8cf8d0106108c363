"""The shared evaluation of the decorrelation methods (studies/peers.py) on small exact cases."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from gaussian_blob import bivariate_normal, exact_gamma

import rosenblatt as rb
from rosenblatt.studies import peers


def test_efficiency_spread_of_an_independent_score_is_binomial() -> None:
    rng = np.random.default_rng(8)
    ratios = [
        peers.efficiency_spread(rng.normal(size=20_000), rng.uniform(size=20_000), 0.1)["ratio"]
        for _ in range(20)
    ]
    # sd / binomial expectation of 10 bins: a chi distribution with 9 dof over 3, mean about 0.97
    assert 0.8 < np.mean(ratios) < 1.15


def test_efficiency_spread_of_a_dependent_score() -> None:
    x, y = bivariate_normal(20_000, seed=9)
    spread = peers.efficiency_spread(x, y, 0.5)
    assert spread["range"] > 0.5
    assert spread["ratio"] > 20
    assert len(spread["per_bin"]) == 10
    # the exact conditional CDF is flat at every working point
    for eff in (0.1, 0.5, 0.9):
        assert peers.efficiency_spread(x, exact_gamma(x, y), eff)["ratio"] < 2


def test_evaluate_and_report(tmp_path: Path) -> None:
    x, y = bivariate_normal(5000, seed=10)
    xt, yt = bivariate_normal(4000, seed=11)
    label = np.r_[np.zeros(4000), np.ones(500)]
    xt, yt = np.r_[xt, np.full(500, 1.5)], np.r_[yt, np.full(500, 2.5)]
    makers = {
        "raw": None,
        "rarity": rb.Rarity,
        "ddt": lambda: rb.DDT(n_bins=5),
        "irgi": lambda: rb.IRGI(depth=4),
    }
    result = peers.evaluate(
        makers,
        defining=(x, y),
        testing=(xt, yt, label),
        exact=exact_gamma,
        scores={"given": exact_gamma(xt, yt)},
        abcd=lambda score: {"frac_eta_below_1e-2": float(np.mean(score > 0.5))},
        permutations=10,
    )
    assert list(result) == ["raw", "rarity", "ddt", "irgi", "given"]
    assert result["given"]["rms_exact"] is None
    assert result["raw"]["rms_exact"] is None
    assert result["irgi"]["rms_exact"] < 0.05 < result["rarity"]["rms_exact"]
    assert result["rarity"]["dcc"] > 100 * result["irgi"]["dcc"]
    assert result["raw"]["fit_seconds"] == 0
    assert result["irgi"]["fit_seconds"] > 0
    assert result["irgi"]["params"]["depth"] == 4
    assert result["irgi"]["auc"] == pytest.approx(
        rb.roc_auc(label, rb.IRGI(depth=4).fit(x, y).transform(xt, yt))
    )
    section = peers.section(result, tmp_path, "intro")
    assert section.count("\n| ") == 1 + len(result)
    assert "(peers.png)" in section
    assert (tmp_path / "peers.png").is_file()


def test_default_peers_follow_the_sample_size() -> None:
    makers = peers.default_peers(n_defining=1000)
    assert makers["raw"] is None
    ddt = makers["ddt"]
    assert ddt is not None
    made = ddt()
    assert isinstance(made, rb.DDT)
    assert made.n_bins == 5
    big = peers.default_peers(n_defining=10**6)["ddt"]
    assert big is not None
    assert big().n_bins == 20
