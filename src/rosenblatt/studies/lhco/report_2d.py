"""The report and figures of the dijet study with several protected observables (``study: lhco-2d``)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from rosenblatt._atomic import write_text
from rosenblatt.studies.lhco.summary_2d import Dependence, Lhco2dSummary

__all__ = ["findings", "table", "write_report"]

_JOINT = "joint"

#: how the observables are written in the report
_SYMBOLS = {
    "mjj": "m_jj",
    "pt_j1": "pT_j1",
    "deta_jj": "|Δη_jj|",
    "mj1": "m_j1",
    "mj2": "m_j2",
}
_TEX = {
    "mjj": r"$m_{jj}$",
    "pt_j1": r"$p_{T,j1}$",
    "deta_jj": r"$|\Delta\eta_{jj}|$",
    "mj1": r"$m_{j1}$",
    "mj2": r"$m_{j2}$",
}


def _targets(summary: Lhco2dSummary) -> list[str]:
    """The keys of the dCor² entries: each observable, then all of them jointly."""
    return [*summary["protected"], _JOINT]


def _target_name(summary: Lhco2dSummary, target: str) -> str:
    if target == _JOINT:
        return "(" + ", ".join(_SYMBOLS[p] for p in summary["protected"]) + ")"
    return _SYMBOLS[target]


def table(summary: Lhco2dSummary) -> str:
    """The markdown table of AUC, AUC cost and dCor² (floor) per method."""
    targets = _targets(summary)
    head = ["method", "AUC", "AUC cost"] + [
        f"dCor²({_target_name(summary, t)}, score)" for t in targets
    ]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for entry in summary["methods"].values():
        cells = [entry["label"], f"{entry['auc']:.4f}", f"{entry['auc_cost']:+.4f}"]
        cells += [
            f"{entry['dcc'][t]['value']:.1e} ({entry['dcc'][t]['floor']:.1e})" for t in targets
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _ratio(dcc: Dependence) -> str:
    """dCor² in units of its permutation floor."""
    return f"{dcc['value'] / dcc['floor']:.1f}x" if dcc["floor"] > 0 else "inf x"


def findings(summary: Lhco2dSummary) -> list[str]:
    """One sentence per estimator: what the 1-d transform leaves behind and what the joint one removes."""
    methods = summary["methods"]
    first, *others = summary["protected"]
    base = methods["baseline"]["dcc"]
    sentences = []
    for key in dict.fromkeys(k.rsplit("_", 1)[0] for k in methods if k != "baseline"):
        one, joint = methods[f"{key}_1d"], methods[f"{key}_joint"]
        left = ", ".join(
            f"dCor²({_SYMBOLS[o]}) at {one['dcc'][o]['value']:.1e} ({_ratio(one['dcc'][o])} "
            f"its floor; baseline {base[o]['value']:.1e})"
            for o in others
        )
        sentences.append(
            f"{one['label']} brings dCor²({_SYMBOLS[first]}) from {base[first]['value']:.1e} to "
            f"{one['dcc'][first]['value']:.1e} ({_ratio(one['dcc'][first])} its floor) but leaves "
            f"{left}; {joint['label']} brings dCor² with the pair to "
            f"{joint['dcc'][_JOINT]['value']:.1e} ({_ratio(joint['dcc'][_JOINT])} its floor; "
            f"1-d: {one['dcc'][_JOINT]['value']:.1e}, baseline {base[_JOINT]['value']:.1e}) "
            f"at an AUC cost of {joint['auc_cost']:.4f} (1-d: {one['auc_cost']:.4f})."
        )
    return sentences


def _dcor_figure(folder: Path, summary: Lhco2dSummary) -> str:
    """dCor² of every method with each observable and with all of them, floors as black bars."""
    from rosenblatt.plotting import figure, legend_above, save_figure

    targets = _targets(summary)
    methods = summary["methods"]
    fig, ax = figure(width=max(8.0, 1.3 * len(methods)))
    width = 0.8 / len(targets)
    positions = np.arange(len(methods))
    for i, target in enumerate(targets):
        where = positions + (i - (len(targets) - 1) / 2) * width
        values = [m["dcc"][target]["value"] for m in methods.values()]
        floors = [m["dcc"][target]["floor"] for m in methods.values()]
        label = "all jointly" if target == _JOINT else _TEX[target]
        ax.bar(where, values, width=width, label=label)
        ax.hlines(floors, where - width / 2, where + width / 2, color="black", lw=2)
    ax.set_xticks(positions, [m["label"] for m in methods.values()], rotation=35, ha="right")
    ax.tick_params(axis="x", labelsize="x-small")
    ax.set_yscale("log")
    ax.set_ylabel(r"dCor$^2$(observable, score)")
    ax.plot([], [], color="black", lw=2, label="permutation floor")
    legend_above(ax, ncol=2, title="testing background", title_fontsize="small")
    return save_figure(fig, folder / "dcor2.png").name


def _profile_figure(folder: Path, summary: Lhco2dSummary) -> str:
    """Mean score against the second observable in slices of the first, for the first estimator's methods."""
    from rosenblatt.plotting import QUANTITIES, figure, quantity_label, save_figure

    profiles = summary["profiles"]
    first, second = summary["protected"][:2]
    estimator = _first_estimator(summary)
    keys = [k for k in summary["methods"] if k == "baseline" or k.startswith(estimator)]
    fig, axes = figure(ncols=len(keys), width=5.5, height=5.5, key=4.0)
    edges = profiles["slice_edges"]
    unit = QUANTITIES.get(first, ("", ""))[1]
    for ax, key in zip(np.atleast_1d(axes), keys, strict=True):
        for s, profile in enumerate(profiles["profiles"][key]):
            ax.errorbar(
                profile["x"],
                profile["mean"],
                yerr=profile["error"],
                marker="o",
                capsize=2,
                label=f"{edges[s]:.0f} < {_TEX[first]} < {edges[s + 1]:.0f} {unit}",
            )
        ax.set_title(summary["methods"][key]["label"], fontsize="small")
        ax.set_xlabel(f"{quantity_label(second)}, testing bkg.")
        ax.set_ylabel("mean score")
    handles, labels = np.atleast_1d(axes)[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside right upper", fontsize="small", frameon=False)
    return save_figure(fig, folder / "profiles.png").name


def _first_estimator(summary: Lhco2dSummary) -> str:
    return next(k for k in summary["methods"] if k != "baseline").rsplit("_", 1)[0]


def write_report(folder: Path, summary: Lhco2dSummary) -> None:
    """Write the figures and ``report.md`` of the study into ``folder``."""
    dcor = _dcor_figure(folder, summary)
    profile = _profile_figure(folder, summary)
    protected = ", ".join(_SYMBOLS[p] for p in summary["protected"])
    sizes = summary["sizes"]
    seconds = summary.get("step_seconds", {})
    text = f"""# {summary["name"]}: the best baseline decorrelated from ({protected})

The best baseline ({summary["best_model"]}, from `{summary["scan"]}`) is transformed by
estimators fitted on the validation background ({summary["n_defining"]} events): in the first
observable alone (1-d), one observable after the other (sequential) and in all of them jointly.
On the testing sample ({sizes["testing"]["background"]} background + {sizes["testing"]["signal"]}
signal) the table gives the AUC, its cost relative to the baseline, and the background's dCor²
of the score with each observable and with all of them jointly; in brackets the permutation
floor (mean dCor² of {summary["permutations"]} permutations of the score), what independence
alone gives at this sample size.

{table(summary)}

{chr(10).join(f"- {s}" for s in findings(summary))}

![dCor² per method]({dcor})

![mean score in slices]({profile})

Step times (s): {", ".join(f"{k} {v:.1f}" for k, v in seconds.items())}.
"""
    write_text(folder / "report.md", text)
