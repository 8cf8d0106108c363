"""Figures and the Markdown report of the fairness study."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import numpy as np

from rosenblatt.studies._common import Row, claim_lines, markdown_table, pm
from rosenblatt.typing import FloatArray

if TYPE_CHECKING:
    from rosenblatt.studies.fairness.summary import (
        ArrestsJson,
        ArrestsScores,
        DigitsJson,
        DigitsRow,
        DigitsScores,
        FairnessSummary,
        MethodRow,
    )

__all__ = ["METHODS", "figures", "report", "style"]

#: each method: the decorrelation method whose colour and marker it takes, its line and fill
#: (the classifier: logistic regression solid and filled, gradient boosting dashed and hollow)
METHODS = {
    "lr": ("raw", "-", "full"),
    "hgb": ("raw", "--", "none"),
    "lr_irgi": ("irgi", "-", "full"),
    "lr_kde": ("kde", "-", "full"),
    "lr_gridkde": ("grid_kde", "-", "full"),
    "hgb_gridkde": ("grid_kde", "--", "none"),
    "lr_gridkde_negative": ("grid_kde", ":", "bottom"),
    "information_filter": ("information_filter", "-", "full"),
    "threshold_optimizer": ("threshold_optimizer", "-", "full"),
}


#: a parity spread drawn and tabulated per working point
Spread = Literal["demographic_parity", "equalised_odds"]


def style(name: str) -> dict[str, str]:
    """Matplotlib keywords of a method's line and markers (its decorrelation method's colour)."""
    from rosenblatt.plotting import method_style

    method, line, fill = METHODS.get(name, (name, "-", "full"))
    drawn = method_style(method)
    return {
        "color": drawn.colour,
        "marker": drawn.marker,
        "linestyle": line,
        "fillstyle": fill,
        "markeredgecolor": drawn.colour,
    }


def figures(
    folder: Path,
    summary: FairnessSummary,
    arrests: ArrestsScores,
    digits: DigitsScores,
) -> dict[str, str]:
    """Draw the study's figures into ``folder``; return ``{key: file name}``."""
    section = summary["arrests"]
    return {
        **_spread_figures(folder, section),
        "auc_vs_dcc": _auc_vs_dcc(folder, section["methods"]),
        "positive_rate_by_age": _positive_rate_by_age(folder, section),
        "digits": _digits(folder, summary, digits),
    }


def _spread(row: MethodRow, key: Spread) -> tuple[FloatArray, FloatArray]:
    """A method's spread at every working point, and its bootstrap sd."""
    if key == "demographic_parity":
        return np.asarray(row["demographic_parity"]), np.asarray(row["demographic_parity_sd"])
    return np.asarray(row["equalised_odds"]), np.asarray(row["equalised_odds_sd"])


#: the spread figures: the spread, its axis label and the file
_SPREAD_FIGURES: tuple[tuple[Spread, str, str], ...] = (
    ("demographic_parity", "positive-rate spread", "spread_demographic_parity.png"),
    ("equalised_odds", "larger TPR/FPR spread", "spread_equalised_odds.png"),
)


def _spread_figures(folder: Path, section: ArrestsJson) -> dict[str, str]:
    """The spreads of demographic parity and equalised odds against the working point."""
    from rosenblatt.plotting import figure, save_figure

    rows = section["methods"]
    percent = 100 * np.asarray(section["working_points"])
    out: dict[str, str] = {}
    for key, ylabel, file in _SPREAD_FIGURES:
        fig, ax = figure(width=7.5, height=6.5, key=7.0)
        for row in rows:
            drawn = style(row["name"])
            value, sd = _spread(row, key)
            ax.plot(percent, value, label=row["label"], **drawn)
            ax.fill_between(percent, value - sd, value + sd, color=drawn["color"], alpha=0.15)
        ax.set_xlabel("working point: people rejected [%]")
        ax.set_ylabel(f"{ylabel} over age groups")
        ax.set_ylim(bottom=0)
        fig.legend(loc="outside right upper", fontsize="small", frameon=False)
        out[key] = save_figure(fig, folder / file).name

    return out


