"""The Markdown report of the LHCO study (its figures: :mod:`~rosenblatt.studies.lhco.report_figures`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from rosenblatt.studies._common import Row, claim_lines, markdown_table, pm, rows_table
from rosenblatt.studies.lhco.paper import paper_table
from rosenblatt.studies.lhco.report_figures import LABELS, figures
from rosenblatt.studies.lhco.summary import (
    AutomaticChoice,
    ClassifierJson,
    ContaminationRow,
    LhcoSummary,
    PassFailComparison,
    StrengthScan,
    classifier_entries,
)

__all__ = ["figures", "report"]

#: the comparison on the testing sample: (label, key, key of its bootstrap sd, format)
COMPARISON = (
    Row("AUC", "auc", "auc_err", ".4f"),
    Row("dCor²(m_jj, score), background", "dcc", "dcc_err", ".2e"),
    Row("permutation floor", "dcc_floor", "dcc_floor_std", ".2e"),
    Row("permutation p-value", "dcc_p_value", None, ".2f"),
    Row("R50 (1/ε_B at ε_S = 0.5)", "r50", "r50_err", ".1f"),
    Row("1/JSD at ε_S = 0.5", "inverse_jsd", None, ".1f"),
)

#: the paper's closure table at the best cut, above and below the row of the cut itself
CLOSURE_HEAD = (
    Row("η_A at the best cut (bootstrap sd)", "eta_best", "eta_best_err", ".1e"),
    Row(
        "&nbsp;&nbsp;its uncertainty from the ABCD counts alone",
        "closure_at_best.eta_error",
        None,
        ".1e",
    ),
)
CLOSURE_TAIL = (
    Row("total events in A", "closure_at_best.total_a", None, ".0f"),
    Row("true signal in A", "closure_at_best.true_signal_a", None, ".0f"),
    Row(
        "signal estimate",
        "closure_at_best.signal_estimate",
        "closure_at_best.signal_estimate_error",
        ".1f",
    ),
    Row("fraction of grid with \\|η\\| < 1e-2", "frac_eta_below_1e-2", None, ".3f"),
    Row("fraction of grid with \\|η\\| < 1e-3", "frac_eta_below_1e-3", None, ".3f"),
    Row("pull mean", "pull_mean", None, ".2f"),
    Row("pull standard deviation", "pull_std", None, ".2f"),
)

#: the statistics of the study, first rows
STATISTICS = (
    Row("AUC", "auc", "auc_err", ".4f"),
    Row("dCor²(m_jj, score), background", "dcc", "dcc_err", ".2e"),
    Row("&nbsp;&nbsp;permutation floor", "dcc_floor", "dcc_floor_std", ".2e"),
    Row("R50", "r50", "r50_err", ".1f"),
    Row("η_A at the best cut", "eta_best", "eta_best_err", ".1e"),
)

_REPORT = """# LHC Olympics ABCD study: {name}

{headline}

QCD dijets and W'(3.5 TeV) -> X(500 GeV) Y(100 GeV) -> qqqq generated with Pythia 8,
anti-kT R = 1.0 jets from FastJet, the LHCO trigger (a jet with pT > 1.2 TeV), track images
of 36x36 pixels; a CNN trained over seeds (baseline) and DisCo strengths. IRGI (depth
{depth}) and KDE (σ_r = {sigma_r:g}) decorrelate the best baseline;
their parameters and DisCo's representative were chosen on the optimisation sample, as in
the paper. The testing sample holds background and 10% signal; ABCD uses m_jj < 4 TeV
({n_after_cut:,} events).

| sample | background | signal |
|---|---|---|
{size_rows}

## The paper's claims on this sample

{claims}

## Comparison on the testing sample

{comparison}

The permutation floor is the mean dCor² of the testing background's m_jj against permuted
scores: what independence alone gives at this sample size.

## ABCD closure (the paper's closure table)

{closure}

The closure was computed by the analysis processor (`rosenblatt.processors.analysis`) from
the event files: the testing sample's {in_abcd:,} events were read again, their
features computed, scored by the saved models' TorchScript files, transformed and filled into
ABCD histograms in the coffea workers. Its counts differ from those of the same events scored in
memory by at most {largest:g} events over the whole cut grid.

## Beside the paper

The paper's published LHCO numbers (its sizes: 45k + 45k training, 25k + 25k validation,
20k + 20k optimisation, 100k + 10k testing events) beside this run's; a difference counts
only beyond two bootstrap standard deviations.

{beside}

## The run

{run}

