"""The LHC Olympics ABCD study of the method paper, end to end.

QCD dijet background and W' -> X Y -> qqqq signal are generated with Pythia 8
(cached), turned into dijet mass and track images by the coffea processor
(cached), and partitioned as in the paper: classifier training, validation
(also the defining background sample of IRGI and KDE), optimisation (choice
of the free parameters) and testing (background plus 10% signal, for ABCD).
A CNN is trained over seeds and DisCo strengths; IRGI and KDE decorrelate the
best baseline; all four are compared in the DCC-AUC plane and in the ABCD
closure test over a grid of cuts.

The study is a sequence of named steps (:data:`STEPS`), each timed; the
configuration is validated first (:class:`~rosenblatt.studies.lhco.config.LhcoConfig`).
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any, TypedDict

import numpy as np

import rosenblatt as rb
from rosenblatt._atomic import write_text
from rosenblatt._records import check_record, file_entries, read_record, write_record
from rosenblatt.abcd import ClosureScan, abcd_histogram, closure_scan
from rosenblatt.studies._common import Steps, summary_header, write_summary
from rosenblatt.studies.lhco.claims import paper_claims
from rosenblatt.studies.lhco.config import CLASSES, PARTS, LhcoConfig
from rosenblatt.studies.lhco.paper import paper_comparison
from rosenblatt.studies.lhco.processor_closure import closures_in_processor
from rosenblatt.studies.lhco.results import (
    ChosenModels,
    Closure,
    Decorrelation,
    Samples,
    StatisticsInput,
    StatisticsSettings,
    TrainedModel,
)
from rosenblatt.studies.lhco.summary import (
    ClassifierEntries,
    ClassifierJson,
    JsonValue,
    LhcoSummary,
    PassFailComparison,
    Provenance,
    ScanPoint,
    StrengthScan,
    Verdicts,
)
from rosenblatt.studies.peers import AbcdFigures, PeerResult
from rosenblatt.transforms import ConditionalCDFTransform
from rosenblatt.typing import FloatArray, Int64Array

__all__ = [
    "CLASSIFIERS",
    "STEPS",
    "choose_models",
    "feature_table",
    "generate_events",
    "generated_events",
    "partition_samples",
    "render_again",
    "run",
    "sample_events",
    "train_classifiers",
]

log = logging.getLogger("rosenblatt.lhco")

#: the four classifiers compared
CLASSIFIERS = ("baseline", "disco", "irgi", "kde")

#: the study's steps, in order; each one's wall time goes to ``summary.json`` (``step_seconds``)
STEPS = (
    "generate",
    "features",
    "partition",
    "train",
    "decorrelate",
    "close",
    "strength",
    "passfail",
    "peers",
    "report",
)


PEERS_INTRO = """The best baseline's score decorrelated from mjj by every method, each fitted on the
validation background (the defining sample) and measured on the testing sample in this run,
beside DisCo's chosen model: dCor² on the testing background with its permutation floor and
p-value; AUC; at background efficiencies of 10, 50 and 90%, the standard deviation of the
efficiency across 10 equal-occupancy mjj bins (in brackets: in units of its binomial
expectation); the share of the ABCD cut grid with |eta| < 1e-2 (in memory); fit time and
transform time per 10^6 events. IRGI and KDE take the parameters chosen above, GridKDE its
cross-validated bandwidth; the flow trains for at most 60 s; the DDT flattens 10% only."""


def generate_events(cfg: LhcoConfig) -> dict[str, Path]:
    """Generate (or reuse, chunk by chunk) the QCD and W' event files.

    Returns
    -------
    dict
        The ROOT file of each process (``"qcd"``, ``"wprime"``) in ``cfg.data.folder``.
    """
    from rosenblatt.hep.generation import generate_file

    paths = {}
    for offset, (process, cls) in enumerate((("qcd", "background"), ("wprime", "signal"))):
        path = cfg.data.folder / f"{process}.root"
        n_events = _file_events(cfg, cls)
        if path.exists():
            log.info("found %s: kept if it holds these %d %s events", path, n_events, process)
        else:
            log.info(
                "generating %d %s events into %s (kept for later runs)", n_events, process, path
            )
        summary = generate_file(
            path,
            process,
            n_events,
            seed=cfg.seed * 1000 + offset,
            pthat_min=cfg.data.pthat_min,
            chunk_size=cfg.data.chunk_size,
            workers=cfg.data.workers,
        )
        log.info(
            "%s: %d events pass the trigger out of %d generated",
            process,
            summary.n_events,
            summary.n_generated,
        )
        paths[process] = path
    return paths


def _file_events(cfg: LhcoConfig, cls: str) -> int:
    """The events of one class's file: those the partition needs, and the margin."""
    return int(np.ceil(cfg.needed(cls) * (1 + cfg.data.margin)))


