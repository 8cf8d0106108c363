"""The configuration of the ABCD analysis study (``study: abcd``), validated when loaded.

An unknown key, a value of the wrong type or a missing input file is an error
that names the key and the configuration file.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from rosenblatt.exceptions import QuantityError
from rosenblatt.processors import chunksizes
from rosenblatt.processors.quantities import DEFAULT_JETS, Quantity, parse_quantity
from rosenblatt.studies.abcd.cuts import AbcdCuts, as_written
from rosenblatt.studies.abcd.datasets import (
    DatasetConfig,
    DatasetEntry,
    is_url,
    parse_datasets,
    parse_defining,
)
from rosenblatt.studies.abcd.generate import MAX_WORKERS, GenerateEntry, parse_generate
from rosenblatt.studies.config_checks import (
    ConfigError,
    file_problem,
    flag,
    key_names,
    plain_name,
    positive,
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
    data_folder_option,
    default_data_folder,
    option,
    parse_dataclass,
)
from rosenblatt.typing import FloatArray

__all__ = [
    "EXECUTOR_KINDS",
    "TRANSFER_SHAPES",
    "TRANSFORM_KINDS",
    "AbcdConfig",
    "AbcdCuts",
    "ConfigError",
    "ExecutorConfig",
    "PassFailConfig",
    "StatisticsConfig",
    "TransformConfig",
]

#: ``transforms[].kind`` values
TRANSFORM_KINDS = ("irgi", "gridkde", "kde")

#: IRGI's depth where a transform gives none: the depth its defining sample supports best
DEFAULT_IRGI_DEPTH = "auto"
#: what IRGI's columns hold equal shares of where a transform gives nothing: the events, so that
#: simulation generated in slices keeps its columns where its events are (:class:`rosenblatt.IRGI`)
DEFAULT_IRGI_OCCUPANCY = "events"

#: ``executor.kind`` values
EXECUTOR_KINDS = ("iterative", "futures", "dask")

#: the most bootstrap replicas of a transform
MAX_REPLICAS = 100_000
#: ``schema:`` values
SCHEMAS = ("auto", "base", "nanoaod", "particles")
_TRANSFORM_PARAMETERS = {
    "irgi": {"depth", "domain", "folds", "seed", "occupancy"},
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
    """One transform: a kind and its parameters, or a saved file.

    ``cut_levels`` are the levels of ``gamma`` the study cuts at
    (``abcd.y0``): every transform is built with them, so that an IRGI's
    ``depth: auto`` tries only the depths whose ``y`` bins resolve every cut
    and a depth that does not says so (:class:`rosenblatt.IRGI`), and that
    ``depth: auto`` and ``sigma_r: auto`` take only a value whose held-out
    pass fraction at the cuts does not depend on ``x``, or say that none does.
    """

    name: str
    kind: str | None = None
    parameters: Mapping[str, Any] = field(default_factory=dict)
    file: str | None = None
    cut_levels: tuple[float, ...] | None = None

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
            parameters = {
                "depth": DEFAULT_IRGI_DEPTH,
                "occupancy": DEFAULT_IRGI_OCCUPANCY,
                **self.parameters,
            }
            return rb.IRGI(**parameters, cut_levels=self.cut_levels)
        if self.kind == "gridkde":
            return rb.GridKDE(**self.parameters, cut_levels=self.cut_levels)
        return rb.KDE(**self.parameters, cut_levels=self.cut_levels)


def _executor_kind(value: Any, source: str, key: str) -> str:
    if not isinstance(value, str) or value not in EXECUTOR_KINDS:
        raise _fail(source, key, f"must be one of {list(EXECUTOR_KINDS)}, got {value!r}")
    return value


def _workers(value: Any, source: str, key: str) -> int:
    """``executor.workers``: a count of processes; none or 0 (0 here): one per core."""
    if value in (None, 0) and not isinstance(value, bool):
        return 0
    return _count(value, source, key, 1, MAX_WORKERS)


def _chunksize(value: Any, source: str, key: str) -> int | None:
    """``executor.chunksize``: a count of events, or none for the default of the file layout."""
    return None if value is None else _count(value, source, key)


@config_dataclass
class ExecutorConfig:
    """Where the processors run: ``kind``, ``workers``, ``scheduler``, ``chunksize``, ``shared_disk``."""

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
        check=as_written,
        type="text or null",
    )
    chunksize: int | None = option(
        default=None,
        doc="events per chunk of the processors",
        check=_chunksize,
        type="integer >= 1 or null",
        default_doc=f"{chunksizes.PARTICLES:,} for particle-level files, "
        f"{chunksizes.COLUMNAR:,} for flat ntuples and NanoAOD (the runner's)",
    )
    shared_disk: bool = option(
        default=True,
        doc="whether the workers see the driver's data folder; false: each chunk's piece and "
        "skims come back to the driver in the task's result, and the skims, the model files "
        "and the module files of the quantities go to the workers by value",
        check=flag,
    )

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


#: replicas of ``statistics.n_boot: auto`` where every defining event weighs zero or more
AUTO_REPLICAS = 20
#: replicas of ``statistics.n_boot: auto`` where some defining events weigh less than zero
#: (next-to-leading-order simulation), also advised where a region holds few effective
#: simulated events: with a quarter of negative weights and about 30 effective events in A,
#: 20 replicas left the closure factor's error scattering by 19-23% between
#: pseudo-experiments and 50 by 13-14% (pull sd 1.08-1.20 -> 1.01-1.12)
NEGATIVE_WEIGHT_REPLICAS = 50


def resolved_replicas(n_boot: int | str, negative: bool) -> int:
    """The bootstrap replicas ``n_boot`` asks for, ``auto`` resolved.

    ``n_boot`` as given, or for ``auto`` :data:`AUTO_REPLICAS`, and
    :data:`NEGATIVE_WEIGHT_REPLICAS` where ``negative`` (some defining events weigh
    less than zero).
    """
    if n_boot != "auto":
        return int(n_boot)
    return NEGATIVE_WEIGHT_REPLICAS if negative else AUTO_REPLICAS


def parse_replicas(value: Any, source: str, key: str, most: int = MAX_REPLICAS) -> int | str:
    """An ``n_boot``: ``auto``, 0 (no ensemble) or from 2 to ``most`` replicas.

    Parameters
    ----------
    value
        The value as read.
    source, key
        The configuration file and the key, named in the error.
    most
        The most replicas allowed.

    Returns
    -------
    int or str
        ``"auto"`` (resolved by :func:`resolved_replicas`) or the number of replicas.
    """
    if value == "auto":
        return "auto"
    n_boot = _count(value, source, key, 0, most)
    if n_boot == 1:
        raise _fail(source, key, "an ensemble needs at least 2 replicas (0: none), got 1")
    return n_boot


@config_dataclass
class StatisticsConfig:
    """``statistics:``: replicas (``n_boot``, 0 for none) and seed of each transform's bootstrap ensemble."""

    n_boot: int | str = option(
        default="auto",
        doc=(
            f"bootstrap replicas of each transform: auto ({AUTO_REPLICAS}, or "
            f"{NEGATIVE_WEIGHT_REPLICAS} where defining events weigh less than zero, whose "
            f"closure factor's error {AUTO_REPLICAS} replicas estimate too noisily), 0 (none) "
            "or a number of at least 2"
        ),
        type="auto, 0 or an integer of at least 2",
        check=parse_replicas,
    )
    seed: int = option(default=0, doc="seed of the bootstrap replicas", check=seed)

    @classmethod
    def parse(cls, value: Any, source: str) -> StatisticsConfig:
        """Validate ``statistics:``."""
        parsed: StatisticsConfig = parse_dataclass(cls, value or {}, source, "statistics")
        return parsed

    def replicas(self, weight: FloatArray | None) -> int:
        """The replicas of the ensemble fitted on defining events of ``weight`` (None: unit).

        ``n_boot`` as given, or for ``auto`` :data:`AUTO_REPLICAS`, and
        :data:`NEGATIVE_WEIGHT_REPLICAS` where any weight is negative.
        """
        negative = weight is not None and bool(np.any(np.asarray(weight) < 0))
        return resolved_replicas(self.n_boot, negative)


