"""The bump hunt: a resonance searched for on a grid of masses with the pass/fail fit.

For each mass hypothesis a signal template in bins of ``x`` (of
:mod:`~rosenblatt.abcd.templates`: a Gaussian of a given resolution,
:func:`~rosenblatt.abcd.templates.gaussian_templates`, or histograms of the
signal per mass point, :func:`~rosenblatt.abcd.templates.signal_templates`)
enters the pass/fail model of :mod:`~rosenblatt.abcd.passfail`; :func:`bump_hunt`
gives per hypothesis the local significance (the discovery statistic ``q0``,
asymptotic) and the CLs upper limit on the signal strength ``mu`` with its
expected band, :func:`local_significance_scan` the local significance alone of
many data sets at once, and :func:`signal_strength` the best-fit ``mu`` with
its profile-likelihood interval. The probability of so large a local excess
anywhere on the grid is :func:`~rosenblatt.abcd.look_elsewhere.global_significance`'s.

Several cuts as disjoint categories
(:func:`~rosenblatt.abcd.passfail.passfail_categories_workspace`) are hunted
in together for one ``mu``: passing spectra of shape ``(K, n)`` and
templates whose passing yields have one row per category (shape
``(m, K, n)``). Each bin of ``x`` has one failing background, each category
its own transfer ratio and non-closure.

Two ways to compute the same asymptotic results:

- ``method="profile"`` (the default) profiles the likelihood exactly: at
  fixed ``mu`` and transfer ratio ``R`` the background of each bin
  maximising ``Pois(f | b + mu s_f) Pois(p | R b + mu s_p)`` is the positive
  root of a quadratic, so a fit is a minimisation over ``(mu, log R)`` alone,
  with its gradient in closed form. A non-closure per bin (the workspace's
  ``shapesys``: a factor ``g`` of the passing background with a Poisson
  constraint) adds a one-dimensional search per bin for ``g``, the
  background at each ``g`` still the quadratic's root. The test statistics
  and the CLs values are those of pyhf's asymptotic calculator (``q0``;
  ``qtilde`` with its Asimov data set generated at the background-only fit to
  the data), and a scan of many masses, or of many pseudo-experiments, takes
  seconds. Over categories each bin's background is a one-dimensional root
  (the free non-closure factors in closed form at each background) and the
  transfer ratios are fitted by Newton steps with the profiled likelihood's
  Hessian in closed form.
- ``method="pyhf"`` calls :func:`pyhf.infer.hypotest` and
  :func:`pyhf.infer.intervals.upper_limits.upper_limit` on each mass's
  :func:`~rosenblatt.abcd.passfail.passfail_workspace` (over categories
  :func:`~rosenblatt.abcd.passfail.passfail_categories_workspace`; a
  non-closure per bin allowed); a fit of a model with one free parameter per bin takes about a
  second, an upper limit minutes.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

from rosenblatt.abcd._category_profile import CategoryProfile
from rosenblatt.abcd._hunt_inputs import (
    category_nonclosure,
    category_ratios,
    cut_ratio,
    first_category,
    hunt_likelihood,
    hunt_spectra,
    row_nonclosure,
    single_cut,
)
from rosenblatt.abcd._profile import BISECTIONS, Profile, increasing_root
from rosenblatt.abcd.templates import SignalTemplates
from rosenblatt.typing import ArrayLike, FloatArray

__all__ = [
    "BumpHunt",
    "bump_hunt",
    "local_significance_scan",
    "signal_strength",
]


#: the sigma of the expected band, in the order of :attr:`BumpHunt.expected_limits`
BAND = (-2, -1, 0, 1, 2)
METHODS = ("profile", "pyhf")
#: the limits :func:`bump_hunt` computes (``limits``): all of them, the median expected
#: limit alone, or none (the significance alone)
LIMITS = ("all", "expected median", "none")
#: relative tolerance of an upper limit's root search
LIMIT_RTOL = 1e-6
#: where ``method="pyhf"`` starts its limit scan, as a fraction of the POI's upper bound
LIMIT_SCAN_START = 1e-2


def _sqrt_pos(value: float) -> float:
    return math.sqrt(max(value, 0.0))


def _cls(q: float, q_asimov: float) -> float:
    """pyhf's asymptotic ``CLs`` of ``qtilde`` (normal base distribution)."""
    from scipy import stats

    sq, sq_a = _sqrt_pos(q), _sqrt_pos(q_asimov)
    if sq_a == 0.0:
        return 1.0
    teststat = sq - sq_a if sq <= sq_a else (q - q_asimov) / (2.0 * sq_a)
    return float(stats.norm.sf(teststat + sq_a) / stats.norm.sf(teststat))


