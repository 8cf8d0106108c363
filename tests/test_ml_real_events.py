"""The classifiers on real generated events: Pythia QCD dijets against the W' signal."""

from __future__ import annotations

import awkward as ak
import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("pythia8mc")
pytest.importorskip("fastjet")

from rosenblatt.hep.features import event_table
from rosenblatt.hep.generation import generate_events
from rosenblatt.hep.particles import event_particles
from rosenblatt.ml import run_scan, train_classifier

pytestmark = pytest.mark.slow

EVENTS_PER_CLASS = 200


@pytest.fixture(scope="session")
def real_samples() -> dict[str, ak.Array]:
    """~200 triggered events per class through the feature table, split half and half."""
    train_parts, val_parts = [], []
    for process in ("qcd", "wprime"):
        events = generate_events(process, EVENTS_PER_CLASS, seed=11)
        table, cutflow = event_table(
            event_particles(events),
            label=events.label,
            weight=events.weight,
            dataset=process,
            file=f"generated-{process}",
            entry=np.arange(len(events)),
        )
        assert cutflow["in table"] == len(table)
        half = len(table) // 2
        train_parts.append(table[:half])
        val_parts.append(table[half:])
    return {"train": ak.concatenate(train_parts), "validation": ak.concatenate(val_parts)}


def test_baseline_cnn_separates_signal_from_background(real_samples) -> None:
    model = train_classifier(
        real_samples["train"],
        real_samples["validation"],
        seed=0,
        options={"max_epochs": 30, "batch_size": 32, "patience": 6, "n_threads": 1},
    )
    # a score without information has AUC 0.5 with a standard error of
    # sqrt((n_s + n_b + 1) / (12 n_s n_b)) = 0.041 for 100 + 100 validation events
    assert model.metadata["val_auc"] > 0.5 + 3 * 0.041
    scores = model.predict(real_samples["validation"])
    assert scores.shape == (len(real_samples["validation"]),)
    assert np.all((scores >= 0) & (scores <= 1))


def test_gbdt_separates_signal_from_background(real_samples) -> None:
    model = train_classifier(
        real_samples["train"],
        real_samples["validation"],
        kind="gbdt",
        seed=0,
        options={"n_threads": 1},
    )
    assert model.metadata["val_auc"] > 0.85


def test_scan_writes_one_score_per_real_event(real_samples, tmp_path) -> None:
    result = run_scan(
        real_samples,
        tmp_path,
        seeds=[0],
        alphas=[10.0],
        options={"max_epochs": 2, "batch_size": 64, "n_threads": 1},
        progress=False,
    )
    for name, table in result.samples.items():
        for column in ("score_baseline_s0", "score_disco_a10_s0"):
            scores = ak.to_numpy(table[column])
            assert len(scores) == len(real_samples[name])
            assert np.all((scores >= 0) & (scores <= 1))
        # the events are still traceable to their input next to their scores
        np.testing.assert_array_equal(table["entry"], real_samples[name]["entry"])
