"""Training one classifier: balance, reproducibility, early stopping, save and load."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

torch = pytest.importorskip("torch")

from rosenblatt.metrics import distance_correlation_sqr, roc_auc
from rosenblatt.ml import CNNOptions, TrainedModel, train_classifier
from rosenblatt.ml.training import balanced_weights, make_options

FAST = {"max_epochs": 2, "batch_size": 64, "n_threads": 1}


def feature_table(n: int, seed: int) -> pd.DataFrame:
    """A feature table with the real columns; signal images carry a bright two-prong core."""
    rng = np.random.default_rng(seed)
    label = np.arange(n) % 2
    images = np.zeros((n, 36, 36), dtype=np.float32)
    hit = rng.random((n, 36, 36)) < 0.03
    images[hit] = rng.exponential(5.0, int(hit.sum())).astype(np.float32)
    rows = np.flatnonzero(label == 1)
    images[rows, 17, 16] += rng.exponential(300.0, rows.size).astype(np.float32)
    images[rows, 18, 19] += rng.exponential(200.0, rows.size).astype(np.float32)
    return pd.DataFrame(
        {
            "mjj": 2500.0 + rng.exponential(500.0, n) + 300.0 * label,
            "mj1": np.where(label == 1, rng.normal(500, 40, n), rng.exponential(150.0, n)),
            "mj2": rng.exponential(80.0, n),
            "tau21_1": np.where(label == 1, rng.uniform(0.1, 0.6, n), rng.uniform(0.3, 1.0, n)),
            "tau21_2": rng.uniform(0.2, 1.0, n),
            "image": list(images.reshape(n, -1)),
            "label": label,
            "weight": rng.uniform(0.5, 1.5, n),
            "dataset": np.where(label == 1, "wprime", "qcd"),
            "file": "memory",
            "entry": np.arange(n),
        }
    )


@pytest.fixture(scope="module")
def tables() -> tuple[pd.DataFrame, pd.DataFrame]:
    return feature_table(256, seed=1), feature_table(128, seed=2)


def test_balanced_weights_equalise_the_classes() -> None:
    label = np.array([0, 0, 0, 1, 1, 0])
    weight = np.array([1.0, 2.0, 3.0, 0.5, 0.25, 4.0])
    balanced = balanced_weights(label, weight, "t")
    assert balanced[label == 0].sum() == pytest.approx(balanced[label == 1].sum())
    assert balanced.sum() == pytest.approx(len(label))
    np.testing.assert_allclose(balanced[label == 0] / weight[label == 0], 6 / (2 * 10))
    with pytest.raises(ValueError, match="t has 0 signal events"):
        balanced_weights(np.zeros(3, dtype=np.int64), np.ones(3), "t")


@pytest.mark.slow
def test_same_seed_gives_identical_weights_and_scores(tables) -> None:
    train, val = tables
    first = train_classifier(train, val, seed=3, options=FAST)
    second = train_classifier(train, val, seed=3, options=FAST)
    other = train_classifier(train, val, seed=4, options=FAST)
    for key, tensor in first.model.state_dict().items():
        assert torch.equal(tensor, second.model.state_dict()[key]), key
    np.testing.assert_array_equal(first.predict(val), second.predict(val))
    assert not np.array_equal(first.predict(val), other.predict(val))


def test_training_leaves_global_torch_state_alone(tables) -> None:
    train, val = tables
    torch.manual_seed(123)
    expected = torch.rand(3)
    threads = torch.get_num_threads()
    torch.manual_seed(123)
    train_classifier(train, val, seed=0, options=FAST)
    assert torch.equal(torch.rand(3), expected)
    assert torch.get_num_threads() == threads
    assert not torch.are_deterministic_algorithms_enabled()


def test_early_stopping_stops_after_patience_without_improvement(tables) -> None:
    """With a zero learning rate the validation loss never improves after epoch 1."""
    train, val = tables
    options = {**FAST, "max_epochs": 20, "patience": 3, "learning_rate": 0.0}
    model = train_classifier(train, val, seed=0, options=options)
    assert model.metadata["best_epoch"] == 1
    assert model.metadata["epochs"] == 1 + 3
    assert model.metadata["stopped_early"]
    losses = [row["val_loss"] for row in model.metadata["history"]]
    assert len(set(losses)) == 1


def test_best_epoch_weights_are_kept(tables) -> None:
    train, val = tables
    model = train_classifier(train, val, seed=1, options={**FAST, "max_epochs": 4})
    history = model.metadata["history"]
    best = min(history, key=lambda row: row["val_loss"])
    assert model.metadata["best_epoch"] == best["epoch"]
    assert model.metadata["best_val_loss"] == best["val_loss"]


def test_metadata_metrics_are_the_package_metrics(tables) -> None:
    train, val = tables
    model = train_classifier(train, val, alpha=2.0, seed=5, options=FAST)
    scores = model.predict(val)
    assert scores.shape == (len(val),)
    assert np.all((scores >= 0) & (scores <= 1))
    background = val["label"].to_numpy() == 0
    assert model.metadata["val_auc"] == roc_auc(val["label"], scores, val["weight"])
    assert model.metadata["val_dcor2"] == distance_correlation_sqr(
        val["mjj"][background], scores[background], val["weight"][background]
    )
    assert model.metadata["alpha"] == 2.0
    assert model.metadata["seed"] == 5
    assert model.metadata["history"][0]["train_batch_dcor2"] > 0


def test_disco_term_changes_the_training(tables) -> None:
    train, val = tables
    plain = train_classifier(train, val, alpha=0.0, seed=6, options=FAST)
    disco = train_classifier(train, val, alpha=50.0, seed=6, options=FAST)
    assert not np.array_equal(plain.predict(val), disco.predict(val))


def test_save_and_load_give_the_same_scores(tables, tmp_path) -> None:
    train, val = tables
    model = train_classifier(train, val, seed=7, options=FAST)
    metadata_path = model.save(tmp_path / "cnn")
    assert metadata_path == tmp_path / "cnn.json"
    assert (tmp_path / "cnn.pt").is_file()
    loaded = TrainedModel.load(tmp_path / "cnn")
    assert loaded.metadata == model.metadata
    np.testing.assert_array_equal(loaded.predict(val), model.predict(val))


def test_gbdt_classifier_scores_in_unit_interval(tables, tmp_path) -> None:
    train, val = tables
    model = train_classifier(train, val, kind="gbdt", seed=0, options={"n_threads": 1})
    scores = model.predict(val)
    assert np.all((scores >= 0) & (scores <= 1))
    assert model.metadata["val_auc"] > 0.9
    assert 1 <= model.metadata["trees_kept"] <= model.metadata["trees_fitted"]
    model.save(tmp_path / "gbdt")
    np.testing.assert_array_equal(TrainedModel.load(tmp_path / "gbdt").predict(val), scores)


def test_bad_arguments_are_named(tables) -> None:
    train, val = tables
    with pytest.raises(ValueError, match="kind must be one of cnn, gbdt, got 'svm'"):
        train_classifier(train, val, kind="svm")
    with pytest.raises(ValueError, match=r"unknown training option.*epochs"):
        make_options("cnn", {"epochs": 3})
    with pytest.raises(ValueError, match="batch_size must be a positive integer"):
        CNNOptions(batch_size=0)
    with pytest.raises(ValueError, match="alpha must be a finite non-negative"):
        train_classifier(train, val, alpha=-1.0, options=FAST)
    with pytest.raises(ValueError, match="no DisCo term"):
        train_classifier(train, val, kind="gbdt", alpha=1.0)
    only_background = train[train["label"] == 0]
    with pytest.raises(ValueError, match="train table has 0 signal events"):
        train_classifier(only_background, val, options=FAST)
