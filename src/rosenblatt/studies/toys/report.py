"""The toys study's report: the coverage table, what each number is, and a figure."""

from __future__ import annotations

from pathlib import Path

from rosenblatt.studies._common import claim_lines, markdown_table
from rosenblatt.studies.toys.summary import PullJson, SettingJson, ToysSummary

__all__ = ["coverage_table", "draw_figure", "report_text"]

FIGURE = "coverage.png"


def _pm(value: float, error: float, digits: int = 2) -> str:
    return f"{value:.{digits}f} ± {error:.{digits}f}"


def _percent(value: float, error: float) -> str:
    return f"{100 * value:.1f} ± {100 * error:.1f}%"


def _pull_cells(pull: PullJson) -> list[str]:
    return [
        _pm(pull["mean"], pull["mean_error"]),
        _pm(pull["sd"], pull["sd_error"]),
        _percent(pull["coverage_1sd"], pull["coverage_1sd_error"]),
        _percent(pull["coverage_2sd"], pull["coverage_2sd_error"]),
    ]


def _row(setting: SettingJson) -> list[str]:
    head = [
        setting["name"],
        f"{setting['n_defining']:,}",
        f"{setting['n_toys'] - setting['n_failed']}",
    ]
    background, signal, targets = setting["background"], setting["signal"], setting["targets"]
    if background is None or targets is None:
        return [*head, *(["—"] * 13), f"failed: {setting['failure']}"]
    mu = (
        ["—"] * 2
        if signal is None
        else [
            _pm(signal["bias"], signal["bias_error"]),
            _percent(signal["pull"]["coverage_1sd"], signal["pull"]["coverage_1sd_error"]),
        ]
    )
    return [
        *head,
        _percent(background["relative_bias"], background["relative_bias_error"]),
        *_pull_cells(background["pull_observed"]),
        _pm(background["pull_true"]["sd"], background["pull_true"]["sd_error"]),
        _percent(
            background["pull_true"]["coverage_1sd"], background["pull_true"]["coverage_1sd_error"]
        ),
        _pm(background["pull_poisson_only"]["sd"], background["pull_poisson_only"]["sd_error"]),
        f"{100 * background['stated_relative_error']:.1f}%",
        f"{background['true_closure_factor_sd']:.3f}",
        f"{background['simulation_effective_A']:.0f}",
        *mu,
        targets["verdict"],
    ]


HEADER = [
    "score",
    "defining events",
    "toys",
    "bias of prediction",
    "pull mean",
    "pull sd",
    "±1 sd",
    "±2 sd",
    "pull sd (vs truth)",
    "±1 sd (vs truth)",
    "pull sd, Poisson only",
    "stated error",
    "sd of true closure factor",
    "simulated events in A",
    "mu bias",
    "mu 68% coverage",
    "verdict",
]


#: what each column of the table is, as the report says it
COLUMNS = [
    "What each column is:",
    "",
    (
        "- *bias of prediction*: mean of (predicted A - true A) over the mean true A, where true A "
        "is the expected background in A under the fitted transform (an integral over the known "
        "population); with its statistical error."
    ),
    (
        "- *pull mean / sd / ±1 sd / ±2 sd*: of (observed A - predicted A) / sqrt(error² + "
        "predicted A), the background-only count in A against the prediction and its stated "
        "error (the data's statistics and the closure factor's uncertainty); a pull mean of 0 "
        "is an unbiased prediction, a pull sd of 1 an error that is neither too small nor too "
        "large; ±1 sd is the fraction of pseudo-experiments within one (target 68% ± 4%)."
    ),
    (
        "- *vs truth*: the same for (true A - predicted A) / error, the stated error alone against "
        "the truth."
    ),
    (
        "- *Poisson only*: the pull of the estimate before the transform's uncertainty is "
        "propagated (B C / D with the statistics of B, C, D alone)."
    ),
    (
        "- *stated error*: the median relative error of the prediction; *sd of true closure "
        "factor*: how much the fitted transform's own non-closure varies between defining "
        "samples (what a smaller fit spread would reduce)."
    ),
    (
        "- *simulated events in A*: the median effective number (sum w)² / sum w² of the "
        "background simulation's events in A, whose statistics the closure factor carries."
    ),
    (
        "- *mu bias / 68% coverage*: the fitted signal strength of the injected signal (true "
        "mu = 1) with the study's pyhf workspace, and the fraction of 68% profile-likelihood "
        "intervals that contain 1."
    ),
    (
        "- *verdict*: pull sd within 0.9-1.1, ±1 sd coverage within 68% ± 4% and bias within "
        "twice its error (and the signal's coverage), with the targets missed named; at the "
        "smallest of several defining sizes a failure says the sample is too small."
    ),
]


