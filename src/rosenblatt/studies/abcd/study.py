"""The decorrelated ABCD analysis over file sets (``study: abcd``), as coffea workloads.

Steps, each a pass of coffea processors over files (see ``configs/abcd-example.yaml``):

1. ``generate`` (optional): the event files the configuration names, when missing;
2. ``score``: the defining background files are read, their features computed
   and scored; each chunk writes a small skim ``(x, score, weight)``;
3. ``fit``: each transform is fitted on the skims — IRGI and GridKDE with fixed
   parameters in the workers by :class:`rosenblatt.MergeableFit`, KDE and
   ``"auto"`` parameters on the gathered skims (below ``max_gather_events``);
4. ``bootstrap``: a bootstrap ensemble of each fitted transform
   (:func:`rosenblatt.bootstrap`, ``statistics.n_boot`` replicas) on the
   gathered skims, saved as ``<name>_ensemble.json``;
5. ``analyse``: every event of the file set is scored, transformed and filled
   into the ABCD histograms;
6. ``close``: the closure over the cut grid from the merged histograms, and per
   variant the ABCD likelihood at its best cut as a pyhf workspace
   ``workspace_<variant>.json``;
7. ``report``: ``abcd.root``, ``histograms.json``, ``closure.json``,
   ``cutflow.json``, ``report.md`` and the figures.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from rosenblatt._records import check_record, file_digest, file_digests, write_record
from rosenblatt.studies._common import Steps
from rosenblatt.studies.abcd.config import AbcdConfig
from rosenblatt.studies.abcd.preflight import Preflight
from rosenblatt.studies.abcd.summary import PassOutput
from rosenblatt.transforms.irgi import COARSE_CUT_MESSAGE

if TYPE_CHECKING:
    from rosenblatt.processors.analysis import Variant
    from rosenblatt.processors.pieces import PieceStore
    from rosenblatt.studies.abcd.config import TransformConfig
    from rosenblatt.studies.abcd.estimate import CutChoice
    from rosenblatt.studies.abcd.summary import AbcdSummary
    from rosenblatt.transforms import ConditionalCDFTransform, TransformEnsemble

__all__ = ["STEPS", "Ensembles", "FittedTransforms", "PassOutput", "described", "run"]

log = logging.getLogger("rosenblatt.abcd")

#: the steps of the study, in order
STEPS = ("generate", "score", "fit", "bootstrap", "analyse", "close", "report")


@dataclass(frozen=True, slots=True)
class FittedTransforms:
    """The transforms of the run, fitted or read, and where each came from.

    Attributes
    ----------
    transforms : dict
        Per name, the fitted transform.
    routes : dict
        Per name, where it was fitted (workers or driver) or the file it was
        read from, with a warning where its grid is too coarse for the cuts;
        for a transform that is not valid, ``"not valid: <why>"``.
    invalid : dict
        Per transform left out of the analysis, why: its fit failed, or its
        bootstrap replicas cannot be fitted with the parameters it chose.
    """

    transforms: dict[str, ConditionalCDFTransform]
    routes: dict[str, str]
    invalid: dict[str, str] = field(default_factory=dict)

    def mark_invalid(self, name: str, reason: str, folder: Path) -> None:
        """Leave transform ``name`` out of the run, for ``reason``; remove its files in ``folder``."""
        self.transforms.pop(name, None)
        self.invalid[name] = reason
        self.routes[name] = f"not valid: {reason}"
        for path in (folder / f"{name}.json", folder / f"{name}_ensemble.json"):
            path.unlink(missing_ok=True)
        log.warning("transform %s is not valid, left out of the analysis: %s", name, reason)


@dataclass(frozen=True, slots=True)
class Ensembles:
    """The bootstrap ensembles of the transforms.

    Attributes
    ----------
    notes : dict
        Per transform, the file its ensemble was saved in, or why there is none.
    made : dict
        Per transform with one, its ensemble.
    """

    notes: dict[str, str]
    made: dict[str, TransformEnsemble]


def run(config: dict[str, Any], folder: Path) -> AbcdSummary:
    """Run the ABCD analysis of ``config``; write its outputs to ``folder``."""
    from rosenblatt.processors.binned_sums import warm_up
    from rosenblatt.processors.fitting import SkimData
    from rosenblatt.processors.runner import make_executor, map_items, warm_workers
    from rosenblatt.studies.abcd.outputs import write_outputs
    from rosenblatt.studies.abcd.preflight import preflight

    cfg = AbcdConfig.parse(config)
    if not cfg.executor.shared_disk:
        # the workers cannot open the driver's files: models and modules go with the tasks
        cfg = cfg.by_value()
    steps = Steps(STEPS, log)
    with steps.timed("generate"):
        _generate(cfg)
    checked = preflight(cfg)
    log.info(
        "preflight: %d datasets, %d files, layout %s: every tree and branch found",
        len(cfg.datasets),
        sum(len(f) for f in checked.entries.values()),
        checked.schema,
    )
    skim_dir = cfg.data_dir / "skim"
    executor = cfg.executor
    passes = _Passes(cfg, checked, skim_dir, config)
    with make_executor(executor.kind, executor.workers, scheduler=executor.scheduler) as pool:
        passes.pool = pool
        with steps.timed("score"):
            defining = passes.run(cfg.defining, variants=(), skim=True, name="score")
            steps.count("score", _events(defining))
            skims = sorted(defining["skim"])
            _remove_other_skims(skim_dir, skims)
        log.info("defining sample: %d skim files written", len(skims))

        def run_pass(paths: Sequence[str], function: Callable[[str], Any], description: str) -> Any:
            # without a shared disk, the skims travel to the workers by value (a fit's
            # later passes map its own tasks, which are values already)
            items = [
                SkimData.read(item) if isinstance(item, str) and not executor.shared_disk else item
                for item in paths
            ]
            return map_items(pool, items, function, description)

        with steps.timed("fit"):
            fitted = _fit_transforms(cfg, skims, run_pass, folder)
            score_y0, score_range = _score_cuts(cfg, skims, run_pass)
        # the workers idle while this process bootstraps: they load the analysis's kernels
        warm_workers(pool, warm_up)
        with steps.timed("bootstrap"):
            ensembles = _ensembles(cfg, skims, folder, fitted)
        variants = _variants(cfg, fitted.transforms, score_y0, score_range)
        replica_variants = _replica_variants(cfg, ensembles)
        output, choices = _analyse(cfg, passes, variants, replica_variants, score_y0, steps)
    timings = steps.seconds
    with steps.timed("close and report"):
        summary = write_outputs(
            folder,
            cfg,
            output,
            defining,
            fitted.routes,
            timings,
            ensembles.notes,
            checked=checked,
            choices=choices,
            invalid=fitted.invalid,
        )
    steps.write(folder)
    return summary


def _analyse(
    cfg: AbcdConfig,
    passes: _Passes,
    variants: Sequence[Variant],
    replica_variants: Sequence[Variant],
    score_y0: tuple[float, ...],
    steps: Steps,
) -> tuple[PassOutput, dict[str, CutChoice]]:
    """Fill the simulation, choose each variant's cut on it, then fill the data (blinded).

    Blinded, the data's events in each variant's region A are never filled,
    and a variant without a cut gets no data event at all.

    With data, the simulation is also filled with every bootstrap replica of
    each transform (``replica_variants``), so that the closure tests behind
    the cut and the estimate's validity hold the transform's own statistics.
    Returns the merged histograms and, with data, each variant's cut.
    """
    with steps.timed("analyse"):
        simulated = {n: f for n, f in cfg.fileset.items() if cfg.datasets[n].simulated}
        data = {n: f for n, f in cfg.fileset.items() if not cfg.datasets[n].simulated}
        filled = [*variants, *replica_variants] if data else list(variants)
        output = passes.run(simulated, variants=filled, name="analyse") if simulated else None
        steps.count("analyse", _events(output))
    if not data or output is None:
        assert output is not None
        return output, {}
    from rosenblatt.studies.abcd.estimate import choose_cuts

    with steps.timed("choose cuts"):
        choices = choose_cuts(
            cfg, output["abcd"], score_y0, output.get("replicas"), output.get("resampled")
        )
    for variant, choice in choices.items():
        log.info("variant %s: cut %s", variant, choice.how)
        if cfg.blind and choice.cut is None:
            log.info("variant %s: blind and without a cut, so no data event is filled", variant)
    # a variant left out of the mapping gets no data event at all
    blind = (
        {v: (c.cut.x0, c.cut.y0) for v, c in choices.items() if c.cut is not None}
        if cfg.blind
        else None
    )
    with steps.timed("analyse data"):
        observed = passes.run(data, variants=variants, blind=blind, name="analyse data")
        steps.count("analyse data", _events(observed))
    return _merge(output, observed), choices


def _remove_other_skims(skim_dir: Path, skims: Sequence[str]) -> None:
    """Remove the skim files of ``skim_dir`` that are not of this run's defining pass."""
    kept = {Path(path).name for path in skims}
    for old in skim_dir.glob("*.parquet"):
        if old.name not in kept:
            old.unlink()


