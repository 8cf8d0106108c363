"""The pass/fail pseudo-experiments' report: the tables side by side, what each number is, a figure."""

from __future__ import annotations

from pathlib import Path

from rosenblatt.studies._common import claim_lines, markdown_table
from rosenblatt.studies.passfail_toys.summary import (
    BIAS_FRACTION,
    COVERAGE_TARGET,
    FitJson,
    PassfailToysSummary,
)

__all__ = ["draw_figure", "report_text", "result_table"]

FIGURE = "bias-coverage.png"
#: the markers of the fits kept to compare, by their non-closure
COMPARED_MARKERS = {"statistical": "x", "none": "+"}
#: their short labels in the figure's key
COMPARED_LABELS = {"statistical": "stat. only", "none": "no non-closure"}


def _label(name: str) -> str:
    return {"exact": "exact CDF", "score": "raw score"}.get(name, name)


def _fit_cells(fit: FitJson) -> list[str]:
    return [
        f"{fit['bias']:+.3f} ± {fit['bias_error']:.3f}",
        f"{fit['half_width']:.3f}",
        f"{fit['pull_sd']:.2f}",
        f"{100 * fit['coverage']:.1f} ± {100 * fit['coverage_error']:.1f}%",
    ]


def result_table(summary: PassfailToysSummary) -> str:
    """The bias, pull sd and coverage of ``mu`` per score, and the background-only scans."""
    scores = summary["scores"]
    header = ["mass", "mu"]
    for score in scores:
        name = _label(score["name"])
        header += [f"{name}: bias", f"{name}: error", f"{name}: pull sd", f"{name}: coverage"]
    rows = []
    for index, fit in enumerate(scores[0]["fits"]):
        row = [f"{fit['mass']:g}", f"{fit['strength']:g}"]
        for score in scores:
            row += _fit_cells(score["fits"][index])
        rows.append(row)
    first = markdown_table(header, rows)
    scanned = [score for score in scores if score["background_only"] is not None]
    if not scanned:
        return first
    first_scan = scanned[0]["background_only"]
    assert first_scan is not None
    z_header = ["score", "upcrossings of u0"]
    z_header += [f"max Z ≥ {t['z']:g}: toys / GV" for t in first_scan["thresholds"]]
    z_header += ["mean global p", "KS p of global p"]
    z_rows = []
    for score in scanned:
        scan = score["background_only"]
        assert scan is not None
        cells = [_label(score["name"]), f"{scan['upcrossings']:.2f}"]
        cells += [
            f"{t['fraction']:.3f} ± {t['fraction_error']:.3f} / {t['gross_vitells']:.3f}"
            for t in scan["thresholds"]
        ]
        cells += [f"{scan['global_p_mean']:.3f}", f"{scan['ks_pvalue']:.2g}"]
        z_rows.append(cells)
    return first.rstrip("\n") + "\n\n" + markdown_table(z_header, z_rows)


