"""The files of the ABCD analysis study: ROOT and JSON histograms, closure, cut flow, estimate, figures."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from rosenblatt._atomic import atomic_write, write_text
from rosenblatt.abcd import ClosureScan, closure_scan
from rosenblatt.abcd.closure import region_sums
from rosenblatt.processors.analysis import summed_over_datasets
from rosenblatt.studies.abcd.report import report
from rosenblatt.studies.abcd.summary import (
    AbcdSummary,
    AbcdSummaryCore,
    ClosureJson,
    ClosureNumbers,
    CutflowJson,
    DatasetJson,
    LikelihoodJson,
    PassOutput,
)

if TYPE_CHECKING:
    from hist import Hist
    from hist.storage import Weight

    from rosenblatt.processors.quantities import Quantity
    from rosenblatt.studies.abcd.config import AbcdConfig
    from rosenblatt.studies.abcd.estimate import CutChoice, EstimateJson
    from rosenblatt.studies.abcd.passfail import PassFailNumbers
    from rosenblatt.studies.abcd.preflight import Preflight

__all__ = [
    "closure_summary",
    "draw_figures",
    "write_likelihoods",
    "write_outputs",
    "write_root_histograms",
]


def write_root_histograms(path: Path, histograms: dict[str, Hist[Weight]]) -> list[str]:
    """Write one weighted TH2D per dataset and variant, named ``<dataset>_<variant>``.

    Flow bins are kept: the under- and overflow of ``x`` and ``y`` hold the
    events outside the cut grid. Returns the names written.
    """
    import uproot

    names = []
    with atomic_write(path) as temporary, uproot.recreate(temporary) as handle:
        for variant, h in sorted(histograms.items()):
            histogram: Any = h
            for dataset in sorted(h.axes["dataset"]):
                name = f"{dataset}_{variant}"
                handle[name] = histogram[{"dataset": dataset, "process": sum}]
                names.append(name)
    return names


def write_histograms_json(path: Path, output: PassOutput) -> None:
    """Write the ABCD and plane histograms in the UHI JSON serialisation of ``hist``."""
    import uhi.io.json
    from hist import serialization

    document = {
        kind: {variant: serialization.to_uhi(h) for variant, h in output[kind].items()}
        for kind in ("abcd", "plane", "passfail")
        if kind in output
    }
    write_text(path, json.dumps(document, default=uhi.io.json.default))


def closure_summary(scan: ClosureScan) -> ClosureJson:
    """The numbers of one variant's closure over the cut grid."""
    pulls = scan.pull[scan.valid]
    return {
        "best": scan.best() if scan.valid.any() else None,
        "frac_eta_below_1e-2": scan.fraction_below(1e-2),
        "frac_eta_below_1e-3": scan.fraction_below(1e-3),
        "pull_mean": float(np.mean(pulls)) if len(pulls) else None,
        "pull_std": float(np.std(pulls)) if len(pulls) else None,
        "valid_cuts": int(scan.valid.sum()),
        "x0": scan.x0.tolist(),
        "y0": scan.y0.tolist(),
        "eta": np.where(scan.valid, scan.eta, np.nan).tolist(),
        "eta_error": np.where(scan.valid, scan.eta_error, np.nan).tolist(),
    }


def _closure_numbers(closure: ClosureJson) -> ClosureNumbers:
    """The numbers of ``closure`` that ``summary.json`` holds (the grid left out)."""
    return {
        "best": closure["best"],
        "frac_eta_below_1e-2": closure["frac_eta_below_1e-2"],
        "frac_eta_below_1e-3": closure["frac_eta_below_1e-3"],
        "pull_mean": closure["pull_mean"],
        "pull_std": closure["pull_std"],
        "valid_cuts": closure["valid_cuts"],
    }


