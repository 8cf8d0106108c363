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
from numpy.typing import NDArray
from scipy.stats import kstest

from rosenblatt.exceptions import NotFittedError
from rosenblatt.transforms._base import ConditionalCDFTransform

__all__ = ["INVARIANTS", "check_transform"]

Array = NDArray[np.float64]

#: the invariants :func:`check_transform` checks, in order
INVARIANTS = (
    "fit returns self",
    "parameters unchanged by fit",
    "gamma in [0, 1]",
    "monotone in y at fixed x",
    "y beyond the domain",
    "uniform on the defining sample",
    "weights equal replication",
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


class _Broken(AssertionError):
    """An invariant is broken: the message says what was found."""


@dataclasses.dataclass(frozen=True)
class _Sample:
    """The defining sample, integer weights, and points to evaluate ``gamma`` at."""

    x: Array
    y: Array
    weight: Array
    x_probe: Array
    y_probe: Array


def _sample(n_events: int, n_observables: int, seed: int) -> _Sample:
    """A Gaussian sample whose score is correlated with the observables."""
    rng = np.random.default_rng(seed)
    shape = (n_events,) if n_observables == 1 else (n_events, n_observables)
    x = rng.normal(size=shape)
    signal = x if n_observables == 1 else x.mean(axis=1)
    y = 0.6 * signal + 0.8 * rng.normal(size=n_events)
    probe = (1000,) if n_observables == 1 else (1000, n_observables)
    return _Sample(
        x=x,
        y=y,
        weight=rng.integers(1, 4, n_events).astype(np.float64),
        x_probe=rng.uniform(-6, 6, probe),
        y_probe=rng.uniform(-6, 6, 1000),
    )


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


def _at(x0: float, n: int, n_observables: int) -> Array:
    """``n`` copies of the point ``x0`` (on every observable)."""
    shape = (n,) if n_observables == 1 else (n, n_observables)
    return np.full(shape, x0)


# ----------------------------------------------------------------- the invariants
def _fit_returns_self(make: Callable[[], Any], s: _Sample) -> None:
    transform = make()
    returned = transform.fit(s.x, s.y)
    if returned is not transform:
        msg = f"fit returned {type(returned).__name__} object {returned!r}, not the transform"
        raise _Broken(msg)


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
        raise _Broken(msg)


def _gamma_in_unit_interval(t: Any, s: _Sample) -> None:
    g = np.asarray(t.transform(s.x_probe, s.y_probe), dtype=np.float64)
    bad = ~np.isfinite(g) | (g < 0) | (g > 1)
    if np.any(bad):
        i = int(np.argmax(bad))
        msg = f"{int(bad.sum())} of {len(g)} values outside [0, 1], e.g. gamma = {g[i]!r} at x = {s.x_probe[i]!r}, y = {s.y_probe[i]!r}"
        raise _Broken(msg)


def _monotone_in_y(t: Any, s: _Sample) -> None:
    ys = np.linspace(-6.0, 6.0, 2001)
    k = 1 if s.x.ndim == 1 else s.x.shape[1]
    for x0 in (-5.0, -1.3, 0.0, 0.7, 2.5, 5.0):
        g = np.asarray(t.transform(_at(x0, len(ys), k), ys), dtype=np.float64)
        drops = np.diff(g)
        if np.any(drops < -MONOTONE_SLACK):
            i = int(np.argmin(drops))
            msg = f"at x = {x0}, gamma falls from {g[i]!r} at y = {ys[i]:.6g} to {g[i + 1]!r} at y = {ys[i + 1]:.6g}"
            raise _Broken(msg)


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
            raise _Broken(msg)


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
        raise _Broken(msg)


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
        raise _Broken(msg)


def _save_load(t: Any, s: _Sample) -> None:
    from rosenblatt.serialization import load

    with tempfile.TemporaryDirectory() as folder:
        first, second = Path(folder, "first.json"), Path(folder, "second.json")
        t.save(first)
        loaded = load(first)
        if type(loaded) is not type(t):
            msg = f"load gave a {type(loaded).__name__}, not a {type(t).__name__}"
            raise _Broken(msg)
        expected = t.transform(s.x_probe, s.y_probe)
        got = loaded.transform(s.x_probe, s.y_probe)
        if not np.array_equal(expected, got):
            msg = f"gamma of the loaded transform differs by up to {np.max(np.abs(expected - got)):.3g}"
            raise _Broken(msg)
        loaded.save(second)
        if first.read_bytes() != second.read_bytes():
            msg = "saving the loaded transform again writes a different file"
            raise _Broken(msg)


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
        raise _Broken(msg)
    if not np.array_equal(ak.to_numpy(ak.flatten(g)), flat):
        msg = "gamma of jagged input differs from gamma of the same events flat"
        raise _Broken(msg)


def _bad_input(make: Callable[[], Any] | None, t: Any, s: _Sample) -> None:
    def refused(what: str, call: Callable[[], Any], error: type[Exception]) -> None:
        try:
            call()
        except error:
            return
        except Exception as err:
            msg = f"{what} raised {type(err).__name__} ({err}), not {error.__name__}"
            raise _Broken(msg) from err
        msg = f"{what} was accepted"
        raise _Broken(msg)

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


def check_transform(
    transform: type[ConditionalCDFTransform] | ConditionalCDFTransform,
    *,
    x: Any = None,
    y: Any = None,
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
    cls = transform if isinstance(transform, type) else type(transform)
    if not (isinstance(cls, type) and issubclass(cls, ConditionalCDFTransform)):
        msg = (
            f"check_transform takes a ConditionalCDFTransform class or instance, got {transform!r}"
        )
        raise TypeError(msg)
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
    steps.append((INVARIANTS[7], lambda: _save_load(t(), sample)))
    steps.append((INVARIANTS[8], lambda: _awkward(t(), sample)))
    steps.append((INVARIANTS[9], lambda: _bad_input(make, t(), sample)))
    for name, step in steps:
        try:
            step()
        except _Broken as err:
            msg = f"{label}: invariant '{name}' broken: {err}"
            raise AssertionError(msg) from None
        except Exception as err:
            msg = f"{label}: invariant '{name}' broken: {type(err).__name__}: {err}"
            raise AssertionError(msg) from err
