"""One classifier score per event of awkward feature-table records, for coffea processors.

:func:`make_scorer` turns a score specification into a :class:`Scorer`, a
picklable callable from awkward records (the fields of
:data:`rosenblatt.hep.features.TABLE_COLUMNS`) to a float64 numpy array of
one score per event:

``{"column": "tau21_1"}``
    The column itself; ``{"column": "tau21_1", "negate": True}`` its
    negative (for taggers where small values mean signal).
``{"torchscript": "models/baseline_s0.torchscript.pt"}``
    A TorchScript file of the track-image CNN, through coffea's
    ``torch_wrapper`` (:class:`~rosenblatt.ml.wrapper.TrackImageWrapper`).
``{"model": "models/baseline_s0.pt"}``
    A model saved by :func:`~rosenblatt.ml.run_scan` or ``rosenblatt train``:
    a CNN ``.pt`` is scored through its TorchScript file beside it
    (``<name>.torchscript.pt``) when there is one and coffea is installed,
    otherwise with :func:`rosenblatt.ml.cnn.predict_scores`; a gradient
    boosting ``.npz`` with :meth:`~rosenblatt.ml.gbdt.TreeEnsemble.predict` on
    ``mj1, mj2, tau21_1, tau21_2``.

Files are checked when the scorer is made and loaded on first use, once per
process (a scorer pickled to dask or process-pool workers carries only the
path). Paths are made absolute when the scorer is made. For workers that do
not see the driver's disk, :meth:`Scorer.by_value` reads the model file once
where it is called; the scorer then carries its bytes and each process loads
the model from them, never opening the path.
"""

from __future__ import annotations

import abc
import copy
import hashlib
import importlib.util
import io
import zipfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np
from numpy.typing import NDArray

from rosenblatt.ml.cache import cached_content, cached_model
from rosenblatt.ml.files import TORCHSCRIPT_SUFFIX, torchscript_file
from rosenblatt.ml.tables import IMAGE_SHAPE, SUBSTRUCTURE_COLUMNS
from rosenblatt.typing import FloatArray

if TYPE_CHECKING:
    from rosenblatt.ml.gbdt import TreeEnsemble

__all__ = [
    "ColumnScorer",
    "GBDTScorer",
    "ImageCNNScorer",
    "Scorer",
    "TorchScriptScorer",
    "make_scorer",
]

_Model = TypeVar("_Model")

#: the keys of each kind of score specification (the first one names the kind)
_SPEC_KEYS = {
    "column": ("column", "negate"),
    "torchscript": ("torchscript",),
    "model": ("model",),
}


class Scorer(abc.ABC):
    """A picklable callable from awkward records to one float64 score per event.

    Attributes
    ----------
    description : str
        What scores, e.g. ``"torchscript models/baseline_s0.torchscript.pt"``.
    columns : tuple of str
        The record fields it reads.
    """

    description: str
    columns: tuple[str, ...]

    def by_value(self) -> Scorer:
        """This scorer with its model file's bytes read in, to travel to workers by value.

        The processes that score with the result load the model from those
        bytes and never open its file. A scorer that reads no file returns
        itself.

        Raises
        ------
        OSError
            If the model file cannot be read.
        """
        return self

    def __call__(self, records: Any) -> FloatArray:
        """Return the scores ``(n,)`` of ``n`` records.

        Raises
        ------
        TypeError
            If ``records`` is not an awkward array of records.
        KeyError
            If a needed field is missing (the message names it).
        ValueError
            If the values cannot be scored (the message says which events).
        """
        _require_fields(records, self.columns, self.description)
        if len(records) == 0:
            return np.empty(0, dtype=np.float64)
        return np.asarray(self._score(records), dtype=np.float64)

    @abc.abstractmethod
    def _score(self, records: Any) -> NDArray[Any]:
        """The scores of a non-empty batch of records with all needed fields."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.description!r})"


class ColumnScorer(Scorer):
    """A numeric column of the records (negated when ``negate``)."""

    def __init__(self, column: str, *, negate: bool = False) -> None:
        self.column = column
        self.negate = negate
        self.columns = (column,)
        self.description = f"column {'-' if negate else ''}{column}"

    def _score(self, records: Any) -> NDArray[Any]:
        values = _flat_field(records, self.column, self.description)
        return -values if self.negate else values


class _FileScorer(Scorer):
    """A scorer of a model file ``path``; ``content``: its bytes, where carried by value."""

    path: Path
    content: bytes | None = None
    digest: str = ""

    def by_value(self) -> Scorer:
        """This scorer with its model file's bytes read in (see :meth:`Scorer.by_value`)."""
        if self.content is not None:
            return self
        carried = copy.copy(self)
        carried.content = self.path.read_bytes()
        carried.digest = hashlib.blake2b(carried.content, digest_size=16).hexdigest()
        carried._carried()
        return carried

    def _carried(self) -> None:
        """Called on the copy that carries the bytes, before it is returned."""

    def _model(self, kind: str, load: Callable[[Any], _Model]) -> _Model:
        """The model, loaded once per process from the carried bytes or from the file."""
        if self.content is not None:
            return cached_content(kind, self.digest, self.content, load)
        return cached_model(kind, self.path, load)


