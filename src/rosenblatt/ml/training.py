"""Train one classifier: the track-image CNN (baseline or DisCo) or the gradient boosting.

:func:`train_classifier` is the library entry point; :class:`TrainedModel`
holds the result, predicts scores for any feature table and saves itself as
a weights file plus a JSON metadata file (written last, so its presence marks
a finished model).

CNN training
------------
* Class balance: each event's weight is multiplied by ``W / (2 W_class)`` so
  that signal and background carry equal total weight in the loss.
* Loss: weighted binary cross-entropy of the logits, plus for DisCo
  ``alpha * dCor^2(mjj, score)`` over the background events of each batch
  (:func:`rosenblatt.ml.disco.distance_correlation_sqr`, weighted as
  :func:`rosenblatt.metrics.distance_correlation_sqr`).
* Augmentation: every training image is reflected at random in eta and in
  phi (symmetries of the collisions), with the seeded generator.
* Optimiser: Adam. Early stopping: after every epoch the same loss is
  evaluated on the validation table (in fixed batches of the training batch
  size); training stops after ``patience`` epochs without an improvement
  larger than ``min_delta`` and the best epoch's weights are kept.
* Reproducibility: the seed fixes the initial weights and the batch order;
  training runs with ``torch.use_deterministic_algorithms(True)`` and a fixed
  number of threads, so the same seed on the same machine gives identical
  weights on the CPU (on a GPU, an operation without a deterministic kernel
  warns instead). The global torch random state and settings are restored
  afterwards.
* Device: CUDA when available (``device=None``), else the CPU.

The metadata of a model records the seed, alpha, epochs, the validation AUC
and the validation-background dCor^2 (both from :mod:`rosenblatt.metrics`).
"""

from __future__ import annotations

import copy
import json
import math
import os
import time
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from rosenblatt._atomic import atomic_write, write_text
from rosenblatt._records import file_entries, seal
from rosenblatt.ml.files import TORCHSCRIPT_SUFFIX, model_file, model_stem
from rosenblatt.ml.gbdt import GBDTOptions, TreeEnsemble, fit_gbdt
from rosenblatt.ml.tables import EventArrays, Table, event_arrays, table_name
from rosenblatt.typing import FloatArray, Int64Array

__all__ = [
    "KINDS",
    "CNNOptions",
    "TrainedModel",
    "balanced_weights",
    "make_options",
    "train_classifier",
    "train_on_arrays",
]

#: classifier kinds and what they read from the feature table
KINDS = ("cnn", "gbdt")


@dataclass(frozen=True)
class CNNOptions:
    """Hyper-parameters of the CNN training.

    Attributes
    ----------
    max_epochs
        Upper limit of epochs (the paper: 30).
    batch_size
        Events per gradient step. The paper uses 10 000 on 9x10^4 training
        events; a sample of a few thousand events per class needs smaller
        batches for enough steps per epoch (on 2000 Pythia events per class,
        15 epochs: AUC 0.89 with 256, 0.86 with 512 at the default step size).
        DisCo's dCor^2 is taken over the background half of each batch, so it
        is noisier in small batches.
    learning_rate
        Adam step size (3e-3 reached in 15 epochs what 1e-3 did not in 15).
    patience, min_delta
        Early stopping: stop after ``patience`` epochs whose validation loss
        did not fall below the best by more than ``min_delta``.
    augment
        Reflect each training image at random in eta and in phi (``eta -> -eta``
        and ``phi -> -phi`` are symmetries of the collisions). On 200 Pythia
        events per class it lifts the validation AUC from 0.53-0.69 to
        0.84-0.88 (three seeds).
    n_threads
        torch CPU threads during training (``None``: leave torch's setting).
    device
        ``"cpu"``, ``"cuda"``, ...; ``None`` picks CUDA when available.
    max_block_bytes
        Memory bound of the in-loss distance correlation (see
        :mod:`rosenblatt.ml.disco`).
    """

    max_epochs: int = 30
    batch_size: int = 256
    learning_rate: float = 3e-3
    patience: int = 5
    min_delta: float = 0.0
    augment: bool = True
    n_threads: int | None = None
    device: str | None = None
    max_block_bytes: int = 2 * 2**20

    def __post_init__(self) -> None:
        for name in ("max_epochs", "batch_size", "patience"):
            if int(getattr(self, name)) < 1:
                msg = f"{name} must be a positive integer, got {getattr(self, name)!r}"
                raise ValueError(msg)
        if not self.learning_rate >= 0:
            msg = f"learning_rate must be non-negative, got {self.learning_rate!r}"
            raise ValueError(msg)


