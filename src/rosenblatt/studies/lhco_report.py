"""Figures and the Markdown report of the LHCO study."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from rosenblatt.abcd import ClosureScan

__all__ = ["figures", "report"]

LABELS = {"baseline": "Baseline", "disco": "DisCo", "irgi": "IRGI", "kde": "KDE"}
COLOURS = {"baseline": "black", "disco": "tab:blue", "irgi": "tab:red", "kde": "tab:green"}


def figures(
    folder: Path,
    summary: dict[str, Any],
    models: list[dict[str, Any]],
    best: dict[str, Any],
    disco: dict[str, Any] | None,
    scans: dict[str, list[dict[str, Any]]],
    chosen: dict[str, Any],
    closures: dict[str, ClosureScan],
    mjj: NDArray[np.float64],
    label: NDArray[np.int64],
    scores: dict[str, NDArray[np.float64]],
    irgi: Any,
    x_def: NDArray[np.float64],
    y_def: NDArray[np.float64],
) -> dict[str, str]:
    """Draw every figure of the study; return ``{key: file name}``."""
    import rosenblatt as rb
    from rosenblatt.plotting import figure, plot_eta_map, plot_irgi_grid, plot_plane, save_figure

    out: dict[str, str] = {}

    # DCC-AUC plane on the optimisation sample
    fig, ax = figure(width=9)
    base = [m for m in models if m["name"].startswith(("baseline", "gbdt"))]
    ax.scatter([m["opt_dcc"] for m in base], [m["opt_auc"] for m in base], color="black", marker="o", label="baseline (seeds)")
    dm = [m for m in models if m["name"].startswith("disco")]
    if dm:
        sc = ax.scatter([m["opt_dcc"] for m in dm], [m["opt_auc"] for m in dm], c=[m["alpha"] for m in dm], cmap="Blues", marker="s", edgecolors="tab:blue", label=r"DisCo ($\alpha$ x seeds)")
        fig.colorbar(sc, ax=ax, label=r"DisCo $\alpha$")
    for name, marker in (("irgi", "^"), ("kde", "v")):
        ax.plot([s["dcc"] for s in scans[name]], [s["auc"] for s in scans[name]], marker=marker, color=COLOURS[name], label=f"{LABELS[name]} ({'d' if name == 'irgi' else 'σ_r'} scan)")
        pick = next(s for s in scans[name] if s["value"] == chosen[name])
        ax.scatter(pick["dcc"], pick["auc"], s=400, facecolors="none", edgecolors=COLOURS[name], linewidths=2)
    ax.scatter(best["opt_dcc"], best["opt_auc"], s=400, facecolors="none", edgecolors="black", linewidths=2)
    if disco is not None:
        ax.scatter(disco["opt_dcc"], disco["opt_auc"], s=400, facecolors="none", edgecolors="tab:blue", linewidths=2)
    ax.set_xscale("log")
    ax.set_xlabel(r"dCor$^2$(m$_{jj}$, score) on background")
    ax.set_ylabel("AUC")
    ax.legend(fontsize="small", loc="lower right")
    ax.set_title("optimisation sample; chosen models circled", fontsize="medium")
    out["dcc_auc"] = save_figure(fig, folder / "dcc_auc_plane.png").name

    # ROC curves on the testing sample
    fig, ax = figure()
    for name, score in scores.items():
        fpr, tpr, _ = rb.roc_curve(label, score)
        ax.plot(tpr, 1 / np.maximum(fpr, 1e-6), color=COLOURS[name], label=f"{LABELS[name]} (AUC {summary[name]['auc']:.3f})")
    ax.set_yscale("log")
    ax.set_xlabel("signal efficiency")
    ax.set_ylabel("background rejection")
    ax.legend()
    out["roc"] = save_figure(fig, folder / "roc.png").name

    # per classifier: (mjj, score) plane with the best cut, and |eta| over the grid
    for name, scan in closures.items():
        fig, axes = figure(ncols=2)
        bkg = label == 0
        plot_plane(
            axes[0], mjj[bkg] / 1000, scores[name][bkg], x_range=(1.5, 5.0), y_range=(0, 1),
            signal=(mjj[~bkg] / 1000, scores[name][~bkg]), xlabel=r"m$_{jj}$ [TeV]", ylabel=f"{LABELS[name]} score",
        )
        cut = summary[name]["closure_at_best"]
        axes[0].axvline(cut["x0"] / 1000, color="tab:red")
        axes[0].axhline(cut["y0"], color="tab:red")
        plot_eta_map(axes[1], scan, x_scale=1e-3, xlabel=r"$x_0$ [TeV]")
        out[f"plane_{name}"] = save_figure(fig, folder / f"abcd_{name}.png").name

    # eta vs y0, one line per x0
    fig, axes = figure(ncols=len(closures), width=5.5)
    for ax, (name, scan) in zip(np.atleast_1d(axes), closures.items(), strict=True):
        step = max(1, len(scan.x0) // 10)
        for i in range(0, len(scan.x0), step):
            ax.plot(scan.y0, scan.eta[i], lw=1, color=f"C{(i // step) % 10}")
        ax.set_yscale("symlog", linthresh=1e-4)
        ax.set_xlabel(r"$y_0$")
        ax.set_title(LABELS[name], fontsize="medium")
    np.atleast_1d(axes)[0].set_ylabel(r"$\eta_A^{sig}$ (one line per $x_0$)")
    out["eta_lines"] = save_figure(fig, folder / "eta_vs_y0.png").name

    # eta histograms and pulls
    fig, axes = figure(ncols=2)
    bins = np.linspace(-8, 0, 41)
    for name, scan in closures.items():
        eta = np.abs(scan.eta[scan.valid])
        axes[0].hist(np.log10(np.maximum(eta, 1e-8)), bins=bins, histtype="step", lw=2, color=COLOURS[name], label=LABELS[name])
        axes[1].hist(np.clip(scan.pull[scan.valid], -10, 10), bins=np.linspace(-10, 10, 41), histtype="step", lw=2, color=COLOURS[name], label=LABELS[name])
    axes[0].set_xlabel(r"log$_{10}$ |$\eta_A^{sig}$| over the (x$_0$, y$_0$) grid")
    axes[1].set_xlabel(r"pull $\eta / \sigma_\eta$")
    for ax in axes:
        ax.set_ylabel("cuts")
        ax.legend(fontsize="small")
    out["eta_hist"] = save_figure(fig, folder / "eta_histograms.png").name

    # the IRGI grid over the defining sample
    fig, ax = figure()
    plot_plane(ax, x_def, y_def, x_range=(float(x_def.min()), float(x_def.max())), y_range=(0, 1), xlabel=r"m$_{jj}$ [GeV]", ylabel="baseline score")
    plot_irgi_grid(ax, irgi, vertex_size=4.0)
    ax.set_title(f"IRGI grid, d = {chosen['irgi']}, defining background", fontsize="medium")
    out["irgi_grid"] = save_figure(fig, folder / "irgi_grid.png").name
    return out


def report(summary: dict[str, Any], figs: dict[str, str]) -> str:
    """The Markdown report."""
    names = [n for n in ("baseline", "disco", "irgi", "kde") if n in summary]
    head = "| | " + " | ".join(_title(summary, n) for n in names) + " |"
    rule = "|---" * (len(names) + 1) + "|"

    def row(label: str, fmt: str, key: str) -> str:
        return f"| {label} | " + " | ".join(format(summary[n][key], fmt) for n in names) + " |"

    def best(label: str, fmt: str, key: str) -> str:
        return f"| {label} | " + " | ".join(format(summary[n]["closure_at_best"][key], fmt) for n in names) + " |"

    comparison = "\n".join([
        head, rule,
        row("AUC", ".4f", "auc"),
        row("dCor²(m_jj, score), background", ".2e", "dcc"),
        row("permutation floor", ".2e", "dcc_floor"),
        row("permutation p-value", ".2f", "dcc_p_value"),
        row("R50 (1/ε_B at ε_S = 0.5)", ".1f", "r50"),
        row("1/JSD at ε_S = 0.5", ".1f", "inverse_jsd"),
    ])
    closure = "\n".join([
        head, rule,
        best("η_A at the best cut", ".1e", "eta"),
        best("&nbsp;&nbsp;its uncertainty", ".1e", "eta_error"),
        "| best cut (x0 [GeV], y0) | " + " | ".join(f"({summary[n]['x0']:.0f}, {summary[n]['y0']:.3f})" for n in names) + " |",
        best("total events in A", ".0f", "total_a"),
        best("true signal in A", ".0f", "true_signal_a"),
        "| signal estimate | " + " | ".join(f"{summary[n]['closure_at_best']['signal_estimate']:.1f} ± {summary[n]['closure_at_best']['signal_estimate_error']:.1f}" for n in names) + " |",
        row("fraction of grid with \\|η\\| < 1e-2", ".3f", "frac_eta_below_1e-2"),
        row("fraction of grid with \\|η\\| < 1e-3", ".3f", "frac_eta_below_1e-3"),
        row("pull mean", ".2f", "pull_mean"),
        row("pull standard deviation", ".2f", "pull_std"),
    ])
    claims = "\n".join(f"- **{'held' if c['held'] else 'did not hold'}**: {c['claim']} ({c['value']})" for c in summary["claims"])
    sizes = summary["sizes"]
    size_rows = "\n".join(f"| {part} | {s['background']:,} | {s['signal']:,} |" for part, s in sizes.items())
    figures_md = "\n\n".join(f"![{k}]({v})" for k, v in figs.items())
    path = summary["processor_path"]
    largest = max(path["max_count_difference"].values())
    return f"""# LHC Olympics ABCD study: {summary['name']}

