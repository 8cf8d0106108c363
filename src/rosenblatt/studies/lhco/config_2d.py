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
from dataclasses import replace
from pathlib import Path
from typing import Any

from rosenblatt.studies.config_checks import (
    count,
    fail,
    seed,
)
from rosenblatt.studies.config_fields import (
    StudyConfig,
    config_dataclass,
    config_source,
    option,
    parse_dataclass,
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

_REQUIRED = ("data", "partition", "classifier")
_MAX_OBSERVABLES = 3
#: the fields of the LHCO study's configuration this study shares
_SHARED = ("seed", "data", "sizes", "features", "classifier")


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


def _protected(value: Any, source: str, key: str) -> tuple[str, ...]:
    protected = _names(value, OBSERVABLES, source, key)
    if not 2 <= len(protected) <= _MAX_OBSERVABLES:
        raise fail(source, key, f"must name 2 or 3 observables, got {list(protected)}")
    return protected


def _estimators(value: Any, source: str, key: str) -> tuple[str, ...]:
    return _names(value, ESTIMATORS, source, key)


@config_dataclass
class DecorrelationConfig:
    """The protected observables, the estimators fitted and the permutations of each floor."""

    protected: tuple[str, ...] = option(
        default=("mjj", "pt_j1"),
        doc=f"the 2 or 3 protected observables, among {', '.join(OBSERVABLES)}",
        check=_protected,
    )
    estimators: tuple[str, ...] = option(
        default=("gridkde",),
        doc=f"the conditional-CDF estimators fitted, among {', '.join(ESTIMATORS)}",
        check=_estimators,
    )
    permutations: int = option(default=100, doc="permutations of each dCor² floor", check=count)
    seed: int = option(default=1, doc="seed of the permutations", check=seed)

    @classmethod
    def parse(cls, value: Any, source: str) -> DecorrelationConfig:
        """Validate ``decorrelation:``."""
        decorrelation: DecorrelationConfig = parse_dataclass(
            cls, value or {}, source, "decorrelation"
        )
        return decorrelation


@config_dataclass
class Lhco2dConfig(StudyConfig):
    """A validated ``study: lhco-2d`` configuration.

    ``base`` is the LHCO study's configuration of the shared sections (its
    transform scans and ABCD grid keep their defaults and are not used): the
    study's generation, feature and training steps take it, and its
    :meth:`~rosenblatt.studies.lhco.config.LhcoConfig.scan_key` is that of an
    LHCO configuration with the same classifier, DisCo, partition and seed.
    """

    base: LhcoConfig = option(
        key="",
        doc="the sections shared with the LHCO study",
        check=LhcoConfig,
        only=_SHARED,
    )
    decorrelation: DecorrelationConfig = option(
        default_factory=DecorrelationConfig,
        doc="the protected observables and the estimators",
        check=DecorrelationConfig,
    )

    @classmethod
    def parse(cls, config: Mapping[str, Any]) -> Lhco2dConfig:
        """Validate a configuration read by :func:`rosenblatt.studies.config.load_config`."""
        source = config_source(config)
        cfg: Lhco2dConfig = parse_dataclass(
            cls,
            config,
            source,
            only=("name", "decorrelation"),
            given={"source": source, "base": None},
            defaults={"name": str(config.get("name", Path(source).stem))},
            extra_keys=SAMPLE_KEYS,
            required=_REQUIRED,
        )
        base = LhcoConfig(
            name=cfg.name,
            source=source,
            seed=seed(config.get("seed", 0), source, "seed"),
            data=DataConfig.parse(config["data"], source, cfg.name),
            sizes=partition_sizes(config["partition"], source),
            features=FeatureConfig.parse(config.get("features"), source),
            classifier=ClassifierConfig.parse(config, source),
            selection=SelectionConfig(depths=(), sigma_r=()),
            cuts=CutGrid(),
            permutations=1,
            raw=config,
        )
        return replace(cfg, base=base)
