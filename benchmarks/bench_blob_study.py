"""Wall time of the Gaussian-blob study at 10^6 testing events (``configs/blobs-1e6.yaml``).

The study fits IRGI and KDE on 10^5 defining events, transforms 10^6 testing
events, and computes dCor^2 with a permutation floor on 50 sub-samples and on
the whole sample, then writes its report (the target: at most 5 minutes).

Run::

    python benchmarks/bench_blob_study.py                  # configs/blobs-1e6.yaml
    python benchmarks/bench_blob_study.py --config blobs   # the paper's sizes
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

from _summary import record

#: seconds the 10^6-event study may take
TARGET_SECONDS = 300


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", default="blobs-1e6", help="configuration name or file")
    args = parser.parse_args()

    from rosenblatt.config import load_config
    from rosenblatt.studies import run_study

    config = load_config(args.config)
    with tempfile.TemporaryDirectory() as scratch:
        start = time.perf_counter()
        run_study(config, os.path.join(scratch, config["name"]))
        elapsed = time.perf_counter() - start
    n_testing = int(config["background"]["n_testing"])
    print(
        f"study {config['name']!r}: {n_testing:.0e} testing events in {elapsed:.0f} s (target <= {TARGET_SECONDS} s)"
    )
    record(
        f"blob study ({config['name']}), {n_testing:.0e} testing events",
        str(os.cpu_count()),
        f"{elapsed / 60:.1f} min",
        "<= 5 min",
        elapsed <= TARGET_SECONDS,
    )


if __name__ == "__main__":
    main()
