"""The ``report.md`` of the ABCD analysis study: cut flow, transforms, closure, estimate, statistics."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from rosenblatt.studies.abcd.estimate import CLOSURE_P_MIN, CLOSURE_TEST

if TYPE_CHECKING:
    from rosenblatt.studies.abcd.estimate import EstimateJson
    from rosenblatt.studies.abcd.summary import AbcdSummary, LikelihoodJson

__all__ = ["report"]


def report(summary: AbcdSummary, figures: dict[str, str]) -> str:
    """The study's ``report.md``."""
    lines = [
        f"# ABCD analysis: {summary['name']}",
        "",
        f"Configuration: `{summary['configuration_file']}`.",
        "",
    ]
    lines += _cutflow_lines(summary)
    lines += ["", "## Transforms", ""]
    for name, route in summary["transforms"].items():
        saved = f"fitted in the {route}; saved as `{name}.json`"
        lines.append(f"- `{name}`: {saved if name in summary['closure'] else route}")
    lines += _closure_lines(summary)
    lines += _estimate_lines(summary)
    lines += _passfail_lines(summary)
    lines += _statistics_lines(summary)
    lines += ["", "## Time per step", ""] + [
        f"- {step}: {seconds:.1f} s" for step, seconds in summary["step_seconds"].items()
    ]
    lines += ["", "## Figures", ""] + [f"![{variant}]({name})" for variant, name in figures.items()]
    return "\n".join(lines) + "\n"


def _cutflow_lines(summary: AbcdSummary) -> list[str]:
    """The cut flow per data set, the blinded regions beneath it, and what was left out."""
    steps = _steps(summary)
    lines = [
        "## Cut flow",
        "",
        "| dataset | " + " | ".join(steps) + " |",
        "|---|" + "---|" * len(steps),
    ]
    for dataset, counts in sorted(summary["cutflow"]["fileset"].items()):
        lines.append(
            f"| {dataset} | "
            + " | ".join(
                "blinded"
                if step not in counts and _blinded(summary, counts)
                else str(counts.get(step, 0))
                for step in steps
            )
            + " |"
        )
    for dataset, counts in sorted(summary["cutflow"]["defining"].items()):
        lines.append(
            f"| {dataset} (defining) | "
            + " | ".join(str(counts.get(step, 0)) for step in steps)
            + " |"
        )
    lines += _blinded_cutflow_lines(summary)
    lines += _weighted_cutflow_lines(summary, steps)
    skipped = summary["cutflow"]["skipped_files"]
    unreadable = summary["cutflow"]["unreadable_chunks"]
    if skipped or unreadable:
        lines += ["", "**Files and chunks left out** (`skip_bad_files: true`):", ""]
        for path, info in sorted(skipped.items()):
            entries = "unknown number of" if info.get("entries") is None else str(info["entries"])
            lines.append(f"- `{path}`: {entries} events, {info['reason']}")
        for path, chunks in sorted(unreadable.items()):
            for start, stop, reason in chunks:
                lines.append(f"- `{path}` entries {start}-{stop} ({stop - start} events): {reason}")
    return lines


