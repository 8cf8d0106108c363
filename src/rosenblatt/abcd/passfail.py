"""The pass/fail fit in bins of ``x``: the background spectrum after a cut on a decorrelated score.

Where the score is independent of ``x`` for the background, a cut on it keeps
the same fraction ``eps`` of the background in every bin of ``x``: the passing
background is the failing background times one constant transfer ratio
``eps / (1 - eps)``. The failing spectrum then predicts the passing one bin by
bin, and a resonance stands out as an excess in the passing region.

Two channels, ``fail`` and ``pass``, share one free parameter per bin of ``x``
for the background (a ``shapefactor``, ``background_shape``); the passing
background is the same parameters times the expected transfer ratio and a
free ``normfactor`` ``transfer`` (1 where the ratio is the expected one). The
signal's template enters both channels, scaled by ``mu`` (its leakage into the
failing region included). A per-bin relative non-closure of the simulation,
where given, enters the passing background as a ``shapesys`` modifier
``nonclosure`` (one constrained parameter per bin). pyhf is imported on first
use (the ``stats`` extra).

For a background-only fit without non-closure the likelihood's maximum is
known in closed form: the fitted ratio is ``sum(pass) / sum(fail)`` and each
bin's background ``(fail_i + pass_i) / (1 + ratio)``.
"""

from __future__ import annotations

import dataclasses
import math
from typing import TYPE_CHECKING, Any

import numpy as np

from rosenblatt.abcd.likelihood import POI
from rosenblatt.typing import ArrayLike, FloatArray

if TYPE_CHECKING:
    import pyhf

__all__ = ["PassFailFit", "passfail_fit", "passfail_workspace", "with_linear_transfer"]


#: names of the channels and of the background's parameters
CHANNELS = ("fail", "pass")
SHAPE, TRANSFER, NONCLOSURE = "background_shape", "transfer", "nonclosure"
#: bounds of the transfer normfactor, relative to the expected ratio
TRANSFER_BOUNDS = (1e-3, 100.0)
#: the least nominal background of a bin (an empty failing bin keeps a free parameter)
FLOOR = 0.5
#: the modifier of a linear transfer ratio's slope in x
SLOPE = "transfer_slope"
#: the relative change of the transfer ratio at the outer bins' centres per unit of the slope
SLOPE_SPAN = 0.5
#: the bound of the slope's parameter (the passing background stays positive)
SLOPE_BOUND = 1.8


def _spectrum(values: ArrayLike, name: str, bins: int | None = None) -> FloatArray:
    array = np.asarray(values, dtype=np.float64)
    if array.ndim != 1 or array.size == 0:
        msg = (
            f"{name} must be a non-empty 1-d array of counts per bin of x, got shape {array.shape}"
        )
        raise ValueError(msg)
    if bins is not None and array.size != bins:
        msg = f"{name} has {array.size} bins, the failing spectrum {bins}"
        raise ValueError(msg)
    if not np.all(np.isfinite(array)) or np.any(array < 0):
        bad = int(np.flatnonzero(~np.isfinite(array) | (array < 0))[0])
        msg = f"{name} must be finite and non-negative, got {float(array[bad])!r} in bin {bad}"
        raise ValueError(msg)
    return array