def _root(function: Any, start: float) -> float:
    """The ``mu > 0`` where the increasing ``function`` crosses 0, bracketed from ``start``."""
    from scipy import optimize

    low, high = 0.5 * start, start
    for _ in range(60):
        if function(high) > 0:
            break
        low, high = high, 2.0 * high
    else:
        msg = "no upper limit found: the signal hardly changes the likelihood"
        raise ValueError(msg)
    while function(low) > 0 and low > 1e-12 * start:
        high, low = low, 0.5 * low
    return float(optimize.brentq(function, low, high, xtol=1e-12 * start, rtol=LIMIT_RTOL))


def _profile_hypothesis(
    profile: Profile | CategoryProfile,
    s_pass: FloatArray,
    s_fail: FloatArray,
    level: float,
    limits: str = "all",
) -> tuple[float, float, float, FloatArray]:
    """``q0``, ``mu_hat``, the observed limit and the expected band of one hypothesis.

    The limits that ``limits`` (one of ``LIMITS``) leaves out are NaN.
    """
    from scipy import stats

    mu_fit, best_fit = profile.free(s_pass, s_fail)
    mu_hat, best = float(mu_fit[0]), float(best_fit[0])
    null = float(profile.conditional(np.zeros(1), s_pass, s_fail)[0])
    q0 = max(null - best, 0.0) if mu_hat > 0 else 0.0
    observed, expected = math.nan, np.full(len(BAND), math.nan)
    if limits == "none":
        return q0, mu_hat, observed, expected
    ratio, b = profile.background_only()
    asimov = profile.asimov()
    scale = math.sqrt(float(ratio[0] * b.sum()) + 1.0) / s_pass.sum()

    def q_asimov(mu: float) -> float:
        return float(asimov.conditional(np.array([mu]), s_pass, s_fail)[0])

    def q_tilde(mu: float) -> float:
        if mu_hat > mu:
            return 0.0
        return max(float(profile.conditional(np.array([mu]), s_pass, s_fail)[0]) - best, 0.0)

    if limits == "all":
        observed = _root(lambda mu: level - _cls(q_tilde(mu), q_asimov(mu)), max(mu_hat, scale))
    for index, n_sigma in enumerate(BAND):
        if limits != "all" and n_sigma != 0:
            continue
        # the expected CLs at -n_sigma of the background-only distribution equals level
        target = float(stats.norm.isf(level * stats.norm.sf(-n_sigma))) + n_sigma
        expected[index] = _root(lambda mu, t=target: _sqrt_pos(q_asimov(mu)) - t, 2.0 * scale)
    return q0, mu_hat, observed, expected


def _pyhf_hypothesis(workspace: Any, level: float) -> tuple[float, float, float, FloatArray]:
    import pyhf

    model = workspace.model()
    data = workspace.data(model)
    q0, (_, free) = pyhf.infer.test_statistics.q0(
        0.0,
        data,
        model,
        model.config.suggested_init(),
        model.config.suggested_bounds(),
        model.config.suggested_fixed(),
        return_fitted_pars=True,
    )
    # CLs is 0/0 at mu = 0: the scan starts above it (pyhf halves the start until it brackets)
    low, high = model.config.suggested_bounds()[model.config.poi_index]
    observed, expected = pyhf.infer.intervals.upper_limits.toms748_scan(
        data, model, max(low, LIMIT_SCAN_START * high), high, level=level, rtol=1e-4
    )
    return (
        float(q0),
        float(np.asarray(free)[model.config.poi_index]),
        float(observed),
        np.asarray(expected, dtype=np.float64),
    )