def generated_events(cfg: LhcoConfig) -> int:
    """The events of the QCD and W' files together (the ``generate`` step's count)."""
    return sum(_file_events(cfg, cls) for cls in CLASSES)


def sample_events(samples: Samples) -> int:
    """The events of the four samples together."""
    return sum(len(getattr(samples, part)) for part in PARTS)


def feature_table(cfg: LhcoConfig, paths: dict[str, Path]) -> Any:
    """Run the dijet processor over the event files (cached as parquet).

    Returns
    -------
    pandas.DataFrame
        One row per event with two jets: the columns of
        :data:`rosenblatt.hep.features.TABLE_COLUMNS`.
    """
    import awkward as ak

    from rosenblatt.io.parquet import read_parquet, write_parquet
    from rosenblatt.processors.runner import run_dijet

    table_path = cfg.data.folder / "features.parquet"
    record = cfg.data.folder / "features.record.json"
    inputs = _feature_inputs(paths)
    if check_record(record, inputs):
        log.info("reusing the feature table %s", table_path)
        return read_parquet(table_path)
    result = run_dijet(
        {name: [str(p)] for name, p in paths.items()},
        executor=cfg.features.executor,
        workers=cfg.features.workers,
        chunksize=cfg.features.chunksize,
    )
    for dataset, steps in result["cutflow"].items():
        log.info("cut flow %s: %s", dataset, ", ".join(f"{k} {v}" for k, v in steps.items()))
    table = result["table"]
    write_parquet(table, table_path)
    write_record(record, [table_path], inputs)
    return ak.Array(table)


class FeatureInputs(TypedDict):
    """What the feature table is computed from, as its record keeps it.

    Attributes
    ----------
    columns : list of str
        The table's columns.
    events : dict
        Per process, the size and content hash of its event file.
    """

    columns: list[str]
    events: dict[str, dict[str, int | str]]


def _feature_inputs(paths: dict[str, Path]) -> FeatureInputs:
    """What the feature table is computed from: the columns, each event file's size and hash.

    The size and hash come from the event file's own record, written when it
    was generated (and checked at the start of this run).
    """
    from rosenblatt.hep.features import TABLE_COLUMNS
    from rosenblatt.hep.generation import record_name

    events: dict[str, dict[str, int | str]] = {}
    for name, path in sorted(paths.items()):
        document = read_record(record_name(path))
        entry = None if document is None else document["files"].get(path.name)
        events[name] = entry or file_entries(path.parent, [path])[path.name]
    return {"columns": sorted(TABLE_COLUMNS), "events": events}


def partition_samples(table: Any, cfg: LhcoConfig) -> Samples:
    """Split the table into the paper's four samples, per class, at random.

    Returns
    -------
    Samples
        ``train``, ``validation``, ``optimisation`` and ``testing``: the rows
        of each, as sized in ``cfg.partition``.
    """
    rng = np.random.default_rng(cfg.seed)
    label = np.asarray(table["label"])
    parts: dict[str, list[Int64Array]] = {part: [] for part in PARTS}
    for value, cls in enumerate(CLASSES):
        index = rng.permutation(np.flatnonzero(label == value))
        if len(index) < cfg.needed(cls):
            msg = (
                f"the feature table has {len(index)} {cls} events with two jets, the partition needs "
                f"{cfg.needed(cls)}; raise data.margin in {cfg.source}"
            )
            raise ValueError(msg)
        start = 0
        for part in PARTS:
            stop = start + cfg.sizes[part][cls]
            parts[part].append(index[start:stop])
            start = stop
    return Samples(*(table[np.sort(np.concatenate(parts[part]))] for part in PARTS))