class TorchScriptScorer(_FileScorer):
    """A TorchScript file of the track-image CNN, through coffea's ``torch_wrapper``."""

    def __init__(self, path: str | Path) -> None:
        from rosenblatt.ml.wrapper import TrackImageWrapper

        self.path = _existing_file(path, "TorchScript file").absolute()
        _check_torchscript(self.path)
        self.description = f"torchscript {path}"
        self.columns = ("image",)
        self.wrapper = TrackImageWrapper(str(self.path))

    def _carried(self) -> None:
        from rosenblatt.ml.wrapper import TrackImageWrapper

        self.wrapper = TrackImageWrapper(str(self.path), self.content)

    def _score(self, records: Any) -> NDArray[Any]:
        import awkward as ak

        _check_pixel_counts(records, self.description)
        return np.asarray(ak.to_numpy(self.wrapper(records)))


class ImageCNNScorer(_FileScorer):
    """CNN weights (``.pt`` state dict) scored with :func:`rosenblatt.ml.cnn.predict_scores`."""

    def __init__(self, path: str | Path) -> None:
        self.path = _existing_file(path, "CNN weights").absolute()
        self.description = f"cnn {path}"
        self.columns = ("image",)

    def _score(self, records: Any) -> NDArray[Any]:
        from rosenblatt.ml.cnn import check_images, load_network, predict_scores
        from rosenblatt.ml.tables import image_column

        images = image_column(records, self.description)
        check_images(images, f"{self.description}: images")
        return predict_scores(self._model("cnn", load_network), images)


class GBDTScorer(_FileScorer):
    """Gradient-boosted trees (``.npz``) on ``mj1, mj2, tau21_1, tau21_2``."""

    def __init__(self, path: str | Path) -> None:
        self.path = _existing_file(path, "gradient-boosting model").absolute()
        _check_tree_file(self.path)
        self.description = f"gbdt {path}"
        self.columns = SUBSTRUCTURE_COLUMNS

    def _score(self, records: Any) -> NDArray[Any]:

        features = np.column_stack(
            [_flat_field(records, name, self.description) for name in self.columns]
        )
        return self._model("gbdt", _tree_ensemble).predict(features)


def _tree_ensemble(source: Path | bytes) -> TreeEnsemble:
    """The tree ensemble of a ``.npz`` file or of its bytes."""
    from rosenblatt.ml.gbdt import TreeEnsemble as Ensemble

    return Ensemble.load(io.BytesIO(source) if isinstance(source, bytes) else source)


def make_scorer(spec: Mapping[str, Any]) -> Scorer:
    """Return the :class:`Scorer` of a score specification (see the module docstring).

    Parameters
    ----------
    spec
        ``{"column": NAME}`` (optionally ``"negate": True``),
        ``{"torchscript": PATH}`` or ``{"model": PATH}`` (``.pt`` or ``.npz``).

    Raises
    ------
    ValueError
        On a specification with none or several kinds, unknown keys, a model
        file of another suffix, or a file that is not TorchScript or not a
        gradient-boosting model.
    FileNotFoundError
        If the file does not exist (the message names it).
    ImportError
        For ``torchscript`` without coffea and torch installed.
    """
    kind = _spec_kind(spec)
    if kind == "column":
        negate = spec.get("negate", False)
        if not isinstance(negate, bool):
            msg = f"score specification {dict(spec)}: 'negate' must be true or false"
            raise ValueError(msg)
        return ColumnScorer(str(spec["column"]), negate=negate)
    if kind == "torchscript":
        _require_coffea()
        return TorchScriptScorer(spec["torchscript"])
    return _model_scorer(spec["model"])


