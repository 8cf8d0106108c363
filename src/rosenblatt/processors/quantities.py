"""One number per event, named in a configuration: a branch, a jet feature, the user's code.

The ABCD study and ``rosenblatt fit``/``apply`` read the protected observable
``x``, the classifier score and the event weight of the user's own files with
one grammar (:func:`parse_quantity`):

``"dijet_mass"``
    A branch (a field of the chunk's events). A name that the tree does not
    hold but that is a built-in feature (:data:`JET_FEATURES`: ``mjj``,
    ``mj1``, ``mj2``, ``pt_j1``, ``deta_jj``) is computed from the two
    leading jets of the collection named by ``jets`` (``FatJet`` by default).
``"FatJet.msoftdrop[0]"``
    A field of a collection at an index (jets ordered as in the file).
    Events without that many objects are reported by :meth:`Quantity.evaluate`
    as missing, never filled with a made-up value.
``{"function": "package.module:name"}`` or ``{"function": "file.py:name"}``
    The user's own callable, given the chunk's events, returning one value
    per event (their code, as a coffea processor is).
``{"xgboost": FILE, "features": [QUANTITY, ...]}``
    An XGBoost model evaluated through ``coffea.ml_tools.xgboost_wrapper`` on
    the listed quantities, in order.
``{"torchscript": FILE, "features": [QUANTITY, ...]}``
    A TorchScript module evaluated through ``coffea.ml_tools.torch_wrapper``
    on a ``float32`` tensor of the listed quantities, in order.
``{"torchscript": FILE}``, ``{"model": FILE}``, ``{"column": NAME}``
    The scorers of :func:`rosenblatt.ml.scoring.make_scorer`, on the feature
    table of particle-level files (their track images and dijet features).

The events given to a quantity are coffea NanoEvents (``BaseSchema``: every
branch a field; ``NanoAODSchema``: collections such as ``events.FatJet``), an
awkward array of records read by uproot, or the dijet feature table of
particle-level files; a collection field is found as ``Coll_field`` or as
``Coll.field`` alike. Quantities are picklable: they carry names and paths,
and load models or the user's module once per process. For workers that do
not see the driver's disk, :meth:`Quantity.by_value` reads the model files
(XGBoost's JSON or UBJSON, a TorchScript file) and the user's module file
(its source) once on the driver; the quantity then carries their bytes, and
each process builds the model or runs the module from them instead of
opening the path. A particle-table scorer (``torchscript`` or ``model``
without ``features``) carries its scorer, which holds the model file's bytes
(:meth:`rosenblatt.ml.scoring.Scorer.by_value`).
"""

from __future__ import annotations

import dataclasses
import difflib
import hashlib
import importlib
import importlib.abc
import importlib.util
import linecache
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import awkward as ak
import numpy as np

from rosenblatt.exceptions import QuantityError
from rosenblatt.typing import BoolArray, FloatArray

__all__ = [
    "DEFAULT_JETS",
    "JET_FEATURES",
    "JET_FIELDS",
    "Quantity",
    "closest",
    "parse_quantity",
    "passes_selection",
]

#: built-in features of the two leading jets (GeV for masses and momenta)
JET_FEATURES = {
    "mjj": "invariant mass of the two leading jets",
    "mj1": "mass of the heavier of the two leading jets",
    "mj2": "mass of the lighter of the two leading jets",
    "pt_j1": "transverse momentum of the leading jet",
    "deta_jj": "absolute pseudorapidity difference of the two leading jets",
}

#: the jet fields the built-in features read
JET_FIELDS = ("pt", "eta", "phi", "mass")

#: the collection of jets of the built-in features, unless ``jets`` names another
DEFAULT_JETS = "FatJet"

#: the largest index of a collection element (``FatJet.pt[i]``)
MAX_INDEX = 2**31 - 1

