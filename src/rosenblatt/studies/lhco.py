"""The LHC Olympics ABCD study of the method paper, end to end.

QCD dijet background and W' -> X Y -> qqqq signal are generated with Pythia 8
(cached), turned into dijet mass and track images by the coffea processor
(cached), and partitioned as in the paper: classifier training, validation
(also the defining background sample of IRGI and KDE), optimisation (choice
of the free parameters) and testing (background plus 10% signal, for ABCD).
A CNN is trained over seeds and DisCo strengths; IRGI and KDE decorrelate the
best baseline; all four are compared in the DCC-AUC plane and in the ABCD
closure test over a grid of cuts.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

import rosenblatt as rb
from rosenblatt.abcd import ClosureScan, abcd_histogram, closure_scan

__all__ = ["run"]

log = logging.getLogger("rosenblatt.lhco")

PARTS = ("train", "validation", "optimisation", "testing")
CLASSIFIERS = ("baseline", "disco", "irgi", "kde")


# ---------------------------------------------------------------- data
def _sizes(config: dict[str, Any]) -> dict[str, dict[str, int]]:
    partition = config["partition"]
    return {part: {cls: int(partition[part][cls]) for cls in ("background", "signal")} for part in PARTS}


def _generate(config: dict[str, Any], data_dir: Path) -> dict[str, Path]:
    """Generate (or reuse) the QCD and W' event files."""
    from rosenblatt.hep.generation import generate_file

    sizes = _sizes(config)
    margin = float(config["data"].get("margin", 0.03))
    needed = {
        "qcd": sum(s["background"] for s in sizes.values()),
        "wprime": sum(s["signal"] for s in sizes.values()),
    }
    workers = int(config["data"].get("workers") or os.cpu_count() or 1)
    paths = {}
    for offset, (process, n_needed) in enumerate(needed.items()):
        path = data_dir / f"{process}.root"
        n_events = int(np.ceil(n_needed * (1 + margin)))
        log.info("generating %d %s events into %s (cached for later runs)", n_events, process, path)
        summary = generate_file(
            path,
            process,
            n_events,
            seed=int(config.get("seed", 0)) * 1000 + offset,
            pthat_min=float(config["data"].get("pthat_min", 1000.0)),
            chunk_size=int(config["data"].get("chunk_size", 500)),
            workers=workers,
        )
        log.info(
            "%s: %d events pass the trigger out of %d generated", process, summary.n_events, summary.n_generated
        )
        paths[process] = path
    return paths


def _features(config: dict[str, Any], data_dir: Path, paths: dict[str, Path]) -> Any:
    """Run the dijet processor over the event files (cached as parquet)."""
    import awkward as ak

    from rosenblatt.io.parquet import read_parquet, write_parquet
    from rosenblatt.processors.runner import run_dijet

    table_path = data_dir / "features.parquet"
    stamp_path = data_dir / "features.json"
    stamp = {name: [p.stat().st_size, p.stat().st_mtime_ns] for name, p in sorted(paths.items())}
    if table_path.exists() and stamp_path.exists() and json.loads(stamp_path.read_text()) == stamp:
        log.info("reusing the feature table %s", table_path)
        return read_parquet(table_path)
    features = config.get("features", {})
    result = run_dijet(
        {name: [str(p)] for name, p in paths.items()},
        executor=features.get("executor", "futures"),
        workers=int(features.get("workers") or os.cpu_count() or 1),
        chunksize=int(features.get("chunksize", 2000)),
    )
    for dataset, steps in result["cutflow"].items():
        log.info("cut flow %s: %s", dataset, ", ".join(f"{k} {v}" for k, v in steps.items()))
    table = result["table"]
    write_parquet(table, table_path)
    stamp_path.write_text(json.dumps(stamp))
    return ak.Array(table)


