"""The fairness study: its parity figures of merit, its data, and a small run."""

from __future__ import annotations

import json

import numpy as np
import pytest
from summary_keys import assert_same_keys

from rosenblatt.studies.fairness import study as fairness


def test_group_rates_count_what_passes_the_cut():
    score = np.array([0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8])
    groups = np.array([0, 0, 0, 0, 1, 1, 1, 1])
    # half rejected: the four highest pass, all in group 1
    np.testing.assert_allclose(fairness.group_rates(score, groups, 2, 0.5), [0.0, 1.0])
    # a quarter rejected: 0.1 and 0.2 fail
    np.testing.assert_allclose(fairness.group_rates(score, groups, 2, 0.25), [0.5, 1.0])
    # weights act as repeated people
    weight = np.array([2, 1, 1, 1, 1, 1, 1, 1], dtype=float)
    repeated = fairness.group_rates(np.r_[0.1, score], np.r_[0, groups], 2, 3 / 9)
    np.testing.assert_allclose(fairness.group_rates(score, groups, 2, 3 / 9, weight), repeated)


def test_tied_scores_pass_at_random_to_keep_the_working_point():
    score = np.array([0.0, 0.0, 1.0, 1.0, 1.0, 1.0])
    groups = np.array([0, 1, 0, 1, 0, 1])
    for rejected in (0.1, 0.5, 0.9):
        rates = fairness.group_rates(score, groups, 2, rejected)
        overall = np.average(rates, weights=np.bincount(groups))
        assert overall == pytest.approx(1 - rejected)
        np.testing.assert_allclose(rates, rates[0])


def test_parity_spreads_of_a_score_that_ignores_the_group_are_small():
    rng = np.random.default_rng(0)
    n = 40_000
    groups = rng.integers(0, 5, n)
    label = rng.integers(0, 2, n)
    fair = rng.normal(size=n) + label
    unfair = fair + 0.5 * groups
    points = np.linspace(0.1, 0.9, 9)
    ok = fairness.parity_spreads(fair, label, groups, 5, points)
    bad = fairness.parity_spreads(unfair, label, groups, 5, points)
    assert ok["demographic_parity"].max() < 0.03
    assert ok["equalised_odds"].max() < 0.04
    assert (bad["demographic_parity"] > 0.2).all()
    np.testing.assert_array_equal(bad["equalised_odds"], np.maximum(bad["tpr"], bad["fpr"]))
    # the spreads are those of group_rates at the same cut, with tied scores too
    tied = np.round(unfair, 1)
    weight = rng.poisson(1.0, n).astype(float)
    spreads = fairness.parity_spreads(tied, label, groups, 5, points, weight)
    for i, q in enumerate(points):
        for key, subset in (("demographic_parity", None), ("tpr", label == 1), ("fpr", label == 0)):
            rates = fairness.group_rates(tied, groups, 5, q, weight, subset)
            assert spreads[key][i] == pytest.approx(rates.max() - rates.min(), abs=1e-12)


def test_arrests_and_age_groups_come_from_the_installed_package(monkeypatch):
    import socket

    from sklearn.datasets import load_digits

    def no_network(*args, **kwargs):
        raise AssertionError("the fairness study must not open a network connection")

    monkeypatch.setattr(socket, "socket", no_network)
    monkeypatch.setattr(socket, "create_connection", no_network)
    assert load_digits().data.shape == (1797, 64)
    X, y = fairness.arrests_table()
    assert X.shape == (5226, 7)
    assert y.mean() == pytest.approx(0.829, abs=0.001)
    groups, edges = fairness.age_groups(X["age"].to_numpy())
    assert edges.tolist() == [17.0, 20.0, 23.0, 30.0]
    assert np.bincount(groups).sum() == 5226
    # tied ages share a group
    for age in (17.0, 20.0, 23.0, 30.0):
        assert len(set(groups[X["age"].to_numpy() == age])) == 1


@pytest.mark.slow
def test_small_run_writes_the_report_and_holds_its_claims(tmp_path):
    config = {
        "study": "fairness",
        "name": "fairness-test",
        "seed": 1,
        "folds": 3,
        "bootstrap": 10,
        "permutations": 30,
        "working_points": [0.2, 0.5, 0.8],
        "arrests": {"methods": ["lr", "lr_gridkde", "information_filter"]},
        "digits": {"classes": [5, 9], "inner_cv": 3},
    }
    summary = fairness.run(config, tmp_path)
    on_disk = json.loads((tmp_path / "summary.json").read_text())
    assert_same_keys("fairness-test", on_disk)  # summary.json is a public format
    assert on_disk["claims"] == summary["claims"]
    report = (tmp_path / "report.md").read_text()
    assert "InformationFilter" in report
    assert [row["name"] for row in summary["arrests"]["methods"]] == config["arrests"]["methods"]
    for name in ("spread_demographic_parity.png", "auc_vs_dcc.png", "digits_score_vs_ink.png"):
        assert (tmp_path / name).stat().st_size > 10_000
    rows = {row["name"]: row for row in summary["arrests"]["methods"]}
    gridkde, raw = rows["lr_gridkde"], rows["lr"]
    assert gridkde["dcc"] < 2 * gridkde["dcc_floor"] < raw["dcc"]
    assert (np.asarray(gridkde["demographic_parity"]) < np.asarray(raw["demographic_parity"])).all()
    assert 0.6 < gridkde["auc"] < raw["auc"] + 3 * gridkde["auc_cost_sd"]


def test_the_methods_are_those_the_configuration_knows():
    from rosenblatt.studies.fairness.config import METHODS, ArrestsConfig

    methods = fairness._methods(ArrestsConfig(), seed=0)
    assert {m.name: m.raw for m in methods} == METHODS
    assert list(METHODS) == [m.name for m in methods]
    chosen = ArrestsConfig(methods=("lr", "lr_gridkde"))
    assert [m.name for m in fairness._methods(chosen, seed=0)] == ["lr", "lr_gridkde"]
