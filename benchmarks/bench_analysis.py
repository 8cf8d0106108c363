"""Throughput and memory of the analysis processor: features, score, transforms and fills.

Real events: Pythia QCD dijets written once by ``rosenblatt generate`` (ROOT,
reused from ``--workdir`` when they are there). The defining sample is the
``(mjj, mj1)`` of these events, computed once here; an IRGI and a GridKDE are
fitted on it in memory by each run's driver, and
:class:`rosenblatt.processors.analysis.AnalysisProcessor` fills the ABCD and
plane histograms of the raw ``mj1`` score and of both transforms of it.

The 1x, 4x and 16x file sets list the one generated file 1, 4 and 16 times
under one dataset name, as hard links (copies where links are refused) with
distinct names, so that no more events are generated and the histograms keep
their shape: only the number of events grows.

Each run is its own driver process, so that its peak memory is its own: the
driver's peak RSS (``ru_maxrss`` of the process, imports and fitted transforms
included; also the peak before the run started) and the workers' (the largest
peak of any child process, once the pool has been shut down). One table:
events/s (wall) and per core, driver and worker peaks, and the size of the
merged histograms pickled, for the iterative executor (one core: its CPU time
gives the per-core figure) and the futures executor with 2 workers. The
driver's peak and the output size should stay flat (within 20%) from 1x to 16x.

Usage::

    python benchmarks/bench_analysis.py [--events 1000] [--workdir DIR] [--chunksize 500] [--quick]
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from _summary import record

#: multiples of the base file's events
SIZES = (1, 4, 16)
#: ABCD cut values on mjj [GeV] and on the raw mj1 score [GeV]
X0 = (1500.0, 2500.0, 3000.0, 3500.0, 4500.0)
Y0_SCORE = (0.0, 50.0, 100.0, 200.0, 400.0)
#: ABCD cut values on a transformed score
Y0_GAMMA = (0.0, 0.5, 0.8, 0.9, 1.0)
#: flat within this ratio
FLAT = 1.2


def base_file(workdir: Path, n_events: int) -> Path:
    """Generate (or reuse) ``n_events`` triggered QCD events as a ROOT file."""
    from rosenblatt.hep.generation import generate_file

    path = workdir / f"qcd-{n_events}.root"
    generate_file(path, "qcd", n_events, 201, chunk_size=min(n_events, 500), progress=False)
    return path


def defining_sample(path: Path, output: Path) -> int:
    """Write the ``(mjj, mj1)`` of the events of ``path`` with two jets to ``output`` (npz)."""
    import awkward as ak

    from rosenblatt.hep.features import event_table
    from rosenblatt.hep.particles import event_particles
    from rosenblatt.io.root import read_root

    events = read_root(path)
    table, _ = event_table(
        event_particles(events),
        label=events["label"],
        weight=events["weight"],
        dataset="defining",
        file=str(path),
        entry=events["entry"],
    )
    mjj, mj1 = (np.asarray(ak.to_numpy(table[name]), dtype=np.float64) for name in ("mjj", "mj1"))
    np.savez(output, mjj=mjj, mj1=mj1)
    return len(mjj)


def file_sets(path: Path, folder: Path, sizes: tuple[int, ...]) -> dict[int, list[str]]:
    """The file set of each size: ``path`` listed ``size`` times under distinct names."""
    folder.mkdir(parents=True, exist_ok=True)
    names = []
    for copy in range(max(sizes)):
        name = folder / f"{path.stem}-{copy:02d}.root"
        if not name.exists():
            try:
                os.link(path, name)
            except OSError:
                shutil.copyfile(path, name)
        names.append(str(name))
    return {size: names[:size] for size in sizes}


def _import_processor() -> float:
    """Import the processor in a worker (its start-up work) and return when done."""
    import rosenblatt.processors.analysis  # noqa: F401

    time.sleep(0.2)
    return time.time()


def measure(spec: dict[str, Any]) -> dict[str, Any]:
    """One run in this process (the driver): fit the transforms, run, return the figures.

    ``spec`` holds ``files``, ``defining`` (the npz), ``executor``, ``workers``,
    ``chunksize``, ``depth``, ``sigma_r`` and ``histograms`` (where the merged
    histograms are pickled).
    """
    import rosenblatt as rb
    from rosenblatt.ml.scoring import make_scorer
    from rosenblatt.processors.analysis import AnalysisProcessor, Variant
    from rosenblatt.processors.runner import make_executor, run_processor

    sample = np.load(spec["defining"])
    irgi = rb.IRGI(depth=spec["depth"]).fit(sample["mjj"], sample["mj1"])
    grid_kde = rb.GridKDE(sigma_r=spec["sigma_r"]).fit(sample["mjj"], sample["mj1"])
    analysis = AnalysisProcessor(
        scorers={"mj1": make_scorer({"column": "mj1"})},
        variants=(
            Variant("mj1", "mj1", Y0_SCORE, y_range=(0.0, 1000.0)),
            Variant("irgi", "mj1", Y0_GAMMA, transform=irgi),
            Variant("gridkde", "mj1", Y0_GAMMA, transform=grid_kde),
        ),
        x0=X0,
    )
    peak_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with make_executor(spec["executor"], spec["workers"], progress=False) as pool:
        if spec["executor"] == "futures":
            warm = [pool.pool.submit(_import_processor) for _ in range(2 * spec["workers"])]
            for future in warm:
                future.result()
        wall, cpu = time.perf_counter(), time.process_time()
        output = run_processor({"qcd": spec["files"]}, analysis, pool, chunksize=spec["chunksize"])
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    histograms = {kind: output[kind] for kind in ("abcd", "plane")}
    blob = pickle.dumps(histograms)
    Path(spec["histograms"]).write_bytes(blob)
    return {
        "events": int(output["cutflow"]["qcd"]["read"]),
        "wall": wall,
        "cpu": cpu,
        "driver_before_kb": peak_before,
        "driver_peak_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
        "worker_peak_kb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss,
        "output_bytes": len(blob),
        "cutflow": output["cutflow"]["qcd"],
    }


def run_driver(spec: dict[str, Any]) -> dict[str, Any]:
    """Run :func:`measure` in a fresh driver process and return its figures."""
    result = subprocess.run(
        [sys.executable, __file__, "--driver", json.dumps(spec)],
        check=False,
        capture_output=True,
        text=True,
    )
    if result.returncode:
        sys.stderr.write(result.stderr[-4000:])
        raise RuntimeError(
            f"the {spec['executor']} driver failed (exit status {result.returncode})"
        )
    figures: dict[str, Any] = json.loads(result.stdout.strip().splitlines()[-1])
    return figures


def same_multiple(path_large: str, path_one: str, factor: int) -> bool:
    """Whether every histogram of ``path_large`` is exactly ``factor`` times that of ``path_one``."""
    large = pickle.loads(Path(path_large).read_bytes())
    one = pickle.loads(Path(path_one).read_bytes())
    return all(
        np.array_equal(
            large[kind][name].view(flow=True)["value"],
            factor * one[kind][name].view(flow=True)["value"],
        )
        and np.array_equal(
            large[kind][name].view(flow=True)["variance"],
            factor * one[kind][name].view(flow=True)["variance"],
        )
        for kind in one
        for name in one[kind]
    )


def megabytes(kilobytes: float) -> float:
    """``ru_maxrss`` (kB on Linux) in MB."""
    return kilobytes / 1024.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--events",
        type=int,
        default=None,
        help="events of the base file (default 1000; 200 with --quick)",
    )
    parser.add_argument(
        "--workdir", type=Path, default=None, help="keep/reuse the event files here"
    )
    parser.add_argument("--chunksize", type=int, default=500)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument(
        "--depth",
        type=int,
        default=None,
        help="IRGI depth (default: 4, or less for a small sample)",
    )
    parser.add_argument("--sigma-r", type=float, default=0.1, help="GridKDE sigma_r")
    parser.add_argument("--quick", action="store_true", help="a base file of 200 events")
    parser.add_argument("--driver", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.driver:
        print(json.dumps(measure(json.loads(args.driver))))
        return
    n_base = args.events or (200 if args.quick else 1000)

    with tempfile.TemporaryDirectory() as scratch:
        workdir = args.workdir or Path(scratch)
        workdir.mkdir(parents=True, exist_ok=True)
        path = base_file(workdir, n_base)
        defining = workdir / f"defining-{n_base}.npz"
        n_defining = defining_sample(path, defining)
        depth = args.depth or max(1, min(4, (int(np.log2(n_defining)) - 1) // 2))
        sets = file_sets(path, workdir / "sets", SIZES)
        print(
            f"\nbase file: {n_base} QCD events ({path.stat().st_size / 1e6:.1f} MB); defining "
            f"sample: {n_defining} events with two jets; IRGI depth {depth}, GridKDE "
            f"sigma_r {args.sigma_r}; chunks of {args.chunksize} events; {os.cpu_count()} cores, "
            f"load average {os.getloadavg()[0]:.1f}"
        )
        print("file sets: the base file listed 1, 4 and 16 times (hard links) under one dataset\n")
        runs = [("iterative", 1, size) for size in SIZES[:2]] + [
            ("futures", args.workers, size) for size in SIZES
        ]
        results: dict[tuple[str, int], dict[str, Any]] = {}
        print(
            f"{'executor':<12} {'events':>7} {'wall s':>7} {'events/s':>9} {'per core':>9} "
            f"{'driver MB':>9} {'(before)':>8} {'worker MB':>9} {'hists kB':>8}"
        )
        for executor, workers, size in runs:
            spec = {
                "files": sets[size],
                "defining": str(defining),
                "executor": executor,
                "workers": workers,
                "chunksize": args.chunksize,
                "depth": depth,
                "sigma_r": args.sigma_r,
                "histograms": str(workdir / f"histograms-{executor}-{size}.pkl"),
            }
            figures = run_driver(spec)
            results[executor, size] = figures | {"histograms": spec["histograms"]}
            rate = figures["events"] / figures["wall"]
            per_core = (
                figures["events"] / figures["cpu"] if executor == "iterative" else rate / workers
            )
            workers_mb = (
                f"{megabytes(figures['worker_peak_kb']):>9.0f}"
                if executor != "iterative"
                else f"{'-':>9}"
            )
            print(
                f"{executor + f' x{workers}':<12} {figures['events']:>7} {figures['wall']:>7.1f} "
                f"{rate:>9.0f} {per_core:>9.0f} {megabytes(figures['driver_peak_kb']):>9.0f} "
                f"{megabytes(figures['driver_before_kb']):>8.0f} {workers_mb} "
                f"{figures['output_bytes'] / 1e3:>8.1f}",
                flush=True,
            )
        summarize(results, n_base, args.workers)


def summarize(results: dict[tuple[str, int], dict[str, Any]], n_base: int, workers: int) -> None:
    """Print the ratios of the largest to the smallest file set and record the summary rows."""
    print(
        "per core: events per CPU second of the driver (iterative), events/s over the workers "
        "(futures); MB: peak RSS, of the driver (and before the run) and of the largest worker"
    )
    one, large = results["futures", SIZES[0]], results["futures", SIZES[-1]]
    driver_ratio = large["driver_peak_kb"] / one["driver_peak_kb"]
    worker_ratio = large["worker_peak_kb"] / one["worker_peak_kb"]
    output_ratio = large["output_bytes"] / one["output_bytes"]
    reference = results["iterative", SIZES[0]]["histograms"]
    exact = all(
        figures["events"] == size * n_base
        and same_multiple(figures["histograms"], reference, size // SIZES[0])
        for (_, size), figures in results.items()
    )
    print(
        f"\nfutures x{workers}, {SIZES[-1]}x / {SIZES[0]}x events: driver peak "
        f"{driver_ratio:.2f}x, worker peak {worker_ratio:.2f}x, pickled histograms "
        f"{output_ratio:.2f}x (flat: within {FLAT:.1f}x)"
    )
    verdict = "yes" if exact else "NO"
    print(
        f"every run read size x {n_base} events and its histograms are size x those of 1x: {verdict}"
    )
    iterative = results["iterative", SIZES[1]]
    record(
        "analysis processor (features, mj1 score, IRGI + GridKDE, fills), "
        f"{iterative['events']} events",
        "1",
        f"{iterative['events'] / iterative['cpu']:.0f} events/s per core (CPU), "
        f"{iterative['events'] / iterative['wall']:.0f} events/s wall",
        "(reported)",
        None,
    )
    record(
        f"analysis processor, futures x{workers}: driver peak RSS, "
        f"{large['events']} / {one['events']} events",
        str(workers),
        f"{driver_ratio:.2f}x ({megabytes(one['driver_peak_kb']):.0f} -> "
        f"{megabytes(large['driver_peak_kb']):.0f} MB)",
        f"<= {FLAT}x",
        driver_ratio <= FLAT,
    )
    record(
        f"analysis processor, futures x{workers}: pickled histograms, "
        f"{large['events']} / {one['events']} events",
        str(workers),
        f"{output_ratio:.2f}x ({one['output_bytes'] / 1e3:.0f} -> "
        f"{large['output_bytes'] / 1e3:.0f} kB)",
        f"<= {FLAT}x",
        output_ratio <= FLAT,
    )


if __name__ == "__main__":
    main()
