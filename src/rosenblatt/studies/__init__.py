"""The studies as functions driven by a configuration, one subpackage each, and their registry.

Each study is a subpackage of this package (:mod:`rosenblatt.studies.abcd`, the analysis
over a user's own files, then the paper's: :mod:`~rosenblatt.studies.lhco`,
:mod:`~rosenblatt.studies.blobs`, :mod:`~rosenblatt.studies.fairness`,
:mod:`~rosenblatt.studies.toys`, :mod:`~rosenblatt.studies.passfail_toys`) with its
configuration, run, summary and report modules; what they share is in
:mod:`rosenblatt.studies._common`. :data:`STUDIES` holds one :class:`Study` per ``study:``
key of a configuration, and everything that differs by study (the module that runs it, its
configuration class, the extras it needs, whether it caches) is read from there. A study's
modules are imported only when it runs.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from rosenblatt._extras import require

__all__ = ["STUDIES", "Study", "run_study", "study_extras"]


@dataclass(frozen=True)
class Study:
    """One study: what a configuration's ``study:`` key names.

    Attributes
    ----------
    name
        The ``study:`` key of its configurations.
    module
        The module whose ``run(config, folder)`` runs it.
    config
        Its configuration dataclass, as ``module:class`` (imported on first use).
    extras
        The extras every run of it needs.
    caches
        Whether it caches events, features and models in ``data.folder`` (a run holds
        that folder's lock).
    """

    name: str
    module: str
    config: str
    extras: tuple[str, ...] = ("study",)
    caches: bool = False

    def load(self) -> ModuleType:
        """The module that runs the study, imported now."""
        return importlib.import_module(self.module)

    def config_class(self) -> type:
        """The configuration dataclass the study parses its file into, imported now."""
        module, name = self.config.split(":")
        cls: type = getattr(importlib.import_module(module), name)
        return cls

    def run(self, config: dict[str, Any], folder: Path) -> object:
        """Run the study of ``config`` into ``folder``; return what its ``run`` returns."""
        result: object = self.load().run(config, folder)
        return result


_PACKAGE = "rosenblatt.studies"

#: ``study:`` key of a configuration -> its study; the analysis over a user's files first
STUDIES: Mapping[str, Study] = {
    study.name: study
    for study in (
        Study(
            "abcd",
            f"{_PACKAGE}.abcd.study",
            f"{_PACKAGE}.abcd.config:AbcdConfig",
            ("study", "hep"),
            caches=True,
        ),
        Study(
            "lhco",
            f"{_PACKAGE}.lhco.study",
            f"{_PACKAGE}.lhco.config:LhcoConfig",
            ("study", "hep", "ml"),
            caches=True,
        ),
        Study(
            "lhco-2d",
            f"{_PACKAGE}.lhco.study_2d",
            f"{_PACKAGE}.lhco.config_2d:Lhco2dConfig",
            ("study", "hep", "ml"),
            caches=True,
        ),
        Study("blobs", f"{_PACKAGE}.blobs.study", f"{_PACKAGE}.blobs.config:BlobsConfig"),
        Study(
            "fairness",
            f"{_PACKAGE}.fairness.study",
            f"{_PACKAGE}.fairness.config:FairnessConfig",
            ("study", "fairness"),
        ),
        Study(
            "toys",
            f"{_PACKAGE}.toys.study",
            f"{_PACKAGE}.toys.config:ToysConfig",
            ("study", "stats"),
        ),
        Study(
            "passfail-toys",
            f"{_PACKAGE}.passfail_toys.study",
            f"{_PACKAGE}.passfail_toys.config:PassfailToysConfig",
        ),
    )
}

#: a score of the abcd study given as ``{kind: ...}`` -> the extra it needs beside
_SCORE_EXTRAS = {"torchscript": "ml", "model": "ml", "xgboost": "xgboost"}


def study_extras(config: dict[str, Any]) -> list[str]:
    """The extras a configuration's study needs (its kind's, and its score's).

    Optional parts that a study leaves out when their extra is missing (pyhf's
    likelihood, the conditional flow among the peers) are not counted.
    """
    kind = config.get("study")
    study = STUDIES.get(kind) if isinstance(kind, str) else None
    extras = list(study.extras if study is not None else ("study",))
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

    study = STUDIES[kind]
    study.load()  # imported before the folder is made: a study that cannot load leaves none
    folder = Path(output) if output is not None else Path("results") / config["name"]
    created = not folder.exists()
    folder.mkdir(parents=True, exist_ok=True)
    # the folder holds one run: its files in manifest.json, an earlier run's removed
    results = Results(folder, _cache_folders(config))
    results.start()
    try:
        study.run(config, folder)
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
