"""Generation speed: triggered events per second for each process and number of workers.

Runs :func:`rosenblatt.hep.generation.generate_events` (Pythia 8, visible
particles, trigger clustering with FastJet) for each process with 1 worker and
with more, and prints a table of passing events per second, generated events
per second, trigger efficiency, mean particles per event, CPU time per
passing event (with 1 worker; insensitive to other load on the machine) and
the speed-up over 1 worker measured in the same run. The times include
starting the worker processes and Pythia's initialisation of every chunk, as
in a real run.

Usage::

    python benchmarks/bench_generation.py [--events 200] [--chunk-size 25] [--workers 1 2]
"""

from __future__ import annotations

import argparse
import os
import resource
import time

import awkward as ak
from _summary import record


def cpu_seconds() -> float:
    """CPU time of this process (the whole work when it runs with 1 worker)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    return own.ru_utime + own.ru_stime


def measure(process: str, n_events: int, chunk_size: int, workers: int, seed: int) -> dict:
    from rosenblatt.hep.generation import GenerationSettings, iter_chunks

    settings = GenerationSettings(process, n_events=n_events, seed=seed, chunk_size=chunk_size)
    start, cpu_start = time.perf_counter(), cpu_seconds()
    chunks = list(iter_chunks(settings, range(len(settings.chunk_sizes())), workers))
    seconds, cpu = time.perf_counter() - start, cpu_seconds() - cpu_start
    n_passed = sum(len(chunk.events) for chunk in chunks)
    n_generated = sum(chunk.record["n_generated"] for chunk in chunks)
    n_particles = sum(int(ak.sum(ak.num(chunk.events.pt))) for chunk in chunks)
    return {
        "seconds": seconds,
        "cpu_ms_per_passed": 1e3 * cpu / n_passed if workers == 1 else float("nan"),
        "passed_per_s": n_passed / seconds,
        "generated_per_s": n_generated / seconds,
        "efficiency": n_passed / n_generated,
        "particles": n_particles / n_passed,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=200, help="passing events per run")
    parser.add_argument("--chunk-size", type=int, default=25, help="passing events per chunk")
    parser.add_argument(
        "--workers", type=int, nargs="+", default=[1, 2], help="worker counts (first: baseline)"
    )
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()

    measure("wprime", 1, 1, 1, args.seed)  # imports and first clustering, not timed
    print(
        f"{args.events} passing events per run, chunks of {args.chunk_size}, "
        f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}"
    )
    header = (
        f"{'process':8} {'workers':>7} {'seconds':>8} {'passing/s':>10} {'generated/s':>12} "
        f"{'efficiency':>10} {'particles':>9} {'CPU ms/passing':>14} {'speed-up':>8}"
    )
    print(header)
    print("-" * len(header))
    for process in ("qcd", "wprime"):
        baseline = None
        for workers in args.workers:
            result = measure(process, args.events, args.chunk_size, workers, args.seed)
            baseline = baseline or result["passed_per_s"]
            record(
                f"generation ({process}), {args.events} passing events",
                str(workers),
                f"{result['passed_per_s']:.1f} passing/s, {result['generated_per_s']:.0f} generated/s"
                + (
                    ""
                    if workers == args.workers[0]
                    else f", {result['passed_per_s'] / baseline:.2f}x one worker"
                ),
                "(reported)",
                None,
            )
            print(
                f"{process:8} {workers:>7} {result['seconds']:>8.1f} "
                f"{result['passed_per_s']:>10.2f} {result['generated_per_s']:>12.2f} "
                f"{result['efficiency']:>10.3f} {result['particles']:>9.0f} "
                f"{result['cpu_ms_per_passed']:>14.1f} "
                f"{result['passed_per_s'] / baseline:>8.2f}"
            )


if __name__ == "__main__":
    main()
