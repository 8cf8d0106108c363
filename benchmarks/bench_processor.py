"""Throughput of the dijet feature processor, per stage and per worker, and its physics.

Real events: Pythia QCD dijets and W' signal written by ``rosenblatt generate``
(ROOT, reused from ``--workdir`` when they are there). Three tables:

1. the stages of :func:`rosenblatt.hep.features.event_table` in this process
   (one core): milliseconds per event and events per second;
2. the coffea processor through ``processor.Runner``: the iterative executor
   (one core) is the baseline; the futures executor with 1 and 2 workers is
   timed in the same run, from the moment its workers have started (their
   start-up, mostly imports, is shown apart); the ratios give the speed-up
   from 1 to 2 workers;
3. the physics of the table: signal mjj, the heavier and lighter signal jet
   masses (median and peak) and the background mjj quantiles.

Usage::

    python benchmarks/bench_processor.py [--events 1000] [--workdir DIR] [--chunksize 500]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from _summary import record


def event_files(workdir: Path, n_events: int) -> dict[str, Path]:
    """Generate (or reuse) ``n_events`` triggered events per process as ROOT files."""
    from rosenblatt.hep.generation import generate_file

    files = {}
    for process, seed in (("qcd", 101), ("wprime", 102)):
        path = workdir / f"{process}-{n_events}.root"
        generate_file(path, process, n_events, seed, chunk_size=min(n_events, 500), progress=True)
        files[process] = path
    return files


def best_time(function: Callable[[], Any], repeat: int) -> float:
    """Best CPU time of this process over ``repeat`` calls (other processes do not count)."""
    best = np.inf
    for _ in range(repeat):
        start = time.process_time()
        function()
        best = min(best, time.process_time() - start)
    return float(best)


def stage_table(particles: Any, repeat: int) -> list[tuple[str, float]]:
    """Seconds of each stage of the feature computation on ``particles``."""
    import awkward as ak

    from rosenblatt.hep.dijet import invariant_mass, leading_dijet
    from rosenblatt.hep.features import event_table
    from rosenblatt.hep.images import track_images
    from rosenblatt.hep.jets import cluster_jets_with_constituents
    from rosenblatt.hep.nsubjettiness import tau21

    n = len(particles)
    clustered = cluster_jets_with_constituents(particles)
    dijet = leading_dijet(clustered.jets)
    leading = ak.flatten(clustered.constituents[dijet.has_two_jets][:, :2], axis=1)
    return [
        (
            "anti-kT R=1.0 jets + constituents",
            best_time(lambda: cluster_jets_with_constituents(particles), repeat),
        ),
        (
            "leading dijet, mjj",
            best_time(lambda: invariant_mass(*leading_dijet(clustered.jets)[1:3]), repeat),
        ),
        ("tau21 of the two jets", best_time(lambda: tau21(leading), repeat)),
        ("36x36 track images", best_time(lambda: track_images(particles), repeat)),
        (
            "event_table (all of it)",
            best_time(
                lambda: event_table(
                    particles,
                    label=np.zeros(n),
                    weight=np.ones(n),
                    dataset="bench",
                    file="bench",
                    entry=np.arange(n),
                ),
                repeat,
            ),
        ),
    ]


def _import_processor() -> float:
    """Import the processor in a worker (its start-up work) and return when done."""
    import rosenblatt.processors.runner  # noqa: F401

    time.sleep(0.2)
    return time.time()


def runner_seconds(
    files: dict[str, Path], executor: str, workers: int, chunksize: int
) -> tuple[float, float, float]:
    """Start-up, processing wall-clock and processing CPU (this process) seconds of one run.

    The workers are started and have imported the processor before the clock
    starts; their start-up time is returned apart.
    """
    from coffea import processor
    from coffea.nanoevents import BaseSchema

    from rosenblatt.io.root import EVENTS_TREE as ROOT_TREE
    from rosenblatt.processors.dijet import DijetProcessor
    from rosenblatt.processors.runner import make_executor

    fileset = {name: {"files": {str(path): ROOT_TREE}} for name, path in files.items()}
    start = time.perf_counter()
    with make_executor(executor, workers, progress=False) as pool:
        if executor == "futures":
            warm = [pool.pool.submit(_import_processor) for _ in range(2 * workers)]
            for future in warm:
                future.result()
        startup = time.perf_counter() - start
        wall, cpu = time.perf_counter(), time.process_time()
        runner = processor.Runner(executor=pool.copy(), schema=BaseSchema, chunksize=chunksize)
        runner(fileset, DijetProcessor(), treename=ROOT_TREE)
        return startup, time.perf_counter() - wall, time.process_time() - cpu


def physics_summary(files: dict[str, Path], chunksize: int) -> list[tuple[str, str]]:
    import awkward as ak

    from rosenblatt.processors.runner import run_dijet

    result = run_dijet(
        {name: [str(path)] for name, path in files.items()}, chunksize=chunksize, progress=False
    )
    table = result["table"]
    signal = table[table["label"] == 1]
    background = table[table["label"] == 0]

    def peak(values: np.ndarray, low: float, high: float, width: float) -> float:
        counts, edges = np.histogram(values, bins=np.arange(low, high + width, width))
        top = int(np.argmax(counts))
        return float(0.5 * (edges[top] + edges[top + 1]))

    mjj = ak.to_numpy(signal["mjj"])
    mj1 = ak.to_numpy(signal["mj1"])
    mj2 = ak.to_numpy(signal["mj2"])
    quantiles = np.quantile(ak.to_numpy(background["mjj"]), [0.05, 0.5, 0.95])
    return [
        ("signal events in table / read", f"{len(signal)} / {result['cutflow']['wprime']['read']}"),
        ("signal mjj median [GeV]", f"{np.median(mjj):.0f}  (target 3000-3800)"),
        ("signal mjj peak (100 GeV bins)", f"{peak(mjj, 1000, 5000, 100):.0f}"),
        (
            "signal mj1 median / peak [GeV]",
            f"{np.median(mj1):.0f} / {peak(mj1, 0, 1000, 20):.0f}  (X: 500)",
        ),
        (
            "signal mj2 median / peak [GeV]",
            f"{np.median(mj2):.0f} / {peak(mj2, 0, 400, 10):.0f}  (Y: 100)",
        ),
        ("signal tau21_1 median", f"{np.median(ak.to_numpy(signal['tau21_1'])):.3f}"),
        ("background tau21_1 median", f"{np.median(ak.to_numpy(background['tau21_1'])):.3f}"),
        ("background mjj 5/50/95% [GeV]", " / ".join(f"{q:.0f}" for q in quantiles)),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=1000, help="events per process")
    parser.add_argument(
        "--workdir", type=Path, default=None, help="keep/reuse the event files here"
    )
    parser.add_argument("--chunksize", type=int, default=500)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    import awkward as ak

    from rosenblatt.hep.particles import event_particles
    from rosenblatt.io.root import read_root

    with tempfile.TemporaryDirectory() as scratch:
        workdir = args.workdir or Path(scratch)
        workdir.mkdir(parents=True, exist_ok=True)
        files = event_files(workdir, args.events)
        particles = ak.concatenate([event_particles(read_root(path)) for path in files.values()])
        n_events = len(particles)
        mean_particles = float(ak.mean(ak.num(particles)))
        print(
            f"\n{n_events} events, {mean_particles:.0f} particles per event on average; "
            f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}"
        )

        print(f"\nStages in one process (CPU time, best of {args.repeat})")
        print(f"{'stage':<36} {'ms/event':>9} {'events/s':>9} {'share':>6}")
        stages = stage_table(particles, args.repeat)
        total = stages[-1][1]
        for name, seconds in stages:
            print(
                f"{name:<36} {1e3 * seconds / n_events:>9.3f} {n_events / seconds:>9.0f} "
                f"{seconds / total:>6.0%}"
            )
        # busier events: the particles of two events overlaid in one
        half = n_events // 2
        overlaid = ak.concatenate([particles[:half], particles[half : 2 * half]], axis=1)
        heavy = stage_table(overlaid, args.repeat)[-1][1]
        print(
            f"{'event_table, 2 events overlaid':<36} {1e3 * heavy / half:>9.3f} "
            f"{half / heavy:>9.0f}   ({float(ak.mean(ak.num(overlaid))):.0f} particles per event)"
        )

        print("\ncoffea processor over the ROOT files (after the workers started)")
        print(
            f"{'executor':<14} {'start s':>7} {'wall s':>7} {'events/s':>9} {'per worker':>10} "
            f"{'vs iterative':>12} {'CPU events/s':>12}"
        )
        runs = [("iterative", 1), ("futures", 1), ("futures", 2)]
        seconds = {run: runner_seconds(files, *run, args.chunksize) for run in runs}
        baseline = seconds[("iterative", 1)][1]
        for (executor, workers), (startup, wall, cpu) in seconds.items():
            rate = n_events / wall
            cpu_rate = f"{n_events / cpu:>12.0f}" if executor == "iterative" else f"{'-':>12}"
            print(
                f"{executor + f' x{workers}':<14} {startup:>7.2f} {wall:>7.2f} {rate:>9.0f} "
                f"{rate / workers:>10.0f} {baseline / wall:>11.2f}x {cpu_rate}"
            )
        speedup = seconds[("futures", 1)][1] / seconds[("futures", 2)][1]
        print(f"speed-up from 1 to 2 futures workers: {speedup:.2f}x")
        _, wall_one, cpu_one = seconds[("iterative", 1)]
        record(
            f"coffea processor, {n_events} events of {mean_particles:.0f} particles",
            "1",
            f"{n_events / cpu_one:.0f} events/s per core (CPU), {n_events / wall_one:.0f} events/s wall",
            "(reported)",
            None,
        )
        record(
            "coffea processor, futures executor",
            "2",
            f"{n_events / seconds[('futures', 2)][1]:.0f} events/s, {speedup:.2f}x one worker",
            "(reported)",
            None,
        )

        print("\nPhysics of the table")
        for name, value in physics_summary(files, args.chunksize):
            print(f"{name:<34} {value}")


if __name__ == "__main__":
    main()
