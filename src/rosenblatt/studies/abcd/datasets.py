"""The datasets of the ABCD study: files, role, tree, weight and normalisation, validated when loaded.

``datasets:`` maps a name to ``{files, role, treename, weight, xsec}``:

``role``
    ``data`` (unit weights, no label), ``background`` or ``signal``
    (simulation), or ``defining`` (background simulation used only to fit
    the transforms, not filled into the ABCD histograms).
``weight``
    A branch (or collection element) holding the event weight of
    simulation; none: unit weights.
``xsec``
    Cross section in the unit whose inverse ``lumi:`` is given in (pb and
    pb^-1, fb and fb^-1, ...): simulation is then normalised to
    ``xsec * lumi * w / sum(w)``, ``sum(w)`` over every event of the
    dataset's files (for NanoAOD, the ``Runs`` tree's ``genEventSumw``).

The older ``fileset:`` (``{dataset: [files]}``, events labelled by their
``label`` branch) and ``defining: {dataset: [files]}`` are read as datasets of
the roles ``labelled`` and ``defining``.

``files`` are written as a physicist lists them (:func:`expand_files`): a path,
a glob (``qcd_*.root``, ``**`` for sub-folders) that matches files, a folder
(every ``.root`` file inside it), or a URL that uproot opens (``file://``,
``http(s)://``, ``root://`` with the XRootD bindings and ``fsspec-xrootd``),
kept as written. Globs and folders are expanded, sorted, when the
configuration is read; a pattern that matches nothing is refused.
"""

from __future__ import annotations

import glob
import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rosenblatt.exceptions import QuantityError
from rosenblatt.processors.quantities import Quantity, parse_quantity
from rosenblatt.studies.abcd.cuts import as_written
from rosenblatt.studies.config_checks import check_keys, fail, mapping, plain_name, resolve
from rosenblatt.studies.config_fields import config_dataclass, config_keys, option, parse_dataclass

__all__ = [
    "DATASET_KEYS",
    "PROCESS_OF_ROLE",
    "ROLES",
    "DatasetConfig",
    "DatasetEntry",
    "expand_files",
    "is_url",
    "parse_datasets",
    "parse_defining",
]

#: the roles a dataset may have
ROLES = ("data", "background", "signal", "defining")

#: the ``process`` bin each role fills (``labelled`` datasets: the file's labels)
PROCESS_OF_ROLE = {"background": 0, "signal": 1, "data": 2, "defining": 0}


@dataclass(frozen=True)
class DatasetConfig:
    """One dataset of the ABCD study.

    Attributes
    ----------
    name : str
        The dataset's name (histograms, cut flow, reports).
    files : tuple of str
        Its files, absolute.
    role : str
        One of :data:`ROLES`, or ``"labelled"`` for ``fileset:`` datasets.
    treename : str
        The tree holding its events.
    weight : Quantity or None
        The weight of simulated events (``None``: unit weights).
    xsec : float or None
        Its cross section (``None``: weights are used as they are).
    key : str
        Where its files are configured (``datasets.<name>.files``,
        ``fileset.<name>`` or ``defining.<name>``), for messages.
    """

    name: str
    files: tuple[str, ...]
    role: str
    treename: str
    weight: Quantity | None = None
    xsec: float | None = None
    key: str = ""

    @property
    def files_key(self) -> str:
        """The configuration key of its files."""
        return self.key or f"datasets.{self.name}.files"

    @property
    def process(self) -> int | None:
        """The ``process`` bin its events fill (``None``: their ``label`` branch)."""
        return PROCESS_OF_ROLE.get(self.role)

    @property
    def simulated(self) -> bool:
        """Whether the dataset is simulation (any role but ``data``)."""
        return self.role != "data"


def _file_names(value: Any, source: str, key: str) -> tuple[str, ...]:
    """One file or a list of files, each named once."""
    paths = [value] if isinstance(value, str) else value
    if not isinstance(paths, (list, tuple)) or not paths:
        raise fail(source, key, f"must name at least one file, got {value!r}")
    for path in paths:
        if not isinstance(path, str) or not path.strip() or "\0" in path:
            raise fail(source, key, f"must be paths of files, got {path!r}")
    if len(set(paths)) != len(paths):
        raise fail(source, key, f"names a file twice: {list(paths)}")
    return tuple(paths)


#: a URL: a scheme, then ``://`` (``root://``, ``https://``, ``file://``)
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")

#: the characters that make a path a glob
_GLOB = re.compile(r"[*?\[]")