#: ``passfail.transfer`` values
TRANSFER_SHAPES = ("constant", "linear")
#: the most bins of the fit
MAX_BINS = 10_000
#: the most mass hypotheses of the bump hunt
MAX_MASSES = 1_000
#: the most pseudo-experiments of the bump hunt's global significance
MAX_TOYS = 100_000
#: the most cuts of ``passfail.cuts``
MAX_CUTS = 20


def _bins(value: Any, source: str, key: str) -> int:
    return _count(value, source, key, 1, MAX_BINS)


def _range(value: Any, source: str, key: str) -> tuple[float, float] | None:
    """``passfail.range``: ``[low, high]`` of ``x``, or ``None``."""
    if value is None:
        return None
    if not isinstance(value, (list, tuple)) or len(value) != 2:
        raise _fail(source, key, f"must be [low, high], got {value!r}")
    low, high = (_number(v, source, key) for v in value)
    if not low < high:
        raise _fail(source, key, f"must be [low, high] with low < high, got {value!r}")
    return low, high


def _edges(value: Any, source: str, key: str) -> tuple[float, ...] | None:
    """``passfail.edges``: at least two increasing edges, or ``None``."""
    if value is None:
        return None
    if not isinstance(value, (list, tuple)) or len(value) < 2:
        raise _fail(source, key, f"must be a list of at least two increasing edges, got {value!r}")
    edges = tuple(_number(v, source, key) for v in value)
    if np.any(np.diff(edges) <= 0):
        raise _fail(source, key, f"must increase, got {list(edges)}")
    return edges