def coverage_table(summary: ToysSummary) -> str:
    """The table of every setting, as Markdown (``table.md``, included by the docs)."""
    return markdown_table(HEADER, [_row(s) for s in summary["settings"]]) + "\n"


def _weights_text(fraction: float) -> str:
    """What the simulation's weights are, in words."""
    if not fraction:
        return "The simulated events (defining sample and background simulation) weigh 1 each."
    scale = 1.0 / (1.0 - 2.0 * fraction)
    return (
        f"The simulated events (defining sample and background simulation) carry weights with "
        f"negative entries, as next-to-leading-order simulation: {100 * fraction:g}% of them "
        f"weigh -{scale:.3g}, the others +{scale:.3g} (expectation 1; the effective number of "
        f"events is {(1 - 2 * fraction) ** 2:.3g} of the count). The fit, its keyed replicas "
        "and the closure factor take the weights; the data are unweighted counts."
    )


def _grid_note_lines(summary: ToysSummary) -> list[str]:
    """The settings whose fitted grid may not close at the cut, beneath the table."""
    notes = [
        f"- {s['name']} at {s['n_defining']:,} defining events: {s['grid_note']}"
        for s in summary["settings"]
        if s.get("grid_note")
    ]
    if not notes:
        return []
    return ["", "**Not resolved at the cut** (the fit of the first pseudo-experiment):", "", *notes]


def report_text(summary: ToysSummary, figure: str | None) -> str:
    """``report.md``: the table of every setting with what each column is."""
    population = summary["population"]
    lines = [
        f"# Pseudo-experiments of the ABCD estimate: {summary['name']}",
        "",
        (
            f"{summary['n_toys']} pseudo-experiments per score and defining size. Each draws its own "
            "defining sample of the toy background, fits the transform and "
            f"{summary['n_boot']} keyed bootstrap replicas on it, measures the closure factor on the "
            f"background simulation ({summary['simulation']} sample), and predicts the background "
            f"in A (x >= {summary['x0']}, gamma >= {summary['y0']}; the raw score is cut at the "
            "defining sample's quantile of the same level) from a data set of "
            f"{population['background']:g} expected background events, with "
            f"{population['signal']:g} signal events injected for the signal-strength fit."
        ),
        "",
        _weights_text(summary["negative_weight_fraction"]),
        "",
        coverage_table(summary),
        *_grid_note_lines(summary),
        "",
        *COLUMNS,
    ]
    if figure is not None:
        lines += ["", f"![pull width and coverage against the defining size]({figure})"]
    lines += [
        "",
        "## Claims",
        "",
        (
            "Each target as a claim, decided by the rule of every study: held or not beyond "
            "two standard deviations of its statistical error, not decidable within."
        ),
        "",
        claim_lines(summary["claims"]),
    ]
    return "\n".join(lines) + "\n"


def draw_figure(folder: Path, summary: ToysSummary) -> str | None:
    """Pull sd and ±1 sd coverage against the defining size, per score, with the target bands."""
    from matplotlib.ticker import NullLocator

    from rosenblatt.plotting import figure, legend_above, method_style, save_figure

    fig, (left, right) = figure(ncols=2, width=6.0, height=5.0)
    names = list(dict.fromkeys(s["name"] for s in summary["settings"]))
    for name in names:
        points = [s for s in summary["settings"] if s["name"] == name and s["background"]]
        if not points:
            continue
        style = method_style(name)
        sizes = [s["n_defining"] for s in points]
        pulls = [s["background"]["pull_observed"] for s in points]  # type: ignore[index]
        options = {"color": style.colour, "marker": style.marker, "label": style.label or name}
        left.errorbar(sizes, [p["sd"] for p in pulls], [p["sd_error"] for p in pulls], **options)
        right.errorbar(
            sizes,
            [100 * p["coverage_1sd"] for p in pulls],
            [100 * p["coverage_1sd_error"] for p in pulls],
            **options,
        )
    left.axhspan(0.9, 1.1, color="0.85", zorder=0)
    right.axhspan(64.27, 72.27, color="0.85", zorder=0)
    sizes = sorted({s["n_defining"] for s in summary["settings"]})
    for ax, label in ((left, "pull standard deviation"), (right, "coverage of ±1 sd [%]")):
        ax.set_xscale("log")
        # the defining sizes themselves as the ticks: a log axis's own labels crowd between them
        ax.set_xticks(sizes, labels=[f"{n:,}" for n in sizes])
        ax.xaxis.set_minor_locator(NullLocator())
        ax.set_xlabel("defining events")
        ax.set_ylabel(label)
    legend_above(left, ncol=2)
    save_figure(fig, folder / FIGURE)
    return FIGURE
