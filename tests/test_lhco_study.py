"""The LHCO study end to end on a smoke-sized sample: generation to report."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import numpy as np
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
    "contamination.png",
    "strength_r50_jsd.png",
)
STATISTICS_KEYS = (
    "auc_err",
    "dcc_err",
    "r50_err",
    "eta_best_err",
    "closure_chi2_ndf",
    "closure_pvalue",
    "frac_closure_consistent_2sd",
    "frac_eta_significant_below_1e-2",
    "significance",
    "upper_limit",
)

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def study(tmp_path_factory: pytest.TempPathFactory, lhco_smoke_run: Path) -> Path:
    """The session's run of the study (conftest: results, run.log, data) and a second run."""
    folder = tmp_path_factory.mktemp("lhco")
    shutil.copytree(lhco_smoke_run / "results", folder / "results")
    shutil.copy2(lhco_smoke_run / "run.log", folder / "run.log")
    shutil.copytree(lhco_smoke_run / "data", folder / "data")
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(folder)
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


def test_each_step_reports_its_events_per_second(study: Path) -> None:
    log = (study / "run.log").read_text(encoding="utf-8")
    steps = (
        "generate",
        "features",
        "partition",
        "train",
        "decorrelate",
        "close",
        "strength",
        "passfail",
    )
    for step in (*steps, "peers"):
        line = rf"^step {step}: \d+ events in [\d.]+ s, [\d,.]+ events/s$"
        assert re.search(line, log, re.MULTILINE), step
    testing = json.loads((study / "results" / "summary.json").read_text())["sizes"]["testing"]
    n_testing = testing["background"] + testing["signal"]
    assert re.search(rf"^step close: {n_testing} events in ", log, re.MULTILINE)


def test_testing_sample_goes_through_the_analysis_processor(study: Path) -> None:
    """The closure comes from the processor's histograms, equal to the in-memory counts."""
    summary = json.loads((study / "results" / "summary.json").read_text())
    path = summary["processor_path"]
    assert path["events_in_abcd"] == summary["n_testing_after_mjj_cut"]
    assert set(path["max_count_difference"]) == {"baseline", "disco", "irgi", "kde"}
    assert max(path["max_count_difference"].values()) == 0
    selected = sum(
        counts["in ABCD"] + counts["x above x_max"] for counts in path["cutflow"].values()
    )
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


def test_statistics_in_summary_and_report(study: Path) -> None:
    """Every figure of merit has a bootstrap uncertainty; closure test and likelihood per classifier."""
    results = study / "results"
    summary = json.loads((results / "summary.json").read_text())
    report = (results / "report.md").read_text()
    # the report leads with the statistics
    assert report.index("## Results with their uncertainties") < report.index(
        "## The paper's claims"
    )
    assert "## Signal contamination of the defining sample" in report
    for name in ("baseline", "disco", "irgi", "kde"):
        entry = summary[name]
        for key in STATISTICS_KEYS:
            assert key in entry, (name, key)
        for key in ("auc_err", "dcc_err"):
            assert entry[key] > 0, (name, key)
        assert entry["frac_eta_significant_below_1e-2"] <= entry["frac_eta_below_1e-2"]
        if (
            entry["closure_pvalue"] is not None
        ):  # too few events for the test at smoke size is allowed
            assert 0 <= entry["closure_pvalue"] <= 1
            assert entry["closure_chi2_ndf"] >= 0
            assert 0 <= entry["frac_closure_consistent_2sd"] <= 1
            # IRGI's and KDE's closure replicas also refit the transform
            refitted = name in ("irgi", "kde")
            assert entry["closure_transform_refitted"] == refitted
            assert entry["closure_n_boot"] == 200
        assert entry["significance"] != entry["significance"] or entry["significance"] >= 0
        assert entry["upper_limit"] != entry["upper_limit"] or entry["upper_limit"] > 0
        assert entry["n_boot"] == 30
    assert summary["irgi"]["transform_refitted"]
    assert not summary["baseline"]["transform_refitted"]
    assert f"{summary['irgi']['auc']:.4f} ± {summary['irgi']['auc_err']:.4f}" in report
    assert "| grid fraction with background non-closure within 2σ of 0 |" in report
    assert set(summary["statistics_seconds"]) >= {
        "bootstrap",
        "closure_test",
        "likelihood",
        "contamination",
    }


