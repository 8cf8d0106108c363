"""The configuration of the pass/fail pseudo-experiments (``study: passfail-toys``), validated when loaded.

Toy spectra in bins of ``x``: the falling background of ``study: toys`` with a score
whose mean rises with ``x``, a Gaussian resonance injected at several masses and
strengths, cut on the exact conditional CDF, on fitted transforms and on the raw score
(see ``configs/passfail-toys.yaml``). An unknown key or a value of the wrong type is an
error that names the key and the configuration file.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rosenblatt.studies.abcd.config import (
    AUTO_REPLICAS,
    TransformConfig,
    parse_replicas,
    resolved_replicas,
)
from rosenblatt.studies.config_checks import (
    count,
    fail,
    flag,
    fraction,
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
from rosenblatt.studies.toys.config import PopulationConfig

__all__ = ["PassfailToysConfig", "SpectrumConfig"]


def _masses(value: Any, source: str, key: str) -> tuple[float, ...]:
    masses = numbers(value, source, key)
    if any(not 0 < m < 1 for m in masses) or len(set(masses)) != len(masses):
        raise fail(source, key, f"must be distinct masses inside (0, 1), got {list(masses)}")
    return tuple(sorted(masses))


def _strengths(value: Any, source: str, key: str) -> tuple[float, ...]:
    strengths = numbers(value, source, key)
    if any(s < 0 for s in strengths) or len(set(strengths)) != len(strengths):
        raise fail(source, key, f"must be distinct and not negative, got {list(strengths)}")
    if 0 not in strengths:
        raise fail(source, key, "must hold 0: the background-only pseudo-experiments")
    return tuple(sorted(strengths))


def _scan(value: Any, source: str, key: str) -> tuple[float, float, float]:
    low, high, step = (*numbers(value, source, key, 3), 0.0)[:3]
    if not (isinstance(value, list) and len(value) == 3 and 0 < low < high < 1 and step > 0):
        raise fail(source, key, f"must be [low, high, step] inside (0, 1), got {value!r}")
    return low, high, step


#: the most keyed replicas of a transform in a pseudo-experiment
MAX_REPLICAS = 1000


def _transforms(value: Any, source: str, key: str) -> tuple[TransformConfig, ...]:
    if not isinstance(value, list):
        raise fail(source, key, f"must be a list of transforms, got {value!r}")
    base = Path(source).parent
    parsed = tuple(
        TransformConfig.parse(t, source, f"{key}[{i}]", base) for i, t in enumerate(value)
    )
    names = [t.name for t in parsed]
    if len(set(names)) != len(names) or {"score", "exact"} & set(names):
        raise fail(source, key, f"names must be distinct, not 'score' or 'exact', got {names}")
    for i, transform in enumerate(parsed):
        if transform.file is not None:
            raise fail(source, f"{key}[{i}]", "each pseudo-experiment fits its own transform")
    return parsed


@config_dataclass
class SpectrumConfig:
    """``spectrum:``: the bins of ``x``, the cut, the resonance and the grid of the bump hunt."""

    bins: int = option(
        default=20, doc="equal bins of x on [0, 1]", check=lambda v, s, k: count(v, s, k, 3, 1000)
    )
    y0: float = option(
        default=0.9,
        doc="the cut on gamma; the raw score's cut passes the same fraction",
        check=fraction,
    )
    masses: tuple[float, ...] = option(
        default=(0.3, 0.5, 0.7),
        doc="the masses where the resonance is injected and fitted",
        check=_masses,
    )
    strengths: tuple[float, ...] = option(
        default=(0.0, 1.0, 2.0),
        doc="the injected signal strengths mu, 0 (background only) among them",
        check=_strengths,
    )
    signal_yield: float = option(
        default=200.0, doc="the resonance's events at mu = 1, before the cut", check=positive
    )
    resolution: float = option(
        default=0.02, doc="the resonance's Gaussian width in x", check=positive
    )
    scan: tuple[float, float, float] = option(
        default=(0.1, 0.9, 0.02),
        doc="[low, high, step] of the bump hunt's mass grid",
        check=_scan,
        type="list of numbers",
    )
    global_toys: int = option(
        default=1000,
        doc="pseudo-experiments of the background-only fit whose largest local "
        "significances give each data set's claimed global p-value (0: no background-only "
        "scans)",
        check=lambda v, s, k: count(v, s, k, 0),
    )
    reference_level: float = option(
        default=1.0,
        doc="the level u0 of q0 where Gross-Vitells upcrossings are counted",
        check=positive,
    )


@config_dataclass
class PassfailToysConfig(StudyConfig):
    """A validated ``study: passfail-toys`` configuration; each field is one key of the file."""

    seed: int = option(default=2026, doc="seed of every pseudo-experiment", check=seed)
    n_toys: int = option(default=500, doc="pseudo-experiments per score", check=count)
    exact: bool = option(
        default=True, doc="the exact conditional CDF of the population among the scores", check=flag
    )
    transforms: tuple[TransformConfig, ...] = option(
        default=(),
        doc="fitted transforms, each on its own defining sample per pseudo-experiment: "
        "{kind: irgi, gridkde or kde, name, parameters}",
        check=_transforms,
        type="list of mappings",
    )
    raw_score: bool = option(
        default=True, doc="the raw score, cut at the same background efficiency", check=flag
    )
    n_defining: int = option(
        default=200000,
        doc="events of each pseudo-experiment's defining sample of a fitted transform",
        check=lambda v, s, k: count(v, s, k, 100),
    )
    n_boot: int | str = option(
        default=0,
        doc=(
            "keyed bootstrap replicas of each fitted transform per pseudo-experiment: 0 (none: "
            "the fit has no non-closure), auto (as the abcd study's statistics.n_boot: "
            f"{AUTO_REPLICAS}) or a number of at least 2; with replicas the defining sample is "
            "the background simulation, whose per-bin non-closure with its keyed-bootstrap "
            "error enters the fit"
        ),
        type="auto, 0 or an integer of at least 2",
        check=lambda v, s, k: parse_replicas(v, s, k, MAX_REPLICAS),
    )
    population: PopulationConfig = option(
        default_factory=PopulationConfig,
        doc="the toy background (slope, mean, concentration, background) and the signal's "
        "score (signal_y); signal_x and signal are replaced by spectrum's masses, "
        "resolution and signal_yield",
        check=PopulationConfig,
    )
    spectrum: SpectrumConfig = option(
        default_factory=SpectrumConfig,
        doc="the bins, the cut, the injected resonance and the scan",
        check=SpectrumConfig,
    )
    data_folder: Path | None = data_folder_option(
        "folder of each score's pseudo-experiments, kept for later runs"
    )

    @classmethod
    def parse(cls, config: Mapping[str, Any]) -> PassfailToysConfig:
        """Validate a configuration read by :func:`rosenblatt.studies.config.load_config`."""
        parsed: PassfailToysConfig = cls.read(config)
        source = parsed.source
        if not (parsed.exact or parsed.transforms or parsed.raw_score):
            raise fail(source, "exact", "no score left: set exact, raw_score or transforms")
        return dataclasses.replace(
            parsed,
            data_folder=parsed.data_folder or default_data_folder(parsed.name, source),
        )

    @property
    def replicas(self) -> int:
        """The keyed replicas per pseudo-experiment of a fitted transform (0: none)."""
        return resolved_replicas(self.n_boot, negative=False)

    def scores(self) -> list[tuple[str, TransformConfig | None]]:
        """The scores cut, in order: the exact CDF, the fitted transforms, the raw score."""
        out: list[tuple[str, TransformConfig | None]] = [("exact", None)] if self.exact else []
        out += [(t.name, t) for t in self.transforms]
        return out + ([("score", None)] if self.raw_score else [])
