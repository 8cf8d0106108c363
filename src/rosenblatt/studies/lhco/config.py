"""The configuration of the LHC Olympics study (``study: lhco``), validated when loaded.

An unknown key, a value of the wrong type or a missing section is an error that
names the key and the configuration file (see ``configs/lhco-quick.yaml``).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from rosenblatt.studies.config_checks import (
    check_keys,
    check_top_level,
    count,
    fail,
    flag,
    folder,
    mapping,
    number,
    numbers,
    seed,
)

__all__ = [
    "CLASSES",
    "PARTS",
    "SAMPLE_KEYS",
    "ClassifierConfig",
    "CutGrid",
    "DataConfig",
    "FeatureConfig",
    "LhcoConfig",
    "SelectionConfig",
    "partition_sizes",
]

#: the paper's four samples, in the order they are drawn from the events
PARTS = ("train", "validation", "optimisation", "testing")

#: the two classes of every sample
CLASSES = ("background", "signal")

#: the keys that say which events and classifiers a study of the LHCO sample uses
SAMPLE_KEYS = frozenset(
    {
        "study",
        "name",
        "seed",
        "data",
        "partition",
        "features",
        "classifier",
        "disco",
        "disco_selection",
    }
)

_TOP_KEYS = SAMPLE_KEYS | {
    "selection",
    "irgi",
    "kde",
    "abcd",
    "permutations",
    "statistics",
    "peers",
}
_REQUIRED = ("data", "partition", "classifier", "irgi", "kde")
_STATISTICS_KEYS = {
    "n_boot",
    "seed",
    "closure_n_boot",
    "closure_thin",
    "sensitivity_thin",
    "auto_parameters",
    "contamination",
}


#: the most worker processes
MAX_WORKERS = 4096
#: the deepest IRGI grid
MAX_DEPTH = 30
#: the most cut values of one axis of the ABCD grid
MAX_CUTS = 10_000
#: the most bootstrap replicas
MAX_REPLICAS = 100_000


def _workers(value: Any, source: str, key: str) -> int:
    """A worker count, the machine's cores when not given (or 0)."""
    if value not in (None, 0) or isinstance(value, bool):
        return count(value, source, key, 1, MAX_WORKERS)
    return count(os.cpu_count() or 1, source, key, 1, MAX_WORKERS)


def _positive(value: Any, source: str, key: str) -> float:
    """A finite positive number."""
    checked = number(value, source, key)
    if checked <= 0:
        raise fail(source, key, f"must be positive, got {value!r}")
    return checked


@dataclass(frozen=True)
class DataConfig:
    """Where the events are cached and how they are generated."""

    folder: Path
    pthat_min: float = 1000.0
    chunk_size: int = 500
    margin: float = 0.03
    workers: int = 1

    @classmethod
    def parse(cls, value: Any, source: str, name: str) -> DataConfig:
        """Validate ``data:``."""
        entry = mapping(value, source, "data")
        check_keys(
            entry, {"folder", "pthat_min", "chunk_size", "margin", "workers"}, source, "data"
        )
        margin = number(entry.get("margin", 0.03), source, "data.margin")
        if not 0 <= margin < 1:
            raise fail(source, "data.margin", f"must be in [0, 1), got {margin}")
        return cls(
            folder=folder(entry.get("folder", str(Path("data") / name)), source, "data.folder"),
            pthat_min=_positive(entry.get("pthat_min", 1000.0), source, "data.pthat_min"),
            chunk_size=count(entry.get("chunk_size", 500), source, "data.chunk_size"),
            margin=margin,
            workers=_workers(entry.get("workers"), source, "data.workers"),
        )


