"""The paper's studies as functions driven by a configuration: a module each, or a subpackage
for a study of several modules (:mod:`rosenblatt.studies.lhco`); what they share in
:mod:`rosenblatt.studies._common`.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

from rosenblatt._extras import require

__all__ = ["STUDIES", "STUDY_EXTRAS", "run_study", "study_extras"]

#: ``study:`` key of a configuration -> module in this package
STUDIES = {
    "abcd": "abcd.study",
    "blobs": "blobs.study",
    "fairness": "fairness.study",
    "lhco": "lhco.study",
    "lhco-2d": "lhco.study_2d",
    "passfail-toys": "passfail_toys.study",
    "toys": "toys.study",
}

#: ``study:`` key -> the extras every study of that kind needs
STUDY_EXTRAS: dict[str, tuple[str, ...]] = {
    "abcd": ("study", "hep"),
    "blobs": ("study",),
    "fairness": ("study", "fairness"),
    "lhco": ("study", "hep", "ml"),
    "lhco-2d": ("study", "hep", "ml"),
    "passfail-toys": ("study",),
    "toys": ("study", "stats"),
}

#: a score of the abcd study given as ``{kind: ...}`` -> the extra it needs beside
_SCORE_EXTRAS = {"torchscript": "ml", "model": "ml", "xgboost": "xgboost"}


def study_extras(config: dict[str, Any]) -> list[str]:
    """The extras a configuration's study needs (its kind's, and its score's).

    Optional parts that a study leaves out when their extra is missing (pyhf's
    likelihood, the conditional flow among the peers) are not counted.
    """
    kind = config.get("study")
    extras = list(STUDY_EXTRAS.get(kind, ("study",)) if isinstance(kind, str) else ("study",))
    score = config.get("score")
    if isinstance(score, dict):
        extras += [_SCORE_EXTRAS[key] for key in score if key in _SCORE_EXTRAS]
    return list(dict.fromkeys(extras))


def run_study(config: dict[str, Any], output: str | Path | None = None) -> Path:
    """Run the study a configuration describes and return its results folder.

    Raises
    ------
    ValueError
        If the study kind is unknown.
    rosenblatt._extras.MissingExtraError
        If an extra the study needs is missing (before anything is written).
    """
    kind = config.get("study")
    if not isinstance(kind, str) or kind not in STUDIES:
        source = config.get("_path", "the configuration")
        msg = f"{source}: study: unknown study {kind!r}; known: {sorted(STUDIES)}"
        raise ValueError(msg)
    require(f"the {kind} study", study_extras(config))
    from rosenblatt.studies._results import Results

    module = importlib.import_module(f"rosenblatt.studies.{STUDIES[kind]}")
    folder = Path(output) if output is not None else Path("results") / config["name"]
    created = not folder.exists()
    folder.mkdir(parents=True, exist_ok=True)
    # the folder holds one run: its files in manifest.json, an earlier run's removed
    results = Results(folder, _cache_folders(config))
    results.start()
    try:
        module.run(config, folder)
    except BaseException:
        results.stopped()
        # a run refused before writing anything leaves no results folder behind
        if created and folder.is_dir() and not any(folder.iterdir()):
            folder.rmdir()
        raise
    results.finish(kind, str(config.get("name", folder.name)))
    return folder


def _cache_folders(config: dict[str, Any]) -> tuple[Path, ...]:
    """The folders a study caches in (``data.folder``, ``generate:`` outputs): no run's results."""
    data = config.get("data")
    folder = data.get("folder") if isinstance(data, dict) else None
    found = [Path(str(folder)) if folder else Path("data") / str(config.get("name", ""))]
    generate = config.get("generate")
    for entry in generate if isinstance(generate, list) else []:
        if isinstance(entry, dict) and isinstance(entry.get("output"), str):
            found.append(Path(entry["output"]).parent)
    return tuple(found)
