"""One pseudo-experiment: a defining sample, a fitted transform, a data set, the estimate and its truth.

Each pseudo-experiment draws its own defining sample from the toy background
(:mod:`~rosenblatt.studies.toys.population`), fits the transform on it with a
keyed bootstrap ensemble (:func:`rosenblatt.bootstrap` with ``keyed=True``),
and measures the closure factor on the background simulation (the defining
sample itself, or an independent one) with
:func:`rosenblatt.abcd.closure_correction.closure_correction`: the code of the
ABCD study's estimate. A data set of background and injected signal is drawn;
the background's prediction in A (:func:`~rosenblatt.abcd.closure_correction.abcd_prediction`)
is compared with the true expected background in A under this very transform
(an integral over the known population), and the signal strength is fitted
with the study's pyhf workspace (:func:`rosenblatt.abcd.pyhf_workspace`),
its 68% interval from the profile likelihood.

With ``negative_weight_fraction: f`` the simulated events (the defining
sample and an independent background simulation) carry the weights of
next-to-leading-order simulation, ``+1/(1 - 2f)`` with probability ``1 - f``
and ``-1/(1 - 2f)`` with probability ``f`` (expectation 1); the fit, its
keyed replicas and the closure factor take them, as the ABCD study's
estimate does. The data stay unweighted counts.
"""

from __future__ import annotations

import contextlib
import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypedDict

import numpy as np

from rosenblatt.abcd.closure_correction import (
    ClosureCorrection,
    abcd_prediction,
    closure_correction,
    measured_closure,
)
from rosenblatt.abcd.histograms import abcd_histogram
from rosenblatt.studies.abcd.config import TransformConfig
from rosenblatt.studies.toys.config import ToysConfig
from rosenblatt.studies.toys.population import (
    Population,
    constant_threshold,
    transform_threshold,
)
from rosenblatt.transforms.irgi import COARSE_CUT_MESSAGE
from rosenblatt.typing import FloatArray

__all__ = ["Setting", "ToyResult", "coarse_cut_note", "pseudo_experiment"]


#: the signal strength of the injected signal
MU_TRUE = 1.0
#: lowest signal strength of the fits (below zero, so that the interval is not cut at 0)
MU_LOW = -10.0


@dataclass(frozen=True)
class Setting:
    """One set of pseudo-experiments: a transform (or the raw score) and a defining size."""

    name: str
    transform: TransformConfig | None
    n_defining: int


class ToyResult(TypedDict):
    """What one pseudo-experiment gives: the estimate, its parts, and the truth."""

    toy: int
    error: str | None
    true_A: float
    true_closure_factor: float
    observed_A: float
    predicted_A: float
    predicted_A_uncorrected: float
    predicted_A_stat: float
    predicted_A_syst: float
    factor: float
    factor_error: float
    measured: float
    bootstrap_bias: float
    transform_fit: float
    simulation_statistics: float
    simulation_effective_A: float
    signal_A: float
    mu_hat: float
    mu_low: float
    mu_high: float


def _failed(toy: int, reason: str) -> ToyResult:
    nan = float("nan")
    return {
        "toy": toy,
        "error": reason,
        **dict.fromkeys(  # type: ignore[typeddict-item]
            (
                "true_A",
                "true_closure_factor",
                "observed_A",
                "predicted_A",
                "predicted_A_uncorrected",
                "predicted_A_stat",
                "predicted_A_syst",
                "factor",
                "factor_error",
                "measured",
                "bootstrap_bias",
                "transform_fit",
                "simulation_statistics",
                "simulation_effective_A",
                "signal_A",
                "mu_hat",
                "mu_low",
                "mu_high",
            ),
            nan,
        ),
    }


def _histogram(x: FloatArray, y: FloatArray, cfg: ToysConfig, y0: float, weight: Any = None) -> Any:
    """The background's ABCD histogram of the cut ``(x0, y0)``, the grid's first cut.

    A grid needs two cuts per axis: the second lies beyond every event.
    """
    beyond = float(max(np.max(x), np.max(y), cfg.x0, y0)) + 1.0
    label = np.zeros(len(x), dtype=np.int64)
    return abcd_histogram(x, y, label, x0=[cfg.x0, beyond], y0=[y0, beyond], weight=weight)


def _counts(x: FloatArray, y: FloatArray, x0: float, y0: float) -> FloatArray:
    """``(A, B, C, D)`` of events, ``x >= x0`` and ``y >= y0`` above."""
    high_x, high_y = x >= x0, y >= y0
    return np.array(
        [
            np.count_nonzero(high_x & high_y),
            np.count_nonzero(high_x & ~high_y),
            np.count_nonzero(~high_x & high_y),
            np.count_nonzero(~high_x & ~high_y),
        ],
        dtype=np.float64,
    )