def train_classifiers(cfg: LhcoConfig, samples: Samples) -> tuple[Samples, list[TrainedModel]]:
    """Train (or reuse, model by model) the classifier scan and score every sample.

    Returns
    -------
    samples : Samples
        The samples with one score column per model.
    models : list of TrainedModel
        Each model's name, column, alpha, seed and training record.
    """
    from rosenblatt.ml import run_scan
    from rosenblatt.ml.files import model_file

    # models are cached per training setting: a changed configuration trains anew
    scan_dir = cfg.data.folder / f"scan-{cfg.scan_key()}"
    result = run_scan(
        {part: getattr(samples, part) for part in PARTS},
        scan_dir,
        train="train",
        validation="validation",
        kind=cfg.classifier.kind,
        seeds=list(range(cfg.classifier.seeds)),
        alphas=list(cfg.classifier.alphas),
        options=dict(cfg.classifier.options),
        n_workers=cfg.classifier.workers,
    )
    log.info(
        "classifiers: %d trained now, %d reused",
        len(result.trained),
        len(result.models) - len(result.trained),
    )
    suffix = ".npz" if cfg.classifier.kind == "gbdt" else ".pt"
    models = [
        TrainedModel.from_record(
            record, str(model_file(scan_dir / "models" / record["name"], suffix))
        )
        for record in result.models
    ]
    return Samples(*(result.samples[part] for part in PARTS)), models


def _scores(sample: Any, column: str) -> FloatArray:
    return np.asarray(sample[column], dtype=np.float64)


def _evaluate(sample: Any, score: FloatArray) -> tuple[float, float]:
    """AUC on the sample and dCor^2(mjj, score) on its background."""
    label = np.asarray(sample["label"])
    mjj = np.asarray(sample["mjj"], dtype=np.float64)
    bkg = label == 0
    return rb.roc_auc(label, score), rb.distance_correlation_sqr(mjj[bkg], score[bkg])


def _scan_point(value: float, sample: Any, score: FloatArray) -> ScanPoint:
    """A transform's parameter ``value`` with the AUC and dCor² of its score on ``sample``."""
    auc, dcc = _evaluate(sample, score)
    return {"value": value, "auc": auc, "dcc": dcc}


def measure_models(models: list[TrainedModel], opt: Any) -> list[TrainedModel]:
    """Every model with its AUC and dCor² on the optimisation sample ``opt``."""
    return [m.measured(*_evaluate(opt, _scores(opt, m.column))) for m in models]


def choose_models(cfg: LhcoConfig, models: list[TrainedModel]) -> ChosenModels:
    """The best baseline and DisCo's representative, judged on the optimisation sample.

    ``models`` are measured there (``measure_models``). The best baseline
    has the highest AUC; DisCo's representative the lowest dCor² among the
    DisCo models above the AUC floor (``None`` without one).
    """
    baselines = [m for m in models if m.is_baseline]
    best = max(baselines, key=lambda m: m.opt_auc)
    disco_models = [m for m in models if m.is_disco and m.alpha > 0]
    eligible = [m for m in disco_models if m.opt_auc > cfg.classifier.min_auc]
    disco = None
    if eligible:
        disco = min(eligible, key=lambda m: m.opt_dcc)
    elif disco_models:
        disco = max(disco_models, key=lambda m: m.opt_auc)
    log.info(
        "best baseline %s (AUC %.3f); DisCo representative %s",
        best.name,
        best.opt_auc,
        None if disco is None else disco.name,
    )
    return ChosenModels(best, disco)


