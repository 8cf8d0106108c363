"""The ABCD estimate as a pyhf likelihood: significance, limits, and their map over the cuts.

Four single-bin channels ``A``, ``B``, ``C``, ``D``. The background is
``D = n``, ``B = n tau_x``, ``C = n tau_y``, ``A = n tau_x tau_y``: three free
normfactors, ``n_background`` in every channel, ``tau_x`` in ``A`` and ``B``,
``tau_y`` in ``A`` and ``C`` (modifiers of one sample multiply). They are
relative to the counts given for the control regions, so that all start at 1:
the background sample's nominal yield is ``n_d`` in ``D``, ``n_b`` in ``B``,
``n_c`` in ``C`` and ``n_b n_c / n_d`` in ``A``, times a closure factor where one is given (the
background simulation's ``N_A N_D / (N_B N_C)``,
:mod:`~rosenblatt.abcd.closure_correction`). The signal enters every region
where it has a yield, scaled by the parameter of interest ``mu``, and the
closure factor's relative uncertainty (or a measured relative non-closure)
``r`` enters ``A`` as a ``normsys`` modifier ``nonclosure`` of the background
(``hi = 1 + r``, ``lo = 1 - r``).

Expected results use Asimov data sets: the model's expectation with the
background normfactors at 1 (the control-region counts given), no non-closure
shift and ``mu = 1`` (discovery significance) or ``mu = 0`` (upper limit). At
the parameters that generate an Asimov data set the likelihood is at its
maximum, so each test statistic needs only its conditional fits. pyhf is
imported on first use (the ``stats`` extra).

At one cut, :func:`likelihood_at_cut` takes the four regions' expected
background and signal and a measured relative non-closure (capped at
:data:`MAX_NONCLOSURE`), and returns the expected significance and limit with
a note of what was left out, writing the workspace as pyhf's JSON;
:func:`quiet_pyhf` silences pyhf's deprecation warning and log lines around
any of these fits.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import math
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

import numpy as np

from rosenblatt._atomic import write_text
from rosenblatt._validation import is_real
from rosenblatt.abcd.closure import region_sums
from rosenblatt.abcd.closure_testing import thinned_indices
from rosenblatt.typing import FloatArray

if TYPE_CHECKING:
    import pyhf

__all__ = [
    "MAX_NONCLOSURE",
    "CutLikelihood",
    "SensitivityMap",
    "background_fit",
    "expected_significance",
    "expected_upper_limit",
    "likelihood_at_cut",
    "observed_significance",
    "observed_upper_limit",
    "profile_interval",
    "pyhf_workspace",
    "quiet_pyhf",
    "sensitivity_map",
]


#: names of the channels, the samples and the parameters
REGIONS = ("A", "B", "C", "D")
POI = "mu"
#: the background normfactors of each region
NORMFACTORS = {
    "A": ("n_background", "tau_x", "tau_y"),
    "B": ("n_background", "tau_x"),
    "C": ("n_background", "tau_y"),
    "D": ("n_background",),
}
#: bounds of the background normfactors
NORMFACTOR_BOUNDS = (0.0, 10.0)
#: tolerance of the fits (scipy's SLSQP)
FIT_TOLERANCE = 1e-10
#: times the search for an expected limit may widen its range of mu fourfold
MAX_WIDENING = 12
#: largest relative non-closure accepted as a ``normsys`` (:func:`pyhf_workspace` needs < 1)
MAX_NONCLOSURE = 0.99


@contextlib.contextmanager
def quiet_pyhf() -> Iterator[None]:
    """Silence pyhf 0.7's jsonschema ``RefResolver`` deprecation warning and its log lines.

    pyhf logs a failed minimisation with its traceback at level ERROR before it
    raises :class:`pyhf.exceptions.FailedMinimization`, which carries the same
    result: the caller that catches it says what failed, once.
    """
    logger = logging.getLogger("pyhf")
    level = logger.level
    logger.setLevel(max(level, logging.CRITICAL))
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings(
                "ignore",
                message="jsonschema.RefResolver is deprecated",
                category=DeprecationWarning,
            )
            yield
    finally:
        logger.setLevel(level)


def pyhf_workspace(
    n_a: float,
    n_b: float,
    n_c: float,
    n_d: float,
    signal_a: float,
    signal_b: float = 0.0,
    signal_c: float = 0.0,
    signal_d: float = 0.0,
    nonclosure: float = 0.0,
    *,
    closure_factor: float = 1.0,
    mu_max: float | None = None,
) -> pyhf.Workspace:
    """The ABCD likelihood of one cut as a validated ``pyhf.Workspace``.

    Parameters
    ----------
    n_a, n_b, n_c, n_d
        Observed counts in the four regions (for expected results, the
        expected background counts). ``n_b``, ``n_c`` and ``n_d`` must be
        positive.
    signal_a, signal_b, signal_c, signal_d
        Expected signal yields at ``mu = 1``; ``signal_a`` must be positive.
    nonclosure
        Relative size ``r`` in ``[0, 1)`` of the background non-closure in
        ``A`` (for example ``|N_A - N_B N_C / N_D| / (N_B N_C / N_D)`` measured
        on background simulation, or the relative error of ``closure_factor``);
        0 leaves the modifier out.
    closure_factor
        The background's closure factor ``N_A N_D / (N_B N_C)`` (1 for an
        exact decorrelation): the background's nominal yield in ``A`` is
        ``closure_factor n_b n_c / n_d``.
    mu_max
        Upper bound of ``mu`` (default: ``max(10, 20 sqrt(b_A + s_A + 1) / s_A)``
        with ``b_A = n_b n_c / n_d``, far above any limit the model can set).

    Returns
    -------
    pyhf.Workspace
        Write it with ``json.dump(dict(workspace), file)``.
    """
    from rosenblatt._extras import optional_imports

    with optional_imports("rosenblatt.abcd.pyhf_workspace"):
        import pyhf

    counts = {"A": n_a, "B": n_b, "C": n_c, "D": n_d}
    signal = {"A": signal_a, "B": signal_b, "C": signal_c, "D": signal_d}
    for name, value in [*counts.items(), *signal.items()]:
        if not is_real(value) or not math.isfinite(value) or value < 0:
            msg = (
                f"counts and signal yields must be finite and non-negative, got {value!r} ({name})"
            )
            raise ValueError(msg)
    if min(n_b, n_c, n_d) <= 0 or signal_a <= 0:
        msg = f"n_b, n_c, n_d and signal_a must be positive, got {n_b}, {n_c}, {n_d}, {signal_a}"
        raise ValueError(msg)
    if not 0 <= nonclosure < 1:
        msg = f"nonclosure must be a relative size in [0, 1), got {nonclosure!r}"
        raise ValueError(msg)
    if not (is_real(closure_factor) and math.isfinite(closure_factor) and closure_factor > 0):
        msg = f"closure_factor must be a positive number, got {closure_factor!r}"
        raise ValueError(msg)
    background = {"A": closure_factor * n_b * n_c / n_d, "B": n_b, "C": n_c, "D": n_d}
    if mu_max is None:
        mu_max = max(10.0, 20.0 * math.sqrt(background["A"] + signal_a + 1.0) / signal_a)
    channels = [
        {
            "name": region,
            "samples": _samples(region, background[region], signal[region], nonclosure),
        }
        for region in REGIONS
    ]
    parameters = [
        {"name": POI, "bounds": [[0.0, float(mu_max)]], "inits": [1.0]},
        *(
            {"name": name, "bounds": [list(NORMFACTOR_BOUNDS)], "inits": [1.0]}
            for name in ("n_background", "tau_x", "tau_y")
        ),
    ]
    spec = {
        "channels": channels,
        "observations": [{"name": region, "data": [float(counts[region])]} for region in REGIONS],
        "measurements": [{"name": "ABCD", "config": {"poi": POI, "parameters": parameters}}],
        "version": "1.0.0",
    }
    with quiet_pyhf():
        return pyhf.Workspace(spec)


def _samples(
    region: str, background: float, signal: float, nonclosure: float
) -> list[dict[str, Any]]:
    modifiers: list[dict[str, Any]] = [
        {"name": name, "type": "normfactor", "data": None} for name in NORMFACTORS[region]
    ]
    if region == "A" and nonclosure > 0:
        modifiers.append(
            {
                "name": "nonclosure",
                "type": "normsys",
                "data": {"hi": 1.0 + nonclosure, "lo": 1.0 - nonclosure},
            }
        )
    samples = [{"name": "background", "data": [float(background)], "modifiers": modifiers}]
    if signal > 0:
        samples.append(
            {
                "name": "signal",
                "data": [float(signal)],
                "modifiers": [{"name": POI, "type": "normfactor", "data": None}],
            }
        )
    return samples


def background_fit(workspace: pyhf.Workspace) -> dict[str, float]:
    """The background-only fit to the control regions and its prediction in every region.

    The normfactors are fitted to ``B``, ``C`` and ``D`` alone with ``mu = 0``;
    the background they predict in ``A`` is then the ABCD estimate
    ``B C / D`` of the fitted control regions.

    Returns
    -------
    dict
        Background yield per region ``"A"`` to ``"D"``.
    """
    import pyhf

    controls = workspace.prune(channels=["A"])
    model = controls.model(poi_name=None)
    fixed = model.config.suggested_fixed()
    init = model.config.suggested_init()
    if POI in model.config.parameters:
        index = model.config.par_slice(POI).start
        fixed[index], init[index] = True, 0.0
    fitted = pyhf.infer.mle.fit(
        controls.data(model), model, init_pars=init, fixed_params=fixed, tolerance=FIT_TOLERANCE
    )
    full = workspace.model()
    pars = np.asarray(full.config.suggested_init(), dtype=np.float64)
    pars[full.config.par_slice(POI)] = 0.0
    for name in ("n_background", "tau_x", "tau_y"):
        pars[full.config.par_slice(name)] = np.asarray(fitted)[model.config.par_slice(name)]
    return _yields(full, pars)


def _yields(model: Any, pars: FloatArray) -> dict[str, float]:
    expected = np.asarray(model.expected_actualdata(pars), dtype=np.float64)
    return {
        channel: float(expected[model.config.channel_slices[channel]][0])
        for channel in model.config.channels
    }


def expected_significance(workspace: pyhf.Workspace) -> float:
    """Median discovery significance ``sqrt(q0)`` on the Asimov data set of ``mu = 1``."""
    model = workspace.model()
    data, twice_nll = _asimov(model, 1.0)
    return math.sqrt(max(_conditional(model, data, 0.0) - twice_nll, 0.0))


def expected_upper_limit(workspace: pyhf.Workspace, level: float = 0.05) -> float:
    """Median expected CLs upper limit on ``mu`` at confidence level ``1 - level``.

    Asymptotic (``qtilde``): on the background-only Asimov data set the
    observed CLs is the median expected one, ``2 (1 - Phi(sqrt(q_mu)))``, so
    the limit is the ``mu`` where ``sqrt(q_mu) = Phi^-1(1 - level / 2)`` (1.96
    for 95%), found by Brent's method on ``mu`` (searched beyond the
    workspace's upper bound of ``mu`` if need be).
    """
    from scipy import optimize, stats

    if not 0 < level < 1:
        msg = f"level must be in (0, 1), got {level!r}"
        raise ValueError(msg)
    model = workspace.model()
    data, twice_nll = _asimov(model, 0.0)
    target = float(stats.norm.isf(level / 2))

    def excess(mu: float) -> float:
        return math.sqrt(max(_conditional(model, data, mu) - twice_nll, 0.0)) - target

    high = float(model.config.suggested_bounds()[model.config.poi_index][1])
    for _ in range(MAX_WIDENING):
        if excess(high) >= 0:
            break
        high *= 4.0
    else:
        msg = f"no expected limit on mu below {high:g}: the signal hardly changes the likelihood"
        raise ValueError(msg)
    return float(optimize.brentq(excess, 1e-9 * high, high, xtol=1e-7 * high, rtol=1e-8))


def observed_significance(workspace: pyhf.Workspace) -> float:
    """Discovery significance ``sqrt(q0)`` of the workspace's observations (0 for a deficit)."""
    import pyhf

    model = workspace.model()
    data = workspace.data(model)
    pars, twice_nll = pyhf.infer.mle.fit(
        data,
        model,
        par_bounds=model.config.suggested_bounds(),
        return_fitted_val=True,
        tolerance=FIT_TOLERANCE,
    )
    if float(np.asarray(pars)[model.config.poi_index]) <= 0:
        return 0.0
    return math.sqrt(max(_conditional(model, data, 0.0) - float(twice_nll), 0.0))