_ELEMENT = re.compile(r"^([A-Za-z_]\w*)\.([A-Za-z_]\w*)\[(\d+)\]$")
_NAME = re.compile(r"^[A-Za-z_][\w.]*$")
_MAPPING_KINDS = ("function", "xgboost", "torchscript", "model", "column")
_MODULES: dict[str, Any] = {}


def closest(name: str, candidates: Sequence[str]) -> str:
    """`` (did you mean 'x'?)`` for the closest of ``candidates``, or an empty string."""
    match = difflib.get_close_matches(name, list(candidates), n=1, cutoff=0.6)
    return f" (did you mean {match[0]!r}?)" if match else ""


def _fields(events: Any) -> list[str]:
    return list(ak.fields(events)) if not hasattr(events, "fields") else list(events.fields)


def _column(events: Any, name: str) -> Any:
    """A field of the events: ``name`` itself, or ``Coll_field`` as ``Coll.field`` and back."""
    fields = _fields(events)
    if name in fields:
        return events[name]
    collection, _, rest = name.partition("_")
    if rest and collection in fields and rest in _fields(events[collection]):
        return events[collection][rest]
    raise QuantityError(f"the events have no field {name!r}{closest(name, fields)}")


def _collection_field(events: Any, collection: str, name: str) -> Any:
    """``collection.name`` of NanoAOD-schema events, or the branch ``collection_name``."""
    fields = _fields(events)
    if collection in fields and name in _fields(events[collection]):
        return events[collection][name]
    flat = f"{collection}_{name}"
    if flat in fields:
        return events[flat]
    have = [f for f in fields if f == collection or f.startswith(f"{collection}_")]
    raise QuantityError(
        f"the events have no {collection}.{name} (branch {flat})"
        + (f"; {collection} has {sorted(have)}" if have else closest(flat, fields))
    )


def _member(collection: str, name: str, available: set[str]) -> str:
    """The branch of ``collection.name``: ``Coll_name`` (TTree NanoAOD) or ``Coll.name``.

    An RNTuple may hold a collection as one field of records, whose sub-fields
    uproot names ``Coll.name``; a flat layout names the branch ``Coll_name``,
    which is what a message about a missing one names.
    """
    flat = f"{collection}_{name}"
    record = f"{collection}.{name}"
    return record if flat not in available and record in available else flat


def _as_float(values: Any, n: int, what: str) -> FloatArray:
    array = np.asarray(ak.to_numpy(values) if isinstance(values, ak.Array) else values)
    if array.shape != (n,):
        raise QuantityError(f"{what}: expected one value per event ({n}), got shape {array.shape}")
    if array.dtype.kind not in "biuf":
        raise QuantityError(f"{what}: expected numbers, got values of type {array.dtype}")
    return array.astype(np.float64, copy=False)