def _partition(table: Any, config: dict[str, Any]) -> dict[str, Any]:
    """Split the table into the paper's four samples, per class, at random."""
    rng = np.random.default_rng(int(config.get("seed", 0)))
    label = np.asarray(table["label"])
    sizes = _sizes(config)
    parts: dict[str, list[NDArray[np.int64]]] = {part: [] for part in PARTS}
    for cls, value in (("background", 0), ("signal", 1)):
        index = rng.permutation(np.flatnonzero(label == value))
        needed = sum(sizes[part][cls] for part in PARTS)
        if len(index) < needed:
            msg = (
                f"the feature table has {len(index)} {cls} events with two jets, the partition needs "
                f"{needed}; raise data.margin in the configuration"
            )
            raise ValueError(msg)
        start = 0
        for part in PARTS:
            stop = start + sizes[part][cls]
            parts[part].append(index[start:stop])
            start = stop
    return {part: table[np.sort(np.concatenate(chunks))] for part, chunks in parts.items()}


# ------------------------------------------------------------ classifiers
def _train(config: dict[str, Any], data_dir: Path, samples: dict[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    from rosenblatt.ml import run_scan

    classifier = config["classifier"]
    # models are cached per training setting: a changed configuration trains anew
    setting = json.dumps(
        {"classifier": classifier, "disco": config.get("disco"), "partition": config["partition"], "seed": config.get("seed")},
        sort_keys=True,
    )
    scan_dir = data_dir / f"scan-{hashlib.sha256(setting.encode()).hexdigest()[:12]}"
    result = run_scan(
        samples,
        scan_dir,
        train="train",
        validation="validation",
        kind=classifier.get("kind", "cnn"),
        seeds=list(range(int(classifier.get("seeds", 3)))),
        alphas=[float(a) for a in config.get("disco", {}).get("alphas", [])],
        options=classifier.get("options"),
        n_workers=int(classifier.get("workers") or os.cpu_count() or 1),
    )
    log.info("classifiers: %d trained now, %d reused", len(result.trained), len(result.models) - len(result.trained))
    from rosenblatt.ml.files import model_file

    suffix = ".npz" if classifier.get("kind", "cnn") == "gbdt" else ".pt"
    for model in result.models:
        model["path"] = str(model_file(scan_dir / "models" / model["name"], suffix))
    return result.samples, result.models


def _scores(sample: Any, column: str) -> NDArray[np.float64]:
    return np.asarray(sample[column], dtype=np.float64)


def _evaluate(sample: Any, score: NDArray[np.float64]) -> dict[str, float]:
    """AUC on the sample and dCor^2(mjj, score) on its background."""
    label = np.asarray(sample["label"])
    mjj = np.asarray(sample["mjj"], dtype=np.float64)
    bkg = label == 0
    return {
        "auc": rb.roc_auc(label, score),
        "dcc": rb.distance_correlation_sqr(mjj[bkg], score[bkg]),
    }


# ---------------------------------------------------------------- study
def run(config: dict[str, Any], folder: Path) -> dict[str, Any]:
    """Run the LHCO study of ``config``; write the report, summary, figures and transforms."""
    data_dir = Path(config["data"].get("folder", Path("data") / config["name"]))
    data_dir.mkdir(parents=True, exist_ok=True)
    paths = _generate(config, data_dir)
    table = _features(config, data_dir, paths)
    samples = _partition(table, config)
    samples, models = _train(config, data_dir, samples)
    opt, val, test = samples["optimisation"], samples["validation"], samples["testing"]

    # every trained model on the optimisation sample
    for model in models:
        model.update({f"opt_{k}": v for k, v in _evaluate(opt, _scores(opt, model["column"])).items()})
    baselines = [m for m in models if m["name"].startswith(("baseline", "gbdt"))]
    best = max(baselines, key=lambda m: m["opt_auc"])
    disco_models = [m for m in models if m["name"].startswith("disco") and float(m["alpha"]) > 0]
    auc_floor = float(config.get("disco_selection", {}).get("min_auc", 0.8))
    eligible = [m for m in disco_models if m["opt_auc"] > auc_floor]
    disco = None
    if eligible:
        disco = min(eligible, key=lambda m: m["opt_dcc"])
    elif disco_models:
        disco = max(disco_models, key=lambda m: m["opt_auc"])
    log.info("best baseline %s (AUC %.3f); DisCo representative %s", best["name"], best["opt_auc"], None if disco is None else disco["name"])

    # decorrelation of the best baseline, defined on the validation background
    val_bkg = np.asarray(val["label"]) == 0
    x_def = np.asarray(val["mjj"], dtype=np.float64)[val_bkg]
    y_def = _scores(val, best["column"])[val_bkg]
    opt_mjj = np.asarray(opt["mjj"], dtype=np.float64)
    opt_base = _scores(opt, best["column"])
    depths = [d for d in config["irgi"]["depths"] if d <= rb.IRGI.max_depth(len(x_def))]
    sigmas = [float(s) for s in config["kde"]["sigma_r"]]
    tolerance = float(config.get("selection", {}).get("auc_tolerance", 0.01))
    scans: dict[str, list[dict[str, Any]]] = {"irgi": [], "kde": []}
    fitted: dict[str, dict[float, Any]] = {"irgi": {}, "kde": {}}
    for name, values, make in (("irgi", depths, lambda v: rb.IRGI(depth=int(v))), ("kde", sigmas, lambda v: rb.KDE(sigma_r=v))):
        for value in values:
            transform = make(value).fit(x_def, y_def)
            fitted[name][value] = transform
            gamma = transform.transform(opt_mjj, opt_base)
            scans[name].append({"value": value, **_evaluate(opt, gamma)})
    chosen: dict[str, Any] = {}
    for name in ("irgi", "kde"):
        near = [s for s in scans[name] if s["auc"] >= best["opt_auc"] - tolerance] or scans[name]
        pick = min(near, key=lambda s: s["dcc"])
        chosen[name] = pick["value"]
        fitted[name][pick["value"]].save(folder / f"{name}.json")
    log.info("chosen IRGI depth %s and KDE sigma_r %s", chosen["irgi"], chosen["kde"])

    # testing sample
    test_mjj = np.asarray(test["mjj"], dtype=np.float64)
    test_label = np.asarray(test["label"])
    test_base = _scores(test, best["column"])
    test_scores = {
        "baseline": test_base,
        "irgi": fitted["irgi"][chosen["irgi"]].transform(test_mjj, test_base),
        "kde": fitted["kde"][chosen["kde"]].transform(test_mjj, test_base),
    }
    if disco is not None:
        test_scores["disco"] = _scores(test, disco["column"])
    abcd_cfg = config.get("abcd", {})
    mjj_max = float(abcd_cfg.get("mjj_max", 4000.0))
    x_lo, x_hi = (float(v) for v in abcd_cfg.get("x0", [2000.0, 3700.0]))
    y_lo, y_hi = (float(v) for v in abcd_cfg.get("y0", [0.1, 0.85]))
    x0 = np.linspace(x_lo, x_hi, int(abcd_cfg.get("n_x0", 100)))
    y0 = np.linspace(y_lo, y_hi, int(abcd_cfg.get("n_y0", 100)))
    keep = test_mjj < mjj_max
    n_perm = int(config.get("permutations", 100))
    bkg = test_label == 0
    summary_classifiers: dict[str, Any] = {}
    closures, agreement = _closures_in_processor(
        config, paths, test, {"baseline": best, "disco": disco},
        {"irgi": fitted["irgi"][chosen["irgi"]], "kde": fitted["kde"][chosen["kde"]]},
        x0, y0, mjj_max,
        {name: abcd_histogram(test_mjj[keep], score[keep], test_label[keep], x0=x0, y0=y0) for name, score in test_scores.items()},
    )
    for name in CLASSIFIERS:
        if name not in test_scores:
            continue
        score = test_scores[name]
        perm = rb.permutation_test(test_mjj[bkg], score[bkg], n_permutations=n_perm, seed=1)
        scan = closures[name]
        best_cut = scan.best()
        pulls = scan.pull[scan.valid]
        summary_classifiers[name] = {
            "auc": rb.roc_auc(test_label, score),
            "dcc": float(perm.statistic),
            "dcc_floor": float(perm.floor),
            "dcc_floor_std": float(perm.floor_std),
            "dcc_p_value": float(perm.p_value),
            "r50": rb.background_rejection(test_label, score),
            "inverse_jsd": rb.inverse_jsd(test_mjj, test_label, score),
            "eta_best": best_cut["eta"],
            "x0": best_cut["x0"],
            "y0": best_cut["y0"],
            "closure_at_best": best_cut,
            "frac_eta_below_1e-2": scan.fraction_below(1e-2),
            "frac_eta_below_1e-3": scan.fraction_below(1e-3),
            "pull_mean": float(np.mean(pulls)) if len(pulls) else float("nan"),
            "pull_std": float(np.std(pulls)) if len(pulls) else float("nan"),
        }
    # statistics: uncertainties, closure test, likelihood, contamination (studies/lhco_statistics.py)
    from rosenblatt.studies.lhco_statistics import statistics

    val_label = np.asarray(val["label"])
    stats = statistics(
        config,
        folder,
        mjj=test_mjj,
        label=test_label,
        scores=test_scores,
        baseline=test_base,
        chosen=chosen,
        x_def=x_def,
        y_def=y_def,
        x_sig=np.asarray(val["mjj"], dtype=np.float64)[val_label == 1],
        y_sig=_scores(val, best["column"])[val_label == 1],
        closures=closures,
        x0=x0,
        y0=y0,
        mjj_max=mjj_max,
    )
    for name, values in stats["classifiers"].items():
        summary_classifiers[name].update(values)
    summary_classifiers["irgi"]["depth"] = chosen["irgi"]
    summary_classifiers["kde"]["sigma_r"] = chosen["kde"]
    summary_classifiers["baseline"]["model"] = best["name"]
    if disco is not None:
        summary_classifiers["disco"]["model"] = disco["name"]
        summary_classifiers["disco"]["alpha"] = disco.get("alpha")

    summary: dict[str, Any] = {
        "study": "lhco",
        "name": config["name"],
        "sizes": _sizes(config),
        "n_testing_after_mjj_cut": int(keep.sum()),
        "processor_path": agreement,
        **summary_classifiers,
        "depth": chosen["irgi"],
        "sigma_r": chosen["kde"],
        "models": [{k: v for k, v in m.items() if isinstance(v, (int, float, str, type(None)))} for m in models],
        "scans": scans,
        "contamination": stats["contamination"],
        "automatic_parameters": stats["automatic"],
        "statistics_seconds": stats["timings"],
    }
    summary["claims"] = _claims(summary)
    (folder / "summary.json").write_text(json.dumps(summary, indent=2, default=float), encoding="utf-8")
    from rosenblatt.studies.lhco_report import figures, report

    figs = figures(folder, summary, models, best, disco, scans, chosen, closures, test_mjj, test_label, test_scores, fitted["irgi"][chosen["irgi"]], x_def, y_def, stats)
    (folder / "report.md").write_text(report(summary, figs), encoding="utf-8")
    return summary


def _closures_in_processor(
    config: dict[str, Any],
    paths: dict[str, Path],
    test: Any,
    models: dict[str, dict[str, Any] | None],
    transforms: dict[str, Any],
    x0: NDArray[np.float64],
    y0: NDArray[np.float64],
    mjj_max: float,
    in_memory: dict[str, Any],
) -> tuple[dict[str, ClosureScan], dict[str, Any]]:
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

    scorers = {name: make_scorer({"model": model["path"]}) for name, model in models.items() if model is not None}
    variants = [Variant(name, name, tuple(y0)) for name in scorers]
    variants += [Variant(name, "baseline", tuple(y0), transform=t) for name, t in transforms.items()]
    files = np.asarray(test["file"], dtype=str)
    entries = np.asarray(test["entry"], dtype=np.int64)
    selection = {path: np.sort(entries[files == path]) for path in np.unique(files)}
    features = config.get("features", {})
    executor = features.get("executor", "futures")
    with make_executor(executor, 1 if executor == "iterative" else int(features.get("workers") or os.cpu_count() or 1)) as pool:
        output = run_processor(
            {name: [str(p)] for name, p in paths.items()},
            AnalysisProcessor(scorers=scorers, variants=tuple(variants), x0=tuple(x0), x_max=mjj_max, entries=selection),
            pool,
            chunksize=int(features.get("chunksize", 2000)),
        )
    closures = {name: closure_scan(h[{"dataset": sum}]) for name, h in output["abcd"].items()}
    differences = {}
    for name, h in output["abcd"].items():
        got = h[{"dataset": sum}].view(flow=True)
        expected = in_memory[name].view(flow=True)
        differences[name] = float(np.max(np.abs(got["value"] - expected["value"])))
    analysed = sum(counts["in ABCD"] for counts in output["cutflow"].values())
    log.info("testing sample through the analysis processor: %d events in ABCD; largest count difference from memory %s", analysed, differences)
    return closures, {"events_in_abcd": int(analysed), "max_count_difference": differences, "cutflow": output["cutflow"]}


def _pm(entry: dict[str, Any], key: str, fmt: str) -> str:
    """``value ± sd`` of ``entry[key]`` (its bootstrap sd ``entry[key + '_err']``, where there is one)."""
    error = entry.get(f"{key}_err")
    if error is None or not np.isfinite(error):
        return format(entry[key], fmt)
    return f"{format(entry[key], fmt)} ± {format(error, fmt)}"


def _claims(summary: dict[str, Any]) -> list[dict[str, Any]]:
    """The paper's claims, checked on this sample."""
    claims = []
    base = summary["baseline"]
    disco = summary.get("disco")
    for name in ("irgi", "kde"):
        result = summary[name]
        label = name.upper()
        if disco is not None:
            claims.append({
                "claim": f"dCor² of {label} at or below DisCo's chosen model",
                "held": result["dcc"] <= disco["dcc"],
                "value": f"{_pm(result, 'dcc', '.2e')} vs {_pm(disco, 'dcc', '.2e')}",
            })
        ratio = base["dcc"] / result["dcc"] if result["dcc"] > 0 else float("inf")
        claims.append({
            "claim": f"dCor² of {label} at least 100x below the baseline's, or within 2x of the permutation floor",
            "held": ratio >= 100 or result["dcc"] <= 2 * result["dcc_floor"],
            "value": f"{ratio:.0f}x below baseline; {result['dcc'] / result['dcc_floor']:.2f}x the floor",
        })
        claims.append({
            "claim": f"AUC of {label} within 0.02 of the baseline's",
            "held": abs(result["auc"] - base["auc"]) <= 0.02,
            "value": f"{_pm(result, 'auc', '.4f')} vs {_pm(base, 'auc', '.4f')}",
        })
        others = [base["frac_eta_below_1e-2"]] + ([disco["frac_eta_below_1e-2"]] if disco else [])
        claims.append({
            "claim": f"larger fraction of the (x0, y0) grid with |eta| < 1e-2 for {label} than for the baseline and DisCo",
            "held": result["frac_eta_below_1e-2"] > max(others),
            "value": f"{result['frac_eta_below_1e-2']:.3f} vs {', '.join(f'{v:.3f}' for v in others)}",
        })
    return claims
