"""The configuration of the pseudo-experiment study (``study: toys``), validated when loaded.

An unknown key or a value of the wrong type is an error that names the key and
the configuration file (see ``configs/toys.yaml``).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rosenblatt.studies.abcd.config import (
    AUTO_REPLICAS,
    NEGATIVE_WEIGHT_REPLICAS,
    TransformConfig,
    resolved_replicas,
)
from rosenblatt.studies.config_checks import (
    count,
    fail,
    flag,
    fraction,
    number,
    numbers,
    positive,
    seed,
)
from rosenblatt.studies.config_fields import (
    StudyConfig,
    config_dataclass,
    data_folder_option,
    default_data_folder,
    option,
)

__all__ = ["PopulationConfig", "ToysConfig"]

#: the most pseudo-experiments of one configuration
MAX_TOYS = 1_000_000
#: the most bootstrap replicas of a transform in a pseudo-experiment
MAX_REPLICAS = 1000
#: ``simulation:`` values
SIMULATIONS = ("defining", "independent")


def _non_negative(value: Any, source: str, key: str) -> float:
    amount = number(value, source, key)
    if amount < 0:
        raise fail(source, key, f"must not be negative, got {amount}")
    return amount


def _negative_fraction(value: Any, source: str, key: str) -> float:
    fraction = number(value, source, key)
    if not 0 <= fraction < 0.5:
        raise fail(source, key, f"must lie in [0, 0.5), got {fraction}")
    return fraction


def _sizes(value: Any, source: str, key: str) -> tuple[int, ...]:
    if not isinstance(value, list) or not value:
        raise fail(source, key, f"must be a non-empty list of event counts, got {value!r}")
    sizes = tuple(count(v, source, key, 100) for v in value)
    if len(set(sizes)) != len(sizes):
        raise fail(source, key, f"sizes must be distinct, got {list(sizes)}")
    return sizes


def _line(value: Any, source: str, key: str) -> tuple[float, float]:
    pair = numbers(value, source, key, 2)
    if len(pair) != 2:
        raise fail(source, key, f"must be [intercept, slope], got {value!r}")
    return pair[0], pair[1]


def _simulation(value: Any, source: str, key: str) -> str:
    if value not in SIMULATIONS:
        raise fail(source, key, f"must be one of {list(SIMULATIONS)}, got {value!r}")
    return str(value)


def _replicas(value: Any, source: str, key: str) -> int | str:
    return "auto" if value == "auto" else count(value, source, key, 3, MAX_REPLICAS)


def _workers(value: Any, source: str, key: str) -> int:
    return count(value, source, key, 1, 1024)


@config_dataclass
class PopulationConfig:
    """``population:``: the toy background and signal, and the expected counts of a data set.

    The background's ``x`` falls as ``exp(-slope x)`` on [0, 1]; its ``y``
    given ``x`` is a Beta distribution of mean ``mean[0] + mean[1] x`` and
    concentration ``concentration``, so the raw score rises with ``x``. The
    signal is a Gaussian peak in ``x`` and a Beta distribution in ``y``.
    """

    slope: float = option(default=3.0, doc="the background's exponential slope in x", check=number)
    mean: tuple[float, float] = option(
        default=(0.3, 0.4),
        doc="[intercept, slope] of the background's mean y as a function of x",
        check=_line,
    )
    concentration: float = option(
        default=5.0, doc="the concentration (a + b) of the background's Beta in y", check=positive
    )
    signal_x: tuple[float, float] = option(
        default=(0.8, 0.05), doc="[mean, sd] of the signal's Gaussian peak in x", check=_line
    )
    signal_y: tuple[float, float] = option(
        default=(8.0, 2.0), doc="[a, b] of the signal's Beta distribution in y", check=_line
    )
    background: float = option(
        default=50000.0, doc="expected background events of a data set", check=positive
    )
    signal: float = option(
        default=300.0,
        doc="expected signal events injected into a data set (0: none)",
        check=_non_negative,
    )


@config_dataclass
class ToysConfig(StudyConfig):
    """A validated ``study: toys`` configuration; each field is one key of the file."""

    transforms: tuple[TransformConfig, ...] = option(
        doc="the transforms: each {kind: irgi, gridkde or kde, name, parameters}, built "
        "with the cut y0 as the abcd study builds them (IRGI's depth auto unless given)",
        check=lambda value, source, key: _transforms(value, source),
        type="list of mappings",
    )
    seed: int = option(default=2026, doc="seed of every pseudo-experiment", check=seed)
    n_toys: int = option(
        default=500, doc="pseudo-experiments per transform and defining size", check=count
    )
    defining_sizes: tuple[int, ...] = option(
        default=(5000, 20000, 80000),
        doc="events of the defining sample, one set of pseudo-experiments each",
        check=_sizes,
    )
    raw_score: bool = option(
        default=True,
        doc="the raw score beside the transforms, cut at the defining sample's quantile",
        check=flag,
    )
    simulation: str = option(
        default="defining",
        doc="the background simulation of the closure factor: the defining sample itself, "
        "or an independent sample of the same size",
        check=_simulation,
    )
    simulation_size: float = option(
        default=1.0,
        doc="events of the independent simulation, as a multiple of the defining size "
        "(``simulation: independent`` only)",
        check=positive,
    )
    negative_weight_fraction: float = option(
        default=0.0,
        doc="the fraction f of simulated events (defining and background simulation) of "
        "negative weight: each weighs -1/(1-2f) with probability f and +1/(1-2f) otherwise, "
        "as next-to-leading-order simulation (0: unit weights); the data stay unweighted",
        check=_negative_fraction,
    )
    n_boot: int | str = option(
        default="auto",
        doc=(
            "keyed bootstrap replicas of each transform per pseudo-experiment: auto (as the "
            f"abcd study's statistics.n_boot: {AUTO_REPLICAS}, {NEGATIVE_WEIGHT_REPLICAS} "
            "with negative weights) or a number of at least 3"
        ),
        type="auto or an integer of at least 3",
        check=_replicas,
    )
    x0: float = option(default=0.6, doc="the cut on x (A and B above it)", check=fraction)
    y0: float = option(
        default=0.95, doc="the cut on the transformed score (A and C above it)", check=fraction
    )
    population: PopulationConfig = option(
        default_factory=PopulationConfig,
        doc="the toy background, signal and data sizes",
        check=PopulationConfig,
    )
    workers: int = option(
        default=0,
        doc="processes running pseudo-experiments",
        check=_workers,
        default_doc="the machine's cores",
        type="integer",
    )
    data_folder: Path | None = data_folder_option(
        "folder of each setting's pseudo-experiments, kept for later runs"
    )

    @property
    def replicas(self) -> int:
        """The keyed replicas per pseudo-experiment: ``n_boot``, ``auto`` resolved."""
        return resolved_replicas(self.n_boot, self.negative_weight_fraction > 0)

    @classmethod
    def parse(cls, config: Mapping[str, Any]) -> ToysConfig:
        """Validate a configuration read by :func:`rosenblatt.studies.config.load_config`."""
        parsed: ToysConfig = cls.read(config)
        source = parsed.source
        if parsed.simulation == "defining" and parsed.simulation_size != 1:
            raise fail(
                source,
                "simulation_size",
                "sizes an independent simulation: set simulation: independent, or leave it out",
            )
        return dataclasses.replace(
            parsed,
            # built as the abcd study builds them: an automatic depth or width resolves the cut
            transforms=tuple(
                dataclasses.replace(t, cut_levels=(parsed.y0,)) for t in parsed.transforms
            ),
            workers=parsed.workers or os.cpu_count() or 1,
            data_folder=parsed.data_folder or default_data_folder(parsed.name, source),
        )


def _transforms(value: Any, source: str) -> tuple[TransformConfig, ...]:
    """``transforms:``: a list of transforms of distinct names, none read from a file."""
    if not isinstance(value, list):
        raise fail(source, "transforms", f"must be a list of transforms, got {value!r}")
    base = Path(source).parent
    parsed = tuple(
        TransformConfig.parse(t, source, f"transforms[{i}]", base) for i, t in enumerate(value)
    )
    names = [t.name for t in parsed]
    if len(set(names)) != len(names) or "score" in names:
        raise fail(source, "transforms", f"names must be distinct and not 'score', got {names}")
    for i, transform in enumerate(parsed):
        if transform.file is not None:
            raise fail(
                source,
                f"transforms[{i}]",
                "each pseudo-experiment fits its own transform: give a kind, not a file",
            )
    return parsed
