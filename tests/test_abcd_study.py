"""The ABCD analysis over file sets (``study: abcd``): processors, fits in the workers, outputs."""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path
from typing import Any

import hist
import numpy as np
import pytest
import uproot
from kept_log import kept_log

import rosenblatt as rb
from rosenblatt.abcd import closure_scan, cut_axes
from rosenblatt.studies import run_study

pytestmark = pytest.mark.slow

X0 = [2200.0, 2600.0, 3000.0, 3400.0]
Y0_LEVELS = [0.2, 0.5, 0.8]


@pytest.fixture(scope="module")
def event_files(abcd_event_files: dict[str, Path]) -> dict[str, Path]:
    """Generated events (conftest): a defining QCD file (400 events), an analysed QCD file
    (200) and a W' file (60)."""
    return abcd_event_files


def study_config(files: dict[str, Path], data: Path, **changes: Any) -> dict[str, Any]:
    config: dict[str, Any] = {
        "study": "abcd",
        "name": "abcd-test",
        "data": {"folder": str(data)},
        "defining": {"qcd-defining": [str(files["defining"])]},
        "fileset": {"qcd": [str(files["qcd"])], "wprime": [str(files["wprime"])]},
        "score": {"column": "mj1"},
        "transforms": [
            # by summed weight, a fixed depth is fitted in the workers (by events, gathered)
            {"kind": "irgi", "depth": 2, "occupancy": "weight"},
            {"kind": "gridkde", "sigma_r": 0.3, "degree": 1},
            {"kind": "kde", "sigma_r": 0.2},
        ],
        "abcd": {"x": "mjj", "x0": X0, "y0": Y0_LEVELS, "x_max": 4500.0},
        "executor": {"kind": "iterative", "chunksize": 70},
    }
    config.update(changes)
    return config


