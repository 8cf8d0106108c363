"""The rows of the one table that ``run_all.py`` prints at the end.

A benchmark calls :func:`record` for each figure an issue sets a target for.
When ``run_all.py`` runs it, the environment variable ``ROSENBLATT_BENCH_SUMMARY``
names a file the rows are appended to (one JSON object per line); run on its
own, a benchmark records nothing and prints only its own table.
"""

from __future__ import annotations

import json
import os

ENVIRONMENT_VARIABLE = "ROSENBLATT_BENCH_SUMMARY"


def record(operation: str, threads: str, result: str, target: str, met: bool | None) -> None:
    """Add one row: what was measured, on how many threads, the figure, its target, whether it is met.

    ``met`` is ``None`` for a figure that is reported without a target.
    """
    path = os.environ.get(ENVIRONMENT_VARIABLE)
    if not path:
        return
    row = {
        "operation": operation,
        "threads": threads,
        "result": result,
        "target": target,
        "met": met,
    }
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(json.dumps(row) + "\n")