QCD dijets and W'(3.5 TeV) -> X(500 GeV) Y(100 GeV) -> qqqq generated with Pythia 8,
anti-kT R = 1.0 jets from FastJet, the LHCO trigger (a jet with pT > 1.2 TeV), track images
of 36x36 pixels; a CNN trained over seeds (baseline) and DisCo strengths. IRGI (depth
{summary['depth']}) and KDE (σ_r = {summary['sigma_r']:g}) decorrelate the best baseline;
their parameters and DisCo's representative were chosen on the optimisation sample, as in
the paper. The testing sample holds background and 10% signal; ABCD uses m_jj < 4 TeV
({summary['n_testing_after_mjj_cut']:,} events).

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
the event files: the testing sample's {path['events_in_abcd']:,} events were read again, their
features computed, scored by the saved models' TorchScript files, transformed and filled into
ABCD histograms in the coffea workers. Its counts differ from those of the same events scored in
memory by at most {largest:g} events over the whole cut grid.

## Figures

{figures_md}
"""


def _title(summary: dict[str, Any], name: str) -> str:
    if name == "irgi":
        return f"IRGI d={summary['irgi']['depth']}"
    if name == "kde":
        return f"KDE σ_r={summary['kde']['sigma_r']:g}"
    if name == "disco" and "alpha" in summary["disco"]:
        return f"DisCo α={summary['disco']['alpha']:g}"
    return LABELS[name]