@pytest.fixture(scope="module")
def iterative_run(event_files: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The study's results on the iterative executor; its log in ``run.log`` beside them."""
    folder = tmp_path_factory.mktemp("abcd-iterative")
    with kept_log(folder / "run.log"):
        run_study(study_config(event_files, folder / "data"), folder / "results")
    return folder / "results"


def test_each_pass_logs_its_events_per_second(iterative_run: Path) -> None:
    """The passes over files (score, analyse) say how many events they read, and how fast."""
    log = (iterative_run.parent / "run.log").read_text(encoding="utf-8")
    rates = re.findall(r"step (\w[\w ]*): (\d+) events in [\d.]+ s, [\d,.e+]+ events/s", log)
    assert rates == [("score", "400"), ("analyse", "260")]  # defining; qcd and wprime


def in_memory_table(files: list[Path]) -> Any:
    from rosenblatt.processors.runner import run_dijet

    return run_dijet([str(p) for p in files], progress=False)["table"]


def test_outputs_are_written(iterative_run: Path) -> None:
    for name in (
        "abcd.root",
        "histograms.json",
        "closure.json",
        "cutflow.json",
        "report.md",
        "summary.json",
    ):
        assert (iterative_run / name).is_file(), name
    for name in ("irgi", "gridkde", "kde"):
        assert isinstance(
            rb.load(iterative_run / f"{name}.json"), rb.transforms.ConditionalCDFTransform
        )
    summary = json.loads((iterative_run / "summary.json").read_text())
    assert summary["transforms"]["irgi"].startswith("workers")
    assert summary["transforms"]["gridkde"].startswith("workers")
    assert summary["transforms"]["kde"].startswith("driver")
    report = (iterative_run / "report.md").read_text()
    assert "## Closure over the cut grid" in report


def test_bootstrap_ensembles_and_workspaces(iterative_run: Path) -> None:
    """Each transform's ensemble (nominal = the fitted transform) and each variant's pyhf workspace."""
    summary = json.loads((iterative_run / "summary.json").read_text())
    rng = np.random.default_rng(0)
    x, y = rng.uniform(2000.0, 4500.0, 500), rng.uniform(0.0, 400.0, 500)
    for name in ("irgi", "gridkde", "kde"):
        assert summary["ensembles"][name] == f"{name}_ensemble.json"
        ensemble = rb.load(iterative_run / f"{name}_ensemble.json")
        assert isinstance(ensemble, rb.TransformEnsemble)
        assert len(ensemble.replicas_) == 20  # statistics.n_boot's default
        fitted = rb.load(iterative_run / f"{name}.json")
        np.testing.assert_allclose(
            ensemble.transform(x, y), fitted.transform(x, y), rtol=0, atol=1e-12
        )
        assert np.all(ensemble.std(x, y) >= 0)
        assert np.any(ensemble.std(x, y) > 0)
    assert "## Bootstrap ensembles of the transforms" in (iterative_run / "report.md").read_text()
    pyhf = pytest.importorskip("pyhf")
    import warnings

    with uproot.open(iterative_run / "abcd.root") as handle:
        for variant in ("score", "irgi", "gridkde", "kde"):
            result = summary["likelihood"][variant]
            assert result["workspace"] == f"workspace_{variant}.json"
            with warnings.catch_warnings():
                warnings.filterwarnings(
                    "ignore", message="jsonschema.RefResolver", category=DeprecationWarning
                )
                workspace = pyhf.Workspace(
                    json.loads((iterative_run / result["workspace"]).read_text())
                )
                model = workspace.model()
            # the observations are the QCD counts in A, B, C, D at the variant's best cut
            stored = handle[f"qcd_{variant}"]
            i = int(np.flatnonzero(stored.axis(0).edges() == result["x0"])[0])
            j = int(np.flatnonzero(stored.axis(1).edges() == result["y0"])[0])
            counts = stored.values(flow=True)
            regions = [
                counts[i + 1 :, j + 1 :],
                counts[i + 1 :, : j + 1],
                counts[: i + 1, j + 1 :],
                counts[: i + 1, : j + 1],
            ]
            assert [
                float(v) for v in workspace.data(model, include_auxdata=False)
            ] == pytest.approx([float(r.sum()) for r in regions])
            assert result["significance"] != result["significance"] or result["significance"] >= 0


def test_root_counts_equal_in_memory_scoring(
    iterative_run: Path, event_files: dict[str, Path]
) -> None:
    """Every TH2D equals the counts of the same events scored in memory and transformed."""
    table = in_memory_table([event_files["qcd"], event_files["wprime"]])
    mjj = np.asarray(table["mjj"], dtype=float)
    score = np.asarray(table["mj1"], dtype=float)
    weight = np.asarray(table["weight"], dtype=float)
    dataset = np.asarray(table["dataset"], dtype=str)
    keep = mjj < 4500.0
    with uproot.open(iterative_run / "abcd.root") as handle:
        names = sorted(handle.keys(cycle=False))
        assert names == sorted(
            f"{d}_{v}" for d in ("qcd", "wprime") for v in ("gridkde", "irgi", "kde", "score")
        )
        for variant in ("score", "irgi", "gridkde", "kde"):
            stored = handle[f"qcd_{variant}"]
            y_edges = stored.axis(1).edges()
            if variant == "score":
                values = score
            else:
                values = rb.load(iterative_run / f"{variant}.json").transform(mjj, score)
                assert np.allclose(y_edges, Y0_LEVELS)
            assert np.allclose(stored.axis(0).edges(), X0)
            for name in ("qcd", "wprime"):
                rows = keep & (dataset == name)
                expected = hist.Hist(*cut_axes(X0, y_edges), storage=hist.storage.Weight())
                expected.fill(x=mjj[rows], y=values[rows], weight=weight[rows])
                got = handle[f"{name}_{variant}"]
                assert np.array_equal(got.values(flow=True), expected.view(flow=True).value), (
                    name,
                    variant,
                )
                assert np.array_equal(got.variances(flow=True), expected.view(flow=True).variance)


def test_cutflow_accounts_for_every_event(
    iterative_run: Path, event_files: dict[str, Path]
) -> None:
    cutflow = json.loads((iterative_run / "cutflow.json").read_text())
    for dataset, path in (("qcd", event_files["qcd"]), ("wprime", event_files["wprime"])):
        counts = cutflow["fileset"][dataset]
        with uproot.open(path) as handle:
            assert counts["read"] == handle["Events"].num_entries
        assert counts["read"] == sum(v for k, v in counts.items() if k != "read")
        # weighted: the same steps in sums of the events' weights (unit here)
        weighted = cutflow["weighted"]["fileset"][dataset]
        assert weighted == {step: pytest.approx(float(n)) for step, n in counts.items()}
    assert set(cutflow["weighted"]["defining"]) == set(cutflow["defining"])
    assert cutflow["skipped_files"] == {}


def test_closure_comes_from_the_merged_histograms(iterative_run: Path) -> None:
    closure = json.loads((iterative_run / "closure.json").read_text())
    histograms = json.loads((iterative_run / "histograms.json").read_text())
    import uhi.io.json
    from hist import serialization

    for variant in ("score", "irgi"):
        h = serialization.from_uhi(
            json.loads(json.dumps(histograms["abcd"][variant]), object_hook=uhi.io.json.object_hook)
        )
        scan = closure_scan(hist.Hist(h)[{"dataset": sum}])
        assert np.allclose(
            # strict JSON: the cuts without a closure are null
            np.nan_to_num(np.array(closure[variant]["eta"], dtype=float), nan=9.0),
            np.nan_to_num(np.where(scan.valid, scan.eta, np.nan), nan=9.0),
        )


@pytest.mark.parametrize(("executor", "chunksize"), [("futures", 45), ("dask", 110)])
def test_executors_and_chunk_sizes_agree(
    iterative_run: Path, event_files: dict[str, Path], tmp_path: Path, executor: str, chunksize: int
) -> None:
    """futures and dask (2 workers each) with other chunk sizes give the same histograms and transforms."""
    folder = tmp_path / executor
    config = study_config(
        event_files,
        tmp_path / "data",
        executor={"kind": executor, "workers": 2, "chunksize": chunksize},
    )
    run_study(config, folder)
    for name in ("irgi", "kde"):
        assert (
            rb.load(folder / f"{name}.json").get_state()
            == rb.load(iterative_run / f"{name}.json").get_state()
        )
    # GridKDE's sums of kernel weights are added in another order: equal to rounding
    a, b = (rb.load(path / "gridkde.json") for path in (folder, iterative_run))
    for attribute in ("x_centres_", "y_edges_", "cdf_"):
        assert np.allclose(getattr(a, attribute), getattr(b, attribute), rtol=1e-12, atol=1e-13)
    with uproot.open(folder / "abcd.root") as a, uproot.open(iterative_run / "abcd.root") as b:
        assert sorted(a.keys(cycle=False)) == sorted(b.keys(cycle=False))
        for key in a.keys(cycle=False):
            assert np.array_equal(a[key].values(flow=True), b[key].values(flow=True)), key


def test_a_bad_file_is_named_or_skipped_and_listed(
    event_files: dict[str, Path], tmp_path: Path
) -> None:
    damaged = tmp_path / "damaged.root"
    damaged.write_bytes(event_files["qcd"].read_bytes()[:2000])
    fileset = {
        "qcd": [str(event_files["qcd"]), str(damaged)],
        "wprime": [str(event_files["wprime"])],
    }
    with pytest.raises((ValueError, OSError), match=r"damaged\.root"):
        run_study(
            study_config(event_files, tmp_path / "data", fileset=fileset), tmp_path / "strict"
        )
    run_study(
        study_config(event_files, tmp_path / "data", fileset=fileset, skip_bad_files=True),
        tmp_path / "lenient",
    )
    cutflow = json.loads((tmp_path / "lenient" / "cutflow.json").read_text())
    assert list(cutflow["skipped_files"]) == [str(damaged)]
    assert "damaged.root" in (tmp_path / "lenient" / "report.md").read_text()


def test_configuration_errors_name_the_key(event_files: dict[str, Path], tmp_path: Path) -> None:
    from rosenblatt.studies.abcd.config import AbcdConfig

    good = study_config(event_files, tmp_path)
    with pytest.raises(ValueError, match="unknown key"):
        AbcdConfig.parse({**good, "transfroms": []})
    with pytest.raises(ValueError, match=r"transforms\[0\]\.kind"):
        AbcdConfig.parse({**good, "transforms": [{"kind": "flow"}]})
    with pytest.raises(ValueError, match="unknown parameter"):
        AbcdConfig.parse({**good, "transforms": [{"kind": "irgi", "sigma_r": 0.1}]})
    with pytest.raises(ValueError, match=r"transforms\[0\].*occupancy must be one of"):
        AbcdConfig.parse({**good, "transforms": [{"kind": "irgi", "occupancy": "slices"}]})
    # IRGI's columns hold equal events unless the summed weight is asked for
    irgi = {"kind": "irgi", "depth": 4}
    assert AbcdConfig.parse({**good, "transforms": [irgi]}).transforms[0].build().occupancy == (
        "events"
    )
    by_weight = {**irgi, "occupancy": "weight"}
    assert AbcdConfig.parse({**good, "transforms": [by_weight]}).transforms[
        0
    ].build().occupancy == ("weight")
    with pytest.raises(ValueError, match=r"fileset\.qcd.*does not exist"):
        AbcdConfig.parse({**good, "fileset": {"qcd": ["missing.root"]}})
    with pytest.raises(ValueError, match=r"executor\.kind"):
        AbcdConfig.parse({**good, "executor": {"kind": "spark"}})
    with pytest.raises(ValueError, match=r"statistics\.n_boot.*at least 2"):
        AbcdConfig.parse({**good, "statistics": {"n_boot": 1}})
    with pytest.raises(ValueError, match=r"statistics: unknown key"):
        AbcdConfig.parse({**good, "statistics": {"replicas": 10}})
    assert AbcdConfig.parse({**good, "statistics": {"n_boot": 0, "seed": 4}}).statistics.n_boot == 0
    # n_boot: auto (the default) takes more replicas where defining events weigh less than 0
    statistics = AbcdConfig.parse(good).statistics
    assert statistics.n_boot == "auto"
    assert statistics.replicas(None) == statistics.replicas(np.ones(5)) == 20
    assert statistics.replicas(np.array([1.0, -0.5, 2.0])) == 50
    assert (
        AbcdConfig.parse({**good, "statistics": {"n_boot": 30}}).statistics.replicas(
            np.array([1.0, -0.5])
        )
        == 30
    )
    with pytest.raises(ValueError, match=r"statistics\.n_boot"):
        AbcdConfig.parse({**good, "statistics": {"n_boot": "many"}})
    # chunks: given, or left to the file layout (none)
    assert AbcdConfig.parse({**good, "executor": {"kind": "iterative"}}).executor.chunksize is None
    assert AbcdConfig.parse({**good, "executor": {"chunksize": None}}).executor.chunksize is None
    with pytest.raises(ValueError, match=r"executor\.chunksize"):
        AbcdConfig.parse({**good, "executor": {"chunksize": 0}})


def test_the_summary_keeps_its_keys(iterative_run: Path) -> None:
    """summary.json is a public format: the key set recorded in tests/summary_keys.json."""
    from summary_keys import assert_same_keys

    assert_same_keys("abcd-test", json.loads((iterative_run / "summary.json").read_text()))


@pytest.fixture(scope="module")
def flat_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Flat ntuples (tree ``Events``): 12000 defining QCD events (IRGI up to depth 6), QCD, signal, data."""
    folder = tmp_path_factory.mktemp("abcd-flat")
    rng = np.random.default_rng(21)

    def events(n: int, signal: bool) -> dict[str, np.ndarray]:
        if signal:
            return {"mjj": rng.normal(3400.0, 150.0, n), "tag": rng.beta(8.0, 2.0, n)}
        mass = 2000.0 + rng.exponential(600.0, n)
        mean = 0.3 + 0.4 * np.clip((mass - 2000.0) / 3000.0, 0.0, 1.0)
        return {"mjj": mass, "tag": rng.beta(5.0 * mean, 5.0 * (1.0 - mean))}

    samples = {
        "defining": events(12_000, False),
        "qcd": events(4_000, False),
        "signal": events(400, True),
    }
    signal_in_data = events(40, True)
    samples["data"] = {
        k: np.concatenate([v, signal_in_data[k]]) for k, v in events(4_000, False).items()
    }
    files = {}
    for name, columns in samples.items():
        files[name] = folder / f"{name}.root"
        with uproot.recreate(files[name]) as handle:
            handle.mktree("Events", {key: value.dtype for key, value in columns.items()})
            handle["Events"].extend(columns)
    return files


def flat_config(
    files: dict[str, Path], folder: Path, transforms: list[Any], y0: list[float]
) -> dict[str, Any]:
    return {
        "study": "abcd",
        "name": "abcd-parameters",
        "data": {"folder": str(folder / "data")},
        "datasets": {
            "defining": {"files": [str(files["defining"])], "role": "defining"},
            "qcd": {"files": [str(files["qcd"])], "role": "background"},
            "signal": {"files": [str(files["signal"])], "role": "signal"},
            "data": {"files": [str(files["data"])], "role": "data"},
        },
        "score": "tag",
        "transforms": transforms,
        "abcd": {"x": "mjj", "x0": [2400.0, 3200.0], "n_x0": 3, "y0": y0},
        "executor": {"kind": "iterative"},
    }


def test_auto_depth_resolves_the_cuts_and_the_largest_depth_bootstraps(
    flat_files: dict[str, Path], tmp_path: Path
) -> None:
    # a cut at 0.95 needs depth 6 (64 y bins per column: 3.2 beyond it), the largest that
    # 12000 events support; the bootstrap's Poisson weights leave single events in cells
    # of equal weight there, and every replica keeps the depth
    config = flat_config(
        flat_files,
        tmp_path,
        [
            {"kind": "irgi", "name": "chosen", "depth": "auto"},
            {"kind": "irgi", "name": "given", "depth": 6},
        ],
        [0.5, 0.8, 0.95],
    )
    run_study(config, tmp_path / "results")
    out = tmp_path / "results"
    summary = json.loads((out / "summary.json").read_text())
    chosen = rb.load(out / "chosen.json")
    assert chosen.depth_ == 6
    assert chosen.selection_.values == (6,)
    for name in ("chosen", "given"):
        assert "warning" not in summary["transforms"][name]
        assert summary["ensembles"][name] == f"{name}_ensemble.json"
        ensemble = rb.load(out / f"{name}_ensemble.json")
        assert len(ensemble.replicas_) == 20
        assert {replica.depth_ for replica in ensemble.replicas_} == {6}
        assert summary["estimate"][name]["closure_includes_transform_statistics"] is True


def test_an_unfitted_transform_is_invalid_and_a_coarse_grid_is_noted(
    flat_files: dict[str, Path], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # depth 7 needs 32768 events; a cut at 0.99 needs depth 8, beyond what 12000 events support
    config = flat_config(
        flat_files,
        tmp_path,
        [
            {"kind": "irgi", "name": "deep", "depth": 7},
            {"kind": "irgi", "name": "coarse", "depth": "auto"},
        ],
        [0.5, 0.99],
    )
    with caplog.at_level(logging.WARNING, logger="rosenblatt.abcd"):
        run_study(config, tmp_path / "results")
    out = tmp_path / "results"
    summary = json.loads((out / "summary.json").read_text())
    reason = summary["transforms"]["deep"]
    assert reason.startswith("not valid: its fit failed: too few events for IRGI depth 7")
    assert summary["estimate"]["deep"] == {"valid": False, "note": reason}
    assert summary["likelihood"]["deep"] == {"likelihood_note": reason}
    assert summary["ensembles"]["deep"].startswith("none: the transform is not valid")
    assert "deep" not in summary["closure"]
    assert not (out / "deep.json").exists()
    assert f"- `deep`: {reason}" in (out / "report.md").read_text()
    # the other transform goes on, at the finest depth its folds fit, and says it is too coarse
    coarse = summary["transforms"]["coarse"]
    assert re.search(r"warning: IRGI depth 6 .* cut level\(s\) 0.99.* needs depth 8", coarse)
    assert rb.load(out / "coarse.json").depth_ == 6
    assert "coarse" in summary["closure"]
    assert summary["ensembles"]["coarse"] == "coarse_ensemble.json"
    logged = [r.getMessage() for r in caplog.records]
    assert any("transform deep is not valid" in m for m in logged)
    assert any(m.startswith("transform coarse: IRGI depth 6") for m in logged)


@pytest.mark.parametrize("failing", ["fit_replica", "bootstrap"])
def test_a_transform_whose_replicas_cannot_be_fitted_is_invalid(
    flat_files: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, failing: str
) -> None:
    import rosenblatt.transforms.ensemble as ensemble_module

    def refuse(*args: Any, **kwargs: Any) -> Any:
        msg = "a cell of the replica is empty"
        raise ValueError(msg)

    # the check right after the fit (fit_replica), or the bootstrap step itself
    monkeypatch.setattr(ensemble_module if failing == "fit_replica" else rb, failing, refuse)
    config = flat_config(
        flat_files,
        tmp_path,
        [{"kind": "irgi", "name": "grid", "depth": 4}, {"kind": "kde", "sigma_r": 0.3}],
        [0.5, 0.8],
    )
    if failing == "bootstrap":
        config["transforms"] = config["transforms"][:1]
    run_study(config, tmp_path / "results")
    out = tmp_path / "results"
    summary = json.loads((out / "summary.json").read_text())
    reason = summary["transforms"]["grid"]
    expected = {
        "fit_replica": "not valid: none of its first 3 bootstrap replicas can be fitted with the "
        "parameters it chose ({'depth': 4}): a cell of the replica is empty",
        "bootstrap": "not valid: its bootstrap ensemble cannot be fitted: a cell of the replica is empty",
    }[failing]
    assert reason == expected
    assert summary["estimate"]["grid"] == {"valid": False, "note": reason}
    assert "grid" not in summary["closure"]
    assert not (out / "grid.json").exists()
    assert not (out / "grid_ensemble.json").exists()
    assert "score" in summary["estimate"]