def simulation_weights(rng: np.random.Generator, n: int, fraction: float) -> FloatArray | None:
    """Weights of ``n`` simulated events, a ``fraction`` of them negative; None for unit weights.

    Each weighs ``-1/(1 - 2 fraction)`` with probability ``fraction`` and
    ``+1/(1 - 2 fraction)`` otherwise: expectation 1, variance ``1/(1 - 2 fraction)**2``.
    """
    if fraction == 0:
        return None
    scale = 1.0 / (1.0 - 2.0 * fraction)
    weights: FloatArray = np.where(rng.random(n) < fraction, -scale, scale)
    return weights


def effective_events(weights: FloatArray | None, selected: Any) -> float:
    """``(sum w)**2 / sum w**2`` of the ``selected`` events (their count for unit weights)."""
    if weights is None:
        return float(np.count_nonzero(selected))
    w = weights[selected]
    squares = float(np.sum(w**2))
    return float(np.sum(w)) ** 2 / squares if squares > 0 else 0.0


@dataclass(frozen=True)
class _Fitted:
    """A pseudo-experiment's score: how to evaluate it, its cut, and its closure factor.

    ``effective_a`` is the background simulation's effective number of events
    in A (``(sum w)**2 / sum w**2``).
    """

    score: Callable[[FloatArray, FloatArray], FloatArray]
    y0: float
    threshold: Callable[[FloatArray], FloatArray]
    closure: ClosureCorrection
    effective_a: float


def _fit(
    cfg: ToysConfig,
    setting: Setting,
    defining: tuple[FloatArray, FloatArray],
    simulation: tuple[FloatArray, FloatArray],
    seed: int,
    weights: tuple[FloatArray | None, FloatArray | None] = (None, None),
) -> _Fitted:
    """Fit the setting's transform with its keyed ensemble; measure its closure factor.

    ``weights`` are those of the defining sample and of the simulation (None:
    unit weights).
    """
    import rosenblatt as rb
    from rosenblatt.transforms.ensemble import keyed_poisson_weights

    x_sim, y_sim = simulation
    w_defining, w_sim = weights
    one = np.ones(len(x_sim)) if w_sim is None else w_sim
    if setting.transform is None:
        y0 = float(np.quantile(defining[1], cfg.y0))
        closure = measured_closure(_histogram(x_sim, y_sim, cfg, y0, weight=w_sim))
        effective = effective_events(w_sim, (x_sim >= cfg.x0) & (y_sim >= y0))
        return _Fitted(lambda _x, y: y, y0, constant_threshold(y0), closure, effective)
    with warnings.catch_warnings():
        # a grid too coarse for the cut is said once per setting (:func:`coarse_cut_note`)
        warnings.filterwarnings("ignore", COARSE_CUT_MESSAGE, UserWarning)
        ensemble = rb.bootstrap(
            setting.transform.build(), *defining, w_defining, n=cfg.replicas, seed=seed, keyed=True
        )
    nominal = ensemble.nominal_
    replicas, resampled = [], []
    for replica, draw in zip(ensemble.replicas_, ensemble.replica_draws_, strict=True):
        gamma = replica.transform(x_sim, y_sim)
        counts = keyed_poisson_weights(x_sim, y_sim, seed, draw).astype(np.float64)
        replicas.append(_histogram(x_sim, gamma, cfg, cfg.y0, weight=w_sim))
        resampled.append(_histogram(x_sim, gamma, cfg, cfg.y0, weight=one * counts))
    gamma = nominal.transform(x_sim, y_sim)
    nominal_histogram = _histogram(x_sim, gamma, cfg, cfg.y0, weight=w_sim)
    closure = closure_correction(nominal_histogram, replicas, resampled)
    effective = effective_events(w_sim, (x_sim >= cfg.x0) & (gamma >= cfg.y0))
    return _Fitted(
        nominal.transform, cfg.y0, transform_threshold(nominal, cfg.y0), closure, effective
    )


def coarse_cut_note(cfg: ToysConfig, setting: Setting) -> str | None:
    """Why the setting's transform may not close at the cut ``y0``, from its fit in toy 0.

    ``None`` for the raw score, where that fit closes, or where it fails (each
    pseudo-experiment then says why).
    """
    if setting.transform is None:
        return None
    rng = np.random.default_rng([cfg.seed, setting.n_defining, 0])
    x, y = Population(cfg.population).background(rng, setting.n_defining)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", COARSE_CUT_MESSAGE, UserWarning)
        try:
            transform = setting.transform.build().fit(x, y)
        except ValueError:
            return None
    note = getattr(transform, "coarse_cut_note", None)
    return note() if callable(note) else None


