"""The method paper's LHCO numbers beside a run's, with a verdict per claim that its uncertainties support.

Each claim of the paper's LHCO section becomes a row: the paper's number, ours
(with its bootstrap standard deviation where the statistics stage gives one)
and a verdict — ``held``, ``did not hold`` or ``not decidable`` — with the
statistical reason, by the rule every study's claims follow
(:func:`rosenblatt.studies._common.decide`): a difference counts only beyond two bootstrap
standard deviations, and a p-value only below the two-sided tail of two.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from rosenblatt.studies._common import ALPHA, SIGNIFICANCE, decide, pm, verdict_reason

__all__ = ["PAPER", "paper_comparison", "paper_table"]

#: the paper's published LHCO results (its parameter choice and closure table at the optimal cut)
PAPER: Mapping[str, Any] = {
    "depth": 6,
    "sigma_r": 0.024,
    "disco_alpha": 3.5,
    "eta_best": {"baseline": -6.3e-6, "disco": -1.9e-5, "irgi": 2.0e-6, "kde": -4.9e-6},
    "total_a": {"baseline": 15597, "disco": 23283, "irgi": 34609, "kde": 52472},
    "true_signal_a": {"baseline": 7973, "disco": 7236, "irgi": 9237, "kde": 9446},
}

_DECORRELATED = ("irgi", "kde")
#: the largest |η_A| the paper's "of order 1e-6 to 1e-5" allows
_ETA_BOUND = 1e-5


def _err(entry: Mapping[str, Any], key: str) -> float:
    value = entry.get(f"{key}_err")
    return float(value) if value is not None and math.isfinite(float(value)) else math.nan


def _row(claim: str, paper: str, ours: str, verdict: str, reason: str) -> dict[str, str]:
    return {"claim": claim, "paper": paper, "ours": ours, "verdict": verdict, "reason": reason}


def _compare(margin: float, sd: float, held: str, failed: str) -> tuple[str, str]:
    """The verdict on a claim that holds by ``margin`` (positive: held), and why."""
    return decide(margin, sd), verdict_reason(margin, sd, held, failed)


def _parameters(summary: Mapping[str, Any]) -> list[dict[str, str]]:
    """The parameter choices: same value, or a scan flat within the uncertainty of dCor²."""
    rows = []
    for name, key, label in (("irgi", "depth", "IRGI depth d"), ("kde", "sigma_r", "KDE σ_r")):
        ours = summary[key]
        paper = PAPER[key]
        scan = {float(s["value"]): s for s in summary.get("scans", {}).get(name, [])}
        if math.isclose(float(ours), float(paper)):
            verdict, reason = "held", "the same value is chosen"
        elif float(paper) in scan and float(ours) in scan:
            gap = scan[float(paper)]["dcc"] - scan[float(ours)]["dcc"]
            sd = _err(summary[name], "dcc")
            verdict = decide(-gap, sd)
            if verdict == "not decidable":
                reason = f"dCor² at the paper's value is within {SIGNIFICANCE:g} sd of the chosen one ({gap:.2g} vs sd {sd:.2g})"
            else:
                reason = f"dCor² at the paper's value is higher by {gap:.2g} (sd {sd:.2g})"
        else:
            verdict, reason = "not decidable", "the paper's value is not in this run's scan"
        rows.append(
            _row(
                f"{label} chosen by lowest dCor² on the optimisation sample",
                f"{paper:g}",
                f"{ours:g}",
                verdict,
                reason,
            )
        )
    disco = summary.get("disco")
    if disco is not None:
        alpha = disco.get("alpha")
        same = alpha is not None and math.isclose(float(alpha), PAPER["disco_alpha"])
        rows.append(
            _row(
                "DisCo's representative (AUC > 0.8, lowest dCor²) has α = 3.5",
                "3.5",
                f"{alpha:g}" if alpha is not None else "-",
                "held" if same else "did not hold",
                "the same strength is chosen"
                if same
                else "another strength has the lowest dCor² above the AUC floor",
            )
        )
    return rows


def _best_cut(summary: Mapping[str, Any], names: Sequence[str]) -> list[dict[str, str]]:
    """The closure table at the optimal cut: the minimum of |eta| over the grid against its noise."""
    rows = []
    for name in names:
        entry = summary[name]
        sd = _err(entry, "eta_best")
        paper = PAPER["eta_best"][name]
        margin = _ETA_BOUND - abs(entry["eta_best"])
        verdict, reason = _compare(margin, sd, "below 1e-5", "above 1e-5")
        if verdict == "not decidable" and sd > 10 * abs(paper):
            reason = f"the best cut's η_A has sd {sd:.1e}, far above the paper's |η_A|: the minimum over the grid is set by noise"
        rows.append(
            _row(
                f"{name}: |η_A| at the optimal cut of order 1e-6 to 1e-5",
                f"{paper:.1e}",
                pm(entry["eta_best"], _err(entry, "eta_best"), ".1e"),
                verdict,
                reason,
            )
        )
    return rows


def _auc(summary: Mapping[str, Any]) -> list[dict[str, str]]:
    base = summary["baseline"]
    rows = []
    for name in _DECORRELATED:
        entry = summary[name]
        loss = base["auc"] - entry["auc"]
        sd = math.hypot(_err(entry, "auc"), _err(base, "auc"))
        verdict, reason = _compare(0.01 - loss, sd, "loss below 0.01", "loss above 0.01")
        reason = f"AUC loss {loss:+.4f} (sd {sd:.4f}): {reason}"
        rows.append(
            _row(
                f"{name}: AUC close to the best baseline's",
                "minimal loss",
                f"{pm(entry['auc'], _err(entry, 'auc'), '.4f')} vs {pm(base['auc'], _err(base, 'auc'), '.4f')}",
                verdict,
                reason,
            )
        )
    return rows


def _grid_fraction(summary: Mapping[str, Any], names: Sequence[str]) -> list[dict[str, str]]:
    """The central claim: a larger share of the cut grid closes for IRGI and KDE."""
    others = [n for n in names if n not in _DECORRELATED]
    key = "frac_eta_below_1e-2"
    rows = []
    for name in _DECORRELATED:
        entry = summary[name]
        rival = max(others, key=lambda n: summary[n][key])
        difference = entry[key] - summary[rival][key]
        sd = math.hypot(_err(entry, key), _err(summary[rival], key))
        verdict, reason = _compare(difference, sd, "larger", "smaller")
        ours = f"{pm(entry[key], _err(entry, key), '.3f')} vs {rival} {pm(summary[rival][key], _err(summary[rival], key), '.3f')}"
        rows.append(
            _row(
                f"{name}: larger fraction of the (x0, y0) grid with |η_A| < 1e-2 than the baseline and DisCo",
                "substantially larger",
                ours,
                verdict,
                reason,
            )
        )
    return rows


def _closure_test(summary: Mapping[str, Any], names: Sequence[str]) -> list[dict[str, str]]:
    """The claim made testable: the background-only non-closure over the grid against its covariance.

    A non-closure is significant where its p-value is below :data:`~rosenblatt.studies._common.ALPHA`
    (two standard deviations).
    """
    pvalues = {n: summary[n].get("closure_pvalue") for n in names}
    if any(p is None for p in pvalues.values()):
        return []
    rows = []
    base = float(pvalues["baseline"])
    for name in _DECORRELATED:
        p = float(pvalues[name])
        if p < ALPHA:
            verdict, reason = (
                "did not hold",
                f"its own background non-closure is significant (p = {p:.2g})",
            )
        elif base < ALPHA:
            verdict, reason = (
                "held",
                f"consistent with statistics (p = {p:.2g}) where the baseline's is not (p = {base:.2g})",
            )
        else:
            verdict = "not decidable"
            reason = f"the baseline's non-closure is also within statistics at this size (p = {base:.2g})"
        ours = "; ".join(
            f"{n} χ²/ndf {summary[n]['closure_chi2_ndf']:.2f}, p {float(pvalues[n]):.2g}"
            + (
                f", {summary[n]['frac_closure_consistent_2sd']:.2f} of the grid within 2 sd"
                if "frac_closure_consistent_2sd" in summary[n]
                else ""
            )
            for n in ("baseline", name)
        )
        rows.append(
            _row(
                f"{name}: background-only non-closure consistent with zero where the baseline's is not",
                "(not tested in the paper)",
                ours,
                verdict,
                reason,
            )
        )
    return rows


def paper_comparison(summary: Mapping[str, Any]) -> list[dict[str, str]]:
    """Rows ``{claim, paper, ours, verdict, reason}`` for an LHCO study's summary."""
    names = [n for n in ("baseline", "disco", "irgi", "kde") if n in summary]
    return [
        *_parameters(summary),
        *_auc(summary),
        *_best_cut(summary, names),
        *_grid_fraction(summary, names),
        *_closure_test(summary, names),
    ]


def paper_table(rows: Sequence[Mapping[str, str]]) -> str:
    """The rows as a Markdown table."""
    lines = ["| claim | paper | ours | verdict | why |", "|---|---|---|---|---|"]
    lines += [
        f"| {r['claim']} | {r['paper']} | {r['ours']} | **{r['verdict']}** | {r['reason']} |"
        for r in rows
    ]
    return "\n".join(lines)