## Figures

{figures}
"""

_UNCERTAINTIES = """## Results with their uncertainties

{table}

Uncertainties are the standard deviation over {n_boot} bootstrap replicas: Poisson(1) weights
on the testing events and, for IRGI and KDE, the transform refitted on the defining sample with
Poisson(1) weights (`rb.bootstrap`, the chosen parameter); the baseline and DisCo are not
retrained, so theirs is the testing sample's alone. The best cut is fixed at the nominal one.
The closure test (`rosenblatt.abcd.closure_test`) asks whether the testing background's
non-closure `N_A - N_B N_C / N_D` over the whole cut grid (a sub-grid of cuts evenly spaced over
it, first and last included: neighbouring cuts share nearly all their events) is consistent
with its bootstrap covariance (Hotelling's p-value); for IRGI and KDE each replica also refits
the transform, so the covariance holds the transform's fit as well as the testing sample. The
fraction "within 2σ" tests each cut of the grid alone (about 0.95 if the background closes,
with a large scatter, as neighbouring cuts are correlated); the last grid fraction counts cuts
where |η_A| is below both 1e-2 and twice its bootstrap uncertainty. The expected significance and limit come from the
ABCD likelihood at the best cut (pyhf, `rosenblatt.abcd.pyhf_workspace`) with the testing
sample's background and signal as the expectation and its relative background non-closure as a
normsys; the workspaces are {workspaces}.{note}"""

_CONTAMINATION = """## Signal contamination of the defining sample

IRGI and KDE (chosen parameters) refitted with W' events of the validation sample injected into
the defining background. Signal bias: (estimated - true) / true signal in A at each transform's
nominal best cut of the testing sample (chosen at zero contamination, where it is near 0 by that
choice); uncertainties from the testing sample's bootstrap alone (the same events at every
fraction, so the trend is better known than each point).

"""

_AUTOMATIC = """## Parameters chosen on the defining sample alone

`depth="auto"` and `sigma_r="auto"` (k-fold cross-validation of the integrated Brier score on
the defining sample) beside the paper's rule; testing sample.

"""


def _names(summary: LhcoSummary) -> list[str]:
    """The classifiers of the summary, in the report's order."""
    return list(classifier_entries(summary))


def _header(summary: LhcoSummary, names: Sequence[str]) -> list[str]:
    return ["", *(_title(summary, n) for n in names)]


def report(summary: LhcoSummary, figs: dict[str, str]) -> str:
    """The Markdown report."""
    names = _names(summary)
    entries = [classifier_entries(summary)[n] for n in names]
    header = _header(summary, names)
    best_cut = ["best cut (x0 [GeV], y0)", *(f"({e['x0']:.0f}, {e['y0']:.3f})" for e in entries)]
    path = summary["processor_path"]
    return _REPORT.format(
        name=summary["name"],
        headline=_headline(summary, names),
        depth=summary["depth"],
        sigma_r=summary["sigma_r"],
        n_after_cut=summary["n_testing_after_mjj_cut"],
        size_rows="\n".join(
            f"| {part} | {s['background']:,} | {s['signal']:,} |"
            for part, s in summary["sizes"].items()
        ),
        claims=claim_lines(summary["claims"]),
        comparison=rows_table(header, COMPARISON, entries),
        closure=rows_table(header, [*CLOSURE_HEAD, best_cut, *CLOSURE_TAIL], entries),
        in_abcd=path["events_in_abcd"],
        largest=max(path["max_count_difference"].values()),
        beside=paper_table(summary.get("paper_comparison", [])),
        run=_run_section(summary),
        figures="\n\n".join(f"![{k}]({v})" for k, v in figs.items()),
    )


def _run_section(summary: LhcoSummary) -> str:
    """Provenance and the wall time of each step."""
    seconds = summary.get("step_seconds", {})
    steps = "\n".join(f"| {name} | {value / 60:.1f} min |" for name, value in seconds.items())
    commit = summary.get("commit") or "not a git checkout"
    if summary.get("uncommitted_changes"):
        commit += " (with uncommitted changes)"
    return f"""Configuration `{summary.get("configuration_file", "?")}`, rosenblatt {summary.get("rosenblatt_version", "?")},
commit `{commit}`. Every step reuses what an earlier run cached (events chunk by chunk, the
feature table, each trained model); the wall time of each step in this run:

| step | wall time |
|---|---|
{steps}"""


def _optional(value: Any, fmt: str) -> str:
    return "–" if value is None or not np.isfinite(value) else format(value, fmt)