def write_likelihoods(
    folder: Path, histograms: dict[str, Hist[Weight]], scans: dict[str, ClosureScan]
) -> dict[str, LikelihoodJson]:
    """Per variant, the ABCD likelihood at its best cut as ``workspace_<variant>.json``.

    The expectation is the file set's background (process 0) and signal
    (process 1) in the regions of the cut of smallest ``|eta_A|``; the
    background's relative non-closure there, ``|N_A - N_B N_C / N_D| /
    (N_B N_C / N_D)``, enters A as a ``normsys``. Returns per variant the
    cut, the expected significance and 95% CLs limit on ``mu`` and the
    workspace's file name (or a note when pyhf is missing or the cut holds
    no signal in A or no background in a control region).
    """
    try:
        import pyhf  # noqa: F401
    except ImportError:
        return {
            variant: {"likelihood_note": "pyhf is not installed (pip install 'rosenblatt[stats]')"}
            for variant in scans
        }
    results: dict[str, LikelihoodJson] = {}
    for variant, scan in scans.items():
        if not scan.valid.any():
            results[variant] = {"likelihood_note": "no cut populates every region"}
            continue
        results[variant] = _likelihood_at_best_cut(folder, variant, histograms[variant], scan)
    return results


def _likelihood_at_best_cut(
    folder: Path, variant: str, histogram: Hist[Weight], scan: ClosureScan
) -> LikelihoodJson:
    """The likelihood of one variant at its cut of smallest ``|eta_A|`` (:func:`write_likelihoods`)."""
    from rosenblatt.abcd.likelihood import likelihood_at_cut

    abs_eta = np.where(scan.valid, np.abs(scan.eta), np.inf)
    i, j = np.unravel_index(int(np.argmin(abs_eta)), abs_eta.shape)
    h = summed_over_datasets(histogram)
    view: Any = h.view(flow=True)
    values = np.moveaxis(view.value, -1, 0)
    process = h.axes["process"]
    regions = {
        label: [float(r[i, j]) for r in region_sums(values[process.index(label)])]
        if label in process
        else [0.0] * 4
        for label in (0, 1)
    }
    n_a, n_b, n_c, n_d = regions[0]
    relative = (
        abs(n_a - n_b * n_c / n_d) / (n_b * n_c / n_d) if min(n_b, n_c, n_d) > 0 else float("nan")
    )
    found = likelihood_at_cut(folder, variant, regions[0], regions[1], relative)
    # likelihood_at_cut gives the keys of LikelihoodJson besides the cut
    return cast("LikelihoodJson", {"x0": float(scan.x0[i]), "y0": float(scan.y0[j]), **found})


def write_outputs(
    folder: Path,
    cfg: AbcdConfig,
    output: PassOutput,
    defining: PassOutput,
    routes: dict[str, str],
    timings: dict[str, float],
    ensembles: dict[str, str] | None = None,
    *,
    checked: Preflight | None = None,
    choices: dict[str, CutChoice] | None = None,
    invalid: dict[str, str] | None = None,
) -> AbcdSummary:
    """Write every output of the study to ``folder``; return the summary.

    ``timings`` gains the time of the likelihoods; a transform of ``invalid``
    (left out of the analysis, with why) is ``valid: false`` with its reason.
    """
    from rosenblatt.studies._common import strict_json, summary_header, write_summary

    names = write_root_histograms(folder / "abcd.root", output["abcd"])
    write_histograms_json(folder / "histograms.json", output)
    scans, closure = _write_closure(folder, output["abcd"])
    cutflow = _cutflow(output, defining)
    write_text(folder / "cutflow.json", json.dumps(cutflow, indent=2))
    clock = time.perf_counter()
    estimates = _estimates(folder, cfg, output, choices) if choices else {}
    if estimates:
        likelihood = {variant: _estimate_cut(e) for variant, e in estimates.items()}
    else:
        likelihood = write_likelihoods(folder, output["abcd"], scans)
    for variant, reason in (invalid or {}).items():
        likelihood[variant] = {"likelihood_note": f"not valid: {reason}"}
        if estimates:
            estimates[variant] = {"valid": False, "note": f"not valid: {reason}"}
    timings["likelihood (in close and report)"] = time.perf_counter() - clock
    clock = time.perf_counter()
    passfail = _passfail(folder, cfg, output, estimates)
    if passfail is not None:
        timings["pass/fail fit (in close and report)"] = time.perf_counter() - clock
    figures = draw_figures(
        folder,
        output,
        scans,
        cfg.cuts.x_axis_label,
        _chosen_cuts(likelihood),
        _raw_score_label(cfg.score),
    )
    core: AbcdSummaryCore = {
        **summary_header("abcd", cfg.name, cfg.source),
        "blind": cfg.blind,
        "histograms": names,
        "transforms": routes,
        "closure": {variant: _closure_numbers(c) for variant, c in closure.items()},
        "ensembles": ensembles or {},
        "likelihood": likelihood,
        "cutflow": cutflow,
        "step_seconds": timings,
    }
    summary = cast("AbcdSummary", core)  # its optional keys follow
    if checked is not None:
        summary["datasets"] = _datasets(cfg, checked)
        summary["lumi"] = cfg.lumi
        summary["schema"] = checked.schema
    if passfail is not None:
        summary["passfail"] = passfail
    if estimates:
        summary["estimate"] = estimates
        write_text(
            folder / "estimate.json", json.dumps(strict_json(estimates), indent=2, allow_nan=False)
        )
    write_summary(folder, strict_json(summary), strict=True)
    write_text(folder / "report.md", report(summary, figures))
    return summary