@dataclass(frozen=True)
class FeatureConfig:
    """How the dijet processor runs over the event files."""

    executor: str = "futures"
    chunksize: int = 2000
    workers: int = 1

    @classmethod
    def parse(cls, value: Any, source: str) -> FeatureConfig:
        """Validate ``features:``."""
        entry = mapping(value or {}, source, "features")
        check_keys(entry, {"executor", "chunksize", "workers"}, source, "features")
        executor = entry.get("executor", "futures")
        if not isinstance(executor, str) or executor not in ("iterative", "futures", "dask"):
            raise fail(
                source, "features.executor", f"must be iterative, futures or dask, got {executor!r}"
            )
        return cls(
            executor=str(executor),
            chunksize=count(entry.get("chunksize", 2000), source, "features.chunksize"),
            workers=1
            if executor == "iterative"
            else _workers(entry.get("workers"), source, "features.workers"),
        )


@dataclass(frozen=True)
class ClassifierConfig:
    """The classifier scan: baseline seeds and DisCo strengths, and how DisCo's model is chosen."""

    kind: str
    seeds: int
    options: Mapping[str, Any]
    workers: int
    alphas: tuple[float, ...]
    min_auc: float

    @classmethod
    def parse(cls, config: Mapping[str, Any], source: str) -> ClassifierConfig:
        """Validate ``classifier:``, ``disco:`` and ``disco_selection:``."""
        entry = mapping(config["classifier"], source, "classifier")
        check_keys(entry, {"kind", "seeds", "options", "workers"}, source, "classifier")
        kind = entry.get("kind", "cnn")
        if not isinstance(kind, str) or kind not in ("cnn", "gbdt"):
            raise fail(source, "classifier.kind", f"must be cnn or gbdt, got {kind!r}")
        disco = mapping(config.get("disco") or {}, source, "disco")
        check_keys(disco, {"alphas"}, source, "disco")
        selection = mapping(config.get("disco_selection") or {}, source, "disco_selection")
        check_keys(selection, {"min_auc"}, source, "disco_selection")
        alphas = disco.get("alphas") or []
        alphas = numbers(alphas, source, "disco.alphas") if alphas else ()
        if any(a < 0 for a in alphas):
            raise fail(source, "disco.alphas", f"must be non-negative, got {list(alphas)}")
        min_auc = number(selection.get("min_auc", 0.8), source, "disco_selection.min_auc")
        if not 0 <= min_auc <= 1:
            raise fail(source, "disco_selection.min_auc", f"must lie in [0, 1], got {min_auc}")
        return cls(
            kind=kind,
            seeds=count(entry.get("seeds", 3), source, "classifier.seeds"),
            options=_training_options(kind, entry.get("options"), source),
            workers=_workers(entry.get("workers"), source, "classifier.workers"),
            alphas=alphas,
            min_auc=min_auc,
        )


def _training_options(kind: str, value: Any, source: str) -> dict[str, Any]:
    """``classifier.options``: the training options of ``kind``, each of its type."""
    from dataclasses import fields

    options = dict(mapping(value or {}, source, "classifier.options"))
    try:
        from rosenblatt.ml.training import CNNOptions, GBDTOptions, make_options
    except ImportError:
        return options  # without the ml extra the study refuses to start, naming the extra
    known = fields(CNNOptions if kind == "cnn" else GBDTOptions)
    check_keys(options, {f.name for f in known}, source, "classifier.options")
    for option in known:
        if option.name not in options:
            continue
        key, given = f"classifier.options.{option.name}", options[option.name]
        kind_of = str(option.type)
        if given is None and "None" in kind_of:
            continue
        if kind_of.startswith("int"):
            count(given, source, key, 1 if option.name == "n_threads" else 0)
        elif kind_of.startswith("float"):
            if number(given, source, key) < 0:
                raise fail(source, key, f"must be non-negative, got {given!r}")
        elif kind_of.startswith("bool"):
            flag(given, source, key)
        elif not isinstance(given, str):
            raise fail(source, key, f"must be a name, got {given!r}")
    try:
        make_options(kind, options)
    except (TypeError, ValueError) as err:
        raise fail(source, "classifier.options", str(err)) from None
    return options


