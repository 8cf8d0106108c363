"""Accuracy of the transforms on several protected observables, against the exact conditional CDF.

On the closed forms with two and three correlated observables
(:data:`rosenblatt.closed_forms.VECTOR_CASES`), each estimator is fitted on
the defining sample and its ``gamma`` compared with the exact
``P(Y <= y | x1, ..., xk)`` on independent testing events (root mean square,
mean and spread over independent draws). Beside the joint estimators:
the best scalar estimate from one observable alone (GridKDE with its
automatic width along the observable that gives the lowest RMS) and the
sequential transform. Also printed: the time of the exact multivariate dCor²
at 5x10^4 events and of its random-projection estimate.

Run::

    python benchmarks/bench_vector_accuracy.py            # 10^5 defining, 2x10^4 testing, 3 draws
    python benchmarks/bench_vector_accuracy.py --quick    # 10^4 defining, 1 draw
    python benchmarks/bench_vector_accuracy.py --throughput   # fit and transform of 10^6 events, k = 1 and 2
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from typing import Any

import numpy as np

import rosenblatt as rb
from rosenblatt.closed_forms import VECTOR_CASES
from rosenblatt.metrics import projected_distance_correlation_sqr

Factory = Callable[[], Any]

JOINT: dict[str, Factory] = {
    "GridKDE auto (degree 2)": lambda: rb.GridKDE("auto"),
    "GridKDE auto (degree 1)": lambda: rb.GridKDE("auto", degree=1),
    "KDE auto (product kernel)": lambda: rb.KDE("auto"),
    "IRGI auto (nested cells)": lambda: rb.IRGI("auto"),
}


def _rms(gamma: Any, exact: Any) -> float:
    return float(np.sqrt(np.mean((np.asarray(gamma) - exact) ** 2)))


def _one_draw(
    case_name: str, n: int, n_testing: int, draw: int, estimators: dict[str, Factory]
) -> list[dict[str, Any]]:
    case = VECTOR_CASES[case_name]
    x, y = case.sample(n, np.random.default_rng([0, n, draw, 0]))
    xt, yt = case.sample(n_testing, np.random.default_rng([0, n, draw, 1]))
    exact = case.exact(xt, yt)
    rows = []
    alone = [
        _rms(rb.GridKDE("auto").fit(x[:, d], y).transform(xt[:, d], yt), exact)
        for d in range(case.dims)
    ]
    rows.append(
        {"estimator": "best single observable (GridKDE auto)", "rms": min(alone), "seconds": None}
    )
    steps = [rb.GridKDE("auto") for _ in range(case.dims)]
    jobs = {
        **estimators,
        "sequential (GridKDE auto per step)": lambda: rb.SequentialTransform(steps),
    }
    for name, make in jobs.items():
        start = time.perf_counter()
        transform = make().fit(x, y)
        gamma = transform.transform(xt, yt)
        rows.append(
            {
                "estimator": name,
                "rms": _rms(gamma, exact),
                "seconds": time.perf_counter() - start,
                "sigma_r": getattr(transform, "sigma_r_", None),
                **_hindsight(transform, x, y, xt, yt, exact),
            }
        )
    for row in rows:
        row.update(case=case_name, n_defining=n, draw=draw)
    return rows


def _hindsight(transform: Any, x: Any, y: Any, xt: Any, yt: Any, exact: Any) -> dict[str, Any]:
    """For IRGI's levels per observable: the choice and the best RMS of every choice it scored."""
    selection = getattr(transform, "selection_", None)
    if selection is None or selection.parameter != "splits":
        return {}
    tried = {
        tuple(v): _rms(rb.IRGI(list(v)).fit(x, y).transform(xt, yt), exact)
        for v in selection.values
    }
    best = min(tried, key=tried.__getitem__)
    return {
        "chosen": list(selection.chosen),
        "best_in_hindsight": list(best),
        "hindsight_rms": tried[best],
    }


