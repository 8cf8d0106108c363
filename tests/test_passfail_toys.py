"""The pass/fail pseudo-experiments (``study: passfail-toys``), end to end at a small size."""

from __future__ import annotations

import dataclasses
import json
import logging
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

pytest.importorskip("matplotlib")

from rosenblatt.cli import main
from rosenblatt.exceptions import ConfigError
from rosenblatt.studies.passfail_toys.config import PassfailToysConfig
from rosenblatt.studies.passfail_toys.spectra import expected_spectra, scan_masses
from rosenblatt.studies.passfail_toys.summary import COVERAGE_TARGET

SMALL: dict[str, Any] = {
    "study": "passfail-toys",
    "n_toys": 6,
    "transforms": [{"kind": "irgi", "depth": 3}],
    "n_defining": 5000,
    "population": {"background": 20000},
    "spectrum": {
        "bins": 10,
        "masses": [0.3, 0.6],
        "strengths": [0, 1],
        "resolution": 0.04,
        "scan": [0.2, 0.8, 0.1],
        "global_toys": 20,
    },
}


def _config(**changes: Any) -> PassfailToysConfig:
    return PassfailToysConfig.parse({**SMALL, **changes, "_path": "passfail-toys-test.yaml"})


def test_the_study_writes_its_tables_and_reuses_its_toys(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    config = {**SMALL, "data": {"folder": str(tmp_path / "cache")}}
    path = tmp_path / "passfail-toys-test.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    out = tmp_path / "results"
    assert main(["run", str(path), "--output", str(out)]) == 0
    summary = json.loads((out / "summary.json").read_text())
    from summary_keys import assert_same_keys

    assert_same_keys("passfail-toys-test", summary)
    assert [s["name"] for s in summary["scores"]] == ["exact", "irgi", "score"]
    for score in summary["scores"]:
        assert [(f["mass"], f["strength"]) for f in score["fits"]] == [
            (0.3, 0.0),
            (0.3, 1.0),
            (0.6, 0.0),
            (0.6, 1.0),
        ]
        assert all(f["n"] == 6 for f in score["fits"])
        assert score["background_only"]["n"] == 6
    assert len(summary["claims"]) == 7
    report = (out / "report.md").read_text()
    assert "| mass | mu | exact CDF: bias |" in report
    assert (out / "table.md").read_text() in report
    assert (out / "bias-coverage.png").is_file()
    assert sorted(p.name for p in (tmp_path / "cache").iterdir()) == [
        "exact.json",
        "irgi.json",
        "score.json",
    ]
    # a rerun reads the toys; a changed spectrum computes them again
    with caplog.at_level(logging.INFO, logger="rosenblatt.passfail_toys"):
        assert main(["run", str(path), "--output", str(out)]) == 0
    assert sum("6 toys read from" in m for m in caplog.messages) == 3
    assert json.loads((out / "summary.json").read_text())["scores"] == summary["scores"]
    changed = {**config, "spectrum": {**SMALL["spectrum"], "signal_yield": 300}}
    path.write_text(yaml.safe_dump(changed), encoding="utf-8")
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="rosenblatt.passfail_toys"):
        assert main(["run", str(path), "--output", str(out)]) == 0
    assert not any("toys read from" in m for m in caplog.messages)


def test_the_cuts_pass_the_same_background_and_only_the_raw_score_sculpts() -> None:
    cfg = _config()
    exact = expected_spectra(cfg, "exact", None, 0)
    raw = expected_spectra(cfg, "score", None, 0)
    fitted = expected_spectra(cfg, "irgi", cfg.transforms[0], 0)
    for spectra in (exact, raw, fitted):
        total = spectra.background_pass.sum() + spectra.background_fail.sum()
        assert total == pytest.approx(20000, rel=1e-9)
    exact_fraction = exact.background_pass / (exact.background_pass + exact.background_fail)
    np.testing.assert_allclose(exact_fraction, 0.1, rtol=1e-9)
    assert raw.background_pass.sum() == pytest.approx(exact.background_pass.sum(), rel=1e-6)
    raw_fraction = raw.background_pass / (raw.background_pass + raw.background_fail)
    assert np.all(np.diff(raw_fraction) > 0)
    assert raw_fraction[-1] > 3 * raw_fraction[0]
    fitted_fraction = fitted.background_pass / (fitted.background_pass + fitted.background_fail)
    # a coarse IRGI (depth 3, 5,000 defining events) sculpts far less than the raw score
    assert np.max(np.abs(fitted_fraction - 0.1)) < 0.25 * np.max(np.abs(raw_fraction - 0.1))
    assert set(np.round(cfg.spectrum.masses, 10)) <= set(scan_masses(cfg))