def _decorrelate(
    cfg: LhcoConfig, samples: Samples, best: TrainedModel, folder: Path
) -> Decorrelation:
    """Fit IRGI and KDE on the validation background; pick each parameter on the optimisation sample."""
    val, opt = samples.validation, samples.optimisation
    val_bkg = np.asarray(val["label"]) == 0
    x_def = np.asarray(val["mjj"], dtype=np.float64)[val_bkg]
    y_def = _scores(val, best.column)[val_bkg]
    opt_mjj = np.asarray(opt["mjj"], dtype=np.float64)
    opt_base = _scores(opt, best.column)
    depths = [d for d in cfg.selection.depths if d <= rb.IRGI.max_depth(len(x_def))]
    candidates: dict[str, list[tuple[float, ConditionalCDFTransform]]] = {
        "irgi": [(d, rb.IRGI(depth=d)) for d in depths],
        "kde": [(s, rb.KDE(sigma_r=s)) for s in cfg.selection.sigma_r],
    }
    scans: dict[str, list[ScanPoint]] = {"irgi": [], "kde": []}
    fitted: dict[str, dict[float, ConditionalCDFTransform]] = {"irgi": {}, "kde": {}}
    chosen: dict[str, float] = {}
    for name, pairs in candidates.items():
        for value, transform in pairs:
            fitted[name][value] = transform.fit(x_def, y_def)
            gamma = transform.transform(opt_mjj, opt_base)
            scans[name].append(_scan_point(value, opt, gamma))
        near = [
            s for s in scans[name] if s["auc"] >= best.opt_auc - cfg.selection.auc_tolerance
        ] or scans[name]
        chosen[name] = min(near, key=lambda s: s["dcc"])["value"]
        fitted[name][chosen[name]].save(folder / f"{name}.json")
    log.info("chosen IRGI depth %s and KDE sigma_r %s", chosen["irgi"], chosen["kde"])
    return Decorrelation(x_def, y_def, scans, fitted, chosen)


def _defining_events(fits: Decorrelation) -> int:
    """The defining background's events, on which the transforms are fitted."""
    return len(fits.x_def)


def _testing_scores(
    samples: Samples, chosen: ChosenModels, fits: Decorrelation
) -> dict[str, FloatArray]:
    """The four classifiers' scores on the testing sample."""
    test = samples.testing
    mjj = np.asarray(test["mjj"], dtype=np.float64)
    base = _scores(test, chosen.best.column)
    scores = {
        "baseline": base,
        "irgi": fits.transform("irgi").transform(mjj, base),
        "kde": fits.transform("kde").transform(mjj, base),
    }
    if chosen.disco is not None:
        scores["disco"] = _scores(test, chosen.disco.column)
    return scores


def _figures_of_merit(
    cfg: LhcoConfig,
    mjj: FloatArray,
    label: Int64Array,
    score: FloatArray,
    scan: ClosureScan,
) -> ClassifierJson:
    """One classifier's point estimates on the testing sample: AUC, dCor² with its floor, R50, closure."""
    bkg = label == 0
    perm = rb.permutation_test(mjj[bkg], score[bkg], n_permutations=cfg.permutations, seed=1)
    best_cut = scan.best()
    pulls = scan.pull[scan.valid]
    return {
        "auc": rb.roc_auc(label, score),
        "dcc": float(perm.statistic),
        "dcc_floor": float(perm.floor),
        "dcc_floor_std": float(perm.floor_std),
        "dcc_p_value": float(perm.p_value),
        "r50": rb.background_rejection(label, score),
        "inverse_jsd": rb.inverse_jsd(mjj, label, score),
        "eta_best": best_cut["eta"],
        "x0": best_cut["x0"],
        "y0": best_cut["y0"],
        "closure_at_best": best_cut,
        "frac_eta_below_1e-2": scan.fraction_below(1e-2),
        "frac_eta_below_1e-3": scan.fraction_below(1e-3),
        "pull_mean": float(np.mean(pulls)) if len(pulls) else float("nan"),
        "pull_std": float(np.std(pulls)) if len(pulls) else float("nan"),
    }


