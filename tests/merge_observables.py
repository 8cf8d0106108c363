"""A user's function of the events for the mergeable fit's tests: it counts its calls in a file.

It is importable by the executors' worker processes (the tests' folder is on
their path), and every call appends the chunk it was given to ``log``, so a
test can check that each chunk was read once for a whole fit.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True)
class CountingObservables:
    """``(x, y[, weight])`` of the events; ``x`` is ``[mjj, pt]`` with ``two``; fails on ``fail_at``."""

    log: str
    weighted: bool = False
    two: bool = False
    fail_at: int | None = None

    def __call__(self, events: Any) -> tuple[Any, ...]:
        meta = events.metadata
        line = f"{os.path.basename(meta['filename'])}:{meta['entrystart']}:{meta['entrystop']}\n"
        with open(self.log, "a", encoding="utf-8") as handle:
            handle.write(line)
        if self.fail_at is not None and meta["entrystart"] >= self.fail_at:
            msg = "the fit was interrupted"
            raise KeyboardInterrupt(msg)
        x = [events.mjj, events.pt] if self.two else events.mjj
        if self.weighted:
            return x, events.score, events.weight
        return x, events.score


def write_files(folder: Any, sizes: tuple[int, ...], seed: int) -> dict[str, Any]:
    """ROOT files of flat events (``mjj`` and ``pt`` as float32, so that values tie); their file set."""
    import uproot

    rng = np.random.default_rng(seed)
    files = {}
    for k, n in enumerate(sizes):
        mjj = (rng.gamma(5.0, 400.0, n) + 1500.0).astype(np.float32)
        pt = (0.3 * mjj + rng.gamma(3.0, 100.0, n)).astype(np.float32)
        logit = rng.normal(size=n) + (mjj - 3500.0) / 1500.0
        score = (1.0 / (1.0 + np.exp(-logit))).astype(np.float32)
        weight = rng.normal(1.0, 0.4, n)
        path = os.path.join(str(folder), f"events-{k}.root")
        branches = {"mjj": mjj, "pt": pt, "score": score, "weight": weight}
        with uproot.recreate(path) as handle:  # a TTree
            handle.mktree("Events", {name: value.dtype for name, value in branches.items()})
            handle["Events"].extend(branches)
        files[path] = "Events"
    return {"qcd": {"files": files}}


def read_columns(fileset: dict[str, Any]) -> dict[str, np.ndarray]:
    """Every event of the file set, file after file, as float64 columns."""
    import uproot

    columns: dict[str, list[np.ndarray]] = {}
    for dataset in fileset.values():
        for path, tree in dataset["files"].items():
            with uproot.open(path) as handle:
                arrays = handle[tree].arrays(library="np")
            for name, values in arrays.items():
                columns.setdefault(name, []).append(np.asarray(values, dtype=np.float64))
    return {name: np.concatenate(parts) for name, parts in columns.items()}