def is_url(path: str) -> bool:
    """Whether ``path`` is a URL (``scheme://...``), passed to uproot as written."""
    return _URL.match(path) is not None


def _matches(pattern: str, base: Path) -> list[str]:
    """The files a glob matches, as written or relative to the configuration's folder, sorted."""
    for candidate in (pattern, str(base / pattern)):
        found = sorted(p for p in glob.glob(candidate, recursive=True) if os.path.isfile(p))
        if found or Path(pattern).is_absolute():
            return [os.path.abspath(p) for p in found]
    return []


def _folder_files(path: Path, entry: str, source: str, key: str, dataset: str) -> list[str]:
    """The ``.root`` files inside a folder, sorted."""
    inside = sorted(str(p) for p in path.glob("*.root") if p.is_file())
    if not inside:
        raise fail(source, key, f"the folder {entry!r} of dataset {dataset} holds no .root file")
    return inside


def expand_files(
    written: tuple[str, ...], source: str, key: str, base: Path, dataset: str
) -> tuple[str, ...]:
    """The files of a dataset from the paths, globs, folders and URLs written in ``key``.

    A URL is kept as written; a glob gives the files it matches and a folder
    the ``.root`` files inside it, each sorted; a path is resolved as
    :func:`~rosenblatt.studies.config_checks.resolve` does.

    Raises
    ------
    rosenblatt.exceptions.ConfigError
        If a glob or a folder gives no file, or a file is named twice.
    """
    files: list[str] = []
    for entry in written:
        if is_url(entry):
            files.append(entry)
        elif _GLOB.search(entry):
            found = _matches(entry, base)
            if not found:
                reason = f"the pattern {entry!r} of dataset {dataset} matches no file"
                raise fail(source, key, reason)
            files += found
        elif (path := resolve(entry, base)).is_dir():
            files += _folder_files(path, entry, source, key, dataset)
        else:
            files.append(str(path))
    twice = sorted({f for f in files if files.count(f) > 1})
    if twice:
        raise fail(source, key, f"dataset {dataset} names {twice[0]} twice (check its patterns)")
    return tuple(files)


def _files(value: Any, source: str, key: str, base: Path, dataset: str) -> tuple[str, ...]:
    return expand_files(_file_names(value, source, key), source, key, base, dataset)


def _role(value: Any, source: str, key: str) -> str:
    if not isinstance(value, str) or value not in ROLES:
        raise fail(source, key, f"must be one of {list(ROLES)}, got {value!r}")
    return value


def _tree(value: Any, source: str, key: str) -> str:
    if not isinstance(value, str) or not value:
        raise fail(source, key, f"must be a tree name, got {value!r}")
    return value


def _cross_section(value: Any, source: str, key: str) -> float:
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not math.isfinite(float(value))
        or value <= 0
    ):
        raise fail(source, key, f"must be a positive number, got {value!r}")
    return float(value)


@config_dataclass
class DatasetEntry:
    """One entry of ``datasets:`` as written; :func:`parse_datasets` makes it a :class:`DatasetConfig`."""

    files: tuple[str, ...] = option(
        doc="its files (relative to the configuration's folder): paths, globs (qcd_*.root), "
        "folders (every .root file inside) or URLs that uproot opens (file://, http(s)://, "
        "root:// with the XRootD bindings and fsspec-xrootd)",
        check=_file_names,
        type="file or list of files",
    )
    role: str = option(doc="data, background, signal or defining", check=_role)
    treename: str | None = option(
        default=None,
        doc="the TTree or RNTuple holding its events",
        check=_tree,
        default_doc="the top-level treename",
    )
    weight: Any = option(
        default=None,
        doc="the weight of simulated events: a branch, an element or a function",
        check=as_written,
        type="quantity",
        default_doc="unit weights",
    )
    xsec: float | None = option(
        default=None,
        doc="its cross section: simulation normalised to xsec * lumi * w / sum(w)",
        check=_cross_section,
        type="positive number",
        default_doc="weights used as they are",
    )


#: the keys of one dataset
DATASET_KEYS = tuple(k.key for k in config_keys(DatasetEntry))


def _weight(entry: DatasetEntry, source: str, key: str, base: Path, jets: str) -> Quantity | None:
    """The weight quantity of a simulated dataset (``None``: unit weights)."""
    if entry.weight is None:
        return None
    if entry.role == "data":
        raise fail(source, f"{key}.weight", "data are not weighted: leave weight out")
    try:
        weight = parse_quantity(entry.weight, key=f"{key}.weight", base=base, jets=jets)
    except QuantityError as err:
        raise fail(source, f"{key}.weight", str(err).split(": ", 1)[-1]) from None
    if weight.kind not in ("name", "element", "function"):
        raise fail(source, f"{key}.weight", "must be a branch, an element or a function")
    return weight


