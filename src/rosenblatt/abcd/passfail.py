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

Several cuts make disjoint categories (:func:`passfail_categories_workspace`:
between one cut and the next, and above the last): one channel ``pass_k``
per category, each with its own expected ratio ``eps_k / (1 - eps)`` (``eps``
the fraction passing the lowest cut, ``eps_k`` that in the category), its
own normfactor ``transfer_k`` and non-closure ``nonclosure_k``, all sharing
the failing region's parameters and one ``mu``.

For a background-only fit without non-closure the likelihood's maximum is
known in closed form: the fitted ratio is ``sum(pass) / sum(fail)`` and each
bin's background ``(fail_i + pass_i) / (1 + ratio)``.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from rosenblatt.abcd.likelihood import POI, quiet_pyhf
from rosenblatt.typing import ArrayLike, FloatArray

if TYPE_CHECKING:
    import pyhf

__all__ = [
    "PassFailFit",
    "passfail_categories_workspace",
    "passfail_fit",
    "passfail_workspace",
    "with_linear_transfer",
]


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
    fail = _spectrum(failing, "failing")
    bins = fail.size
    category = _Category(
        "pass",
        _spectrum(passing, "passing", bins),
        _spectrum(signal_passing, "signal_passing", bins),
        ratio,
        None if nonclosure is None else _spectrum(nonclosure, "nonclosure", bins),
    )
    return _workspace(fail, [category], signal_failing, mu_max)


def passfail_categories_workspace(
    failing: ArrayLike,
    passing: Sequence[ArrayLike],
    signal_passing: Sequence[ArrayLike],
    signal_failing: ArrayLike | None = None,
    *,
    ratios: Sequence[float] | None = None,
    nonclosure: Sequence[ArrayLike | None] | None = None,
    mu_max: float | None = None,
) -> pyhf.Workspace:
    """The pass/fail likelihood of several disjoint categories passing cuts, one ``mu``.

    The categories of cuts ``c_0 < c_1 < ...`` are ``c_k <= score < c_{k+1}``
    (the last: above its cut); the failing region, below ``c_0``, is shared.
    Channel ``pass_k`` holds category ``k``: its background the failing
    region's ``background_shape`` times its expected ratio and its own
    normfactor ``transfer_k`` (and, where given, its ``shapesys``
    ``nonclosure_k``), its signal the template scaled by the one ``mu``.

    Parameters
    ----------
    failing
        Observed counts per bin of ``x`` failing the lowest cut.
    passing
        Per category, the observed counts per bin of ``x``.
    signal_passing, signal_failing
        Per category, the signal's expected yields per bin at ``mu = 1``, and
        the failing region's (none where not given).
    ratios
        Per category, the expected transfer ratio ``eps_k / (1 - eps)`` of
        the background (default: ``sum(passing[k]) / sum(failing)``).
    nonclosure
        Per category, the relative uncertainty per bin of its background
        (``None``: none), as for :func:`passfail_workspace`.
    mu_max
        Upper bound of ``mu`` (default: 20 times the Poisson error of all
        passing background over all passing signal, at least 10).

    Returns
    -------
    pyhf.Workspace

    Examples
    --------
    >>> from rosenblatt.abcd.passfail import passfail_categories_workspace
    >>> ws = passfail_categories_workspace(
    ...     [900, 400, 150], [[40, 17, 20], [8, 4, 7]], [[0, 1, 6], [0, 1, 6]], [0, 2, 12]
    ... )
    >>> ws.channels
    ['fail', 'pass_0', 'pass_1']
    """
    fail = _spectrum(failing, "failing")
    bins = fail.size
    count = len(passing)
    if count == 0 or len(signal_passing) != count:
        msg = (
            f"passing and signal_passing need one spectrum per category, got {count} and "
            f"{len(signal_passing)}"
        )
        raise ValueError(msg)
    for name, given in (("ratios", ratios), ("nonclosure", nonclosure)):
        if given is not None and len(given) != count:
            msg = f"{name} has {len(given)} entries, the categories are {count}"
            raise ValueError(msg)
    categories = []
    for k in range(count):
        relative = None if nonclosure is None else nonclosure[k]
        categories.append(
            _Category(
                f"pass_{k}",
                _spectrum(passing[k], f"passing[{k}]", bins),
                _spectrum(signal_passing[k], f"signal_passing[{k}]", bins),
                None if ratios is None else float(ratios[k]),
                None if relative is None else _spectrum(relative, f"nonclosure[{k}]", bins),
            )
        )
    return _workspace(fail, categories, signal_failing, mu_max)


@dataclasses.dataclass(frozen=True)
class _Category:
    """One passing channel of a workspace: its name, spectra, expected ratio and non-closure."""

    channel: str
    passing: FloatArray
    signal: FloatArray
    ratio: float | None
    nonclosure: FloatArray | None


def category_names(channel: str) -> tuple[str, str]:
    """The names of a passing channel's transfer normfactor and non-closure modifier.

    ``"pass"`` (one cut) has :data:`TRANSFER` and :data:`NONCLOSURE`;
    ``"pass_k"`` (category ``k``) has ``transfer_k`` and ``nonclosure_k``.
    """
    suffix = channel.removeprefix("pass")
    return TRANSFER + suffix, NONCLOSURE + suffix