def _events(output: PassOutput | None) -> int:
    """The events a pass read: the entries of its files (those it skipped left out)."""
    return sum(output.get("entries", {}).values()) if output is not None else 0


def _merge(first: PassOutput, second: PassOutput) -> PassOutput:
    """Two passes' outputs as one: histograms added, cut flows and file records joined."""
    from coffea import processor

    merged = cast(PassOutput, dict(processor.accumulate([first, second])))
    merged["entries"] = {**first.get("entries", {}), **second.get("entries", {})}
    merged["skipped"] = {**first.get("skipped", {}), **second.get("skipped", {})}
    return merged


def _variants(
    cfg: AbcdConfig,
    transforms: dict[str, ConditionalCDFTransform],
    score_y0: tuple[float, ...],
    score_range: tuple[float, float],
) -> list[Variant]:
    """The raw score and every transform of it, as variants of the histograms."""
    from rosenblatt.processors.analysis import Variant

    variants = [Variant("score", "score", score_y0, y_range=score_range)]
    variants += [Variant(name, "score", cfg.cuts.y0, transform=t) for name, t in transforms.items()]
    return variants


def _replica_variants(cfg: AbcdConfig, ensembles: Ensembles) -> list[Variant]:
    """Every bootstrap replica of every transform, as a variant of the simulation's histograms.

    A keyed replica also carries its ``(seed, draw)``, so that the events are
    filled a second time with its keyed Poisson counts (the closure factor's
    uncertainty, :mod:`rosenblatt.abcd.closure_correction`).
    """
    from rosenblatt.processors.analysis import Variant

    return [
        Variant(
            f"{name}#{k}",
            "score",
            cfg.cuts.y0,
            transform=member,
            replica_of=name,
            keyed_draw=(ensemble.seed, draw) if ensemble.keyed else None,
        )
        for name, ensemble in ensembles.made.items()
        for k, (member, draw) in enumerate(
            zip(ensemble.replicas_, ensemble.replica_draws_, strict=True)
        )
    ]


