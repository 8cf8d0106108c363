"""The configuration of the Gaussian-blob study (``study: blobs``), validated when loaded.

An unknown key or a value of the wrong type is an error that names the key and
the configuration file (see ``configs/blobs.yaml``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from rosenblatt.studies.config_checks import (
    check_keys,
    check_top_level,
    count,
    fail,
    flag,
    mapping,
    number,
    numbers,
    seed,
)

__all__ = ["BlobsConfig", "Population"]

#: the deepest IRGI grid (2^(2d+1) defining events beyond it)
MAX_DEPTH = 30
#: the most values of a geometric grid of sigma_r
MAX_GRID = 10_000

_TOP_KEYS = {
    "study",
    "name",
    "seed",
    "background",
    "signal",
    "n_subsamples",
    "permutations",
    "whole_sample",
    "whole_sample_permutations",
    "irgi",
    "kde",
    "figures",
    "variants",
    "peers",
    "claims",
}


@dataclass(frozen=True)
class Population:
    """One population: its parameters and its defining and testing sizes."""

    n_defining: int
    n_testing: int
    rho: float = 0.0
    mean: tuple[float, float] = (0.0, 0.0)
    cov: tuple[tuple[float, float], tuple[float, float]] = ((1.0, 0.0), (0.0, 1.0))

    @classmethod
    def parse(cls, value: Any, source: str, key: str) -> Population:
        """Validate ``background:`` (``rho``) or ``signal:`` (``mean``, ``cov``)."""
        entry = mapping(value, source, key)
        shape = {"rho"} if key == "background" else {"mean", "cov"}
        check_keys(entry, {"n_defining", "n_testing", *shape}, source, key)
        for name in ("n_defining", "n_testing", *shape):
            if name not in entry:
                raise fail(source, f"{key}.{name}", "missing")
        n_defining = count(entry["n_defining"], source, f"{key}.n_defining")
        n_testing = count(entry["n_testing"], source, f"{key}.n_testing")
        if key == "background":
            rho = number(entry["rho"], source, f"{key}.rho")
            if not -1 < rho < 1:
                raise fail(source, f"{key}.rho", f"must lie in (-1, 1), got {rho}")
            return cls(n_defining, n_testing, rho=rho)
        mean = numbers(entry["mean"], source, f"{key}.mean", 2)
        rows = entry["cov"]
        if not isinstance(rows, list) or len(rows) != 2:
            raise fail(source, f"{key}.cov", f"must be a 2x2 list of numbers, got {rows!r}")
        cov = tuple(numbers(row, source, f"{key}.cov", 2) for row in rows)
        if (
            len(mean) != 2
            or any(len(row) != 2 for row in cov)
            or cov[0][1] != cov[1][0]
            or not _positive_definite(cov)
        ):
            raise fail(
                source,
                f"{key}.cov",
                f"must be a symmetric positive definite 2x2 matrix beside a mean of 2, got {rows!r}",
            )
        return cls(
            n_defining,
            n_testing,
            mean=(mean[0], mean[1]),
            cov=((cov[0][0], cov[0][1]), (cov[1][0], cov[1][1])),
        )


@dataclass(frozen=True)
class BlobsConfig:
    """A validated ``study: blobs`` configuration."""

    name: str
    source: str
    seed: int
    background: Population
    signal: Population
    depths: tuple[int, ...]
    sigma_r: tuple[float, ...]
    n_subsamples: int = 5
    permutations: int = 100
    whole_sample: bool = False
    whole_sample_permutations: int = 20
    variants: bool = False
    peers: Mapping[str, Any] | None = field(default_factory=dict)
    figures: Mapping[str, Any] = field(default_factory=dict)
    dcc_best_max: float = 6e-4

    @classmethod
    def parse(cls, config: Mapping[str, Any]) -> BlobsConfig:
        """Validate a configuration read by :func:`rosenblatt.config.load_config`."""
        source = check_top_level(config, _TOP_KEYS, ("background", "signal", "irgi", "kde"))
        irgi = mapping(config["irgi"], source, "irgi")
        check_keys(irgi, {"depths"}, source, "irgi")
        kde = mapping(config["kde"], source, "kde")
        check_keys(kde, {"sigma_r"}, source, "kde")
        depths = irgi.get("depths")
        if not isinstance(depths, list) or not depths:
            raise fail(source, "irgi.depths", f"must be a non-empty list of depths, got {depths!r}")
        claims = mapping(config.get("claims") or {}, source, "claims")
        check_keys(claims, {"dcc_best_max"}, source, "claims")
        background = Population.parse(config["background"], source, "background")
        n_subsamples = count(config.get("n_subsamples", 5), source, "n_subsamples")
        if 2 * n_subsamples > background.n_testing:
            raise fail(
                source,
                "n_subsamples",
                f"{n_subsamples} sub-samples need at least {2 * n_subsamples} testing events, "
                f"background.n_testing is {background.n_testing}",
            )
        return cls(
            name=str(config.get("name", Path(source).stem)),
            source=source,
            seed=seed(config.get("seed", 0), source, "seed"),
            background=background,
            signal=Population.parse(config["signal"], source, "signal"),
            depths=_depths(depths, background.n_defining, source),
            sigma_r=_sigma_grid(kde.get("sigma_r"), source),
            n_subsamples=n_subsamples,
            permutations=count(config.get("permutations", 100), source, "permutations"),
            whole_sample=flag(config.get("whole_sample", False), source, "whole_sample"),
            whole_sample_permutations=count(
                config.get("whole_sample_permutations", 20), source, "whole_sample_permutations"
            ),
            variants=flag(config.get("variants", False), source, "variants"),
            peers=_peers(config.get("peers", True), source),
            figures=_figures(config.get("figures"), source),
            dcc_best_max=number(claims.get("dcc_best_max", 6e-4), source, "claims.dcc_best_max"),
        )


def _positive_definite(cov: tuple[tuple[float, ...], ...]) -> bool:
    (a, b), (_, d) = cov
    return a > 0 and d > 0 and a * d - b * b > 0 and bool(np.isfinite(a * d - b * b))


def _depths(depths: list[Any], n_defining: int, source: str) -> tuple[int, ...]:
    """``irgi.depths``: each supported by the defining events (2^(2d+1) of them)."""
    checked = tuple(count(d, source, "irgi.depths", 1, MAX_DEPTH) for d in depths)
    for depth in checked:
        if 2 ** (2 * depth + 1) > n_defining:
            raise fail(
                source,
                "irgi.depths",
                f"depth {depth} needs at least {2 ** (2 * depth + 1)} defining events, "
                f"background.n_defining is {n_defining}",
            )
    return checked


def _figures(value: Any, source: str) -> dict[str, Any]:
    """``figures:``: the IRGI depths and KDE widths drawn."""
    figures = dict(mapping(value or {}, source, "figures"))
    check_keys(figures, {"grid_depths", "kde_sigmas"}, source, "figures")
    if "grid_depths" in figures:
        depths = figures["grid_depths"]
        if not isinstance(depths, list):
            raise fail(source, "figures.grid_depths", f"must be a list of depths, got {depths!r}")
        figures["grid_depths"] = [
            count(d, source, "figures.grid_depths", 1, MAX_DEPTH) for d in depths
        ]
    if "kde_sigmas" in figures:
        sigmas = numbers(figures["kde_sigmas"], source, "figures.kde_sigmas")
        if any(v <= 0 for v in sigmas):
            raise fail(source, "figures.kde_sigmas", f"must be positive, got {list(sigmas)}")
        figures["kde_sigmas"] = list(sigmas)
    return figures


def _peers(value: Any, source: str) -> Mapping[str, Any] | None:
    """``peers:`` as options (``true`` gives the defaults), or ``None`` when ``false``."""
    if value is False:
        return None
    if value is True:
        return {}
    options = mapping(value, source, "peers")
    check_keys(options, {"flow"}, source, "peers")
    flow = options.get("flow")
    if flow is not None:
        _check_flow(mapping(flow, source, "peers.flow"), source)
    return dict(options)


def _check_flow(options: Mapping[str, Any], source: str) -> None:
    """The conditional flow's options, as :class:`rosenblatt.ml.ConditionalFlow` checks them."""
    try:
        from rosenblatt.ml.flow import ConditionalFlow
    except ImportError:
        return  # without the ml extra the flow is left out of the peers
    try:
        ConditionalFlow(**{str(k): v for k, v in options.items()})._check_params()
    except (TypeError, ValueError) as err:
        raise fail(source, "peers.flow", str(err)) from None


def _sigma_grid(spec: Any, source: str) -> tuple[float, ...]:
    """``kde.sigma_r``: a list, or ``{min, max, n}`` for a geometric grid (4 significant digits)."""
    if isinstance(spec, Mapping):
        check_keys(spec, {"min", "max", "n"}, source, "kde.sigma_r")
        low, high = (number(spec.get(k), source, f"kde.sigma_r.{k}") for k in ("min", "max"))
        if not 0 < low < high:
            raise fail(source, "kde.sigma_r", f"needs 0 < min < max, got {low}, {high}")
        grid = np.geomspace(low, high, count(spec.get("n"), source, "kde.sigma_r.n", 2, MAX_GRID))
        return tuple(float(f"{v:.4g}") for v in grid)
    values = numbers(spec, source, "kde.sigma_r")
    if any(v <= 0 for v in values):
        raise fail(source, "kde.sigma_r", f"must be positive, got {list(values)}")
    return values
