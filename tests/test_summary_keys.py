"""summary.json is a public format: the recorded key sets, and the published run's summary."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from summary_keys import RECORDED, assert_same_keys, key_paths, recorded

pytestmark = pytest.mark.core

PUBLISHED = Path(__file__).parents[1] / "docs" / "results" / "lhco-paper" / "summary.json"


def test_key_paths_name_every_key_and_list_elements_together() -> None:
    summary = {"a": 1, "b": {"c": [1, 2], "d": [{"e": 1}, {"f": None}]}, "g": []}
    assert key_paths(summary) == {
        ("a",),
        ("b",),
        ("b", "c"),
        ("b", "c", "[]"),
        ("b", "d"),
        ("b", "d", "[]"),
        ("b", "d", "[]", "e"),
        ("b", "d", "[]", "f"),
        ("g",),
        ("g", "[]"),
    }


def test_a_changed_key_is_named() -> None:
    summary = json.loads(PUBLISHED.read_text(encoding="utf-8"))
    summary["irgi"]["auc_sd"] = summary["irgi"].pop("auc_err")
    with pytest.raises(AssertionError, match=r"missing \['irgi/auc_err'\], new \['irgi/auc_sd'\]"):
        assert_same_keys("lhco-paper", summary)


def test_the_published_summary_keeps_its_keys() -> None:
    assert_same_keys("lhco-paper", json.loads(PUBLISHED.read_text(encoding="utf-8")))


def test_every_study_has_recorded_keys() -> None:
    """Each study, as its tests run it (abcd also as its example configuration)."""
    names = set(json.loads(RECORDED.read_text(encoding="utf-8")))
    assert names == {
        "abcd-example",
        "abcd-test",
        "blobs-smoke",
        "fairness-test",
        "lhco-2d-smoke",
        "lhco-paper",
        "lhco-smoke",
        "passfail-toys-test",
        "toys-test",
    }
    for name in names - {"abcd-example", "abcd-test", "lhco-2d-smoke"}:
        assert ("claims", "[]", "held") in recorded(name), name
