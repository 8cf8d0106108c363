"""Cost of the decorrelation methods side by side, as ratios to IRGI in the same run.

For each size N of the defining sample (the paper's Gaussian blob, rho = 0.6)
every method of :func:`rosenblatt.studies.peers.default_peers` is fitted on N
events and transforms N testing events; the table gives the wall time of fit
plus transform, its ratio to IRGI's at the same N, and the RMS against the
exact conditional CDF. IRGI, KDE and GridKDE choose their parameter by
cross-validation inside the fit (``depth="auto"``, ``sigma_r="auto"``). The
flow trains with early stopping; at the largest size its epochs are capped
(``--flow-max-epochs-large``), which the table says.

Then the flow alone is trained on ``--flow-draws`` independent draws of 10^5
defining events (default settings, seed = draw) and its RMS against the exact
conditional CDF on 10^5 testing events is compared with the target of 0.008.

Run::

    python benchmarks/bench_peers.py                       # N = 10^4, 10^5, 10^6
    python benchmarks/bench_peers.py --sizes 10000 100000  # smaller
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from _summary import record
from scipy.stats import norm

from rosenblatt.studies.peers import LABELS, default_peers

RHO = 0.6


def blob(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(n)
    return x, RHO * x + np.sqrt(1 - RHO**2) * rng.standard_normal(n)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument(
        "--flow-max-epochs-large", type=int, default=10, help="epoch cap of the flow at N >= 10^6"
    )
    parser.add_argument(
        "--flow-draws",
        type=int,
        default=3,
        help="draws of the flow's accuracy check at 10^5 (0: none)",
    )
    args = parser.parse_args()
    sizes(args)
    if args.flow_draws:
        flow_accuracy(args.flow_draws)


def flow_accuracy(draws: int, n: int = 100_000) -> None:
    """The flow's RMS against the exact conditional CDF on independent draws of the blob."""
    from rosenblatt.ml import ConditionalFlow

    print(f"\n| draw | flow RMS vs exact (N = {n:.0e}) | training [s] | epochs (best) |")
    print("|---|---|---|---|")
    values = []
    for draw in range(draws):
        x, y = blob(n, seed=100 + draw)
        xt, yt = blob(n, seed=200 + draw)
        flow = ConditionalFlow(seed=draw).fit(x, y)
        rms = float(
            np.sqrt(
                np.mean(
                    (flow.transform(xt, yt) - norm.cdf((yt - RHO * xt) / np.sqrt(1 - RHO**2))) ** 2
                )
            )
        )
        values.append(rms)
        history = flow.history_
        print(
            f"| {draw} | {rms:.4f} | {history['seconds']:.1f} | {history['epochs']} ({history['best_epoch'] + 1}) |",
            flush=True,
        )
    record(
        f"conditional flow RMS vs exact CDF, blob N = {n:.0e}, worst of {draws} draws",
        "1",
        f"{max(values):.4f} (mean {np.mean(values):.4f})",
        "<= 0.008",
        max(values) <= 0.008,
    )


def sizes(args: argparse.Namespace) -> None:
    """Fit + transform of every method at each size, as ratios to IRGI."""
    x, y = blob(5000, seed=0)
    for make in default_peers(flow={"max_epochs": 1}).values():
        if make is not None:
            make().fit(x, y).transform(x, y)  # compile the numba kernels before timing
    print("| N | method | fit + transform [s] | ratio to IRGI | RMS vs exact | note |")
    print("|---|---|---|---|---|---|")
    for n in args.sizes:
        x, y = blob(n, seed=1)
        xt, yt = blob(n, seed=2)
        exact = norm.cdf((yt - RHO * xt) / np.sqrt(1 - RHO**2))
        capped = n >= 1_000_000
        flow = {"max_epochs": args.flow_max_epochs_large} if capped else {}
        makers = {
            name: make
            for name, make in default_peers(flow=flow, n_defining=n).items()
            if make is not None
        }
        rows = {}
        for name, make in makers.items():
            start = time.perf_counter()
            transform = make().fit(x, y)
            gamma = transform.transform(xt, yt)
            seconds = time.perf_counter() - start
            note = ""
            history = getattr(transform, "history_", None)
            if history is not None:
                note = f"{history['epochs']} epochs" + (
                    f" (capped at {args.flow_max_epochs_large})" if capped else ", early stopping"
                )
            rows[name] = (seconds, float(np.sqrt(np.mean((gamma - exact) ** 2))), note)
        base = rows["irgi"][0]
        for name, (seconds, rms, note) in rows.items():
            print(
                f"| {n:.0e} | {LABELS[name]} | {seconds:.2f} | {seconds / base:.2f} | {rms:.4f} | {note} |",
                flush=True,
            )
            record(
                f"{LABELS[name]} fit + transform, N = {n:.0e} (blob), ratio to IRGI (depth=auto)",
                "all",
                f"{seconds / base:.2f} ({seconds:.2f} s, RMS {rms:.4f}){'; ' + note if note else ''}",
                "-",
                None,
            )


if __name__ == "__main__":
    main()