def _passfail(
    folder: Path, cfg: AbcdConfig, output: PassOutput, estimates: dict[str, EstimateJson]
) -> dict[str, PassFailNumbers] | None:
    """Per variant, the pass/fail fit at its cut (``passfail:``), or ``None`` without the block.

    Without data, each variant says there is none to fit.
    """
    from rosenblatt.studies.abcd.passfail import write_passfail, write_results

    if cfg.passfail is None:
        return None
    if not estimates:
        variants = output["abcd"]
        return {v: {"note": "no fit: the file set holds no data"} for v in variants}
    results = write_passfail(
        folder,
        cfg.passfail,
        output.get("passfail", {}),
        estimates,
        blind=cfg.blind,
        x_label=cfg.cuts.x_axis_label,
        seed=cfg.statistics.seed,
        replicas=output.get("replicas"),
        resampled=output.get("resampled"),
    )
    return write_results(folder, results)


def _write_closure(
    folder: Path, histograms: dict[str, Hist[Weight]]
) -> tuple[dict[str, ClosureScan], dict[str, ClosureJson]]:
    """Each variant's closure over the cut grid (the raw score first), written as ``closure.json``."""
    from rosenblatt.studies._common import strict_json

    order = sorted(histograms, key=lambda variant: (variant != "score", variant))
    scans = {variant: closure_scan(summed_over_datasets(histograms[variant])) for variant in order}
    closure = {variant: closure_summary(scan) for variant, scan in scans.items()}
    write_text(
        folder / "closure.json", json.dumps(strict_json(closure), allow_nan=False, default=float)
    )
    return scans, closure


def _cutflow(output: PassOutput, defining: PassOutput) -> CutflowJson:
    """The cut flows of the file set and of the defining sample, with the files and chunks left out."""
    return {
        "fileset": output["cutflow"],
        "defining": defining["cutflow"],
        "weighted": {
            "fileset": output.get("cutflow_weighted", {}),
            "defining": defining.get("cutflow_weighted", {}),
        },
        "skipped_files": {**defining.get("skipped", {}), **output.get("skipped", {})},
        "unreadable_chunks": {**defining.get("unreadable", {}), **output.get("unreadable", {})},
    }


def _estimate_cut(estimate: EstimateJson) -> LikelihoodJson:
    """The cut and workspace of a variant's estimate, as the ``likelihood`` of the summary."""
    found: LikelihoodJson = {}
    if (x0 := estimate.get("x0")) is not None:
        found["x0"] = x0
    if (y0 := estimate.get("y0")) is not None:
        found["y0"] = y0
    if (workspace := estimate.get("workspace")) is not None:
        found["workspace"] = workspace
    return found


