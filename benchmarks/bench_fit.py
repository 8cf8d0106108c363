"""The mergeable fit over a ROOT file set against one plain read of the same events.

A user fits ``rb.IRGI(depth=7)`` with ``rb.MergeableFit(...).run(runner, fileset,
observables)``: their function ``observables(events)`` computes the dijet mass of
the two leading jets, takes a score and the event weight. The baseline is one
plain read: the same Runner, the same executor and the same function, through a
processor that returns the sums of the function's three values (so that they are
read, as the fit reads them). Each figure is the best of
``--repeats`` runs, the fit and the read taken in turn.

The file set is written here with uproot as TTrees: NanoAOD-like branches (``nJet``,
``Jet_pt``, ``Jet_eta``, ``Jet_phi``, ``Jet_mass`` as float32, a float32 score,
``genWeight``), in files of at most 250,000 events.

Tables:

1. per size and executor (futures with ``--workers`` processes, a new pool per
   call as coffea makes it; dask with a local cluster of ``--workers``
   single-threaded workers, kept for every call): the plain read's and the
   fit's wall time, their ratio (target <= 2.0), the passes and the number of
   calls of the user's function per chunk (exactly 1: every call is logged);
2. the driver's peak memory (``ru_maxrss`` of a driver process of its own,
   futures with ``--workers`` processes) for 1x, 4x and 16x a base of
   ``--memory-base`` events (the base file listed 1, 4, 16 times): flat within
   20%.

Usage::

    python benchmarks/bench_fit.py [--events 200000 1000000] [--executors futures dask]
                                   [--workers 2] [--chunksize 100000] [--repeats 2]
                                   [--memory-base 100000] [--depth 7] [--workdir DIR] [--quick]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
from _summary import record

#: most events per file
FILE_EVENTS = 250_000
#: multiples of the base file set in the memory table
SIZES = (1, 4, 16)
#: flat within this ratio
FLAT = 1.2
#: target of the fit's wall time in reads
TARGET = 2.0
DEPTH = 7


class Observables:
    """The user's function: dijet mass of the two leading jets, score, weight; each call logged."""

    def __init__(self, log: str) -> None:
        self.log = log

    def __call__(self, events: Any) -> tuple[Any, Any, Any]:
        import awkward as ak

        meta = events.metadata
        with open(self.log, "a", encoding="utf-8") as handle:
            handle.write(f"{meta['filename']}:{meta['entrystart']}\n")
        jets = ak.zip(
            {
                "pt": events.Jet_pt[:, :2],
                "eta": events.Jet_eta[:, :2],
                "phi": events.Jet_phi[:, :2],
                "mass": events.Jet_mass[:, :2],
            }
        )
        px = jets.pt * np.cos(jets.phi)
        py = jets.pt * np.sin(jets.phi)
        pz = jets.pt * np.sinh(jets.eta)
        energy = np.sqrt(px**2 + py**2 + pz**2 + jets.mass**2)
        sums = [ak.sum(v, axis=1) for v in (energy, px, py, pz)]
        mjj = np.sqrt(np.maximum(sums[0] ** 2 - sums[1] ** 2 - sums[2] ** 2 - sums[3] ** 2, 0.0))
        return mjj, events.score, events.genWeight


class PlainRead:
    """The baseline processor: the user's function, its values read, and their sums kept."""

    def __init__(self, observables: Observables) -> None:
        self.observables = observables

    def __call__(self, events: Any) -> dict[str, float]:
        import awkward as ak

        return {"sums": float(sum(ak.sum(v) for v in self.observables(events)))}


