"""The configuration of the ABCD analysis study (``study: abcd``), validated when loaded.

An unknown key, a value of the wrong type or a missing input file is an error
that names the key and the configuration file.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from rosenblatt.processors.quantities import DEFAULT_JETS, Quantity, QuantityError, parse_quantity
from rosenblatt.studies.abcd_datasets import DatasetConfig, parse_datasets, parse_defining
from rosenblatt.studies.config_checks import (
    ConfigError,
    check_keys,
    file_problem,
    flag,
    folder,
    key_names,
    plain_name,
    seed,
)
from rosenblatt.studies.config_checks import count as _count
from rosenblatt.studies.config_checks import fail as _fail
from rosenblatt.studies.config_checks import mapping as _mapping
from rosenblatt.studies.config_checks import number as _number
from rosenblatt.studies.config_checks import resolve as _resolve
from rosenblatt.studies.config_fields import (
    config_dataclass,
    config_source,
    option,
    parse_dataclass,
)

__all__ = [
    "EXECUTOR_KINDS",
    "TRANSFORM_KINDS",
    "AbcdConfig",
    "AbcdCuts",
    "ConfigError",
    "ExecutorConfig",
    "StatisticsConfig",
    "TransformConfig",
]

#: ``transforms[].kind`` values
TRANSFORM_KINDS = ("irgi", "gridkde", "kde")

#: ``executor.kind`` values
EXECUTOR_KINDS = ("iterative", "futures", "dask")

#: the most cut values of one axis of the ABCD grid
MAX_CUTS = 10_000
#: the most worker processes
MAX_WORKERS = 4096
#: the most bootstrap replicas of a transform
MAX_REPLICAS = 100_000
#: the keys of one entry of ``generate:``
GENERATE_KEYS = (
    "process",
    "events",
    "seed",
    "output",
    "format",
    "signal_events",
    "negative_weight_fraction",
    "workers",
    "chunk_size",
)

#: ``schema:`` values: how the events of the files are read
SCHEMAS = ("auto", "base", "nanoaod", "particles")
_TRANSFORM_PARAMETERS = {
    "irgi": {"depth", "domain", "folds", "seed"},
    "gridkde": {
        "sigma_r",
        "degree",
        "y_levels",
        "nodes_per_bandwidth",
        "folds",
        "seed",
        "max_nodes",
    },
    "kde": {"sigma_r", "method"},
}


@dataclass(frozen=True)
class TransformConfig:
    """One transform: a kind and its parameters, or a saved file."""

    name: str
    kind: str | None = None
    parameters: Mapping[str, Any] = field(default_factory=dict)
    file: str | None = None

    @classmethod
    def parse(cls, value: Any, source: str, key: str, base: Path) -> TransformConfig:
        """Validate one entry of ``transforms:``."""
        entry = dict(_mapping(value, source, key))
        name = entry.pop("name", None)
        if name is not None:
            name = plain_name(name, source, f"{key}.name")
        if "file" in entry:
            given = entry.pop("file")
            if not isinstance(given, str) or not given:
                raise _fail(source, f"{key}.file", f"must be the path of a file, got {given!r}")
            path = _resolve(given, base)
            if entry:
                raise _fail(
                    source,
                    key,
                    f"a transform read from a file takes no other keys, got {sorted(map(str, entry))}",
                )
            problem = file_problem(path)
            if problem:
                raise _fail(source, f"{key}.file", f"file {path} {problem}")
            _load_transform(path, source, f"{key}.file")
            return cls(name=str(name or path.stem), file=str(path))
        kind = entry.pop("kind", None)
        if not isinstance(kind, str) or kind not in TRANSFORM_KINDS:
            raise _fail(
                source,
                f"{key}.kind",
                f"must be one of {list(TRANSFORM_KINDS)} (or give file:), got {kind!r}",
            )
        unknown = key_names(set(entry) - _TRANSFORM_PARAMETERS[kind])
        if unknown:
            raise _fail(
                source,
                key,
                f"unknown parameter(s) {unknown} for {kind}; "
                f"known: {sorted(_TRANSFORM_PARAMETERS[kind])}",
            )
        transform = cls(name=str(name or kind), kind=kind, parameters=entry)
        _check_parameters(transform, source, key)
        return transform

    def build(self) -> Any:
        """A new unfitted transform, or the fitted one read from the file."""
        import rosenblatt as rb

        if self.file is not None:
            return rb.load(self.file)
        if self.kind == "irgi":
            return rb.IRGI(**self.parameters)
        if self.kind == "gridkde":
            return rb.GridKDE(**self.parameters)
        return rb.KDE(**self.parameters)


def _cut_list(value: Any, source: str, key: str) -> tuple[float, ...]:
    """A list of at least two cut values (numbers)."""
    if not isinstance(value, (list, tuple)) or len(value) < 2:
        raise _fail(source, key, f"must be a list of at least two cut values, got {value!r}")
    return tuple(_number(v, source, key) for v in value)


def _score_cuts(value: Any, source: str, key: str) -> tuple[float, ...] | None:
    """``abcd.score_y0``: increasing cuts on the raw score, or ``None``."""
    if value is None:
        return None
    return _increasing(list(_cut_list(value, source, key)), source, key)


def _n_cuts(value: Any, source: str, key: str) -> int:
    return _count(value, source, key, 2, MAX_CUTS)


def _optional_number(value: Any, source: str, key: str) -> float | None:
    return None if value is None else _number(value, source, key)


def _chosen_cut(value: Any, source: str, key: str) -> tuple[float, float] | None:
    """``abcd.cut``: ``{x0, y0}`` of the cut reported, ``y0`` in (0, 1), or ``None``."""
    if value is None:
        return None
    given = _mapping(value, source, key)
    if set(given) != {"x0", "y0"}:
        raise _fail(source, key, f"give x0 and y0, got {sorted(map(str, given))}")
    cut = (_number(given["x0"], source, f"{key}.x0"), _number(given["y0"], source, f"{key}.y0"))
    if not 0.0 < cut[1] < 1.0:
        raise _fail(
            source, f"{key}.y0", f"a cut on the transformed score lies in (0, 1), got {cut[1]!r}"
        )
    return cut


def _any(value: Any, source: str, key: str) -> Any:
    """A value read later (``abcd.x``: a quantity, parsed with the file's folder and jets)."""
    return value


@config_dataclass
class AbcdCuts:
    """The ABCD cut grid: ``x0`` and ``y0`` cut values, the observable and its upper limit.

    ``x0`` and ``y0`` are lists of cut values, or ``[low, high]`` with
    ``n_x0``/``n_y0`` cuts between them; :meth:`parse` gives the grid itself.
    """

    x: Any = option(
        default="mjj",
        doc="the observable x the score is decorrelated from: a quantity (branch, jet "
        "feature, function)",
        check=_any,
        type="quantity",
    )
    x0: tuple[float, ...] = option(
        default=(),
        doc="the cuts on x: a list of increasing values, or [low, high] with n_x0",
        check=_cut_list,
        type="list of numbers",
        default_doc="required",
    )
    n_x0: int | None = option(
        default=None,
        doc="cuts on x between x0's [low, high]",
        check=_n_cuts,
        type="integer in [2, 10000]",
        default_doc="none: x0 lists every cut",
    )
    y0: tuple[float, ...] = option(
        default=(),
        doc="the cuts on the transformed score, in [0, 1]: a list, or [low, high] with n_y0",
        check=_cut_list,
        type="list of numbers",
        default_doc="required",
    )
    n_y0: int | None = option(
        default=None,
        doc="cuts on the transformed score between y0's [low, high]",
        check=_n_cuts,
        type="integer in [2, 10000]",
        default_doc="none: y0 lists every cut",
    )
    score_y0: tuple[float, ...] | None = option(
        default=None,
        doc="cuts on the raw score, for the ABCD closure without a transform",
        check=_score_cuts,
        type="list of numbers or null",
    )
    x_max: float | None = option(default=None, doc="the upper limit of x", check=_optional_number)
    cut: tuple[float, float] | None = option(
        default=None,
        doc="the cut reported, {x0, y0} (added to the grid), y0 in (0, 1)",
        check=_chosen_cut,
        type="{x0: number, y0: number} or null",
        default_doc="the cut chosen on simulation",
    )
    x_axis: tuple[str | None, str | None] = option(
        default=(None, None),
        doc='{label, unit} of x on the figures\' axes (label: "$m_{jj}$", unit: TeV), each '
        "optional: a built-in quantity has its symbol and unit (GeV for mjj, mj1, mj2, "
        "pt_j1), another its name and no unit",
        check=lambda value, source, key: _x_axis(value, source),
        type="{label: text, unit: text} (mathtext)",
        default_doc="the quantity's own",
    )

    @property
    def x_label(self) -> str:
        """How ``x`` is written, for histogram axes and tables."""
        return (
            self.x if isinstance(self.x, str) else ", ".join(f"{k}: {v}" for k, v in self.x.items())
        )

    @property
    def x_axis_label(self) -> str:
        """The figures' label of ``x`` with its unit (``x_axis: {label, unit}``, else the built-in's)."""
        from rosenblatt.plotting import quantity_label

        label, unit = self.x_axis
        return quantity_label(self.x_label, label=label, unit=unit)

    @classmethod
    def parse(cls, value: Any, source: str) -> AbcdCuts:
        """Validate ``abcd:``; ``x0``/``y0`` are lists, or ``[low, high]`` with ``n_x0``/``n_y0``."""
        given = _mapping(value, source, "abcd")
        cuts: AbcdCuts = parse_dataclass(cls, given, source, "abcd")
        return cuts.with_grid(given, source)

    def with_grid(self, given: Mapping[str, Any], source: str) -> AbcdCuts:
        """These cuts with ``x0``/``y0`` the grid itself (``n_x0``/``n_y0`` spread, the cut added).

        ``given`` is ``abcd:`` as written, for the messages.
        """
        grids = {}
        for axis, n in (("x0", self.n_x0), ("y0", self.n_y0)):
            numbers = list(getattr(self, axis))
            if not numbers:
                raise _fail(
                    source, f"abcd.{axis}", "must be a list of at least two cut values, got None"
                )
            if n is not None:
                if len(numbers) != 2:
                    raise _fail(
                        source,
                        f"abcd.{axis}",
                        f"with n_{axis}, give [low, high], got {given[axis]!r}",
                    )
                numbers = list(np.linspace(numbers[0], numbers[1], n))
            grids[axis] = _increasing(numbers, source, f"abcd.{axis}")
        if any(not 0.0 <= v <= 1.0 for v in grids["y0"]):
            raise _fail(
                source,
                "abcd.y0",
                f"cuts on the transformed score lie in [0, 1], got {list(grids['y0'])}",
            )
        if self.cut is not None:
            grids["x0"] = tuple(sorted({*grids["x0"], self.cut[0]}))
            grids["y0"] = tuple(sorted({*grids["y0"], self.cut[1]}))
        return dataclasses.replace(self, x0=grids["x0"], y0=grids["y0"])


def _x_axis(value: Any, source: str) -> tuple[str | None, str | None]:
    """``abcd.x_axis``: ``{label, unit}`` of ``x`` in the figures, each optional."""
    if value is None:
        return (None, None)
    entry = dict(_mapping(value, source, "abcd.x_axis"))
    check_keys(entry, {"label", "unit"}, source, "abcd.x_axis")
    for key in ("label", "unit"):
        given = entry.get(key)
        if given is not None and not isinstance(given, str):
            raise _fail(source, f"abcd.x_axis.{key}", f"must be text, got {given!r}")
        if given is not None and (problem := _mathtext_problem(given)):
            raise _fail(source, f"abcd.x_axis.{key}", f"{given!r} is no valid mathtext: {problem}")
    return (entry.get("label"), entry.get("unit"))


def _mathtext_problem(text: str) -> str | None:
    """Why matplotlib cannot draw ``text`` (``$...$`` is mathtext), or None."""
    dollars = text.count("$") - text.count(r"\$")
    if dollars == 0 or dollars % 2:
        return None
    try:
        from matplotlib.mathtext import MathTextParser
    except ImportError:
        return None
    try:
        MathTextParser("path").parse(text)
    except ValueError as error:
        return str(error).strip().splitlines()[-1]
    return None


def _executor_kind(value: Any, source: str, key: str) -> str:
    if not isinstance(value, str) or value not in EXECUTOR_KINDS:
        raise _fail(source, key, f"must be one of {list(EXECUTOR_KINDS)}, got {value!r}")
    return value


def _workers(value: Any, source: str, key: str) -> int:
    """``executor.workers``: a count of processes; none or 0 (0 here): one per core."""
    if value in (None, 0) and not isinstance(value, bool):
        return 0
    return _count(value, source, key, 1, MAX_WORKERS)


@config_dataclass
class ExecutorConfig:
    """Where the processors run: ``kind``, ``workers``, ``scheduler`` and ``chunksize``."""

    kind: str = option(
        default="iterative",
        doc="where the processors run: iterative (this process), futures (local processes) or dask",
        check=_executor_kind,
    )
    workers: int = option(
        default=0,
        doc="worker processes (none or 0: one per core; the iterative executor has one)",
        check=_workers,
        type="integer in [0, 4096] or null",
        default_doc="the machine's cores (1 for iterative)",
    )
    scheduler: str | None = option(
        default=None,
        doc="the address of a running dask scheduler to join (tcp://host:port); "
        "none: a local cluster",
        check=_any,
        type="text or null",
    )
    chunksize: int = option(default=10_000, doc="events per chunk of the processors", check=_count)

    @classmethod
    def parse(cls, value: Any, source: str) -> ExecutorConfig:
        """Validate ``executor:``."""
        given: ExecutorConfig = parse_dataclass(cls, value or {}, source, "executor")
        return given.resolved(source)

    def resolved(self, source: str) -> ExecutorConfig:
        """This executor checked as a whole, with its number of workers (0: the cores)."""
        import os

        kind, scheduler = self.kind, self.scheduler
        if scheduler is not None and kind != "dask":
            raise _fail(
                source,
                "executor.scheduler",
                f"only the dask executor joins a scheduler, not {kind!r}",
            )
        if scheduler is not None and (not isinstance(scheduler, str) or not scheduler.strip()):
            raise _fail(
                source,
                "executor.scheduler",
                f"must be a scheduler's address (tcp://host:port), got {scheduler!r}",
            )
        workers = 1 if kind == "iterative" else self.workers or os.cpu_count() or 1
        workers = _count(workers, source, "executor.workers", 1, MAX_WORKERS)
        return dataclasses.replace(self, workers=workers)


def _replicas(value: Any, source: str, key: str) -> int:
    """``statistics.n_boot``: 0 (no ensemble) or at least 2 replicas."""
    n_boot = _count(value, source, key, 0, MAX_REPLICAS)
    if n_boot == 1:
        raise _fail(source, key, "an ensemble needs at least 2 replicas (0: none), got 1")
    return n_boot


@config_dataclass
class StatisticsConfig:
    """``statistics:``: replicas (``n_boot``, 0 for none) and seed of each transform's bootstrap ensemble."""

    n_boot: int = option(
        default=20,
        doc="bootstrap replicas of each transform (0: none, else at least 2)",
        check=_replicas,
    )
    seed: int = option(default=0, doc="seed of the bootstrap replicas", check=seed)

    @classmethod
    def parse(cls, value: Any, source: str) -> StatisticsConfig:
        """Validate ``statistics:``."""
        parsed: StatisticsConfig = parse_dataclass(cls, value or {}, source, "statistics")
        return parsed


def _text(value: Any, source: str, key: str) -> str:
    """A name (of a tree, of a collection)."""
    if not isinstance(value, str) or not value:
        raise _fail(source, key, f"must be a name, got {value!r}")
    return value


def _schema(value: Any, source: str, key: str) -> str:
    if not isinstance(value, str) or value not in SCHEMAS:
        raise _fail(source, key, f"must be one of {list(SCHEMAS)}, got {value!r}")
    return value


def _optional_lumi(value: Any, source: str, key: str) -> float | None:
    """``lumi:``: a positive number (whether it is needed is checked with the datasets)."""
    if value is None:
        return None
    lumi = _number(value, source, key)
    if lumi <= 0:
        raise _fail(source, key, f"must be positive, got {lumi!r}")
    return lumi


@config_dataclass
class AbcdConfig:
    """A validated ``study: abcd`` configuration (see ``configs/abcd-example.yaml``).

    Each field is one key of the file. ``score``, ``transforms``, ``datasets``
    and ``defining`` are read as written and made what they mean by
    :meth:`parse`, which needs the file's folder, ``jets`` and the datasets.
    """

    source: str = field(metadata={"doc": "the configuration file read"})
    x: Quantity = field(metadata={"doc": "abcd.x as a quantity"})
    defining_selection: Quantity | None = field(
        metadata={"doc": "defining.selection as a quantity (None: every event)"}
    )
    score: Quantity = option(
        doc="the classifier score: a branch, an element (FatJet.x[0]), a built-in feature, "
        "{column: NAME}, {function: ...}, {torchscript: FILE}, {model: FILE} or {xgboost: FILE}",
        check=_any,
        type="quantity",
    )
    transforms: tuple[TransformConfig, ...] = option(
        doc="the transforms compared: each {kind: irgi, gridkde or kde, name, parameters} "
        "or {name, file: a saved transform}",
        check=_any,
        type="non-empty list of {kind, name, ...} or {name, file}",
    )
    cuts: AbcdCuts = option(key="abcd", doc="the ABCD cut grid", check=AbcdCuts)
    name: str = option(
        default="",
        doc="the study's name (of its results folder)",
        check=plain_name,
        default_doc="the configuration file's name without its suffix",
    )
    generate: tuple[dict[str, Any], ...] = option(
        default=(),
        doc="event files written by rosenblatt generate when missing: each {process, events, "
        "output, seed, format, signal_events, negative_weight_fraction, workers, chunk_size}",
        check=lambda value, source, key: _generate(value, source),
        type="list of mappings",
    )
    treename: str = option(
        default="Events", doc="the tree of every dataset (a dataset may set its own)", check=_text
    )
    jets: str = option(
        default=DEFAULT_JETS, doc="the jet collection the built-in features read", check=_text
    )
    schema: str = option(
        default="auto",
        doc="how the files' events are read: auto, base, nanoaod or particles",
        check=_schema,
    )
    datasets: dict[str, DatasetConfig] = option(
        default=None,
        doc="dataset name -> {files, role: data, background, signal or defining, treename, "
        "weight, xsec}",
        check=_any,
        type="mapping",
        default_doc="required (or the older fileset:)",
    )
    labelled: Mapping[str, Any] | None = option(
        default=None,
        key="fileset",
        doc="the older layout: {dataset: [files]} of events labelled by their label branch, "
        "with defining: {dataset: [files]}",
        check=_any,
        type="mapping or list of files",
    )
    defining_names: tuple[str, ...] = option(
        default=None,
        key="defining",
        doc="the datasets the transforms are fitted on: a list of names or "
        "{datasets: [...], selection: QUANTITY}",
        check=_any,
        type="list of names, or mapping",
        default_doc="the datasets of role defining, else every background dataset",
    )
    lumi: float | None = option(
        default=None,
        doc="the luminosity simulation is normalised to (xsec * lumi), in the inverse unit of xsec",
        check=_optional_lumi,
        type="positive number",
        default_doc="required where a dataset has xsec",
    )
    blind: bool = option(
        default=True, doc="never fill data into the signal region A of any variant", check=flag
    )
    executor: ExecutorConfig = option(
        default_factory=ExecutorConfig, doc="where the processors run", check=ExecutorConfig
    )
    skip_bad_files: bool = option(
        default=False, doc="skip a file that cannot be read (listed in the report)", check=flag
    )
    max_gather_events: int = option(
        default=5_000_000, doc="defining events gathered to fit KDE, at most", check=_count
    )
    data_dir: Path = option(
        default=None,
        key="data.folder",
        doc="the folder of the cached skims",
        check=folder,
        type="path",
        default_doc="data/<name>",
    )
    plane_x_range: tuple[float, float] | None = option(
        default=None,
        key="plane",
        doc="[low, high] of x in the figures of the plane",
        check=lambda value, source, key: _plane(value, source),
        type="list of 2 numbers or null",
    )
    statistics: StatisticsConfig = option(
        default_factory=StatisticsConfig,
        doc="the bootstrap ensembles of the transforms",
        check=StatisticsConfig,
    )
    seed: int = option(
        default=0,
        doc="a seed kept with the configuration (the bootstrap draws with statistics.seed, "
        "the generation with each entry's seed)",
        check=seed,
    )

    @property
    def defining(self) -> dict[str, list[str]]:
        """``{dataset: [file, ...]}`` of the datasets the transforms are fitted on."""
        return {name: list(self.datasets[name].files) for name in self.defining_names}

    @property
    def fileset(self) -> dict[str, list[str]]:
        """``{dataset: [file, ...]}`` of the datasets filled into the ABCD histograms."""
        return {name: list(d.files) for name, d in self.datasets.items() if d.role != "defining"}

    def roles(self) -> set[str]:
        """The roles of the datasets filled into the histograms."""
        return {d.role for d in self.datasets.values() if d.role != "defining"}

    @classmethod
    def parse(cls, config: Mapping[str, Any]) -> AbcdConfig:
        """Validate a configuration read by :func:`rosenblatt.config.load_config`."""
        source = config_source(config)
        read: AbcdConfig = parse_dataclass(
            cls,
            config,
            source,
            given={"source": source, "x": None, "defining_selection": None},
            extra_keys=("study",),
            required=("score", "transforms", "abcd"),
        )
        name = plain_name(config.get("name", Path(source).stem), source, "name")
        base = Path(source).parent if "_path" in config else Path.cwd()
        datasets = parse_datasets(config, source, base, treename=read.treename, jets=read.jets)
        defining = config.get("defining")
        if (
            isinstance(defining, Mapping)
            and "datasets" in config
            and not set(defining) <= {"datasets", "selection"}
        ):
            raise _fail(
                source,
                "defining",
                "with datasets:, list the defining datasets' names "
                "(or {datasets: [...], selection: ...}), not files",
            )
        names, selection = parse_defining(defining, datasets, source)
        _check_files_exist(datasets, read.generate, source)
        cuts = read.cuts.with_grid(_mapping(config["abcd"], source, "abcd"), source)
        if read.lumi is None and any(d.xsec is not None for d in datasets.values()):
            raise _fail(source, "lumi", "missing: datasets with xsec are normalised to xsec * lumi")
        return dataclasses.replace(
            read,
            name=name,
            datasets=datasets,
            defining_names=names,
            defining_selection=None
            if selection is None
            else _quantity(selection, source, "defining.selection", base, read.jets),
            x=_quantity(cuts.x, source, "abcd.x", base, read.jets),
            score=_quantity(_score_spec(read.score), source, "score", base, read.jets),
            transforms=_transforms(read.transforms, source, base),
            cuts=cuts,
            executor=read.executor.resolved(source),
            data_dir=folder(str(Path("data") / name), source, "data.folder")
            if read.data_dir is None
            else read.data_dir,
        )


def _transforms(value: Any, source: str, base: Path) -> tuple[TransformConfig, ...]:
    """``transforms:``: a non-empty list of transforms of distinct names."""
    if not isinstance(value, list) or not value:
        raise _fail(source, "transforms", "must be a non-empty list")
    parsed = tuple(
        TransformConfig.parse(t, source, f"transforms[{i}]", base) for i, t in enumerate(value)
    )
    names = [t.name for t in parsed]
    if len(set(names)) != len(names) or "score" in names:
        raise _fail(source, "transforms", f"names must be distinct and not 'score', got {names}")
    return parsed


def _check_files_exist(
    datasets: Mapping[str, DatasetConfig], generate: tuple[dict[str, Any], ...], source: str
) -> None:
    """Refuse a dataset file that does not exist and that no ``generate:`` entry writes."""
    written = {Path(str(entry["output"])).resolve() for entry in generate}
    for dataset in datasets.values():
        for path in dataset.files:
            problem = file_problem(Path(path))
            if not problem or (problem == "does not exist" and Path(path).resolve() in written):
                continue
            raise _fail(source, dataset.files_key, f"file {path} {problem}")


def _score_spec(value: Any) -> Any:
    """``score:`` as written; ``{column: NAME}`` without ``negate`` is the branch ``NAME``."""
    if isinstance(value, Mapping) and set(value) == {"column"}:
        return str(value["column"])
    return value


def _quantity(value: Any, source: str, key: str, base: Path, jets: str) -> Quantity:
    try:
        return parse_quantity(value, key=key, base=base, jets=jets)
    except QuantityError as err:
        message = str(err)
        raise _fail(
            source, key, message.split(": ", 1)[1] if message.startswith(key) else message
        ) from None


def _increasing(values: list[float], source: str, key: str) -> tuple[float, ...]:
    """Cut values, checked strictly increasing."""
    if any(b <= a for a, b in itertools.pairwise(values)):
        raise _fail(source, key, f"cut values must increase, got {[float(v) for v in values]}")
    return tuple(float(v) for v in values)


def _plane(value: Any, source: str) -> tuple[float, float] | None:
    """``plane:``: the ``[low, high]`` range of ``x`` in the figures of the plane."""
    if value is None:
        return None
    if not isinstance(value, (list, tuple)) or len(value) != 2:
        raise _fail(source, "plane", f"must be [low, high], got {value!r}")
    low, high = (_number(v, source, "plane") for v in value)
    if not low < high:
        raise _fail(source, "plane", f"must be [low, high] with low < high, got {value!r}")
    return low, high


def _generate(value: Any, source: str) -> tuple[dict[str, Any], ...]:
    """``generate:``: the event files written when missing, each entry checked."""
    if value is None:
        return ()
    if not isinstance(value, list):
        raise _fail(source, "generate", f"must be a list of files to generate, got {value!r}")
    entries = tuple(_generate_entry(item, source, f"generate[{i}]") for i, item in enumerate(value))
    outputs = [str(entry["output"]) for entry in entries]
    for i, output in enumerate(outputs):
        if output in outputs[:i]:
            raise _fail(source, f"generate[{i}].output", f"{output} is written by an earlier entry")
    return entries


def _generate_entry(item: Any, source: str, key: str) -> dict[str, Any]:
    """One entry of ``generate:``, checked as the generation would check it."""
    from rosenblatt.hep.pythia_settings import PROCESS_LABELS

    processes = {"particles": tuple(PROCESS_LABELS), "ntuple": (*PROCESS_LABELS, "data")}
    processes["nanoaod"] = processes["ntuple"]
    entry = dict(_mapping(item, source, key))
    check_keys(entry, GENERATE_KEYS, source, key)
    for required in ("process", "events", "output"):
        if required not in entry:
            raise _fail(source, f"{key}.{required}", "missing")
    file_format = entry.get("format", "particles")
    if not isinstance(file_format, str) or file_format not in processes:
        raise _fail(
            source, f"{key}.format", f"must be one of {list(processes)}, got {file_format!r}"
        )
    process = entry["process"]
    if not isinstance(process, str) or process not in processes[file_format]:
        raise _fail(
            source,
            f"{key}.process",
            f"must be one of {list(processes[file_format])} for {file_format}, got {process!r}",
        )
    _count(entry["events"], source, f"{key}.events")
    seed(entry.get("seed", 0), source, f"{key}.seed")
    _count(entry.get("workers", 1), source, f"{key}.workers", 1, MAX_WORKERS)
    _count(entry.get("chunk_size", 500), source, f"{key}.chunk_size")
    injected = _count(entry.get("signal_events", 0), source, f"{key}.signal_events", 0)
    fraction = _number(
        entry.get("negative_weight_fraction", 0.0), source, f"{key}.negative_weight_fraction"
    )
    if not 0.0 <= fraction < 1.0:
        raise _fail(
            source, f"{key}.negative_weight_fraction", f"must be in [0, 1), got {fraction!r}"
        )
    if file_format == "particles" and {"signal_events", "negative_weight_fraction"} & set(entry):
        raise _fail(
            source, key, "signal_events and negative_weight_fraction are for ntuple and nanoaod"
        )
    if injected and process != "data":
        raise _fail(source, f"{key}.signal_events", "W' events are injected into data only")
    if fraction and process == "data":
        raise _fail(source, f"{key}.negative_weight_fraction", "pseudo-data have no weights")
    _generate_output(entry["output"], file_format, source, f"{key}.output")
    return entry


def _generate_output(output: Any, file_format: str, source: str, key: str) -> None:
    """The file a ``generate:`` entry writes: a name of its format, not a folder."""
    if not isinstance(output, str) or not output.strip() or "\0" in output:
        raise _fail(source, key, f"must be the path of a file, got {output!r}")
    suffixes = (".root",) if file_format != "particles" else (".root", ".h5", ".hdf5")
    if not output.lower().endswith(suffixes):
        raise _fail(source, key, f"{file_format} files end in {'/'.join(suffixes)}, got {output!r}")
    path = Path(output)
    problem = file_problem(path)
    if path.exists() and problem:
        raise _fail(source, key, f"{output} {problem}")
    folder(str(path.parent), source, key)


def _load_transform(path: Path, source: str, key: str) -> None:
    """Refuse a file that is not a saved transform."""
    import rosenblatt as rb

    try:
        rb.load(path)
    except Exception as err:  # noqa: BLE001 - a damaged file raises many kinds
        reason = " ".join(str(err).split()) or type(err).__name__
        raise _fail(source, key, f"{path} is not a saved transform ({reason})") from None


def _check_parameters(transform: TransformConfig, source: str, key: str) -> None:
    """Refuse the parameters a transform would refuse at its fit, before anything runs."""
    from rosenblatt.transforms.irgi import parse_domain
    from rosenblatt.transforms.selection import check_seed

    parameters = dict(transform.parameters)
    for name in ("folds", "seed"):
        if name in parameters:
            if name == "seed":
                seed(parameters[name], source, f"{key}.seed")
            else:
                _count(parameters[name], source, f"{key}.folds", 2)
    try:
        built = transform.build()
        if transform.kind == "irgi":
            depth = parameters.get("depth", 7)
            if depth != "auto":
                _count(depth, source, f"{key}.depth", 0, 30)
            if parameters.get("domain") is not None:
                parse_domain(parameters["domain"])
        elif transform.kind == "gridkde":
            built._checked()
        else:
            built._checked_params()
        check_seed(built.seed)
    except ConfigError:
        raise
    except (TypeError, ValueError) as err:
        raise _fail(source, key, str(err)) from None