def passfail_workspace(
    failing: ArrayLike,
    passing: ArrayLike,
    signal_passing: ArrayLike,
    signal_failing: ArrayLike | None = None,
    *,
    ratio: float | None = None,
    nonclosure: ArrayLike | None = None,
    mu_max: float | None = None,
) -> pyhf.Workspace:
    """The pass/fail likelihood over bins of ``x`` as a validated ``pyhf.Workspace``.

    Parameters
    ----------
    failing, passing
        Observed counts per bin of ``x`` failing and passing the cut (for
        expected results, the expected background).
    signal_passing, signal_failing
        The signal's expected yields per bin at ``mu = 1``, passing and
        failing the cut (failing: none where not given).
    ratio
        The expected transfer ratio ``eps / (1 - eps)`` of a cut that keeps a
        fraction ``eps`` of the background (default: ``sum(passing) /
        sum(failing)``); the fitted ``transfer`` is relative to it.
    nonclosure
        Relative uncertainty per bin of the passing background, from the
        background simulation's spread of the ratio around a constant (0:
        none in that bin).
    mu_max
        Upper bound of ``mu`` (default: 20 times the Poisson error of the
        passing background over the signal, at least 10).

    Returns
    -------
    pyhf.Workspace
        Write it with ``json.dump(dict(workspace), file)``.

    Examples
    --------
    >>> from rosenblatt.abcd import passfail_workspace
    >>> ws = passfail_workspace([900, 400, 150], [48, 21, 27], [0, 2, 12], [0, 2, 12])
    >>> sorted(ws.channels)
    ['fail', 'pass']
    """
    from rosenblatt._extras import optional_imports

    with optional_imports("rosenblatt.abcd.passfail_workspace"):
        import pyhf

    fail = _spectrum(failing, "failing")
    bins = fail.size
    passed = _spectrum(passing, "passing", bins)
    s_pass = _spectrum(signal_passing, "signal_passing", bins)
    s_fail = (
        np.zeros(bins)
        if signal_failing is None
        else _spectrum(signal_failing, "signal_failing", bins)
    )
    if not s_pass.sum() > 0:
        msg = "signal_passing must have a positive yield in some bin"
        raise ValueError(msg)
    if ratio is None:
        ratio = float(passed.sum() / fail.sum()) if fail.sum() > 0 else float("nan")
    if not (math.isfinite(ratio) and ratio > 0):
        msg = f"ratio must be a positive number, got {ratio!r} (is the failing spectrum empty?)"
        raise ValueError(msg)
    relative = np.zeros(bins) if nonclosure is None else _spectrum(nonclosure, "nonclosure", bins)
    nominal = np.maximum(fail, FLOOR)
    if mu_max is None:
        mu_max = max(10.0, 20.0 * math.sqrt(ratio * nominal.sum() + 1.0) / s_pass.sum())
    shape = {"name": SHAPE, "type": "shapefactor", "data": None}
    pass_background: list[dict[str, Any]] = [
        shape,
        {"name": TRANSFER, "type": "normfactor", "data": None},
    ]
    if np.any(relative > 0):
        pass_background.append(
            {"name": NONCLOSURE, "type": "shapesys", "data": (relative * ratio * nominal).tolist()}
        )
    channels = [
        _channel("fail", nominal, [shape], s_fail),
        _channel("pass", ratio * nominal, pass_background, s_pass),
    ]
    parameters = [
        {"name": POI, "bounds": [[0.0, float(mu_max)]], "inits": [1.0]},
        {"name": TRANSFER, "bounds": [list(TRANSFER_BOUNDS)], "inits": [1.0]},
        {"name": SHAPE, "bounds": [[0.0, 10.0 * max(1.0, float(np.max(fail / nominal)))]] * bins},
    ]
    spec = {
        "channels": channels,
        "observations": [
            {"name": "fail", "data": fail.tolist()},
            {"name": "pass", "data": passed.tolist()},
        ],
        "measurements": [{"name": "pass/fail", "config": {"poi": POI, "parameters": parameters}}],
        "version": "1.0.0",
    }
    return pyhf.Workspace(spec)


def _channel(
    name: str, background: FloatArray, modifiers: list[dict[str, Any]], signal: FloatArray
) -> dict[str, Any]:
    samples: list[dict[str, Any]] = [
        {"name": "background", "data": background.tolist(), "modifiers": modifiers}
    ]
    if signal.sum() > 0:
        samples.append(
            {
                "name": "signal",
                "data": signal.tolist(),
                "modifiers": [{"name": POI, "type": "normfactor", "data": None}],
            }
        )
    return {"name": name, "samples": samples}


