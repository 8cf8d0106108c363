"""Figures and the Markdown report of the LHCO study."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from rosenblatt.abcd import ClosureScan, SensitivityMap
from rosenblatt.studies._common import Row, claim_lines, markdown_table, pm, rows_table
from rosenblatt.studies.lhco.paper import paper_table
from rosenblatt.studies.lhco.results import ChosenModels, Closure, Decorrelation, TrainedModel
from rosenblatt.studies.lhco.summary import (
    AutomaticChoice,
    ClassifierJson,
    ContaminationRow,
    LhcoSummary,
    classifier_entries,
)

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["figures", "report"]

LABELS = {"baseline": "Baseline", "disco": "DisCo", "irgi": "IRGI", "kde": "KDE"}


def _style(name: str) -> Any:
    """The colour and marker of a classifier: its method's (:data:`rosenblatt.plotting.METHOD_STYLES`)."""
    from rosenblatt.plotting import method_style

    return method_style(name)


def figures(
    folder: Path,
    summary: LhcoSummary,
    models: list[TrainedModel],
    chosen: ChosenModels,
    fits: Decorrelation,
    closure: Closure,
    mjj: NDArray[np.float64],
    label: NDArray[np.int64],
) -> dict[str, str]:
    """Draw every figure of the study into ``folder``; return ``{key: file name}``."""
    entries = classifier_entries(summary)
    out = {
        "dcc_auc": _dcc_auc_plane(folder, models, chosen, fits),
        "roc": _roc(folder, entries, label, closure.scores),
    }
    for name in closure.closures:
        out[f"plane_{name}"] = _plane(folder, name, entries[name], closure, mjj, label)
    out["eta_lines"] = _eta_lines(folder, closure.closures)
    out["eta_hist"] = _eta_histograms(folder, closure.closures)
    out["irgi_grid"] = _irgi_grid(folder, fits)
    if summary.get("contamination"):
        out["contamination"] = _contamination_figure(folder, summary["contamination"])
    if closure.statistics.maps:
        out["sensitivity"] = _sensitivity(folder, closure.statistics.maps)
    return out


def _dcc_auc_plane(
    folder: Path, models: list[TrainedModel], chosen: ChosenModels, fits: Decorrelation
) -> str:
    """Every trained model and the IRGI and KDE scans in the dCor²-AUC plane of the optimisation sample."""
    from rosenblatt.plotting import figure, save_figure

    fig, ax = figure(width=8.5, key=4.5)
    _plot_models(fig, ax, models)
    _plot_scans(ax, fits)
    _circle_chosen(ax, chosen)
    ax.set_xscale("log")
    ax.set_xlabel(r"dCor$^2$($m_{jj}$, score), background")
    ax.set_ylabel("AUC")
    fig.legend(loc="outside right upper", fontsize="small", frameon=False)
    fig.suptitle("optimisation sample", fontsize="medium")
    return save_figure(fig, folder / "dcc_auc_plane.png").name


def _plot_models(fig: Figure, ax: Axes, models: list[TrainedModel]) -> None:
    """The baselines over seeds, and the DisCo models coloured by their strength."""
    raw, disco_style = _style("baseline"), _style("disco")
    base = [m for m in models if m.is_baseline]
    ax.scatter(
        [m.opt_dcc for m in base],
        [m.opt_auc for m in base],
        color=raw.colour,
        marker=raw.marker,
        label="baseline (seeds)",
    )
    disco_models = [m for m in models if m.is_disco]
    if disco_models:
        points = ax.scatter(
            [m.opt_dcc for m in disco_models],
            [m.opt_auc for m in disco_models],
            c=[m.alpha for m in disco_models],
            cmap="Blues",
            marker=disco_style.marker,
            edgecolors=disco_style.colour,
            label=r"DisCo ($\alpha$ x seeds)",
        )
        fig.colorbar(points, ax=ax, label=r"DisCo strength $\alpha$")


