"""The dijet study with two protected observables (``study: lhco-2d``): configuration, cache, end to end."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from rosenblatt.config import load_config
from rosenblatt.studies.config_checks import ConfigError
from rosenblatt.studies.lhco.config import LhcoConfig
from rosenblatt.studies.lhco.config_2d import Lhco2dConfig

#: the sections of an LHCO configuration that the 2-d study does not take
LHCO_ONLY = ("irgi", "kde", "selection", "abcd", "permutations", "statistics", "peers")


def two_d_config(name: str, **decorrelation: Any) -> dict[str, Any]:
    """The LHCO configuration ``name`` turned into a 2-d study on the same cache."""
    config = {k: v for k, v in load_config(name).items() if k not in LHCO_ONLY}
    config.update(study="lhco-2d", decorrelation=decorrelation)
    return config


def test_the_2d_configuration_reuses_the_quick_study_models() -> None:
    quick = LhcoConfig.parse(load_config("lhco-quick"))
    two_d = Lhco2dConfig.parse(load_config("lhco-2d"))
    assert two_d.base.scan_key() == quick.scan_key()
    assert two_d.base.data.folder == quick.data.folder
    assert two_d.base.sizes == quick.sizes
    assert two_d.decorrelation.protected == ("mjj", "pt_j1")


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"irgi": {"depths": [3]}}, r"top level: unknown key\(s\) \['irgi'\]"),
        ({"decorrelation": {"protected": ["mjj", "pt"]}}, r"'pt' is not one of"),
        ({"decorrelation": {"protected": ["mjj"]}}, r"must name 2 or 3 observables"),
        ({"decorrelation": {"estimators": ["flow"]}}, r"decorrelation.estimators: 'flow'"),
        ({"decorrelation": {"floor": 3}}, r"decorrelation: unknown key\(s\) \['floor'\]"),
    ],
)
def test_bad_2d_configurations_name_the_key(change: dict[str, Any], message: str) -> None:
    config = {**load_config("lhco-2d"), **change}
    with pytest.raises(ConfigError, match=message):
        Lhco2dConfig.parse(config)


def test_a_feature_table_of_other_columns_or_events_is_computed_again(tmp_path: Path) -> None:
    from rosenblatt._records import check_record, write_record
    from rosenblatt.io.parquet import write_parquet
    from rosenblatt.processors.dijet import empty_table
    from rosenblatt.studies.lhco.study import _feature_inputs

    events, table = tmp_path / "qcd.root", tmp_path / "features.parquet"
    record = tmp_path / "features.record.json"
    events.write_bytes(b"events")
    write_parquet(empty_table(), table)
    inputs = _feature_inputs({"qcd": events})
    write_record(record, [table], inputs)
    assert check_record(record, _feature_inputs({"qcd": events}))
    # a table recorded before pt_j1 and deta_jj were columns
    older = [c for c in inputs["columns"] if c not in ("pt_j1", "deta_jj")]
    write_record(record, [table], {**inputs, "columns": older})
    assert not check_record(record, _feature_inputs({"qcd": events}))
    write_record(record, [table], inputs)
    events.write_bytes(b"other events")
    assert not check_record(record, _feature_inputs({"qcd": events}))


@pytest.fixture(scope="module")
def smoke_summary(
    tmp_path_factory: pytest.TempPathFactory, lhco_smoke_run: Path
) -> tuple[Path, dict[str, Any]]:
    from rosenblatt.studies import run_study

    folder = tmp_path_factory.mktemp("lhco2d")
    config = two_d_config("lhco-smoke", permutations=20, estimators=["gridkde"])
    # a copy of the lhco-smoke study's data folder (conftest): the 2-d study on the same
    # classifier scan reuses its events, its feature table and its trained classifiers
    data = folder / "data"
    shutil.copytree(lhco_smoke_run / "data" / "lhco-smoke", data)
    config["data"] = {**config["data"], "folder": str(data)}
    config["name"] = "lhco-2d-smoke"
    results = run_study(config, folder / "results")
    return results, json.loads((results / "summary.json").read_text())


@pytest.mark.slow
def test_the_smoke_study_reports_dcor_with_floors_per_observable_and_jointly(
    smoke_summary: tuple[Path, dict[str, Any]],
) -> None:
    results, summary = smoke_summary
    assert summary["protected"] == ["mjj", "pt_j1"]
    methods = summary["methods"]
    assert list(methods) == ["baseline", "gridkde_1d", "gridkde_sequential", "gridkde_joint"]
    for key, entry in methods.items():
        assert 0 <= entry["auc"] <= 1, key
        assert entry["auc_cost"] == pytest.approx(methods["baseline"]["auc"] - entry["auc"])
        assert set(entry["dcc"]) == {"mjj", "pt_j1", "joint"}
        for target, dcc in entry["dcc"].items():
            assert 0 <= dcc["value"] <= 1, (key, target)
            assert 0 < dcc["floor"] <= 1, (key, target)
            assert 0 < dcc["p_value"] <= 1, (key, target)
    report = (results / "report.md").read_text()
    for figure in ("dcor2.png", "profiles.png"):
        assert (results / figure).is_file()
        assert f"({figure})" in report
    assert "GridKDE joint 2-d" in report
    assert set(summary["step_seconds"]) >= {"features", "train", "decorrelate", "measure"}


@pytest.mark.slow
def test_the_summary_keeps_its_keys(smoke_summary: tuple[Path, dict[str, Any]]) -> None:
    """summary.json is a public format: the key set recorded in tests/summary_keys.json."""
    from summary_keys import assert_same_keys

    results, _ = smoke_summary
    assert_same_keys("lhco-2d-smoke", json.loads((results / "summary.json").read_text()))