def _fit_transforms(
    cfg: AbcdConfig,
    skims: Sequence[str],
    run_pass: Callable[[Sequence[str], Callable[[str], Any], str], Any],
    folder: Path,
) -> FittedTransforms:
    """Every transform fitted on the skims (or read from its file), saved in ``folder``.

    A transform whose fit fails (a :class:`ValueError`: too few events for
    its depth, weights it cannot take) is marked invalid with the error, and
    the others go on. A grid too coarse for the cuts ``abcd.y0`` is logged as
    a warning and noted in its route. With bootstrap replicas to come
    (``statistics.n_boot``), a replica is fitted at once with the parameters
    the transform chose (:func:`_replica_problem`), before the bootstrap and
    the analysis pass: a transform whose replicas cannot be fitted is
    marked invalid.
    """
    from rosenblatt.processors.fitting import fit_on_skims, mergeable

    fitted = FittedTransforms({}, {})
    sample = _DefiningSample(cfg, skims)
    for spec in cfg.transforms:
        transform = spec.build()
        if spec.file is None:
            fitted.routes[spec.name] = (
                "workers (mergeable fit)" if mergeable(transform) else "driver (gathered skims)"
            )
            try:
                with warnings.catch_warnings():
                    # a grid too coarse for the cuts is logged and noted below
                    warnings.filterwarnings("ignore", COARSE_CUT_MESSAGE, UserWarning)
                    transform = fit_on_skims(
                        transform,
                        skims,
                        "score",
                        run_pass,
                        max_gather_events=cfg.max_gather_events,
                        sources=cfg.defining,
                        work_dir=_fit_pieces(cfg, spec.name),
                    )
            except ValueError as err:
                fitted.mark_invalid(spec.name, f"its fit failed: {err}", folder)
                continue
        else:
            fitted.routes[spec.name] = f"read from {spec.file}"
        problem = _replica_problem(cfg, spec, transform, sample)
        if problem is not None:
            fitted.mark_invalid(spec.name, problem, folder)
            continue
        coarse = getattr(transform, "coarse_cut_note", None)
        note = coarse() if callable(coarse) else None
        if note is not None:
            fitted.routes[spec.name] += f"; warning: {note}"
            log.warning("transform %s: %s", spec.name, note)
        transform.save(folder / f"{spec.name}.json")
        fitted.transforms[spec.name] = transform
        log.info(
            "transform %s: %s fitted (%s)",
            spec.name,
            described(transform),
            fitted.routes[spec.name],
        )
    return fitted