def test_closure_replicas_continue_the_ensemble() -> None:
    """The closure test's transform replicas: the ensemble's, then the draws an ensemble of more replicas makes."""
    import rosenblatt as rb
    from rosenblatt.studies.lhco.statistics import _closure_replicas

    rng = np.random.default_rng(5)
    x, y = rng.uniform(2000.0, 4000.0, 3000), rng.uniform(0.0, 1.0, 3000)
    xt, yt = rng.uniform(2000.0, 4000.0, 500), rng.uniform(0.0, 1.0, 500)
    small = rb.bootstrap(rb.IRGI(depth=3), x, y, n=4, seed=2)
    large = rb.bootstrap(rb.IRGI(depth=3), x, y, n=9, seed=2)
    first = [r.transform(xt, yt) for r in small.replicas_]
    replicas = list(_closure_replicas(first, small, lambda: rb.IRGI(depth=3), 9, x, y, xt, yt))
    assert len(replicas) == 9
    for mine, theirs in zip(replicas, large.replicas_, strict=True):
        np.testing.assert_array_equal(mine, theirs.transform(xt, yt))


def test_pyhf_workspaces_written(study: Path) -> None:
    import warnings

    pyhf = pytest.importorskip("pyhf")
    summary = json.loads((study / "results" / "summary.json").read_text())
    written = [
        name for name in ("baseline", "disco", "irgi", "kde") if summary[name].get("workspace")
    ]
    assert written, "no workspace written"
    for name in written:
        path = study / "results" / f"workspace_{name}.json"
        assert summary[name]["workspace"] == path.name
        with warnings.catch_warnings():
            warnings.filterwarnings(
                "ignore",
                message="jsonschema.RefResolver is deprecated",
                category=DeprecationWarning,
            )
            workspace = pyhf.Workspace(json.loads(path.read_text()))
            model = workspace.model()
        assert model.config.poi_name == "mu"
        assert sorted(model.config.channels) == ["A", "B", "C", "D"]


def test_contamination_list(study: Path) -> None:
    summary = json.loads((study / "results" / "summary.json").read_text())
    rows = summary["contamination"]
    assert {(r["classifier"], r["fraction"]) for r in rows} == {
        (name, fraction) for name in ("irgi", "kde") for fraction in (0.0, 0.001, 0.01, 0.05, 0.1)
    }
    for row in rows:
        for key in ("fraction", "signal_bias", "signal_bias_err", "auc", "dcc"):
            assert key in row, key
        assert 0 <= row["auc"] <= 1
        assert row["dcc"] >= 0
    for name in ("irgi", "kde"):
        mine = sorted((r for r in rows if r["classifier"] == name), key=lambda r: r["fraction"])
        # nothing injected: the nominal transform
        assert mine[0]["n_injected"] == 0
        assert mine[0]["auc"] == pytest.approx(summary[name]["auc"])
        assert mine[0]["dcc"] == pytest.approx(summary[name]["dcc"])
        assert [r["n_injected"] for r in mine] == sorted(r["n_injected"] for r in mine)
        assert mine[-1]["n_injected"] == round(0.1 * summary["sizes"]["validation"]["background"])


def test_peers_in_summary_and_report(study: Path) -> None:
    """Raw, rarity, DDT, flow, IRGI, KDE, GridKDE and DisCo measured on the same testing events."""
    summary = json.loads((study / "results" / "summary.json").read_text())
    peers = summary["peers"]
    assert {"raw", "rarity", "ddt", "flow", "irgi", "kde", "grid_kde", "disco"} <= set(peers)
    for name, row in peers.items():
        assert row["dcc_floor"] > 0, name
        assert 0 < row["dcc_p_value"] <= 1, name
        assert 0 <= row["abcd"]["frac_eta_below_1e-2"] <= 1, name
        assert set(row["efficiency_spread"]) == {"0.1", "0.5", "0.9"}, name
        assert (row["fit_seconds"] > 0) == (name not in ("raw", "disco")), name
    # the chosen IRGI refitted on the same defining sample gives the study's own IRGI score
    assert peers["irgi"]["dcc"] == pytest.approx(summary["irgi"]["dcc"], rel=1e-9)
    assert peers["raw"]["auc"] == pytest.approx(summary["baseline"]["auc"], rel=1e-9)
    # the marginal CDF is a monotone map of the raw score: the same AUC
    assert peers["rarity"]["auc"] == pytest.approx(peers["raw"]["auc"], abs=1e-3)
    report = (study / "results" / "report.md").read_text()
    assert "## The decorrelation methods side by side" in report
    assert "(peers.png)" in report
    assert (study / "results" / "peers.png").is_file()
    assert "peers" in summary["step_seconds"]