@dataclass(frozen=True)
class Quantity:
    """One number per event of a chunk (see the module for the grammar).

    Attributes
    ----------
    kind : str
        ``"name"`` (a branch, else a built-in jet feature), ``"element"``,
        ``"function"``, ``"xgboost"``, ``"torchscript"`` (with ``features``:
        a model of the listed quantities; without: a particle-table scorer),
        ``"model"`` or ``"column"`` (particle-table scorers).
    text : str
        How the configuration wrote it, for messages.
    name : str
        The branch or feature name (``"name"``), or ``collection.field``.
    index : int
        The object's index (``"element"``).
    path : str
        The user's module or model file.
    features : tuple of Quantity
        The model's inputs (``"xgboost"``, ``"torchscript"``).
    jets : str
        The collection of the built-in jet features.
    spec : mapping
        The specification of a particle-table scorer.
    content : bytes or None
        The bytes of the model file or the source of the module file at
        ``path``, read by :meth:`by_value` (``None``: loaded from ``path``).
    digest : str
        The BLAKE2b hash of ``content`` (which the processes' caches are keyed by).
    scorer : rosenblatt.ml.scoring.Scorer or None
        The particle-table scorer with its model file's bytes, made by
        :meth:`by_value` (``None``: made from ``spec`` in each process).
    """

    kind: str
    text: str
    name: str = ""
    index: int = 0
    path: str = ""
    features: tuple[Quantity, ...] = ()
    jets: str = DEFAULT_JETS
    spec: Mapping[str, Any] = field(default_factory=dict)
    content: bytes | None = field(default=None, repr=False)
    digest: str = ""
    scorer: Any = field(default=None, repr=False, compare=False)

    @property
    def file(self) -> str | None:
        """The file it loads in each process: a model or the user's module (``None``: none)."""
        if self.kind == "function":
            module = self.path.rpartition(":")[0]
            return module if module.endswith(".py") else None
        if self.features:
            return self.path
        return None

    def by_value(self, key: str) -> Quantity:
        """This quantity with the files it loads read in, to travel with the tasks by value.

        The model file of an ``xgboost`` or ``torchscript`` quantity of
        features is read as bytes, the user's module file (``file.py:name``)
        as its source, and so for the features of a model; the processes that
        evaluate the result build the model or run the module from those bytes
        and never open the path. A particle-table scorer of a model file
        (``torchscript`` or ``model`` without ``features``) is made here and
        carries that file's bytes (:attr:`scorer`). A function of an installed
        module (``package.module:name``) is imported as before.

        Parameters
        ----------
        key : str
            Where the quantity is configured (``"score"``), for messages.

        Raises
        ------
        QuantityError
            If a file cannot be read, in one line naming ``key`` and the path.
        """
        features = tuple(
            feature.by_value(f"{key}.features[{i}]") for i, feature in enumerate(self.features)
        )
        if self.reads_particles and self.kind != "column":
            return dataclasses.replace(self, scorer=self._carried_scorer(key))
        path = self.file
        if path is None:
            return dataclasses.replace(self, features=features)
        try:
            with open(path, "rb") as handle:
                content = handle.read()
        except OSError as err:
            reason = err.strerror or type(err).__name__
            raise QuantityError(f"{key}.{self.kind}: cannot read {path}: {reason}") from None
        digest = hashlib.blake2b(content, digest_size=16).hexdigest()
        return dataclasses.replace(self, features=features, content=content, digest=digest)

    def branches(self, available: Sequence[str]) -> tuple[list[str], list[str]]:
        """The branches this quantity reads from a tree holding ``available``.

        Returns
        -------
        needed, missing : list of str
            What it reads, and what of that the tree lacks. A user's function
            reads what it reads: it names nothing.
        """
        have = set(available)
        if self.kind == "name":
            if self.name in have or self.name not in JET_FEATURES:
                needed = [self.name]
            else:
                needed = [_member(self.jets, f, have) for f in JET_FIELDS]
        elif self.kind == "element":
            collection, name = self.name.split(".")
            needed = [_member(collection, name, have)]
        elif self.features:
            needed, missing = [], []
            for feature in self.features:
                n, m = feature.branches(available)
                needed += n
                missing += m
            return needed, missing
        else:
            needed = []
        return needed, [b for b in needed if b not in have]

    def evaluate(self, events: Any) -> tuple[FloatArray, BoolArray]:
        """Values ``(n,)`` and where they exist ``(n,)`` for ``n`` events.

        An event lacks a value when it has too few objects for an element or
        fewer than two jets for a jet feature.

        Raises
        ------
        QuantityError
            If the events lack a field, or the user's code returns something
            other than one number per event.
        """
        n = len(events)
        if self.kind == "name":
            if self.name in _fields(events) or self.name not in JET_FEATURES:
                values = _as_float(_column(events, self.name), n, self.text)
                return values, np.ones(n, dtype=bool)
            return _jet_feature(events, self.name, self.jets)
        if self.kind == "element":
            collection, name = self.name.split(".")
            objects = _collection_field(events, collection, name)
            present = np.asarray(ak.to_numpy(ak.num(objects, axis=1) > self.index))
            values = np.full(n, np.nan)
            if present.any():
                # only the events holding the object are indexed: nothing is padded to the index
                chosen = objects[present][:, self.index]
                values[present] = _as_float(chosen, int(present.sum()), self.text)
            return values, present
        if self.kind == "function":
            result = _load_callable(self.path, self.content, self.digest)(events)
            return _as_float(result, n, f"{self.text} (the user's function)"), np.ones(n, bool)
        if self.features:
            return self._feature_model(events)
        return self._table_scorer(events)

    @property
    def reads_particles(self) -> bool:
        """Whether it scores the feature table of particle-level files (a model without features)."""
        return self.kind in ("torchscript", "model", "column") and not self.features

    def _feature_model(self, events: Any) -> tuple[FloatArray, BoolArray]:
        n = len(events)
        columns, present = [], np.ones(n, dtype=bool)
        for feature in self.features:
            values, ok = feature.evaluate(events)
            columns.append(np.where(ok, values, 0.0))
            present &= ok
        matrix = np.stack(columns, axis=1) if columns else np.empty((n, 0))
        model = _load_feature_model(self.kind, self.path, self.content, self.digest)
        try:
            scores = np.asarray(model(matrix), dtype=np.float64).reshape(-1)
        except (ValueError, RuntimeError) as err:
            first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
            raise QuantityError(
                f"{self.text}: the model cannot score the {len(self.features)} features "
                f"listed: {first}"
            ) from None
        return _as_float(scores, n, self.text), present

    def _carried_scorer(self, key: str) -> Any:
        """The particle-table scorer of ``spec``, holding its model file's bytes."""
        from rosenblatt.ml.scoring import make_scorer

        if self.scorer is not None:
            return self.scorer
        try:
            return make_scorer(dict(self.spec)).by_value()
        except (OSError, ValueError) as err:
            reason = getattr(err, "strerror", None) or str(err)
            raise QuantityError(f"{key}.{self.kind}: cannot read {self.path}: {reason}") from None

    def _table_scorer(self, events: Any) -> tuple[FloatArray, BoolArray]:
        from rosenblatt.ml.scoring import make_scorer

        scorer = self.scorer
        if scorer is None:
            key = f"scorer:{self.kind}:{self.path or self.name}"
            if key not in _MODULES:
                _MODULES[key] = make_scorer(dict(self.spec))
            scorer = _MODULES[key]
        values = scorer(events)
        return _as_float(values, len(events), self.text), np.ones(len(events), dtype=bool)


