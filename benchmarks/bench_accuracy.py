"""Accuracy of every estimator against closed-form conditional CDFs, and the speed of the best.

For each closed-form case (:mod:`rosenblatt.closed_forms`), defining-sample
size and independent draw, every estimator is fitted on the defining sample
and its ``gamma`` compared with the exact one on independent testing events
(root mean square). Printed:

* the RMS per estimator x case x size (mean over draws, with the spread and
  the parameters chosen), beside the conditional normalizing flow's RMS on
  the blob (0.0054 at 10^5 and 0.013 at 10^4 defining events, from the
  literature comparison);
* for each automatic choice, its RMS over that of the best fixed parameter
  in hindsight (the best mean RMS over the draws of a scan of fixed values);
* the time of fit plus transform of 10^5 blob events, against the paper's
  KDE and IRGI timed in the same run, with the machine's load.

Run::

    python benchmarks/bench_accuracy.py              # 3 draws, 10^4 and 10^5 events, 2x10^4 testing
    python benchmarks/bench_accuracy.py --quick      # 1 draw, 10^4 events, the blob only
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import Callable
from typing import Any

import numpy as np

import rosenblatt as rb
from rosenblatt.closed_forms import CASES, accuracy_rows, summarize
from rosenblatt.transforms.grid_kde import GridKDE

Factory = Callable[[], Any]

#: RMS of the conditional normalizing flow on the blob, by defining-sample size
FLOW_RMS = {10_000: 0.013, 100_000: 0.0054}


def automatic(n: int) -> dict[str, Factory]:
    """The paper's defaults and every automatic configuration."""
    paper_depth = min(7, rb.IRGI.max_depth(n))
    return {
        "IRGI d=7 (paper; 6 below 32768 events)": lambda: rb.IRGI(paper_depth),
        "IRGI auto": lambda: rb.IRGI("auto"),
        "KDE 0.05 (paper)": lambda: rb.KDE(0.05),
        "KDE auto": lambda: rb.KDE("auto"),
        "GridKDE p=0 auto": lambda: GridKDE(degree=0),
        "GridKDE p=1 auto": lambda: GridKDE(degree=1),
        "GridKDE p=2 auto": lambda: GridKDE(degree=2),
        "GridKDE p=3 auto": lambda: GridKDE(degree=3),
    }


def fixed_scans(n: int) -> dict[str, dict[str, Factory]]:
    """Fixed-parameter scans behind each automatic choice, for the best in hindsight."""
    depths = range(3, rb.IRGI.max_depth(n) + 1)
    return {
        "IRGI auto": {f"d={d}": (lambda d=d: rb.IRGI(d)) for d in depths},
        "KDE auto": {f"{v:.3g}": (lambda v=v: rb.KDE(v)) for v in np.geomspace(0.03, 0.3, 9)},
        "GridKDE p=2 auto": {
            f"{v:.3g}": (lambda v=v: GridKDE(v)) for v in np.geomspace(0.08, 1.28, 13)
        },
    }


def run_rows(
    estimators_of: Callable[[int], dict[str, Factory]], args: argparse.Namespace
) -> list[dict[str, Any]]:
    rows = []
    for n in args.sizes:
        rows += accuracy_rows(
            estimators_of(n),
            args.cases,
            [n],
            draws=args.draws,
            n_testing=args.testing,
            seed=args.seed,
            progress=not args.no_progress,
        )
    return rows


def print_accuracy(table: list[dict[str, Any]], cases: list[str], sizes: list[int]) -> None:
    names = list(dict.fromkeys(r["estimator"] for r in table))
    by_key = {(r["case"], r["n_defining"], r["estimator"]): r for r in table}
    for n in sizes:
        print(
            f"\n### RMS of gamma - exact, {n} defining events (mean +- spread over draws; parameters chosen)\n"
        )
        print("| estimator | " + " | ".join(cases) + " |")
        print("|---|" + "---|" * len(cases))
        for name in names:
            cells = []
            for case in cases:
                row = by_key.get((case, n, name))
                if row is None:
                    cells.append("")
                    continue
                chosen = ", ".join(f"{p:.3g}" for p in row["parameters"] if p is not None)
                cells.append(f"{row['rms']:.5f} +- {row['rms_std']:.5f} ({chosen})")
            print(f"| {name} | " + " | ".join(cells) + " |")
        if n in FLOW_RMS and "bivariate_normal" in cases:
            print(f"| conditional flow (literature) | {FLOW_RMS[n]} | " + " | " * (len(cases) - 1))


