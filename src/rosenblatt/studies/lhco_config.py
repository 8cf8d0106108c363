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
    mapping,
    number,
    numbers,
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


def _workers(value: Any, source: str, key: str) -> int:
    """A worker count, the machine's cores when not given."""
    return count(value or os.cpu_count() or 1, source, key)


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
            folder=Path(str(entry.get("folder", Path("data") / name))),
            pthat_min=number(entry.get("pthat_min", 1000.0), source, "data.pthat_min"),
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
        if executor not in ("iterative", "futures", "dask"):
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
        if kind not in ("cnn", "gbdt"):
            raise fail(source, "classifier.kind", f"must be cnn or gbdt, got {kind!r}")
        disco = mapping(config.get("disco") or {}, source, "disco")
        check_keys(disco, {"alphas"}, source, "disco")
        selection = mapping(config.get("disco_selection") or {}, source, "disco_selection")
        check_keys(selection, {"min_auc"}, source, "disco_selection")
        alphas = disco.get("alphas") or []
        return cls(
            kind=str(kind),
            seeds=count(entry.get("seeds", 3), source, "classifier.seeds"),
            options=dict(mapping(entry.get("options") or {}, source, "classifier.options")),
            workers=_workers(entry.get("workers"), source, "classifier.workers"),
            alphas=numbers(alphas, source, "disco.alphas") if alphas else (),
            min_auc=number(selection.get("min_auc", 0.8), source, "disco_selection.min_auc"),
        )


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
        return cls(
            depths=tuple(count(d, source, "irgi.depths") for d in depths),
            sigma_r=numbers(kde.get("sigma_r"), source, "kde.sigma_r"),
            auc_tolerance=number(
                selection.get("auc_tolerance", 0.01), source, "selection.auc_tolerance"
            ),
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
        return cls(
            mjj_max=number(entry.get("mjj_max", 4000.0), source, "abcd.mjj_max"),
            x0_range=ranges["x0"],
            n_x0=count(entry.get("n_x0", 100), source, "abcd.n_x0", 2),
            y0_range=ranges["y0"],
            n_y0=count(entry.get("n_y0", 100), source, "abcd.n_y0", 2),
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
        statistics = mapping(config.get("statistics") or {}, source, "statistics")
        check_keys(statistics, _STATISTICS_KEYS, source, "statistics")
        name = str(config.get("name", Path(source).stem))
        return cls(
            name=name,
            source=source,
            seed=count(config.get("seed", 0), source, "seed", 0),
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