def passes_selection(values: FloatArray, present: BoolArray) -> BoolArray:
    """Whether each event passes a selection, from the selection quantity's evaluation.

    An event passes where it has a value and the value is non-zero (``True``
    of a boolean); NaN does not pass.

    Parameters
    ----------
    values, present : numpy.ndarray
        What :meth:`Quantity.evaluate` of the selection returned.

    Returns
    -------
    numpy.ndarray of bool
    """
    return np.asarray(present & (np.nan_to_num(values) != 0), dtype=bool)


def parse_quantity(
    value: Any, *, key: str, base: Path | None = None, jets: str = DEFAULT_JETS
) -> Quantity:
    """Read a quantity written in a configuration (see the module for the grammar).

    Parameters
    ----------
    value : str or mapping
        What the configuration holds.
    key : str
        Where it is, for messages (``"abcd.x"``).
    base : Path, optional
        Folder that relative file paths are relative to (the configuration's).
    jets : str, default "FatJet"
        The collection of the built-in jet features.

    Raises
    ------
    QuantityError
        If ``value`` is not one of the forms, naming ``key``.
    """
    base = Path.cwd() if base is None else base
    if isinstance(value, str):
        text = value.strip()
        element = _ELEMENT.match(text)
        if element and int(element[3]) > MAX_INDEX:
            raise QuantityError(
                f"{key}: {value!r}: the index {element[3]} is beyond any collection "
                f"(at most {MAX_INDEX})"
            )
        if element:
            return Quantity(
                "element", text, name=f"{element[1]}.{element[2]}", index=int(element[3]), jets=jets
            )
        if _NAME.match(text) and "." not in text:
            return Quantity("name", text, name=text, jets=jets)
        raise QuantityError(
            f"{key}: {value!r} is neither a branch name, a collection element such as "
            "'FatJet.msoftdrop[0]', nor a built-in feature "
            f"({', '.join(JET_FEATURES)}); for anything else give {{function: 'module:name'}}"
        )
    if not isinstance(value, Mapping):
        raise QuantityError(
            f"{key}: expected a branch name or a mapping, got {type(value).__name__}"
        )
    kinds = [k for k in _MAPPING_KINDS if k in value]
    if len(kinds) != 1:
        raise QuantityError(
            f"{key}: give exactly one of {list(_MAPPING_KINDS)} (or a branch name), got {sorted(value)}"
        )
    kind = kinds[0]
    allowed = {
        "xgboost": {"xgboost", "features"},
        "torchscript": {"torchscript", "features"},
        "column": {"column", "negate"},
    }.get(kind, {kind})
    unknown = sorted(set(value) - allowed)
    if unknown:
        raise QuantityError(f"{key}: unknown key(s) {unknown} for {kind}; known: {sorted(allowed)}")
    text = f"{kind} {value[kind]}"
    if kind == "function":
        return Quantity("function", text, path=_function_path(str(value[kind]), key, base))
    if kind == "column":
        return Quantity(
            "column", str(value[kind]), name=str(value[kind]), spec=dict(value), jets=jets
        )
    path = _existing(str(value[kind]), key, kind, base)
    if kind == "xgboost" or "features" in value:
        features = value.get("features")
        if not isinstance(features, list) or not features:
            raise QuantityError(
                f"{key}.features: list the model's inputs in order, got {features!r}"
            )
        parsed = tuple(
            parse_quantity(f, key=f"{key}.features[{i}]", base=base, jets=jets)
            for i, f in enumerate(features)
        )
        return Quantity(kind, text, path=path, features=parsed, jets=jets)
    return Quantity(kind, text, path=path, spec={kind: path}, jets=jets)