def test_strength_scan_in_summary_and_report(study: Path) -> None:
    """p = 0 is the baseline, p = 1 the transform; decorrelation grows with p; a table and figure."""
    summary = json.loads((study / "results" / "summary.json").read_text())
    scan = summary["strength_scan"]
    assert scan["strengths"] == [0.0, 0.25, 0.5, 0.75, 0.9, 1.0]
    assert scan["closure_n_boot"] == 200
    base = summary["baseline"]
    for name in ("irgi", "kde"):
        points = scan["transforms"][name]
        assert [p["strength"] for p in points] == scan["strengths"]
        # F is a strictly increasing map of the raw score: p = 0 ranks as the baseline
        for key in ("auc", "r50", "inverse_jsd"):
            assert points[0][key] == pytest.approx(base[key], rel=1e-12), (name, key)
        # p = 1 is the transform's own score
        mine = summary[name]
        for key in ("auc", "r50", "inverse_jsd", "dcc", "eta_best", "frac_eta_below_1e-2"):
            assert points[-1][key] == pytest.approx(mine[key], rel=1e-9), (name, key)
        # 1/JSD rising with p is checked on a larger sample (test_lhco_strength.py): here 250
        # background events in 50 mass bins leave it to chance
        assert all(p["inverse_jsd"] >= 1 for p in points)
        for p in points:
            assert p["closes"] == (
                None if p["closure_pvalue"] is None else p["closure_pvalue"] >= 0.05
            )
    alphas = sorted({m["alpha"] for m in scan["models"]})
    assert alphas == [0.0, 1.0]
    assert len(scan["models"]) == len(summary["models"])
    report = (study / "results" / "report.md").read_text()
    assert "## The decorrelation strength" in report
    assert "| transform | strength p | AUC | dCor² | R50 | 1/JSD |" in report
    assert "strength" in summary["step_seconds"]


def test_abcd_count_and_passfail_fit_side_by_side(study: Path) -> None:
    """Every classifier's pass/fail fit in bins of m_jj at its ABCD cut's y0, beside the count."""
    results = study / "results"
    summary = json.loads((results / "summary.json").read_text())
    passfail = summary["passfail"]
    edges = np.asarray(passfail["edges"])
    assert edges[-1] == 4000.0
    assert np.all(np.diff(edges) > 0)
    assert passfail["level"] == 0.05
    assert set(passfail["classifiers"]) == {"baseline", "disco", "irgi", "kde"}
    for name, side in passfail["classifiers"].items():
        assert side["y0"] == summary[name]["y0"], name
        assert side["transfer_ratio"] > 0, name
        if side["significance"] is not None:
            assert side["significance"] >= 0, name
            assert side["upper_limit"] > 0, name
            assert side["upper_limit"] >= side["upper_limit_stat_only"] * (1 - 1e-6), name
        if side["workspace"] is not None:
            assert (results / side["workspace"]).is_file(), name
    report = (results / "report.md").read_text()
    assert "## ABCD count and pass/fail fit side by side" in report
    assert "| classifier | cut (x0 [GeV], y0) | ABCD Z | ABCD limit on μ |" in report
    assert "passfail" in summary["step_seconds"]


def test_the_summary_keeps_its_keys(study: Path) -> None:
    """summary.json is a public format: the key set recorded in tests/summary_keys.json."""
    from summary_keys import assert_same_keys

    summary = json.loads((study / "results" / "summary.json").read_text())
    assert_same_keys("lhco-smoke", summary)