def make_options(kind: str, options: Mapping[str, Any] | CNNOptions | GBDTOptions | None) -> Any:
    """Return the options dataclass of ``kind`` from a mapping (e.g. a YAML section).

    Raises
    ------
    ValueError
        On an unknown ``kind`` or option name (the message lists the valid ones).
    """
    option_class = {"cnn": CNNOptions, "gbdt": GBDTOptions}.get(kind)
    if option_class is None:
        msg = f"kind must be one of {', '.join(KINDS)}, got {kind!r}"
        raise ValueError(msg)
    if options is None:
        return option_class()
    if isinstance(options, (CNNOptions, GBDTOptions)):
        if not isinstance(options, option_class):
            msg = f"kind {kind!r} takes {option_class.__name__}, got {type(options).__name__}"
            raise TypeError(msg)
        return options
    valid = {f.name for f in fields(option_class)}
    unknown = sorted(set(options) - valid)
    if unknown:
        msg = (
            f"unknown training option(s) for kind {kind!r}: {', '.join(unknown)} "
            f"(valid: {', '.join(sorted(valid))})"
        )
        raise ValueError(msg)
    return option_class(**dict(options))


def balanced_weights(label: Int64Array, weight: FloatArray, name: str) -> FloatArray:
    """Scale event weights so that signal and background have equal totals (mean 1 per event).

    Raises
    ------
    ValueError
        If either class is missing or has a non-positive total weight.
    """
    balanced = np.empty_like(weight)
    for value, class_name in ((0, "background"), (1, "signal")):
        in_class = label == value
        total = float(weight[in_class].sum())
        if not total > 0:
            msg = (
                f"{name} has {int(in_class.sum())} {class_name} events with total weight "
                f"{total:g}: both classes need a positive total weight"
            )
            raise ValueError(msg)
        balanced[in_class] = weight[in_class] * (len(weight) / (2 * total))
    return balanced


@dataclass
class TrainedModel:
    """A trained classifier: ``model`` (a :class:`~rosenblatt.ml.cnn.TrackImageCNN`
    or a :class:`~rosenblatt.ml.gbdt.TreeEnsemble`) and its ``metadata``.
    """

    kind: str
    model: Any
    metadata: dict[str, Any]

    def predict_arrays(self, arrays: EventArrays, *, batch_size: int = 4096) -> FloatArray:
        """Scores in [0, 1] (float64) of already extracted event arrays."""
        if self.kind == "gbdt":
            if arrays.substructure is None:
                msg = "the gradient boosting needs the substructure columns (mj1, mj2, tau21_1, tau21_2)"
                raise ValueError(msg)
            return np.asarray(self.model.predict(arrays.substructure), dtype=np.float64)
        if arrays.images is None:
            msg = "the CNN needs the image column"
            raise ValueError(msg)
        from rosenblatt.ml.cnn import predict_scores

        return predict_scores(self.model, arrays.images, batch_size)

    def predict(self, table: Table, *, batch_size: int = 4096) -> FloatArray:
        """Scores in [0, 1] (float64), one per event of a feature table."""
        arrays = event_arrays(table, images=self.kind == "cnn", substructure=self.kind == "gbdt")
        return self.predict_arrays(arrays, batch_size=batch_size)

    def save(self, stem: str | Path, *, with_files: Iterable[Path] = ()) -> Path:
        """Write the model's files, the metadata ``stem.json`` last.

        A CNN is written as ``stem.pt`` (state dict) and ``stem.torchscript.pt``
        (TorchScript, for coffea's ``torch_wrapper``; its file name is recorded
        in the metadata as ``torchscript``), the gradient boosting as
        ``stem.npz``. Every file is written completely or not at all
        (:mod:`rosenblatt._atomic`), the metadata last, with the size and
        content hash of the model's files and of ``with_files`` (files of the
        model written before, such as its scores): its presence means the
        model is complete, and the record shows whether a file changed since
        (:func:`write_model_metadata`). Returns its path.
        """
        stem = model_stem(stem)
        stem.parent.mkdir(parents=True, exist_ok=True)
        if self.kind == "cnn":
            import torch

            from rosenblatt.ml.torchscript import save_torchscript

            state = {key: value.cpu() for key, value in self.model.state_dict().items()}
            with atomic_write(model_file(stem, ".pt")) as temporary:
                torch.save(state, temporary)
            scripted = save_torchscript(self.model, model_file(stem, TORCHSCRIPT_SUFFIX))
            self.metadata["torchscript"] = scripted.name
            files = [model_file(stem, ".pt"), scripted]
        else:
            with atomic_write(model_file(stem, ".npz")) as temporary:
                self.model.save(temporary)
            files = [model_file(stem, ".npz")]
        return write_model_metadata(stem, self.metadata, [*files, *with_files])

    @classmethod
    def load(cls, stem: str | Path) -> TrainedModel:
        """Read a model written by :meth:`save` (torch weights with ``weights_only=True``).

        ``stem`` is the path without suffix or the path of any of the model's files.
        """
        stem = model_stem(stem)
        metadata_path = model_file(stem, ".json")
        if not metadata_path.is_file():
            msg = f"model metadata {metadata_path} does not exist"
            raise FileNotFoundError(msg)
        metadata = json.loads(metadata_path.read_text())
        for key in RECORD_KEYS:
            metadata.pop(key, None)
        kind = metadata.get("kind")
        if kind == "cnn":
            from rosenblatt.ml.cnn import load_network

            return cls(kind, load_network(model_file(stem, ".pt")), metadata)
        if kind == "gbdt":
            return cls(kind, TreeEnsemble.load(model_file(stem, ".npz")), metadata)
        msg = f"{metadata_path}: unknown model kind {kind!r} (expected one of {', '.join(KINDS)})"
        raise ValueError(msg)