def _masses(value: Any, source: str, key: str) -> tuple[float, ...] | None:
    """``passfail.masses``: increasing masses, or ``{range: [low, high], n: N}``, or ``None``."""
    if value is None:
        return None
    if isinstance(value, Mapping):
        if set(value) != {"range", "n"}:
            raise _fail(
                source, key, f"must be a list or {{range: [low, high], n: N}}, got {value!r}"
            )
        span = _range(value["range"], source, f"{key}.range")
        n = _count(value["n"], source, f"{key}.n", 1, MAX_MASSES)
        assert span is not None
        if n == 1:
            return (0.5 * (span[0] + span[1]),)
        return tuple(float(v) for v in np.linspace(span[0], span[1], n))
    return _increasing(value, source, key, MAX_MASSES, "masses")


def _increasing(value: Any, source: str, key: str, most: int, what: str) -> tuple[float, ...]:
    """A list of 1 to ``most`` increasing numbers (``what`` they are, for the message)."""
    if not isinstance(value, (list, tuple)) or not 1 <= len(value) <= most:
        raise _fail(source, key, f"must be a list of 1 to {most} increasing {what}, got {value!r}")
    numbers = tuple(_number(v, source, key) for v in value)
    if np.any(np.diff(numbers) <= 0):
        raise _fail(source, key, f"must increase, got {list(numbers)}")
    return numbers


def _toys(value: Any, source: str, key: str) -> int:
    return _count(value, source, key, 0, MAX_TOYS)


def _cuts(value: Any, source: str, key: str) -> tuple[float, ...] | None:
    """``passfail.cuts``: increasing cuts on the score, or ``None``."""
    if value is None:
        return None
    return _increasing(value, source, key, MAX_CUTS, "cuts")


def _transfer(value: Any, source: str, key: str) -> str:
    if not isinstance(value, str) or value not in TRANSFER_SHAPES:
        raise _fail(source, key, f"must be one of {list(TRANSFER_SHAPES)}, got {value!r}")
    return value


