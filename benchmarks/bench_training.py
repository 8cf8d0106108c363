"""Seconds per epoch per 10^4 events of the track-image CNN, with and without DisCo.

Real events: Pythia QCD dijets and W' signal through the feature table (or a
feature table given with ``--table``), repeated to 10^4 training events. For
each batch size the plain CNN (alpha = 0) is the baseline and the DisCo CNN
(alpha > 0, dCor^2 over the background of every batch) is timed in the same
run; the table prints both and their ratio, plus the cost of the in-loss dCor^2
alone (forward and backward on the background half of a batch).

Usage::

    python benchmarks/bench_training.py [--table FEATURES.parquet] [--events-per-class 300]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

TRAIN_EVENTS = 10_000


def real_table(events_per_class: int, seed: int):
    import awkward as ak

    from rosenblatt.hep.features import event_table
    from rosenblatt.hep.generation import generate_events

    tables = []
    for process in ("qcd", "wprime"):
        events = generate_events(process, events_per_class, seed=seed, progress=True)
        table, _ = event_table(
            events,
            label=events.label,
            weight=events.weight,
            dataset=process,
            file=f"generated-{process}",
            entry=np.arange(len(events)),
        )
        tables.append(table)
    return ak.concatenate(tables)


def repeat_to(arrays, n: int, seed: int):
    index = np.random.default_rng(seed).choice(len(arrays), size=n, replace=n > len(arrays))
    return arrays.subset(index)


def time_dcor(n_background: int, repeats: int = 3) -> float:
    import torch

    from rosenblatt.ml.disco import distance_correlation_sqr

    rng = np.random.default_rng(0)
    mjj = torch.tensor(2400 + rng.exponential(600, n_background))
    logits = torch.tensor(rng.normal(size=n_background), dtype=torch.float32, requires_grad=True)
    best = np.inf
    for _ in range(repeats):
        start = time.perf_counter()
        value = distance_correlation_sqr(mjj, torch.sigmoid(logits))
        value.backward()
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--table", help="feature table (parquet) instead of generating events")
    parser.add_argument("--events-per-class", type=int, default=300)
    parser.add_argument("--batch-sizes", type=int, nargs="+", default=[10_000, 2048, 512, 256])
    parser.add_argument("--alpha", type=float, default=3.0)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=2, help="best of this many epochs")
    args = parser.parse_args()

    import torch
    from _summary import record

    from rosenblatt.ml.tables import event_arrays
    from rosenblatt.ml.training import train_on_arrays

    torch.set_num_threads(args.threads)
    table = args.table or real_table(args.events_per_class, seed=7)
    arrays = event_arrays(table, images=True)
    train = repeat_to(arrays, TRAIN_EVENTS, seed=1)
    val = repeat_to(arrays, 200, seed=2)

    def epoch_seconds(alpha: float, batch_size: int) -> float:
        options = {"max_epochs": 1, "batch_size": batch_size, "n_threads": args.threads}
        return min(
            float(
                train_on_arrays(train, val, alpha=alpha, seed=0, options=options).metadata[
                    "seconds"
                ]
            )
            for _ in range(args.repeats)
        )

    epoch_seconds(0.0, 512)  # warm-up
    print(
        f"CNN training, {TRAIN_EVENTS} events ({len(arrays)} distinct real events), "
        f"{args.threads} thread(s), best of {args.repeats}, alpha {args.alpha:g}, "
        f"torch {torch.__version__}"
    )
    header = (
        f"{'batch':>6} {'s/epoch/1e4 BCE':>16} {'s/epoch/1e4 DisCo':>18} "
        f"{'DisCo/BCE':>10} {'dCor2 f+b per batch (s)':>24}"
    )
    print(header)
    print("-" * len(header))
    for batch_size in args.batch_sizes:
        plain = epoch_seconds(0.0, batch_size) * 1e4 / TRAIN_EVENTS
        disco = epoch_seconds(args.alpha, batch_size) * 1e4 / TRAIN_EVENTS
        dcor_seconds = time_dcor(batch_size // 2)
        print(
            f"{batch_size:>6} {plain:>16.2f} {disco:>18.2f} {disco / plain:>10.2f} "
            f"{dcor_seconds:>24.3f}"
        )
        record(
            f"CNN training, batch {batch_size}",
            str(args.threads),
            f"{plain:.2f} s/epoch per 1e4 events (DisCo {disco:.2f})",
            "(reported)",
            None,
        )


if __name__ == "__main__":
    main()
