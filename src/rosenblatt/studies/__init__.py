"""The paper's studies as functions driven by a configuration, one module each."""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

__all__ = ["STUDIES", "run_study"]

#: ``study:`` key of a configuration -> module in this package
STUDIES = {
    "abcd": "abcd",
    "blobs": "blobs",
    "fairness": "fairness",
    "lhco": "lhco",
    "lhco-2d": "lhco_2d",
}


def run_study(config: dict[str, Any], output: str | Path | None = None) -> Path:
    """Run the study a configuration describes and return its results folder."""
    kind = config.get("study")
    if not isinstance(kind, str) or kind not in STUDIES:
        source = config.get("_path", "the configuration")
        msg = f"{source}: study: unknown study {kind!r}; known: {sorted(STUDIES)}"
        raise ValueError(msg)
    module = importlib.import_module(f"rosenblatt.studies.{STUDIES[kind]}")
    folder = Path(output) if output is not None else Path("results") / config["name"]
    created = not folder.exists()
    folder.mkdir(parents=True, exist_ok=True)
    try:
        module.run(config, folder)
    except BaseException:
        # a run refused before writing anything leaves no results folder behind
        if created and folder.is_dir() and not any(folder.iterdir()):
            folder.rmdir()
        raise
    return folder