def _workspace(
    fail: FloatArray,
    categories: list[_Category],
    signal_failing: ArrayLike | None,
    mu_max: float | None,
) -> pyhf.Workspace:
    from rosenblatt._extras import optional_imports

    with optional_imports("rosenblatt.abcd.passfail_workspace"):
        import pyhf

    bins = fail.size
    s_fail = (
        np.zeros(bins)
        if signal_failing is None
        else _spectrum(signal_failing, "signal_failing", bins)
    )
    if not sum(category.signal.sum() for category in categories) > 0:
        msg = "signal_passing must have a positive yield in some bin"
        raise ValueError(msg)
    nominal = np.maximum(fail, FLOOR)
    shape = {"name": SHAPE, "type": "shapefactor", "data": None}
    channels = [_channel("fail", nominal, [shape], s_fail)]
    observations = [{"name": "fail", "data": fail.tolist()}]
    parameters: list[dict[str, Any]] = []
    expected = 0.0
    for category in categories:
        ratio = category.ratio
        if ratio is None:
            ratio = float(category.passing.sum() / fail.sum()) if fail.sum() > 0 else float("nan")
        if not (math.isfinite(ratio) and ratio > 0):
            empty = "the failing spectrum" + (
                "" if category.channel == "pass" else f" or the {category.channel} spectrum"
            )
            msg = f"ratio must be a positive number, got {ratio!r} (is {empty} empty?)"
            raise ValueError(msg)
        transfer, nonclosure = category_names(category.channel)
        relative = np.zeros(bins) if category.nonclosure is None else category.nonclosure
        background: list[dict[str, Any]] = [
            shape,
            {"name": transfer, "type": "normfactor", "data": None},
        ]
        if np.any(relative > 0):
            background.append(
                {
                    "name": nonclosure,
                    "type": "shapesys",
                    "data": (relative * ratio * nominal).tolist(),
                }
            )
        channels.append(_channel(category.channel, ratio * nominal, background, category.signal))
        observations.append({"name": category.channel, "data": category.passing.tolist()})
        parameters.append({"name": transfer, "bounds": [list(TRANSFER_BOUNDS)], "inits": [1.0]})
        expected += ratio * float(nominal.sum())
    signal = sum(float(category.signal.sum()) for category in categories)
    if mu_max is None:
        mu_max = max(10.0, 20.0 * math.sqrt(expected + 1.0) / signal)
    parameters = [
        {"name": POI, "bounds": [[0.0, float(mu_max)]], "inits": [1.0]},
        *parameters,
        {"name": SHAPE, "bounds": [[0.0, 10.0 * max(1.0, float(np.max(fail / nominal)))]] * bins},
    ]
    spec = {
        "channels": channels,
        "observations": observations,
        "measurements": [{"name": "pass/fail", "config": {"poi": POI, "parameters": parameters}}],
        "version": "1.0.0",
    }
    with quiet_pyhf():
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
    bounded at ``+-SLOPE_BOUND``. Several categories share the one slope.

    Parameters
    ----------
    workspace
        A :func:`passfail_workspace` or :func:`passfail_categories_workspace`.
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
        if not channel["name"].startswith("pass"):
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
    with quiet_pyhf():
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
        expected ratio times the ``transfer`` normfactor; with categories,
        the sum of theirs: the ratio of all passing the lowest cut).
    background_fail, background_pass, signal_fail, signal_pass
        The post-fit yields per bin of ``x`` (with categories, the passing
        ones summed over them).
    parameters
        The fitted value of each parameter of the model, by modifier name, at ``mu``.
    transfers, backgrounds_pass, signals_pass
        By passing channel (``"pass"``, or ``"pass_k"`` per category), its
        fitted transfer ratio and post-fit yields.
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
    transfers: dict[str, float] = dataclasses.field(default_factory=dict)
    backgrounds_pass: dict[str, FloatArray] = dataclasses.field(default_factory=dict)
    signals_pass: dict[str, FloatArray] = dataclasses.field(default_factory=dict)


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
    ratios = _nominal_ratios(workspace)
    by_sample = model.main_model.expected_data(pars, return_by_sample=True)
    yields = {
        (channel, sample): np.asarray(
            by_sample[index][model.config.channel_slices[channel]], dtype=np.float64
        )
        for index, sample in enumerate(model.config.samples)
        for channel in model.config.channels
    }
    empty = np.zeros(model.config.channel_nbins["fail"])
    transfers = {
        channel: ratio * float(pars[model.config.par_slice(category_names(channel)[0])][0])
        for channel, ratio in ratios.items()
    }
    backgrounds = {channel: yields[(channel, "background")] for channel in ratios}
    signals = {channel: yields.get((channel, "signal"), empty) for channel in ratios}
    return PassFailFit(
        mu=mu_hat,
        mu_low=low,
        mu_high=high,
        transfer=transfers["pass"] if "pass" in transfers else sum(transfers.values()),
        background_fail=yields[("fail", "background")],
        background_pass=backgrounds["pass"]
        if "pass" in backgrounds
        else np.sum(list(backgrounds.values()), axis=0),
        signal_fail=yields.get(("fail", "signal"), empty),
        signal_pass=signals["pass"]
        if "pass" in signals
        else np.sum(list(signals.values()), axis=0),
        parameters={
            name: pars[model.config.par_slice(name)].copy() for name in model.config.par_order
        },
        transfers=transfers,
        backgrounds_pass=backgrounds,
        signals_pass=signals,
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


def _nominal_ratios(workspace: pyhf.Workspace) -> dict[str, float]:
    """The expected transfer ratio of each passing channel (its nominal over the failing one)."""
    nominal = {
        channel["name"]: np.asarray(channel["samples"][0]["data"], dtype=np.float64)
        for channel in workspace["channels"]
    }
    fail = nominal.pop("fail").sum()
    return {channel: float(values.sum() / fail) for channel, values in nominal.items()}
