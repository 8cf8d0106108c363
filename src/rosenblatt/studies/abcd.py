"""The decorrelated ABCD analysis over file sets (``study: abcd``), as coffea workloads.

Steps, each a pass of coffea processors over files (see ``configs/abcd-example.yaml``):

1. ``generate`` (optional): the event files the configuration names, when missing;
2. ``score``: the defining background files are read, their features computed
   and scored; each chunk writes a small skim ``(x, score, weight)``;
3. ``fit``: each transform is fitted on the skims — IRGI and GridKDE with fixed
   parameters in the workers by :class:`rosenblatt.MergeableFit`, KDE and
   ``"auto"`` parameters on the gathered skims (below ``max_gather_events``);
4. ``bootstrap``: a bootstrap ensemble of each fitted transform
   (:func:`rosenblatt.bootstrap`, ``statistics.n_boot`` replicas) on the
   gathered skims, saved as ``<name>_ensemble.json``;
5. ``analyse``: every event of the file set is scored, transformed and filled
   into the ABCD histograms;
6. ``close``: the closure over the cut grid from the merged histograms, and per
   variant the ABCD likelihood at its best cut as a pyhf workspace
   ``workspace_<variant>.json``;
7. ``report``: ``abcd.root``, ``histograms.json``, ``closure.json``,
   ``cutflow.json``, ``report.md`` and the figures.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from rosenblatt.studies.abcd_config import AbcdConfig

__all__ = ["STEPS", "run"]

log = logging.getLogger("rosenblatt.abcd")

#: the steps of the study, in order
STEPS = ("generate", "score", "fit", "bootstrap", "analyse", "close", "report")


def run(config: dict[str, Any], folder: Path) -> dict[str, Any]:
    """Run the ABCD analysis of ``config``; write its outputs to ``folder``."""
    from rosenblatt.ml.scoring import make_scorer
    from rosenblatt.processors.analysis import AnalysisProcessor, PlaneBinning, Variant
    from rosenblatt.processors.fitting import fit_on_skims, mergeable
    from rosenblatt.processors.runner import make_executor, map_items, run_processor
    from rosenblatt.studies.abcd_report import write_outputs

    cfg = AbcdConfig.parse(config)
    timings: dict[str, float] = {}
    clock = time.perf_counter()
    _generate(cfg)
    timings["generate"] = time.perf_counter() - clock

    scorer = make_scorer(cfg.score)
    skim_dir = cfg.data_dir / "skim"
    for old in skim_dir.glob("*.parquet"):
        old.unlink()
    executor = cfg.executor
    low, high = cfg.cuts.x0[0], cfg.cuts.x0[-1]
    plane = PlaneBinning(
        x_range=cfg.plane_x_range or (low - 0.5 * (high - low), high + 0.5 * (high - low))
    )
    with make_executor(executor.kind, executor.workers, scheduler=executor.scheduler) as pool:
        clock = time.perf_counter()
        defining = run_processor(
            cfg.defining,
            AnalysisProcessor(
                scorers={"score": scorer},
                variants=(),
                x0=cfg.cuts.x0,
                x=cfg.cuts.x,
                skim_dir=str(skim_dir.resolve()),
                skip_bad_chunks=cfg.skip_bad_files,
            ),
            pool,
            chunksize=executor.chunksize,
            skip_bad_files=cfg.skip_bad_files,
        )
        skims = sorted(defining["skim"])
        timings["score"] = time.perf_counter() - clock
        log.info("defining sample: %d skim files written", len(skims))

        def run_pass(paths: Sequence[str], function: Callable[[str], Any], description: str) -> Any:
            return map_items(pool, list(paths), function, description)

        clock = time.perf_counter()
        transforms: dict[str, Any] = {}
        routes: dict[str, str] = {}
        for spec in cfg.transforms:
            transform = spec.build()
            if spec.file is None:
                routes[spec.name] = (
                    "workers (mergeable fit)" if mergeable(transform) else "driver (gathered skims)"
                )
                transform = fit_on_skims(
                    transform, skims, "score", run_pass, max_gather_events=cfg.max_gather_events
                )
            else:
                routes[spec.name] = f"read from {spec.file}"
            transform.save(folder / f"{spec.name}.json")
            transforms[spec.name] = transform
            log.info("transform %s: %r fitted (%s)", spec.name, transform, routes[spec.name])
        score_y0, score_range = _score_cuts(cfg, skims, run_pass)
        timings["fit"] = time.perf_counter() - clock
        clock = time.perf_counter()
        ensembles = _ensembles(cfg, skims, folder)
        timings["bootstrap"] = time.perf_counter() - clock

        variants = [Variant("score", "score", score_y0, y_range=score_range)]
        variants += [
            Variant(name, "score", cfg.cuts.y0, transform=t) for name, t in transforms.items()
        ]
        clock = time.perf_counter()
        output = run_processor(
            cfg.fileset,
            AnalysisProcessor(
                scorers={"score": scorer},
                variants=tuple(variants),
                x0=cfg.cuts.x0,
                x=cfg.cuts.x,
                x_max=cfg.cuts.x_max,
                plane=plane,
                skip_bad_chunks=cfg.skip_bad_files,
            ),
            pool,
            chunksize=executor.chunksize,
            skip_bad_files=cfg.skip_bad_files,
        )
        timings["analyse"] = time.perf_counter() - clock
    clock = time.perf_counter()
    summary = write_outputs(folder, cfg, output, defining, routes, timings, ensembles)
    timings["close and report"] = time.perf_counter() - clock
    (folder / "timings.json").write_text(json.dumps(timings, indent=2), encoding="utf-8")
    return summary


def _generate(cfg: AbcdConfig) -> None:
    """Generate the event files of the ``generate:`` block that are not there yet."""
    if not cfg.generate:
        return
    from rosenblatt.hep.generation import generate_file

    for entry in cfg.generate:
        path = Path(str(entry["output"]))
        path.parent.mkdir(parents=True, exist_ok=True)
        log.info("generating %s events into %s (kept for later runs)", entry["process"], path)
        generate_file(
            path,
            str(entry["process"]),
            int(entry["events"]),
            int(entry.get("seed", 0)),
            chunk_size=int(entry.get("chunk_size", 500)),
            workers=int(entry.get("workers", cfg.executor.workers)),
        )
    missing = [
        p
        for paths in (*cfg.defining.values(), *cfg.fileset.values())
        for p in paths
        if not Path(p).is_file()
    ]
    if missing:
        raise FileNotFoundError(
            f"{cfg.source}: input file(s) {missing} do not exist and generate: does not write them"
        )


def _ensembles(cfg: AbcdConfig, skims: Sequence[str], folder: Path) -> dict[str, str]:
    """A bootstrap ensemble of each fitted transform, saved as ``<name>_ensemble.json``.

    Fitted on the gathered skims of the defining sample; its nominal is the
    transform fitted in the ``fit`` step (equal to rounding for weighted
    events fitted in the workers). Returns per transform the file written, or
    why none was.
    """
    import rosenblatt as rb
    from rosenblatt.processors.fitting import gather_skims

    n_boot, seed = cfg.statistics.n_boot, cfg.statistics.seed
    notes: dict[str, str] = {}
    sample: tuple[Any, Any, Any] | None = None
    for spec in cfg.transforms:
        if n_boot == 0:
            notes[spec.name] = "none (statistics.n_boot: 0)"
            continue
        if spec.file is not None:
            notes[spec.name] = "none: read from a file, fitted on a sample not given here"
            continue
        if sample is None:
            try:
                x, y, weight = gather_skims(skims, "score", max_events=cfg.max_gather_events)
            except ValueError as err:
                notes[spec.name] = f"none: {err}"
                continue
            sample = (x, y, None if np.all(weight == 1.0) else weight)
        ensemble = rb.bootstrap(spec.build(), sample[0], sample[1], sample[2], n=n_boot, seed=seed)
        path = folder / f"{spec.name}_ensemble.json"
        ensemble.save(path)
        notes[spec.name] = path.name
        log.info("transform %s: %d bootstrap replicas saved in %s", spec.name, n_boot, path.name)
    return notes


def _score_cuts(
    cfg: AbcdConfig,
    skims: Sequence[str],
    run_pass: Callable[[Sequence[str], Callable[[str], Any], str], Any],
) -> tuple[tuple[float, ...], tuple[float, float]]:
    """Cut values and figure range of the raw score.

    Given as ``abcd.score_y0``, or else the quantiles of the defining sample's
    score at the levels ``y0``: a raw cut then keeps the same fraction of the
    defining background as the transformed cut it stands beside.
    """
    from rosenblatt.processors.fitting import ScoreHistogram, score_range

    lo, hi = score_range(skims, "score")
    if cfg.cuts.score_y0 is not None:
        return cfg.cuts.score_y0, (min(lo, *cfg.cuts.score_y0), max(hi, *cfg.cuts.score_y0))
    counts = run_pass(skims, ScoreHistogram("score", lo, hi), "score quantiles")
    edges = np.linspace(lo, hi, len(counts) + 1)
    cumulative = np.concatenate(([0.0], np.cumsum(counts)))
    levels = np.clip(np.asarray(cfg.cuts.y0), 0.0, 1.0) * cumulative[-1]
    quantiles = np.interp(levels, cumulative, edges)
    return tuple(float(q) for q in np.unique(quantiles)), (lo, hi)
