"""The decorrelated ABCD analysis as a coffea processor: features, scores, transforms, histograms.

Per chunk of events, :class:`AnalysisProcessor` computes the dijet features
(:func:`rosenblatt.hep.features.event_table`), evaluates each classifier score
(:func:`rosenblatt.ml.scoring.make_scorer`: a feature column, a TorchScript
model through coffea's ``torch_wrapper``, or a model of ``rosenblatt train``),
applies the fitted transforms to them, and fills only histograms:

``"abcd"``
    per variant (a raw score or a transformed one), a weighted
    :class:`hist.Hist` over ``dataset``, ``x`` and ``y`` (``Variable`` axes
    whose edges are the ABCD cut values ``x0`` and the variant's ``y0``; flow
    bins hold everything outside) and ``process`` (the truth label);
    :func:`rosenblatt.abcd.closure_scan` of it, summed over datasets, gives the
    closure over the whole cut grid;
``"plane"``
    per variant, the same on fine regular ``x`` and ``y`` axes, for the figures;
``"passfail"`` (with ``passfail`` edges)
    per variant, the ABCD histogram's ``y`` axis on the fit's finer bins of
    ``x``: the spectra of ``x`` passing and failing each cut value ``y0``, for
    the pass/fail fit (:mod:`rosenblatt.abcd.passfail`); blinded as the ABCD
    histogram is;
``"replicas"``, ``"resampled"`` (with bootstrap replicas)
    per replica of a transform, its ABCD histogram, and for a keyed replica
    the same with the events' weights times its keyed Poisson counts; with
    ``passfail`` edges each replica's pass/fail histogram also, named
    :func:`passfail_replica` of the replica (the per-bin non-closure's
    bootstrap, :mod:`rosenblatt.abcd.transfer_correction`);
``"cutflow"``
    ``{dataset: {step: events}}`` with the steps :data:`CUTFLOW_STEPS`, where
    ``read`` equals the sum of the others. In a blinded pass the data's events
    in ABCD are counted only outside region A: ``"in ABCD"`` gives way to the
    stages ``"in B (<variant>)"``, ``"in C (<variant>)"`` and ``"in D
    (<variant>)"`` of each blinded variant, and a data set holding data keeps
    of the stages before them only ``read`` (:func:`blind_cutflow`): with every
    loss counted, ``read`` less the other stages would be a variant's A.
``"cutflow_weighted"``
    ``{dataset: {step: sum of weights}}``, the same steps in the sums of the
    events' weights (times the dataset's scale), for the simulation only: a
    data set holding data has none, its weights being its counts.

With ``skim_dir`` each chunk also writes the ``x`` column, its scores, weight,
label and entry of its events below ``x_max`` (those the ABCD plane holds) to a
parquet file of that folder (``"skim"`` lists them): later
passes over these small files fit the transforms without recomputing features
or scores. No per-event array is returned to the driver.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import awkward as ak
import hist
import numpy as np
from numpy.typing import NDArray

from rosenblatt.abcd import cut_axes, process_axis
from rosenblatt.hep.features import JET_RADIUS
from rosenblatt.processors.binned_sums import binned_sums, flow_index
from rosenblatt.processors.events import ParticleBatch, ParticleProcessor, chunk_file_name
from rosenblatt.transforms.ensemble import keyed_poisson_weights
from rosenblatt.typing import BoolArray, FloatArray, Int64Array, IntArray

__all__ = [
    "BLINDED_KEPT_STAGES",
    "BLINDED_REGIONS",
    "CUTFLOW_STEPS",
    "DATA",
    "AnalysisProcessor",
    "PlaneBinning",
    "Variant",
    "abcd_histogram",
    "add_values_to_histogram",
    "blind_cutflow",
    "empty_output",
    "fill_variants",
    "passfail_replica",
    "plane_histogram",
    "region_stage",
    "summed_over_datasets",
    "write_skim",
]

#: cut-flow steps of the analysis: ``read`` = the sum of the others
CUTFLOW_STEPS = ("read", "not selected", "fewer than two jets", "x above x_max", "in ABCD")

#: the ``process`` bin of data (0 is background simulation, 1 signal simulation)
DATA = 2

#: the regions of a blinded variant whose data events the cut flow counts (never A)
BLINDED_REGIONS = ("B", "C", "D")

#: the stages before the ABCD split that a blinded data set keeps: the files' own count
BLINDED_KEPT_STAGES = ("read",)


#: the prefix of a replica's pass/fail histogram among the ``"replicas"`` and ``"resampled"``
PASSFAIL_REPLICA = "passfail:"


def passfail_replica(replica: str) -> str:
    """The name of a replica's pass/fail histogram under ``"replicas"`` and ``"resampled"``.

    Its own name (``<variant>#<k>``) behind :data:`PASSFAIL_REPLICA`, so that
    it is never taken for the replica's ABCD histogram.
    """
    return f"{PASSFAIL_REPLICA}{replica}"


def region_stage(region: str, variant: str) -> str:
    """The cut-flow stage of the data's events in ``region`` of ``variant`` in a blinded pass."""
    return f"in {region} ({variant})"


@dataclass(frozen=True)
class Variant:
    """A score filled into the histograms: a raw score, or a transform of one.

    Attributes
    ----------
    name : str
        Name of the variant (``"score"``, ``"irgi"``, ...).
    score : str
        The score it is computed from (a key of the processor's scorers).
    y0 : tuple of float
        The ABCD cut values on this variant (edges of its ``y`` axis).
    transform : ConditionalCDFTransform or None
        Fitted transform applied as ``transform.transform(x, score)``; ``None``
        fills the raw score.
    y_range : tuple of float
        Range of the fine ``y`` axis of the figures.
    replica_of : str, optional
        For a bootstrap replica of a transform, the variant it varies: only
        its ABCD histogram is filled, under ``"replicas"``, for the closure
        test's covariance.
    keyed_draw : tuple of int, optional
        For a replica fitted with keyed Poisson counts, its ``(seed, draw)``
        (:func:`~rosenblatt.transforms.ensemble.keyed_poisson_weights`): the
        events are also filled with their weights times the same counts,
        under ``"resampled"``, so that events shared with the defining sample
        are reweighted exactly as the replica's fit reweighted them.
    """

    name: str
    score: str
    y0: tuple[float, ...]
    transform: Any = None
    y_range: tuple[float, float] = (0.0, 1.0)
    replica_of: str | None = None
    keyed_draw: tuple[int, int] | None = None


@dataclass(frozen=True)
class PlaneBinning:
    """Regular binning of the fine ``(x, score)`` planes of the figures."""

    x_bins: int = 80
    x_range: tuple[float, float] = (0.0, 10_000.0)
    y_bins: int = 50


def summed_over_datasets(h: hist.Hist[hist.storage.Weight]) -> hist.Hist[hist.storage.Weight]:
    """``h`` summed over its ``dataset`` axis."""
    # hist's type hints do not take the builtin ``sum`` as an index
    histogram: Any = h
    summed: hist.Hist[hist.storage.Weight] = histogram[{"dataset": sum}]
    return summed


def _dataset_axis(dataset: str | None) -> Any:
    return hist.axis.StrCategory(
        [] if dataset is None else [dataset], name="dataset", label="Dataset", growth=True
    )


def abcd_histogram(
    x0: Sequence[float], y0: Sequence[float], *, x_label: str = "x", dataset: str | None = None
) -> hist.Hist[hist.storage.Weight]:
    """An empty ABCD histogram of one variant: dataset, the cut-value axes and the process.

    With ``dataset``, the dataset axis holds that category from the start (a
    chunk's histograms are filled with one dataset).
    """
    return hist.Hist(
        _dataset_axis(dataset),
        *cut_axes(x0, y0, x_label=x_label, y_label="score"),
        process_axis(),
        storage=hist.storage.Weight(),
    )


def plane_histogram(
    binning: PlaneBinning,
    y_range: tuple[float, float],
    *,
    x_label: str = "x",
    dataset: str | None = None,
) -> hist.Hist[hist.storage.Weight]:
    """An empty fine ``(x, score)`` histogram of one variant, per dataset and process."""
    return hist.Hist(
        _dataset_axis(dataset),
        hist.axis.Regular(binning.x_bins, *binning.x_range, name="x", label=x_label),
        hist.axis.Regular(binning.y_bins, *y_range, name="y", label="score"),
        process_axis(),
        storage=hist.storage.Weight(),
    )


def empty_output(
    variants: Sequence[Variant],
    x0: Sequence[float],
    plane: PlaneBinning,
    x_label: str,
    dataset: str | None = None,
    passfail: Sequence[float] | None = None,
) -> dict[str, Any]:
    """The accumulator of no events: empty histograms, cut flow and skim list.

    With ``dataset`` (a chunk's), the histograms' dataset axes hold it from the
    start, so that filling them does not grow the axis. With ``passfail``, the
    edges of the pass/fail fit's bins of ``x``, each variant also gets a
    ``"passfail"`` histogram: its ABCD histogram with these edges on ``x``;
    each bootstrap replica gets one too, under ``"replicas"`` (and a keyed
    one under ``"resampled"``) named :func:`passfail_replica`.
    """
    shown = [v for v in variants if v.replica_of is None]
    replicas = [v for v in variants if v.replica_of is not None]

    def abcd(v: Variant) -> hist.Hist[hist.storage.Weight]:
        return abcd_histogram(x0, v.y0, x_label=x_label, dataset=dataset)

    output: dict[str, Any] = {
        "abcd": {v.name: abcd(v) for v in shown},
        "plane": {
            v.name: plane_histogram(plane, v.y_range, x_label=x_label, dataset=dataset)
            for v in shown
        },
        "cutflow": {},
        "cutflow_weighted": {},
        "skim": [],
    }
    if passfail is not None:
        output["passfail"] = {
            v.name: abcd_histogram(passfail, v.y0, x_label=x_label, dataset=dataset) for v in shown
        }

    def spectra(v: Variant) -> dict[str, hist.Hist[hist.storage.Weight]]:
        if passfail is None:
            return {}
        return {
            passfail_replica(v.name): abcd_histogram(
                passfail, v.y0, x_label=x_label, dataset=dataset
            )
        }

    if replicas:
        output["replicas"] = {v.name: abcd(v) for v in replicas}
        for v in replicas:
            output["replicas"].update(spectra(v))
    resampled = [v for v in replicas if v.keyed_draw is not None]
    if resampled:
        output["resampled"] = {v.name: abcd(v) for v in resampled}
        for v in resampled:
            output["resampled"].update(spectra(v))
    return output


def fill_variants(
    output: dict[str, Any],
    variants: Sequence[Variant],
    *,
    dataset: str,
    x: FloatArray,
    scores: Mapping[str, FloatArray],
    process: Int64Array,
    weight: FloatArray,
    blind: Mapping[str, tuple[float, float]] | None = None,
) -> dict[str, int]:
    """Fill every variant's ABCD, plane and (where present) pass/fail histograms with the events.

    With ``blind``, the data events (``process == DATA``) inside a variant's
    signal region ``x >= x0, y >= y0`` (its ``(x0, y0)`` in ``blind``) are left
    out of that variant's histograms: they are never filled, so no output
    holds them. A variant absent from ``blind`` has no signal region to keep
    apart, and its data would hold the other variants' region A: no data
    event is filled into it.

    Returns
    -------
    dict of str to int
        With ``blind``, the data events filled into the regions B, C and D of
        each variant of ``blind`` (keys :func:`region_stage`); empty without.
    """
    regions: dict[str, int] = {}
    data = None if blind is None else process == DATA
    x_bins = {
        name: flow_index(h.axes["x"], x)
        for name in ("abcd", "plane", "passfail", "replicas", "resampled")
        for h in list(output.get(name, {}).values())[:1]
    }
    # a replica's pass/fail histogram has the pass/fail histograms' bins of x
    spectra = {"replicas": "passfail", "resampled": "passfail"}
    for kind in spectra:
        for name, h in output.get(kind, {}).items():
            if "passfail" not in x_bins and name.startswith(PASSFAIL_REPLICA):
                x_bins["passfail"] = flow_index(h.axes["x"], x)
    groups = _process_groups(process)
    for variant in variants:
        score = values = scores[variant.score]
        if variant.transform is not None:
            values = np.asarray(variant.transform.transform(x, score), dtype=np.float64)
        if variant.keyed_draw is not None:
            counts = keyed_poisson_weights(x, score, *variant.keyed_draw)
            for h, x_bin in _histograms(output, "resampled", variant.name, x_bins, spectra):
                _add_groups(h, dataset, groups, x_bin, values, weight * counts)
        keep = None
        if blind is not None and data is not None:
            keep = _blinded_keep(variant, blind.get(variant.name), data, x, values, regions)
        kinds = ("abcd", "plane", "passfail") if variant.replica_of is None else ("replicas",)
        for name in (kind for kind in kinds if kind in output):
            for h, x_bin in _histograms(output, name, variant.name, x_bins, spectra):
                if keep is None:
                    _add_groups(h, dataset, groups, x_bin, values, weight)
                else:
                    _add_groups(
                        h,
                        dataset,
                        _process_groups(process[keep]),
                        *_pick(keep, x_bin, values, weight),
                    )
    return regions


def _histograms(
    output: Mapping[str, Any],
    kind: str,
    variant: str,
    x_bins: Mapping[str, IntArray],
    spectra: Mapping[str, str],
) -> list[tuple[hist.Hist[hist.storage.Weight], IntArray]]:
    """A variant's histograms of ``kind`` with the events' bins of ``x`` in each.

    Its own, and where ``kind`` has one (a replica's), its pass/fail
    histogram (:func:`passfail_replica`) on the bins of ``spectra[kind]``.
    """
    found = [(output[kind][variant], x_bins[kind])]
    extra = output[kind].get(passfail_replica(variant)) if kind in spectra else None
    if extra is not None:
        found.append((extra, x_bins[spectra[kind]]))
    return found


def _blinded_keep(
    variant: Variant,
    box: tuple[float, float] | None,
    data: BoolArray,
    x: FloatArray,
    values: FloatArray,
    regions: dict[str, int],
) -> BoolArray:
    """The events of a blinded pass filled into ``variant``; its data's B, C, D into ``regions``.

    With its cut ``box``, every event but the data in ``x >= x0, y >= y0``;
    without, every event but the data.
    """
    if box is None:
        return ~data
    in_x, in_y = x >= box[0], values >= box[1]
    if variant.replica_of is None:
        for region, mine in zip(
            BLINDED_REGIONS, (in_x & ~in_y, ~in_x & in_y, ~in_x & ~in_y), strict=True
        ):
            regions[region_stage(region, variant.name)] = int(np.count_nonzero(data & mine))
    return ~(data & in_x & in_y)


def blind_cutflow(
    cutflow: dict[str, int], regions: Mapping[str, int], *, n_data: int, data: bool
) -> None:
    """Make one chunk's cut flow of a blinded pass hold no count of the data in region A.

    Parameters
    ----------
    cutflow : dict of str to int
        The chunk's stages, ``"in ABCD"`` among them; changed in place.
    regions : mapping of str to int
        The data's events in B, C and D of each blinded variant
        (:func:`fill_variants`).
    n_data : int
        The data events among those ``"in ABCD"``.
    data : bool
        Whether the chunk's dataset is data.

    Notes
    -----
    A chunk of data (or holding data events) loses its data from ``"in
    ABCD"``, which stays only while it counts other events, and gains the
    stages of ``regions``. It also loses the stages of the events lost before
    the ABCD split (not selected, above ``x_max``, ...), keeping only
    :data:`BLINDED_KEPT_STAGES`: the stages would otherwise tile ``read``, and
    ``read`` less all of them would be the data's count in A.
    """
    if not (data or n_data):
        return
    others = cutflow.pop("in ABCD") - n_data
    for stage in [s for s in cutflow if s not in BLINDED_KEPT_STAGES]:
        del cutflow[stage]
    if others:
        cutflow["in ABCD"] = others
    cutflow.update(regions)


def add_values_to_histogram(
    h: hist.Hist[hist.storage.Weight],
    dataset: str,
    x_bin: IntArray,
    y: FloatArray,
    process: Int64Array,
    weight: FloatArray,
) -> None:
    """Add weighted events to a ``(dataset, x, y, process)`` histogram of weighted storage.

    ``x_bin`` is the events' flow-bin index along the ``x`` axis
    (:func:`~rosenblatt.processors.binned_sums.flow_index`), ``y`` their values
    along the ``y`` axis.
    The result is that of ``h.fill``: the sums of weights and of squared
    weights of every ``(x, y)`` bin (once per process present) are added to
    the histogram's view, without per-event work on the two category axes,
    which are constant over a chunk.
    """
    _add_groups(h, dataset, _process_groups(process), x_bin, y, weight)


def _add_groups(
    h: hist.Hist[hist.storage.Weight],
    dataset: str,
    groups: list[tuple[int, BoolArray | None]],
    x_bin: IntArray,
    y: FloatArray,
    weight: FloatArray,
) -> None:
    """:func:`add_values_to_histogram` with the events' process groups already found."""
    shape = (len(h.axes["x"]) + 2, len(h.axes["y"]) + 2)
    for label, mine in groups:
        x_mine, y_mine, weight_mine = _pick(mine, x_bin, y, weight)
        sums = binned_sums(x_mine, flow_index(h.axes["y"], y_mine), weight_mine, shape)
        _add_sums(h, dataset, label, sums)


def _process_groups(process: Int64Array) -> list[tuple[int, BoolArray | None]]:
    """Each process label present, with the mask of its events (``None``: all of them)."""
    first = int(process[0]) if len(process) else 0
    # a view of one value (stride 0) holds one label without looking at every event
    if not len(process) or process.strides[0] == 0 or (process == first).all():
        return [(first, None)]
    return [(int(label), process == label) for label in np.unique(process)]


def _pick(mine: BoolArray | None, *arrays: NDArray[Any]) -> tuple[NDArray[Any], ...]:
    return arrays if mine is None else tuple(a[mine] for a in arrays)


def _add_sums(
    h: hist.Hist[hist.storage.Weight],
    dataset: str,
    label: int,
    sums: tuple[FloatArray, FloatArray],
) -> None:
    """Add per-bin sums of weights and squared weights to the ``(dataset, label)`` slice."""
    if dataset not in h.axes["dataset"] or label not in h.axes["process"]:
        # a zero-weight entry grows the category axes and adds nothing
        h.fill(dataset=dataset, x=[0.0], y=[0.0], process=[label], weight=[0.0])
    view: Any = h.view(flow=True)
    d, p = h.axes["dataset"].index(dataset), h.axes["process"].index(label)
    view.value[d, :, :, p] += sums[0]
    view.variance[d, :, :, p] += sums[1]


def write_skim(
    path: Path,
    x: FloatArray,
    scores: Mapping[str, FloatArray],
    label: Int64Array,
    weight: FloatArray,
    entry: Int64Array,
) -> str:
    """Write one chunk's skim (``x``, ``score_<name>``, weight, label, entry) as parquet.

    Written under a temporary name and renamed, so a skim is whole or absent.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    path.parent.mkdir(parents=True, exist_ok=True)
    columns = {
        "x": x,
        **{f"score_{name}": values for name, values in scores.items()},
        "weight": weight,
        "label": label,
        "entry": entry,
    }
    partial = path.with_name(f".{path.name}.{os.getpid()}.partial")
    pq.write_table(pa.table(columns), partial)
    os.replace(partial, path)
    return str(path)


@dataclass
class AnalysisProcessor(ParticleProcessor):
    """Features, scores, transforms and ABCD histograms of particle events.

    Parameters
    ----------
    scorers : mapping of str to callable
        Score name -> a picklable callable from the event table (awkward
        records) to one float per event.
    variants : sequence of Variant
        What is filled: raw scores and transforms of them.
    x0 : sequence of float
        The ABCD cut values on ``x`` (edges of the ``x`` axes).
    x : str, default "mjj"
        Column of the event table that is the protected observable.
    x_max : float, optional
        Events with ``x >= x_max`` are counted in the cut flow, neither filled nor skimmed.
    plane : PlaneBinning
        Binning of the fine histograms.
    entries : mapping of str to array of int, optional
        Per file, the entries to analyse (all others are counted as ``not
        selected``); files absent from the mapping are analysed whole.
    skim_dir : str, optional
        Folder of the per-chunk skims (see the module docstring).
    processes : mapping of str to int, optional
        Per dataset, the ``process`` bin of its events (0 background, 1
        signal, :data:`DATA`); datasets absent use the files' labels.
    scales : mapping of str to float, optional
        Per dataset, the factor of its weights (normalisation to a luminosity).
    blind : mapping of str to (float, float), optional
        Per variant, the cut ``(x0, y0)`` whose signal region is blinded in data;
        a variant absent gets no data (see :func:`fill_variants`), and the data's
        cut flow counts only B, C and D (:func:`blind_cutflow`).
    passfail : sequence of float, optional
        Edges of the pass/fail fit's bins of ``x``: each variant also fills a
        ``"passfail"`` histogram (see the module docstring).
    radius : float, default 1.0
        Anti-kT jet radius.
    skip_bad_chunks : bool, default False
        Record unreadable chunks instead of failing.
    """

    scorers: Mapping[str, Any]
    variants: Sequence[Variant]
    x0: Sequence[float]
    x: str = "mjj"
    x_max: float | None = None
    plane: PlaneBinning = field(default_factory=PlaneBinning)
    entries: Mapping[str, Int64Array] | None = None
    skim_dir: str | None = None
    processes: Mapping[str, int] | None = None
    scales: Mapping[str, float] | None = None
    blind: Mapping[str, tuple[float, float]] | None = None
    passfail: Sequence[float] | None = None
    radius: float = JET_RADIUS
    skip_bad_chunks: bool = False

    def __post_init__(self) -> None:
        unknown = sorted({v.score for v in self.variants} - set(self.scorers))
        if unknown:
            raise ValueError(
                f"variants: no scorer named {unknown}; scorers: {sorted(self.scorers)}"
            )
        names = [v.name for v in self.variants]
        if len(set(names)) != len(names):
            raise ValueError(f"variants: names must be distinct, got {names}")
        for variant in self.variants:
            cut_axes(self.x0, variant.y0)

    def empty_output(self, dataset: str | None = None) -> dict[str, Any]:
        """The accumulator of no events: empty histograms and cut flow (see :func:`empty_output`)."""
        return empty_output(self.variants, self.x0, self.plane, self.x, dataset, self.passfail)

    def process_batch(self, batch: ParticleBatch) -> dict[str, Any]:
        """Return the histograms, cut flow and skim file of one batch of events."""
        n_read = len(batch)
        read = batch
        selected = np.ones(n_read, dtype=bool)
        if self.entries is not None and batch.file in self.entries:
            selected = np.isin(batch.entry, self.entries[batch.file])
            batch = batch.select(selected)
        table, counts = batch.event_table(self.radius)
        x = np.asarray(ak.to_numpy(table[self.x]), dtype=np.float64)
        scores = {
            name: self._score(name, scorer, table, batch) for name, scorer in self.scorers.items()
        }
        inside = np.ones(len(x), dtype=bool) if self.x_max is None else x < self.x_max
        cutflow = {
            "read": n_read,
            "not selected": n_read - len(batch),
            "fewer than two jets": counts["fewer than two jets"],
            "x above x_max": int(np.count_nonzero(~inside)),
            "in ABCD": int(np.count_nonzero(inside)),
        }
        output = self.empty_output(batch.dataset)
        output["cutflow"] = {batch.dataset: cutflow}
        label = np.asarray(ak.to_numpy(table["label"]), dtype=np.int64)
        if self.processes is not None and batch.dataset in self.processes:
            label = np.full(len(label), self.processes[batch.dataset], dtype=np.int64)
        weight = np.asarray(ak.to_numpy(table["weight"]), dtype=np.float64)
        scale = 1.0 if self.scales is None else self.scales.get(batch.dataset, 1.0)
        weight = weight * scale
        data = (self.processes or {}).get(batch.dataset) == DATA
        if not (data or np.any(label == DATA) or np.any(read.label == DATA)):
            analysed = np.isin(read.entry, np.asarray(ak.to_numpy(table["entry"])))
            read_weight = read.weight * scale
            output["cutflow_weighted"] = {
                batch.dataset: {
                    "read": float(read_weight.sum()),
                    "not selected": float(read_weight[~selected].sum()),
                    "fewer than two jets": float(read_weight[selected & ~analysed].sum()),
                    "x above x_max": float(weight[~inside].sum()),
                    "in ABCD": float(weight[inside].sum()),
                }
            }
        regions = fill_variants(
            output,
            self.variants,
            dataset=batch.dataset,
            x=x[inside],
            scores={name: values[inside] for name, values in scores.items()},
            process=label[inside],
            weight=weight[inside],
            blind=self.blind,
        )
        if self.blind is not None:
            blind_cutflow(
                cutflow,
                regions,
                n_data=int(np.count_nonzero(label[inside] == DATA)),
                data=data,
            )
        if self.skim_dir is not None:
            entry = np.asarray(ak.to_numpy(table["entry"]), dtype=np.int64)
            name = chunk_file_name(batch.dataset, batch.file, batch.start, batch.stop)
            output["skim"] = [
                write_skim(
                    Path(self.skim_dir) / name,
                    x[inside],
                    {key: values[inside] for key, values in scores.items()},
                    label[inside],
                    weight[inside],
                    entry[inside],
                )
            ]
        return output

    def _score(self, name: str, scorer: Any, table: ak.Array, batch: ParticleBatch) -> FloatArray:
        values = np.asarray(scorer(table), dtype=np.float64)
        if values.shape != (len(table),):
            raise ValueError(
                f"score {name!r}: expected one value per event ({len(table)}), got shape "
                f"{values.shape} ({batch.file}, entries {batch.start}-{batch.stop})"
            )
        bad = ~np.isfinite(values)
        if bad.any():
            entry = int(np.asarray(ak.to_numpy(table["entry"]))[bad][0])
            raise ValueError(
                f"score {name!r}: {int(bad.sum())} NaN or infinite value(s) in {batch.file} "
                f"(first at entry {entry})"
            )
        return values