#: the keys of a model's metadata file that record its files (not metadata of the model)
RECORD_KEYS = ("files", "checksum")


def write_model_metadata(
    stem: str | Path, metadata: Mapping[str, Any], files: Iterable[Path]
) -> Path:
    """Write ``stem.json``: the metadata, the size and hash of ``files`` and a checksum.

    The record (``files``, ``checksum``) is what
    :func:`rosenblatt._records.check_files` and
    :func:`rosenblatt._records.is_sealed` check when the model is reused.
    Returns the path written.
    """
    stem = model_stem(stem)
    path = model_file(stem, ".json")
    document = seal({**metadata, "files": file_entries(stem.parent, files)})
    write_text(path, json.dumps(document, indent=1) + "\n")
    return path


@contextmanager
def _torch_settings(n_threads: int | None, device: Any) -> Iterator[None]:
    """Deterministic algorithms and a thread count for the block; restored afterwards."""
    import torch

    previous_threads = torch.get_num_threads()
    previous_deterministic = torch.are_deterministic_algorithms_enabled()
    previous_warn_only = torch.is_deterministic_algorithms_warn_only_enabled()
    previous_cudnn = torch.backends.cudnn.deterministic, torch.backends.cudnn.benchmark
    if device.type == "cuda":
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
        torch.backends.cudnn.deterministic, torch.backends.cudnn.benchmark = True, False
    if n_threads is not None:
        torch.set_num_threads(n_threads)
    # on a GPU an operation without a deterministic kernel warns instead of failing
    torch.use_deterministic_algorithms(True, warn_only=device.type != "cpu")
    try:
        cuda_devices = [device.index or 0] if device.type == "cuda" else []
        with torch.random.fork_rng(devices=cuda_devices):
            yield
    finally:
        torch.use_deterministic_algorithms(previous_deterministic, warn_only=previous_warn_only)
        torch.set_num_threads(previous_threads)
        torch.backends.cudnn.deterministic, torch.backends.cudnn.benchmark = previous_cudnn


