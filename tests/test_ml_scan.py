"""Scans over seeds and DisCo strengths: naming, saving, resuming, scores written back."""

from __future__ import annotations

import json
import logging

import awkward as ak
import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

torch = pytest.importorskip("torch")

from rosenblatt.ml import TrainedModel, plan_scan, run_scan
from rosenblatt.ml.scan import PAPER_ALPHAS, ModelSpec

FAST = {"max_epochs": 1, "batch_size": 64, "n_threads": 1}


def feature_table(n: int, seed: int) -> pd.DataFrame:
    """A feature table with the real columns; signal images carry a bright core."""
    rng = np.random.default_rng(seed)
    label = np.arange(n) % 2
    images = np.zeros((n, 36, 36), dtype=np.float32)
    hit = rng.random((n, 36, 36)) < 0.03
    images[hit] = rng.exponential(5.0, int(hit.sum())).astype(np.float32)
    rows = np.flatnonzero(label == 1)
    images[rows, 17, 17] += rng.exponential(300.0, rows.size).astype(np.float32)
    return pd.DataFrame(
        {
            "mjj": 2500.0 + rng.exponential(500.0, n),
            "mj1": rng.exponential(150.0, n) + 300.0 * label,
            "mj2": rng.exponential(80.0, n),
            "tau21_1": rng.uniform(0.1, 1.0, n),
            "tau21_2": rng.uniform(0.1, 1.0, n),
            "image": list(images.reshape(n, -1)),
            "label": label,
            "weight": np.ones(n),
            "dataset": "test",
            "file": "memory",
            "entry": np.arange(n),
        }
    )


def test_plan_lists_baseline_then_alphas_with_paper_names() -> None:
    names = [spec.name for spec in plan_scan("cnn", seeds=[0, 1], alphas=[0, 3.5, 10])]
    assert names == [
        "baseline_s0",
        "baseline_s1",
        "disco_a0_s0",
        "disco_a0_s1",
        "disco_a3.5_s0",
        "disco_a3.5_s1",
        "disco_a10_s0",
        "disco_a10_s1",
    ]
    assert ModelSpec("cnn", 2, 3.5).column == "score_disco_a3.5_s2"
    assert [s.name for s in plan_scan("gbdt", seeds=[4], alphas=[])] == ["gbdt_s4"]
    paper = plan_scan()
    assert len(paper) == 10 + 21 * 10
    assert PAPER_ALPHAS[0] == 0
    assert PAPER_ALPHAS[-1] == 10


def test_every_model_gets_its_own_training_seed() -> None:
    seeds = [spec.training_seed for spec in plan_scan("cnn", range(10), PAPER_ALPHAS)]
    assert len(set(seeds)) == len(seeds)
    assert ModelSpec("cnn", 3, 1.0).training_seed == ModelSpec("cnn", 3, 1.0).training_seed


def test_bad_plans_are_named() -> None:
    with pytest.raises(ValueError, match="seeds must not repeat"):
        plan_scan("cnn", seeds=[0, 0], alphas=[])
    with pytest.raises(ValueError, match=r"alphas must be finite and non-negative, got \[-1.0\]"):
        plan_scan("cnn", seeds=[0], alphas=[-1])
    with pytest.raises(ValueError, match="alphas must be empty"):
        plan_scan("gbdt", seeds=[0], alphas=[1])


@pytest.fixture
def samples(tmp_path) -> dict:
    """An in-memory train and validation table, a parquet testing sample in two files."""
    testing = feature_table(60, seed=3)
    first, second = tmp_path / "testing-a.parquet", tmp_path / "testing-b.parquet"
    testing.iloc[:25].to_parquet(first)
    testing.iloc[25:].to_parquet(second)
    return {
        "train": feature_table(128, seed=1),
        "validation": feature_table(64, seed=2),
        "testing": [first, second],
    }


@pytest.mark.slow
def test_scan_saves_models_and_writes_scores_back(samples, tmp_path) -> None:
    output = tmp_path / "scan"
    result = run_scan(samples, output, seeds=[0, 1], alphas=[2.5], options=FAST, progress=False)
    names = ["baseline_s0", "baseline_s1", "disco_a2.5_s0", "disco_a2.5_s1"]
    assert result.trained == names
    assert [m["name"] for m in result.models] == names
    summary = json.loads((output / "scan.json").read_text())
    assert [m["name"] for m in summary["models"]] == names
    testing = pd.concat([pq.read_table(p).to_pandas() for p in samples["testing"]])
    for model in result.models:
        stem = output / "models" / model["name"]
        metadata = json.loads((output / "models" / f"{model['name']}.json").read_text())
        assert set(metadata) >= {"seed", "alpha", "epochs", "val_auc", "val_dcor2"}
        assert metadata["alpha"] == (2.5 if "disco" in model["name"] else 0.0)
        assert metadata["torchscript"] == f"{model['name']}.torchscript.pt"
        assert (output / "models" / metadata["torchscript"]).is_file()
        loaded = TrainedModel.load(stem)
        for name in ("train", "validation"):
            table = samples[name]
            np.testing.assert_array_equal(table[model["column"]], loaded.predict(table))
        np.testing.assert_array_equal(testing[model["column"]], loaded.predict(testing))
    assert len(testing) == 60


