"""``rosenblatt train CONFIG``."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from rosenblatt.cli import main
from rosenblatt.commands.train import load_config


def feature_table(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    label = np.arange(n) % 2
    return pd.DataFrame(
        {
            "mjj": 2500.0 + rng.exponential(500.0, n),
            "mj1": np.where(label == 1, rng.normal(500, 40, n), rng.exponential(150.0, n)),
            "mj2": rng.exponential(80.0, n),
            "tau21_1": rng.uniform(0.1, 1.0, n),
            "tau21_2": rng.uniform(0.1, 1.0, n),
            "image": list(np.zeros((n, 1296), dtype=np.float32)),
            "label": label,
            "weight": np.ones(n),
            "dataset": "test",
            "file": "memory",
            "entry": np.arange(n),
        }
    )


@pytest.fixture
def config(tmp_path) -> tuple:
    paths = {}
    for name, n, seed in (("train", 200, 1), ("validation", 100, 2), ("testing", 80, 3)):
        paths[name] = tmp_path / f"{name}.parquet"
        feature_table(n, seed).to_parquet(paths[name])
    text = f"""
samples:
  train: {paths["train"]}
  validation: {paths["validation"]}
  testing: {paths["testing"]}
output: {tmp_path / "out"}
kind: gbdt
seeds: 2
workers: 1
training:
  max_iter: 30
  n_threads: 1
"""
    path = tmp_path / "train.yaml"
    path.write_text(text)
    return path, paths


def test_train_command_writes_scores_into_every_sample(config, capsys) -> None:
    path, paths = config
    assert main(["train", str(path), "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "2 models" in out
    assert "(2 trained now)" in out
    for name, table_path in paths.items():
        table = pq.read_table(table_path)
        for column in ("score_gbdt_s0", "score_gbdt_s1"):
            scores = table.column(column).to_numpy()
            assert len(scores) == table.num_rows, name
            assert np.all((scores >= 0) & (scores <= 1))
    assert main(["train", str(path), "--no-progress"]) == 0
    assert "(0 trained now)" in capsys.readouterr().out


def test_config_defaults_are_the_papers(config) -> None:
    path, _ = config
    path.write_text(path.read_text().replace("kind: gbdt", "kind: cnn"))
    loaded = load_config(path)
    assert loaded["alphas"] == [0.5 * i for i in range(21)]
    assert loaded["baseline"] is True
    assert loaded["seeds"] == [0, 1]
    assert loaded["train_sample"] == "train"


def test_config_errors_are_named(tmp_path) -> None:
    with pytest.raises(FileNotFoundError, match=r"missing.yaml does not exist"):
        load_config(tmp_path / "missing.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("samples: {train: a.parquet}\noutput: out\nepochs: 3\n")
    with pytest.raises(ValueError, match=r"unknown key\(s\) epochs"):
        load_config(bad)
    bad.write_text("output: out\n")
    with pytest.raises(ValueError, match="needs a 'samples' entry"):
        load_config(bad)
