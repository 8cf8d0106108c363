"""The configuration of the LHC Olympics study (``study: lhco``), validated when loaded.

An unknown key, a value of the wrong type or a missing section is an error that
names the key and the configuration file (see ``configs/lhco-quick.yaml``).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
from collections.abc import Mapping
from dataclasses import field, replace
from pathlib import Path
from typing import Any

import numpy as np

from rosenblatt.studies.config_checks import (
    check_keys,
    count,
    fail,
    flag,
    folder,
    mapping,
    number,
    numbers,
    seed,
)
from rosenblatt.studies.config_fields import (
    StudyConfig,
    config_dataclass,
    config_keys,
    default_data_folder,
    option,
    parse_dataclass,
)
from rosenblatt.typing import FloatArray

__all__ = [
    "CLASSES",
    "DEFAULT_STRENGTHS",
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
    "decorrelation_strengths",
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


def _cores() -> int:
    return os.cpu_count() or 1


def _margin(value: Any, source: str, key: str) -> float:
    margin = number(value, source, key)
    if not 0 <= margin < 1:
        raise fail(source, key, f"must be in [0, 1), got {margin}")
    return margin


@config_dataclass
class DataConfig:
    """Where the events are cached and how they are generated."""

    folder: Path = option(
        default=Path("data"),
        doc="the folder of the cached events",
        check=folder,
        type="path",
        default_doc="data/<name>",
    )
    pthat_min: float = option(
        default=1000.0, doc="Pythia's lowest pT-hat of the QCD dijets, in GeV", check=_positive
    )
    chunk_size: int = option(default=500, doc="events generated per chunk", check=count)
    margin: float = option(
        default=0.03, doc="extra fraction of events generated beyond those needed", check=_margin
    )
    workers: int = option(
        default_factory=_cores,
        doc="processes generating events (0: the machine's cores)",
        check=_workers,
        default_doc="the machine's cores",
    )

    @classmethod
    def parse(cls, value: Any, source: str, name: str) -> DataConfig:
        """Validate ``data:``; the folder defaults to ``data/<name>``."""
        entry = mapping(value, source, "data")
        defaults = {}
        if "folder" not in entry:
            defaults["folder"] = default_data_folder(name, source)
        data: DataConfig = parse_dataclass(cls, entry, source, "data", defaults=defaults)
        return data


def _executor(value: Any, source: str, key: str) -> str:
    if not isinstance(value, str) or value not in ("iterative", "futures", "dask"):
        raise fail(source, key, f"must be iterative, futures or dask, got {value!r}")
    return value


@config_dataclass
class FeatureConfig:
    """How the dijet processor runs over the event files."""

    executor: str = option(
        default="futures",
        doc="coffea executor of the dijet processor: iterative, futures or dask",
        check=_executor,
    )
    chunksize: int = option(default=2000, doc="events per chunk of the processor", check=count)
    workers: int = option(
        default_factory=_cores,
        doc="worker processes (0: the machine's cores; 1 with the iterative executor)",
        check=_workers,
        default_doc="the machine's cores",
    )

    @classmethod
    def parse(cls, value: Any, source: str) -> FeatureConfig:
        """Validate ``features:``."""
        features: FeatureConfig = parse_dataclass(cls, value or {}, source, "features")
        return replace(features, workers=1) if features.executor == "iterative" else features


def _kind(value: Any, source: str, key: str) -> str:
    if not isinstance(value, str) or value not in ("cnn", "gbdt"):
        raise fail(source, key, f"must be cnn or gbdt, got {value!r}")
    return value


def _options(value: Any, source: str, key: str) -> dict[str, Any]:
    return dict(mapping(value or {}, source, key))


def _alphas(value: Any, source: str, key: str) -> tuple[float, ...]:
    alphas = numbers(value, source, key) if value else ()
    if any(a < 0 for a in alphas):
        raise fail(source, key, f"must be non-negative, got {list(alphas)}")
    return alphas


def _fraction(value: Any, source: str, key: str) -> float:
    checked = number(value, source, key)
    if not 0 <= checked <= 1:
        raise fail(source, key, f"must lie in [0, 1], got {checked}")
    return checked


@config_dataclass
class ClassifierConfig:
    """The classifier scan: baseline seeds and DisCo strengths, and how DisCo's model is chosen."""

    kind: str = option(
        default="cnn", key="classifier.kind", doc="the classifier: cnn or gbdt", check=_kind
    )
    seeds: int = option(
        default=3, key="classifier.seeds", doc="baseline classifiers trained (seeds)", check=count
    )
    options: Mapping[str, Any] = option(
        default_factory=dict,
        key="classifier.options",
        doc="training options of the kind (rosenblatt.ml.training's CNNOptions or GBDTOptions)",
        check=_options,
    )
    workers: int = option(
        default_factory=_cores,
        key="classifier.workers",
        doc="processes training the classifiers (0: the machine's cores)",
        check=_workers,
        default_doc="the machine's cores",
    )
    alphas: tuple[float, ...] = option(
        default=(),
        key="disco.alphas",
        doc="the DisCo strengths scanned (none: no DisCo scan)",
        check=_alphas,
    )
    min_auc: float = option(
        default=0.8,
        key="disco_selection.min_auc",
        doc="the lowest AUC of the DisCo model chosen",
        check=_fraction,
    )

    @classmethod
    def parse(cls, config: Mapping[str, Any], source: str) -> ClassifierConfig:
        """Validate ``classifier:``, ``disco:`` and ``disco_selection:`` (keys of ``config``)."""
        for key in ("classifier", "disco", "disco_selection"):
            entry = config.get(key)
            if entry is not None or key == "classifier":
                known = [
                    k.key.split(".")[1] for k in config_keys(cls) if k.key.startswith(key + ".")
                ]
                check_keys(mapping(entry, source, key), known, source, key)
        parsed: ClassifierConfig = parse_dataclass(cls, config, source, check_sections=False)
        options = _training_options(parsed.kind, config["classifier"].get("options"), source)
        return replace(parsed, options=options)


