"""The paper-versus-ours table: each verdict follows from the numbers and their uncertainties."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from rosenblatt.studies.lhco.paper import PAPER, paper_comparison, paper_table


def _entry(**values: Any) -> dict[str, Any]:
    entry = {
        "auc": 0.90,
        "auc_err": 0.002,
        "eta_best": 1e-5,
        "eta_best_err": 5e-3,
        "frac_eta_below_1e-2": 0.20,
        "frac_eta_below_1e-2_err": 0.01,
        "closure_chi2_ndf": 1.0,
        "closure_pvalue": 0.5,
        "dcc": 1e-4,
        "dcc_err": 2e-5,
    }
    entry.update(values)
    return entry


def _summary() -> dict[str, Any]:
    return {
        "baseline": _entry(closure_chi2_ndf=3.0, closure_pvalue=1e-6),
        "disco": _entry(auc=0.85, alpha=3.5),
        "irgi": _entry(**{"frac_eta_below_1e-2": 0.40}),
        "kde": _entry(**{"frac_eta_below_1e-2": 0.21}),
        "depth": 6,
        "sigma_r": 0.0335,
        "scans": {
            "irgi": [{"value": 6, "dcc": 1e-4}],
            "kde": [{"value": 0.024, "dcc": 1.1e-4}, {"value": 0.0335, "dcc": 1.0e-4}],
        },
    }


def _verdicts(summary: dict[str, Any]) -> dict[str, str]:
    return {row["claim"]: row["verdict"] for row in paper_comparison(summary)}


def _find(verdicts: dict[str, str], *words: str) -> str:
    (match,) = [v for claim, v in verdicts.items() if all(w in claim for w in words)]
    return match


def test_verdicts_follow_the_uncertainties() -> None:
    verdicts = _verdicts(_summary())
    assert _find(verdicts, "IRGI depth") == "held"
    # 1e-5 apart with a dCor² sd of 2e-5: the scan cannot tell the two sigma_r apart
    assert _find(verdicts, "KDE σ_r") == "not decidable"
    assert _find(verdicts, "α = 3.5") == "held"
    # 0.40 vs 0.20 with sd 0.014: 14 sd; 0.21 vs 0.20: 0.7 sd
    assert _find(verdicts, "irgi: larger fraction") == "held"
    assert _find(verdicts, "kde: larger fraction") == "not decidable"
    # an sd of 5e-3 on eta at the best cut is far above the paper's 1e-6..1e-5
    assert _find(verdicts, "irgi: |η_A| at the optimal") == "not decidable"
    assert _find(verdicts, "irgi: background-only") == "held"
    assert _find(verdicts, "irgi: AUC") == "held"


def test_a_clear_loss_does_not_hold() -> None:
    summary = _summary()
    summary["kde"].update({"frac_eta_below_1e-2": 0.05, "auc": 0.80, "closure_pvalue": 1e-4})
    summary["sigma_r"] = 0.1
    summary["scans"]["kde"].append({"value": 0.1, "dcc": 1e-5})
    verdicts = _verdicts(summary)
    assert _find(verdicts, "kde: larger fraction") == "did not hold"
    assert _find(verdicts, "kde: AUC") == "did not hold"
    assert _find(verdicts, "kde: background-only") == "did not hold"
    assert _find(verdicts, "KDE σ_r") == "did not hold"


def test_no_decision_when_the_baseline_also_closes() -> None:
    summary = _summary()
    summary["baseline"]["closure_pvalue"] = 0.3
    assert _find(_verdicts(summary), "irgi: background-only") == "not decidable"


def test_no_decision_without_uncertainties() -> None:
    summary = copy.deepcopy(_summary())
    for name in ("baseline", "disco", "irgi", "kde"):
        summary[name].pop("frac_eta_below_1e-2_err")
    assert _find(_verdicts(summary), "irgi: larger fraction") == "not decidable"


@pytest.mark.parametrize("name", ["baseline", "disco", "irgi", "kde"])
def test_table_carries_the_papers_closure_numbers(name: str) -> None:
    table = paper_table(paper_comparison(_summary()))
    assert f"{PAPER['eta_best'][name]:.1e}" in table
    assert table.count("\n") == len(paper_comparison(_summary())) + 1


def test_the_published_report_states_one_verdict_per_claim() -> None:
    """docs/results/lhco-paper: summary.json and report.md agree, section by section."""
    import json
    from pathlib import Path

    from rosenblatt.studies._common import verdict_of
    from rosenblatt.studies.lhco.claims import paper_claims

    folder = Path(__file__).parents[1] / "docs" / "results" / "lhco-paper"
    summary = json.loads((folder / "summary.json").read_text(encoding="utf-8"))
    report = (folder / "report.md").read_text(encoding="utf-8")
    # what is published is what today's rule decides on the published numbers
    assert summary["claims"] == paper_claims(summary)
    assert summary["paper_comparison"] == paper_comparison(summary)
    for claim in summary["claims"]:
        assert f"- **{verdict_of(claim)}**: {claim['claim']} ({claim['value']})" in report
    for row in summary["paper_comparison"]:
        assert (
            f"| {row['claim']} | {row['paper']} | {row['ours']} | **{row['verdict']}** |" in report
        )
    # the grid-fraction claim of each decorrelated score, in both sections: 1.5 and 1.9 sd
    for name in ("irgi", "kde"):
        (claim,) = [c for c in summary["claims"] if f"for {name.upper()} than" in c["claim"]]
        (row,) = [
            r for r in summary["paper_comparison"] if r["claim"].startswith(f"{name}: larger")
        ]
        assert verdict_of(claim) == row["verdict"] == "not decidable"