def _dataset(
    name: str, value: Any, source: str, base: Path, treename: str, jets: str
) -> DatasetConfig:
    key = f"datasets.{name}"
    entry: DatasetEntry = parse_dataclass(DatasetEntry, mapping(value, source, key), source, key)
    weight = _weight(entry, source, key, base, jets)
    if entry.xsec is not None:
        if entry.role == "data":
            raise fail(source, f"{key}.xsec", "data have no cross section: leave xsec out")
        if weight is not None and weight.kind == "function":
            raise fail(
                source,
                f"{key}.weight",
                "normalising to xsec sums the weight over every event: give a branch",
            )
    return DatasetConfig(
        name=name,
        files=expand_files(entry.files, source, f"{key}.files", base, name),
        role=entry.role,
        treename=entry.treename or treename,
        weight=weight,
        xsec=entry.xsec,
        key=f"{key}.files",
    )


def parse_datasets(
    config: Mapping[str, Any], source: str, base: Path, *, treename: str, jets: str
) -> dict[str, DatasetConfig]:
    """The datasets of ``datasets:``, or of the older ``fileset:`` and ``defining:`` mappings."""
    if "datasets" in config:
        if "fileset" in config:
            raise fail(source, "fileset", "give datasets: or fileset:, not both")
        datasets = mapping(config["datasets"], source, "datasets")
        if not datasets:
            raise fail(source, "datasets", "names no dataset")
        names = [plain_name(name, source, f"datasets.{name}") for name in datasets]
        if len(set(names)) != len(names):
            raise fail(source, "datasets", f"names repeat: {names}")
        return {
            name: _dataset(name, value, source, base, treename, jets)
            for name, value in zip(names, datasets.values(), strict=True)
        }
    if "fileset" not in config:
        raise fail(source, "datasets", "missing (or give the older fileset:)")
    parsed: dict[str, DatasetConfig] = {}
    for role, key in (("labelled", "fileset"), ("defining", "defining")):
        value = config.get(key)
        if value is None:
            raise fail(source, key, "missing")
        named: Mapping[str, Any]
        if isinstance(value, (list, tuple)):
            _file_names(value, source, key)
            named = {Path(p).stem: [p] for p in value}
        else:
            named = mapping(value, source, key)
        if not named:
            raise fail(source, key, "names no dataset")
        for name, files in named.items():
            label = plain_name(name, source, f"{key}.{name}")
            label = label if label not in parsed else f"{label} ({key})"
            parsed[label] = DatasetConfig(
                name=label,
                files=_files(files, source, f"{key}.{name}", base, label),
                role=role,
                treename=treename,
                key=f"{key}.{name}",
            )
    return parsed


def parse_defining(
    value: Any, datasets: Mapping[str, DatasetConfig], source: str
) -> tuple[tuple[str, ...], Any]:
    """The names of the defining datasets and the selection given with them (or ``None``).

    ``defining:`` is a list of dataset names, ``{datasets: [...], selection:
    QUANTITY}``, or absent: the datasets of role ``defining``, or else every
    ``background`` dataset.
    """
    selection = None
    if (isinstance(value, Mapping) and "datasets" in value) or isinstance(value, (list, tuple)):
        if isinstance(value, Mapping):
            check_keys(value, ("datasets", "selection"), source, "defining")
            names, selection = value["datasets"], value.get("selection")
        else:
            names = value
        if not isinstance(names, (list, tuple)) or not names:
            raise fail(source, "defining", f"must list dataset names, got {names!r}")
        for name in names:
            if not isinstance(name, str) or name not in datasets:
                raise fail(source, "defining", f"no dataset {name!r}; datasets: {sorted(datasets)}")
            if datasets[name].role in ("data", "signal"):
                raise fail(
                    source,
                    "defining",
                    f"{name!r} is {datasets[name].role}: the transforms are fitted on background",
                )
        return tuple(str(n) for n in names), selection
    if isinstance(value, Mapping) and "selection" in value:
        check_keys(value, ("selection",), source, "defining")
        selection = value["selection"]
    chosen = [n for n, d in datasets.items() if d.role == "defining"] or [
        n for n, d in datasets.items() if d.role == "background"
    ]
    if not chosen:
        raise fail(
            source,
            "datasets",
            "no background simulation to fit the transforms on: give a dataset of role "
            "background (or defining)",
        )
    return tuple(chosen), selection