def pseudo_experiment(cfg: ToysConfig, setting: Setting, toy: int) -> ToyResult:
    """Run pseudo-experiment ``toy`` of ``setting``; a failed fit gives a result naming why.

    The random numbers depend on the seed, the defining size and ``toy``
    alone, so every transform meets the same samples in the same toy; the
    simulation's weights are drawn after every sample, so the same toy with
    and without negative weights holds the same events.
    """
    population = Population(cfg.population)
    rng = np.random.default_rng([cfg.seed, setting.n_defining, toy])
    defining = population.background(rng, setting.n_defining)
    simulation = (
        defining
        if cfg.simulation == "defining"
        else population.background(rng, round(cfg.simulation_size * setting.n_defining))
    )
    background = population.background(rng, int(rng.poisson(cfg.population.background)))
    signal = population.signal(rng, int(rng.poisson(cfg.population.signal)))
    seed = int(rng.integers(2**31))
    fraction = cfg.negative_weight_fraction
    w_defining = simulation_weights(rng, setting.n_defining, fraction)
    w_sim = (
        w_defining
        if cfg.simulation == "defining"
        else simulation_weights(rng, len(simulation[0]), fraction)
    )
    try:
        fitted = _fit(cfg, setting, defining, simulation, seed, (w_defining, w_sim))
    except ValueError as err:
        return _failed(toy, f"{type(err).__name__}: {err}")
    return _estimate(cfg, population, fitted, background, signal, toy)


def _estimate(
    cfg: ToysConfig,
    population: Population,
    fitted: _Fitted,
    background: tuple[FloatArray, FloatArray],
    signal: tuple[FloatArray, FloatArray],
    toy: int,
) -> ToyResult:
    """The background prediction and the signal fit of one data set, beside their truth."""
    closure = fitted.closure
    factor, error = float(closure.factor[0, 0]), float(closure.error[0, 0])
    bkg = _counts(background[0], fitted.score(*background), cfg.x0, fitted.y0)
    sig = _counts(signal[0], fitted.score(*signal), cfg.x0, fitted.y0)
    controls = [float(n) for n in bkg[1:]]
    prediction = abcd_prediction(controls, controls, factor, error)
    true_b, true_s = population.yields(
        fitted.threshold, cfg.x0, cfg.population.background, cfg.population.signal
    )
    a, b, c, d = true_b.as_tuple()
    mu = _signal_strength(bkg + sig, true_s.as_tuple(), factor, error)
    return {
        "toy": toy,
        "error": None,
        "true_A": a,
        "true_closure_factor": a * d / (b * c),
        "observed_A": float(bkg[0]),
        "predicted_A": prediction.value,
        "predicted_A_uncorrected": prediction.uncorrected,
        "predicted_A_stat": prediction.stat,
        "predicted_A_syst": prediction.syst,
        "factor": factor,
        "factor_error": error,
        "measured": float(closure.measured[0, 0]),
        "bootstrap_bias": float(closure.bias[0, 0]),
        "transform_fit": float(closure.transform_fit[0, 0]),
        "simulation_statistics": float(closure.simulation_statistics[0, 0]),
        "simulation_effective_A": fitted.effective_a,
        "signal_A": true_s.a,
        "mu_hat": mu[0],
        "mu_low": mu[1],
        "mu_high": mu[2],
    }


def _signal_strength(
    counts: FloatArray, signal: tuple[float, ...], factor: float, error: float
) -> tuple[float, float, float]:
    """``mu`` fitted to the data's four counts with the study's workspace, and its 68% interval.

    NaN where no signal was injected or the workspace cannot be built.
    """
    if signal[0] <= 0 or min(counts[1:]) <= 0 or not factor > 0:
        nan = float("nan")
        return nan, nan, nan
    import pyhf

    from rosenblatt.abcd.likelihood import (
        MAX_NONCLOSURE,
        profile_interval,
        pyhf_workspace,
        quiet_pyhf,
    )

    relative = min(error / factor, MAX_NONCLOSURE) if math.isfinite(error) else 0.0
    with quiet_pyhf(), contextlib.suppress(pyhf.exceptions.FailedMinimization, ValueError):
        n_a, n_b, n_c, n_d = (float(n) for n in counts)
        s_a, s_b, s_c, s_d = signal
        workspace = pyhf_workspace(
            n_a, n_b, n_c, n_d, s_a, s_b, s_c, s_d, nonclosure=relative, closure_factor=factor
        )
        return profile_interval(workspace, mu_low=MU_LOW)
    nan = float("nan")
    return nan, nan, nan