def _close(
    cfg: LhcoConfig,
    folder: Path,
    paths: dict[str, Path],
    samples: Samples,
    chosen: ChosenModels,
    fits: Decorrelation,
) -> Closure:
    """ABCD closure of every classifier on the testing sample, then uncertainties and likelihoods."""
    from rosenblatt.studies.lhco.statistics import statistics

    test = samples.testing
    mjj = np.asarray(test["mjj"], dtype=np.float64)
    label = np.asarray(test["label"])
    scores = _testing_scores(samples, chosen, fits)
    keep = mjj < cfg.cuts.mjj_max
    in_memory = {
        name: abcd_histogram(mjj[keep], score[keep], label[keep], x0=cfg.cuts.x0, y0=cfg.cuts.y0)
        for name, score in scores.items()
    }
    closures, agreement = closures_in_processor(
        cfg,
        paths,
        test,
        {"baseline": chosen.best, "disco": chosen.disco},
        {"irgi": fits.transform("irgi"), "kde": fits.transform("kde")},
        in_memory,
    )
    classifiers = {
        name: _figures_of_merit(cfg, mjj, label, scores[name], closures[name])
        for name in CLASSIFIERS
        if name in scores
    }
    data = _statistics_input(cfg, samples, chosen.best, fits, scores, closures)
    stats = statistics(StatisticsSettings.of(cfg), folder, data)
    for name, values in stats.classifiers.items():
        classifiers[name] = {**classifiers[name], **values}
    _name_classifiers(classifiers, chosen, fits)
    return Closure(scores, closures, agreement, int(keep.sum()), classifiers, stats)


def _statistics_input(
    cfg: LhcoConfig,
    samples: Samples,
    best: TrainedModel,
    fits: Decorrelation,
    scores: dict[str, FloatArray],
    closures: dict[str, ClosureScan],
) -> StatisticsInput:
    """What the statistics stage works on: the testing sample, the defining and validation signal."""
    test, val = samples.testing, samples.validation
    val_label = np.asarray(val["label"])
    return StatisticsInput(
        mjj=np.asarray(test["mjj"], dtype=np.float64),
        label=np.asarray(test["label"]),
        scores=scores,
        baseline=scores["baseline"],
        chosen=fits.chosen,
        x_def=fits.x_def,
        y_def=fits.y_def,
        x_sig=np.asarray(val["mjj"], dtype=np.float64)[val_label == 1],
        y_sig=_scores(val, best.column)[val_label == 1],
        closures=closures,
        x0=cfg.cuts.x0,
        y0=cfg.cuts.y0,
        mjj_max=cfg.cuts.mjj_max,
    )


def _name_classifiers(
    classifiers: dict[str, ClassifierJson], chosen: ChosenModels, fits: Decorrelation
) -> None:
    """Say what each classifier is: the chosen depth and sigma_r, the trained models and DisCo's alpha."""
    classifiers["irgi"]["depth"] = int(fits.chosen["irgi"])
    classifiers["kde"]["sigma_r"] = fits.chosen["kde"]
    classifiers["baseline"]["model"] = chosen.best.name
    if chosen.disco is not None:
        classifiers["disco"]["model"] = chosen.disco.name
        classifiers["disco"]["alpha"] = chosen.disco.alpha


def _strength(
    cfg: LhcoConfig,
    samples: Samples,
    models: list[TrainedModel],
    fits: Decorrelation,
    closure: Closure,
) -> StrengthScan:
    """IRGI and KDE at every decorrelation strength, and the classifier scan, on the testing sample."""
    from rosenblatt.studies.lhco.strength import strength_scan

    return strength_scan(
        cfg, samples.testing, models, fits.y_def, closure.statistics.ensembles, closure.scores
    )


def _passfail(
    cfg: LhcoConfig, folder: Path, samples: Samples, closure: Closure
) -> PassFailComparison:
    """The pass/fail fit in bins of m_jj at each classifier's ABCD cut, on the testing sample."""
    from rosenblatt.studies.lhco.passfail import passfail_comparison

    test = samples.testing
    return passfail_comparison(
        folder,
        np.asarray(test["mjj"], dtype=np.float64),
        np.asarray(test["label"]),
        closure.scores,
        closure.classifiers,
        cfg.cuts.mjj_max,
    )