def print_hindsight(
    table: list[dict[str, Any]],
    scans: dict[tuple[str, int, str], dict[str, float]],
    cases: list[str],
    sizes: list[int],
) -> None:
    by_key = {(r["case"], r["n_defining"], r["estimator"]): r for r in table}
    print(
        "\n### Automatic choice: RMS over the best fixed parameter in hindsight (best value in brackets)\n"
    )
    print("| estimator | N | " + " | ".join(cases) + " |")
    print("|---|---|" + "---|" * len(cases))
    for name in dict.fromkeys(k[2] for k in scans):
        for n in sizes:
            cells = []
            for case in cases:
                scan = scans.get((case, n, name))
                auto = by_key.get((case, n, name))
                if not scan or auto is None:
                    cells.append("")
                    continue
                best = min(scan, key=scan.__getitem__)
                cells.append(f"{auto['rms'] / scan[best]:.3f} ({best}: {scan[best]:.5f})")
            print(f"| {name} | {n} | " + " | ".join(cells) + " |")


def timed(make: Factory, x: np.ndarray, y: np.ndarray, repeats: int) -> tuple[float, float]:
    """Best wall and process time of fit plus transform of the same events."""
    make().fit(x, y).transform(x[:10], y[:10])  # compile, warm caches
    wall, cpu = np.inf, np.inf
    for _ in range(repeats):
        w0, c0 = time.perf_counter(), time.process_time()
        make().fit(x, y).transform(x, y)
        wall = min(wall, time.perf_counter() - w0)
        cpu = min(cpu, time.process_time() - c0)
    return wall, cpu


def print_timing(n: int, repeats: int, seed: int) -> None:
    x, y = CASES["bivariate_normal"].sample(n, seed=seed)
    contenders: dict[str, Factory] = {
        "KDE 0.05 (paper, baseline)": lambda: rb.KDE(0.05),
        "IRGI d=7 (paper)": lambda: rb.IRGI(7),
        "IRGI auto": lambda: rb.IRGI("auto"),
        "KDE auto": lambda: rb.KDE("auto"),
        "GridKDE p=2 auto": GridKDE,
        "GridKDE p=2 sigma_r=0.3": lambda: GridKDE(0.3),
    }
    load = os.getloadavg()
    print(
        f"\n### Fit + transform of {n} blob events (best of {repeats}); "
        f"load average {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} on {os.cpu_count()} cores\n"
    )
    print("| estimator | wall [s] | process [s] | wall / baseline |")
    print("|---|---|---|---|")
    baseline = None
    for name, make in contenders.items():
        wall, cpu = timed(make, x, y, repeats)
        baseline = baseline or wall
        print(f"| {name} | {wall:.3f} | {cpu:.3f} | {wall / baseline:.3f} |")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--cases", nargs="+", default=list(CASES), choices=list(CASES))
    parser.add_argument("--sizes", nargs="+", type=int, default=[10_000, 100_000])
    parser.add_argument("--draws", type=int, default=3)
    parser.add_argument("--testing", type=int, default=20_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeats", type=int, default=3, help="timing repeats")
    parser.add_argument(
        "--no-hindsight", action="store_true", help="skip the fixed-parameter scans"
    )
    parser.add_argument("--quick", action="store_true", help="1 draw, 10^4 events, the blob only")
    parser.add_argument("--no-progress", action="store_true")
    parser.add_argument("--json", help="also write all rows to this file")
    args = parser.parse_args()
    if args.quick:
        args.cases, args.sizes, args.draws = ["bivariate_normal"], [10_000], 1

    rows = run_rows(automatic, args)
    table = summarize(rows)
    print_accuracy(table, args.cases, args.sizes)

    scans: dict[tuple[str, int, str], dict[str, float]] = {}
    scan_rows: list[dict[str, Any]] = []
    if not args.no_hindsight:
        for auto_name in fixed_scans(args.sizes[0]):
            fixed = run_rows(lambda n, auto_name=auto_name: fixed_scans(n)[auto_name], args)
            scan_rows += [{**r, "scan_of": auto_name} for r in fixed]
            for r in summarize(fixed):
                scans.setdefault((r["case"], r["n_defining"], auto_name), {})[r["estimator"]] = r[
                    "rms"
                ]
        print_hindsight(table, scans, args.cases, args.sizes)

    print_timing(100_000, args.repeats, args.seed)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump({"rows": rows, "scans": scan_rows}, handle)


if __name__ == "__main__":
    main()
