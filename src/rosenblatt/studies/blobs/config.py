"""The configuration of the Gaussian-blob study (``study: blobs``), validated when loaded.

An unknown key or a value of the wrong type is an error that names the key and
the configuration file (see ``configs/blobs.yaml``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypedDict

import numpy as np

from rosenblatt.studies.config_checks import (
    check_keys,
    count,
    fail,
    flag,
    mapping,
    number,
    numbers,
    seed,
)
from rosenblatt.studies.config_fields import (
    StudyConfig,
    config_dataclass,
    option,
)

__all__ = ["BlobsConfig", "FigureChoice", "Population"]

#: the deepest IRGI grid (2^(2d+1) defining events beyond it)
MAX_DEPTH = 30
#: the most values of a geometric grid of sigma_r
MAX_GRID = 10_000


class FigureChoice(TypedDict, total=False):
    """``figures:``: the IRGI depths whose grids are drawn and the KDE widths drawn."""

    grid_depths: list[int]
    kde_sigmas: list[float]


def _rho(value: Any, source: str, key: str) -> float:
    rho = number(value, source, key)
    if not -1 < rho < 1:
        raise fail(source, key, f"must lie in (-1, 1), got {rho}")
    return rho


def _mean(value: Any, source: str, key: str) -> tuple[float, float]:
    mean = numbers(value, source, key, 2)
    if len(mean) != 2:
        raise fail(source, key, f"must be a list of 2 numbers, got {value!r}")
    return mean[0], mean[1]


def _cov(value: Any, source: str, key: str) -> tuple[tuple[float, float], tuple[float, float]]:
    if not isinstance(value, list) or len(value) != 2:
        raise fail(source, key, f"must be a 2x2 list of numbers, got {value!r}")
    cov = tuple(numbers(row, source, key, 2) for row in value)
    if any(len(row) != 2 for row in cov) or cov[0][1] != cov[1][0] or not _positive_definite(cov):
        raise fail(source, key, f"must be a symmetric positive definite 2x2 matrix, got {value!r}")
    return (cov[0][0], cov[0][1]), (cov[1][0], cov[1][1])


@config_dataclass
class Population:
    """One population: its parameters and its defining and testing sizes.

    The background (``background:``) gives ``rho``, the signal (``signal:``)
    ``mean`` and ``cov``.
    """

    n_defining: int = option(doc="events of the defining sample", check=count)
    n_testing: int = option(doc="events of the testing sample", check=count)
    rho: float = option(
        default=0.0, doc="correlation of the background's bivariate normal", check=_rho
    )
    mean: tuple[float, float] = option(
        default=(0.0, 0.0), doc="mean of the signal's bivariate normal", check=_mean
    )
    cov: tuple[tuple[float, float], tuple[float, float]] = option(
        default=((1.0, 0.0), (0.0, 1.0)),
        doc="covariance of the signal's bivariate normal (symmetric positive definite)",
        check=_cov,
    )


def _depth_list(value: Any, source: str, key: str) -> tuple[int, ...]:
    if not isinstance(value, list) or not value:
        raise fail(source, key, f"must be a non-empty list of depths, got {value!r}")
    return tuple(count(d, source, key, 1, MAX_DEPTH) for d in value)


@config_dataclass
class BlobsConfig(StudyConfig):
    """A validated ``study: blobs`` configuration; each field is one key of the file."""

    background: Population = option(
        doc="the background: its sizes and correlation",
        check=Population,
        only=("n_defining", "n_testing", "rho"),
    )
    signal: Population = option(
        doc="the signal: its sizes, mean and covariance",
        check=Population,
        only=("n_defining", "n_testing", "mean", "cov"),
    )
    depths: tuple[int, ...] = option(
        key="irgi.depths",
        doc="the IRGI depths compared (each needs 2^(2d+1) defining events)",
        check=_depth_list,
        type="list of integers in [1, 30]",
    )
    sigma_r: tuple[float, ...] = option(
        key="kde.sigma_r",
        doc="the relative KDE widths compared: a list, or {min, max, n} for a geometric grid",
        check=lambda value, source, key: _sigma_grid(value, source),
        type="list of positive numbers, or {min, max, n}",
    )
    seed: int = option(default=0, doc="seed of every random draw", check=seed)
    n_subsamples: int = option(
        default=5, doc="sub-samples of the testing sample the spreads are measured on", check=count
    )
    permutations: int = option(default=100, doc="permutations of the dCor² floor", check=count)
    whole_sample: bool = option(
        default=False, doc="also measure dCor² on the whole testing sample", check=flag
    )
    whole_sample_permutations: int = option(
        default=20, doc="permutations of the whole sample's dCor² floor", check=count
    )
    variants: bool = option(default=False, doc="also compare the IRGI and KDE variants", check=flag)
    peers: Mapping[str, Any] | None = option(
        default_factory=dict,
        doc="the peer methods beside IRGI and KDE: true, false, or {flow: options}",
        check=lambda value, source, key: _peers(value, source),
        type="true, false or {flow: mapping}",
        default_doc="true (every peer with its default options)",
    )
    figures: FigureChoice = option(
        default_factory=dict,
        doc="the IRGI depths (grid_depths) and KDE widths (kde_sigmas) drawn",
        check=lambda value, source, key: _figures(value, source),
        type="{grid_depths: list of integers, kde_sigmas: list of positive numbers}",
    )
    dcc_best_max: float = option(
        default=6e-4,
        key="claims.dcc_best_max",
        doc="the claims' bound on the best method's dCor²",
        check=number,
    )

    @classmethod
    def parse(cls, config: Mapping[str, Any]) -> BlobsConfig:
        """Validate a configuration read by :func:`rosenblatt.studies.config.load_config`."""
        cfg: BlobsConfig = cls.read(config)
        source = cfg.source
        if 2 * cfg.n_subsamples > cfg.background.n_testing:
            raise fail(
                source,
                "n_subsamples",
                f"{cfg.n_subsamples} sub-samples need at least {2 * cfg.n_subsamples} testing "
                f"events, background.n_testing is {cfg.background.n_testing}",
            )
        _check_depths(cfg.depths, cfg.background.n_defining, source)
        return cfg


def _positive_definite(cov: tuple[tuple[float, ...], ...]) -> bool:
    (a, b), (_, d) = cov
    return a > 0 and d > 0 and a * d - b * b > 0 and bool(np.isfinite(a * d - b * b))


def _check_depths(depths: tuple[int, ...], n_defining: int, source: str) -> None:
    """``irgi.depths``: each supported by the defining events (2^(2d+1) of them)."""
    for depth in depths:
        if 2 ** (2 * depth + 1) > n_defining:
            raise fail(
                source,
                "irgi.depths",
                f"depth {depth} needs at least {2 ** (2 * depth + 1)} defining events, "
                f"background.n_defining is {n_defining}",
            )


def _figures(value: Any, source: str) -> FigureChoice:
    """``figures:``: the IRGI depths and KDE widths drawn."""
    given = mapping(value or {}, source, "figures")
    check_keys(given, {"grid_depths", "kde_sigmas"}, source, "figures")
    figures: FigureChoice = {}
    if "grid_depths" in given:
        depths = given["grid_depths"]
        if not isinstance(depths, list):
            raise fail(source, "figures.grid_depths", f"must be a list of depths, got {depths!r}")
        figures["grid_depths"] = [
            count(d, source, "figures.grid_depths", 1, MAX_DEPTH) for d in depths
        ]
    if "kde_sigmas" in given:
        sigmas = numbers(given["kde_sigmas"], source, "figures.kde_sigmas")
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