def with_linear_transfer(workspace: pyhf.Workspace, centres: ArrayLike) -> pyhf.Workspace:
    """``workspace`` whose transfer ratio is linear in ``x`` rather than constant.

    pyhf has no modifier that is a formula of ``x``; the passing background
    gets a ``histosys`` :data:`SLOPE` whose up and down variations are the
    nominal times ``1 +- SLOPE_SPAN (x - x_c) / h`` (``x_c`` and ``h`` the
    middle and half-width of the bins' ``centres``). Its interpolation is
    linear in the parameter, and it multiplies with the shared shapefactor
    and the ``transfer`` normfactor, so the passing background is the failing
    one times ``ratio * transfer * (1 + theta SLOPE_SPAN (x - x_c) / h)``
    in every bin. Its standard normal constraint allows a change of the ratio
    by ``+-SLOPE_SPAN`` at the outer bins per standard deviation; it is
    bounded at ``+-SLOPE_BOUND``.

    Parameters
    ----------
    workspace
        A :func:`passfail_workspace`.
    centres
        The centres of its bins of ``x``.
    """
    import json

    import pyhf

    x = np.asarray(centres, dtype=np.float64)
    spec = json.loads(json.dumps(dict(workspace)))
    bins = len(spec["observations"][0]["data"])
    if x.shape != (bins,):
        msg = f"centres has shape {x.shape}, the workspace {bins} bins"
        raise ValueError(msg)
    half = 0.5 * (x[-1] - x[0]) or 1.0
    lever = SLOPE_SPAN * (x - 0.5 * (x[0] + x[-1])) / half
    for channel in spec["channels"]:
        if channel["name"] != "pass":
            continue
        sample = channel["samples"][0]
        nominal = np.asarray(sample["data"], dtype=np.float64)
        sample["modifiers"].append(
            {
                "name": SLOPE,
                "type": "histosys",
                "data": {
                    "hi_data": (nominal * (1.0 + lever)).tolist(),
                    "lo_data": (nominal * (1.0 - lever)).tolist(),
                },
            }
        )
    parameters = spec["measurements"][0]["config"]["parameters"]
    parameters.append({"name": SLOPE, "bounds": [[-SLOPE_BOUND, SLOPE_BOUND]]})
    return pyhf.Workspace(spec)


@dataclasses.dataclass(frozen=True)
class PassFailFit:
    """The fitted pass/fail model.

    Attributes
    ----------
    mu, mu_low, mu_high
        The fitted signal strength and its 68% interval from the profile
        likelihood.
    transfer
        The fitted transfer ratio ``pass / fail`` of the background (the
        expected ratio times the ``transfer`` normfactor).
    background_fail, background_pass, signal_fail, signal_pass
        The post-fit yields per bin of ``x``.
    parameters
        The fitted value of each parameter of the model, by modifier name, at ``mu``.
    """

    mu: float
    mu_low: float
    mu_high: float
    transfer: float
    background_fail: FloatArray
    background_pass: FloatArray
    signal_fail: FloatArray
    signal_pass: FloatArray
    parameters: dict[str, FloatArray] = dataclasses.field(default_factory=dict)


def passfail_fit(workspace: pyhf.Workspace, *, mu_low: float = -10.0) -> PassFailFit:
    """Fit a :func:`passfail_workspace`: ``mu`` with its 68% interval and the post-fit spectra.

    ``mu`` may fall below zero (to ``mu_low``), so that the interval of a
    downward fluctuation is not cut at zero. The interval's ends are where
    the profiled ``-2 ln L`` rises by 1 (:func:`profile_ends`); the post-fit
    spectra are those of the best fit.
    """
    import pyhf

    model = workspace.model()
    data = workspace.data(model)
    bounds = model.config.suggested_bounds()
    poi = model.config.poi_index
    bounds[poi] = (mu_low, bounds[poi][1])
    best, twice_min = pyhf.infer.mle.fit(data, model, par_bounds=bounds, return_fitted_val=True)
    pars = np.asarray(best, dtype=np.float64)
    mu_hat = float(pars[poi])
    low, high = profile_ends(model, data, bounds, mu_hat, float(twice_min))
    ratio = _nominal_ratio(workspace)
    by_sample = model.main_model.expected_data(pars, return_by_sample=True)
    yields = {
        (channel, sample): np.asarray(
            by_sample[index][model.config.channel_slices[channel]], dtype=np.float64
        )
        for index, sample in enumerate(model.config.samples)
        for channel in CHANNELS
    }
    empty = np.zeros(model.config.channel_nbins["fail"])
    return PassFailFit(
        mu=mu_hat,
        mu_low=low,
        mu_high=high,
        transfer=ratio * float(pars[model.config.par_slice(TRANSFER)][0]),
        background_fail=yields[("fail", "background")],
        background_pass=yields[("pass", "background")],
        signal_fail=yields.get(("fail", "signal"), empty),
        signal_pass=yields.get(("pass", "signal"), empty),
        parameters={
            name: pars[model.config.par_slice(name)].copy() for name in model.config.par_order
        },
    )