def _chosen_cuts(likelihood: dict[str, LikelihoodJson]) -> dict[str, tuple[float, float]]:
    """Per variant with a cut, its ``(x0, y0)``."""
    return {
        variant: (float(x0), float(y0))
        for variant, cut in likelihood.items()
        if (x0 := cut.get("x0")) is not None and (y0 := cut.get("y0")) is not None
    }


def _datasets(cfg: AbcdConfig, checked: Preflight) -> dict[str, DatasetJson]:
    """Per dataset, its role, files, events and normalisation."""
    return {
        name: {
            "role": d.role,
            "files": list(d.files),
            "events": checked.events(name),
            "xsec": d.xsec,
            "sum_weights": checked.sum_weights.get(name),
            "scale": checked.scales.get(name, 1.0),
        }
        for name, d in cfg.datasets.items()
    }


def _estimates(
    folder: Path, cfg: AbcdConfig, output: PassOutput, choices: dict[str, CutChoice]
) -> dict[str, EstimateJson]:
    """Per variant, the data-driven estimate at its cut.

    See :func:`rosenblatt.studies.abcd.estimate.estimate`.
    """
    from rosenblatt.studies.abcd.estimate import closure_corrections, closure_tests, estimate

    histograms = {v: summed_over_datasets(h) for v, h in output["abcd"].items()}
    replicas, resampled = output.get("replicas"), output.get("resampled")
    tests = closure_tests(
        histograms, seed=cfg.statistics.seed, replicas=replicas, resampled=resampled
    )
    corrections = closure_corrections(histograms, replicas, resampled)
    results: dict[str, EstimateJson] = {}
    for variant, test in tests.items():
        if isinstance(test, str):
            results[variant] = {"valid": False, "note": test}
            continue
        results[variant] = estimate(
            folder,
            variant,
            histograms[variant],
            test,
            choices[variant],
            blind=cfg.blind,
            correction=corrections[variant],
        )
    return results


def draw_figures(
    folder: Path,
    output: PassOutput,
    scans: dict[str, ClosureScan],
    x_label: str,
    cuts: dict[str, tuple[float, float]] | None = None,
    raw_label: str = "raw score",
) -> dict[str, str]:
    """Per variant: the background's ``(x, score)`` plane with the signal, and ``|eta|`` over the grid.

    ``x_label`` is the axis label of ``x`` (with its unit), ``raw_label`` that
    of the raw score; ``cuts`` the chosen ``(x0, y0)`` of each variant, drawn
    on both panels.
    """
    from rosenblatt.plotting import (
        figure,
        figure_key,
        method_style,
        plot_eta_map,
        plot_plane_histogram,
        save_figure,
    )

    names = {}
    for variant, scan in scans.items():
        plane: Any = summed_over_datasets(output["plane"][variant])
        fig, axes = figure(ncols=2, width=7.5)
        processes = list(plane.axes["process"])
        background = plane[{"process": processes.index(0)}] if 0 in processes else None
        signal = plane[{"process": processes.index(1)}] if 1 in processes else None
        score = _score_label(variant, method_style(variant).label)
        cut = (cuts or {}).get(variant)
        if background is not None:
            plot_plane_histogram(
                axes[0],
                background,
                signal,
                xlabel=x_label,
                ylabel=raw_label if variant == "score" else score,
                cut=cut,
            )
        if scan.valid.any():
            plot_eta_map(
                axes[1],
                scan,
                xlabel=f"cut $x_0$ on {x_label}",
                ylabel=r"cut $y_0$ on the score",
                chosen=cut,
            )
        else:
            axes[1].set_axis_off()
        figure_key(fig, title=f"ABCD with the {score}")
        names[variant] = save_figure(fig, folder / f"abcd_{variant}.png").name
    return names


def _raw_score_label(score: Quantity) -> str:
    """The axis label of the raw score: a branch or built-in feature by name and unit."""
    from rosenblatt.plotting import quantity_label

    if getattr(score, "kind", None) == "name":
        return f"raw score: {quantity_label(score.name)}"
    return "raw score"


def _score_label(variant: str, method: str) -> str:
    """How the score of a variant is named on the axes."""
    return "raw score" if variant == "score" else f"{method}-transformed score"
