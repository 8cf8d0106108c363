"""The configuration of the dijet study with several protected observables (``study: lhco-2d``).

The events, features, partition and classifier scan are those of the LHC
Olympics study (``study: lhco``): the sections ``seed``, ``data``,
``partition``, ``features``, ``classifier``, ``disco`` and ``disco_selection``
mean the same, and with the same values the cached events and trained models
of an LHCO study in the same ``data.folder`` are reused. The section
``decorrelation`` says which observables are protected and how the best
baseline is decorrelated from them (see ``configs/lhco-2d.yaml``). An unknown
key or a value of the wrong type is an error naming the key and the file.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rosenblatt.studies.config_checks import (
    check_keys,
    check_top_level,
    count,
    fail,
    mapping,
    seed,
)
from rosenblatt.studies.lhco.config import (
    SAMPLE_KEYS,
    ClassifierConfig,
    CutGrid,
    DataConfig,
    FeatureConfig,
    LhcoConfig,
    SelectionConfig,
    partition_sizes,
)

__all__ = ["ESTIMATORS", "OBSERVABLES", "DecorrelationConfig", "Lhco2dConfig"]

#: feature-table columns that may be protected
OBSERVABLES = ("mjj", "pt_j1", "deta_jj", "mj1", "mj2")

#: the conditional-CDF estimators the study may fit, each with its automatic parameter
ESTIMATORS = ("gridkde", "irgi", "kde")

_TOP_KEYS = SAMPLE_KEYS | {"decorrelation"}
_REQUIRED = ("data", "partition", "classifier")
_MAX_OBSERVABLES = 3


def _names(value: Any, known: tuple[str, ...], source: str, key: str) -> tuple[str, ...]:
    """``value`` as a tuple of distinct names out of ``known``."""
    if not isinstance(value, list) or not value:
        raise fail(source, key, f"must be a non-empty list, got {value!r}")
    for name in value:
        if name not in known:
            raise fail(source, key, f"{name!r} is not one of {list(known)}")
    if len(set(value)) != len(value):
        raise fail(source, key, f"names must not repeat, got {value!r}")
    return tuple(value)


@dataclass(frozen=True)
class DecorrelationConfig:
    """The protected observables, the estimators fitted and the permutations of each floor."""

    protected: tuple[str, ...] = ("mjj", "pt_j1")
    estimators: tuple[str, ...] = ("gridkde",)
    permutations: int = 100
    seed: int = 1

    @classmethod
    def parse(cls, value: Any, source: str) -> DecorrelationConfig:
        """Validate ``decorrelation:``."""
        entry = mapping(value or {}, source, "decorrelation")
        check_keys(
            entry, {"protected", "estimators", "permutations", "seed"}, source, "decorrelation"
        )
        protected = _names(
            entry.get("protected", ["mjj", "pt_j1"]), OBSERVABLES, source, "decorrelation.protected"
        )
        if not 2 <= len(protected) <= _MAX_OBSERVABLES:
            raise fail(
                source,
                "decorrelation.protected",
                f"must name 2 or 3 observables, got {list(protected)}",
            )
        return cls(
            protected=protected,
            estimators=_names(
                entry.get("estimators", ["gridkde"]), ESTIMATORS, source, "decorrelation.estimators"
            ),
            permutations=count(
                entry.get("permutations", 100), source, "decorrelation.permutations"
            ),
            seed=seed(entry.get("seed", 1), source, "decorrelation.seed"),
        )


@dataclass(frozen=True)
class Lhco2dConfig:
    """A validated ``study: lhco-2d`` configuration.

    ``base`` is the LHCO study's configuration of the shared sections (its
    transform scans and ABCD grid keep their defaults and are not used): the
    study's generation, feature and training steps take it, and its
    :meth:`~rosenblatt.studies.lhco.config.LhcoConfig.scan_key` is that of an
    LHCO configuration with the same classifier, DisCo, partition and seed.
    """

    name: str
    source: str
    base: LhcoConfig
    decorrelation: DecorrelationConfig

    @classmethod
    def parse(cls, config: Mapping[str, Any]) -> Lhco2dConfig:
        """Validate a configuration read by :func:`rosenblatt.config.load_config`."""
        source = check_top_level(config, _TOP_KEYS, _REQUIRED)
        name = str(config.get("name", Path(source).stem))
        base = LhcoConfig(
            name=name,
            source=source,
            seed=seed(config.get("seed", 0), source, "seed"),
            data=DataConfig.parse(config["data"], source, name),
            sizes=partition_sizes(config["partition"], source),
            features=FeatureConfig.parse(config.get("features"), source),
            classifier=ClassifierConfig.parse(config, source),
            selection=SelectionConfig(depths=(), sigma_r=()),
            cuts=CutGrid(),
            permutations=1,
            raw=config,
        )
        return cls(
            name=name,
            source=source,
            base=base,
            decorrelation=DecorrelationConfig.parse(config.get("decorrelation"), source),
        )