class _Levels(tuple[float, ...]):
    """Cut levels whose ``repr`` writes each with ``:g`` (``0.3``, not ``0.30000000000000004``)."""

    __slots__ = ()

    def __repr__(self) -> str:
        inner = ", ".join(f"{level:g}" for level in self)
        return f"({inner},)" if len(self) == 1 else f"({inner})"


def described(transform: Any) -> str:
    """A transform as the console shows it: its ``repr``, the cut levels written with ``:g``.

    The cut levels of a grid (``np.linspace``) are written as ``0.3``, not
    ``0.30000000000000004``; the transform, and what is saved of it, keep
    their exact values.
    """
    import copy

    levels = getattr(transform, "cut_levels", None)
    if not levels:
        return repr(transform)
    shown = copy.copy(transform)
    shown.cut_levels = _Levels(float(level) for level in levels)
    return repr(shown)


def _fit_pieces(cfg: AbcdConfig, name: str) -> Path | None:
    """Where the mergeable fit of transform ``name`` keeps its first pass: beside the passes'
    pieces, where the workers share the disk (else nowhere)."""
    return cfg.data_dir / "pieces" / f"fit-{name}" if cfg.executor.shared_disk else None


class _DefiningSample:
    """The defining sample's ``(x, score, weight)``, gathered from the skims once, when first asked."""

    def __init__(self, cfg: AbcdConfig, skims: Sequence[str]) -> None:
        self.cfg, self.skims = cfg, skims
        self.events: tuple[Any, Any, Any] | None = None

    def get(self) -> tuple[Any, Any, Any]:
        """``(x, score, weight)``, weight ``None`` where every one is 1.

        Raises
        ------
        ValueError
            If the skims hold more than ``max_gather_events`` events, or none.
        """
        from rosenblatt.processors.fitting import gather_skims

        if self.events is None:
            x, y, weight = gather_skims(self.skims, "score", max_events=self.cfg.max_gather_events)
            self.events = (x, y, None if np.all(weight == 1.0) else weight)
        return self.events

    def digests(self) -> dict[str, str]:
        """The content hash of each skim file, by its name."""
        return {Path(skim).name: file_digest(skim) for skim in self.skims}


def _record_of(kept: Path) -> Path:
    """The record of a file the study keeps between runs: what it was computed from."""
    return kept.with_name(f"{kept.stem}.record.json")


#: draws of Poisson weights tried by :func:`_replica_problem` before it gives up
REPLICA_CHECK_DRAWS = 3


def _replica_problem(
    cfg: AbcdConfig,
    spec: TransformConfig,
    transform: ConditionalCDFTransform,
    sample: _DefiningSample,
) -> str | None:
    """Why the bootstrap replicas of the fitted ``transform`` cannot be fitted, or ``None``.

    The replicas of the first draws are fitted as the ensemble will fit them
    (:func:`rosenblatt.transforms.ensemble.fit_replica`), until one fits. No
    check without replicas to come, for a transform read from a file, or
    where the sample cannot be gathered (the bootstrap step says why).
    """
    from rosenblatt.transforms.ensemble import fit_replica

    if cfg.statistics.n_boot == 0 or spec.file is not None:
        return None
    try:
        x, y, weight = sample.get()
    except ValueError:
        return None
    errors = []
    for draw in range(REPLICA_CHECK_DRAWS):
        try:
            fit_replica(transform, x, y, weight, seed=cfg.statistics.seed, draw=draw, keyed=True)
        except ValueError as err:
            errors.append(err)
        else:
            return None
    return (
        f"none of its first {REPLICA_CHECK_DRAWS} bootstrap replicas can be fitted with the "
        f"parameters it chose ({transform.fitted_params()}): {errors[-1]}"
    )