@dataclasses.dataclass(frozen=True)
class BumpHunt:
    """The local significance and the CLs limit per mass hypothesis.

    Attributes
    ----------
    masses
        The mass hypotheses.
    q0
        The discovery test statistic of each (0 where the best fit has no signal).
    local_p, local_z
        The local p-value ``1 - Phi(sqrt(q0))`` and significance ``sqrt(q0)``.
    mu_hat
        The best-fit signal strength (at least 0).
    observed_limit
        The observed CLs upper limit on ``mu`` at confidence ``1 - level``.
    expected_limits
        The expected limits, shape ``(m, 5)``: at -2, -1, 0, +1 and +2 standard
        deviations of the background-only distribution (column 2 the median).
        The limits that :func:`bump_hunt`'s ``limits`` left out are NaN.
    level
        The CLs level (0.05 for 95% limits).
    method
        ``"profile"`` or ``"pyhf"``.
    """

    masses: FloatArray
    q0: FloatArray
    local_p: FloatArray
    local_z: FloatArray
    mu_hat: FloatArray
    observed_limit: FloatArray
    expected_limits: FloatArray
    level: float
    method: str

    @property
    def best(self) -> int:
        """The index of the hypothesis of the largest local significance."""
        return int(np.argmax(self.local_z))

    def to_dict(self) -> dict[str, Any]:
        """The results as JSON-compatible data (lists of floats)."""
        out: dict[str, Any] = {
            name: np.asarray(getattr(self, name)).tolist()
            for name in ("masses", "q0", "local_p", "local_z", "mu_hat", "observed_limit")
        }
        out["expected_limits"] = {
            f"{sigma:+d}" if sigma else "median": self.expected_limits[:, index].tolist()
            for index, sigma in enumerate(BAND)
        }
        out["level"] = self.level
        out["method"] = self.method
        return out