class _Objective:
    """Weighted BCE plus ``alpha`` times dCor^2(mjj, score) of the background events."""

    def __init__(self, alpha: float, max_block_bytes: int) -> None:
        self.alpha = alpha
        self.max_block_bytes = max_block_bytes

    def terms(self, logits: Any, label: Any, weight: Any, mjj: Any) -> tuple[Any, Any]:
        """Return the summed weighted BCE and the batch dCor^2 (``None`` when alpha is 0)."""
        import torch
        from torch.nn.functional import binary_cross_entropy_with_logits

        from rosenblatt.ml.disco import distance_correlation_sqr

        bce_sum = binary_cross_entropy_with_logits(logits, label, weight=weight, reduction="sum")
        if self.alpha == 0:
            return bce_sum, None
        background = label == 0
        if int(background.sum()) < 2:
            return bce_sum, logits.new_zeros(())
        score = torch.sigmoid(logits[background])
        dcor = distance_correlation_sqr(
            mjj[background], score, weight[background], max_block_bytes=self.max_block_bytes
        )
        return bce_sum, dcor


def _reflect_at_random(images: Any, generator: Any) -> Any:
    """Reflect each image ``(n, eta, phi)`` in eta and in phi, each with probability 1/2."""
    import torch

    flips = torch.randint(0, 2, (len(images), 2), generator=generator).bool().to(images.device)
    images = torch.where(flips[:, 0, None, None], images.flip(1), images)
    return torch.where(flips[:, 1, None, None], images.flip(2), images)


def _batches(n: int, batch_size: int, order: Int64Array) -> Iterator[Int64Array]:
    """Consecutive slices of ``order``, each sorted (faster gathers, same loss)."""
    for start in range(0, n, batch_size):
        yield np.sort(order[start : start + batch_size])


class _CNNData:
    """The training and validation tensors of one CNN fit, cut into batches on demand."""

    def __init__(self, train: EventArrays, val: EventArrays, device: Any) -> None:
        import torch

        from rosenblatt.ml.cnn import check_images

        assert train.images is not None
        assert val.images is not None
        check_images(train.images, "train images")
        check_images(val.images, "validation images")
        self.arrays = {"train": train, "validation": val}
        self.device = device
        self.label = {
            k: torch.from_numpy(a.label.astype(np.float32)) for k, a in self.arrays.items()
        }
        self.weight = {
            "train": torch.from_numpy(balanced_weights(train.label, train.weight, "train table")),
            "validation": torch.from_numpy(
                balanced_weights(val.label, val.weight, "validation table")
            ),
        }
        self.mjj = {k: torch.from_numpy(a.mjj) for k, a in self.arrays.items()}
        # fixed validation batches, shuffled once so each batch mixes both classes
        self.val_order = np.random.default_rng(0).permutation(len(val))

    def batch(self, sample: str, index: Int64Array) -> tuple[Any, ...]:
        """Images, labels, weights and m_jj of the events ``index`` of ``sample``, on the device."""
        import torch

        images = self.arrays[sample].images
        assert images is not None
        index_t = torch.from_numpy(index)
        return (
            torch.from_numpy(np.array(images[index], dtype=np.float32)).to(self.device),
            self.label[sample][index_t].to(self.device),
            self.weight[sample][index_t].to(self.device, torch.float32),
            self.mjj[sample][index_t].to(self.device),
        )


def _validation_loss(
    network: Any, data: _CNNData, objective: _Objective, alpha: float, batch_size: int
) -> tuple[float, float | None]:
    """The validation loss (weighted BCE plus alpha times the mean batch dCor²) and that mean."""
    import torch

    network.eval()
    bce_total, dcor_values = 0.0, []
    with torch.no_grad():
        for index in _batches(len(data.val_order), batch_size, data.val_order):
            images, label, weight, mjj = data.batch("validation", index)
            bce_sum, dcor = objective.terms(network(images), label, weight, mjj)
            bce_total += float(bce_sum)
            if dcor is not None:
                dcor_values.append(float(dcor))
    bce = bce_total / float(data.weight["validation"].sum())
    if not dcor_values:
        return bce, None
    dcor_mean = float(np.mean(dcor_values))
    return bce + alpha * dcor_mean, dcor_mean


