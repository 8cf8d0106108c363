"""The contract of a transform as a test: :func:`check_transform`.

Every :class:`~rosenblatt.transforms.ConditionalCDFTransform` must meet the
invariants below; a new transform is checked by calling
``check_transform(MyTransform)`` (or an instance with chosen parameters) from a
test. Each invariant is checked on a correlated Gaussian sample of ``x`` and
``y``; the first one broken raises an :class:`AssertionError` whose message
names it:

- ``fit returns self``;
- ``parameters unchanged by fit``: the hyper-parameters (public attributes
  not ending in ``_``) are equal before and after :meth:`fit`, and transforms
  given as parameters stay as they were;
- ``gamma in [0, 1]``: finite and within ``[0, 1]`` inside and beyond the domain;
- ``monotone in y at fixed x``: non-decreasing in ``y`` (to ``1e-12``) at
  fixed ``x`` inside and beyond the domain;
- ``y beyond the domain``: ``0`` below the fitted ``y`` domain, ``1`` above;
- ``uniform on the defining sample``: the Kolmogorov-Smirnov distance of
  ``gamma`` on the defining sample to the uniform distribution is below
  ``1.63 / sqrt(n)`` (its 1% critical value) plus the transform's resolution
  (the largest step of a column of a grid transform, summed over the steps of
  a sequence);
- ``weights equal replication``: where the class claims it
  (``weights_replicate``), the fit with integer weights equals the fit on the
  events repeated as often, to ``1e-12``;
- ``negative weights``: where the class claims it (``negative_weights``),
  the fit on a sample of which a fifth of the events have weight -1
  (:func:`negative_weight_sample`: the weighted distribution is the
  Gaussian one, the negative events cancelling an excess of positive ones)
  succeeds; ``gamma`` is finite, within ``[0, 1]`` and monotone in ``y`` as
  above, and its root mean square distance to the exact conditional CDF
  (:func:`exact_gamma`) on events of the Gaussian population is below
  :data:`NEGATIVE_WEIGHT_RMS`;
- ``save/load bit-identical``: :meth:`save` then :func:`rosenblatt.load`
  gives the same ``gamma`` bit for bit, and saving the loaded transform again
  writes the same file;
- ``awkward in, same structure out``: jagged awkward arrays give ``gamma`` of
  the same structure, equal to the flat evaluation;
- ``bad input refused``: ``NaN`` in the sample, samples of different lengths
  and weights of negative sum raise :class:`ValueError`, and an unfitted
  transform raises :class:`~rosenblatt.transforms.NotFittedError`.

A transform that is read rather than fitted (``fittable = False``, such as
:class:`~rosenblatt.transforms.tabulated.TabulatedTransform`) is given fitted,
with its defining sample as ``x`` and ``y``; the invariants of fitting are
then not checked.
"""

from __future__ import annotations

import copy
import dataclasses
import math
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from scipy.special import ndtr
from scipy.stats import kstest

from rosenblatt.exceptions import InvariantError, NotFittedError
from rosenblatt.transforms._base import ConditionalCDFTransform
from rosenblatt.typing import ArrayLike, FloatArray

__all__ = ["INVARIANTS", "check_transform", "exact_gamma", "negative_weight_sample"]


#: the invariants :func:`check_transform` checks, in order
INVARIANTS = (
    "fit returns self",
    "parameters unchanged by fit",
    "gamma in [0, 1]",
    "monotone in y at fixed x",
    "y beyond the domain",
    "uniform on the defining sample",
    "weights equal replication",
    "negative weights",
    "save/load bit-identical",
    "awkward in, same structure out",
    "bad input refused",
)

#: the 1% critical value of the Kolmogorov-Smirnov distance is this over sqrt(n)
KS_CRITICAL = 1.63
#: slack on monotonicity (rounding of kernel sums)
MONOTONE_SLACK = 1e-12
#: largest difference between the fit with integer weights and the fit on repeated events
REPLICATION_SLACK = 1e-12
#: the score of the sample is ``SLOPE * mean(x) + NOISE * eps`` with ``eps ~ N(0, 1)``
SLOPE, NOISE = 0.6, 0.8
#: fraction of negative weights of the sample of the invariant ``negative weights``
NEGATIVE_FRACTION = 0.2
#: events of that sample, and events at which ``gamma`` is compared with the exact one
NEGATIVE_WEIGHT_EVENTS = 16384
#: largest root mean square of ``gamma`` minus the exact conditional CDF there: the kernel
#: estimates reach 0.015-0.027 (the statistics of half as many unweighted events), and
#: dropping the negative weights, or taking their absolute value, gives 0.06 and 0.10
NEGATIVE_WEIGHT_RMS = 0.04


