"""The fairness study's configuration: the shipped file parses; each mistake names its key and file."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from rosenblatt.config import load_config
from rosenblatt.studies.config_checks import ConfigError
from rosenblatt.studies.fairness.config import METHODS, FairnessConfig


def test_shipped_configuration_parses() -> None:
    config = load_config("fairness")
    cfg = FairnessConfig.parse(config)
    assert cfg.name == "fairness"
    assert cfg.source == config["_path"]
    assert cfg.seed == config["seed"]
    assert cfg.folds == cfg.digits.folds == config["folds"]
    assert cfg.bootstrap == cfg.digits.bootstrap == config["bootstrap"]
    assert cfg.permutations == cfg.digits.permutations == config["permutations"]
    assert list(cfg.working_points) == config["working_points"]
    assert dict(cfg.arrests.inner_cv) == config["arrests"]["inner_cv"]
    assert dict(cfg.arrests.hgb) == config["arrests"]["hgb"]
    assert cfg.arrests.methods is None
    assert list(cfg.digits.classes) == config["digits"]["classes"]
    assert cfg.dcc_floor_ratio_max == config["claims"]["dcc_floor_ratio_max"]


def test_defaults_are_those_the_study_always_used() -> None:
    cfg = FairnessConfig.parse({"study": "fairness", "name": "bare"})
    assert (cfg.seed, cfg.threads, cfg.folds, cfg.bootstrap, cfg.permutations) == (
        0,
        1,
        5,
        200,
        200,
    )
    assert cfg.age_groups == 5
    np.testing.assert_array_equal(cfg.working_points, np.linspace(0.1, 0.9, 9))
    assert cfg.rate_working_points == (0.2, 0.5, 0.8)
    assert dict(cfg.arrests.inner_cv) == {"lr": None, "hgb": 5}
    assert dict(cfg.arrests.hgb) == {}
    assert cfg.digits.classes == (5, 9)
    assert (cfg.digits.C, cfg.digits.inner_cv) == (0.1, 5)
    assert cfg.dcc_floor_ratio_max == 2.0
    assert cfg.source == "the configuration"


def test_digits_resamplings_default_to_the_top_level_and_may_differ() -> None:
    config = {"study": "fairness", "folds": 3, "bootstrap": 20, "permutations": 30}
    cfg = FairnessConfig.parse({**config, "digits": {"folds": 4}})
    assert (cfg.digits.folds, cfg.digits.bootstrap, cfg.digits.permutations) == (4, 20, 30)
    assert cfg.folds == 3


def test_a_method_subset_keeps_the_study_order() -> None:
    config = {"study": "fairness", "arrests": {"methods": ["lr_gridkde", "lr"]}}
    assert FairnessConfig.parse(config).arrests.methods == ("lr", "lr_gridkde")
    every = {"study": "fairness", "arrests": {"methods": list(METHODS)}}
    assert FairnessConfig.parse(every).arrests.methods == tuple(METHODS)


@pytest.mark.parametrize(
    ("edit", "key", "what"),
    [
        (lambda c: c.update(fold=3), "top level", "unknown key"),
        (lambda c: c.update(seed=-1), "seed", "integer >= 0"),
        (lambda c: c.update(threads=0), "threads", "integer >= 1"),
        (lambda c: c.update(folds=1), "folds", "integer >= 2"),
        (lambda c: c.update(folds=2.5), "folds", "integer"),
        (lambda c: c.update(bootstrap="200"), "bootstrap", "integer"),
        (lambda c: c.update(permutations=0), "permutations", "integer >= 1"),
        (lambda c: c.update(age_groups=1), "age_groups", "integer >= 2"),
        (lambda c: c.update(working_points=[0.1, 1.0]), "working_points", "(0, 1)"),
        (lambda c: c.update(working_points=[]), "working_points", "at least 1"),
        (lambda c: c.update(rate_working_points=[0.0]), "rate_working_points", "(0, 1)"),
        (lambda c: c.update(rate_working_points=["half"]), "rate_working_points", "number"),
        (lambda c: c.update(arrests=[1]), "arrests", "mapping"),
        (lambda c: c["arrests"].update(method=["lr"]), "arrests", "unknown key"),
        (lambda c: c["arrests"]["inner_cv"].update(svm=3), "arrests.inner_cv", "unknown key"),
        (lambda c: c["arrests"]["inner_cv"].update(hgb=1), "arrests.inner_cv.hgb", ">= 2"),
        (lambda c: c["arrests"]["inner_cv"].update(lr="5"), "arrests.inner_cv.lr", "integer"),
        (lambda c: c["arrests"]["hgb"].update(max_iters=10), "arrests.hgb", "unknown key"),
        (lambda c: c["arrests"]["hgb"].update(random_state=1), "arrests.hgb", "unknown key"),
        (lambda c: c["arrests"].update(methods="lr"), "arrests.methods", "list of names"),
        (lambda c: c["arrests"].update(methods=["svm"]), "arrests.methods", "unknown method"),
        (
            lambda c: c["arrests"].update(methods=["lr", "hgb_gridkde"]),
            "arrests.methods",
            "needs the raw classifier(s) ['hgb']",
        ),
        (lambda c: c["digits"].update(colour="ink"), "digits", "unknown key"),
        (lambda c: c["digits"].update(classes=[5]), "digits.classes", "two digits"),
        (lambda c: c["digits"].update(classes=[5, 5]), "digits.classes", "distinct"),
        (lambda c: c["digits"].update(classes=[5, 10]), "digits.classes", "0 to 9"),
        (lambda c: c["digits"].update(classes=[-1, 9]), "digits.classes", "integer >= 0"),
        (lambda c: c["digits"].update(C=0), "digits.C", "positive"),
        (lambda c: c["digits"].update(C="0.1"), "digits.C", "number"),
        (lambda c: c["digits"].update(inner_cv=None), "digits.inner_cv", "integer >= 2"),
        (lambda c: c["digits"].update(folds=1), "digits.folds", "integer >= 2"),
        (lambda c: c["digits"].update(bootstrap=1), "digits.bootstrap", "integer >= 2"),
        (lambda c: c["claims"].update(ratio=2.0), "claims", "unknown key"),
        (
            lambda c: c["claims"].update(dcc_floor_ratio_max=-1.0),
            "claims.dcc_floor_ratio_max",
            "positive",
        ),
    ],
)
def test_mistakes_name_key_and_file(edit: Any, key: str, what: str) -> None:
    config = copy.deepcopy(load_config("fairness"))
    edit(config)
    with pytest.raises(ConfigError) as error:
        FairnessConfig.parse(config)
    message = str(error.value)
    assert message.startswith(f"{Path(config['_path'])}: {key}:"), message
    assert what in message