def observed_upper_limit(workspace: pyhf.Workspace, level: float = 0.05) -> float:
    """Observed CLs upper limit on ``mu`` at confidence level ``1 - level`` (asymptotic, ``qtilde``).

    The ``mu`` where the observed CLs equals ``level``, found by Brent's method
    (the range widened beyond the workspace's bound of ``mu`` if need be).
    """
    import pyhf
    from scipy import optimize

    if not 0 < level < 1:
        msg = f"level must be in (0, 1), got {level!r}"
        raise ValueError(msg)
    model = workspace.model()
    data = workspace.data(model)
    bounds = [list(bound) for bound in model.config.suggested_bounds()]
    poi = model.config.poi_index

    def excess(mu: float) -> float:
        bounds[poi][1] = max(bounds[poi][1], 2.0 * mu)
        cls = pyhf.infer.hypotest(mu, data, model, test_stat="qtilde", par_bounds=bounds)
        return float(np.asarray(cls)) - level

    high = float(model.config.suggested_bounds()[poi][1])
    for _ in range(MAX_WIDENING):
        if excess(high) <= 0:
            break
        high *= 4.0
    else:
        msg = f"no observed limit on mu below {high:g}: the signal hardly changes the likelihood"
        raise ValueError(msg)
    return float(optimize.brentq(excess, 1e-3 * high, high, xtol=1e-7 * high, rtol=1e-8))