@dataclass(frozen=True)
class SelectionConfig:
    """The free parameters scanned on the optimisation sample, and the rule that picks one."""

    depths: tuple[int, ...]
    sigma_r: tuple[float, ...]
    auc_tolerance: float = 0.01

    @classmethod
    def parse(cls, config: Mapping[str, Any], source: str) -> SelectionConfig:
        """Validate ``irgi:``, ``kde:`` and ``selection:``."""
        irgi = mapping(config["irgi"], source, "irgi")
        check_keys(irgi, {"depths"}, source, "irgi")
        kde = mapping(config["kde"], source, "kde")
        check_keys(kde, {"sigma_r"}, source, "kde")
        selection = mapping(config.get("selection") or {}, source, "selection")
        check_keys(selection, {"auc_tolerance"}, source, "selection")
        depths = irgi.get("depths")
        if not isinstance(depths, list) or not depths:
            raise fail(source, "irgi.depths", f"must be a non-empty list of depths, got {depths!r}")
        sigma_r = numbers(kde.get("sigma_r"), source, "kde.sigma_r")
        if any(v <= 0 for v in sigma_r):
            raise fail(source, "kde.sigma_r", f"must be positive, got {list(sigma_r)}")
        tolerance = number(selection.get("auc_tolerance", 0.01), source, "selection.auc_tolerance")
        if tolerance < 0:
            raise fail(source, "selection.auc_tolerance", f"must be non-negative, got {tolerance}")
        return cls(
            depths=tuple(count(d, source, "irgi.depths", 1, MAX_DEPTH) for d in depths),
            sigma_r=sigma_r,
            auc_tolerance=tolerance,
        )


@dataclass(frozen=True)
class CutGrid:
    """The (x0, y0) grid of ABCD cuts and the upper limit of the dijet mass."""

    mjj_max: float = 4000.0
    x0_range: tuple[float, float] = (2000.0, 3700.0)
    n_x0: int = 100
    y0_range: tuple[float, float] = (0.1, 0.85)
    n_y0: int = 100

    @property
    def x0(self) -> NDArray[np.float64]:
        """The cuts on the dijet mass."""
        return np.linspace(*self.x0_range, self.n_x0)

    @property
    def y0(self) -> NDArray[np.float64]:
        """The cuts on the score."""
        return np.linspace(*self.y0_range, self.n_y0)

    @classmethod
    def parse(cls, value: Any, source: str) -> CutGrid:
        """Validate ``abcd:``."""
        entry = mapping(value or {}, source, "abcd")
        check_keys(entry, {"mjj_max", "x0", "n_x0", "y0", "n_y0"}, source, "abcd")
        ranges = {}
        for axis, default in (("x0", (2000.0, 3700.0)), ("y0", (0.1, 0.85))):
            low_high = numbers(entry.get(axis, list(default)), source, f"abcd.{axis}", 2)
            if len(low_high) != 2 or not low_high[0] < low_high[1]:
                raise fail(
                    source,
                    f"abcd.{axis}",
                    f"must be [low, high] with low < high, got {list(low_high)}",
                )
            ranges[axis] = (low_high[0], low_high[1])
        mjj_max = number(entry.get("mjj_max", 4000.0), source, "abcd.mjj_max")
        if mjj_max <= ranges["x0"][0]:
            raise fail(
                source,
                "abcd.mjj_max",
                f"must lie above the lowest cut {ranges['x0'][0]}, got {mjj_max}",
            )
        return cls(
            mjj_max=mjj_max,
            x0_range=ranges["x0"],
            n_x0=count(entry.get("n_x0", 100), source, "abcd.n_x0", 2, MAX_CUTS),
            y0_range=ranges["y0"],
            n_y0=count(entry.get("n_y0", 100), source, "abcd.n_y0", 2, MAX_CUTS),
        )


