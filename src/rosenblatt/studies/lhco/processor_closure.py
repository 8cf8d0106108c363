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

__all__ = [
    "COUNT_TOLERANCE",
    "check_processor_counts",
    "closures_in_processor",
    "entries_of_testing_events",
]

log = logging.getLogger("rosenblatt.lhco")

#: the largest difference allowed between a count of the processor and the in-memory one, as a
#: fraction of the histogram's largest count: the counts are sums of weights, added in another
#: order by the processor's chunks, so weighted sums may differ by their rounding and no more
COUNT_TOLERANCE = 1e-9

#: the names of the process axis's bins
_PROCESSES = {0: "background", 1: "signal"}


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
    events, cut by cut (:func:`check_processor_counts`).

    Raises
    ------
    ValueError
        Where a count of the processor differs from the in-memory one by more
        than :data:`COUNT_TOLERANCE` allows.
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
    summed = {name: h[{"dataset": sum}] for name, h in output["abcd"].items()}
    closures = {name: closure_scan(h) for name, h in summed.items()}
    differences = check_processor_counts(summed, in_memory)
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


def check_processor_counts(
    processor: dict[str, Hist[Weight]], in_memory: dict[str, Hist[Weight]]
) -> dict[str, float]:
    """Per classifier, the largest difference of the processor's ABCD counts from the in-memory ones.

    Parameters
    ----------
    processor : dict
        Per classifier, the processor's ``(x, y, process)`` ABCD histogram
        (its datasets summed).
    in_memory : dict
        Per classifier, the histogram of the same events filled in memory, on
        the same axes.

    Returns
    -------
    dict
        Per classifier, the largest absolute difference of a count (flow bins
        included); each is within the tolerance.

    Raises
    ------
    ValueError
        Where a classifier's histograms have different bins, or a count differs
        by more than :data:`COUNT_TOLERANCE` times the histogram's largest
        count. The message names the classifier with the largest difference,
        that difference and its cell (the ``mjj`` and score intervals, the
        process), then the other classifiers that differ.
    """
    differences: dict[str, float] = {}
    cells: dict[str, str] = {}
    failing: list[str] = []
    for name, h in processor.items():
        got = np.asarray(h.values(flow=True), dtype=np.float64)
        expected = np.asarray(in_memory[name].values(flow=True), dtype=np.float64)
        if got.shape != expected.shape:
            msg = (
                f"the analysis processor's ABCD histogram of {name} has bins of shape {got.shape}, "
                f"the in-memory one {expected.shape}: they cannot be compared"
            )
            raise ValueError(msg)
        gap = np.abs(got - expected)
        where = np.unravel_index(int(np.argmax(gap)), gap.shape)
        differences[name] = float(gap[where])
        cells[name] = _cell(h, where)
        scale = max(
            float(np.max(np.abs(got), initial=0.0)), float(np.max(np.abs(expected), initial=0.0))
        )
        if differences[name] > COUNT_TOLERANCE * scale:
            failing.append(name)
    if failing:
        failing.sort(key=lambda n: differences[n], reverse=True)
        worst = failing[0]
        others = ", ".join(f"{n} by {differences[n]:.6g}" for n in failing[1:])
        also = f"; {others} too" if others else ""
        msg = (
            f"the analysis processor's ABCD counts of the testing sample differ from the in-memory "
            f"ones: {worst} by {differences[worst]:.6g} at {cells[worst]}{also}"
        )
        raise ValueError(msg)
    return differences


def _cell(h: Hist[Weight], index: tuple[Any, ...]) -> str:
    """The cell of an ABCD histogram at ``index`` (flow bins counted): its intervals and process."""
    x, y, process = (int(i) for i in index)
    label = int(h.axes[2].value(process))
    return (
        f"mjj {_interval(h.axes[0], x)} GeV, score {_interval(h.axes[1], y)}, "
        f"{_PROCESSES.get(label, f'process {label}')}"
    )


def _interval(axis: Any, index: int) -> str:
    """The interval of a cut-value axis's bin ``index``, counted with its underflow bin."""
    edges = np.asarray(axis.edges, dtype=np.float64)
    k = index - 1 if axis.traits.underflow else index
    if k < 0:
        return f"below {edges[0]:g}"
    if k >= len(edges) - 1:
        return f"at or above {edges[-1]:g}"
    return f"in [{edges[k]:g}, {edges[k + 1]:g})"