class _Passes:
    """The passes of the study's processor over datasets, on one executor."""

    def __init__(
        self, cfg: AbcdConfig, checked: Preflight, skim_dir: Path, config: dict[str, Any]
    ) -> None:
        from rosenblatt.processors.analysis import PlaneBinning

        self.cfg = cfg
        self.checked = checked
        self.skim_dir = skim_dir
        self.config = config
        self.digests: dict[str, str] = {}
        #: every input file of the run (a file the configuration names otherwise is hashed whole)
        self.inputs = [p for f in (cfg.defining, cfg.fileset) for ps in f.values() for p in ps]
        self.pool: Any = None
        low, high = cfg.cuts.x0[0], cfg.cuts.x0[-1]
        self.plane = PlaneBinning(
            x_range=cfg.plane_x_range or (low - 0.5 * (high - low), high + 0.5 * (high - low))
        )
        #: the edges of the pass/fail fit's bins of x (none: no pass/fail histograms)
        self.passfail = (
            None
            if cfg.passfail is None
            else cfg.passfail.bin_edges(self.plane.x_range, cfg.cuts.x_max)
        )

    def run(
        self,
        files: dict[str, list[str]],
        *,
        variants: Sequence[Variant],
        skim: bool = False,
        blind: dict[str, tuple[float, float]] | None = None,
        name: str,
    ) -> PassOutput:
        """One pass over ``files``: histograms of ``variants``, skims of every chunk with ``skim``.

        Each chunk's output is kept under ``<data folder>/pieces/<name>``, so
        that a run stopped within the pass reads only the chunks left
        (:mod:`rosenblatt.processors.pieces`).
        """
        cfg = self.cfg
        processes = {name: d.process for name, d in cfg.datasets.items() if d.process is not None}
        skim_dir = str(self.skim_dir.resolve()) if skim else None
        if skim_dir is not None:
            Path(skim_dir).mkdir(parents=True, exist_ok=True)
        pieces = self._pieces(name, files, variants, processes, skim_dir, blind)
        if self.checked.schema == "particles":
            return self._particles(files, variants, processes, skim_dir, blind, pieces)
        return self._columnar(files, variants, processes, skim_dir, blind, pieces)

    def _pieces(
        self,
        name: str,
        files: dict[str, list[str]],
        variants: Sequence[Variant],
        processes: dict[str, int],
        skim_dir: str | None,
        blind: dict[str, tuple[float, float]] | None,
    ) -> PieceStore:
        """The store of the pass's pieces, keyed by everything its outputs depend on."""
        from rosenblatt.processors.pieces import PieceStore
        from rosenblatt.studies.abcd.pieces import pass_document

        local = [path for paths in files.values() for path in paths if Path(path).is_file()]
        folder = self.cfg.data_dir / "pieces" / name.replace(" ", "-")
        missing = [path for path in local if path not in self.digests]
        if missing:
            # a resumed run hashes again only the input files changed since
            known = folder.with_name(f"{folder.name}.digests.json")
            self.digests.update(file_digests(missing, known))
        document = pass_document(
            self.config,
            schema=self.checked.schema,
            scales=self.checked.scales,
            processes=processes,
            variants=variants,
            skim_dir=skim_dir,
            blind=blind,
            inputs=self.inputs,
        )
        digests = {p: self.digests[p] for p in local}
        shared = self.cfg.executor.shared_disk
        return PieceStore.create(folder, name, document, digests, shared=shared)

    def _particles(
        self,
        files: dict[str, list[str]],
        variants: Sequence[Variant],
        processes: dict[str, int],
        skim_dir: str | None,
        blind: dict[str, tuple[float, float]] | None,
        pieces: PieceStore,
    ) -> PassOutput:
        """A pass of the particle-level processor (events with jets' constituents)."""
        from rosenblatt.ml.scoring import make_scorer
        from rosenblatt.processors.analysis import AnalysisProcessor
        from rosenblatt.processors.runner import run_processor

        cfg = self.cfg
        spec = dict(cfg.score.spec) or {"column": cfg.score.name}
        # without a shared disk, the scorer carries its model file's bytes (AbcdConfig.by_value)
        scorer = cfg.score.scorer if cfg.score.scorer is not None else make_scorer(spec)
        analysis = AnalysisProcessor(
            scorers={"score": scorer},
            variants=tuple(variants),
            x0=cfg.cuts.x0,
            x=str(cfg.cuts.x),
            x_max=cfg.cuts.x_max,
            plane=self.plane,
            skim_dir=skim_dir,
            processes=processes,
            scales=self.checked.scales,
            blind=blind,
            passfail=None if skim_dir is not None else self.passfail,
            skip_bad_chunks=cfg.skip_bad_files,
        )
        output = run_processor(
            self.checked.readable(files),
            analysis,
            self.pool,
            chunksize=cfg.executor.chunksize,
            skip_bad_files=cfg.skip_bad_files,
            checked=self.checked.files,
            pieces=pieces,
        )
        # the keys of PassOutput, as the processor's accumulator holds them
        return self._with_skipped(cast(PassOutput, output), files)

    def _columnar(
        self,
        files: dict[str, list[str]],
        variants: Sequence[Variant],
        processes: dict[str, int],
        skim_dir: str | None,
        blind: dict[str, tuple[float, float]] | None,
        pieces: PieceStore,
    ) -> PassOutput:
        """A pass of the columnar processor (flat ntuples, NanoAOD)."""
        from rosenblatt.processors.columnar import ColumnarAnalysisProcessor
        from rosenblatt.processors.runner import run_columnar

        cfg = self.cfg
        skim = skim_dir is not None
        columnar = ColumnarAnalysisProcessor(
            x=cfg.x,
            scores={"score": cfg.score},
            variants=tuple(variants),
            x0=cfg.cuts.x0,
            weights={name: d.weight for name, d in cfg.datasets.items()},
            processes=processes,
            scales=self.checked.scales,
            selection=cfg.defining_selection if skim else None,
            x_max=cfg.cuts.x_max,
            x_label=cfg.cuts.x_label,
            plane=self.plane,
            blind=blind,
            passfail=None if skim else self.passfail,
            skim_dir=skim_dir,
            skip_bad_chunks=cfg.skip_bad_files,
        )
        trees = {name: cfg.datasets[name].treename for name in files}
        merged = run_columnar(
            self.checked.readable(files),
            trees,
            columnar,
            self.pool,
            schema=self.checked.schema,
            checked=self.checked.files,
            chunksize=cfg.executor.chunksize,
            skip_bad_files=cfg.skip_bad_files,
            pieces=pieces,
        )
        # the keys of PassOutput, as the processor's accumulator holds them
        return self._with_skipped(cast(PassOutput, merged), files)

    def _with_skipped(self, output: PassOutput, files: dict[str, list[str]]) -> PassOutput:
        """``output`` with the files of the pass that the checks left out as unreadable."""
        output["skipped"] = {
            path: info
            for path, info in self.checked.skipped.items()
            if any(path in paths for paths in files.values())
        }
        return output


