"""The LHCO study's decorrelation-strength scan on a synthetic testing sample (no generation).

A background whose score follows the dijet mass, a signal at high score: the
scan's ``p = 0`` has the raw score's R50 and 1/JSD, ``p = 1`` the transform's,
1/JSD rises with ``p``; the report's section and figure are drawn from it.
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import rosenblatt as rb
from rosenblatt.config import load_config
from rosenblatt.exceptions import ConfigError
from rosenblatt.studies.lhco.config import DEFAULT_STRENGTHS, LhcoConfig
from rosenblatt.studies.lhco.results import StatisticsSettings, TrainedModel
from rosenblatt.studies.lhco.strength import strength_scan


def _sample(n_bkg: int, n_sig: int, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    mjj = np.r_[2000 + rng.exponential(600, n_bkg), rng.normal(3500, 150, n_sig)]
    u = (mjj - 2000) / 2000
    raw = np.r_[
        1 / (1 + np.exp(-(1.5 * u[:n_bkg] - 1 + rng.normal(size=n_bkg)))),
        1 / (1 + np.exp(-(1.5 + rng.normal(size=n_sig)))),
    ]
    label = np.r_[np.zeros(n_bkg, int), np.ones(n_sig, int)]
    other = np.clip(raw + rng.normal(0, 0.05, len(raw)), 0, 1)
    return {"mjj": mjj, "label": label, "baseline_s0": raw, "disco_a1_s0": other}


@pytest.fixture(scope="module")
def scan() -> tuple[dict[str, Any], dict[str, np.ndarray], dict[str, np.ndarray]]:
    config = dict(load_config("lhco-smoke"))
    config["statistics"] = {"closure_n_boot": 30}
    cfg = LhcoConfig.parse(config)
    assert cfg.strengths == DEFAULT_STRENGTHS
    defining = _sample(6000, 0, 1)
    testing = _sample(8000, 800, 2)
    x_def, y_def = defining["mjj"], defining["baseline_s0"]
    mjj, raw = testing["mjj"], testing["baseline_s0"]
    scores = {
        "baseline": raw,
        "irgi": rb.IRGI(depth=4).fit(x_def, y_def).transform(mjj, raw),
        "kde": rb.KDE(sigma_r=0.1).fit(x_def, y_def).transform(mjj, raw),
    }
    models = [
        TrainedModel("baseline_s0", "baseline_s0", 0.0, {}),
        TrainedModel("disco_a1_s0", "disco_a1_s0", 1.0, {}),
    ]
    settings = StatisticsSettings.of(cfg)
    ensembles = {
        name: rb.bootstrap(make, x_def, y_def, n=settings.n_boot, seed=settings.seed)
        for name, make in (("irgi", rb.IRGI(depth=4)), ("kde", rb.KDE(sigma_r=0.1)))
    }
    result = strength_scan(cfg, testing, models, y_def, ensembles, scores)
    return dict(result), testing, scores


def test_the_ends_are_the_raw_score_and_the_transform(scan: Any) -> None:
    result, testing, scores = scan
    mjj, label = testing["mjj"], testing["label"]
    assert result["strengths"] == list(DEFAULT_STRENGTHS)
    assert result["closure_n_boot"] == 30
    for name in ("irgi", "kde"):
        points = result["transforms"][name]
        assert [p["strength"] for p in points] == list(DEFAULT_STRENGTHS)
        assert points[0]["r50"] == rb.background_rejection(label, scores["baseline"])
        assert points[0]["inverse_jsd"] == rb.inverse_jsd(mjj, label, scores["baseline"])
        assert points[0]["auc"] == rb.roc_auc(label, scores["baseline"])
        assert points[-1]["r50"] == rb.background_rejection(label, scores[name])
        assert points[-1]["inverse_jsd"] == rb.inverse_jsd(mjj, label, scores[name])
        jsd = [p["inverse_jsd"] for p in points]
        assert all(b > a for a, b in itertools.pairwise(jsd)), jsd
        assert jsd[-1] > 10 * jsd[0]
        for p in points:
            assert (p["closes"] is None) == (p["closure_pvalue"] is None)
            if p["closure_pvalue"] is not None:
                assert p["closes"] == (p["closure_pvalue"] >= 0.05)
    assert result["refits"] == {"irgi": 30, "kde": 30}
    model_r50 = {m["model"]: m["r50"] for m in result["models"]}
    assert model_r50["baseline_s0"] == result["transforms"]["irgi"][0]["r50"]
    assert {m["alpha"] for m in result["models"]} == {0.0, 1.0}


def test_report_section_and_figure(scan: Any, tmp_path: Path) -> None:
    from rosenblatt.studies.lhco.report import _strength_section
    from rosenblatt.studies.lhco.report_figures import _strength_figure

    result, _, _ = scan
    summary: Any = {"irgi": {"depth": 4}, "kde": {"sigma_r": 0.1}}
    text = _strength_section(summary, result)
    assert text.startswith("## The decorrelation strength")
    assert "| IRGI d=4 | 0 |" in text
    assert "| KDE σ_r=0.1 | 1 |" in text
    assert "| disco_a1_s0 | 1 |" in text
    assert _strength_figure(tmp_path, result) == "strength_r50_jsd.png"
    assert (tmp_path / "strength_r50_jsd.png").stat().st_size > 1000


@pytest.mark.parametrize("value", [[0.5, 0.25], [0.0, 1.5], [], "half", [0.0, float("nan")]])
def test_strengths_are_checked(value: Any) -> None:
    config = dict(load_config("lhco-smoke"))
    config["decorrelation_strengths"] = value
    with pytest.raises(ConfigError, match="decorrelation_strengths"):
        LhcoConfig.parse(config)


def test_the_closure_test_holds_the_refitted_score(scan: Any) -> None:
    """Each strength's closure test holds the fit of s_p: the same events with s_p held
    fixed (the testing sample's replicas alone) give a larger chi-square wherever s_p
    depends on the transform, and the transform's own test at p = 1 refits it as well."""
    result, testing, scores = scan
    config = dict(load_config("lhco-smoke"))
    config["statistics"] = {"closure_n_boot": 30}
    cfg = LhcoConfig.parse(config)
    settings = StatisticsSettings.of(cfg)
    mjj, label = testing["mjj"], testing["label"]
    keep = mjj < cfg.cuts.mjj_max
    for name in ("irgi", "kde"):
        refitted = result["transforms"][name][-1]
        held = rb.abcd.closure_test(
            mjj[keep],
            scores[name][keep],
            label[keep],
            x0=cfg.cuts.x0,
            y0=cfg.cuts.y0,
            n_boot=settings.closure_n_boot,
            seed=settings.seed,
            thin=settings.closure_thin,
        )
        assert refitted["closure_chi2_ndf"] < held.chi2_per_dof, name
        assert refitted["closure_pvalue"] > held.p_value, name
