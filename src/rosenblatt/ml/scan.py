"""Scans of classifiers over seeds and DisCo strengths, as in the paper.

The paper trains the baseline CNN with 10 seeds and the DisCo CNN with 10
seeds at each ``alpha`` in 0, 0.5, ..., 10. :func:`run_scan` trains such a
grid in parallel processes (one torch thread each), saves every model in
``output_dir/models/`` as ``<name>.pt`` and ``<name>.torchscript.pt`` (the
CNN's weights, and the network as TorchScript for coffea's ``torch_wrapper``)
or ``<name>.npz`` (the gradient boosting), ``<name>.scores.npz`` (its scores
on every sample) and ``<name>.json`` (metadata, written last), and writes the
scores back as columns ``score_<name>`` of the event tables of every sample.

Model names: ``baseline_s<seed>``, ``disco_a<alpha>_s<seed>`` (``alpha`` as
``%g``: ``disco_a3.5_s2``) and ``gbdt_s<seed>``.

Resuming: a model whose metadata file exists (with the same kind, alpha, seed,
options and sample sizes; the thread count and device may differ) is not
trained again, so an interrupted scan
continues where it stopped; a metadata file written with other options is an
error rather than silently mixed in.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from collections.abc import Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import asdict, dataclass
from multiprocessing import get_context
from pathlib import Path
from typing import Any

import numpy as np

from rosenblatt._atomic import atomic_write, write_text
from rosenblatt._interrupt import (
    end_with_parent,
    ignore_interrupt,
    stop_pool,
    workers_ignore_interrupt,
)
from rosenblatt._records import check_files, corrupt, is_sealed
from rosenblatt.ml.files import model_file
from rosenblatt.ml.tables import (
    EventArrays,
    Table,
    event_arrays,
    load_table,
    table_name,
    with_columns,
)
from rosenblatt.ml.training import (
    KINDS,
    RECORD_KEYS,
    TrainedModel,
    make_options,
    train_on_arrays,
    write_model_metadata,
)
from rosenblatt.typing import FloatArray

__all__ = ["ModelSpec", "ScanResult", "plan_scan", "run_scan"]

#: alphas of the paper's DisCo scan: 0, 0.5, ..., 10
PAPER_ALPHAS = tuple(0.5 * i for i in range(21))

#: the metadata that must agree for a saved model to count as done
_IDENTITY_KEYS = (
    "kind",
    "alpha",
    "seed",
    "training_seed",
    "options",
    "train_events",
    "val_events",
)

#: options that change where and how fast a model trains, not which model it is
_EXECUTION_OPTIONS = ("n_threads", "device", "max_block_bytes")

#: the metadata collected in ``scan.json``
_SUMMARY_KEYS = (
    "name",
    "column",
    "kind",
    "alpha",
    "seed",
    "baseline",
    "epochs",
    "val_auc",
    "val_dcor2",
)


@dataclass(frozen=True)
class ModelSpec:
    """One model of a scan.

    Attributes
    ----------
    kind
        ``"cnn"`` or ``"gbdt"``.
    seed
        The user-facing seed (0, 1, ...).
    alpha
        DisCo strength; ``None`` for the baseline CNN (and the gradient boosting).
    """

    kind: str
    seed: int
    alpha: float | None = None

    @property
    def name(self) -> str:
        """``baseline_s3``, ``disco_a3.5_s2`` or ``gbdt_s0``."""
        if self.kind == "gbdt":
            return f"gbdt_s{self.seed}"
        if self.alpha is None:
            return f"baseline_s{self.seed}"
        return f"disco_a{self.alpha:g}_s{self.seed}"

    @property
    def column(self) -> str:
        """Name of the score column in the event tables."""
        return f"score_{self.name}"

    @property
    def training_seed(self) -> int:
        """The seed given to the training: distinct for every (kind, alpha, seed).

        DisCo at ``alpha = 0`` and the baseline with the same user seed are
        independent trainings, as in the paper.
        """
        stream = 0 if self.alpha is None else 1 + round(self.alpha * 1000)
        entropy = [self.seed, KINDS.index(self.kind), stream]
        return int(np.random.SeedSequence(entropy).generate_state(1)[0])


def plan_scan(
    kind: str = "cnn",
    seeds: Sequence[int] = range(10),
    alphas: Sequence[float] = PAPER_ALPHAS,
    *,
    baseline: bool = True,
) -> list[ModelSpec]:
    """List the models of a scan: baseline x seeds, then each alpha x seeds.

    For ``kind="gbdt"`` the scan is over seeds only and ``alphas`` must be empty.

    Raises
    ------
    ValueError
        On an unknown kind, a repeated seed or alpha, a negative or non-finite
        alpha, or alphas for the gradient boosting.
    """
    if kind not in KINDS:
        msg = f"kind must be one of {', '.join(KINDS)}, got {kind!r}"
        raise ValueError(msg)
    seeds = [int(s) for s in seeds]
    alphas = [float(a) for a in alphas]
    for label, values in (("seeds", seeds), ("alphas", alphas)):
        if len(set(values)) != len(values):
            msg = f"{label} must not repeat, got {values}"
            raise ValueError(msg)
    bad = [a for a in alphas if not (math.isfinite(a) and a >= 0)]
    if bad:
        msg = f"alphas must be finite and non-negative, got {bad}"
        raise ValueError(msg)
    if kind == "gbdt":
        if alphas:
            msg = f"the gradient boosting has no DisCo term: alphas must be empty, got {alphas}"
            raise ValueError(msg)
        return [ModelSpec("gbdt", seed) for seed in seeds]
    specs = [ModelSpec("cnn", seed) for seed in seeds] if baseline else []
    specs += [ModelSpec("cnn", seed, alpha) for alpha in alphas for seed in seeds]
    return specs


@dataclass
class ScanResult:
    """What :func:`run_scan` produced.

    Attributes
    ----------
    models
        Metadata of every model of the scan (the contents of its JSON file plus
        ``name`` and ``column``), in the order of the plan.
    samples
        The sample tables with the score columns added (pandas tables are
        changed in place, parquet files rewritten, awkward and pyarrow tables
        replaced by new objects).
    trained
        Names of the models trained by this call (the others were found done).
    output_dir
        Where the models are.
    """

    models: list[dict[str, Any]]
    samples: dict[str, Any]
    trained: list[str]
    output_dir: Path


def _sample_parts(value: Any) -> list[Any]:
    """A sample is one table or a list of tables (e.g. one parquet file per process)."""
    if isinstance(value, (list, tuple)):
        if not value:
            msg = "a sample must have at least one table, got an empty list"
            raise ValueError(msg)
        return list(value)
    return [value]


def _concatenate(parts: list[EventArrays]) -> EventArrays:
    if len(parts) == 1:
        return parts[0]

    def join(name: str) -> Any:
        values = [getattr(part, name) for part in parts]
        return None if values[0] is None else np.concatenate(values)

    return EventArrays(
        mjj=join("mjj"),
        label=join("label"),
        weight=join("weight"),
        images=join("images"),
        substructure=join("substructure"),
    )


def _read_sample(name: str, value: Any, kind: str) -> EventArrays:
    parts = [
        event_arrays(
            part,
            images=kind == "cnn",
            substructure=kind == "gbdt",
            name=f"sample {name!r} ({table_name(part)})",
        )
        for part in _sample_parts(value)
    ]
    return _concatenate(parts)


def _store_arrays(arrays: EventArrays, directory: Path) -> None:
    directory.mkdir(parents=True)
    for field in ("mjj", "label", "weight", "images", "substructure"):
        values = getattr(arrays, field)
        if values is not None:
            np.save(directory / f"{field}.npy", values)


def _open_arrays(directory: Path) -> EventArrays:
    def load(field: str) -> Any:
        path = directory / f"{field}.npy"
        return np.load(path, mmap_mode="r", allow_pickle=False) if path.exists() else None

    return EventArrays(
        mjj=np.array(load("mjj")),
        label=np.array(load("label")),
        weight=np.array(load("weight")),
        images=load("images"),
        substructure=load("substructure"),
    )


def _identity(spec: ModelSpec, options: Any, n_train: int, n_val: int) -> dict[str, Any]:
    return {
        "kind": spec.kind,
        "alpha": 0.0 if spec.alpha is None else spec.alpha,
        "seed": spec.seed,
        "training_seed": spec.training_seed,
        "options": _model_options(asdict(options)),
        "train_events": n_train,
        "val_events": n_val,
    }


def _model_options(options: Mapping[str, Any]) -> dict[str, Any]:
    """The options that define a model, without where and how fast it runs."""
    return {key: value for key, value in options.items() if key not in _EXECUTION_OPTIONS}


def _finished(spec: ModelSpec, models_dir: Path, identity: dict[str, Any]) -> dict[str, Any] | None:
    """Metadata of a finished model, ``None`` if not trained yet; error if trained otherwise."""
    path = model_file(models_dir / spec.name, ".json")
    if not path.is_file():
        return None
    try:
        metadata = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, ValueError):
        metadata = None
    if not isinstance(metadata, dict):
        corrupt(path, "is not readable (truncated or altered)")
        return None
    if any(key in metadata for key in RECORD_KEYS):
        if not is_sealed(metadata):
            corrupt(path, "was altered after it was written (its checksum differs)")
            return None
        if not check_files(models_dir, metadata.get("files") or {}):
            return None
    metadata = {key: value for key, value in metadata.items() if key not in RECORD_KEYS}
    stored = {key: metadata.get(key) for key in _IDENTITY_KEYS}
    stored["options"] = _model_options(stored["options"] or {})
    # JSON turns tuples into lists; compare through the same round trip
    if stored != json.loads(json.dumps(identity)):
        differing = [
            key for key in _IDENTITY_KEYS if stored[key] != json.loads(json.dumps(identity[key]))
        ]
        msg = (
            f"{path} was trained with other settings ({', '.join(differing)} differ); "
            "use another output directory or remove the model's files to retrain it"
        )
        raise ValueError(msg)
    return metadata


def _worker_init() -> None:
    """One thread per worker process: torch (when installed) and OpenMP; Ctrl-C left to the parent.

    ``threadpool_limits`` reaches only the libraries loaded when it is called;
    the environment variables cover those loaded later (scikit-learn's OpenMP).
    The parent, interrupted, stops the workers; killed, its workers end by themselves.
    """
    from threadpoolctl import threadpool_limits

    ignore_interrupt()
    end_with_parent()

    for variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[variable] = "1"
    threadpool_limits(limits=1)
    try:
        import torch
    except ImportError:
        return
    torch.set_num_threads(1)


def _train_and_save(
    spec: ModelSpec,
    arrays: Mapping[str, EventArrays],
    train: str,
    validation: str,
    options: Any,
    models_dir: Path,
) -> dict[str, Any]:
    """Train one model, score every sample, save weights, scores and (last) metadata."""
    model = train_on_arrays(
        arrays[train],
        arrays[validation],
        kind=spec.kind,
        alpha=0.0 if spec.alpha is None else spec.alpha,
        seed=spec.training_seed,
        options=options,
    )
    model.metadata.update(
        name=spec.name,
        seed=spec.seed,
        training_seed=spec.training_seed,
        baseline=spec.kind == "cnn" and spec.alpha is None,
    )
    stem = models_dir / spec.name
    scores: dict[str, Any] = {name: model.predict_arrays(s) for name, s in arrays.items()}
    with atomic_write(model_file(stem, ".scores.npz")) as temporary:
        np.savez(temporary, **scores)
    model.save(stem, with_files=[model_file(stem, ".scores.npz")])
    return model.metadata


def _train_in_worker(
    spec: ModelSpec,
    arrays_dir: str,
    sample_names: list[str],
    train: str,
    validation: str,
    options: Any,
    models_dir: str,
) -> dict[str, Any]:
    """:func:`_train_and_save` in a worker process, on the memory-mapped sample arrays."""
    arrays = {name: _open_arrays(Path(arrays_dir) / name) for name in sample_names}
    return _train_and_save(spec, arrays, train, validation, options, Path(models_dir))


def _saved_scores(
    spec: ModelSpec, models_dir: Path, arrays: Mapping[str, EventArrays]
) -> dict[str, FloatArray]:
    """Scores of a finished model on every sample; evaluated again where missing."""
    path = model_file(models_dir / spec.name, ".scores.npz")
    scores: dict[str, Any] = {}
    if path.is_file():
        with np.load(path, allow_pickle=False) as stored:
            scores = {name: stored[name] for name in stored.files}
    missing = [n for n in arrays if n not in scores or len(scores[n]) != len(arrays[n])]
    if missing:
        model = TrainedModel.load(models_dir / spec.name)
        for name in missing:
            scores[name] = model.predict_arrays(arrays[name])
        with atomic_write(path) as temporary:
            np.savez(temporary, **scores)
        stem = models_dir / spec.name
        own = [model_file(stem, ".pt"), model_file(stem, ".torchscript.pt")]
        if model.kind != "cnn":
            own = [model_file(stem, ".npz")]
        write_model_metadata(stem, model.metadata, [*own, path])
    return {name: scores[name] for name in arrays}


def _write_back(
    samples: Mapping[str, Any], columns: Mapping[str, Mapping[str, FloatArray]]
) -> dict[str, Any]:
    """Add the score columns to every sample table (split across the parts of a sample)."""
    updated: dict[str, Any] = {}
    for name, value in samples.items():
        parts = _sample_parts(value)
        sizes = [_part_size(part) for part in parts]
        bounds = np.concatenate([[0], np.cumsum(sizes)])
        new_parts = [
            with_columns(
                part,
                {
                    column: scores[bounds[i] : bounds[i + 1]]
                    for column, scores in columns[name].items()
                },
            )
            for i, part in enumerate(parts)
        ]
        updated[name] = new_parts if isinstance(value, (list, tuple)) else new_parts[0]
    return updated


def _part_size(part: Any) -> int:
    if isinstance(part, (str, os.PathLike)):
        import pyarrow.parquet as pq

        return int(pq.ParquetFile(part).metadata.num_rows)
    loaded = load_table(part)
    return int(loaded.num_rows) if hasattr(loaded, "num_rows") else len(loaded)


def run_scan(
    samples: Mapping[str, Table | Sequence[Table]],
    output_dir: str | os.PathLike[str],
    *,
    train: str = "train",
    validation: str = "validation",
    kind: str = "cnn",
    seeds: Sequence[int] = range(10),
    alphas: Sequence[float] = PAPER_ALPHAS,
    baseline: bool = True,
    options: Mapping[str, Any] | Any = None,
    n_workers: int = 1,
    progress: bool = True,
) -> ScanResult:
    """Train the baseline x seeds and DisCo alpha x seeds grid; score every sample.

    Parameters
    ----------
    samples
        The partition: sample name -> feature table (pandas, awkward, pyarrow,
        parquet path) or a list of tables making one sample. Every sample gets
        a score column per model.
    output_dir
        Where models, scores and metadata go (``output_dir/models``) and the
        summary ``output_dir/scan.json``.
    train, validation
        Names of the training sample and of the early-stopping validation sample.
    kind
        ``"cnn"`` or ``"gbdt"`` (seeds only, no alphas).
    seeds, alphas, baseline
        The grid (see :func:`plan_scan`); the defaults are the paper's.
    options
        Training options (:class:`~rosenblatt.ml.training.CNNOptions`,
        :class:`~rosenblatt.ml.gbdt.GBDTOptions` or a mapping of their fields).
    n_workers
        Parallel training processes, each with one torch thread; 1 trains in
        this process. The workers are started with ``spawn``, so a script
        that calls this with ``n_workers > 1`` must do so under
        ``if __name__ == "__main__":``.
    progress
        Show a progress bar over models.

    Returns
    -------
    ScanResult
    """
    specs = plan_scan(kind, seeds, alphas, baseline=baseline)
    resolved = make_options(kind, options)
    _check_roles(samples, train, validation, n_workers)
    output = Path(output_dir)
    models_dir = output / "models"
    models_dir.mkdir(parents=True, exist_ok=True)
    arrays = {name: _read_sample(name, value, kind) for name, value in samples.items()}
    n_train, n_val = len(arrays[train]), len(arrays[validation])

    metadata: dict[str, dict[str, Any]] = {}
    pending: list[ModelSpec] = []
    for spec in specs:
        done = _finished(spec, models_dir, _identity(spec, resolved, n_train, n_val))
        if done is None:
            pending.append(spec)
        else:
            metadata[spec.name] = done

    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=len(specs), initial=len(specs) - len(pending), desc="scan", unit="model")
    try:
        metadata.update(
            _train_pending(
                pending, arrays, (train, validation), resolved, models_dir, n_workers, bar
            )
        )
    finally:
        if bar is not None:
            bar.close()

    columns: dict[str, dict[str, FloatArray]] = {name: {} for name in samples}
    for spec in specs:
        for sample, scores in _saved_scores(spec, models_dir, arrays).items():
            columns[sample][spec.column] = scores
    updated = _write_back(samples, columns)

    models = [{"name": s.name, "column": s.column, **metadata[s.name]} for s in specs]
    summary = [{key: model.get(key) for key in _SUMMARY_KEYS} for model in models]
    write_text(output / "scan.json", json.dumps({"models": summary}, indent=1) + "\n")
    return ScanResult(models, updated, [s.name for s in pending], output)


def _check_roles(samples: Mapping[str, Any], train: str, validation: str, n_workers: int) -> None:
    """The training and validation samples are among ``samples``; ``n_workers`` is positive."""
    for role, sample in (("train", train), ("validation", validation)):
        if sample not in samples:
            msg = f"{role} sample {sample!r} is not among the samples ({', '.join(samples)})"
            raise KeyError(msg)
    if n_workers < 1:
        msg = f"n_workers must be a positive integer, got {n_workers}"
        raise ValueError(msg)


def _train_pending(
    pending: list[ModelSpec],
    arrays: Mapping[str, EventArrays],
    roles: tuple[str, str],
    options: Any,
    models_dir: Path,
    n_workers: int,
    bar: Any,
) -> dict[str, dict[str, Any]]:
    """Train the models not yet saved, here or in a pool of ``n_workers`` processes."""
    train, validation = roles
    if not pending:
        return {}
    if n_workers > 1:
        return _train_in_pool(
            pending, arrays, train, validation, options, models_dir, n_workers, bar
        )
    metadata = {}
    for spec in pending:
        metadata[spec.name] = _train_and_save(spec, arrays, train, validation, options, models_dir)
        if bar is not None:
            bar.update()
    return metadata


def _train_in_pool(
    pending: list[ModelSpec],
    arrays: Mapping[str, EventArrays],
    train: str,
    validation: str,
    options: Any,
    models_dir: Path,
    n_workers: int,
    bar: Any,
) -> dict[str, dict[str, Any]]:
    results: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="rosenblatt-scan-") as scratch:
        for name, sample_arrays in arrays.items():
            _store_arrays(sample_arrays, Path(scratch) / name)
        with ProcessPoolExecutor(
            max_workers=min(n_workers, len(pending)),
            mp_context=get_context("spawn"),
            initializer=_worker_init,
        ) as pool:
            try:
                settings = (train, validation, options, models_dir)
                results |= _collect(pool, pending, list(arrays), scratch, settings, bar)
            except BaseException:
                # Ctrl-C or a failed model: the other trainings stop now, not when they end
                stop_pool(pool)
                raise
    return results


def _collect(
    pool: ProcessPoolExecutor,
    pending: list[ModelSpec],
    sample_names: list[str],
    scratch: str,
    settings: tuple[str, str, Any, Path],
    bar: Any,
) -> dict[str, dict[str, Any]]:
    """Train the pending models on the pool's workers; return their results as they end."""
    train, validation, options, models_dir = settings
    results: dict[str, dict[str, Any]] = {}
    # the workers start at the submissions: they start ignoring SIGINT, left to this process
    with workers_ignore_interrupt():
        futures: dict[Future[dict[str, Any]], ModelSpec] = {
            pool.submit(
                _train_in_worker,
                spec,
                scratch,
                sample_names,
                train,
                validation,
                options,
                str(models_dir),
            ): spec
            for spec in pending
        }
    remaining = set(futures)
    while remaining:
        done, remaining = wait(remaining, return_when=FIRST_COMPLETED)
        for future in done:
            error = future.exception()
            if error is not None:
                for other in remaining:
                    other.cancel()
                msg = f"training {futures[future].name} failed: {error}"
                raise RuntimeError(msg) from error
            results[futures[future].name] = future.result()
            if bar is not None:
                bar.update()
    return results