def report_text(summary: PassfailToysSummary, figure: str | None) -> str:
    """``report.md``: the verdicts, the tables and what each column is."""
    spectrum = summary["spectrum"]
    lines = [
        f"# Pass/fail pseudo-experiments: {summary['name']}",
        "",
        (
            f"{summary['n_toys']} pseudo-experiments per score; {spectrum['bins']} bins of x on "
            f"[0, 1]; the cut passes {100 * (1 - spectrum['y0']):.0f}% of the background; a "
            f"Gaussian resonance of width {spectrum['resolution']:g} and {spectrum['signal_yield']:g} "
            f"events at mu = 1 (before the cut); each fitted transform fitted per pseudo-experiment "
            f"on {summary['n_defining']:,} defining events."
        ),
        "",
    ]
    if summary.get("n_boot"):
        lines[-1:-1] = [
            "",
            (
                f"Each fitted transform has {summary['n_boot']} keyed bootstrap replicas; its "
                "defining sample is the background simulation, on which the non-closure of the "
                "pass/fail ratio per bin is measured and enters the fit as a `shapesys`: the "
                "measured ratio less the bootstrap's bias, in quadrature with the keyed "
                "bootstrap's error (the transform's fit in it). The same data sets are also "
                "fitted with the statistical error alone in its place (statistical non-closure "
                "only) and with no non-closure, to compare."
            ),
        ]
    lines += [claim_lines(summary["claims"]), ""]
    for score in summary["scores"]:
        fits = score["fits"]
        covered = sum(f["covers"] for f in fits)
        unbiased = sum(f["unbiased"] for f in fits)
        lines.append(
            f"- {_label(score['name'])}: coverage within {100 * COVERAGE_TARGET:.1f} ± "
            f"{100 * summary['coverage_tolerance']:.0f}% in {covered} of {len(fits)} settings; "
            f"bias within {BIAS_FRACTION:g} of the stated error in {unbiased} of {len(fits)}."
        )
    scanned = any(score["background_only"] is not None for score in summary["scores"])
    explained = (
        "Bias: the mean of `mu_hat - mu` with its standard error; error: the stated error "
        "of `mu`, the interval's mean half-width; pull sd: the standard deviation of "
        "`(mu_hat - mu)` over the interval's half towards `mu`; coverage: the fraction of "
        "68% profile-likelihood intervals (`-2 ln L` within 1 of its minimum) holding `mu`, "
        "with its binomial error."
    )
    if scanned:
        explained += (
            " In the second table, per score over the background-only "
            "data sets: the mean number of upcrossings of `u0` by `q0` over the scan; the fraction "
            "whose largest local significance reaches Z beside Gross-Vitells' "
            "`p_local(Z) + <N(u0)> exp(-(Z^2 - u0) / 2)`; each data set's "
            "claimed global p-value: the fraction of "
            f"{spectrum['global_toys']} pseudo-experiments of one background-only fit whose "
            "largest local significance reaches its own; its mean (1/2 if uniform) and the "
            "Kolmogorov-Smirnov p-value of its uniformity."
        )
    heading = (
        "The signal strength and the background-only scans" if scanned else "The signal strength"
    )
    lines += ["", f"## {heading}", "", result_table(summary), "", explained]
    if figure is not None:
        lines += ["", f"![bias and coverage of the signal strength per score]({figure})"]
    seconds = summary["step_seconds"]
    if seconds:
        lines += ["", "Time: " + ", ".join(f"{k} {v:.0f} s" for k, v in seconds.items()) + "."]
    return "\n".join(lines) + "\n"


def draw_figure(folder: Path, summary: PassfailToysSummary) -> str | None:
    """Bias and coverage of ``mu`` per injected mass and strength, one series per score."""
    from rosenblatt.plotting import figure, legend_above, method_style, save_figure

    fig, (left, right) = figure(ncols=2, width=6.0, height=5.0)
    scores = summary["scores"]
    labels = [f"{f['mass']:g}/{f['strength']:g}" for f in scores[0]["fits"]]
    positions = list(range(len(labels)))
    for offset, score in enumerate(scores):
        style = method_style(score["name"])
        colour, marker, label = style.colour, style.marker, style.label or _label(score["name"])
        if score.get("compared", False):
            base = method_style(score["name"].split(",")[0])
            colour, marker = base.colour, COMPARED_MARKERS.get(score["nonclosure"], "x")
            label = f"{base.label}: {COMPARED_LABELS.get(score['nonclosure'], score['name'])}"
        shift = [p + 0.15 * (offset - (len(scores) - 1) / 2) for p in positions]
        options = {"color": colour, "marker": marker, "linestyle": "none", "label": label}
        fits = score["fits"]
        left.errorbar(shift, [f["bias"] for f in fits], [f["bias_error"] for f in fits], **options)
        right.errorbar(
            shift,
            [100 * f["coverage"] for f in fits],
            [100 * f["coverage_error"] for f in fits],
            **options,
        )
    tolerance = 100 * summary["coverage_tolerance"]
    right.axhspan(
        100 * COVERAGE_TARGET - tolerance, 100 * COVERAGE_TARGET + tolerance, color="0.85", zorder=0
    )
    left.axhline(0.0, color="0.5", linewidth=1)
    for ax, label in ((left, r"bias of $\hat\mu$"), (right, "coverage of the 68% interval [%]")):
        ax.set_xticks(positions, labels, rotation=90)
        ax.set_xlabel(r"injected mass / $\mu$")
        ax.set_ylabel(label)
    legend_above(left, ncol=3 if len(scores) <= 3 else 2)
    save_figure(fig, folder / FIGURE)
    return FIGURE