def _training_options(kind: str, value: Any, source: str) -> dict[str, Any]:
    """``classifier.options``: the training options of ``kind``, each of its type."""
    from dataclasses import fields

    options = dict(mapping(value or {}, source, "classifier.options"))
    try:
        from rosenblatt.ml.gbdt import GBDTOptions
        from rosenblatt.ml.training import CNNOptions, make_options
    except ImportError:
        return options  # without the ml extra the study refuses to start, naming the extra
    known = fields(CNNOptions if kind == "cnn" else GBDTOptions)
    check_keys(options, {f.name for f in known}, source, "classifier.options")
    for known_option in known:
        if known_option.name not in options:
            continue
        key, given = f"classifier.options.{known_option.name}", options[known_option.name]
        kind_of = str(known_option.type)
        if given is None and "None" in kind_of:
            continue
        if kind_of.startswith("int"):
            count(given, source, key, 1 if known_option.name == "n_threads" else 0)
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


def _depth_list(value: Any, source: str, key: str) -> tuple[int, ...]:
    if not isinstance(value, list) or not value:
        raise fail(source, key, f"must be a non-empty list of depths, got {value!r}")
    return tuple(count(d, source, key, 1, MAX_DEPTH) for d in value)


def _widths(value: Any, source: str, key: str) -> tuple[float, ...]:
    sigma_r = numbers(value, source, key)
    if any(v <= 0 for v in sigma_r):
        raise fail(source, key, f"must be positive, got {list(sigma_r)}")
    return sigma_r


def _non_negative(value: Any, source: str, key: str) -> float:
    checked = number(value, source, key)
    if checked < 0:
        raise fail(source, key, f"must be non-negative, got {checked}")
    return checked


@config_dataclass
class SelectionConfig:
    """The free parameters scanned on the optimisation sample, and the rule that picks one."""

    depths: tuple[int, ...] = option(
        key="irgi.depths", doc="the IRGI depths scanned", check=_depth_list
    )
    sigma_r: tuple[float, ...] = option(
        key="kde.sigma_r", doc="the relative KDE widths scanned", check=_widths
    )
    auc_tolerance: float = option(
        default=0.01,
        key="selection.auc_tolerance",
        doc="the AUC given up for a smaller dCor² when a parameter is picked",
        check=_non_negative,
    )

    @classmethod
    def parse(cls, config: Mapping[str, Any], source: str) -> SelectionConfig:
        """Validate ``irgi:``, ``kde:`` and ``selection:`` (keys of ``config``)."""
        selection: SelectionConfig = parse_dataclass(
            cls, {k: config[k] for k in ("irgi", "kde", "selection") if k in config}, source
        )
        return selection


def _cut_range(value: Any, source: str, key: str) -> tuple[float, float]:
    low_high = numbers(value, source, key, 2)
    if len(low_high) != 2 or not low_high[0] < low_high[1]:
        raise fail(source, key, f"must be [low, high] with low < high, got {list(low_high)}")
    return low_high[0], low_high[1]


def _n_cuts(value: Any, source: str, key: str) -> int:
    return count(value, source, key, 2, MAX_CUTS)