def _closure_test_cell(entry: ClassifierJson) -> str:
    if entry["closure_chi2_ndf"] is None:
        return "–"
    return f"{entry['closure_chi2_ndf']:.2f} / {entry['closure_ndof']} dof (p = {entry['closure_pvalue']:.2f})"


def _sensitivity_cell(entry: ClassifierJson) -> str:
    cut = entry.get("sensitivity_best")
    if not cut:
        return "–"
    return f"{cut['significance']:.2f} at ({cut['x0']:.0f}, {cut['y0']:.3f}); limit {cut['upper_limit']:.2f}"


#: the statistics of the study after :data:`STATISTICS`: (label, the cell of one classifier)
_STATISTICS_CELLS: tuple[tuple[str, Callable[[ClassifierJson], str]], ...] = (
    ("closure test χ²/ndf (p-value)", _closure_test_cell),
    (
        "grid fraction with background non-closure within 2σ of 0",
        lambda e: _optional(e.get("frac_closure_consistent_2sd"), ".3f"),
    ),
    ("grid fraction \\|η_A\\| < 1e-2 (paper)", lambda e: f"{e['frac_eta_below_1e-2']:.3f}"),
    (
        "grid fraction \\|η_A\\| < 1e-2 and < 2σ",
        lambda e: f"{e['frac_eta_significant_below_1e-2']:.3f}",
    ),
    (
        "expected significance at the best cut (Asimov)",
        lambda e: _optional(e["significance"], ".2f"),
    ),
    ("expected 95% CLs upper limit on μ", lambda e: _optional(e["upper_limit"], ".2f")),
    ("non-closure normsys at the best cut", lambda e: _optional(e["nonclosure"], ".3f")),
)


def _statistics_table(summary: LhcoSummary, names: Sequence[str]) -> str:
    """Every classifier's figures of merit with their uncertainties, the closure test and the likelihood."""
    by_name = classifier_entries(summary)
    entries = [by_name[n] for n in names]
    rows: list[Row | list[str]] = list(STATISTICS)
    rows += [[label, *(cell(e) for e in entries)] for label, cell in _STATISTICS_CELLS]
    if any("sensitivity_best" in e for e in entries):
        label = "largest expected significance on a coarse cut grid (x0, y0)"
        rows.append([label, *(_sensitivity_cell(e) for e in entries)])
    table = rows_table(_header(summary, names), rows, entries)
    unusable = [
        f"{by_name[n].get('n_boot_unusable')} of {_title(summary, n)}"
        for n in names
        if by_name[n].get("n_boot_unusable")
    ]
    if unusable:
        table += (
            "\n\nReplicas whose refitted transform could not evaluate every testing event (a KDE with "
            'Poisson weights, "kernel-weighted sum not positive") are left out of the spread: '
            + ", ".join(unusable)
            + "."
        )
    return table


def _contamination_section(rows: list[ContaminationRow]) -> str:
    """The signal bias, AUC and dCor² of IRGI and KDE refitted on a contaminated defining sample."""
    table = markdown_table(
        [
            "transform",
            "injected W' (% of defining bkg)",
            "events",
            "signal bias in A",
            "AUC",
            "dCor²",
        ],
        [
            [
                LABELS[r["classifier"]],
                f"{100 * r['fraction']:g}",
                f"{r['n_injected']}",
                pm(r["signal_bias"], r["signal_bias_err"], "+.3f"),
                pm(r["auc"], r["auc_err"], ".4f"),
                pm(r["dcc"], r["dcc_err"], ".2e"),
            ]
            for r in rows
        ],
    )
    return _CONTAMINATION + table


def _automatic_section(summary: LhcoSummary, automatic: dict[str, AutomaticChoice]) -> str:
    """The paper's parameter rule beside the cross-validated choice on the defining sample."""
    rows = []
    for name, paper, value, symbol, fmt in (
        ("irgi", summary["irgi"], summary["irgi"]["depth"], "d", "d"),
        ("kde", summary["kde"], summary["kde"]["sigma_r"], "σ_r", "g"),
    ):
        auto = automatic[name]
        rows.append(
            [
                LABELS[name],
                f"{symbol} = {format(value, fmt)}: AUC {paper['auc']:.4f}, dCor² {paper['dcc']:.2e} (floor {paper['dcc_floor']:.2e})",
                f"{symbol} = {format(auto['value'], fmt)}: AUC {auto['auc']:.4f}, dCor² {auto['dcc']:.2e} (floor {auto['dcc_floor']:.2e})",
            ]
        )
    header = [
        "transform",
        "paper's rule (optimisation sample)",
        "cross-validated on the defining sample",
    ]
    return _AUTOMATIC + markdown_table(header, rows)


