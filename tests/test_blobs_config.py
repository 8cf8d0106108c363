"""The blob study's configuration: the shipped files parse; each mistake names its key and file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from rosenblatt.config import load_config
from rosenblatt.studies.blobs.config import BlobsConfig
from rosenblatt.studies.config_checks import ConfigError


@pytest.mark.parametrize("name", ["blobs", "blobs-1e6"])
def test_shipped_configurations_parse(name: str) -> None:
    config = load_config(name)
    cfg = BlobsConfig.parse(config)
    assert cfg.background.rho == config["background"]["rho"]
    assert cfg.signal.n_testing == config["signal"]["n_testing"]
    assert list(cfg.depths) == config["irgi"]["depths"]


def test_geometric_sigma_grid() -> None:
    cfg = BlobsConfig.parse(load_config("blobs"))
    spec = load_config("blobs")["kde"]["sigma_r"]
    assert len(cfg.sigma_r) == spec["n"]
    assert cfg.sigma_r[0] == spec["min"]
    assert cfg.sigma_r[-1] == spec["max"]
    assert np.allclose(
        np.diff(np.log(cfg.sigma_r)), np.log(spec["max"] / spec["min"]) / (spec["n"] - 1), atol=1e-3
    )


def test_peers_switch() -> None:
    config = load_config("blobs")
    assert BlobsConfig.parse({**config, "peers": False}).peers is None
    assert BlobsConfig.parse({**config, "peers": {"flow": {"max_epochs": 3}}}).peers == {
        "flow": {"max_epochs": 3}
    }


@pytest.mark.parametrize(
    ("edit", "key", "what"),
    [
        (lambda c: c.update(n_sub=3), "top level", "unknown key"),
        (lambda c: c.pop("background"), "background", "missing"),
        (lambda c: c["background"].update(rho=1.0), "background.rho", "(-1, 1)"),
        (lambda c: c["background"].update(n_testing=0), "background.n_testing", "integer"),
        (
            lambda c: c["signal"].update(cov=[[1.0, 2.0], [2.0, 1.0]]),
            "signal.cov",
            "positive definite",
        ),
        (
            lambda c: c["kde"].update(sigma_r={"min": 1.0, "max": 0.1, "n": 3}),
            "kde.sigma_r",
            "min < max",
        ),
        (lambda c: c.update(whole_sample="yes"), "whole_sample", "true or false"),
        (lambda c: c["figures"].update(colours=[]), "figures", "unknown key"),
        (lambda c: c.update(peers={"nets": 1}), "peers", "unknown key"),
    ],
)
def test_mistakes_name_key_and_file(edit: Any, key: str, what: str) -> None:
    config = json.loads(json.dumps(load_config("blobs"), default=str))
    edit(config)
    with pytest.raises(ConfigError) as error:
        BlobsConfig.parse(config)
    message = str(error.value)
    assert message.startswith(f"{Path(config['_path'])}: {key}:"), message
    assert what in message