def profile_interval(
    workspace: pyhf.Workspace, *, mu_low: float = -10.0, rise: float = 1.0
) -> tuple[float, float, float]:
    """The best-fit signal strength and its interval from the profile likelihood.

    Parameters
    ----------
    workspace
        A workspace whose parameter of interest is the signal strength.
    mu_low
        Lower bound of ``mu`` in the fits: below zero, so that an interval is
        not cut at 0 (a downward fluctuation gives a negative ``mu``).
    rise
        Rise of ``-2 ln L`` at the interval's ends: 1 for 68%, 3.84 for 95%.

    Returns
    -------
    tuple of float
        ``(mu_hat, low, high)``.
    """
    import pyhf
    from scipy import optimize

    model = workspace.model()
    data = workspace.data(model)
    bounds = model.config.suggested_bounds()
    poi = model.config.poi_index
    bounds[poi] = (mu_low, bounds[poi][1])
    best, twice_min = pyhf.infer.mle.fit(data, model, par_bounds=bounds, return_fitted_val=True)
    mu_hat = float(best[poi])

    def excess(mu: float) -> float:
        _, twice = pyhf.infer.mle.fixed_poi_fit(
            mu, data, model, par_bounds=bounds, return_fitted_val=True
        )
        return float(twice - twice_min) - rise

    ends = []
    for direction, limit in ((-1.0, float(bounds[poi][0])), (1.0, float(bounds[poi][1]))):
        step = 0.25 * max(abs(mu_hat), 1.0)
        edge = mu_hat + direction * step
        while direction * (limit - edge) > 0 and excess(edge) < 0:
            step *= 2.0
            low, high = sorted((mu_hat, limit))
            edge = min(max(mu_hat + direction * step, low), high)
        if excess(edge) < 0:
            msg = (
                f"the profile likelihood does not rise by {rise} within the bounds of mu ({limit})"
            )
            raise ValueError(msg)
        low, high = sorted((mu_hat, edge))
        ends.append(float(optimize.brentq(excess, low, high, xtol=1e-4)))
    return mu_hat, ends[0], ends[1]