_STRENGTH = """## The decorrelation strength

Between the raw score and the transform, the scores `s_p = (1 - p) F(y) + p γ(m_jj, y)`
(`rosenblatt.transforms.strength`): `F` is the best baseline's marginal CDF on the defining
background, `γ` the transform at its chosen parameter, `p` the decorrelation strength. `p = 0`
ranks events as the baseline does (its R50 and 1/JSD), `p = 1` is the transform's own score.
On the testing sample: AUC; dCor²(m_jj, s_p) of the background; R50, the background rejection
1/ε_B at 50% signal efficiency; 1/JSD, the inverse Jensen-Shannon divergence (bits) of the
background m_jj spectra (50 bins) passing and failing that cut, larger when the cut sculpts
less; the fraction of the ABCD cut grid with |η_A| < 1e-2; the closure test of the background's
non-closure over the grid (`rosenblatt.abcd.closure_testing.closure_test_histogram`,
χ²/ndf and p-value): {n_boot} replicas of the testing sample, each shifted by one of the
bootstrap refits of `s_p` on the defining sample, the transform and `F` together ({refits}),
so that the covariance holds the fit of the score as the transform's own closure test above
does; "closes" when that p-value is at least 0.05. The figure `strength_r50_jsd.png` draws R50
against 1/JSD for each strength beside every model of the classifier scan (DisCo's points).

"""


def _strength_section(summary: LhcoSummary, scan: StrengthScan) -> str:
    """The strength scan of IRGI and KDE, then the classifier scan's R50 and 1/JSD."""
    rows = []
    for name, points in scan["transforms"].items():
        for point in points:
            closes = point["closes"]
            rows.append(
                [
                    _title(summary, name),
                    f"{point['strength']:g}",
                    f"{point['auc']:.4f}",
                    f"{point['dcc']:.2e}",
                    _optional(point["r50"], ".1f"),
                    _optional(point["inverse_jsd"], ".1f"),
                    f"{point['frac_eta_below_1e-2']:.3f}",
                    _optional(point["closure_chi2_ndf"], ".2f"),
                    _optional(point["closure_pvalue"], ".2f"),
                    "–" if closes is None else ("yes" if closes else "no"),
                ]
            )
    header = [
        "transform",
        "strength p",
        "AUC",
        "dCor²",
        "R50",
        "1/JSD",
        "grid fraction \\|η_A\\| < 1e-2",
        "closure χ²/ndf",
        "closure p-value",
        "closes",
    ]
    models = markdown_table(
        ["model", "α", "AUC", "R50", "1/JSD"],
        [
            [
                m["model"],
                f"{m['alpha']:g}",
                f"{m['auc']:.4f}",
                _optional(m["r50"], ".1f"),
                _optional(m["inverse_jsd"], ".1f"),
            ]
            for m in scan["models"]
        ],
    )
    return (
        _STRENGTH.format(
            n_boot=scan["closure_n_boot"],
            refits=", ".join(f"{n} of {_title(summary, k)}" for k, n in scan["refits"].items()),
        )
        + markdown_table(header, rows)
        + "\n\nThe classifier scan on the same testing events (α = 0: a baseline; α > 0: DisCo):\n\n"
        + models
    )


_PASSFAIL = """## ABCD count and pass/fail fit side by side

The same testing events and the same W' signal (μ = 1: the testing sample's signal), each
classifier at the cut on its score of its best ABCD cut. **ABCD count**: the four-region
likelihood at the cut (x0, y0) (`rosenblatt.abcd.likelihood_at_cut`, the non-closure normsys
of the table above), its expected (Asimov) significance Z and median expected 95% CLs upper
limit on μ. **Pass/fail fit**: the events below m_jj = {mjj_max:.0f} GeV failing (score < y0)
and passing the cut in {bins} bins of m_jj ({low:.0f} to {mjj_max:.0f} GeV), the failing
background free in every bin, the passing one the same times one transfer ratio, the signal's
template in both regions (`rosenblatt.abcd.passfail`); its expected Z and limit by the same
asymptotic formulae (`rosenblatt.abcd.transfer.passfail_expected`), with the testing
background's non-closure per bin (its pass/fail ratio in the bin over the overall one, in
quadrature with that ratio's statistical error, a shapesys) and, in brackets, without it.
**Transfer check**: the background's per-bin ratios against a constant (χ²/ndf and p-value) and
a straight line's relative slope per TeV with the p-value of zero slope; "linear needed" when
that p-value is below 0.05, as for a score that sculpts m_jj. Workspaces:
`passfail_workspace_<classifier>.json`.

"""