def _train_epoch(
    network: Any,
    optimizer: Any,
    data: _CNNData,
    objective: _Objective,
    generator: Any,
    alpha: float,
    options: CNNOptions,
) -> tuple[float, float | None]:
    """One pass over the shuffled training sample; its mean BCE and mean batch dCor²."""
    import torch

    network.train()
    n_train = len(data.arrays["train"])
    order = torch.randperm(n_train, generator=generator).numpy()
    train_bce, train_weight_sum, train_dcor = 0.0, 0.0, []
    for index in _batches(n_train, options.batch_size, order):
        images, label, weight, mjj = data.batch("train", index)
        if options.augment:
            images = _reflect_at_random(images, generator)
        bce_sum, dcor = objective.terms(network(images), label, weight, mjj)
        loss = bce_sum / weight.sum()
        if dcor is not None:
            loss = loss + alpha * dcor
            train_dcor.append(float(dcor.detach()))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        train_bce += float(bce_sum.detach())
        train_weight_sum += float(weight.sum())
    return train_bce / train_weight_sum, float(np.mean(train_dcor)) if train_dcor else None


class _Stopped(NamedTuple):
    """Where the training stopped: the epochs run, the best one and its validation loss."""

    epochs: int
    best_epoch: int
    best_loss: float


def _train_until_stopped(
    network: Any,
    optimizer: Any,
    data: _CNNData,
    objective: _Objective,
    generator: Any,
    alpha: float,
    options: CNNOptions,
    epochs: Iterable[int],
    history: list[dict[str, float | None]],
) -> _Stopped:
    """Train epoch after epoch until the validation loss stops improving; keep the best epoch.

    Each epoch's losses are appended to ``history``. Training stops after
    ``options.patience`` epochs without an improvement larger than
    ``options.min_delta``, and the network is left with the best epoch's weights.
    """
    best_loss, best_epoch, best_state = math.inf, 0, copy.deepcopy(network.state_dict())
    epoch = 0
    for epoch in epochs:
        train_bce, train_dcor = _train_epoch(
            network, optimizer, data, objective, generator, alpha, options
        )
        val_loss, val_dcor = _validation_loss(network, data, objective, alpha, options.batch_size)
        history.append(
            {
                "epoch": epoch,
                "train_bce": train_bce,
                "train_batch_dcor2": train_dcor,
                "val_loss": val_loss,
                "val_batch_dcor2": val_dcor,
            }
        )
        if val_loss < best_loss - options.min_delta:
            best_loss, best_epoch = val_loss, epoch
            best_state = copy.deepcopy(network.state_dict())
        elif epoch - best_epoch >= options.patience:
            break
    network.load_state_dict(best_state)
    return _Stopped(epoch, best_epoch, best_loss)


def _train_cnn(
    train: EventArrays,
    val: EventArrays,
    *,
    alpha: float,
    seed: int,
    options: CNNOptions,
    progress: bool,
) -> tuple[Any, dict[str, Any]]:
    """Train the CNN with early stopping on the validation loss; return the best epoch's network."""
    import torch

    from rosenblatt.ml.cnn import TrackImageCNN

    device = torch.device(options.device or ("cuda" if torch.cuda.is_available() else "cpu"))
    objective = _Objective(alpha, options.max_block_bytes)
    data = _CNNData(train, val, device)
    history: list[dict[str, float | None]] = []
    started = time.perf_counter()
    with _torch_settings(options.n_threads, device):
        torch.manual_seed(seed)
        network = TrackImageCNN()
        assert train.images is not None
        network.fit_input_scale(train.images)
        network.to(device)
        optimizer = torch.optim.Adam(network.parameters(), lr=options.learning_rate)
        generator = torch.Generator().manual_seed(seed)
        epochs: Iterable[int] = range(1, options.max_epochs + 1)
        if progress:
            from tqdm.auto import tqdm

            epochs = tqdm(epochs, desc=f"CNN alpha={alpha:g} seed={seed}", unit="epoch")
        stop = _train_until_stopped(
            network, optimizer, data, objective, generator, alpha, options, epochs, history
        )
        network.eval()
    summary = {
        "epochs": stop.epochs,
        "best_epoch": stop.best_epoch,
        "stopped_early": stop.epochs < options.max_epochs,
        "best_val_loss": stop.best_loss,
        "device": str(device),
        "n_threads": options.n_threads
        if options.n_threads is not None
        else torch.get_num_threads(),
        "torch_version": torch.__version__,
        "seconds": time.perf_counter() - started,
        "history": history,
    }
    return network, summary