def _asimov(model: Any, mu: float) -> tuple[Any, float]:
    """The Asimov data set of ``mu`` and twice its negative log-likelihood at its maximum."""
    pars = np.asarray(model.config.suggested_init(), dtype=np.float64)
    pars[model.config.poi_index] = mu
    data = model.expected_data(pars)
    return data, -2.0 * float(np.asarray(model.logpdf(pars, data)).ravel()[0])


def _conditional(model: Any, data: Any, mu: float) -> float:
    """Twice the negative log-likelihood profiled at ``mu`` (``mu`` may exceed its bound)."""
    import pyhf

    bounds = [list(bound) for bound in model.config.suggested_bounds()]
    poi = model.config.poi_index
    bounds[poi][1] = max(bounds[poi][1], 2.0 * mu)
    _, twice_nll = pyhf.infer.mle.fixed_poi_fit(
        mu, data, model, par_bounds=bounds, return_fitted_val=True, tolerance=FIT_TOLERANCE
    )
    return float(twice_nll)


class _CutLikelihoodNotes(TypedDict, total=False):
    likelihood_note: str
    workspace: str


class CutLikelihood(_CutLikelihoodNotes):
    """The ABCD likelihood at one cut (:func:`likelihood_at_cut`).

    ``significance`` and ``upper_limit`` are NaN where not computed;
    ``nonclosure`` is the relative non-closure given; ``workspace`` names the
    file written and ``likelihood_note`` says what was left out or failed.
    """

    significance: float
    upper_limit: float
    nonclosure: float