def _generate(cfg: AbcdConfig) -> None:
    """Generate the event files of the ``generate:`` block that are not there yet."""
    if not cfg.generate:
        return
    from rosenblatt.hep.generation import generate_file

    for entry in cfg.generate:
        path = Path(entry.output)
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.exists():
            log.info("found %s: kept if it holds these %s events", path, entry.process)
        else:
            log.info("generating %s events into %s (kept for later runs)", entry.process, path)
        workers = cfg.executor.workers if entry.workers is None else entry.workers
        if entry.file_format != "particles":
            from rosenblatt.hep.analysis_files import generate_analysis_file

            generate_analysis_file(
                path,
                entry.process,
                entry.events,
                entry.seed,
                file_format=entry.file_format,
                signal_events=entry.signal_events,
                negative_weight_fraction=entry.negative_weight_fraction,
                workers=workers,
                chunk_size=entry.chunk_size,
                rntuple=entry.rntuple,
            )
            continue
        generate_file(
            path,
            entry.process,
            entry.events,
            entry.seed,
            chunk_size=entry.chunk_size,
            workers=workers,
        )
    from rosenblatt.studies.abcd.datasets import is_url

    missing = [
        p
        for paths in (*cfg.defining.values(), *cfg.fileset.values())
        for p in paths
        if not is_url(p) and not Path(p).is_file()
    ]
    if missing:
        raise FileNotFoundError(
            f"{cfg.source}: input file(s) {missing} do not exist and generate: does not write them"
        )


