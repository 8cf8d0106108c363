"""The pseudo-experiment study of the ABCD estimate (``study: toys``).

For every transform of the configuration (and the raw score) and every
defining size, ``n_toys`` pseudo-experiments
(:func:`~rosenblatt.studies.toys.experiment.pseudo_experiment`) measure
whether the estimate's stated uncertainty covers: the bias of the predicted
background in A, the pulls and the coverage of ±1 and ±2 standard deviations
with binomial errors, and the same for the fitted signal strength of an
injected signal. Steps:

1. ``toys``: the pseudo-experiments of each setting, in a pool of processes
   (one compiled-kernel thread each); each setting's results are kept in
   ``<data folder>/<setting>.json`` with the configuration they came from and
   the version and source digest of the code that computed them
   (:data:`TOY_SOURCES`), as they finish, so that a rerun of the same
   configuration and code (after a stop, too) reads them and runs only the
   rest, while a changed transform computes them again;
2. ``report``: ``summary.json``, ``report.md`` and the figure of pulls and
   coverage against the defining size.
"""

from __future__ import annotations

import hashlib
import json
import logging
import multiprocessing
import os
import sys
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import asdict
from pathlib import Path
from typing import Any

from rosenblatt._atomic import write_text
from rosenblatt._extras import progress_bar
from rosenblatt._interrupt import end_with_parent, stop_pool
from rosenblatt._records import source_digest
from rosenblatt._version import __version__
from rosenblatt.studies._common import Steps, write_summary
from rosenblatt.studies.abcd.config import TransformConfig
from rosenblatt.studies.toys.config import ToysConfig
from rosenblatt.studies.toys.experiment import (
    Setting,
    ToyResult,
    coarse_cut_note,
    pseudo_experiment,
)
from rosenblatt.studies.toys.report import coverage_table, draw_figure, report_text
from rosenblatt.studies.toys.summary import ToysSummary, summarise

__all__ = ["STEPS", "TOY_SOURCES", "code_digest", "fingerprint", "run", "settings", "toy_events"]

log = logging.getLogger("rosenblatt.toys")

#: the steps of the study, in order
STEPS = ("toys", "report")
#: pseudo-experiments handed to a worker at once
TOYS_PER_TASK = 5
#: the package's modules and folders whose code computes a pseudo-experiment's result: the
#: cached toys are keyed with their digest (:func:`code_digest`)
TOY_SOURCES = (
    "transforms",
    "abcd",
    "_jit.py",
    "studies/abcd/config.py",
    "studies/toys/config.py",
    "studies/toys/experiment.py",
    "studies/toys/population.py",
)


def settings(cfg: ToysConfig) -> list[Setting]:
    """The sets of pseudo-experiments: the raw score and each transform, at each defining size."""
    scores: list[tuple[str, TransformConfig | None]] = [("score", None)] if cfg.raw_score else []
    scores += [(t.name, t) for t in cfg.transforms]
    return [Setting(name, t, n) for n in cfg.defining_sizes for name, t in scores]


def run(config: dict[str, Any], folder: Path) -> ToysSummary:
    """Run the pseudo-experiments of ``config``; write the report and summary to ``folder``."""
    cfg = ToysConfig.parse(config)
    steps = Steps(STEPS, log, digits=1)
    cache = Path(cfg.data_folder or Path("data") / cfg.name)
    results = steps.run("toys", _all_settings, cfg, cache, events=lambda _: toy_events(cfg))
    summary = steps.run("report", _report, cfg, folder, results, steps.seconds)
    steps.write(folder)
    return summary


def toy_events(cfg: ToysConfig) -> int:
    """The events the pseudo-experiments draw and fit: their defining and simulation samples.

    Each of the ``n_toys`` pseudo-experiments of each setting fits a defining
    sample of its size and, where the simulation is independent, measures the
    closure on a simulation sample of ``simulation_size`` times it.
    """
    independent = cfg.simulation != "defining"
    total = 0
    for setting in settings(cfg):
        simulation = round(cfg.simulation_size * setting.n_defining) if independent else 0
        total += cfg.n_toys * (setting.n_defining + simulation)
    return total


def _report(
    cfg: ToysConfig,
    folder: Path,
    results: list[tuple[Setting, list[ToyResult], str | None]],
    seconds: dict[str, float],
) -> ToysSummary:
    summary = summarise(cfg, results, seconds)
    write_summary(folder, summary, strict=False)
    figure = draw_figure(folder, summary)
    write_text(folder / "table.md", coverage_table(summary))
    write_text(folder / "report.md", report_text(summary, figure))
    return summary


def code_digest() -> str:
    """The digest of the source of :data:`TOY_SOURCES` (:func:`~rosenblatt._records.source_digest`)."""
    return source_digest(*TOY_SOURCES)


