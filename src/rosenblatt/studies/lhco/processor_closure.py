"""The LHCO testing sample's ABCD closure computed again from the event files, by the analysis processor."""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from rosenblatt.abcd import ClosureScan, closure_scan
from rosenblatt.studies.lhco.config import LhcoConfig
from rosenblatt.studies.lhco.results import TrainedModel
from rosenblatt.studies.lhco.summary import ProcessorPath
from rosenblatt.transforms import ConditionalCDFTransform

if TYPE_CHECKING:
    from hist import Hist
    from hist.storage import Weight

__all__ = ["closures_in_processor", "entries_of_testing_events"]

log = logging.getLogger("rosenblatt.lhco")


def entries_of_testing_events(test: Any, read: list[str]) -> dict[str, Any]:
    """The entries of the testing events in each file read, keyed by its path as read.

    The feature table names each event's file as it was written; the data
    folder may since be reached by another path (a link, a relative path, a
    folder moved), so a file is matched by its resolved path, else by its
    name. A file read that holds no testing event gets no entry, never all of
    its events.

    Raises
    ------
    ValueError
        Where a file of the testing events matches no file read.
    """
    files = np.asarray(test["file"], dtype=str)
    entries = np.asarray(test["entry"], dtype=np.int64)
    resolved = {os.path.realpath(path): path for path in read}
    names: dict[str, list[str]] = {}
    for path in read:
        names.setdefault(os.path.basename(path), []).append(path)
    selection = {path: np.empty(0, dtype=np.int64) for path in read}
    for written in np.unique(files):
        match = resolved.get(os.path.realpath(written))
        if match is None and len(names.get(os.path.basename(written), [])) == 1:
            match = names[os.path.basename(written)][0]
        if match is None:
            raise ValueError(
                f"the testing events come from {written}, which is none of the files read "
                f"({', '.join(sorted(read))}): generate the events again or restore the file"
            )
        selection[match] = np.sort(entries[files == written])
    return selection


def closures_in_processor(
    cfg: LhcoConfig,
    paths: dict[str, Path],
    test: Any,
    models: dict[str, TrainedModel | None],
    transforms: dict[str, ConditionalCDFTransform],
    in_memory: dict[str, Hist[Weight]],
) -> tuple[dict[str, ClosureScan], ProcessorPath]:
    """The testing sample's ABCD closure, computed by the analysis processor from the event files.

    The processor reads the events of the testing sample again, computes their
    features, scores them with the saved models (TorchScript), applies the
    fitted transforms and fills the ABCD histograms; the closure comes from
    those. The counts are compared with the in-memory histograms of the same
    events, cut by cut.
    """
    from rosenblatt.ml.scoring import make_scorer
    from rosenblatt.processors.analysis import AnalysisProcessor, Variant
    from rosenblatt.processors.runner import make_executor, run_processor

    scorers = {
        name: make_scorer({"model": model.path})
        for name, model in models.items()
        if model is not None
    }
    y0 = tuple(cfg.cuts.y0)
    variants = [Variant(name, name, y0) for name in scorers]
    variants += [Variant(name, "baseline", y0, transform=t) for name, t in transforms.items()]
    selection = entries_of_testing_events(test, [str(p) for p in paths.values()])
    with make_executor(cfg.features.executor, cfg.features.workers) as pool:
        output = run_processor(
            {name: [str(p)] for name, p in paths.items()},
            AnalysisProcessor(
                scorers=scorers,
                variants=tuple(variants),
                x0=tuple(cfg.cuts.x0),
                x_max=cfg.cuts.mjj_max,
                entries=selection,
            ),
            pool,
            chunksize=cfg.features.chunksize,
        )
    closures = {name: closure_scan(h[{"dataset": sum}]) for name, h in output["abcd"].items()}
    differences = {}
    for name, h in output["abcd"].items():
        got = h[{"dataset": sum}].values(flow=True)
        expected = in_memory[name].values(flow=True)
        differences[name] = float(np.max(np.abs(got - expected)))
    analysed = sum(counts["in ABCD"] for counts in output["cutflow"].values())
    log.info(
        "testing sample through the analysis processor: %d events in ABCD; largest count difference from memory %s",
        analysed,
        differences,
    )
    return closures, {
        "events_in_abcd": int(analysed),
        "max_count_difference": differences,
        "cutflow": output["cutflow"],
    }