def likelihood_at_cut(
    folder: Path, name: str, background: list[float], signal: list[float], relative: float
) -> CutLikelihood:
    """Asimov significance and expected limit of the ABCD likelihood at one cut.

    Parameters
    ----------
    folder, name
        The workspace is written as ``folder / f"workspace_{name}.json"`` (pyhf's JSON).
    background, signal
        Expected background and signal in the regions A, B, C, D of the cut.
    relative
        Relative background non-closure in A (the ``normsys``); NaN leaves it
        out, values from :data:`MAX_NONCLOSURE` up are capped there.

    Returns
    -------
    CutLikelihood
        ``significance``, ``upper_limit`` (NaN where not computed),
        ``nonclosure``, ``workspace`` (the file's name, when written) and a
        ``likelihood_note`` saying what was left out or failed.
    """
    out: CutLikelihood = {
        "significance": float("nan"),
        "upper_limit": float("nan"),
        "nonclosure": relative,
    }
    n_a, n_b, n_c, n_d = background
    if min(n_b, n_c, n_d, signal[0]) <= 0:
        out["likelihood_note"] = (
            "a control region holds no background or A no signal at the best cut"
        )
        return out
    if not np.isfinite(relative):
        relative = 0.0
        out["likelihood_note"] = "non-closure not measurable at the best cut: left out"
    elif relative >= MAX_NONCLOSURE:
        out["likelihood_note"] = f"non-closure {relative:.3g} capped at {MAX_NONCLOSURE}"
        relative = MAX_NONCLOSURE
    import pyhf

    with quiet_pyhf():
        signal_a, signal_b, signal_c, signal_d = signal
        workspace = pyhf_workspace(
            n_a, n_b, n_c, n_d, signal_a, signal_b, signal_c, signal_d, nonclosure=relative
        )
        try:
            out["significance"] = expected_significance(workspace)
            out["upper_limit"] = expected_upper_limit(workspace)
        except (ValueError, pyhf.exceptions.FailedMinimization) as err:
            out["likelihood_note"] = f"fit failed: {err}"
    path = folder / f"workspace_{name}.json"
    write_text(path, json.dumps(dict(workspace), indent=2))
    out["workspace"] = path.name
    return out