def fingerprint(cfg: ToysConfig, setting: Setting) -> str:
    """What a setting's pseudo-experiments depend on, hashed: a cached result is reused only on a match.

    Besides the configuration, the package's version and :func:`code_digest`:
    toys computed by other code are computed again.
    """
    keys = {
        "version": __version__,
        "code": code_digest(),
        "seed": cfg.seed,
        "simulation": cfg.simulation,
        "n_boot": cfg.replicas,
        "x0": cfg.x0,
        "y0": cfg.y0,
        "population": asdict(cfg.population),
        "setting": setting.name,
        "n_defining": setting.n_defining,
        "transform": None
        if setting.transform is None
        else {"kind": setting.transform.kind, **dict(setting.transform.parameters)},
    }
    if cfg.simulation == "independent" and cfg.simulation_size != 1:
        keys["simulation_size"] = cfg.simulation_size
    if cfg.negative_weight_fraction:
        keys["negative_weight_fraction"] = cfg.negative_weight_fraction
    text = json.dumps(keys, sort_keys=True, default=str)
    return hashlib.blake2b(text.encode(), digest_size=16).hexdigest()


def _all_settings(
    cfg: ToysConfig, cache: Path
) -> list[tuple[Setting, list[ToyResult], str | None]]:
    """Each setting's pseudo-experiments, with the note of a grid too coarse for the cut."""
    cache.mkdir(parents=True, exist_ok=True)
    results = []
    for setting in settings(cfg):
        note = coarse_cut_note(cfg, setting)
        if note is not None:
            log.warning("%s at %d defining events: %s", setting.name, setting.n_defining, note)
        results.append((setting, _setting(cfg, setting, cache), note))
    return results


def _setting(cfg: ToysConfig, setting: Setting, cache: Path) -> list[ToyResult]:
    """A setting's pseudo-experiments, read from the cache when it holds them all."""
    path = cache / f"{setting.name}-{setting.n_defining}.json"
    key = fingerprint(cfg, setting)
    cached = _read_cached(path, key)
    done = {row["toy"]: row for row in cached}
    missing = [toy for toy in range(cfg.n_toys) if toy not in done]
    if not missing:
        log.info(
            "%s at %d defining events: %d toys read from %s",
            setting.name,
            setting.n_defining,
            cfg.n_toys,
            path,
        )
        return [done[toy] for toy in range(cfg.n_toys)]
    label = f"toys {setting.name}, {setting.n_defining} defining events"

    def keep(rows: list[ToyResult]) -> None:
        for row in rows:
            done[row["toy"]] = row
        ordered = sorted(done.values(), key=lambda row: row["toy"])
        write_text(path, json.dumps({"fingerprint": key, "toys": ordered}, allow_nan=True))

    _run_toys(cfg, setting, missing, label, keep)
    return [done[toy] for toy in range(cfg.n_toys)]


def _read_cached(path: Path, key: str) -> list[ToyResult]:
    """The toys a cache file holds for this fingerprint (none if absent, damaged or another's)."""
    try:
        stored = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    if not isinstance(stored, dict) or stored.get("fingerprint") != key:
        return []
    rows = stored.get("toys")
    return rows if isinstance(rows, list) else []


def _one_thread() -> None:
    """Each worker runs its compiled kernels on one thread: the pool shares the cores.

    ``NUMBA_NUM_THREADS`` is set only where numba is not imported yet (unpickling
    this function may import it): numba reads its environment again at every
    compilation, and refuses a thread count that differs from the one it
    started with. The worker ends with the run, should the run be killed.
    """
    end_with_parent()
    if "numba" not in sys.modules:
        os.environ["NUMBA_NUM_THREADS"] = "1"
    try:
        import numba
    except ModuleNotFoundError:
        return
    numba.set_num_threads(1)


def _task(cfg: ToysConfig, setting: Setting, toys: list[int]) -> list[ToyResult]:
    return [pseudo_experiment(cfg, setting, toy) for toy in toys]


def _run_toys(
    cfg: ToysConfig,
    setting: Setting,
    toys: list[int],
    label: str,
    keep: Callable[[list[ToyResult]], None],
) -> None:
    """Pseudo-experiments ``toys`` of ``setting``, on ``cfg.workers`` processes.

    Each finished task is handed to ``keep`` at once, so that a stopped run
    keeps what it finished and its rerun does only the rest.
    """
    tasks = [toys[i : i + TOYS_PER_TASK] for i in range(0, len(toys), TOYS_PER_TASK)]
    bar = progress_bar(total=len(toys), desc=label, unit="toy")
    try:
        if cfg.workers == 1:
            for task in tasks:
                keep(_task(cfg, setting, task))
                bar.update(len(task))
            return
        context = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(cfg.workers, mp_context=context, initializer=_one_thread) as pool:
            try:
                futures = [pool.submit(_task, cfg, setting, task) for task in tasks]
                for future in as_completed(futures):
                    rows = future.result()
                    keep(rows)
                    bar.update(len(rows))
            except BaseException:
                # Ctrl-C, a batch system's signal or a failed toy: the workers stop now
                stop_pool(pool)
                raise
    finally:
        bar.close()