def _ensembles(
    cfg: AbcdConfig, skims: Sequence[str], folder: Path, fitted: FittedTransforms
) -> Ensembles:
    """A bootstrap ensemble of each fitted transform, saved as ``<name>_ensemble.json``.

    Fitted on the gathered skims of the defining sample; its nominal is the
    transform fitted in the ``fit`` step (equal to rounding for weighted
    events fitted in the workers). Returns per transform the file written, or
    why none was. A transform whose ensemble cannot be fitted is marked
    invalid in ``fitted`` (:meth:`FittedTransforms.mark_invalid`): it is left
    out of the analysis, and the others go on. An ensemble an earlier run
    computed from the same fitted transform, defining skims, replicas and
    seed is read back from ``<data.folder>/ensembles/`` (its record holds
    their hashes and the file's), so that a resumed run does not fit it again.
    """
    import rosenblatt as rb

    seed = cfg.statistics.seed
    notes: dict[str, str] = {}
    made: dict[str, TransformEnsemble] = {}
    sample = _DefiningSample(cfg, skims)
    for spec in cfg.transforms:
        if spec.name in fitted.invalid:
            notes[spec.name] = "none: the transform is not valid (see its entry under transforms)"
            continue
        if cfg.statistics.n_boot == 0:
            notes[spec.name] = "none (statistics.n_boot: 0)"
            continue
        if spec.file is not None:
            notes[spec.name] = "none: read from a file, fitted on a sample not given here"
            continue
        try:
            x, y, weight = sample.get()
        except ValueError as err:
            notes[spec.name] = f"none: {err}"
            continue
        n_boot = cfg.statistics.replicas(weight)
        kept = cfg.data_dir / "ensembles" / f"{spec.name}_ensemble.json"
        inputs = {
            "transform": file_digest(folder / f"{spec.name}.json"),
            "defining": sample.digests(),
            "n_boot": n_boot,
            "seed": seed,
        }
        path = folder / f"{spec.name}_ensemble.json"
        if check_record(_record_of(kept), inputs):
            ensemble = cast("TransformEnsemble", rb.load(kept))
            log.info("transform %s: bootstrap replicas kept from an earlier run", spec.name)
        else:
            try:
                with warnings.catch_warnings():
                    # the fit step has logged a grid too coarse for the cuts
                    warnings.filterwarnings("ignore", COARSE_CUT_MESSAGE, UserWarning)
                    ensemble = rb.bootstrap(
                        spec.build(), x, y, weight, n=n_boot, seed=seed, keyed=True
                    )
            except ValueError as err:
                notes[spec.name] = f"none: {err}"
                fitted.mark_invalid(
                    spec.name, f"its bootstrap ensemble cannot be fitted: {err}", folder
                )
                continue
            kept.parent.mkdir(parents=True, exist_ok=True)
            ensemble.save(kept)
            write_record(_record_of(kept), [kept], inputs)
        ensemble.save(path)
        notes[spec.name] = path.name
        made[spec.name] = ensemble
        log.info("transform %s: %d bootstrap replicas saved in %s", spec.name, n_boot, path.name)
    return Ensembles(notes, made)


def _score_cuts(
    cfg: AbcdConfig,
    skims: Sequence[str],
    run_pass: Callable[[Sequence[str], Callable[[str], Any], str], Any],
) -> tuple[tuple[float, ...], tuple[float, float]]:
    """Cut values and figure range of the raw score.

    Given as ``abcd.score_y0``, or else the quantiles of the defining sample's
    score at the levels ``y0``: a raw cut then keeps the same fraction of the
    defining background as the transformed cut it stands beside.
    """
    from rosenblatt.processors.fitting import ScoreHistogram, score_range

    lo, hi = score_range(skims, "score")
    if cfg.cuts.score_y0 is not None:
        return cfg.cuts.score_y0, (min(lo, *cfg.cuts.score_y0), max(hi, *cfg.cuts.score_y0))
    counts = run_pass(skims, ScoreHistogram("score", lo, hi), "score quantiles")
    edges = np.linspace(lo, hi, len(counts) + 1)
    cumulative = np.concatenate(([0.0], np.cumsum(counts)))
    levels = np.clip(np.asarray(cfg.cuts.y0), 0.0, 1.0) * cumulative[-1]
    quantiles = np.interp(levels, cumulative, edges)
    return tuple(float(q) for q in np.unique(quantiles)), (lo, hi)