@config_dataclass
class CutGrid:
    """The (x0, y0) grid of ABCD cuts and the upper limit of the dijet mass."""

    mjj_max: float = option(
        default=4000.0, doc="the upper limit of the dijet mass, in GeV", check=number
    )
    x0_range: tuple[float, float] = option(
        default=(2000.0, 3700.0), key="x0", doc="[low, high] of the mass cuts", check=_cut_range
    )
    n_x0: int = option(default=100, doc="mass cuts", check=_n_cuts)
    y0_range: tuple[float, float] = option(
        default=(0.1, 0.85), key="y0", doc="[low, high] of the score cuts", check=_cut_range
    )
    n_y0: int = option(default=100, doc="score cuts", check=_n_cuts)

    @property
    def x0(self) -> FloatArray:
        """The cuts on the dijet mass."""
        return np.linspace(*self.x0_range, self.n_x0)

    @property
    def y0(self) -> FloatArray:
        """The cuts on the score."""
        return np.linspace(*self.y0_range, self.n_y0)

    @classmethod
    def parse(cls, value: Any, source: str) -> CutGrid:
        """Validate ``abcd:``."""
        grid: CutGrid = parse_dataclass(cls, value or {}, source, "abcd")
        if grid.mjj_max <= grid.x0_range[0]:
            raise fail(
                source,
                "abcd.mjj_max",
                f"must lie above the lowest cut {grid.x0_range[0]}, got {grid.mjj_max}",
            )
        return grid


#: the decorrelation strengths scanned by default: the raw score's CDF (0) to gamma (1)
DEFAULT_STRENGTHS = (0.0, 0.25, 0.5, 0.75, 0.9, 1.0)


def _strengths(value: Any, source: str, key: str) -> tuple[float, ...]:
    """Decorrelation strengths: increasing numbers in [0, 1]."""
    strengths = numbers(value, source, key)
    if any(not 0 <= p <= 1 for p in strengths) or any(
        b <= a for a, b in itertools.pairwise(strengths)
    ):
        raise fail(source, key, f"must be increasing numbers in [0, 1], got {list(strengths)}")
    return strengths


@config_dataclass
class LhcoConfig(StudyConfig):
    """A validated ``study: lhco`` configuration; each field is one key (or group) of the file.

    ``raw`` keeps the mapping as read: the model cache is keyed by its
    classifier, DisCo, partition and seed entries, and the statistics stage reads
    its own section from it.
    """

    data: DataConfig = option(doc="the cached events and their generation", check=DataConfig)
    sizes: dict[str, dict[str, int]] = option(
        key="partition",
        doc="events per sample (train, validation, optimisation, testing) and class "
        "(background, signal)",
        check=lambda value, source, key: partition_sizes(value, source),
        type="{part: {background: integer, signal: integer}}",
    )
    classifier: ClassifierConfig = option(key="", doc="the classifier scan", check=ClassifierConfig)
    selection: SelectionConfig = option(
        key="", doc="the transforms' parameters scanned", check=SelectionConfig
    )
    raw: Mapping[str, Any] = field(repr=False, metadata={"doc": "the mapping as read"})
    seed: int = option(default=0, doc="seed of every random draw", check=seed)
    features: FeatureConfig = option(
        default_factory=FeatureConfig, doc="the dijet processor's run", check=FeatureConfig
    )
    cuts: CutGrid = option(
        default_factory=CutGrid, key="abcd", doc="the grid of ABCD cuts", check=CutGrid
    )
    permutations: int = option(default=100, doc="permutations of the dCor² floor", check=count)
    statistics: Mapping[str, Any] = option(
        default_factory=dict,
        doc="the statistics stage's settings: n_boot, seed, closure_n_boot, closure_thin, "
        "sensitivity_thin, auto_parameters, contamination",
        check=lambda value, source, key: _statistics(value, source),
    )
    strengths: tuple[float, ...] = option(
        default=DEFAULT_STRENGTHS,
        key="decorrelation_strengths",
        doc="the strengths p of the scores (1 - p) F(y) + p gamma(x, y) scanned for IRGI and "
        "KDE (rosenblatt.transforms.strength): 0 is the raw score's CDF, 1 is gamma",
        check=_strengths,
    )

    @classmethod
    def parse(cls, config: Mapping[str, Any]) -> LhcoConfig:
        """Validate a configuration read by :func:`rosenblatt.studies.config.load_config`."""
        cfg: LhcoConfig = cls.read(config, given={"raw": config}, required=_REQUIRED)
        source = cfg.source
        return replace(
            cfg,
            data=DataConfig.parse(config["data"], source, cfg.name),
            features=FeatureConfig.parse(config.get("features"), source),
            classifier=ClassifierConfig.parse(config, source),
            cuts=CutGrid.parse(config.get("abcd"), source),
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


def _statistics(value: Any, source: str) -> dict[str, Any]:
    """``statistics:``: the settings of the statistics stage, each checked."""
    statistics = dict(mapping(value or {}, source, "statistics"))
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
    return statistics


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
