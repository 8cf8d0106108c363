"""The figures of the LHCO study's report, drawn from its summary, models, fits and closure."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from rosenblatt.abcd import ClosureScan, SensitivityMap
from rosenblatt.studies._common import pm
from rosenblatt.studies.lhco.results import ChosenModels, Closure, Decorrelation, TrainedModel
from rosenblatt.studies.lhco.summary import (
    ClassifierJson,
    ContaminationRow,
    LhcoSummary,
    StrengthScan,
    classifier_entries,
)
from rosenblatt.typing import FloatArray, Int64Array

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["LABELS", "figures"]


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
    mjj: FloatArray,
    label: Int64Array,
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
    if summary.get("strength_scan"):
        out["strength"] = _strength_figure(folder, summary["strength_scan"])
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
    label: Int64Array,
    scores: dict[str, FloatArray],
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
    mjj: FloatArray,
    label: Int64Array,
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


def _finite(points: list[tuple[float, float]]) -> tuple[FloatArray, FloatArray]:
    """The (1/JSD, R50) pairs with both finite and positive, as two arrays."""
    kept = [(a, b) for a, b in points if np.isfinite(a) and np.isfinite(b) and a > 0 and b > 0]
    return np.array([a for a, _ in kept]), np.array([b for _, b in kept])


def _strength_figure(folder: Path, scan: StrengthScan) -> str:
    """R50 against 1/JSD: IRGI's and KDE's strength curves beside every model of the classifier scan.

    A filled marker is a strength whose closure test passes (p >= 0.05), an open
    one a strength whose test fails or could not be made.
    """
    from matplotlib.ticker import FuncFormatter, LogLocator

    from rosenblatt.plotting import figure, save_figure

    fig, ax = figure(width=8.0, height=6.5)
    groups = (
        ("baseline", "baseline (each seed)", [m for m in scan["models"] if m["alpha"] == 0]),
        ("disco", "DisCo (each α and seed)", [m for m in scan["models"] if m["alpha"] > 0]),
    )
    for name, label, rows in groups:
        jsd, r50 = _finite([(m["inverse_jsd"], m["r50"]) for m in rows])
        if len(jsd):
            style = _style(name)
            ax.scatter(jsd, r50, marker=style.marker, color=style.colour, label=label, zorder=3)
    for name, points in scan["transforms"].items():
        style = _style(name)
        jsd, r50 = _finite([(p["inverse_jsd"], p["r50"]) for p in points])
        ax.plot(jsd, r50, color=style.colour, label=f"{LABELS[name]}, strength p = 0 ... 1")
        ends = (points[0]["strength"], points[-1]["strength"]) if points else ()
        for p in points:
            if not (np.isfinite(p["inverse_jsd"]) and np.isfinite(p["r50"])):
                continue
            closes = bool(p["closes"])
            ax.scatter(
                p["inverse_jsd"],
                p["r50"],
                marker=style.marker,
                facecolors=style.colour if closes else "none",
                edgecolors=style.colour,
                zorder=4,
            )
            if p["strength"] not in ends:
                continue  # the strengths between the ends are in the report's table
            ax.annotate(
                f"{p['strength']:g}",
                (p["inverse_jsd"], p["r50"]),
                textcoords="offset points",
                xytext=(4, 4),
                fontsize="x-small",
                color=style.colour,
            )
    ax.set_xscale("log")
    ax.set_yscale("log")
    plain = FuncFormatter(lambda value, _: f"{value:g}")
    for axis in (ax.xaxis, ax.yaxis):
        axis.set_minor_locator(LogLocator(subs=(2.0, 5.0)))
        axis.set_major_formatter(plain)
        axis.set_minor_formatter(plain)
    ax.set_xlabel(r"1/JSD of background $m_{jj}$, pass vs fail ($\varepsilon_S = 0.5$)")
    ax.set_ylabel(r"R50 = $1/\varepsilon_B$ at $\varepsilon_S = 0.5$")
    ax.legend(loc="upper right", fontsize="x-small", frameon=False)
    ax.set_title(
        "labels: the strengths p at each curve's ends; filled: the ABCD closure test passes "
        "(p-value >= 0.05)",
        fontsize="x-small",
    )
    return save_figure(fig, folder / "strength_r50_jsd.png").name