#: the largest error of an interval's end in the rise of ``sqrt(-2 ln L)`` (1 at the end)
END_TOLERANCE = 1e-3
#: the most fits spent on one end of an interval
MAX_END_FITS = 12


def profile_ends(
    model: Any,
    data: Any,
    bounds: list[tuple[float, float]],
    mu_hat: float,
    twice_min: float,
    *,
    rise: float = 1.0,
) -> tuple[float, float]:
    """The ends of the interval where the profiled ``-2 ln L`` rises by ``rise`` above its minimum.

    Near its minimum ``sqrt(-2 ln L - twice_min)`` is close to linear in
    ``mu``, so each end is found by secant steps on it from a first step of
    a quarter of ``max(|mu_hat|, 1)``: a few conditional fits per end, where a
    bracketing root search takes many (a model with one free parameter per
    bin takes about a second per fit).

    Raises
    ------
    ValueError
        If the likelihood does not rise by ``rise`` within the bounds of ``mu``.
    """
    import pyhf

    poi = model.config.poi_index
    target = math.sqrt(rise)

    def height(mu: float) -> float | None:
        try:
            _, twice = pyhf.infer.mle.fixed_poi_fit(
                mu, data, model, par_bounds=bounds, return_fitted_val=True
            )
        except pyhf.exceptions.FailedMinimization:
            return None
        return math.sqrt(max(float(twice) - twice_min, 0.0))

    ends = []
    for direction, limit in ((-1.0, float(bounds[poi][0])), (1.0, float(bounds[poi][1]))):
        lower, upper = sorted((mu_hat, limit))
        points = [(mu_hat, 0.0)]
        mu = min(max(mu_hat + direction * 0.25 * max(abs(mu_hat), 1.0), lower), upper)
        for _ in range(MAX_END_FITS):
            value = height(mu)
            if value is None:
                # a conditional fit that fails (a negative yield on the way): halve the step
                mu = 0.5 * (mu + points[-1][0])
                continue
            points.append((mu, value))
            if abs(value - target) < END_TOLERANCE:
                break
            if mu in (lower, upper) and value < target:
                msg = (
                    f"the profile likelihood does not rise by {rise} within the bounds of mu "
                    f"({limit})"
                )
                raise ValueError(msg)
            (mu_a, h_a), (mu_b, h_b) = points[-2], points[-1]
            slope = (h_b - h_a) / (mu_b - mu_a) if mu_b != mu_a else 0.0
            step = (target - h_b) / slope if direction * slope > 0 else direction * abs(mu_b - mu_a)
            mu = min(max(mu_b + step, lower), upper)
        else:
            msg = f"no end of the interval of mu found in {MAX_END_FITS} fits toward {limit}"
            raise ValueError(msg)
        ends.append(mu)
    return ends[0], ends[1]


def _nominal_ratio(workspace: pyhf.Workspace) -> float:
    """The expected transfer ratio a workspace was built with (pass over fail nominal)."""
    nominal = {
        channel["name"]: np.asarray(channel["samples"][0]["data"], dtype=np.float64)
        for channel in workspace["channels"]
    }
    return float(nominal["pass"].sum() / nominal["fail"].sum())