def bump_hunt(
    pass_counts: ArrayLike,
    fail_counts: ArrayLike,
    edges: ArrayLike,
    templates: SignalTemplates,
    *,
    level: float = 0.05,
    method: str = "profile",
    ratio: float | ArrayLike | None = None,
    nonclosure: ArrayLike | None = None,
    limits: str = "all",
) -> BumpHunt:
    """The local significance and the CLs upper limit of each mass hypothesis.

    With several cuts as disjoint categories (``pass_counts`` of shape
    ``(K, n)``, the templates' passing yields ``(m, K, n)``) the likelihood
    is that of :func:`~rosenblatt.abcd.passfail.passfail_categories_workspace`:
    one failing background per bin, a transfer ratio per category, one
    ``mu``; one category given so gives the numbers of one cut.

    Parameters
    ----------
    pass_counts, fail_counts
        The observed spectra in bins of ``x``, passing and failing the cut
        (passing: one row per category, shape ``(K, n)``, for several).
    edges
        Their bin edges (those of ``templates``).
    templates
        The signal per mass hypothesis
        (:func:`~rosenblatt.abcd.templates.gaussian_templates`,
        :func:`~rosenblatt.abcd.templates.signal_templates`).
    level
        The CLs level of the limits (0.05: 95% confidence).
    method
        ``"profile"`` (the exact profile of the likelihood) or ``"pyhf"``
        (pyhf's ``q0`` and ``upper_limit`` on each
        :func:`~rosenblatt.abcd.passfail.passfail_workspace`, or with
        categories :func:`~rosenblatt.abcd.passfail.passfail_categories_workspace`).
    ratio
        The expected transfer ratio, whose bounds (``TRANSFER_BOUNDS`` times
        it) bound the fitted one (default: ``sum(pass) / sum(fail)``); with
        categories, one per category.
    nonclosure
        Relative non-closure per bin of the passing background: the relative
        uncertainty of a factor per bin with the Poisson constraint of the
        workspace's ``shapesys`` modifier (0 or none: no factor in that bin);
        with categories, one row per category (a row ``None``: none).
    limits
        The limits computed: ``"all"`` (the observed limit and
        the expected band), ``"expected median"`` (the median expected limit
        alone) or ``"none"`` (the significance alone: each limit is a root
        search of several fits). Those left out are NaN. Method ``"pyhf"``
        computes them together: ``"all"`` only.

    Returns
    -------
    BumpHunt

    Examples
    --------
    >>> import numpy as np
    >>> from rosenblatt.abcd.bumphunt import bump_hunt
    >>> from rosenblatt.abcd.templates import gaussian_templates
    >>> edges = np.linspace(0.0, 1.0, 11)
    >>> fail = np.array([950, 800, 700, 600, 500, 430, 360, 300, 260, 220])
    >>> passed = np.array([50, 42, 37, 32, 26, 23, 19, 16, 14, 12])
    >>> templates = gaussian_templates(edges, [0.3, 0.5, 0.7], 0.05, signal_yield=10.0)
    >>> hunt = bump_hunt(passed, fail, edges, templates)
    >>> hunt.expected_limits.shape
    (3, 5)
    """
    if method not in METHODS:
        msg = f"method must be one of {METHODS}, got {method!r}"
        raise ValueError(msg)
    if not 0 < level < 1:
        msg = f"level must be in (0, 1), got {level!r}"
        raise ValueError(msg)
    if limits not in LIMITS or (method == "pyhf" and limits != "all"):
        msg = f"limits must be one of {LIMITS} ('all' with method 'pyhf'), got {limits!r}"
        raise ValueError(msg)
    failing, passing = hunt_spectra(pass_counts, fail_counts, edges, templates)
    if passing.ndim == 2 and passing.shape[0] == 1:
        passing, templates = passing[0], single_cut(templates)
        ratio, nonclosure = first_category(ratio, nonclosure)
    rows = []
    if method == "profile":
        profile = hunt_likelihood(failing, passing, ratio, nonclosure)[0]
        for s_pass, s_fail in zip(templates.passing, templates.failing, strict=True):
            rows.append(_profile_hypothesis(profile, s_pass, s_fail, level, limits))
    else:
        from rosenblatt.abcd.likelihood import quiet_pyhf

        with quiet_pyhf():
            for s_pass, s_fail in zip(templates.passing, templates.failing, strict=True):
                workspace = _workspace(failing, passing, s_pass, s_fail, ratio, nonclosure)
                rows.append(_pyhf_hypothesis(workspace, level))
    return _collect(templates.masses, rows, level, method)


def _workspace(
    failing: FloatArray,
    passing: FloatArray,
    s_pass: FloatArray,
    s_fail: FloatArray,
    ratio: Any,
    nonclosure: Any,
) -> Any:
    """The pyhf workspace of one hypothesis: one cut, or with ``passing`` ``(K, n)`` categories."""
    from rosenblatt.abcd.passfail import passfail_categories_workspace, passfail_workspace

    if passing.ndim == 1:
        return passfail_workspace(
            failing, passing, s_pass, s_fail, ratio=ratio, nonclosure=nonclosure
        )
    ratios = category_ratios(failing, passing, ratio)
    relative = category_nonclosure(nonclosure, passing.shape[0], failing.size)
    return passfail_categories_workspace(
        failing,
        list(passing),
        list(s_pass),
        s_fail,
        ratios=ratios.tolist(),
        nonclosure=None if relative is None else list(relative),
    )


def _collect(masses: FloatArray, rows: list[Any], level: float, method: str) -> BumpHunt:
    from scipy import stats

    q0 = np.array([row[0] for row in rows])
    z = np.sqrt(np.maximum(q0, 0.0))
    return BumpHunt(
        masses=masses,
        q0=q0,
        local_p=stats.norm.sf(z),
        local_z=z,
        mu_hat=np.array([row[1] for row in rows]),
        observed_limit=np.array([row[2] for row in rows]),
        expected_limits=np.array([row[3] for row in rows]),
        level=level,
        method=method,
    )