@config_dataclass
class PassFailConfig:
    """``passfail:``: the pass/fail fit in bins of ``x`` at each variant's cut.

    The fit runs where the block is given (``passfail: {}`` for every default).
    """

    bins: int = option(
        default=40,
        doc="bins of x of the pass/fail fit at each variant's cut (the fit runs where "
        "passfail: is given; passfail: {} for every default)",
        check=_bins,
    )
    x_range: tuple[float, float] | None = option(
        default=None,
        key="range",
        doc="[low, high] of x of the pass/fail fit's bins",
        check=_range,
        type="list of 2 numbers or null",
        default_doc="that of the plane's figures (plane:), below abcd.x_max",
    )
    edges: tuple[float, ...] | None = option(
        default=None,
        doc="the pass/fail fit's bin edges in x, increasing (instead of bins and range)",
        check=_edges,
        type="list of numbers or null",
    )
    transfer: str = option(
        default="constant",
        doc="the pass/fail transfer ratio in x: constant (one normfactor) or linear "
        "(with a slope in x, a histosys)",
        check=_transfer,
    )
    masses: tuple[float, ...] | None = option(
        default=None,
        doc="mass hypotheses of a bump hunt at each variant's cut, in units of x: a list, or "
        "{range: [low, high], n: N} for N evenly spaced (the hunt runs where masses is given)",
        check=_masses,
        type="list of numbers, {range: [low, high], n: N} or null",
    )
    resolution: float = option(
        default=0.05,
        doc="the bump hunt's Gaussian signal width: a fraction of the mass with "
        "relative_resolution, else in units of x",
        check=positive,
    )
    relative_resolution: bool = option(
        default=True,
        doc="whether resolution is a fraction of the mass (false: in units of x)",
        check=flag,
    )
    global_toys: int = option(
        default=200,
        doc="pseudo-experiments of the bump hunt's global significance, seeded with "
        "statistics.seed (0: the Gross-Vitells estimate from the observed scan only)",
        check=_toys,
    )
    signal_template: bool = option(
        default=False,
        doc="with one mass, the bump hunt's template is the signal simulation's spectra at "
        "the cut instead of a Gaussian",
        check=flag,
    )
    cuts: tuple[float, ...] | None = option(
        default=None,
        doc="cuts on each variant's score, increasing, each one of its cut levels (abcd.y0; "
        "abcd.score_y0 for the raw score): several make disjoint categories, c_k <= score < "
        "c_k+1 and the last above its cut, fitted together for one mu with a transfer ratio "
        "each and the failing region below the first cut shared (with masses, the bump hunt "
        "runs over the same categories)",
        check=_cuts,
        type="list of numbers or null",
        default_doc="the variant's cut y0, one category",
    )

    def bin_edges(self, plane_range: tuple[float, float], x_max: float | None) -> tuple[float, ...]:
        """The fit's bin edges: ``edges``, or ``bins`` over ``range`` (default ``plane_range``)."""
        if self.edges is not None:
            return self.edges
        low, high = self.x_range or plane_range
        if self.x_range is None and x_max is not None and low < x_max < high:
            high = x_max
        return tuple(float(v) for v in np.linspace(low, high, self.bins + 1))


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
        check=as_written,
        type="quantity",
    )
    transforms: tuple[TransformConfig, ...] = option(
        doc="the transforms compared: each {kind: irgi, gridkde or kde, name, parameters} "
        "or {name, file: a saved transform}; IRGI's depth is auto unless given, the depth "
        "cross-validated on the defining sample (as rosenblatt fit chooses it), and its "
        "columns in x hold equal numbers of defining events (occupancy: events) unless "
        "occupancy: weight is given",
        check=as_written,
        type="non-empty list of {kind, name, ...} or {name, file}",
    )
    cuts: AbcdCuts = option(key="abcd", doc="the ABCD cut grid", check=AbcdCuts)
    name: str = option(
        default="",
        doc="the study's name (of its results folder)",
        check=plain_name,
        default_doc="the configuration file's name without its suffix",
    )
    generate: tuple[GenerateEntry, ...] = option(
        default=(),
        doc="event files written by rosenblatt generate when missing, one mapping each "
        "(its keys below)",
        check=lambda value, source, key: parse_generate(value, source),
        type="list of mappings",
        each=GenerateEntry,
    )
    treename: str = option(
        default="Events",
        doc="the TTree or RNTuple of every dataset (a dataset may set its own)",
        check=_text,
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
        doc="dataset name -> its mapping (its keys below, NAME the dataset's name)",
        check=as_written,
        type="mapping",
        each=DatasetEntry,
        default_doc="required (or the older fileset:)",
    )
    labelled: Mapping[str, Any] | None = option(
        default=None,
        key="fileset",
        doc="the older layout: {dataset: [files]} of events labelled by their label branch, "
        "with defining: {dataset: [files]}",
        check=as_written,
        type="mapping or list of files",
    )
    defining_names: tuple[str, ...] = option(
        default=None,
        key="defining",
        doc="the datasets the transforms are fitted on: a list of names or "
        "{datasets: [...], selection: QUANTITY}",
        check=as_written,
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
    data_dir: Path = data_folder_option("the folder of the cached skims")
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
    passfail: PassFailConfig | None = option(
        default=None,
        doc="the pass/fail fit in bins of x at each variant's cut (none: no fit)",
        check=PassFailConfig,
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

    def by_value(self) -> AbcdConfig:
        """This configuration with the files its quantities load read in, to travel by value.

        For workers that share no disk with the driver
        (``executor.shared_disk: false``): the model files of ``score``,
        ``abcd.x``, ``defining.selection`` and the datasets' weights, and the
        user's module files they name, are read here once (see
        :meth:`rosenblatt.processors.quantities.Quantity.by_value`), so that
        no worker opens them.

        Raises
        ------
        ConfigError
            If such a file cannot be read, in one line naming its key and path.
        """

        def carried(quantity: Quantity, key: str) -> Quantity:
            try:
                return quantity.by_value(key)
            except QuantityError as err:
                where, _, what = str(err).partition(": ")
                raise _fail(self.source, where, what) from None

        datasets = {
            name: dataset
            if dataset.weight is None
            else dataclasses.replace(
                dataset, weight=carried(dataset.weight, f"datasets.{name}.weight")
            )
            for name, dataset in self.datasets.items()
        }
        selection = self.defining_selection
        return dataclasses.replace(
            self,
            x=carried(self.x, "abcd.x"),
            score=carried(self.score, "score"),
            defining_selection=None
            if selection is None
            else carried(selection, "defining.selection"),
            datasets=datasets,
        )

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
            transforms=_transforms(read.transforms, source, base, cuts.y0),
            cuts=cuts,
            executor=read.executor.resolved(source),
            data_dir=default_data_folder(name, source) if read.data_dir is None else read.data_dir,
        )


def _transforms(
    value: Any, source: str, base: Path, cut_levels: tuple[float, ...]
) -> tuple[TransformConfig, ...]:
    """``transforms:``: a non-empty list of transforms of distinct names, each given the cut levels."""
    if not isinstance(value, list) or not value:
        raise _fail(source, "transforms", "must be a non-empty list")
    parsed = tuple(
        dataclasses.replace(
            TransformConfig.parse(t, source, f"transforms[{i}]", base), cut_levels=cut_levels
        )
        for i, t in enumerate(value)
    )
    names = [t.name for t in parsed]
    if len(set(names)) != len(names) or "score" in names:
        raise _fail(source, "transforms", f"names must be distinct and not 'score', got {names}")
    return parsed


def _check_files_exist(
    datasets: Mapping[str, DatasetConfig], generate: tuple[GenerateEntry, ...], source: str
) -> None:
    """Refuse a dataset file that does not exist and that no ``generate:`` entry writes.

    A URL is opened by the preflight checks.
    """
    written = {Path(entry.output).resolve() for entry in generate}
    for dataset in datasets.values():
        for path in dataset.files:
            if is_url(path):
                continue
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
    from rosenblatt.transforms.irgi import check_occupancy, parse_domain
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
            depth = parameters.get("depth", DEFAULT_IRGI_DEPTH)
            if depth != "auto":
                _count(depth, source, f"{key}.depth", 0, 30)
            if parameters.get("domain") is not None:
                parse_domain(parameters["domain"])
            check_occupancy(built.occupancy)
        elif transform.kind == "gridkde":
            built._checked()
        else:
            built._checked_params()
        check_seed(built.seed)
    except ConfigError:
        raise
    except (TypeError, ValueError) as err:
        raise _fail(source, key, str(err)) from None