def write_files(folder: Path, n_events: int, seed: int) -> dict[str, Any]:
    """NanoAOD-like ROOT files of ``n_events`` events (reused when there); their file set."""
    import awkward as ak
    import uproot

    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    files = {}
    for k, start in enumerate(range(0, n_events, FILE_EVENTS)):
        n = min(FILE_EVENTS, n_events - start)
        path = folder / f"events-{n_events}-{k}.root"
        files[str(path)] = "Events"
        if path.exists():
            continue
        counts = rng.poisson(2.0, n) + 2
        total = int(counts.sum())
        jets = {
            "pt": ak.unflatten(rng.gamma(4.0, 150.0, total).astype(np.float32), counts),
            "eta": ak.unflatten(rng.normal(0.0, 1.5, total).astype(np.float32), counts),
            "phi": ak.unflatten(rng.uniform(-np.pi, np.pi, total).astype(np.float32), counts),
            "mass": ak.unflatten(rng.gamma(2.0, 40.0, total).astype(np.float32), counts),
        }
        jets["pt"] = ak.sort(jets["pt"], axis=1, ascending=False)
        score = rng.beta(2.0, 5.0, n).astype(np.float32)
        branches = {"Jet": ak.zip(jets), "score": score, "genWeight": rng.normal(1.0, 0.3, n)}
        with uproot.recreate(path) as handle:  # a TTree (mktree), as NanoAOD files hold
            types = {name: getattr(value, "dtype", None) for name, value in branches.items()}
            types["Jet"] = branches["Jet"].type.content
            handle.mktree("Events", types)
            handle["Events"].extend(branches)
    return {"qcd": {"files": files}}


def runner_for(kind: str, workers: int, chunksize: int, client: Any) -> Any:
    """A user's Runner: futures (a new pool per call, coffea's default) or dask on ``client``."""
    from coffea import processor
    from coffea.nanoevents import BaseSchema

    if kind == "futures":
        executor = processor.FuturesExecutor(workers=workers, status=False)
    else:
        executor = processor.DaskExecutor(client=client, status=False)
    return processor.Runner(executor, schema=BaseSchema, chunksize=chunksize)


def calls_per_chunk(log: Path) -> set[int]:
    """How many times the function was called per chunk, over the chunks it saw."""
    return set(Counter(log.read_text(encoding="utf-8").splitlines()).values())


def time_fit(
    runner: Any, fileset: dict[str, Any], log: Path, depth: int
) -> tuple[float, int, set[int], Any]:
    """Wall time, passes and calls per chunk of one fit."""
    import rosenblatt as rb

    log.unlink(missing_ok=True)
    fit = rb.MergeableFit(rb.IRGI(depth=depth), progress=False)
    start = time.perf_counter()
    transform = fit.run(runner, fileset, Observables(str(log)), treename="Events")
    seconds = time.perf_counter() - start
    return seconds, fit.passes, calls_per_chunk(log), transform


def time_read(runner: Any, fileset: dict[str, Any], log: Path) -> float:
    """Wall time of one plain read."""
    log.unlink(missing_ok=True)
    start = time.perf_counter()
    runner(fileset, PlainRead(Observables(str(log))), treename="Events")
    return time.perf_counter() - start


def compare(kind: str, n_events: int, args: argparse.Namespace, client: Any) -> dict[str, Any]:
    """The read and the fit in turn, best of ``args.repeats``."""
    fileset = write_files(args.workdir, n_events, seed=n_events)
    runner = runner_for(kind, args.workers, args.chunksize, client)
    log = args.workdir / f"calls-{kind}-{n_events}.txt"
    time_read(runner, fileset, log)  # warm the file cache (and a dask cluster's imports)
    reads, fits = [], []
    passes, calls = 0, set()
    for _ in range(args.repeats):
        reads.append(time_read(runner, fileset, log))
        seconds, passes, calls, _ = time_fit(runner, fileset, log, args.depth)
        fits.append(seconds)
    read, fit = min(reads), min(fits)
    return {
        "executor": kind,
        "events": n_events,
        "read": read,
        "fit": fit,
        "ratio": fit / read,
        "passes": passes,
        "calls": sorted(calls),
    }


def speed_table(args: argparse.Namespace) -> list[dict[str, Any]]:
    rows = []
    for kind in args.executors:
        client, cluster = None, None
        if kind == "dask":
            import logging

            from dask.distributed import Client, LocalCluster

            cluster = LocalCluster(
                n_workers=args.workers,
                threads_per_worker=1,
                processes=True,
                dashboard_address=None,
                silence_logs=logging.ERROR,
            )
            client = Client(cluster)
        try:
            for n_events in args.events:
                row = compare(kind, n_events, args, client)
                rows.append(row)
                print(
                    f"  {kind:8s} {n_events:>9,d} events: read {row['read']:6.2f} s, "
                    f"fit {row['fit']:6.2f} s = {row['ratio']:.2f}x, {row['passes']} passes, "
                    f"calls per chunk {row['calls']}",
                    flush=True,
                )
        finally:
            if client is not None:
                client.close()
                cluster.close()
    return rows