def local_significance_scan(
    pass_counts: ArrayLike,
    fail_counts: ArrayLike,
    templates: SignalTemplates,
    *,
    ratio: float | ArrayLike | None = None,
    nonclosure: ArrayLike | None = None,
    aux: ArrayLike | None = None,
) -> FloatArray:
    """The local significance ``sqrt(q0)`` of each mass hypothesis (the exact profile).

    The part of :func:`bump_hunt` that
    :func:`~rosenblatt.abcd.look_elsewhere.global_significance` repeats on
    the pseudo-experiments: spectra of shape ``(n,)`` give one scan, shape
    ``(k, n)`` one scan per row, ``(k, masses)``. ``nonclosure`` is as for
    :func:`bump_hunt`, or one row per data set (shape ``(k, n)``); ``aux``, the auxiliary counts of its constraints per
    row (default ``1 / nonclosure**2``, their nominal value), shape ``(k, n)``.
    With categories (templates of passing shape ``(m, K, n)``) the passing
    spectra have a category axis before the bins: ``(K, n)`` or ``(k, K, n)``,
    as ``aux``; ``ratio`` and ``nonclosure`` are per category.
    """
    if templates.categories is not None:
        return _category_scan(pass_counts, fail_counts, templates, ratio, nonclosure, aux)
    failing = np.atleast_2d(np.asarray(fail_counts, dtype=np.float64))
    passing = np.atleast_2d(np.asarray(pass_counts, dtype=np.float64))
    if failing.shape != passing.shape or failing.shape[1] != templates.passing.shape[1]:
        msg = (
            f"the spectra have shapes {passing.shape} and {failing.shape}, "
            f"the templates {templates.passing.shape[1]} bins"
        )
        raise ValueError(msg)
    relative = row_nonclosure(nonclosure, failing.shape)
    counts = None if aux is None or relative is None else np.asarray(aux, dtype=np.float64)
    profile = Profile(failing, passing, cut_ratio(failing, passing, ratio), relative, counts)
    z = _scan(profile, templates, failing.shape[0])
    return z[0] if np.ndim(fail_counts) == 1 else z


def _scan(profile: Profile | CategoryProfile, templates: SignalTemplates, n: int) -> FloatArray:
    """The local significance of each of ``n`` spectra (rows) at each mass (columns)."""
    null = profile.conditional(np.zeros(n), templates.passing[0], templates.failing[0])
    z = np.empty((n, templates.masses.size))
    for index, (s_pass, s_fail) in enumerate(
        zip(templates.passing, templates.failing, strict=True)
    ):
        mu_hat, best = profile.free(s_pass, s_fail)
        z[:, index] = np.where(mu_hat > 0, np.sqrt(np.maximum(null - best, 0.0)), 0.0)
    return z


def _category_scan(
    pass_counts: ArrayLike,
    fail_counts: ArrayLike,
    templates: SignalTemplates,
    ratio: Any,
    nonclosure: Any,
    aux: ArrayLike | None,
) -> FloatArray:
    """:func:`local_significance_scan` with categories (one, as one cut)."""
    failing = np.atleast_2d(np.asarray(fail_counts, dtype=np.float64))
    given = np.asarray(pass_counts, dtype=np.float64)
    passing = given[None] if given.ndim == 2 else given
    count, bins = templates.passing.shape[1:]
    if passing.shape != (failing.shape[0], count, bins) or failing.shape[1] != bins:
        msg = (
            f"the spectra have shapes {given.shape} and {np.shape(fail_counts)}, the templates "
            f"{count} categories of {bins} bins"
        )
        raise ValueError(msg)
    counts = None if aux is None else np.asarray(aux, dtype=np.float64)
    if count == 1:
        first, relative = first_category(ratio, nonclosure)
        extra = None if counts is None else counts[..., 0, :]
        scan = local_significance_scan(
            passing[:, 0, :],
            failing,
            single_cut(templates),
            ratio=first,
            nonclosure=relative,
            aux=extra,
        )
        return scan[0] if np.ndim(fail_counts) == 1 else scan
    ratios = category_ratios(failing, passing, ratio)
    relative = category_nonclosure(nonclosure, count, bins)
    profile = CategoryProfile(
        failing, passing, ratios, relative, None if relative is None else counts
    )
    z = _scan(profile, templates, failing.shape[0])
    return z[0] if np.ndim(fail_counts) == 1 else z