def _auc_vs_dcc(folder: Path, rows: list[MethodRow]) -> str:
    """AUC against dCor²(age, score), with the permutation floor."""
    from rosenblatt.plotting import figure, save_figure

    fig, ax = figure(width=7.5, height=6.5, key=7.0)
    for row in rows:
        ax.errorbar(
            row["dcc"],
            row["auc"],
            xerr=row["dcc_sd"],
            yerr=row["auc_sd"],
            markersize=10,
            label=row["label"],
            **{**style(row["name"]), "linestyle": "none"},
        )
    floors = [row["dcc_floor"] for row in rows]
    ax.axvspan(
        min(floors), 2 * max(floors), color="grey", alpha=0.2, label="permutation floor to 2x floor"
    )
    ax.set_xscale("log")
    ax.set_xlabel("dCor²(age, score)")
    ax.set_ylabel("AUC (out of fold)")
    fig.legend(loc="outside right upper", fontsize="small", frameon=False)
    return save_figure(fig, folder / "auc_vs_dcc.png").name


def _positive_rate_by_age(folder: Path, section: ArrestsJson) -> str:
    """The positive rate per age group at a few working points."""
    from rosenblatt.plotting import figure, save_figure

    rows = section["methods"]
    rates = section["group_rates"]
    points = list(next(iter(rates.values())))
    shown = [
        r
        for r in rows
        if r["name"] in ("lr", "lr_gridkde", "information_filter", "threshold_optimizer")
    ]
    fig, axes = figure(ncols=len(points), width=5.5)
    edges = section["age_edges"]
    names = [
        f"<{edges[0]:g}",
        *(f"[{a:g},{b:g})" for a, b in itertools.pairwise(edges)),
        f"≥{edges[-1]:g}",
    ]
    for ax, point in zip(np.atleast_1d(axes), points, strict=True):
        for row in shown:
            ax.plot(
                range(len(names)),
                rates[row["name"]][point],
                label=row["label"],
                **style(row["name"]),
            )
        ax.axhline(1 - float(point), color="grey", linewidth=1, label="overall positive rate")
        ax.set_xticks(range(len(names)), names, fontsize="x-small", rotation=30)
        ax.set_xlabel("age group [years]")
        ax.set_title(f"{100 * float(point):g}% rejected", fontsize="medium")
    np.atleast_1d(axes)[0].set_ylabel("positive rate")
    handles, labels = np.atleast_1d(axes)[0].get_legend_handles_labels()
    fig.legend(handles, labels, fontsize="small", loc="outside lower center", ncol=3)
    return save_figure(fig, folder / "positive_rate_by_age.png").name


def _digits(folder: Path, summary: FairnessSummary, digits: DigitsScores) -> str:
    """The digits' score against their ink, raw and decorrelated."""
    from rosenblatt.plotting import figure, figure_key, save_figure

    fig, axes = figure(ncols=2, width=7.0)
    ink, label = digits.ink, digits.y
    negative, positive = summary["digits"]["classes"]
    for ax, name, title in zip(
        axes,
        ("raw", "decorrelated"),
        ("raw classifier", "DecorrelatedClassifier (ink)"),
        strict=True,
    ):
        score = digits.scores[name]
        ax.scatter(
            ink[label == 0],
            score[label == 0],
            s=12,
            color="tab:blue",
            label=f"'{negative}' (defining)",
        )
        ax.scatter(
            ink[label == 1],
            score[label == 1],
            s=12,
            color="tab:red",
            marker="^",
            label=f"'{positive}'",
        )
        ax.set_xlabel("ink of the image [sum of pixel values]")
        ax.set_title(title, fontsize="medium")
    axes[0].set_ylabel("score (out of fold)")
    figure_key(fig)
    return save_figure(fig, folder / "digits_score_vs_ink.png").name


