"""The LHCO study's configuration: every shipped file parses; each mistake names its key and file."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from rosenblatt.config import load_config
from rosenblatt.studies.config_checks import ConfigError
from rosenblatt.studies.lhco.config import LhcoConfig

LHCO_CONFIGS = ("lhco-smoke", "lhco-quick", "lhco-paper", "lhco-full")


@pytest.mark.parametrize("name", LHCO_CONFIGS)
def test_shipped_configurations_parse(name: str) -> None:
    config = load_config(name)
    cfg = LhcoConfig.parse(config)
    assert cfg.name == name
    partition = config["partition"]
    for cls in ("background", "signal"):
        assert cfg.needed(cls) == sum(partition[part][cls] for part in partition)
    assert len(cfg.cuts.x0) == config["abcd"]["n_x0"]
    assert cfg.cuts.y0[0] == config["abcd"]["y0"][0]
    assert cfg.cuts.y0[-1] == config["abcd"]["y0"][1]


def test_paper_sizes_are_the_papers() -> None:
    sizes = LhcoConfig.parse(load_config("lhco-paper")).sizes
    assert sizes == {
        "train": {"background": 45000, "signal": 45000},
        "validation": {"background": 25000, "signal": 25000},
        "optimisation": {"background": 20000, "signal": 20000},
        "testing": {"background": 100000, "signal": 10000},
    }


@pytest.mark.parametrize("name", LHCO_CONFIGS)
def test_model_cache_key_is_the_hash_of_the_training_entries(name: str) -> None:
    config = load_config(name)
    entries = {key: config.get(key) for key in ("classifier", "disco", "partition", "seed")}
    expected = hashlib.sha256(json.dumps(entries, sort_keys=True).encode()).hexdigest()[:12]
    assert LhcoConfig.parse(config).scan_key() == expected
    changed = json.loads(json.dumps(config, default=str))
    changed["classifier"]["seeds"] += 1
    assert LhcoConfig.parse(changed).scan_key() != expected


def _broken(edit: Any) -> dict[str, Any]:
    config = json.loads(json.dumps(load_config("lhco-smoke"), default=str))
    edit(config)
    return config


@pytest.mark.parametrize(
    ("edit", "key", "what"),
    [
        (lambda c: c.update(epochs=3), "top level", "unknown key"),
        (lambda c: c.pop("partition"), "partition", "missing"),
        (
            lambda c: c["partition"]["testing"].update(background="many"),
            "partition.testing.background",
            "integer",
        ),
        (lambda c: c["partition"].pop("optimisation"), "partition.optimisation", "missing"),
        (lambda c: c["data"].update(margin=1.5), "data.margin", "[0, 1)"),
        (lambda c: c["classifier"].update(kind="bdt"), "classifier.kind", "cnn or gbdt"),
        (lambda c: c["disco"].update(alphas="1.0"), "disco.alphas", "list"),
        (lambda c: c["irgi"].update(depths=[]), "irgi.depths", "non-empty"),
        (lambda c: c["kde"].update(sigma_r=["wide"]), "kde.sigma_r", "number"),
        (lambda c: c["abcd"].update(x0=[3700.0, 2000.0]), "abcd.x0", "low < high"),
        (lambda c: c["statistics"].update(n_boots=10), "statistics", "unknown key"),
        (lambda c: c["features"].update(executor="threads"), "features.executor", "iterative"),
    ],
)
def test_mistakes_name_key_and_file(edit: Any, key: str, what: str) -> None:
    config = _broken(edit)
    with pytest.raises(ConfigError) as error:
        LhcoConfig.parse(config)
    message = str(error.value)
    assert message.startswith(f"{Path(config['_path'])}: {key}:"), message
    assert what in message


def test_run_refuses_a_bad_configuration_before_any_step(tmp_path: Path) -> None:
    from rosenblatt.studies.lhco.study import run

    config = _broken(lambda c: c["data"].update(folder=str(tmp_path / "data"), chunk_size=0))
    with pytest.raises(ConfigError, match=r"data\.chunk_size"):
        run(config, tmp_path)
    assert not (tmp_path / "data").exists()