def _peers(
    cfg: LhcoConfig, samples: Samples, fits: Decorrelation, closure: Closure
) -> dict[str, PeerResult]:
    """Every decorrelation method of :mod:`rosenblatt.studies.peers` on the testing sample, beside DisCo."""
    from rosenblatt.studies import peers

    test = samples.testing
    mjj, label = np.asarray(test["mjj"], dtype=np.float64), np.asarray(test["label"])
    keep = mjj < cfg.cuts.mjj_max

    def abcd(score: FloatArray) -> AbcdFigures:
        scan = closure_scan(
            abcd_histogram(mjj[keep], score[keep], label[keep], x0=cfg.cuts.x0, y0=cfg.cuts.y0)
        )
        return {
            "frac_eta_below_1e-2": scan.fraction_below(1e-2),
            "frac_eta_below_1e-3": scan.fraction_below(1e-3),
            "eta_best": scan.best()["eta"],
        }

    makers = peers.default_peers(
        irgi=lambda: rb.IRGI(depth=int(fits.chosen["irgi"])),
        kde=lambda: rb.KDE(sigma_r=fits.chosen["kde"]),
        flow={"max_seconds": 60.0},
        n_defining=len(fits.x_def),
    )
    given = {"disco": closure.scores["disco"]} if "disco" in closure.scores else {}
    testing = (mjj, closure.scores["baseline"], label)
    return peers.evaluate(
        makers,
        defining=(fits.x_def, fits.y_def),
        testing=testing,
        scores=given,
        abcd=abcd,
        permutations=cfg.permutations,
        seed=1,
    )


def _provenance(cfg: LhcoConfig) -> Provenance:
    """The configuration as read and the source's git commit (where it is a checkout)."""
    import subprocess

    source = Path(__file__).resolve().parent
    commit = dirty = None
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=source, capture_output=True, text=True, check=True
        ).stdout.strip()
        status = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=source,
            capture_output=True,
            text=True,
            check=True,
        )
        dirty = bool(status.stdout.strip())
    except (OSError, subprocess.CalledProcessError):
        log.info("the package source is not a git checkout: no commit recorded")
    configuration: dict[str, JsonValue] = {k: v for k, v in cfg.raw.items() if k != "_path"}
    return {
        "configuration": configuration,
        "commit": commit,
        "uncommitted_changes": dirty,
    }


def run(config: dict[str, Any], folder: Path) -> LhcoSummary:
    """Run the LHCO study of ``config``; write the report, summary, figures and transforms.

    The steps (:data:`STEPS`) each reuse what an earlier run cached in
    ``data.folder``: the generated events chunk by chunk, the feature table,
    every trained model.
    """
    cfg = LhcoConfig.parse(config)
    cfg.data.folder.mkdir(parents=True, exist_ok=True)
    steps = Steps(STEPS, log, digits=2)
    paths = steps.run("generate", generate_events, cfg, events=lambda _: generated_events(cfg))
    table = steps.run("features", feature_table, cfg, paths, events=len)
    samples = steps.run("partition", partition_samples, table, cfg, events=sample_events)
    trained = steps.run(
        "train", train_classifiers, cfg, samples, events=lambda r: sample_events(r[0])
    )
    samples, models = trained
    models = measure_models(models, samples.optimisation)
    chosen = choose_models(cfg, models)
    fits = steps.run(
        "decorrelate", _decorrelate, cfg, samples, chosen.best, folder, events=_defining_events
    )
    n_testing = len(samples.testing)
    closure = steps.run(
        "close", _close, cfg, folder, paths, samples, chosen, fits, events=lambda _: n_testing
    )
    scan = steps.run(
        "strength", _strength, cfg, samples, models, fits, closure, events=lambda _: n_testing
    )
    passfail = steps.run(
        "passfail", _passfail, cfg, folder, samples, closure, events=lambda _: n_testing
    )
    n_peers = len(fits.x_def) + n_testing
    peers = steps.run("peers", _peers, cfg, samples, fits, closure, events=lambda _: n_peers)
    summary = _summary(cfg, models, fits, closure, scan, passfail)
    summary["peers"] = peers
    summary["step_seconds"] = steps.seconds
    steps.run("report", _write_report, folder, summary, models, chosen, fits, samples, closure)
    summary["step_seconds"] = steps.seconds
    write_summary(folder, summary)
    steps.write(folder)
    return summary


