"""Speed and memory of the weighted O(n log n) distance correlation.

Compares ``rosenblatt.metrics.distance_correlation_sqr`` with weights against
``dcor.distance_correlation_sqr(method="mergesort")`` without weights on the
same events, measured in the same run, and times the permutation test with
one and with two threads. "call peak" is how far one call lifts the resident
set size of a fresh process above its size before the call (peak reset with
/proc/self/clear_refs; numba's allocations are invisible to tracemalloc),
"process peak" the whole process's peak during the call. Linux only.

Run::

    python benchmarks/bench_metrics.py            # 10^5 and 10^6 events
    python benchmarks/bench_metrics.py --sizes 100000 --repeats 1
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable

import numpy as np


def sample(n_events: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Correlated pair (rho = 0.6) with weights uniform in [0.5, 1.5]."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=n_events)
    y = 0.6 * x + 0.8 * rng.normal(size=n_events)
    return x, y, rng.uniform(0.5, 1.5, size=n_events)


def best_time(function: Callable[[], object], repeats: int) -> float:
    """Smallest wall time of ``repeats`` calls, in seconds."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return min(times)


def status_mib(field: str) -> float:
    """A memory field of /proc/self/status (``VmRSS``, ``VmHWM``), MiB."""
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    msg = f"{field} not in /proc/self/status"
    raise KeyError(msg)


def reset_peak_rss() -> bool:
    """Reset this process's peak RSS to its current RSS (Linux >= 4.0)."""
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as clear_refs:
            clear_refs.write("5")
    except OSError:
        return False
    return True


def memory_probe(method: str, n_events: int) -> None:
    """Print how far one call lifts the RSS above its size before the call, as JSON.

    Runs in a fresh process; the peak RSS is reset just before the call, so
    the imports' own peak does not count. Where the reset is not allowed the
    figure is an upper bound.
    """
    from rosenblatt import metrics

    x, y, weight = sample(n_events)
    if method == "numpy":
        os.environ["ROSENBLATT_NO_NUMBA"] = "1"
    small = slice(0, 100)
    if method == "dcor":
        import dcor

        dcor.distance_correlation_sqr(x[small], y[small], method="mergesort")
        before = status_mib("VmRSS")
        reset_peak_rss()
        dcor.distance_correlation_sqr(x, y, method="mergesort")
    else:
        metrics.distance_correlation_sqr(x[small], y[small], weight[small])
        before = status_mib("VmRSS")
        reset_peak_rss()
        metrics.distance_correlation_sqr(x, y, weight)
    after = status_mib("VmHWM")
    print(json.dumps({"growth_mib": after - before, "peak_mib": after}))