@pytest.mark.slow
def test_finished_scan_trains_nothing_again(samples, tmp_path) -> None:
    output = tmp_path / "scan"
    run_scan(samples, output, seeds=[0], alphas=[1.0], options=FAST, progress=False)
    stamps = {p.name: p.stat().st_mtime_ns for p in (output / "models").iterdir()}
    # the thread count is how fast a model trains, not which model it is
    again = run_scan(
        samples, output, seeds=[0], alphas=[1.0], options={**FAST, "n_threads": 2}, progress=False
    )
    assert again.trained == []
    assert {p.name: p.stat().st_mtime_ns for p in (output / "models").iterdir()} == stamps
    assert [m["name"] for m in again.models] == ["baseline_s0", "disco_a1_s0"]


@pytest.mark.slow
def test_interrupted_scan_retrains_only_unfinished_models(samples, tmp_path) -> None:
    output = tmp_path / "scan"
    first = run_scan(samples, output, seeds=[0, 1], alphas=[], options=FAST, progress=False)
    before = samples["train"]["score_baseline_s1"].to_numpy().copy()
    # a model whose metadata was never written counts as unfinished
    (output / "models" / "baseline_s1.json").unlink()
    resumed = run_scan(samples, output, seeds=[0, 1], alphas=[], options=FAST, progress=False)
    assert resumed.trained == ["baseline_s1"]
    np.testing.assert_array_equal(samples["train"]["score_baseline_s1"], before)
    assert resumed.models[0] == first.models[0]


@pytest.mark.slow
@pytest.mark.parametrize("damaged", [".pt", ".torchscript.pt", ".scores.npz", ".json"])
def test_a_damaged_model_file_is_named_and_the_model_trained_again(
    samples, tmp_path, damaged, caplog
) -> None:
    output = tmp_path / "scan"
    run_scan(samples, output, seeds=[0], alphas=[], options=FAST, progress=False)
    before = samples["validation"]["score_baseline_s0"].to_numpy().copy()
    path = output / "models" / f"baseline_s0{damaged}"
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))
    with caplog.at_level(logging.INFO, logger="rosenblatt"):
        again = run_scan(samples, output, seeds=[0], alphas=[], options=FAST, progress=False)
    assert again.trained == ["baseline_s0"]
    named = [r.getMessage() for r in caplog.records if str(path) in r.getMessage()]
    assert len(named) == 1
    assert named[0].endswith("computing it again")
    # trained again to the same model: the same scores
    np.testing.assert_array_equal(samples["validation"]["score_baseline_s0"], before)
    assert (
        run_scan(samples, output, seeds=[0], alphas=[], options=FAST, progress=False).trained == []
    )


def test_other_options_in_the_same_directory_are_an_error(samples, tmp_path) -> None:
    output = tmp_path / "scan"
    run_scan(samples, output, seeds=[0], alphas=[], options=FAST, progress=False)
    with pytest.raises(ValueError, match=r"baseline_s0.json was trained with other settings"):
        run_scan(
            samples,
            output,
            seeds=[0],
            alphas=[],
            options={**FAST, "batch_size": 32},
            progress=False,
        )


def test_awkward_samples_get_new_arrays_with_the_scores(samples, tmp_path) -> None:
    samples["validation"] = ak.Array(samples["validation"].to_dict("list"))
    result = run_scan(
        samples, tmp_path / "scan", seeds=[0], alphas=[], options=FAST, progress=False
    )
    scored = result.samples["validation"]
    assert "score_baseline_s0" in scored.fields
    assert len(scored["score_baseline_s0"]) == len(samples["validation"])


@pytest.mark.slow
def test_parallel_workers_give_the_in_process_models(samples, tmp_path) -> None:
    """Two worker processes reproduce the single-process scan bit for bit."""
    serial = run_scan(
        samples, tmp_path / "serial", seeds=[0], alphas=[5.0], options=FAST, progress=False
    )
    serial_scores = samples["validation"][["score_baseline_s0", "score_disco_a5_s0"]].copy()
    parallel = run_scan(
        samples,
        tmp_path / "parallel",
        seeds=[0],
        alphas=[5.0],
        options=FAST,
        n_workers=2,
        progress=False,
    )
    assert parallel.trained == serial.trained
    pd.testing.assert_frame_equal(
        samples["validation"][["score_baseline_s0", "score_disco_a5_s0"]], serial_scores
    )
    for a, b in zip(serial.models, parallel.models, strict=True):
        assert a["val_auc"] == b["val_auc"]
        assert a["val_dcor2"] == b["val_dcor2"]


def test_unknown_sample_roles_are_named(samples, tmp_path) -> None:
    with pytest.raises(KeyError, match="validation sample 'val' is not among"):
        run_scan(samples, tmp_path, validation="val", seeds=[0], alphas=[], options=FAST)


def test_the_progress_bar_counts_each_model_as_it_ends(monkeypatch) -> None:
    """In a pool, a model that ends early is counted then, not when the slowest one ends."""
    import threading
    from concurrent.futures import ThreadPoolExecutor

    from rosenblatt.ml import scan

    slow_may_end = threading.Event()

    def train(spec, *args):
        if spec.seed == 0:  # the slow one
            assert slow_may_end.wait(timeout=20), "the fast model was never counted"
        return {"name": spec.name}

    class Bar:
        def __init__(self) -> None:
            self.n = 0

        def update(self) -> None:
            self.n += 1
            slow_may_end.set()  # the fast model is counted while the slow one still runs

    monkeypatch.setattr(scan, "_train_in_worker", train)
    specs = [ModelSpec("cnn", 0), ModelSpec("cnn", 1)]
    bar = Bar()
    with ThreadPoolExecutor(max_workers=2) as pool:
        results = scan._collect(pool, specs, [], "", ("train", "validation", FAST, None), bar)
    assert sorted(results) == ["baseline_s0", "baseline_s1"]
    assert bar.n == 2