def memory_run(n_copies: int, args: argparse.Namespace) -> dict[str, Any]:
    """One fit over ``n_copies`` links of the base file set, in this (driver) process."""
    base = write_files(args.workdir, args.memory_base, seed=7)
    files = {}
    for copy in range(n_copies):
        for path in base["qcd"]["files"]:
            link = Path(path).with_name(f"copy{copy}-{Path(path).name}")
            if not link.exists():
                try:
                    os.link(path, link)
                except OSError:
                    import shutil

                    shutil.copyfile(path, link)
            files[str(link)] = "Events"
    fileset = {"qcd": {"files": files}}
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    runner = runner_for("futures", args.workers, args.chunksize, None)
    log = args.workdir / f"calls-{n_copies}.txt"
    seconds, passes, calls, _ = time_fit(runner, fileset, log, args.depth)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {
        "copies": n_copies,
        "before": before,
        "peak": peak,
        "seconds": seconds,
        "passes": passes,
        "calls": max(calls),
    }


def memory_table(args: argparse.Namespace) -> list[dict[str, Any]]:
    rows = []
    for copies in SIZES:
        command = [sys.executable, __file__, "--memory-run", str(copies), *_shared(args)]
        output = subprocess.run(command, check=True, capture_output=True, text=True).stdout
        row = json.loads(output.strip().splitlines()[-1])
        rows.append(row)
        print(
            f"  {copies:>2d}x {copies * args.memory_base:>10,d} events: driver peak "
            f"{row['peak']:6.0f} MiB (before the fit {row['before']:4.0f} MiB), "
            f"fit {row['seconds']:.1f} s, most calls per chunk {row['calls']}",
            flush=True,
        )
    return rows


def _shared(args: argparse.Namespace) -> list[str]:
    return [
        "--workdir",
        str(args.workdir),
        "--workers",
        str(args.workers),
        "--chunksize",
        str(args.chunksize),
        "--memory-base",
        str(args.memory_base),
        "--depth",
        str(args.depth),
    ]


def report(
    speed: list[dict[str, Any]], memory: list[dict[str, Any]], args: argparse.Namespace
) -> None:
    workers = args.workers
    for row in speed:
        met = row["ratio"] <= TARGET and row["calls"] == [1]
        record(
            f"mergeable fit IRGI d={args.depth}, {row['events']:.0e} events, {row['executor']}",
            str(workers),
            f"{row['fit']:.1f} s = {row['ratio']:.2f}x one read ({row['read']:.1f} s), "
            f"{row['passes']} passes, calls per chunk {row['calls']}",
            f"<= {TARGET}x one read, 1 call per chunk",
            met,
        )
    if memory:
        peaks = [row["peak"] for row in memory]
        flat = max(peaks) <= FLAT * peaks[0]
        described = " / ".join(f"{p:.0f}" for p in peaks)
        events = memory[0]["copies"], memory[-1]["copies"]
        record(
            f"mergeable fit driver peak memory, {events[0]}x to {events[-1]}x events",
            str(workers),
            f"{described} MiB",
            f"flat (<= {FLAT}x)",
            flat,
        )


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--events", type=int, nargs="+", default=[200_000, 1_000_000])
    parser.add_argument("--executors", nargs="+", default=["futures", "dask"])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--chunksize", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--memory-base", type=int, default=100_000)
    parser.add_argument("--depth", type=int, default=DEPTH)
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("--memory-run", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--quick", action="store_true", help="smaller sizes, one repeat")
    args = parser.parse_args()
    if args.quick:
        args.events, args.repeats, args.memory_base = [50_000], 1, 20_000
        args.depth = 5
    if args.workdir is None:
        args.workdir = Path(tempfile.gettempdir()) / "rosenblatt-bench-fit"
    from coffea.util import coffea_console

    coffea_console.quiet = True  # coffea's futures executor shows its bars whatever status says
    if args.memory_run is not None:
        print(json.dumps(memory_run(args.memory_run, args)))
        return 0
    print(
        f"# mergeable fit of IRGI(depth={args.depth}) over a ROOT file set, {args.workers} workers, "
        f"chunks of {args.chunksize:,d} events"
    )
    speed = speed_table(args)
    print("# driver peak memory (futures)")
    memory = memory_table(args)
    report(speed, memory, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