def train_on_arrays(
    train: EventArrays,
    val: EventArrays,
    *,
    kind: str = "cnn",
    alpha: float = 0.0,
    seed: int = 0,
    options: Mapping[str, Any] | CNNOptions | GBDTOptions | None = None,
    progress: bool = False,
) -> TrainedModel:
    """:func:`train_classifier` on already extracted :class:`~rosenblatt.ml.tables.EventArrays`."""
    from rosenblatt.metrics import distance_correlation_sqr, roc_auc

    resolved = make_options(kind, options)
    alpha = float(alpha)
    if not (math.isfinite(alpha) and alpha >= 0):
        msg = f"alpha must be a finite non-negative number, got {alpha!r}"
        raise ValueError(msg)
    seed = int(seed)
    if kind == "cnn":
        model, summary = _train_cnn(
            train, val, alpha=alpha, seed=seed, options=resolved, progress=progress
        )
        trained = TrainedModel("cnn", model, {})
    else:
        if alpha != 0:
            msg = f"the gradient boosting has no DisCo term: alpha must be 0, got {alpha:g}"
            raise ValueError(msg)
        if train.substructure is None or val.substructure is None:
            msg = (
                "the gradient boosting needs the substructure columns (mj1, mj2, tau21_1, tau21_2)"
            )
            raise ValueError(msg)
        started = time.perf_counter()
        ensemble, summary = fit_gbdt(
            train.substructure,
            train.label,
            balanced_weights(train.label, train.weight, "train table"),
            val.substructure,
            val.label,
            balanced_weights(val.label, val.weight, "validation table"),
            seed=seed,
            options=resolved,
        )
        summary["seconds"] = time.perf_counter() - started
        trained = TrainedModel("gbdt", ensemble, {})
    val_scores = trained.predict_arrays(val)
    background = val.label == 0
    trained.metadata = {
        "kind": kind,
        "alpha": alpha,
        "seed": seed,
        "train_events": len(train),
        "val_events": len(val),
        "val_auc": roc_auc(val.label, val_scores, val.weight),
        "val_dcor2": distance_correlation_sqr(
            val.mjj[background], val_scores[background], val.weight[background]
        ),
        "options": asdict(resolved),
        **summary,
    }
    if kind == "cnn":
        from rosenblatt.ml.cnn import ARCHITECTURE

        trained.metadata["architecture"] = ARCHITECTURE
    return trained


def train_classifier(
    train_table: Table,
    val_table: Table,
    *,
    kind: str = "cnn",
    alpha: float = 0.0,
    seed: int = 0,
    options: Mapping[str, Any] | CNNOptions | GBDTOptions | None = None,
    progress: bool = False,
) -> TrainedModel:
    """Train one classifier on a feature table, with early stopping on another.

    Parameters
    ----------
    train_table, val_table
        Feature tables (pandas, awkward, pyarrow or parquet path) with both
        signal and background events.
    kind
        ``"cnn"`` (track images, torch) or ``"gbdt"`` (jet substructure,
        scikit-learn).
    alpha
        DisCo strength: the loss is BCE + ``alpha`` dCor^2(mjj, score) of the
        background in each batch; 0 is the plain (baseline) CNN.
    seed
        Fixes the initial weights and the batch order.
    options
        :class:`CNNOptions` or :class:`~rosenblatt.ml.gbdt.GBDTOptions`, or a
        mapping of their fields.
    progress
        Show a progress bar over epochs.

    Returns
    -------
    TrainedModel
        With ``metadata`` holding seed, alpha, epochs, ``val_auc`` and
        ``val_dcor2`` (dCor^2 of mjj and score over the validation background).
    """
    if kind not in KINDS:
        msg = f"kind must be one of {', '.join(KINDS)}, got {kind!r}"
        raise ValueError(msg)
    images, substructure = kind == "cnn", kind == "gbdt"
    train = event_arrays(
        train_table,
        images=images,
        substructure=substructure,
        name=table_name(train_table, "train table"),
    )
    val = event_arrays(
        val_table,
        images=images,
        substructure=substructure,
        name=table_name(val_table, "validation table"),
    )
    return train_on_arrays(
        train, val, kind=kind, alpha=alpha, seed=seed, options=options, progress=progress
    )
