"""Run every benchmark of the project, one after the other, and print their tables.

Each benchmark measures its baseline in the same run on the same machine and
prints ratios beside the targets. Run from the repository root::

    python benchmarks/run_all.py            # the sizes of the issues (tens of minutes)
    python benchmarks/run_all.py --quick    # smaller sizes, a few minutes
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent

#: script -> (arguments at full size, arguments with --quick)
BENCHMARKS = {
    "bench_transforms.py": ([], ["--scale", "0.1", "--repeats", "1"]),
    "bench_metrics.py": ([], ["--sizes", "100000", "--repeats", "1"]),
    "bench_generation.py": (["--events", "400", "--chunk-size", "100"], ["--events", "100", "--chunk-size", "50"]),
    "bench_processor.py": ([], ["--events", "300", "--repeat", "1"]),
    "bench_training.py": ([], ["--events-per-class", "200", "--batch-sizes", "2048", "256", "--repeats", "1"]),
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="smaller sizes")
    parser.add_argument("--only", nargs="+", choices=sorted(BENCHMARKS), help="run only these")
    args = parser.parse_args()
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(
        f"# rosenblatt benchmarks, {datetime.date.today().isoformat()}, {platform.node()}: "
        f"{os.cpu_count()} cores, {platform.processor() or platform.machine()}, "
        f"Python {platform.python_version()}, load average {load:.1f} at start"
    )
    failed = []
    for script, (full, quick) in BENCHMARKS.items():
        if args.only and script not in args.only:
            continue
        command = [sys.executable, str(HERE / script), *(quick if args.quick else full)]
        print(f"\n## {script} {' '.join(command[2:])}", flush=True)
        start = time.perf_counter()
        result = subprocess.run(command, check=False)
        print(f"({time.perf_counter() - start:.0f} s)", flush=True)
        if result.returncode:
            failed.append(script)
    if failed:
        print(f"\nfailed: {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