def _existing(path: str, key: str, kind: str, base: Path) -> str:
    resolved = Path(path).expanduser()
    resolved = resolved if resolved.is_absolute() else base / resolved
    if not resolved.is_file():
        what = (
            "is a folder, not a file"
            if resolved.is_dir()
            else "is not a regular file"
            if resolved.exists()
            else "does not exist"
        )
        raise QuantityError(f"{key}.{kind}: file {resolved} {what}")
    return str(resolved.resolve())


def _function_path(spec: str, key: str, base: Path) -> str:
    """``module:name`` as given, or ``file.py:name`` with the file made absolute and checked."""
    module, sep, name = spec.rpartition(":")
    if not sep or not module or not name.isidentifier():
        raise QuantityError(
            f"{key}.function: write 'package.module:name' or 'file.py:name', got {spec!r}"
        )
    if module.endswith(".py"):
        return f"{_existing(module, key, 'function', base)}:{name}"
    if not all(part.isidentifier() for part in module.split(".")):
        raise QuantityError(
            f"{key}.function: {module!r} is not a module name; write 'package.module:name' "
            f"or 'file.py:{name}'"
        )
    if importlib.util.find_spec(module.split(".")[0]) is None:
        raise QuantityError(
            f"{key}.function: no module {module!r} can be imported; give the file as 'file.py:{name}'"
        )
    return spec


def _load_callable(spec: str, source: bytes | None = None, digest: str = "") -> Any:
    """The user's callable ``module:name`` or ``/abs/file.py:name``, imported once per process.

    With ``source`` (the module file's bytes), the module is run from them
    and its file is not opened.
    """
    key = f"{spec}:{digest}"
    if key in _MODULES:
        return _MODULES[key]
    module_name, _, name = spec.rpartition(":")
    if module_name.endswith(".py"):
        module = _file_module(module_name, source, spec)
    else:
        module = importlib.import_module(module_name)
    function = getattr(module, name, None)
    if not callable(function):
        raise QuantityError(f"function {spec}: {module_name} has no callable {name!r}")
    _MODULES[key] = function
    return function