def _plot_scans(ax: Axes, fits: Decorrelation) -> None:
    """The IRGI and KDE scans over their parameter, the chosen value circled."""
    parameters = {"irgi": "depth d", "kde": r"$\sigma_r$"}
    for name in ("irgi", "kde"):
        scan, style = fits.scans[name], _style(name)
        ax.plot(
            [s["dcc"] for s in scan],
            [s["auc"] for s in scan],
            marker=style.marker,
            color=style.colour,
            label=f"{LABELS[name]} ({parameters[name]} scan)",
        )
        pick = next(s for s in scan if s["value"] == fits.chosen[name])
        _circle(ax, pick["dcc"], pick["auc"], style.colour)


def _circle_chosen(ax: Axes, chosen: ChosenModels) -> None:
    """Circle the best baseline and DisCo's representative."""
    _circle(
        ax, chosen.best.opt_dcc, chosen.best.opt_auc, _style("baseline").colour, "chosen (circled)"
    )
    if chosen.disco is not None:
        _circle(ax, chosen.disco.opt_dcc, chosen.disco.opt_auc, _style("disco").colour)


def _circle(ax: Axes, x: float, y: float, colour: Any, label: str | None = None) -> None:
    """A large open circle around the point ``(x, y)``."""
    ax.scatter(x, y, s=400, facecolors="none", edgecolors=colour, linewidths=2, label=label)


def _roc(
    folder: Path,
    entries: dict[str, ClassifierJson],
    label: NDArray[np.int64],
    scores: dict[str, NDArray[np.float64]],
) -> str:
    """ROC curves of the testing sample (rejection of every efficiency with background left)."""
    import rosenblatt as rb
    from rosenblatt.plotting import figure, legend_above, save_figure

    fig, ax = figure(height=7.5)
    for name, score in scores.items():
        fpr, tpr, _ = rb.roc_curve(label, score)
        kept = fpr > 0
        style = _style(name)
        ax.plot(
            tpr[kept],
            1 / fpr[kept],
            color=style.colour,
            marker=style.marker,
            markevery=0.1,
            markersize=7,
            label=f"{LABELS[name]} (AUC {pm(entries[name]['auc'], entries[name].get('auc_err'), '.3f')})",
        )
    ax.set_yscale("log")
    ax.set_xlim(0, 1)
    ax.set_xlabel("signal efficiency")
    ax.set_ylabel(r"background rejection $1/\varepsilon_B$")
    legend_above(ax, ncol=1)
    return save_figure(fig, folder / "roc.png").name


def _plane(
    folder: Path,
    name: str,
    entry: ClassifierJson,
    closure: Closure,
    mjj: NDArray[np.float64],
    label: NDArray[np.int64],
) -> str:
    """One classifier's (m_jj, score) plane with its best cut, and |eta| over the cut grid."""
    from rosenblatt.plotting import figure, figure_key, plot_eta_map, plot_plane, save_figure

    score = closure.scores[name]
    fig, axes = figure(ncols=2, width=7.5)
    bkg = label == 0
    cut = entry["closure_at_best"]
    plot_plane(
        axes[0],
        mjj[bkg] / 1000,
        score[bkg],
        x_range=(1.5, 5.0),
        y_range=(0, 1),
        signal=(mjj[~bkg] / 1000, score[~bkg]),
        xlabel=r"$m_{jj}$ [TeV]",
        ylabel=f"{LABELS[name]} score",
        cut=(cut["x0"] / 1000, cut["y0"]),
    )
    plot_eta_map(
        axes[1],
        closure.closures[name],
        x_scale=1e-3,
        xlabel=r"cut $x_0$ on $m_{jj}$ [TeV]",
        ylabel=f"cut $y_0$ on the {LABELS[name]} score",
        chosen=(cut["x0"], cut["y0"]),
    )
    figure_key(fig, title=f"ABCD with the {LABELS[name]} score, testing sample")
    return save_figure(fig, folder / f"abcd_{name}.png").name