@dataclasses.dataclass(frozen=True)
class _Sample:
    """The defining sample, integer weights, and points to evaluate ``gamma`` at."""

    x: FloatArray
    y: FloatArray
    weight: FloatArray
    x_probe: FloatArray
    y_probe: FloatArray


def _sample(n_events: int, n_observables: int, seed: int) -> _Sample:
    """A Gaussian sample whose score is correlated with the observables."""
    rng = np.random.default_rng(seed)
    shape = (n_events,) if n_observables == 1 else (n_events, n_observables)
    x = rng.normal(size=shape)
    signal = x if n_observables == 1 else x.mean(axis=1)
    y = SLOPE * signal + NOISE * rng.normal(size=n_events)
    probe = (1000,) if n_observables == 1 else (1000, n_observables)
    return _Sample(
        x=x,
        y=y,
        weight=rng.integers(1, 4, n_events).astype(np.float64),
        x_probe=rng.uniform(-6, 6, probe),
        y_probe=rng.uniform(-6, 6, 1000),
    )


def negative_weight_sample(
    n_events: int, fraction: float = NEGATIVE_FRACTION, *, n_observables: int = 1, seed: int = 0
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """A correlated Gaussian sample with negative weights whose weighted distribution is a density.

    ``x`` is standard normal (``n_observables`` independent columns) and the
    target distribution of the score is ``y | x ~ N(SLOPE * mean(x), NOISE**2)``,
    so that the exact ``gamma`` is :func:`exact_gamma` (for one observable the
    bivariate normal of :mod:`rosenblatt.closed_forms`, correlation 0.6). As
    in NLO simulation, a fraction ``fraction`` of the events has weight -1
    and the others weight ``(1 + fraction) / (1 - fraction)``: the negative
    events are drawn from an excess ``y | x ~ N(SLOPE * mean(x) + NOISE, (NOISE / 2)**2)``
    above the centre, which the positive events hold too (a share
    ``fraction / (1 + fraction)`` of them), so that the excess cancels in
    the weighted sum. A transform that dropped the negative weights, or took
    their absolute value, would be biased towards the excess.

    Returns
    -------
    x, y, weight
        ``x`` of shape ``(n_events,)`` or ``(n_events, n_observables)``.
    """
    rng = np.random.default_rng(seed)
    shape = (n_events,) if n_observables == 1 else (n_events, n_observables)
    x = rng.normal(size=shape)
    signal = x if n_observables == 1 else x.mean(axis=1)
    negative = rng.uniform(size=n_events) < fraction
    excess = negative | (rng.uniform(size=n_events) < fraction / (1.0 + fraction))
    noise = rng.normal(size=n_events)
    y = np.where(
        excess, SLOPE * signal + NOISE + 0.5 * NOISE * noise, SLOPE * signal + NOISE * noise
    )
    weight = np.where(negative, -1.0, (1.0 + fraction) / (1.0 - fraction))
    return x, y, weight


def exact_gamma(x: FloatArray, y: FloatArray) -> FloatArray:
    """The exact ``gamma`` of the samples of :func:`check_transform` and :func:`negative_weight_sample`."""
    signal = x if x.ndim == 1 else x.mean(axis=1)
    return np.asarray(ndtr((y - SLOPE * signal) / NOISE), dtype=np.float64)


def _same(a: Any, b: Any) -> bool:
    """Whether two parameter values are equal (arrays element-wise, transforms attribute-wise)."""
    if isinstance(a, ConditionalCDFTransform) or isinstance(b, ConditionalCDFTransform):
        return type(a) is type(b) and _same(vars(a), vars(b))
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return bool(np.array_equal(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return type(a) is type(b) and len(a) == len(b) and all(map(_same, a, b))
    return bool(a == b)


def _parameters(transform: ConditionalCDFTransform) -> dict[str, Any]:
    """The hyper-parameters: public attributes that do not end in ``_``."""
    return {
        k: v for k, v in vars(transform).items() if not k.startswith("_") and not k.endswith("_")
    }


def _resolution(transform: Any) -> float:
    """The largest step of ``gamma`` the estimator's own grid allows (0 for none)."""
    if hasattr(transform, "steps_"):
        return float(sum(_resolution(step) for step in transform.steps_))
    if hasattr(transform, "nominal_"):
        return _resolution(transform.nominal_)
    cdf = getattr(transform, "cdf_", None)
    if isinstance(cdf, np.ndarray) and cdf.ndim == 2 and cdf.shape[1] > 1:
        return float(np.max(np.diff(cdf, axis=1)))
    return 0.0


def _at(x0: float, n: int, n_observables: int) -> FloatArray:
    """``n`` copies of the point ``x0`` (on every observable)."""
    shape = (n,) if n_observables == 1 else (n, n_observables)
    return np.full(shape, x0)


# ----------------------------------------------------------------- the invariants
def _fit_returns_self(make: Callable[[], Any], s: _Sample) -> None:
    transform = make()
    returned = transform.fit(s.x, s.y)
    if returned is not transform:
        msg = f"fit returned {type(returned).__name__} object {returned!r}, not the transform"
        raise InvariantError(msg)


def _parameters_unchanged(make: Callable[[], Any], s: _Sample) -> None:
    transform = make()
    before = copy.deepcopy(_parameters(transform))
    transform.fit(s.x, s.y)
    after = _parameters(transform)
    changed = sorted(set(before) ^ set(after)) + [
        k for k in before if k in after and not _same(before[k], after[k])
    ]
    if changed:
        msg = f"fit changed {', '.join(changed)} (before {before!r}, after {after!r})"
        raise InvariantError(msg)


def _gamma_in_unit_interval(t: Any, s: _Sample) -> None:
    g = np.asarray(t.transform(s.x_probe, s.y_probe), dtype=np.float64)
    bad = ~np.isfinite(g) | (g < 0) | (g > 1)
    if np.any(bad):
        i = int(np.argmax(bad))
        msg = f"{int(bad.sum())} of {len(g)} values outside [0, 1], e.g. gamma = {g[i]!r} at x = {s.x_probe[i]!r}, y = {s.y_probe[i]!r}"
        raise InvariantError(msg)


def _monotone_in_y(t: Any, s: _Sample) -> None:
    ys = np.linspace(-6.0, 6.0, 2001)
    k = 1 if s.x.ndim == 1 else s.x.shape[1]
    for x0 in (-5.0, -1.3, 0.0, 0.7, 2.5, 5.0):
        g = np.asarray(t.transform(_at(x0, len(ys), k), ys), dtype=np.float64)
        drops = np.diff(g)
        if np.any(drops < -MONOTONE_SLACK):
            i = int(np.argmin(drops))
            msg = f"at x = {x0}, gamma falls from {g[i]!r} at y = {ys[i]:.6g} to {g[i + 1]!r} at y = {ys[i + 1]:.6g}"
            raise InvariantError(msg)


def _y_beyond_domain(t: Any, s: _Sample) -> None:
    (_, (y_lo, y_hi)) = t.domain_
    k = 1 if s.x.ndim == 1 else s.x.shape[1]
    below = np.full(5, y_lo - 1.0 - abs(y_lo))
    above = np.full(5, y_hi + 1.0 + abs(y_hi))
    for x0 in (-5.0, 0.0, 5.0):
        xs = _at(x0, 5, k)
        g_below, g_above = t.transform(xs, below), t.transform(xs, above)
        if np.any(np.asarray(g_below) != 0.0) or np.any(np.asarray(g_above) != 1.0):
            msg = f"at x = {x0}, gamma is {float(g_below[0])!r} below the y domain (expected 0) and {float(g_above[0])!r} above it (expected 1)"
            raise InvariantError(msg)


def _uniform(t: Any, s: _Sample) -> None:
    g = np.asarray(t.transform(s.x, s.y), dtype=np.float64)
    distance = float(kstest(g, "uniform").statistic)
    resolution = _resolution(t)
    bound = KS_CRITICAL / math.sqrt(len(g)) + resolution
    if not distance < bound:
        msg = (
            f"the Kolmogorov-Smirnov distance of gamma to uniform is {distance:.4g} on "
            f"{len(g)} events, above {bound:.4g} (1.63/sqrt(n) + resolution {resolution:.3g})"
        )
        raise InvariantError(msg)


def _weights_replicate(make: Callable[[], Any], s: _Sample) -> None:
    weighted = make().fit(s.x, s.y, s.weight)
    repeat = np.repeat(np.arange(len(s.y)), s.weight.astype(np.int64))
    repeated = make().fit(s.x[repeat], s.y[repeat])
    difference = np.abs(
        weighted.transform(s.x_probe, s.y_probe) - repeated.transform(s.x_probe, s.y_probe)
    )
    if np.max(difference) > REPLICATION_SLACK:
        msg = (
            f"the class claims weights_replicate, but gamma fitted with integer weights differs "
            f"from gamma fitted on the repeated events by up to {np.max(difference):.3g}"
        )
        raise InvariantError(msg)


def _negative_weights(make: Callable[[], Any], s: _Sample) -> None:
    k = 1 if s.x.ndim == 1 else s.x.shape[1]
    x, y, weight = negative_weight_sample(NEGATIVE_WEIGHT_EVENTS, n_observables=k, seed=1)
    t = make().fit(x, y, weight)
    probe = _Sample(x, y, weight, s.x_probe, s.y_probe)
    _gamma_in_unit_interval(t, probe)
    _monotone_in_y(t, probe)
    rng = np.random.default_rng(2)
    shape = (NEGATIVE_WEIGHT_EVENTS,) if k == 1 else (NEGATIVE_WEIGHT_EVENTS, k)
    x_test = rng.normal(size=shape)
    signal = x_test if k == 1 else x_test.mean(axis=1)
    y_test = SLOPE * signal + NOISE * rng.normal(size=NEGATIVE_WEIGHT_EVENTS)
    g = np.asarray(t.transform(x_test, y_test), dtype=np.float64)
    rms = float(np.sqrt(np.mean((g - exact_gamma(x_test, y_test)) ** 2)))
    if not rms < NEGATIVE_WEIGHT_RMS:
        msg = (
            f"fitted on {NEGATIVE_WEIGHT_EVENTS} events of which {NEGATIVE_FRACTION:.0%} have "
            f"weight -1, gamma differs from the exact conditional CDF by {rms:.4g} (root mean "
            f"square), above {NEGATIVE_WEIGHT_RMS:g}"
        )
        raise InvariantError(msg)


def _save_load(t: Any, s: _Sample) -> None:
    from rosenblatt.serialization import load

    with tempfile.TemporaryDirectory() as folder:
        first, second = Path(folder, "first.json"), Path(folder, "second.json")
        t.save(first)
        loaded = load(first)
        if type(loaded) is not type(t):
            msg = f"load gave a {type(loaded).__name__}, not a {type(t).__name__}"
            raise InvariantError(msg)
        expected = t.transform(s.x_probe, s.y_probe)
        got = loaded.transform(s.x_probe, s.y_probe)
        if not np.array_equal(expected, got):
            msg = f"gamma of the loaded transform differs by up to {np.max(np.abs(expected - got)):.3g}"
            raise InvariantError(msg)
        loaded.save(second)
        if first.read_bytes() != second.read_bytes():
            msg = "saving the loaded transform again writes a different file"
            raise InvariantError(msg)


def _awkward(t: Any, s: _Sample) -> None:
    import awkward as ak

    counts = np.array([3, 0, 1, 4, 2])
    n = int(counts.sum())
    y = ak.unflatten(s.y_probe[:n], counts)
    if s.x.ndim == 1:
        x: Any = ak.unflatten(s.x_probe[:n], counts)
        flat = t.transform(s.x_probe[:n], s.y_probe[:n])
    else:
        x = [ak.unflatten(s.x_probe[:n, d], counts) for d in range(s.x.shape[1])]
        flat = t.transform(s.x_probe[:n], s.y_probe[:n])
    g = t.transform(x, y)
    if not isinstance(g, ak.Array) or ak.num(g, axis=1).tolist() != counts.tolist():
        msg = f"jagged input of counts {counts.tolist()} gave {g!r}"
        raise InvariantError(msg)
    if not np.array_equal(ak.to_numpy(ak.flatten(g)), flat):
        msg = "gamma of jagged input differs from gamma of the same events flat"
        raise InvariantError(msg)


def _bad_input(make: Callable[[], Any] | None, t: Any, s: _Sample) -> None:
    def refused(what: str, call: Callable[[], Any], error: type[Exception]) -> None:
        try:
            call()
        except error:
            return
        except Exception as err:
            msg = f"{what} raised {type(err).__name__} ({err}), not {error.__name__}"
            raise InvariantError(msg) from err
        msg = f"{what} was accepted"
        raise InvariantError(msg)

    if make is not None:
        y_nan = s.y.copy()
        y_nan[7] = np.nan
        refused("fit with NaN in y", lambda: make().fit(s.x, y_nan), ValueError)
        refused("fit with y shorter than x", lambda: make().fit(s.x, s.y[:-1]), ValueError)
        refused(
            "fit with weights of negative sum", lambda: make().fit(s.x, s.y, -s.weight), ValueError
        )
        refused(
            "transform before fit",
            lambda: make().transform(s.x_probe, s.y_probe),
            NotFittedError,
        )
    refused(
        "transform with y shorter than x",
        lambda: t.transform(s.x_probe, s.y_probe[:-1]),
        ValueError,
    )


# ----------------------------------------------------------------- the check
def _maker(transform: Any) -> Callable[[], Any]:
    """A function that returns a new unfitted transform of the same parameters."""
    if isinstance(transform, type):
        return transform
    template = copy.deepcopy(transform)
    return lambda: copy.deepcopy(template)


def _transform_class(transform: object) -> type[ConditionalCDFTransform]:
    """The class of ``transform``, a transform class or instance; :class:`TypeError` if not one."""
    cls = transform if isinstance(transform, type) else type(transform)
    if not issubclass(cls, ConditionalCDFTransform):
        msg = (
            f"check_transform takes a ConditionalCDFTransform class or instance, got {transform!r}"
        )
        raise TypeError(msg)
    return cls


def check_transform(
    transform: type[ConditionalCDFTransform] | ConditionalCDFTransform,
    *,
    x: ArrayLike | None = None,
    y: ArrayLike | None = None,
    n_events: int = 4096,
    n_observables: int = 1,
    seed: int = 0,
) -> None:
    """Check that a transform meets every invariant of the contract (see the module).

    Parameters
    ----------
    transform : ConditionalCDFTransform subclass or instance
        A class (fitted with its default parameters) or an instance; an
        instance that is fitted and not ``fittable`` is checked as given.
    x, y : array-like, optional
        The defining sample of a transform given fitted (for the uniformity).
    n_events : int, default 4096
        Events of the Gaussian defining sample.
    n_observables : int, default 1
        Protected observables of the sample (``x`` of shape ``(n, k)`` for ``k > 1``).
    seed : int, default 0
        Seed of the sample.

    Raises
    ------
    AssertionError
        The first invariant broken, named in the message:
        ``"<transform>: invariant '<name>' broken: <what was found>"``.
    TypeError
        If ``transform`` is not a transform class or instance.
    """
    cls = _transform_class(transform)
    label = cls.__name__ if isinstance(transform, type) else repr(transform)
    sample = _sample(n_events, n_observables, seed)
    fits = cls.fittable
    make = _maker(transform) if fits else None
    steps: list[tuple[str, Callable[[], Any]]] = []

    def fitted() -> Any:
        if make is None:
            return transform
        return make().fit(sample.x, sample.y)

    state: dict[str, Any] = {}

    def t() -> Any:
        if "t" not in state:
            state["t"] = fitted()
        return state["t"]

    defining = sample
    if not fits:
        if x is not None and y is not None:
            defining = dataclasses.replace(
                sample, x=np.asarray(x, dtype=np.float64), y=np.asarray(y, dtype=np.float64)
            )
        else:
            defining = dataclasses.replace(sample, x=np.empty(0), y=np.empty(0))
    if make is not None:
        steps.append((INVARIANTS[0], lambda: _fit_returns_self(make, sample)))
        steps.append((INVARIANTS[1], lambda: _parameters_unchanged(make, sample)))
    steps.append((INVARIANTS[2], lambda: _gamma_in_unit_interval(t(), sample)))
    steps.append((INVARIANTS[3], lambda: _monotone_in_y(t(), sample)))
    steps.append((INVARIANTS[4], lambda: _y_beyond_domain(t(), sample)))
    if len(defining.y):
        steps.append((INVARIANTS[5], lambda: _uniform(t(), defining)))
    if make is not None and cls.weights_replicate:
        steps.append((INVARIANTS[6], lambda: _weights_replicate(make, sample)))
    if make is not None and cls.negative_weights:
        steps.append((INVARIANTS[7], lambda: _negative_weights(make, sample)))
    steps.append((INVARIANTS[8], lambda: _save_load(t(), sample)))
    steps.append((INVARIANTS[9], lambda: _awkward(t(), sample)))
    steps.append((INVARIANTS[10], lambda: _bad_input(make, t(), sample)))
    for name, step in steps:
        try:
            step()
        except InvariantError as err:
            msg = f"{label}: invariant '{name}' broken: {err}"
            raise AssertionError(msg) from None
        except Exception as err:
            msg = f"{label}: invariant '{name}' broken: {type(err).__name__}: {err}"
            raise AssertionError(msg) from err
