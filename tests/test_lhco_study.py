"""The LHCO study end to end on a smoke-sized sample: generation to report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rosenblatt.cli import main

pytest.importorskip("pythia8mc")
pytest.importorskip("torch")

FIGURES = (
    "dcc_auc_plane.png",
    "roc.png",
    "abcd_baseline.png",
    "abcd_disco.png",
    "abcd_irgi.png",
    "abcd_kde.png",
    "eta_vs_y0.png",
    "eta_histograms.png",
    "irgi_grid.png",
)


@pytest.fixture(scope="module")
def study(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("lhco")
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(folder)
        assert main(["run", "lhco-smoke", "--output", "results"]) == 0
        # a second run reuses the generated events, the features and the trained models
        assert main(["run", "lhco-smoke", "--output", "results-again"]) == 0
    return folder


def test_report_summary_and_figures(study: Path) -> None:
    results = study / "results"
    report = (results / "report.md").read_text()
    for name in FIGURES:
        assert (results / name).is_file(), name
        assert f"({name})" in report
    assert "## The paper's claims on this sample" in report
    summary = json.loads((results / "summary.json").read_text())
    for name in ("baseline", "disco", "irgi", "kde"):
        entry = summary[name]
        for key in (
            "auc",
            "dcc",
            "dcc_floor",
            "eta_best",
            "x0",
            "y0",
            "frac_eta_below_1e-2",
            "frac_eta_below_1e-3",
        ):
            assert key in entry, (name, key)
        assert 0 <= entry["auc"] <= 1
        assert 2000 <= entry["x0"] <= 3700
        assert 0.1 <= entry["y0"] <= 0.85
        closure = entry["closure_at_best"]
        assert closure["total_a"] >= closure["true_signal_a"] >= 0
    assert summary["depth"] in (1, 2, 3)
    assert summary["sigma_r"] in (0.05, 0.1)


def test_testing_sample_goes_through_the_analysis_processor(study: Path) -> None:
    """The closure comes from the processor's histograms, equal to the in-memory counts."""
    summary = json.loads((study / "results" / "summary.json").read_text())
    path = summary["processor_path"]
    assert path["events_in_abcd"] == summary["n_testing_after_mjj_cut"]
    assert set(path["max_count_difference"]) == {"baseline", "disco", "irgi", "kde"}
    assert max(path["max_count_difference"].values()) == 0
    selected = sum(counts["in ABCD"] + counts["x above x_max"] for counts in path["cutflow"].values())
    sizes = summary["sizes"]["testing"]
    assert selected == sizes["background"] + sizes["signal"]


def test_transforms_saved_and_loadable(study: Path) -> None:
    import rosenblatt as rb

    summary = json.loads((study / "results" / "summary.json").read_text())
    irgi = rb.load(study / "results" / "irgi.json")
    assert isinstance(irgi, rb.IRGI)
    assert irgi.depth == summary["depth"]
    assert isinstance(rb.load(study / "results" / "kde.json"), rb.KDE)


def test_rerun_reuses_cache_and_agrees(study: Path) -> None:
    first = json.loads((study / "results" / "summary.json").read_text())
    second = json.loads((study / "results-again" / "summary.json").read_text())
    for name in ("baseline", "disco", "irgi", "kde"):
        assert first[name]["auc"] == second[name]["auc"]
        assert first[name]["eta_best"] == second[name]["eta_best"]
    assert (study / "data" / "lhco-smoke" / "features.parquet").is_file()
