"""The Gaussian-blob study end to end through the command line, on a small sample."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from rosenblatt.cli import main

pytestmark = pytest.mark.slow

SMOKE = {
    "study": "blobs",
    "name": "blobs-smoke",
    "seed": 1,
    "background": {"rho": 0.6, "n_defining": 8192, "n_testing": 8000},
    "signal": {
        "mean": [1.5, 2.5],
        "cov": [[0.25, -0.1], [-0.1, 0.25]],
        "n_defining": 2000,
        "n_testing": 2000,
    },
    "n_subsamples": 2,
    "permutations": 20,
    "irgi": {"depths": [1, 2, 3, 4, 5, 6]},
    "kde": {"sigma_r": {"min": 0.02, "max": 1.0, "n": 4}},
    "figures": {"grid_depths": [3], "kde_sigmas": [0.1]},
}


@pytest.fixture(scope="module")
def study(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("blobs")
    config = folder / "blobs-smoke.yaml"
    config.write_text(yaml.safe_dump(SMOKE))
    assert main(["run", str(config), "--output", str(folder / "out")]) == 0
    return folder / "out"


def test_outputs_written(study: Path) -> None:
    for name in (
        "summary.json",
        "report.md",
        "samples.png",
        "irgi_d3.png",
        "dcc_vs_depth.png",
        "dcc_vs_sigma_r.png",
    ):
        assert (study / name).is_file(), name
    report = (study / "report.md").read_text()
    for figure in ("irgi_d3.png", "dcc_vs_depth.png", "dcc_vs_sigma_r.png"):
        assert f"({figure})" in report


def test_summary_numbers(study: Path) -> None:
    summary = json.loads((study / "summary.json").read_text())
    assert len(summary["dcc_xy"]) == 2
    assert all(0.25 < v < 0.35 for v in summary["dcc_xy"])
    for name in ("irgi", "kde"):
        for sub in summary[name]["subsamples"]:
            assert sub["dcc_best"] < 0.01
            assert 0 < sub["p_value"] <= 1
            assert sub["dcc_floor"] > 0
    # decorrelation costs some separation but keeps a classifier
    assert 0.8 < summary["auc"]["irgi"] < summary["auc"]["y"]
    # the IRGI error against the exact conditional CDF falls with depth
    rms = summary["irgi"]["rms_exact"]
    assert rms[0] > rms[2] > rms[4]
    assert summary["claims"][0]["held"] is True


def test_peers(study: Path) -> None:
    """Every method of the comparison, measured in the same run, with the numbers that tell them apart."""
    peers = json.loads((study / "summary.json").read_text())["peers"]
    assert list(peers) == ["raw", "rarity", "ddt", "flow", "irgi", "kde", "grid_kde"]
    for name in ("flow", "irgi", "kde", "grid_kde"):
        assert peers[name]["rms_exact"] < 0.05, name
        assert peers[name]["dcc"] < 0.01, name
        assert peers[name]["fit_seconds"] > 0
    # the marginal CDF keeps the dependence on x; the raw score is not a CDF at all
    assert peers["rarity"]["dcc"] > 0.2
    assert peers["rarity"]["rms_exact"] > 0.1
    assert peers["raw"]["rms_exact"] is None
    # the DDT flattens its working point; the raw score's efficiency runs with x
    assert peers["ddt"]["efficiency_spread"]["0.1"]["ratio"] < 3
    assert peers["raw"]["efficiency_spread"]["0.1"]["ratio"] > 10
    assert peers["flow"]["params"]["epochs"] >= 1
    report = (study / "report.md").read_text()
    assert "side by side" in report
    assert "(peers.png)" in report
    assert (study / "peers.png").is_file()


def test_the_summary_keeps_its_keys(study: Path) -> None:
    """summary.json is a public format: the key set recorded in tests/summary_keys.json."""
    from summary_keys import assert_same_keys

    assert_same_keys("blobs-smoke", json.loads((study / "summary.json").read_text()))