def _method_table(section: ArrestsJson) -> str:
    lines = [
        "| method | AUC | AUC cost vs raw | dCor²(age, score) | permutation floor | p | max DP spread | max EO spread | time [s] |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for row in section["methods"]:
        cost = "" if row["raw"] is None else pm(row["auc_cost"], row["auc_cost_sd"])
        dp, eo = np.asarray(row["demographic_parity"]), np.asarray(row["equalised_odds"])
        i, j = int(np.argmax(dp)), int(np.argmax(eo))
        lines.append(
            f"| {row['label']} | {pm(row['auc'], row['auc_sd'])} | {cost} | "
            f"{pm(row['dcc'], row['dcc_sd'], '.1e')} | {pm(row['dcc_floor'], row['dcc_floor_std'], '.1e')} | "
            f"{row['p_value']:.3f} | {pm(dp[i], row['demographic_parity_sd'][i], '.3f')} | "
            f"{pm(eo[j], row['equalised_odds_sd'][j], '.3f')} | {row['seconds']:.1f} |"
        )
    return "\n".join(lines)


def _spread_table(section: ArrestsJson, key: Spread) -> str:
    points = section["working_points"]
    lines = [
        "| method | " + " | ".join(f"{100 * q:g}%" for q in points) + " |",
        "|---" * (len(points) + 1) + "|",
    ]
    for row in section["methods"]:
        cells = [f"{v:.3f} ± {s:.3f}" for v, s in zip(*_spread(row, key), strict=True)]
        lines.append(f"| {row['label']} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _headline(section: ArrestsJson) -> str:
    rows = {row["name"]: row for row in section["methods"]}
    lines = []
    for name in ("lr_gridkde", "lr_kde", "hgb_gridkde"):
        if name not in rows or (raw_name := rows[name]["raw"]) is None:
            continue
        row, raw = rows[name], rows[raw_name]
        lines.append(
            f"- **{row['label']}**: AUC {pm(row['auc'], row['auc_sd'])}, a cost of "
            f"{pm(row['auc_cost'], row['auc_cost_sd'])} against {raw['label']} (paired bootstrap); "
            f"dCor²(age, score) {row['dcc']:.1e} against a permutation floor of {row['dcc_floor']:.1e} "
            f"(p = {row['p_value']:.2f}; raw {raw['dcc']:.1e}); largest positive-rate spread across "
            f"the age groups over the working points {max(row['demographic_parity']):.3f} "
            f"(raw {max(raw['demographic_parity']):.3f})."
        )
    return "\n".join(lines)


def report(summary: FairnessSummary, figures: dict[str, str]) -> str:
    """The study's Markdown report."""
    figs = "\n".join(f"![{key}]({name})" for key, name in figures.items())
    return f"""# Outside physics: fairness with a continuous protected attribute ({summary["name"]})

## Toronto arrests: release with a summons, protected attribute age

{_arrests_intro(summary["arrests"])}

{_arrests_results(summary)}

## Handwritten digits: a score independent of the ink

{_digits_text(summary)}

The study ran in {sum(summary["step_seconds"].values()):.0f} s before this report.

## Figures

{figs}
"""


def _arrests_intro(arrests: ArrestsJson) -> str:
    """The arrests data and how every method is trained, scored and compared."""
    edges = ", ".join(f"{e:g}" for e in arrests["age_edges"])
    sizes = ", ".join(str(s) for s in arrests["group_sizes"])
    return f"""{arrests["n_people"]:,} people (`sklego.datasets.load_arrests`, installed with scikit-lego), of
whom {100 * arrests["positive_fraction"]:.1f}% were released with a summons. Every method is
trained and scored on the same {arrests["folds"]} stratified folds; the figures of merit are
computed on the pooled out-of-fold scores, ± the standard deviation over
{arrests["bootstrap"]} paired bootstrap resamples of the people. dCor² is the squared distance
correlation of age and score, beside its permutation floor ({arrests["permutations"]}
permutations: what independence gives at this size). Age groups: edges at the 20/40/60/80%
quantiles ({edges}; tied ages share a group: sizes {sizes}).

A working point rejects a fixed fraction of all people (the cut at that quantile of the
score; tied scores at the cut pass at random in the proportion that keeps the fraction
exact). The demographic-parity (DP) spread is the largest minus the smallest positive rate
across the age groups at that cut; the equalised-odds (EO) spread is the larger of the same
spreads of the true- and the false-positive rates.

The rosenblatt rows are `rosenblatt.sklearn.DecorrelatedClassifier(classifier,
protected="age", defining="all", cdf=...)` with the transform named (its parameter chosen
automatically): `defining="all"` asks for independence over everyone (demographic parity).
For gradient boosting, which over-fits its training scores, the transform is fitted on
out-of-fold scores of the training folds (`cv={arrests["inner_cv"]["hgb"]}`); the logistic
regression (eight coefficients, {arrests["n_people"]:,} people) is transformed on its own
training scores (`cv={arrests["inner_cv"]["lr"]}`). IRGI's equal-occupancy columns cannot
split tied ages (age is a whole number: 476 people are 18), which caps its depth at 3 here.
"Negatives defining" makes the false-positive rate the same at every age instead. InformationFilter (scikit-lego) projects age out of the standardised
features linearly; ThresholdOptimizer (fairlearn) picks a randomised threshold per age group
for demographic parity at the one working point that maximises accuracy; its score here is its
probability of a positive decision."""


def _arrests_results(summary: FairnessSummary) -> str:
    """The arrests results: in short, the claims, every method, the spreads."""
    arrests = summary["arrests"]
    return f"""### In short

{_headline(arrests)}

### The claims

{claim_lines(summary["claims"], with_value=False)}

### Every method on the same folds

{_method_table(arrests)}

ThresholdOptimizer's score takes a few values only (its probability of a positive
decision, one threshold per age group): moving the cut re-randomises the same decision, so its
spreads stay small at every working point while its AUC is that of a single decision.
InformationFilter removes the linear trace of age from the features, not its non-linear one,
nor the age dependence of the rate itself.

### Demographic-parity spread at each working point (people rejected)

{_spread_table(arrests, "demographic_parity")}

### Equalised-odds spread at each working point

{_spread_table(arrests, "equalised_odds")}"""


#: the digits table: (label, key, key of its bootstrap sd, format)
DIGITS = (
    Row("AUC", "auc", "auc_sd", ".4f"),
    Row("dCor²(ink, score) of the first class", "dcc_negative", None, ".4f"),
    Row("its floor", "dcc_negative_floor", None, ".4f"),
    Row("p", "p_value_negative", None, ".3f"),
    Row("dCor²(ink, score), all", "dcc_all", None, ".4f"),
    Row("its floor", "dcc_all_floor", None, ".4f"),
)


def _digits_text(summary: FairnessSummary) -> str:
    """The digits: the data, and the raw and decorrelated scores side by side."""
    digits = summary["digits"]
    negative, positive = digits["classes"]
    header = ["", *(row.label for row in DIGITS)]
    header[2] = f"dCor²(ink, score) of the '{negative}'s"
    table = markdown_table(
        header,
        [[name, *(row.cell(entry) for row in DIGITS)] for name, entry in _digits_scores(digits)],
    )
    return f"""scikit-learn's bundled digits, the {digits["n_images"]} images of '{negative}' and '{positive}';
a logistic regression on the 64 pixels, and the same classifier wrapped in
`DecorrelatedClassifier(protected="ink", use_protected=False, defining="negative")`, where the
ink is the sum of the pixels and the '{negative}'s ({digits["n_negative"]} images) define the
transform. The ink alone separates the classes with AUC {digits["auc_ink"]:.3f}. Out of fold,
{summary["arrests"]["folds"]} folds:

{table}"""


def _digits_scores(digits: DigitsJson) -> tuple[tuple[str, DigitsRow], ...]:
    """The digits' scores: the table's row label, and the score's entry of the summary."""
    return (("raw", digits["raw"]), ("decorrelated", digits["decorrelated"]))