def signal_strength(
    pass_counts: ArrayLike,
    fail_counts: ArrayLike,
    s_pass: ArrayLike,
    s_fail: ArrayLike,
    *,
    ratio: float | ArrayLike | None = None,
    rise: float = 1.0,
    nonclosure: ArrayLike | None = None,
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """The best-fit signal strength of one hypothesis and its profile-likelihood interval.

    The exact profile of :func:`bump_hunt` with ``mu`` free on both sides of
    zero (a downward fluctuation gives a negative ``mu``), down to where the
    smallest bin of either region would be emptied by the signal; the
    interval's ends are where ``-2 ln L`` rises by ``rise`` above its minimum
    (1: the 68% interval). Spectra of shape ``(n,)`` give one fit, ``(k, n)``
    one per row. With several categories the passing spectra and the passing
    signal have a category axis before the bins: ``(K, n)``, or ``(k, K, n)``.

    Parameters
    ----------
    pass_counts, fail_counts
        The observed spectra in bins of ``x``, passing and failing the cut.
    s_pass, s_fail
        The signal's yields per bin at ``mu = 1``, passing and failing: shape
        ``(n,)``, or ``(k, n)`` for a signal of its own per data set.
    ratio
        As for :func:`bump_hunt` (default: ``sum(pass) / sum(fail)`` of all
        rows; per category with categories).
    rise
        Rise of ``-2 ln L`` at the interval's ends.
    nonclosure
        As for :func:`bump_hunt`, or one row per data set (shape ``(k, n)``:
        each data set's own simulation's non-closure).

    Returns
    -------
    tuple of numpy.ndarray
        ``(mu_hat, low, high)``, each of shape ``(k,)`` (``(1,)`` for one fit).

    Examples
    --------
    >>> import numpy as np
    >>> from rosenblatt.abcd.bumphunt import signal_strength
    >>> fail = np.full(10, 900.0)
    >>> passed = np.full(10, 100.0) + np.array([0, 0, 0, 0, 30, 0, 0, 0, 0, 0])
    >>> s_pass = np.array([0, 0, 0, 0, 30.0, 0, 0, 0, 0, 0])
    >>> mu, low, high = signal_strength(passed, fail, s_pass, np.zeros(10))
    >>> bool(low[0] < 1.0 < high[0])
    True
    """
    if np.ndim(pass_counts) == np.ndim(fail_counts) + 1:
        return _category_strength(
            pass_counts, fail_counts, s_pass, s_fail, ratio=ratio, rise=rise, nonclosure=nonclosure
        )
    failing = np.atleast_2d(np.asarray(fail_counts, dtype=np.float64))
    passing = np.atleast_2d(np.asarray(pass_counts, dtype=np.float64))
    s_pass = np.asarray(s_pass, dtype=np.float64)
    s_fail = np.asarray(s_fail, dtype=np.float64)
    if (
        failing.shape != passing.shape
        or s_pass.shape != s_fail.shape
        or s_pass.shape not in (failing.shape[1:], failing.shape)
    ):
        msg = (
            f"the spectra have shapes {passing.shape} and {failing.shape}, "
            f"the signal's yields {s_pass.shape} and {s_fail.shape}"
        )
        raise ValueError(msg)
    if not np.all(np.atleast_2d(s_pass).sum(axis=1) + np.atleast_2d(s_fail).sum(axis=1) > 0):
        msg = "the signal has no yield"
        raise ValueError(msg)
    if not rise > 0:
        msg = f"rise must be positive, got {rise!r}"
        raise ValueError(msg)
    profile = Profile(
        failing,
        passing,
        cut_ratio(failing, passing, ratio),
        row_nonclosure(nonclosure, failing.shape),
    )
    with np.errstate(divide="ignore", invalid="ignore"):
        room = np.minimum(
            np.where(s_pass > 0, passing / s_pass, np.inf),
            np.where(s_fail > 0, failing / s_fail, np.inf),
        ).min(axis=1)
    floor = -0.99 * np.minimum(room, 1e6)
    ratio_0, b = profile.background_only()
    step = np.sqrt(ratio_0 * b.sum(axis=1) + 1.0) / np.maximum(
        np.atleast_2d(s_pass).sum(axis=1), 1e-12
    )
    return _interval(profile, s_pass, s_fail, floor, step, rise)


def _category_strength(
    pass_counts: ArrayLike,
    fail_counts: ArrayLike,
    s_pass: ArrayLike,
    s_fail: ArrayLike,
    *,
    ratio: Any,
    rise: float,
    nonclosure: Any,
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """:func:`signal_strength` with categories: passing spectra and signal ``(..., K, n)``."""
    failing = np.atleast_2d(np.asarray(fail_counts, dtype=np.float64))
    given = np.asarray(pass_counts, dtype=np.float64)
    passing = given[None] if given.ndim == 2 else given
    s_pass = np.asarray(s_pass, dtype=np.float64)
    s_fail = np.asarray(s_fail, dtype=np.float64)
    if (
        passing.shape[::2] != failing.shape
        or s_pass.shape not in (passing.shape[1:], passing.shape)
        or s_fail.shape != s_pass.shape[:-2] + s_pass.shape[-1:]
    ):
        msg = (
            f"the spectra have shapes {given.shape} and {np.shape(fail_counts)}, "
            f"the signal's yields {s_pass.shape} and {s_fail.shape}"
        )
        raise ValueError(msg)
    if passing.shape[1] == 1:
        first, relative = first_category(ratio, nonclosure)
        return signal_strength(
            passing[:, 0, :] if given.ndim == 3 else passing[0, 0],
            fail_counts,
            s_pass[..., 0, :],
            s_fail,
            ratio=first,
            rise=rise,
            nonclosure=relative,
        )
    total = np.atleast_1d(np.sum(s_pass, axis=(-2, -1)) + np.sum(s_fail, axis=-1))
    if not np.all(total > 0):
        msg = "the signal has no yield"
        raise ValueError(msg)
    if not rise > 0:
        msg = f"rise must be positive, got {rise!r}"
        raise ValueError(msg)
    relative = category_nonclosure(nonclosure, passing.shape[1], failing.shape[1])
    profile = CategoryProfile(failing, passing, category_ratios(failing, passing, ratio), relative)
    with np.errstate(divide="ignore", invalid="ignore"):
        room = np.minimum(
            np.where(s_pass > 0, passing / s_pass, np.inf).min(axis=1),
            np.where(s_fail > 0, failing / s_fail, np.inf),
        ).min(axis=1)
    floor = -0.99 * np.minimum(room, 1e6)
    ratio_0, b = profile.background_only()
    passing_signal = np.atleast_1d(np.sum(s_pass, axis=(-2, -1)))
    step = np.sqrt(ratio_0 * b.sum(axis=1) + 1.0) / np.maximum(passing_signal, 1e-12)
    return _interval(profile, s_pass, s_fail, floor, step, rise)


def _interval(
    profile: Profile | CategoryProfile,
    s_pass: FloatArray,
    s_fail: FloatArray,
    floor: FloatArray,
    step: FloatArray,
    rise: float,
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """``mu`` above ``floor`` at the profile's minimum and where it rises by ``rise``."""

    def conditional(mu: FloatArray) -> FloatArray:
        return profile.deviance(mu, profile.transfer(mu, s_pass, s_fail), s_pass, s_fail)[0]

    def slope(mu: FloatArray) -> FloatArray:
        return profile.deviance(mu, profile.transfer(mu, s_pass, s_fail), s_pass, s_fail)[1]

    high = np.abs(floor) + step
    for _ in range(BISECTIONS):
        short = slope(high) < 0
        if not np.any(short):
            break
        high = np.where(short, 4.0 * high, high)
    mu_hat = increasing_root(slope, floor, high)
    best = conditional(mu_hat)

    def above(mu: FloatArray) -> FloatArray:
        return conditional(mu) - best - rise

    top = mu_hat + step
    for _ in range(BISECTIONS):
        short = above(top) < 0
        if not np.any(short):
            break
        top = np.where(short, mu_hat + 4.0 * (top - mu_hat), top)
    upper = increasing_root(above, mu_hat, top)
    lower = -increasing_root(lambda m: above(-m), -mu_hat, -floor)
    return mu_hat, lower, upper