def _spec_kind(spec: object) -> str:
    if not isinstance(spec, Mapping):
        msg = f"a score specification must be a mapping, got {type(spec).__name__}"
        raise TypeError(msg)
    kinds = [kind for kind in _SPEC_KEYS if kind in spec]
    if len(kinds) != 1:
        msg = (
            f"score specification {dict(spec)} must have exactly one of the keys "
            f"{', '.join(_SPEC_KEYS)}"
        )
        raise ValueError(msg)
    unknown = sorted(set(spec) - set(_SPEC_KEYS[kinds[0]]))
    if unknown:
        msg = (
            f"score specification {dict(spec)}: unknown key(s) {', '.join(unknown)} "
            f"(a {kinds[0]} score takes {', '.join(_SPEC_KEYS[kinds[0]])})"
        )
        raise ValueError(msg)
    return kinds[0]


def _model_scorer(path: str | Path) -> Scorer:
    """The scorer of a model file saved by training: by its suffix."""
    name = Path(path).name
    if name.endswith(TORCHSCRIPT_SUFFIX):
        _require_coffea()
        return TorchScriptScorer(path)
    if name.endswith(".npz"):
        return GBDTScorer(path)
    if name.endswith(".pt"):
        _existing_file(path, "CNN weights")
        scripted = torchscript_file(path)
        if scripted.is_file() and _has_coffea():
            return TorchScriptScorer(scripted)
        return ImageCNNScorer(path)
    msg = f"model file {path} must be CNN weights (.pt) or a gradient-boosting model (.npz)"
    raise ValueError(msg)


def _has_coffea() -> bool:
    return all(importlib.util.find_spec(name) is not None for name in ("coffea", "torch"))


def _require_coffea() -> None:
    if not _has_coffea():
        msg = "scoring a TorchScript file needs coffea and torch (pip install 'rosenblatt[hep,ml]')"
        raise ImportError(msg)


def _existing_file(path: str | Path, what: str) -> Path:
    path = Path(path)
    if not path.is_file():
        msg = f"{what} {path} does not exist"
        raise FileNotFoundError(msg)
    return path


def _check_torchscript(path: Path) -> None:
    """Raise a :class:`ValueError` unless ``path`` is a TorchScript archive."""
    if zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as archive:
            if any(name.endswith("/constants.pkl") for name in archive.namelist()):
                return
    msg = (
        f"{path} is not a TorchScript file (torch.jit.save); CNN weights (.pt) are "
        "turned into one with rosenblatt.ml.export_torchscript"
    )
    raise ValueError(msg)


def _check_tree_file(path: Path) -> None:
    """Raise a :class:`ValueError` unless ``path`` holds the arrays of a tree ensemble."""
    try:
        with np.load(path, allow_pickle=False) as stored:
            names = set(stored.files)
    except (OSError, ValueError) as error:
        msg = f"{path} is not a gradient-boosting model (.npz of TreeEnsemble.save): {error}"
        raise ValueError(msg) from error
    if not {"baseline", "roots"} <= names:
        msg = f"{path} is not a gradient-boosting model: it lacks the arrays baseline and roots"
        raise ValueError(msg)


def _require_fields(records: Any, names: tuple[str, ...], where: str) -> None:
    fields = getattr(records, "fields", None)
    if fields is None or not hasattr(records, "layout"):
        msg = f"{where}: records must be an awkward array of records, got {type(records).__name__}"
        raise TypeError(msg)
    missing = [name for name in names if name not in fields]
    if missing:
        msg = (
            f"{where}: the records lack the field(s) {', '.join(missing)} "
            f"(they have: {', '.join(fields) or 'none'})"
        )
        raise KeyError(msg)


def _flat_field(records: Any, name: str, where: str) -> FloatArray:
    """One number per event of a record field, as float64."""
    import awkward as ak

    field = records[name]
    values = np.asarray(ak.to_numpy(field)) if field.ndim == 1 else None
    if values is None or not np.issubdtype(values.dtype, np.number):
        msg = f"{where}: field {name} must hold one number per event, got type {field.type}"
        raise ValueError(msg)
    return values.astype(np.float64)


def _check_pixel_counts(records: Any, where: str) -> None:
    import awkward as ak

    n_pixels = IMAGE_SHAPE[0] * IMAGE_SHAPE[1]
    counts = np.asarray(ak.num(records["image"], axis=1))
    wrong = counts != n_pixels
    if wrong.any():
        msg = (
            f"{where}: field image must hold {n_pixels} pixels per event "
            f"({IMAGE_SHAPE[0]}x{IMAGE_SHAPE[1]}), "
            f"{int(wrong.sum())} of {len(counts)} events differ "
            f"(first at row {int(np.flatnonzero(wrong)[0])} with {int(counts[wrong][0])})"
        )
        raise ValueError(msg)
