"""The decorrelated ABCD analysis of the user's own columns, as a coffea processor.

Per chunk of NanoEvents (``BaseSchema`` for flat ntuples, ``NanoAODSchema``
for NanoAOD), :class:`ColumnarAnalysisProcessor` evaluates the configured
quantities (:mod:`rosenblatt.processors.quantities`): the protected
observable ``x``, the classifier score and the dataset's weight; applies the
dataset's normalisation and the transforms, and fills the same histograms as
the particle-level :class:`~rosenblatt.processors.analysis.AnalysisProcessor`
(``"abcd"``, ``"plane"``, ``"cutflow"``, ``"cutflow_weighted"``, per-chunk
skims of the events below ``x_max`` with ``skim_dir``).

Cut flow per dataset (:data:`COLUMNAR_CUTFLOW_STEPS`, ``read`` = the sum of
the others): events outside the selection, events lacking an object that
``x``, the score or the weight reads (an index beyond the collection, fewer
than two jets), events at or above ``x_max``, and events filled. In a blinded
pass the data's events filled are counted only outside region A, in B, C and
D of each blinded variant (:func:`~rosenblatt.processors.analysis.blind_cutflow`).
The simulation's datasets also sum their weights through the same steps
(``"cutflow_weighted"``); data has no weighted cut flow.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from rosenblatt._extras import optional_imports
from rosenblatt.exceptions import QuantityError
from rosenblatt.processors.analysis import (
    DATA,
    PlaneBinning,
    Variant,
    blind_cutflow,
    empty_output,
    fill_variants,
    write_skim,
)
from rosenblatt.processors.events import chunk_file_name, unreadable_chunk
from rosenblatt.processors.quantities import Quantity, passes_selection
from rosenblatt.typing import BoolArray, FloatArray

with optional_imports(__name__):
    from coffea import processor

__all__ = ["COLUMNAR_CUTFLOW_STEPS", "ColumnarAnalysisProcessor"]

#: cut-flow steps of the analysis of columns: ``read`` = the sum of the others
COLUMNAR_CUTFLOW_STEPS = ("read", "not selected", "missing objects", "x above x_max", "in ABCD")


@dataclass
class ColumnarAnalysisProcessor(processor.ProcessorABC):  # type: ignore[misc]  # coffea: untyped
    """Quantities, transforms and ABCD histograms of the user's events.

    Parameters
    ----------
    x : Quantity
        The protected observable.
    scores : mapping of str to Quantity
        Score name -> the classifier score.
    variants : sequence of Variant
        What is filled: raw scores and transforms of them.
    x0 : sequence of float
        The ABCD cut values on ``x``.
    weights : mapping of str to Quantity or None
        Per dataset, its event weight (absent or ``None``: unit weights).
    processes : mapping of str to int
        Per dataset, the ``process`` bin of its events.
    scales : mapping of str to float, optional
        Per dataset, the factor of its weights.
    selection : Quantity, optional
        Events where it is zero are counted as ``not selected``.
    selected_datasets : sequence of str, optional
        The datasets the selection applies to (default: all).
    x_max : float, optional
        Events with ``x >= x_max`` are counted in the cut flow, neither filled nor skimmed.
    x_label : str
        Label of the ``x`` axes.
    plane : PlaneBinning
        Binning of the fine histograms.
    blind : mapping of str to (float, float), optional
        Per variant, the cut whose signal region is blinded in data; a variant
        absent gets no data, and the data's cut flow counts only B, C and D.
    passfail : sequence of float, optional
        Edges of the pass/fail fit's bins of ``x``: each variant also fills a
        ``"passfail"`` histogram.
    skim_dir : str, optional
        Folder of the per-chunk skims.
    skip_bad_chunks : bool, default False
        Record unreadable chunks instead of failing.
    """

    x: Quantity
    scores: Mapping[str, Quantity]
    variants: Sequence[Variant]
    x0: Sequence[float]
    weights: Mapping[str, Quantity | None] = field(default_factory=dict)
    processes: Mapping[str, int] = field(default_factory=dict)
    scales: Mapping[str, float] | None = None
    selection: Quantity | None = None
    selected_datasets: Sequence[str] | None = None
    x_max: float | None = None
    x_label: str = "x"
    plane: PlaneBinning = field(default_factory=PlaneBinning)
    blind: Mapping[str, tuple[float, float]] | None = None
    passfail: Sequence[float] | None = None
    skim_dir: str | None = None
    skip_bad_chunks: bool = False

    def empty_output(self, dataset: str | None = None) -> dict[str, Any]:
        """The accumulator of no events (see :func:`~rosenblatt.processors.analysis.empty_output`)."""
        return empty_output(
            self.variants, self.x0, self.plane, self.x_label, dataset, self.passfail
        )

    def process(self, events: Any) -> dict[str, Any]:
        """Return the histograms, cut flow and skim file of one chunk of events."""
        metadata = events.metadata
        dataset, filename = str(metadata["dataset"]), str(metadata["filename"])
        start = int(metadata.get("entrystart", 0))
        stop = int(metadata.get("entrystop", start + len(events)))
        try:
            columns = self._columns(events, dataset, filename, start)
        except QuantityError as err:
            if not self.skip_bad_chunks:
                raise QuantityError(f"{filename} (dataset {dataset}): {err}") from None
            return unreadable_chunk(dataset, filename, start, stop, err)
        x, scores, weight, selected, present = columns
        n_read = len(x)
        usable = selected & present
        inside = usable.copy()
        if self.x_max is not None:
            inside &= x < self.x_max
        output = self.empty_output(dataset)
        output["cutflow"] = {
            dataset: {
                "read": n_read,
                "not selected": int(np.count_nonzero(~selected)),
                "missing objects": int(np.count_nonzero(selected & ~present)),
                "x above x_max": int(np.count_nonzero(usable & ~inside)),
                "in ABCD": int(np.count_nonzero(inside)),
            }
        }
        data = self.processes.get(dataset, 0) == DATA
        if not data:
            # an event without a finite weight (outside the selection, or lacking what
            # its weight reads) adds nothing to the sums
            summed = np.where(np.isfinite(weight), weight, 0.0)
            output["cutflow_weighted"] = {
                dataset: {
                    "read": float(summed.sum()),
                    "not selected": float(summed[~selected].sum()),
                    "missing objects": float(summed[selected & ~present].sum()),
                    "x above x_max": float(summed[usable & ~inside].sum()),
                    "in ABCD": float(summed[inside].sum()),
                }
            }
        # one process per dataset: a read-only view of one value, not an array per chunk
        process = np.broadcast_to(np.int64(self.processes.get(dataset, 0)), (n_read,))
        n_inside = output["cutflow"][dataset]["in ABCD"]

        def kept(values: NDArray[Any]) -> NDArray[Any]:
            return values if n_inside == n_read else values[inside]

        regions = fill_variants(
            output,
            self.variants,
            dataset=dataset,
            x=kept(x),
            scores={name: kept(values) for name, values in scores.items()},
            process=kept(process),
            weight=kept(weight),
            blind=self.blind,
        )
        if self.blind is not None:
            n_data = n_inside if data else 0
            blind_cutflow(output["cutflow"][dataset], regions, n_data=n_data, data=data)
        if self.skim_dir is not None:
            name = chunk_file_name(dataset, filename, start, stop)
            output["skim"] = [
                write_skim(
                    Path(self.skim_dir) / name,
                    x[inside],
                    {k: v[inside] for k, v in scores.items()},
                    process[inside],
                    weight[inside],
                    start + np.flatnonzero(inside),
                )
            ]
        return output

    def _columns(
        self, events: Any, dataset: str, filename: str, start: int
    ) -> tuple[
        FloatArray,
        dict[str, FloatArray],
        FloatArray,
        BoolArray,
        BoolArray,
    ]:
        """``x``, the scores, the weight, selected and present of every event."""
        n = len(events)
        selected = np.ones(n, dtype=bool)
        applies = self.selected_datasets is None or dataset in self.selected_datasets
        if self.selection is not None and applies:
            selected = passes_selection(*self.selection.evaluate(events))
        x, present = self.x.evaluate(events)
        scores = {}
        for name, quantity in self.scores.items():
            scores[name], ok = quantity.evaluate(events)
            present &= ok
        weight = np.ones(n, dtype=np.float64)
        weight_quantity = self.weights.get(dataset)
        if weight_quantity is not None:
            weight, ok = weight_quantity.evaluate(events)
            present &= ok
        if self.scales is not None:
            weight = weight * self.scales.get(dataset, 1.0)
        for what, values in (("x", x), *scores.items(), ("weight", weight)):
            if np.isfinite(values).all():
                continue
            bad = selected & present & ~np.isfinite(values)
            if bad.any():
                raise QuantityError(
                    f"{what}: {int(bad.sum())} NaN or infinite value(s) "
                    f"(first at entry {start + int(np.flatnonzero(bad)[0])})"
                )
        return x, scores, weight, selected, present

    def postprocess(self, accumulator: dict[str, Any]) -> dict[str, Any]:
        """Return the merged accumulator unchanged."""
        return accumulator
