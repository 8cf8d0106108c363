"""Speed of the IRGI and KDE transforms against baselines measured in the same run.

* IRGI fit (d = 9) on 10^6 events against one ``numpy.sort`` of 10^6 floats;
* IRGI transform of 10^7 events against ``numpy.interp`` of 10^7 points on a
  129-node table;
* KDE transform of M = 10^6 events against N = 10^5 defining events, against
  the paper's direct formula timed on a subset and scaled by M, with the
  largest absolute difference from the direct formula on 2000 events;
* peak traced memory (numpy allocations, ``tracemalloc``) of each step;
* each step with one thread and with all threads (numba ``prange``).

Run::

    python benchmarks/bench_transforms.py               # the issue's sizes
    python benchmarks/bench_transforms.py --scale 0.1   # ten times smaller
"""

from __future__ import annotations

import argparse
import os
import time
import tracemalloc
from collections.abc import Callable
from typing import Any

import numpy as np
from _summary import record

import rosenblatt as rb


def timed(function: Callable[[], Any], repeats: int = 1) -> tuple[float, float]:
    """Best wall time of ``repeats`` calls and the peak traced memory (MiB) of one call."""
    function()  # warm up (numba compilation, caches)
    best = np.inf
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        best = min(best, time.perf_counter() - start)
    tracemalloc.start()
    function()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return best, peak / 2**20


def paired(
    baseline: Callable[[], Any], function: Callable[[], Any], repeats: int
) -> tuple[float, float, float]:
    """Best times of ``baseline`` and ``function`` run in turn, and the peak memory of ``function``.

    Taking turns exposes both to the same state of a shared machine, so that
    their ratio does not depend on when a neighbour was busy.
    """
    baseline()
    function()
    best_baseline = best = np.inf
    for _ in range(repeats):
        start = time.perf_counter()
        baseline()
        best_baseline = min(best_baseline, time.perf_counter() - start)
        start = time.perf_counter()
        function()
        best = min(best, time.perf_counter() - start)
    return best_baseline, best, timed(function)[1]


def sample(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    x = rng.standard_normal(n)
    return x, 0.6 * x + 0.8 * rng.standard_normal(n)


def set_threads(n: int) -> None:
    try:
        import numba

        numba.set_num_threads(n)
    except ImportError:
        pass


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--scale", type=float, default=1.0, help="multiply every size by this")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    n_fit = int(1e6 * args.scale)
    n_eval = int(1e7 * args.scale)
    n_def, m_kde = int(1e5 * args.scale), int(1e6 * args.scale)
    cores = os.cpu_count() or 1
    rows: list[tuple[str, str, float, float, float, str]] = []

    x, y = sample(n_fit, rng)
    depth = min(9, rb.IRGI.max_depth(n_fit))
    for threads in sorted({1, cores}):
        set_threads(threads)
        t_sort, t_fit, mem = paired(
            lambda: np.sort(x), lambda: rb.IRGI(depth).fit(x, y), args.repeats
        )
        rows.append(
            (
                f"IRGI fit d={depth}, {n_fit:.0e} events",
                f"{threads} thr",
                t_fit,
                t_fit / t_sort,
                mem,
                "<= 6 x np.sort",
            )
        )
        record(
            f"IRGI fit, d={depth}, {n_fit:.0e} events",
            str(threads),
            f"{t_fit:.3f} s = {t_fit / t_sort:.1f}x np.sort",
            "<= 6x np.sort",
            t_fit / t_sort <= 6,
        )
    # cells of equal weight hold fewer events than cells of equal count: one level less
    w = rng.uniform(0.5, 1.5, n_fit)
    t_weighted, _ = timed(lambda: rb.IRGI(depth - 1).fit(x, y, w), args.repeats)
    rows.append(
        (
            f"IRGI fit d={depth - 1}, {n_fit:.0e} weighted events",
            f"{cores} thr",
            t_weighted,
            t_weighted / t_sort,
            0.0,
            "(no target)",
        )
    )
    record(
        f"IRGI fit, d={depth - 1}, {n_fit:.0e} weighted events",
        str(cores),
        f"{t_weighted:.3f} s = {t_weighted / t_sort:.1f}x np.sort",
        "(reported)",
        None,
    )
    irgi = rb.IRGI(depth).fit(x, y)
    xq, yq = sample(n_eval, rng)
    nodes = np.linspace(-3, 3, 129)
    values = np.sort(rng.uniform(size=129))
    for threads in sorted({1, cores}):
        set_threads(threads)
        t_interp, t_tr, mem = paired(
            lambda: np.interp(xq, nodes, values), lambda: irgi.transform(xq, yq), args.repeats
        )
        rows.append(
            (
                f"IRGI transform, {n_eval:.0e} events",
                f"{threads} thr",
                t_tr,
                t_tr / t_interp,
                mem,
                "<= 3 x np.interp",
            )
        )
        record(
            f"IRGI transform, {n_eval:.0e} events",
            str(threads),
            f"{t_tr:.3f} s = {t_tr / t_interp:.1f}x np.interp, {mem:.0f} MiB",
            "<= 3x np.interp",
            t_tr / t_interp <= 3,
        )

    # the speed-up over the direct formula grows with N: judged at the sizes only
    full_size = args.scale >= 1
    x_def, y_def = sample(n_def, rng)
    xm, ym = sample(m_kde, rng)
    n_direct = 2000
    for sigma_r in (0.005, 0.05, 0.5, 2.0):
        direct = rb.KDE(sigma_r, method="direct").fit(x_def, y_def)
        start = time.perf_counter()
        reference = direct.transform(xm[:n_direct], ym[:n_direct])
        t_direct = (time.perf_counter() - start) * m_kde / n_direct
        for threads in sorted({1, cores}):
            set_threads(threads)
            fast = rb.KDE(sigma_r).fit(x_def, y_def)
            t_fast, mem = timed(lambda fast=fast: fast.transform(xm, ym), 1)
            diff = float(np.max(np.abs(fast.transform(xm[:n_direct], ym[:n_direct]) - reference)))
            rows.append(
                (
                    f"KDE sigma_r={sigma_r:g}, M={m_kde:.0e}, N={n_def:.0e}",
                    f"{threads} thr",
                    t_fast,
                    t_direct / t_fast,
                    mem,
                    f">= 200 x faster than direct; max |diff| {diff:.1e}",
                )
            )
            record(
                f"KDE transform, sigma_r={sigma_r:g}, M={m_kde:.0e}, N={n_def:.0e}",
                str(threads),
                f"{t_fast:.2f} s = {t_direct / t_fast:.0f}x faster than direct, max abs diff {diff:.1e}, {mem:.0f} MiB",
                ">= 200x, max abs diff <= 1e-6, <= 1 GB"
                if full_size
                else "(the target is for M=1e6, N=1e5)",
                t_direct / t_fast >= 200 and diff <= 1e-6 and mem <= 1024 if full_size else None,
            )
    set_threads(cores)

    print(f"{'operation':44} {'threads':8} {'seconds':>9} {'ratio':>9} {'peak MiB':>9}  target")
    for name, threads, seconds, ratio, mem, target in rows:
        print(f"{name:44} {threads:8} {seconds:9.3f} {ratio:9.1f} {mem:9.1f}  {target}")
    print(f"baselines: np.sort {t_sort:.4f} s, np.interp {t_interp:.4f} s")


if __name__ == "__main__":
    main()