def measure_memory(method: str, n_events: int) -> dict[str, float]:
    completed = subprocess.run(
        [sys.executable, __file__, "--memory-probe", method, str(n_events)],
        check=True,
        capture_output=True,
        text=True,
    )
    result: dict[str, float] = json.loads(completed.stdout.strip().splitlines()[-1])
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--permutation-events", type=int, default=100_000)
    parser.add_argument("--permutations", type=int, default=100)
    parser.add_argument("--memory-probe", nargs=2, metavar=("METHOD", "N"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.memory_probe:
        memory_probe(args.memory_probe[0], int(args.memory_probe[1]))
        return 0

    dcor_table(args)
    print()
    permutation_table(args)
    return 0


def dcor_table(args: argparse.Namespace) -> None:
    """Weighted dCor^2 against dcor's unweighted mergesort: time, memory and difference."""
    import dcor
    from _summary import record

    from rosenblatt import metrics
    from rosenblatt._jit import numba_enabled

    methods = ("numba", "numpy") if numba_enabled() else ("numpy",)
    warm_x, warm_y, warm_w = sample(100)
    metrics.distance_correlation_sqr(warm_x, warm_y, warm_w)
    dcor.distance_correlation_sqr(warm_x, warm_y, method="mergesort")

    print("weighted dCor^2 (rosenblatt) vs unweighted dCor^2 (dcor mergesort), same events")
    header = (
        f"{'events':>9} {'method':<26} {'time [s]':>9} {'ratio to dcor':>14} "
        f"{'call peak [MiB]':>16} {'process peak [MiB]':>19} {'|diff| unweighted':>18}"
    )
    print(header)
    print("-" * len(header))
    for n_events in args.sizes:
        x, y, weight = sample(n_events)
        repeats = args.repeats if n_events <= 200_000 else max(1, args.repeats - 1)
        reference = dcor.distance_correlation_sqr(x, y, method="mergesort")
        dcor_time = best_time(
            lambda x=x, y=y: dcor.distance_correlation_sqr(x, y, method="mergesort"), repeats
        )
        rows = [("dcor mergesort, unweighted", "dcor", dcor_time, 0.0)]
        for method in methods:
            os.environ["ROSENBLATT_NO_NUMBA"] = "0" if method == "numba" else "1"
            ours = metrics.distance_correlation_sqr(x, y)
            elapsed = best_time(
                lambda x=x, y=y, weight=weight: metrics.distance_correlation_sqr(x, y, weight),
                repeats,
            )
            rows.append((f"rosenblatt {method}, weighted", method, elapsed, abs(ours - reference)))
        os.environ["ROSENBLATT_NO_NUMBA"] = "0"
        for label, method, elapsed, difference in rows:
            memory = measure_memory(method, n_events)
            print(
                f"{n_events:>9} {label:<26} {elapsed:>9.3f} {elapsed / dcor_time:>14.3f} "
                f"{memory['growth_mib']:>16.1f} {memory['peak_mib']:>19.1f} {difference:>18.1e}"
            )
            if method == "numba":
                record(
                    f"weighted dCor^2, {n_events:.0e} events",
                    "1",
                    f"{elapsed / dcor_time:.2f}x dcor mergesort, max abs diff {difference:.0e}, "
                    f"+{memory['growth_mib']:.0f} MiB",
                    "<= 1x, max abs diff <= 1e-9, <= 1 GB",
                    elapsed <= dcor_time and difference <= 1e-9 and memory["peak_mib"] <= 1024,
                )
            elif method == "numpy":
                record(
                    f"weighted dCor^2 without numba, {n_events:.0e} events",
                    "1",
                    f"{elapsed / dcor_time:.2f}x dcor mergesort, max abs diff {difference:.0e}",
                    "(fallback, reported)",
                    None,
                )


def permutation_table(args: argparse.Namespace) -> None:
    """The permutation test on one and two threads."""
    from _summary import record

    from rosenblatt import metrics

    n_events = args.permutation_events
    x, y, weight = sample(n_events, seed=1)
    print(f"permutation test, {args.permutations} permutations of {n_events} weighted events")
    header = f"{'threads':>7} {'time [s]':>9} {'per permutation [ms]':>21} {'speed-up':>9}"
    print(header)
    print("-" * len(header))
    single = None
    for n_jobs in (1, 2):
        start = time.perf_counter()
        result = metrics.permutation_test(
            x, y, weight, n_permutations=args.permutations, seed=0, n_jobs=n_jobs
        )
        elapsed = time.perf_counter() - start
        single = elapsed if single is None else single
        record(
            f"permutation test, {args.permutations} x {n_events:.0e} events",
            str(n_jobs),
            f"{elapsed:.1f} s" + ("" if n_jobs == 1 else f", {single / elapsed:.2f}x one thread"),
            "seconds, not minutes (< 60 s)",
            elapsed < 60,
        )
        print(
            f"{n_jobs:>7} {elapsed:>9.2f} {1e3 * elapsed / args.permutations:>21.1f} "
            f"{single / elapsed:>9.2f}"
        )
    print(f"statistic {result.statistic:.4g}, floor {result.floor:.3g} +- {result.floor_std:.2g}")


if __name__ == "__main__":
    raise SystemExit(main())