@dataclass(frozen=True)
class LhcoConfig:
    """A validated ``study: lhco`` configuration.

    ``raw`` keeps the mapping as read: the model cache is keyed by its
    classifier, DisCo, partition and seed entries, and the statistics stage reads
    its own section from it.
    """

    name: str
    source: str
    seed: int
    data: DataConfig
    sizes: dict[str, dict[str, int]]
    features: FeatureConfig
    classifier: ClassifierConfig
    selection: SelectionConfig
    cuts: CutGrid
    permutations: int
    raw: Mapping[str, Any] = field(repr=False)

    @classmethod
    def parse(cls, config: Mapping[str, Any]) -> LhcoConfig:
        """Validate a configuration read by :func:`rosenblatt.config.load_config`."""
        source = check_top_level(config, _TOP_KEYS, _REQUIRED)
        _statistics(config.get("statistics"), source)
        name = str(config.get("name", Path(source).stem))
        return cls(
            name=name,
            source=source,
            seed=seed(config.get("seed", 0), source, "seed"),
            data=DataConfig.parse(config["data"], source, name),
            sizes=partition_sizes(config["partition"], source),
            features=FeatureConfig.parse(config.get("features"), source),
            classifier=ClassifierConfig.parse(config, source),
            selection=SelectionConfig.parse(config, source),
            cuts=CutGrid.parse(config.get("abcd"), source),
            permutations=count(config.get("permutations", 100), source, "permutations"),
            raw=config,
        )

    def needed(self, cls: str) -> int:
        """Events of class ``cls`` the four samples take together."""
        return sum(self.sizes[part][cls] for part in PARTS)

    def scan_key(self) -> str:
        """A short hash of the entries that decide the trained models (their cache folder's name)."""
        setting = json.dumps(
            {
                "classifier": self.raw["classifier"],
                "disco": self.raw.get("disco"),
                "partition": self.raw["partition"],
                "seed": self.raw.get("seed"),
            },
            sort_keys=True,
        )
        return hashlib.sha256(setting.encode()).hexdigest()[:12]


def _statistics(value: Any, source: str) -> None:
    """``statistics:``: the settings of the statistics stage, each checked."""
    statistics = mapping(value or {}, source, "statistics")
    check_keys(statistics, _STATISTICS_KEYS, source, "statistics")
    for key, minimum in (("n_boot", 2), ("closure_n_boot", 2), ("closure_thin", 1)):
        if key in statistics:
            count(statistics[key], source, f"statistics.{key}", minimum, MAX_REPLICAS)
    if statistics.get("sensitivity_thin") not in (None, 0, False):
        count(statistics["sensitivity_thin"], source, "statistics.sensitivity_thin", 1, MAX_CUTS)
    if "seed" in statistics:
        seed(statistics["seed"], source, "statistics.seed")
    if "auto_parameters" in statistics:
        flag(statistics["auto_parameters"], source, "statistics.auto_parameters")
    if "contamination" in statistics:
        fractions = numbers(statistics["contamination"], source, "statistics.contamination")
        if any(not 0 <= f < 1 for f in fractions):
            raise fail(
                source,
                "statistics.contamination",
                f"must be signal fractions in [0, 1), got {list(fractions)}",
            )


def partition_sizes(value: Any, source: str) -> dict[str, dict[str, int]]:
    """The ``partition:`` entry of a configuration as ``{part: {class: events}}``, checked.

    ``source`` names the configuration in the errors.
    """
    entry = mapping(value, source, "partition")
    check_keys(entry, PARTS, source, "partition")
    sizes = {}
    for part in PARTS:
        if part not in entry:
            raise fail(source, f"partition.{part}", "missing")
        counts = mapping(entry[part], source, f"partition.{part}")
        check_keys(counts, CLASSES, source, f"partition.{part}")
        sizes[part] = {
            cls: count(counts.get(cls), source, f"partition.{part}.{cls}") for cls in CLASSES
        }
    return sizes