def _classifier_entries(classifiers: dict[str, ClassifierJson]) -> ClassifierEntries:
    """The classifiers' entries of the summary, DisCo's where it was trained."""
    if "disco" in classifiers:
        return {
            "baseline": classifiers["baseline"],
            "disco": classifiers["disco"],
            "irgi": classifiers["irgi"],
            "kde": classifiers["kde"],
        }
    return {
        "baseline": classifiers["baseline"],
        "irgi": classifiers["irgi"],
        "kde": classifiers["kde"],
    }


def _summary(
    cfg: LhcoConfig,
    models: list[TrainedModel],
    fits: Decorrelation,
    closure: Closure,
    scan: StrengthScan,
    passfail: PassFailComparison,
) -> LhcoSummary:
    """The study's summary: sizes, provenance, per-classifier figures, scans and the paper's claims."""
    stats = closure.statistics
    later: Verdicts = {}  # claims and the comparison read the summary; the run adds the rest
    summary: LhcoSummary = {
        **summary_header("lhco", cfg.name, cfg.source),
        "sizes": cfg.sizes,
        **_provenance(cfg),
        "n_testing_after_mjj_cut": closure.n_after_mjj_cut,
        "processor_path": closure.agreement,
        **_classifier_entries(closure.classifiers),
        "depth": int(fits.chosen["irgi"]),
        "sigma_r": fits.chosen["kde"],
        "models": [m.to_json() for m in models],
        "scans": fits.scans,
        "contamination": stats.contamination,
        "automatic_parameters": stats.automatic,
        "statistics_seconds": stats.timings,
        "strength_scan": scan,
        "passfail": passfail,
        **later,
    }
    summary["claims"] = paper_claims(summary)
    summary["paper_comparison"] = paper_comparison(summary)
    return summary


def _write_report(
    folder: Path,
    summary: LhcoSummary,
    models: list[TrainedModel],
    chosen: ChosenModels,
    fits: Decorrelation,
    samples: Samples,
    closure: Closure,
) -> None:
    """Figures and ``report.md``."""
    from rosenblatt.studies.lhco.report import figures

    test = samples.testing
    mjj, label = np.asarray(test["mjj"], dtype=np.float64), np.asarray(test["label"])
    figs = figures(folder, summary, models, chosen, fits, closure, mjj, label)
    write_text(folder / "report.md", _report_text(summary, figs, folder))


def _report_text(summary: LhcoSummary, figs: dict[str, str], peers_folder: Path) -> str:
    """``report.md``: the report of ``summary`` showing ``figs``, the peers' figure drawn into ``peers_folder``."""
    from rosenblatt.studies.lhco.report import report

    text = report(summary, figs)
    if summary.get("peers"):
        from rosenblatt.studies.peers import section

        text += "\n" + section(summary["peers"], peers_folder, PEERS_INTRO)
    return text


def render_again(folder: Path) -> LhcoSummary:
    """Decide a finished run's claims again and write its ``report.md`` and ``summary.json``.

    Only the run's ``summary.json`` is read: no step runs again and no figure is
    redrawn (the report shows the figures its previous version showed). The
    claims and the table beside the paper follow today's verdict rule
    (:func:`rosenblatt.studies._common.decide`); every other number is the run's.

    Parameters
    ----------
    folder
        The results folder of an LHCO study (``summary.json`` and ``report.md``).

    Returns
    -------
    LhcoSummary
        The summary as written again.
    """
    import re
    import tempfile

    summary: LhcoSummary = json.loads((folder / "summary.json").read_text(encoding="utf-8"))
    summary["claims"] = paper_claims(summary)
    summary["paper_comparison"] = paper_comparison(summary)
    old = (folder / "report.md").read_text(encoding="utf-8")
    shown = old.split("## Figures", 1)[-1].split("\n## ", 1)[0]
    figs = dict(re.findall(r"^!\[(\w+)\]\(([^)]+)\)$", shown, flags=re.MULTILINE))
    with tempfile.TemporaryDirectory() as scratch:
        text = _report_text(summary, figs, Path(scratch))
    write_text(folder / "report.md", text)
    write_summary(folder, summary)
    return summary