def _dcor_timing(n: int) -> dict[str, float]:
    case = VECTOR_CASES["two_observables"]
    x, y = case.sample(n, seed=3)
    start = time.perf_counter()
    exact = rb.distance_correlation_sqr(x, y, method="exact")
    exact_seconds = time.perf_counter() - start
    start = time.perf_counter()
    projected = projected_distance_correlation_sqr(x, y, n_projections=100)
    return {
        "n": n,
        "exact": exact,
        "exact_seconds": exact_seconds,
        "projected": projected.value,
        "projected_error": projected.error,
        "projected_seconds": time.perf_counter() - start,
    }


def _throughput(n: int) -> list[dict[str, Any]]:
    """Seconds to fit and to transform ``n`` events, two observables against the first alone."""
    case = VECTOR_CASES["two_observables"]
    x, y = case.sample(n, seed=4)
    rows = []
    jobs = (
        ("GridKDE(0.3)", "k=1", lambda: rb.GridKDE(0.3), x[:, 0]),
        ("GridKDE(0.3)", "k=2", lambda: rb.GridKDE(0.3), x),
        ("IRGI(9), scalar depth", "k=1", lambda: rb.IRGI(9), x[:, 0]),
        ("IRGI(12), 4096 nested cells", "k=2", lambda: rb.IRGI(12), x),
    )
    for name, label, make, xs in jobs:
        start = time.perf_counter()
        transform = make().fit(xs, y)
        fitted = time.perf_counter()
        transform.transform(xs, y)
        rows.append(
            {
                "estimator": name,
                "x": label,
                "fit_seconds": fitted - start,
                "transform_seconds": time.perf_counter() - fitted,
            }
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--cases", nargs="*", default=sorted(VECTOR_CASES))
    parser.add_argument("--json", help="write the rows to this file")
    parser.add_argument(
        "--throughput", action="store_true", help="only time fit and transform of 10^6 events"
    )
    parser.add_argument(
        "--estimators", nargs="*", default=sorted(JOINT), help="names of the joint estimators"
    )
    args = parser.parse_args()
    n, draws = (10_000, 1) if args.quick else (100_000, 3)
    joint = {name: JOINT[name] for name in args.estimators}
    if args.throughput:
        for row in _throughput(1_000_000):
            print(json.dumps(row), flush=True)
        return
    rows = []
    for case_name in args.cases:
        for draw in range(draws):
            rows += _one_draw(case_name, n, 20_000, draw, joint)
            print(json.dumps(rows[-len(joint) - 2 :]), flush=True)
    print(
        f"\nRMS of gamma against the exact conditional CDF ({n} defining, 20000 testing, {draws} draw(s))"
    )
    for case_name in args.cases:
        print(f"\n{case_name}")
        for name in dict.fromkeys(r["estimator"] for r in rows if r["case"] == case_name):
            values = np.array(
                [r["rms"] for r in rows if r["case"] == case_name and r["estimator"] == name]
            )
            spread = values.std(ddof=1) if len(values) > 1 else 0.0
            print(f"  {name:42s} {values.mean():.4f} +- {spread:.4f}")
            for r in rows:
                if r["case"] == case_name and r["estimator"] == name and "chosen" in r:
                    print(
                        f"    draw {r['draw']}: chose {r['chosen']} (RMS {r['rms']:.4f}); best of "
                        f"the levels it scored {r['best_in_hindsight']} (RMS {r['hindsight_rms']:.4f}, "
                        f"ratio {r['rms'] / r['hindsight_rms']:.3f})"
                    )
    timing = _dcor_timing(50_000)
    print(
        f"\ndCor2 of (x1, x2) with y at {timing['n']} events: exact {timing['exact']:.5f} in "
        f"{timing['exact_seconds']:.1f} s; projections {timing['projected']:.5f} +- "
        f"{timing['projected_error']:.5f} in {timing['projected_seconds']:.1f} s"
    )
    if args.json:
        with open(args.json, "w") as handle:
            json.dump({"rows": rows, "dcor": timing}, handle, indent=1)


if __name__ == "__main__":
    main()
