"""Run every benchmark of the project, one after the other, and print their tables.

Each benchmark measures its baseline in the same run on the same machine and
prints ratios beside the targets; at the end one table gathers every figure
with a target, each beside it (in Markdown, as the README shows it). Install
with ``pip install -e ".[bench]"`` and run from the repository root::

    python benchmarks/run_all.py            # the sizes of the issues (about 10 minutes)
    python benchmarks/run_all.py --quick    # smaller sizes, a few minutes
    python benchmarks/run_all.py --markdown table.md   # also write the table
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent

#: script -> (arguments at full size, arguments with --quick)
BENCHMARKS = {
    "bench_transforms.py": ([], ["--scale", "0.1", "--repeats", "1"]),
    "bench_metrics.py": ([], ["--sizes", "100000", "--repeats", "1"]),
    "bench_generation.py": (
        ["--events", "400", "--chunk-size", "100"],
        ["--events", "100", "--chunk-size", "50"],
    ),
    "bench_processor.py": ([], ["--events", "300", "--repeat", "1"]),
    "bench_fit.py": ([], ["--quick"]),
    "bench_fit_resume.py": ([], ["--events", "400000", "--chunk-size", "20000", "--pairs", "3"]),
    "bench_analysis.py": ([], ["--quick"]),
    "bench_abcd_ntuple.py": ([], ["--events", "1000000", "--chunksize", "500000"]),
    "bench_training.py": (
        [],
        ["--events-per-class", "200", "--batch-sizes", "2048", "256", "--repeats", "1"],
    ),
    "bench_blob_study.py": ([], ["--config", "blobs"]),
    "bench_peers.py": ([], ["--sizes", "10000", "100000", "--flow-draws", "1"]),
}
SUMMARY_VARIABLE = "ROSENBLATT_BENCH_SUMMARY"


def summary_table(rows: list[dict[str, object]], title: str) -> str:
    """The rows recorded by the benchmarks as one Markdown table."""
    verdict = {True: "yes", False: "**no**", None: "-"}
    lines = [
        title,
        "",
        "| operation | threads | result | target | met |",
        "|---|---|---|---|---|",
    ]
    lines += [
        f"| {row['operation']} | {row['threads']} | {row['result']} | {row['target']} | {verdict[row['met']]} |"  # type: ignore[index]
        for row in rows
    ]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="smaller sizes")
    parser.add_argument("--only", nargs="+", choices=sorted(BENCHMARKS), help="run only these")
    parser.add_argument("--markdown", type=Path, help="also write the summary table to this file")
    args = parser.parse_args()
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    title = (
        f"rosenblatt benchmarks{' (--quick)' if args.quick else ''}, {datetime.date.today().isoformat()}: "
        f"{os.cpu_count()} cores, {cpu_model()}, Python {platform.python_version()}, "
        f"load average {load:.1f} at start"
    )
    print(f"# {title}")
    summary = Path(tempfile.mkstemp(prefix="rosenblatt-bench-", suffix=".jsonl")[1])
    os.environ[SUMMARY_VARIABLE] = str(summary)
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
    rows = [json.loads(line) for line in summary.read_text(encoding="utf-8").splitlines() if line]
    summary.unlink()
    table = summary_table(rows, f"**{title}**")
    print(f"\n## Summary\n\n{table}")
    if args.markdown:
        args.markdown.write_text(table + "\n", encoding="utf-8")
    if failed:
        print(f"\nfailed: {', '.join(failed)}")
    return 1 if failed else 0


def cpu_model() -> str:
    """The processor's model name (Linux), else what :mod:`platform` knows."""
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


if __name__ == "__main__":
    sys.exit(main())