def _file_module(path: str, source: bytes | None, spec: str) -> Any:
    """The module of the user's file ``path``, run from ``source`` where given.

    Its name is the same in every process for the same path
    (``_rosenblatt_user_<stem>_<hash of the path>``).
    """
    digest = hashlib.blake2b(path.encode(), digest_size=8).hexdigest()
    stem = re.sub(r"\W", "_", Path(path).stem)
    unique = f"_rosenblatt_user_{stem}_{digest}"
    if source is None:
        found = importlib.util.spec_from_file_location(unique, path)
    else:
        found = importlib.util.spec_from_loader(unique, _SourceLoader(path, source))
    if found is None or found.loader is None:
        raise QuantityError(f"function {spec}: cannot import {path}")
    if source is not None:
        # tracebacks and dask's profiler read the module's lines from here, not from its file
        lines = importlib.util.decode_source(source).splitlines(keepends=True)
        linecache.cache[path] = (len(source), None, lines, path)
    module = importlib.util.module_from_spec(found)
    sys.modules[unique] = module
    try:
        found.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(unique, None)
        raise
    return module


class _SourceLoader(importlib.abc.SourceLoader):
    """The loader of a module file's source given as bytes: the file is never opened."""

    def __init__(self, path: str, source: bytes) -> None:
        self.path, self.source = path, source

    def get_filename(self, fullname: str) -> str:
        """The module's file, as tracebacks show it."""
        return self.path

    def get_data(self, path: str) -> bytes:
        """The source of the module's file; nothing else (no bytecode cache) is there."""
        if path != self.path:
            raise OSError(f"{path}: only the module's source travelled with the task")
        return self.source


def _load_feature_model(
    kind: str, path: str, content: bytes | None = None, digest: str = ""
) -> Any:
    """A callable ``(n, k) array -> (n,) scores`` of the model, through coffea's wrapper.

    With ``content`` (the model file's bytes), the model is built from them
    and its file is not opened.
    """
    key = f"{kind}:{path}:{digest}"
    if key not in _MODULES:
        if kind == "xgboost":
            from rosenblatt.processors.xgboost_model import XGBoostScore

            _MODULES[key] = XGBoostScore(path, content)
        else:
            from rosenblatt.processors.torchscript_model import TorchScriptScore

            _MODULES[key] = TorchScriptScore(path, content)
    return _MODULES[key]


def _jet_feature(events: Any, feature: str, jets: str) -> tuple[FloatArray, BoolArray]:
    """A built-in feature of the two leading jets (by pT) of the collection ``jets``."""
    import vector

    n = len(events)
    parts = {f: _collection_field(events, jets, f) for f in JET_FIELDS}
    order = ak.argsort(parts["pt"], axis=1, ascending=False)
    present = np.asarray(ak.to_numpy(ak.num(parts["pt"], axis=1) >= 2))
    leading = {}
    for name, values in parts.items():
        ordered = ak.fill_none(ak.pad_none(values[order], 2, axis=1, clip=True), 0.0)
        leading[name] = np.asarray(ak.to_numpy(ordered), dtype=np.float64).reshape(n, 2)
    first: Any = vector.array({f: leading[f][:, 0] for f in JET_FIELDS})
    second: Any = vector.array({f: leading[f][:, 1] for f in JET_FIELDS})
    if feature == "mjj":
        values = np.asarray(first.add(second).mass, dtype=np.float64)
    elif feature == "pt_j1":
        values = leading["pt"][:, 0]
    elif feature == "deta_jj":
        values = np.abs(leading["eta"][:, 0] - leading["eta"][:, 1])
    else:
        heavier = np.maximum(leading["mass"][:, 0], leading["mass"][:, 1])
        lighter = np.minimum(leading["mass"][:, 0], leading["mass"][:, 1])
        values = heavier if feature == "mj1" else lighter
    return np.where(present, values, np.nan), present