@dataclasses.dataclass(frozen=True)
class SensitivityMap:
    """Expected significance and upper limit over a grid of cuts (NaN where not computed).

    Attributes
    ----------
    x0, y0
        The cuts; arrays have shape ``(len(x0), len(y0))``.
    significance
        Median discovery significance of the signal (``mu = 1``).
    upper_limit
        Median expected 95% CLs upper limit on ``mu``.
    seconds
        Time taken.
    """

    x0: FloatArray
    y0: FloatArray
    significance: FloatArray
    upper_limit: FloatArray
    seconds: float

    def best(self) -> dict[str, float]:
        """The computed cut of largest significance, with its limit."""
        i, j = np.unravel_index(int(np.nanargmax(self.significance)), self.significance.shape)
        return {
            "x0": float(self.x0[i]),
            "y0": float(self.y0[j]),
            "significance": float(self.significance[i, j]),
            "upper_limit": float(self.upper_limit[i, j]),
        }


def sensitivity_map(
    histogram: Any,
    nonclosure: float | FloatArray = 0.0,
    *,
    thin: int | None = 10,
) -> SensitivityMap:
    """Expected significance and upper limit of the ABCD likelihood at every cut of a grid.

    Parameters
    ----------
    histogram
        An :func:`~rosenblatt.abcd.abcd_histogram` of the expected background
        (process 0) and signal (process 1), e.g. simulation scaled to the
        luminosity.
    nonclosure
        Relative background non-closure in ``A``, one number or one per cut
        (``(len(x0), len(y0))``; e.g. ``ClosureTest.relative_nonclosure``).
    thin
        Cuts per axis, evenly spaced among the histogram's (``None``: every
        cut). Each cut takes a few tenths of a second.

    Returns
    -------
    SensitivityMap
        NaN at cuts left out by ``thin``, and where a control region holds no
        background, ``A`` no signal or the non-closure is not in ``[0, 1)``.
    """
    start = time.perf_counter()
    values = np.moveaxis(histogram.view(flow=True).value, -1, 0)
    process = histogram.axes["process"]
    background = region_sums(values[process.index(0)])
    signal = region_sums(values[process.index(1)])
    shape = background[0].shape
    relative = np.broadcast_to(np.asarray(nonclosure, dtype=np.float64), shape)
    significance = np.full(shape, np.nan)
    upper_limit = np.full(shape, np.nan)
    rows = thinned_indices(shape[0], thin)
    cols = thinned_indices(shape[1], thin)
    for i in rows:
        for j in cols:
            n_a, n_b, n_c, n_d = (float(region[i, j]) for region in background)
            s_a, s_b, s_c, s_d = (float(region[i, j]) for region in signal)
            r = float(relative[i, j])
            if min(n_b, n_c, n_d, s_a) <= 0 or min(n_a, s_b, s_c, s_d) < 0 or not 0 <= r < 1:
                continue
            workspace = pyhf_workspace(n_a, n_b, n_c, n_d, s_a, s_b, s_c, s_d, nonclosure=r)
            significance[i, j] = expected_significance(workspace)
            upper_limit[i, j] = expected_upper_limit(workspace)
    return SensitivityMap(
        x0=histogram.axes["x"].edges.copy(),
        y0=histogram.axes["y"].edges.copy(),
        significance=significance,
        upper_limit=upper_limit,
        seconds=time.perf_counter() - start,
    )
