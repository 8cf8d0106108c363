"""``rosenblatt train CONFIG``: train a scan of classifiers from a YAML config.

The configuration and what the command writes are described once, in
``DESCRIPTION``: the command's help (``rosenblatt train --help``), in plain text.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rosenblatt.commands._locking import add_lock_argument, holding_locks

__all__ = ["add_parser", "load_config", "main"]

#: the command's help: the module's text without its reStructuredText markup
DESCRIPTION = """\
Train a scan of classifiers from a YAML configuration. It names the feature tables of
every sample of the partition and the scan:

    samples:                  # sample name -> parquet file (or a list of files)
      train: data/features/train.parquet
      validation: data/features/validation.parquet
      testing: [data/features/testing-qcd.parquet, data/features/testing-wprime.parquet]
    train_sample: train       # default "train"
    validation_sample: validation   # default "validation" (early stopping)
    output: results/train     # models, scores and scan.json
    kind: cnn                 # cnn (track images, torch) or gbdt (substructure)
    seeds: [0, 1, 2]          # or a count: 3
    baseline: true            # train the plain CNN for every seed
    alphas: [0, 1, 3, 10]     # DisCo strengths (empty for none or for gbdt)
    workers: 2                # parallel training processes
    training:                 # options of the kind (CNNOptions / GBDTOptions)
      max_epochs: 30
      batch_size: 1024

Relative paths are taken from the current directory. Every sample table gets one column
score_<model> per model, written into its parquet file. The models are saved in
OUTPUT/models/: a CNN as <model>.pt (weights) and <model>.torchscript.pt (TorchScript, for
coffea's torch_wrapper and rosenblatt.ml.make_scorer), the gradient boosting as
<model>.npz, each with its metadata <model>.json. A second run with the same
configuration trains nothing new.
"""

_KEYS = {
    "samples",
    "train_sample",
    "validation_sample",
    "output",
    "kind",
    "seeds",
    "baseline",
    "alphas",
    "workers",
    "training",
}


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register the ``train`` sub-command."""
    parser = subparsers.add_parser(
        "train",
        help="train a scan of classifiers (baseline, DisCo, gradient boosting) from a YAML config",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("config", type=Path, help="YAML config of the scan")
    parser.add_argument(
        "--workers",
        type=int,
        default=None,
        help="parallel training processes (overrides the config)",
    )
    parser.add_argument(
        "--output", type=Path, default=None, help="output directory (overrides the config)"
    )
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    add_lock_argument(parser)
    parser.set_defaults(func=main)


def load_config(path: Path) -> dict[str, Any]:
    """Read and check a train config; return it with defaults filled in.

    Raises
    ------
    FileNotFoundError
        If the config does not exist.
    TypeError
        If the file does not hold a mapping.
    ValueError
        On unknown keys or a missing ``samples`` or ``output`` section.
    """
    import yaml

    if not path.is_file():
        msg = f"train config {path} does not exist"
        raise FileNotFoundError(msg)
    config = yaml.safe_load(path.read_text()) or {}
    if not isinstance(config, Mapping):
        msg = f"{path}: the config must be a mapping of keys, got {type(config).__name__}"
        raise TypeError(msg)
    unknown = sorted(set(config) - _KEYS)
    if unknown:
        msg = f"{path}: unknown key(s) {', '.join(unknown)} (valid: {', '.join(sorted(_KEYS))})"
        raise ValueError(msg)
    for required in ("samples", "output"):
        if required not in config:
            msg = f"{path}: the config needs a {required!r} entry"
            raise ValueError(msg)
    samples = config["samples"]
    if not isinstance(samples, Mapping) or not samples:
        msg = f"{path}: 'samples' must map sample names to parquet files"
        raise ValueError(msg)
    seeds = config.get("seeds", 10)
    if isinstance(seeds, int):
        seeds = list(range(seeds))
    kind = config.get("kind", "cnn")
    default_alphas: list[float] = [] if kind == "gbdt" else [0.5 * i for i in range(21)]
    return {
        "samples": {
            str(name): [Path(p) for p in value] if isinstance(value, list) else Path(value)
            for name, value in samples.items()
        },
        "train_sample": str(config.get("train_sample", "train")),
        "validation_sample": str(config.get("validation_sample", "validation")),
        "output": Path(config["output"]),
        "kind": kind,
        "seeds": [int(s) for s in seeds],
        "baseline": bool(config.get("baseline", kind == "cnn")),
        "alphas": [float(a) for a in (config.get("alphas", default_alphas) or [])],
        "workers": int(config.get("workers", 1)),
        "training": dict(config.get("training") or {}),
    }


def main(args: argparse.Namespace) -> int:
    """Run the scan of the config; print a one-line summary per model."""

    config = load_config(args.config)
    with holding_locks(args, [args.output or config["output"]]):
        return _train(args, config)


def _train(args: argparse.Namespace, config: dict[str, Any]) -> int:
    """Train the scan while holding its output folder's lock; print a line per model."""
    from rosenblatt.ml.scan import run_scan

    result = run_scan(
        config["samples"],
        args.output or config["output"],
        train=config["train_sample"],
        validation=config["validation_sample"],
        kind=config["kind"],
        seeds=config["seeds"],
        alphas=config["alphas"],
        baseline=config["baseline"],
        options=config["training"],
        n_workers=args.workers or config["workers"],
        progress=not args.no_progress,
    )
    print(
        f"{len(result.models)} models in {result.output_dir / 'models'} "
        f"({len(result.trained)} trained now)"
    )
    print(f"{'model':<24} {'epochs':>6} {'val AUC':>8} {'val dCor2':>10}")
    for model in result.models:
        print(
            f"{model['name']:<24} {model.get('epochs', model.get('trees_kept', 0)):>6} "
            f"{model['val_auc']:>8.4f} {model['val_dcor2']:>10.3g}"
        )
    sys.stdout.flush()
    return 0