def _closure_lines(summary: AbcdSummary) -> list[str]:
    """Each variant's closure over the cut grid: the chosen cut beside the best one."""
    lines = [
        "",
        "## Closure over the cut grid",
        "",
        "| variant | chosen x0 | chosen y0 | best x0 | best y0 | eta at best | frac abs(eta) < 1e-2 | frac abs(eta) < 1e-3 | pull mean | pull sd |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    estimates = summary.get("estimate") or {}
    for variant, c in summary["closure"].items():
        best = c["best"] or {}
        eta = f"{best['eta']:.2e} ± {best['eta_error']:.1e}" if best else "-"
        chosen = estimates.get(variant, {})
        lines.append(
            f"| {variant} | {_fmt_num(chosen.get('x0'), '.4g')} | {_fmt_num(chosen.get('y0'), '.4g')} | "
            f"{best.get('x0', float('nan')):.4g} | {best.get('y0', float('nan')):.4g} | {eta} | "
            f"{c['frac_eta_below_1e-2']:.3f} | {c['frac_eta_below_1e-3']:.3f} | {_fmt(c['pull_mean'])} | {_fmt(c['pull_std'])} |"
        )
    lines += [
        "",
        "*chosen*: the cut of the estimate below (fixed on simulation); *best*: the cut of smallest",
        "abs(eta_A), the relative signal non-closure of all simulated events (the method paper's measure),",
        "with its statistical error; *frac*: the fraction of the grid's cuts below each value;",
        "*pull mean* and *pull sd*: the mean and standard deviation over the grid of eta_A divided by its",
        "error (0 and 1 where the non-closure is statistical, larger where it is not).",
    ]
    return lines


def _statistics_lines(summary: AbcdSummary) -> list[str]:
    """The report's sections on the bootstrap ensembles and the pyhf workspaces, with how to use them."""
    lines = _ensemble_lines(summary["ensembles"])
    if "estimate" in summary:
        return lines
    return lines + _likelihood_lines(summary["likelihood"])


def _ensemble_lines(ensembles: dict[str, str]) -> list[str]:
    """The bootstrap ensemble of each transform (or why there is none), and how to use one."""
    lines = ["", "## Bootstrap ensembles of the transforms", ""]
    made = {name: note for name, note in ensembles.items() if note.endswith("_ensemble.json")}
    for name, note in ensembles.items():
        lines.append(f"- `{name}`: " + (f"`{note}`" if name in made else note))
    if not made:
        return lines
    name, file = next(iter(made.items()))
    lines += [
        "",
        "Each file holds the nominal transform (equal to `<name>.json`) and its replicas refitted with",
        "Poisson(1) event weights on the defining sample: the transform's statistical uncertainty.",
        "",
        "```python",
        "import rosenblatt as rb",
        f'ens = rb.load("{file}")',
        "gamma = ens.transform(x, score)                    # the nominal",
        'gamma_up = ens.transform(x, score, variation="up")  # "down": the per-event ±1 sd envelope; "replica_<k>"',
        "spread = ens.std(x, score)                         # per event; ens.variations(x, score): every replica",
        "```",
        "",
        f"`rosenblatt export {file} --correctionlib {name}_ensemble_correction.json` writes it for",
        "correctionlib (grid transforms) with a string input `variation`; a closure test that also",
        "refits the transform passes the replicas' scores to",
        "`rosenblatt.abcd.closure_test(..., replica_scores=ens.variations(x, score))`.",
    ]
    return lines


def _likelihood_lines(likelihood: dict[str, LikelihoodJson]) -> list[str]:
    """The ABCD likelihood at each variant's best cut, its notes, and how to read a workspace."""
    lines = ["", "## ABCD likelihood (pyhf) at each variant's best cut", ""]
    written = {variant: r for variant, r in likelihood.items() if r.get("workspace")}
    if written:
        lines += [
            "| variant | x0 | y0 | expected significance (Asimov) | expected 95% CLs limit on μ | non-closure normsys | workspace |",
            "|---|---|---|---|---|---|---|",
        ]
        for variant, r in written.items():
            lines.append(
                f"| {variant} | {r['x0']:.4g} | {r['y0']:.4g} | {_number(r['significance'])} | "
                f"{_number(r['upper_limit'])} | {r['nonclosure']:.3f} | `{r['workspace']}` |"
            )
    notes = [
        f"`{variant}`: {r['likelihood_note']}"
        for variant, r in likelihood.items()
        if r.get("likelihood_note")
    ]
    if notes:
        lines += ["", "Notes: " + "; ".join(notes) + "."]
    if written:
        lines += _workspace_usage_lines(next(iter(written.values()))["workspace"])
    return lines


def _workspace_usage_lines(workspace: str) -> list[str]:
    """How to read the pyhf workspace ``workspace`` and fit it."""
    return [
        "",
        "Four single-bin channels A, B, C, D; the background is D = n, B = n τ_x, C = n τ_y,",
        "A = n τ_x τ_y (free normfactors), the signal enters every region with strength `mu`, and",
        "the background's measured relative non-closure enters A as the normsys `nonclosure`. The",
        "observations are the file set's expected counts: put the data's counts in A to D to fit data.",
        "",
        "```python",
        "import json, pyhf",
        f'ws = pyhf.Workspace(json.load(open("{workspace}")))',
        "model = ws.model()",
        "data = ws.data(model)                                # or the data's [A, B, C, D] + model.config.auxdata",
        "pars = pyhf.infer.mle.fit(data, model)               # best fit; A's background is B C / D",
        'cls_obs = pyhf.infer.hypotest(1.0, data, model, test_stat="qtilde")',
        "```",
    ]


def _estimate_lines(summary: AbcdSummary) -> list[str]:
    """The data-driven estimate per variant, with the variants whose closure fails flagged."""
    estimates = summary.get("estimate")
    if not estimates:
        return []
    lines = [
        "",
        "## Data-driven estimate",
        "",
        "The cut of each variant was fixed on simulation before the data were read. "
        + (
            "Region A of the data is blinded (`blind: true`): its events were never filled, "
            "and a variant without a cut holds no data."
            if summary["blind"]
            else "Unblinded (`blind: false`)."
        ),
        "",
        "| variant | x0 | y0 | B | C | D | BC/D | closure factor (sim.) | predicted A | expected Z | expected limit on μ | observed A | observed Z | observed limit | valid |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    lines += [
        f"| {variant} | " + " | ".join(_estimate_cells(e)) + " |"
        for variant, e in estimates.items()
    ]
    lines += _estimate_notes(estimates)
    lines += [
        "",
        "The prediction is the data's B C / D times the closure factor of the background simulation,",
        "N_A N_D / (N_B N_C), which is 1 for an exact decorrelation; the closure factor's uncertainty, from",
        "the keyed bootstrap of the transform's fit (`closure_correction` in `estimate.json`), is the",
        "prediction's syst. `estimate.json` holds these numbers with each part named;",
        "`workspace_<variant>.json` the pyhf likelihood with the data as observations. A variant is valid",
        f"where {CLOSURE_TEST} has p >= {CLOSURE_P_MIN} over the whole grid.",
    ]
    lines += _simulation_yield_lines(estimates)
    lines += _contamination_lines(estimates)
    return lines


def _estimate_cells(e: EstimateJson) -> list[str]:
    """One variant's row of the estimate table; the statistics of an invalid variant are not shown."""
    closure = e.get("closure_correction")
    factor, factor_error = (
        (None, None) if closure is None else (closure["factor"], closure["error"])
    )
    valid = e.get("valid")
    edges = e.get("cut_on_grid_edge_axes", [])
    cells = [
        _fmt_num(value, ".4g") + (" (grid edge)" if axis in edges else "")
        for axis, value in (("x0", e.get("x0")), ("y0", e.get("y0")))
    ]
    cells += [
        _fmt_num(e.get("B"), ".6g"),
        _fmt_num(e.get("C"), ".6g"),
        _fmt_num(e.get("D"), ".6g"),
        _fmt_num(e.get("predicted_A_uncorrected"), ".1f"),
        f"{_fmt_num(factor, '.3f')} ± {_fmt_num(factor_error, '.3f')}",
        f"{_fmt_num(e.get('predicted_A'), '.1f')} ± {_fmt_num(e.get('predicted_A_stat'), '.1f')} (stat) ± {_fmt_num(e.get('predicted_A_syst'), '.1f')} (syst)",
    ]
    for key in (
        "expected_significance",
        "expected_upper_limit",
        "observed_A",
        "observed_significance",
        "observed_upper_limit",
    ):
        shown = valid is True or key == "observed_A"
        cells.append(_fmt_num(e.get(key), ".2f") if shown else "not valid")
    cells.append("yes" if valid else "**estimate not valid here**")
    return cells


def _estimate_notes(estimates: dict[str, EstimateJson]) -> list[str]:
    """The notes beneath the estimate table: why a variant is not valid, cuts on the grid's edge."""
    lines = []
    notes = [f"`{v}`: {e['note']}" for v, e in estimates.items() if e.get("note")]
    if notes:
        lines += ["", "Notes: " + "; ".join(notes) + "."]
    edges = {
        v: e["cut_on_grid_edge_axes"]
        for v, e in estimates.items()
        if e.get("cut_on_grid_edge_axes")
    }
    if edges:
        named = ", ".join(f"`{v}` ({' and '.join(axes)})" for v, axes in edges.items())
        lines += [
            "",
            (
                f"**On the edge of the scanned grid**: the cut of {named} is the first or last "
                "value of that axis (`abcd.x0`, `abcd.y0`); a wider grid may hold a better one."
            ),
        ]
    return lines


def _simulation_yield_lines(estimates: dict[str, EstimateJson]) -> list[str]:
    """The background and signal simulation in each region at each variant's cut (weighted)."""
    rows = [
        (variant, process, counts)
        for variant, e in estimates.items()
        for process, counts in (
            ("background simulation", e.get("background_simulation")),
            ("signal simulation", e.get("signal_expected")),
        )
        if counts is not None
    ]
    if not rows:
        return []
    lines = [
        "",
        "Simulation at each variant's cut (sums of weights, normalised to the luminosity where the",
        "dataset has a cross section):",
        "",
        "| variant | process | A | B | C | D |",
        "|---|---|---|---|---|---|",
    ]
    for variant, process, counts in rows:
        cells = " | ".join(_fmt_num(counts[r], ".4g") for r in ("A", "B", "C", "D"))
        lines.append(f"| {variant} | {process} | {cells} |")
    return lines


def _contamination_lines(estimates: dict[str, EstimateJson]) -> list[str]:
    """The signal simulation's share of the data's control regions at each variant's cut."""
    rows = [
        (variant, shares)
        for variant, e in estimates.items()
        if (shares := e.get("signal_contamination")) is not None
        and any(shares[r] for r in ("B", "C", "D"))
    ]
    if not rows:
        return []
    lines = [
        "",
        "Signal in the control regions: the signal simulation at μ = 1 over the data's count, and how",
        "far B C / D (and so the predicted A, which assumes no signal there) then lies above that of the",
        "background alone. The workspace fits the signal in every region.",
        "",
        "| variant | signal in B | signal in C | signal in D | predicted A above the background's |",
        "|---|---|---|---|---|",
    ]
    for variant, shares in rows:
        cells = [_fmt_percent(shares[key]) for key in ("B", "C", "D", "predicted_A_shift")]
        lines.append(f"| {variant} | " + " | ".join(cells) + " |")
    return lines


def _fmt_percent(value: float | None) -> str:
    return "–" if value is None or not np.isfinite(value) else f"{100 * value:.3g}%"


def _passfail_lines(summary: AbcdSummary) -> list[str]:
    """Each variant's pass/fail fit in bins of x at its cut (``passfail:``), or why it has none."""
    fits = summary.get("passfail")
    if fits is None:
        return []
    lines = [
        "",
        "## Pass/fail fit in bins of x",
        "",
        "At each variant's cut y0, the failing background is free in every bin of x and the",
        "passing background is it times one transfer ratio; the signal simulation enters both",
        "regions and the background simulation's per-bin non-closure is a systematic of each bin",
        "(`passfail/<variant>/workspace.json`, numbers in `passfail/<variant>/passfail.json`).",
        "",
        "| variant | y0 | μ (68% interval) | fitted ratio | expected (sim.) | (1-eps)/eps | linear transfer needed (sim.) | figure |",
        "|---|---|---|---|---|---|---|---|",
    ]
    notes = []
    for variant, fit in fits.items():
        if "mu" not in fit:
            notes.append(f"- `{variant}`: {fit.get('note', 'no fit')}")
            continue
        interval = (
            f"{fit['mu']:.3g} [{_fmt_num(fit['mu_low'], '.3g')}, {_fmt_num(fit['mu_high'], '.3g')}]"
        )
        needed = fit.get("linear_transfer_needed")
        lines.append(
            f"| {variant} | {fit['y0']:.4g} | {interval} | {fit['transfer_fitted']:.4g} | "
            f"{fit['transfer_expected']:.4g} | {_fmt_num(fit.get('transfer_uniform'), '.4g')} | "
            f"{'–' if needed is None else ('yes' if needed else 'no')} | "
            f"![{variant}]({fit['figure']}) |"
        )
    if summary["blind"]:
        lines += [
            "",
            "Blinded: the data's passing events above x0 were never filled; the passing observation of",
            "the bins above x0 is the failing data times the data's pass/fail ratio below x0, so μ is an",
            "expected result.",
        ]
    lines += ["", *notes] if notes else []
    for variant, fit in fits.items():
        if fit.get("categories"):
            lines += _category_lines(variant, fit["categories"])
    for variant, fit in fits.items():
        if "bumphunt" in fit:
            lines += _bumphunt_lines(variant, fit["bumphunt"])
    return lines


def _category_lines(variant: str, categories: list[dict[str, Any]]) -> list[str]:
    """A variant's categories of ``passfail.cuts``: each one's transfer ratio and figure."""
    lines = [
        "",
        f"Categories of `{variant}` (`passfail.cuts`), fitted together for one μ:",
        "",
        "| category | fitted ratio | expected (sim.) | eps_k/(1-eps) | figure |",
        "|---|---|---|---|---|",
    ]
    for category in categories:
        low, high = category["cuts"]
        span = f"score ≥ {low:.4g}" if high is None else f"{low:.4g} ≤ score < {high:.4g}"
        lines.append(
            f"| {span} | {category['transfer_fitted']:.4g} | "
            f"{category['transfer_expected']:.4g} | "
            f"{_fmt_num(category.get('transfer_uniform'), '.4g')} | "
            f"![{category['channel']}]({category['figure']}) |"
        )
    return lines


def _bumphunt_lines(variant: str, hunt: dict[str, Any]) -> list[str]:
    """A variant's bump hunt (``passfail.masses``): per mass its local Z and limits."""
    if "masses" not in hunt:
        return ["", f"Bump hunt of `{variant}`: {hunt.get('note', 'none')}"]
    confidence = f"{100 * (1 - hunt['level']):.0f}%"
    lines = ["", f"### Bump hunt of `{variant}`", ""]
    if hunt.get("categories"):
        spans = ", ".join(
            f"score ≥ {low:.4g}" if high is None else f"{low:.4g} ≤ score < {high:.4g}"
            for low, high in hunt["categories"]
        )
        lines += [f"Over the categories of `passfail.cuts` ({spans}), fitted for one μ.", ""]
    figures = hunt["figures"]
    if hunt["blind"]:
        lines += [
            "Blinded: the passing observation of the bins above x0 is the sidebands' prediction,",
            "so only the expected limits are results (no local significance, no observed limit).",
            "",
            f"| mass | expected {confidence} CLs limit on μ |",
            "|---|---|",
        ]
        for mass, expected in zip(hunt["masses"], hunt["expected_limit"], strict=True):
            lines.append(f"| {mass:.5g} | {_fmt_num(expected, '.3g')} |")
        return [*lines, "", f"![brazil]({figures['brazil']})"]
    toys = hunt.get("n_toys", 0)
    p_toys = ""
    if toys:
        value = hunt["p_toys"]
        shown = f"< {1 / toys:.2g}" if value == 0 else f"{value:.3g} ± {hunt['p_toys_error']:.2g}"
        p_toys = f"{shown} ({toys} pseudo-experiments), "
    gross_vitells = hunt.get("p_gross_vitells", hunt["p_gross_vitells_observed"])
    lines += [
        f"Largest local significance {hunt['max_local_z']:.2f}σ at {hunt['max_local_z_mass']:.5g};",
        f"its global p-value {p_toys}{gross_vitells:.3g} (Gross-Vitells).",
        "",
        f"| mass | local Z | observed {confidence} limit on μ | expected (median) |",
        "|---|---|---|---|",
    ]
    rows = zip(
        hunt["masses"], hunt["local_z"], hunt["observed_limit"], hunt["expected_limit"], strict=True
    )
    for mass, z, observed, expected in rows:
        lines.append(
            f"| {mass:.5g} | {z:.2f} | {_fmt_num(observed, '.3g')} | {_fmt_num(expected, '.3g')} |"
        )
    return [
        *lines,
        "",
        f"![brazil]({figures['brazil']}) ![local significance]({figures['local_significance']})",
    ]


def _fmt_num(value: Any, spec: str) -> str:
    if value is None or (isinstance(value, float) and not np.isfinite(value)):
        return "–"
    return format(value, spec)


def _number(value: float) -> str:
    return f"{value:.2f}" if np.isfinite(value) else "–"


def _steps(summary: AbcdSummary) -> list[str]:
    """The columns of the cut-flow table: its stages, those of the blinded regions left out."""
    from rosenblatt.processors.analysis import CUTFLOW_STEPS
    from rosenblatt.processors.columnar import COLUMNAR_CUTFLOW_STEPS

    present = {step for counts in summary["cutflow"]["fileset"].values() for step in counts}
    steps = COLUMNAR_CUTFLOW_STEPS if "missing objects" in present else CUTFLOW_STEPS
    return [*steps, *sorted(present - set(steps) - set(_region_stages(summary)))]


def _region_stages(summary: AbcdSummary) -> dict[str, tuple[str, str]]:
    """The cut-flow stages of a blinded data set's regions: stage -> (variant, region)."""
    from rosenblatt.processors.analysis import BLINDED_REGIONS, region_stage

    return {
        region_stage(region, variant): (variant, region)
        for variant in summary["closure"]
        for region in BLINDED_REGIONS
    }


def _blinded(summary: AbcdSummary, counts: dict[str, int]) -> bool:
    """Whether a data set's cut flow is blinded: read, and its stages after ``read`` withheld."""
    withheld = {"not selected", "x above x_max"}  # stages of every layout's unblinded cut flow
    return summary["blind"] and "read" in counts and not withheld & set(counts)


def _weighted_cutflow_lines(summary: AbcdSummary, steps: list[str]) -> list[str]:
    """The simulation's sums of weights through the steps of the cut flow."""
    weighted = summary["cutflow"].get("weighted", {})
    rows = [
        (f"{dataset}{suffix}", sums)
        for part, suffix in (("fileset", ""), ("defining", " (defining)"))
        for dataset, sums in sorted(weighted.get(part, {}).items())
    ]
    if not rows:
        return []
    shown = [step for step in steps if any(step in sums for _, sums in rows)]
    return [
        "",
        "The simulation weighted (sums of the events' weights, normalised to the luminosity",
        "where the dataset has a cross section; data has no weighted cut flow):",
        "",
        "| dataset | " + " | ".join(shown) + " |",
        "|---|" + "---|" * len(shown),
        *(
            f"| {name} | "
            + " | ".join(_fmt_num(sums.get(step, 0.0), ".6g") for step in shown)
            + " |"
            for name, sums in rows
        ),
    ]


def _blinded_cutflow_lines(summary: AbcdSummary) -> list[str]:
    """The blinded data sets' events in B, C and D of each variant, beneath the cut flow."""
    from rosenblatt.processors.analysis import BLINDED_REGIONS

    fileset = summary["cutflow"]["fileset"]
    if not any(_blinded(summary, counts) for counts in fileset.values()):
        return []
    regions = _region_stages(summary)
    rows = []
    for dataset, counts in sorted(fileset.items()):
        found: dict[str, dict[str, int]] = {}
        for step, events in counts.items():
            if step in regions:
                variant, region = regions[step]
                found.setdefault(variant, {})[region] = events
        rows += [
            f"| {dataset} | {variant} | "
            + " | ".join(str(cells.get(region, 0)) for region in BLINDED_REGIONS)
            + " |"
            for variant, cells in found.items()
        ]
    lines = [
        "",
        "Blinded (`blind: true`): the data's events in ABCD are counted in B, C and D of each",
        "variant's cut only, and no count but `read` holds those of region A. The data's losses",
        "before the ABCD split are withheld too: with them, `read` less the other stages would",
        "be the count in A. A variant without a cut holds no data.",
    ]
    if rows:
        lines += [
            "",
            "| dataset | variant | " + " | ".join(BLINDED_REGIONS) + " |",
            "|---|---|" + "---|" * len(BLINDED_REGIONS),
            *rows,
        ]
    return lines


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"