def _beside(value: float | None, other: float | None, fmt: str) -> str:
    """``value (other)``."""
    return f"{_optional(value, fmt)} ({_optional(other, fmt)})"


def _with_p(text: str, p_value: float | None) -> str:
    """``text (p = p_value)``."""
    return f"{text} (p = {_optional(p_value, '.2g')})"


def _passfail_section(summary: LhcoSummary, passfail: PassFailComparison) -> str:
    """The ABCD likelihood and the pass/fail fit of every classifier, at the same cut."""
    by_name = classifier_entries(summary)
    rows = []
    notes = []
    for name, side in passfail["classifiers"].items():
        entry = by_name.get(name)
        if entry is None:
            continue
        needed = side["linear_transfer_needed"]
        rows.append(
            [
                _title(summary, name),
                f"({entry['x0']:.0f}, {side['y0']:.3f})",
                _optional(entry.get("significance"), ".2f"),
                _optional(entry.get("upper_limit"), ".3f"),
                _beside(side["significance"], side["significance_stat_only"], ".2f"),
                _beside(side["upper_limit"], side["upper_limit_stat_only"], ".3f"),
                _with_p(_optional(side["transfer_chi2_ndf"], ".2f"), side["transfer_p_value"]),
                _with_p(
                    _optional(side["transfer_slope"], "+.2f")
                    + " ± "
                    + _optional(side["transfer_slope_error"], ".2f"),
                    side["transfer_slope_p_value"],
                ),
                "–" if needed is None else ("yes" if needed else "no"),
            ]
        )
        if side["note"]:
            notes.append(f"{_title(summary, name)}: {side['note']}")
    header = [
        "classifier",
        "cut (x0 [GeV], y0)",
        "ABCD Z",
        "ABCD limit on μ",
        "pass/fail Z (stat. only)",
        "pass/fail limit on μ (stat. only)",
        "transfer χ²/ndf (p)",
        "transfer slope per TeV (p)",
        "linear needed",
    ]
    edges = passfail["edges"]
    text = _PASSFAIL.format(mjj_max=edges[-1], bins=len(edges) - 1, low=edges[0])
    text += markdown_table(header, rows)
    if notes:
        text += "\n\nNotes: " + "; ".join(notes) + "."
    return text


def _headline(summary: LhcoSummary, names: Sequence[str]) -> str:
    """The statistics of the study: uncertainties, closure test, likelihood, contamination."""
    by_name = classifier_entries(summary)
    notes = [
        f"{_title(summary, n)}: {by_name[n].get('likelihood_note')}"
        for n in names
        if by_name[n].get("likelihood_note")
    ]
    workspaces = ", ".join(
        f"`{by_name[n].get('workspace')}`" for n in names if by_name[n].get("workspace")
    )
    sections = [
        _UNCERTAINTIES.format(
            table=_statistics_table(summary, names),
            n_boot=by_name[names[0]].get("n_boot", 0),
            workspaces=workspaces or "not written",
            note=("\n\nLikelihood notes: " + "; ".join(notes) + ".") if notes else "",
        )
    ]
    if summary.get("contamination"):
        sections.append(_contamination_section(summary["contamination"]))
    automatic = summary.get("automatic_parameters")
    if automatic:
        sections.append(_automatic_section(summary, automatic))
    scan = summary.get("strength_scan")
    if scan:
        sections.append(_strength_section(summary, scan))
    passfail = summary.get("passfail")
    if passfail:
        sections.append(_passfail_section(summary, passfail))
    timings = summary.get("statistics_seconds", {})
    if timings:
        sections.append(
            "The statistics stage took "
            + ", ".join(f"{k.replace('_', ' ')} {v:.1f} s" for k, v in timings.items())
            + "."
        )
    return "\n\n".join(sections)


def _title(summary: LhcoSummary, name: str) -> str:
    if name == "irgi":
        return f"IRGI d={summary['irgi']['depth']}"
    if name == "kde":
        return f"KDE σ_r={summary['kde']['sigma_r']:g}"
    disco = summary.get("disco")
    if name == "disco" and disco is not None and "alpha" in disco:
        return f"DisCo α={disco['alpha']:g}"
    return LABELS[name]