def test_with_keyed_replicas_the_fit_takes_the_bootstrap_nonclosure(tmp_path: Path) -> None:
    """Each toy's transform fitted with keyed replicas; its fits beside the compared ones."""
    config = {
        **SMALL,
        "n_toys": 3,
        "exact": False,
        "raw_score": False,
        "n_boot": 4,
        "spectrum": {**SMALL["spectrum"], "global_toys": 0},
        "data": {"folder": str(tmp_path / "cache")},
    }
    cfg = PassfailToysConfig.parse({**config, "_path": "passfail-toys-test.yaml"})
    spectra = expected_spectra(cfg, "irgi", cfg.transforms[0], 0)
    keyed, statistical = spectra.nonclosure["keyed bootstrap"], spectra.nonclosure["statistical"]
    assert keyed.shape == statistical.shape == (10,)
    assert np.all(keyed > 0)
    assert not np.allclose(keyed, statistical)
    # the same defining sample and fit as without replicas
    plain = expected_spectra(dataclasses.replace(cfg, n_boot=0), "irgi", cfg.transforms[0], 0)
    np.testing.assert_allclose(spectra.background_pass, plain.background_pass, rtol=1e-12)
    assert plain.nonclosure == {}
    path = tmp_path / "passfail-toys-keyed.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    out = tmp_path / "results"
    assert main(["run", str(path), "--output", str(out)]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["n_boot"] == 4
    assert [(s["name"], s["nonclosure"]) for s in summary["scores"]] == [
        ("irgi", "keyed bootstrap"),
        ("irgi, statistical non-closure only", "statistical"),
        ("irgi, no non-closure", "none"),
    ]
    fitted, _, without = summary["scores"]
    assert all(s["background_only"] is None for s in summary["scores"])
    # the non-closure widens the interval of mu
    assert all(
        a["half_width"] > b["half_width"]
        for a, b in zip(fitted["fits"], without["fits"], strict=True)
    )
    # the compared fits claim nothing
    assert len(summary["claims"]) == 2
    assert "irgi, no non-closure: bias" in (out / "table.md").read_text()


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"spectrum": {"strengths": [1, 2]}}, "must hold 0"),
        ({"spectrum": {"masses": [0.3, 1.2]}}, "inside"),
        ({"exact": False, "transforms": [], "raw_score": False}, "no score left"),
        ({"transforms": [{"kind": "irgi", "name": "score"}]}, "not 'score'"),
    ],
)
def test_a_bad_configuration_is_refused(changes: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        _config(**changes)


@pytest.mark.slow
def test_the_exact_cut_covers_and_the_raw_score_is_biased(tmp_path: Path) -> None:
    """100 toys: the exact CDF's 68% interval covers, the raw score's fit is biased."""
    config = {
        **SMALL,
        "n_toys": 100,
        "transforms": [],
        "population": {"background": 50000},
        "spectrum": {**SMALL["spectrum"], "bins": 20, "resolution": 0.02, "global_toys": 200},
        "data": {"folder": str(tmp_path / "cache")},
    }
    path = tmp_path / "passfail-toys-slow.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    assert main(["run", str(path), "--output", str(tmp_path / "out")]) == 0
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    exact, raw = summary["scores"]
    for fit in exact["fits"]:
        # 100 toys: the binomial error of the coverage is 4.7%
        assert abs(fit["coverage"] - COVERAGE_TARGET) < 0.15, fit
        assert abs(fit["bias"]) < 4 * fit["bias_error"], fit
    assert max(abs(f["bias"]) / f["bias_error"] for f in raw["fits"]) > 10
    assert exact["background_only"]["ks_pvalue"] > 1e-3
    assert raw["background_only"]["ks_pvalue"] < 1e-6


def test_the_kept_toys_are_reused_only_by_the_same_version_and_code(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rosenblatt._records import source_digest
    from rosenblatt.studies.passfail_toys import study

    assert study.code_digest() == source_digest(*study.PASSFAIL_TOY_SOURCES)
    cfg = _config(n_toys=3, spectrum={**SMALL["spectrum"], "global_toys": 0})
    transform = cfg.transforms[0]
    ran: list[int] = []

    def counted(cfg: PassfailToysConfig, spectra: list[Any], toys: list[int]) -> list[Any]:
        ran.extend(toys)
        return [{"toy": toy} for toy in toys]

    monkeypatch.setattr(study, "expected_spectra", lambda *args: None)
    monkeypatch.setattr(study, "pseudo_experiments", counted)
    first, _ = study._score(cfg, "irgi", transform, tmp_path)
    assert ran == [0, 1, 2]
    # nothing changed: every toy is read back
    ran.clear()
    assert study._score(cfg, "irgi", transform, tmp_path)[0] == first
    assert ran == []
    # another source digest, then another version: computed again each time
    monkeypatch.setattr(study, "code_digest", lambda: "another source")
    study._score(cfg, "irgi", transform, tmp_path)
    assert ran == [0, 1, 2]
    ran.clear()
    monkeypatch.setattr(study, "__version__", "0.0.0+other")
    study._score(cfg, "irgi", transform, tmp_path)
    assert ran == [0, 1, 2]