def _eta_lines(folder: Path, closures: dict[str, ClosureScan]) -> str:
    """eta against y0, one line per x0 coloured by x0, per classifier."""
    import matplotlib as mpl

    from rosenblatt.plotting import figure, save_figure

    fig, axes = figure(ncols=len(closures), width=5.5)
    axes = np.atleast_1d(axes)
    x0 = next(iter(closures.values())).x0 / 1000
    norm = mpl.colors.Normalize(vmin=float(x0.min()), vmax=float(x0.max()))
    cmap = mpl.colormaps["viridis"]
    for ax, (name, scan) in zip(axes, closures.items(), strict=True):
        step = max(1, len(scan.x0) // 10)
        for i in range(0, len(scan.x0), step):
            ax.plot(scan.y0, scan.eta[i], lw=1, color=cmap(norm(scan.x0[i] / 1000)))
        ax.set_yscale("symlog", linthresh=1e-4)
        ax.set_xlabel(r"cut $y_0$ on the score")
        ax.set_title(LABELS[name], fontsize="medium")
    axes[0].set_ylabel(r"$\eta_A^{sig}$")
    fig.colorbar(
        mpl.cm.ScalarMappable(norm=norm, cmap=cmap),
        ax=list(axes),
        label=r"line's cut $x_0$ on $m_{jj}$ [TeV]",
    )
    return save_figure(fig, folder / "eta_vs_y0.png").name


def _eta_histograms(folder: Path, closures: dict[str, ClosureScan]) -> str:
    """Histograms of |eta| and of its pull over the cut grid."""
    from rosenblatt.plotting import figure, save_figure

    fig, axes = figure(ncols=2, key=2.5)
    bins = np.linspace(-8, 0, 41)
    for name, scan in closures.items():
        eta = np.abs(scan.eta[scan.valid])
        style = _style(name)
        axes[0].hist(
            np.log10(np.maximum(eta, 1e-8)),
            bins=bins,
            histtype="step",
            lw=2,
            color=style.colour,
            label=LABELS[name],
        )
        axes[1].hist(
            np.clip(scan.pull[scan.valid], -10, 10),
            bins=np.linspace(-10, 10, 41),
            histtype="step",
            lw=2,
            color=style.colour,
        )
    axes[0].set_xlabel(r"log$_{10}$ |$\eta_A^{sig}$| over the ($x_0$, $y_0$) grid")
    axes[1].set_xlabel(r"pull $\eta / \sigma_\eta$ (clipped to $\pm$10)")
    for ax in axes:
        ax.set_ylabel("cuts per bin")
    fig.legend(loc="outside right upper", fontsize="small", frameon=False)
    return save_figure(fig, folder / "eta_histograms.png").name


def _irgi_grid(folder: Path, fits: Decorrelation) -> str:
    """The chosen IRGI grid over the defining sample."""
    from rosenblatt.plotting import figure, legend_above, plot_irgi_grid, plot_plane, save_figure

    x_def, y_def = fits.x_def, fits.y_def
    fig, ax = figure()
    plot_plane(
        ax,
        x_def,
        y_def,
        x_range=(float(x_def.min()), float(x_def.max())),
        y_range=(0, 1),
        xlabel=r"$m_{jj}$ [GeV]",
        ylabel="baseline score",
    )
    plot_irgi_grid(ax, fits.irgi(), vertex_size=4.0)
    legend_above(ax)
    fig.suptitle(f"IRGI grid, d = {fits.chosen['irgi']}, defining background", fontsize="medium")
    return save_figure(fig, folder / "irgi_grid.png").name


#: the title of the sensitivity figure
SENSITIVITY_TITLE = (
    "expected discovery significance of the ABCD likelihood\n(blank: not computable)"
)


def _sensitivity(folder: Path, maps: dict[str, SensitivityMap]) -> str:
    """The expected significance over the coarse cut grid, one panel per classifier where computed.

    A classifier whose map holds no finite significance has no panel: the
    title names it, a line each (``DisCo: not computable``). Where no
    classifier has one, the figure is a single panel saying so.
    """
    from rosenblatt.plotting import figure, save_figure

    computed = {name: m for name, m in maps.items() if np.isfinite(m.significance).any()}
    left_out = [
        f"{LABELS.get(name, name)}: not computable" for name in maps if name not in computed
    ]
    if not computed:
        return _sensitivity_message(folder, left_out)
    fig, axes = figure(ncols=len(computed), width=6.0)
    panels = np.atleast_1d(axes)
    for ax, (name, smap) in zip(panels, computed.items(), strict=True):
        _sensitivity_panel(fig, ax, name, smap)
    panels[0].set_ylabel(r"cut $y_0$ on the score")
    fig.suptitle("\n".join([SENSITIVITY_TITLE, *left_out]), fontsize="medium")
    return save_figure(fig, folder / "sensitivity_map.png").name


def _sensitivity_message(folder: Path, left_out: list[str]) -> str:
    """The sensitivity figure when no classifier's map could be computed: one panel saying so."""
    from rosenblatt.plotting import figure, save_figure

    fig, ax = figure(width=10.0, height=1.0 + 0.6 * len(left_out))
    ax.set_axis_off()
    ax.text(
        0.5,
        0.5,
        "\n".join(["expected discovery significance of the ABCD likelihood", *left_out]),
        ha="center",
        va="center",
        fontsize="medium",
        transform=ax.transAxes,
    )
    return save_figure(fig, folder / "sensitivity_map.png").name


def _sensitivity_panel(fig: Figure, ax: Axes, name: str, smap: SensitivityMap) -> None:
    """One classifier's expected significance at each cut where it was computed."""
    rows, columns = np.nonzero(np.isfinite(smap.significance))
    points = ax.scatter(
        smap.x0[rows] / 1000,
        smap.y0[columns],
        c=smap.significance[rows, columns],
        cmap="viridis",
        s=400,
        marker="s",
    )
    fig.colorbar(points, ax=ax, label=r"expected $Z$ (Asimov)")
    ax.set_xlim(smap.x0[0] / 1000 - 0.1, smap.x0[-1] / 1000 + 0.1)
    ax.set_ylim(smap.y0[0] - 0.05, smap.y0[-1] + 0.05)
    ax.set_xlabel(r"cut $x_0$ on $m_{jj}$ [TeV]")
    ax.set_title(LABELS.get(name, name), fontsize="medium")


def _contamination_series(rows: list[ContaminationRow]) -> list[tuple[list[float], list[float]]]:
    """Signal bias, AUC and dCor² of the rows, each with its bootstrap sd (NaN where absent)."""
    nan = float("nan")
    return [
        ([r["signal_bias"] for r in rows], [r.get("signal_bias_err", nan) for r in rows]),
        ([r["auc"] for r in rows], [r.get("auc_err", nan) for r in rows]),
        ([r["dcc"] for r in rows], [r.get("dcc_err", nan) for r in rows]),
    ]


def _contamination_figure(folder: Path, rows: list[ContaminationRow]) -> str:
    """Bias of the ABCD signal estimate, AUC and dCor² against the injected signal fraction."""
    from rosenblatt.plotting import figure, save_figure

    fig, axes = figure(ncols=3, width=6.0, height=5.5, key=2.0)
    for name in dict.fromkeys(r["classifier"] for r in rows):
        mine = [r for r in rows if r["classifier"] == name]
        # the fraction 0 drawn at a tenth of the smallest non-zero fraction, on a log axis
        nonzero = [r["fraction"] for r in mine if r["fraction"] > 0]
        zero_at = min(nonzero) / 10 if nonzero else 1e-4
        fraction = np.array([r["fraction"] or zero_at for r in mine]) * 100
        style = _style(name)
        series = _contamination_series(mine)
        for i, (ax, (values, errors)) in enumerate(zip(axes, series, strict=True)):
            ax.errorbar(
                fraction,
                values,
                yerr=np.array(errors, dtype=float),
                marker=style.marker,
                capsize=3,
                color=style.colour,
                label=LABELS[name] if i == 0 else None,
            )
    for ax, ylabel in zip(
        axes,
        (
            "signal bias in A\n(estimated - true) / true",
            "AUC",
            r"dCor$^2$($m_{jj}$, score), background",
        ),
        strict=True,
    ):
        ax.set_xscale("log")
        ax.set_xlabel("injected W' [% of defining bkg.]")
        ax.set_ylabel(ylabel)
    axes[0].axhline(0, color="grey", lw=1)
    axes[2].set_yscale("log")
    fig.legend(loc="outside right upper", fontsize="small", frameon=False)
    fig.suptitle(
        "signal in the defining sample (0% drawn at a tenth of the smallest fraction)",
        fontsize="medium",
    )
    return save_figure(fig, folder / "contamination.png").name


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
