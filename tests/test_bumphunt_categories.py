"""The bump hunt over several categories: the exact profile against pyhf, and what it buys."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

pyhf = pytest.importorskip("pyhf")

from rosenblatt.abcd._category_profile import CategoryProfile
from rosenblatt.abcd._profile import Profile
from rosenblatt.abcd.bumphunt import bump_hunt, local_significance_scan, signal_strength
from rosenblatt.abcd.likelihood import profile_interval, quiet_pyhf
from rosenblatt.abcd.look_elsewhere import global_significance
from rosenblatt.abcd.passfail import passfail_categories_workspace
from rosenblatt.abcd.templates import SignalTemplates, gaussian_templates

pytestmark = pytest.mark.filterwarnings(
    "ignore:jsonschema.RefResolver is deprecated:DeprecationWarning"
)

#: six bins of x on [0, 1], a falling background; two categories keep 7% and 3% of it
EDGES = np.linspace(0.0, 1.0, 7)
BACKGROUND = 2000 * np.diff(-np.exp(-3 * EDGES)) / -np.expm1(-3)
SHARES = (0.07, 0.03)
#: the signal's fraction in each category (the rest fails the lowest cut)
EFFICIENCIES = [0.35, 0.25]
#: a relative non-closure per category and bin (none in some bins)
NONCLOSURE = np.array([[0.05, 0.1, 0.0, 0.2, 0.1, 0.3], [0.1, 0.0, 0.1, 0.2, 0.2, 0.3]])


@pytest.fixture(scope="module")
def spectra() -> tuple[np.ndarray, np.ndarray, SignalTemplates]:
    """Poisson spectra of two categories with an upward fluctuation in the third bin."""
    rng = np.random.default_rng(4)
    failing = rng.poisson(BACKGROUND * (1 - sum(SHARES))).astype(float)
    passing = np.stack([rng.poisson(BACKGROUND * share) for share in SHARES]).astype(float)
    passing[:, 2] += [4.0, 3.0]
    templates = gaussian_templates(
        EDGES, [0.3, 0.5], 0.08, signal_yield=30.0, efficiency=EFFICIENCIES
    )
    return passing, failing, templates


def _pyhf_fits(workspace) -> tuple[float, float]:
    """pyhf's ``q0`` and best-fit ``mu`` (``mu >= 0``) on a workspace, at a tight tolerance."""
    model = workspace.model()
    data = workspace.data(model)
    options = {
        "par_bounds": model.config.suggested_bounds(),
        "fixed_params": model.config.suggested_fixed(),
        "return_fitted_val": True,
        "tolerance": 1e-12,
    }
    _, null = pyhf.infer.mle.fixed_poi_fit(0.0, data, model, **options)
    best, free = pyhf.infer.mle.fit(data, model, **options)
    return max(float(null - free), 0.0), float(best[model.config.poi_index])


def _pyhf_limits(workspace) -> tuple[float, np.ndarray]:
    """pyhf's observed and expected CLs limits, its root search at a tight tolerance."""
    model = workspace.model()
    data = workspace.data(model)
    high = model.config.suggested_bounds()[model.config.poi_index][1]
    observed, expected = pyhf.infer.intervals.upper_limits.toms748_scan(
        data, model, 1e-2 * high, high, level=0.05, rtol=1e-10
    )
    return float(observed), np.asarray(expected, dtype=float)


def _workspace(passing, failing, templates, index, nonclosure=None):
    with quiet_pyhf():
        return passfail_categories_workspace(
            failing,
            list(passing),
            list(templates.passing[index]),
            templates.failing[index],
            nonclosure=None if nonclosure is None else list(nonclosure),
        )


@pytest.mark.parametrize("nonclosure", [None, NONCLOSURE], ids=["plain", "nonclosure"])
def test_q0_and_mu_of_two_categories_are_pyhfs(spectra, nonclosure) -> None:
    """The exact profile of K = 2 categories against pyhf's fits of the categories' workspace."""
    passing, failing, templates = spectra
    hunt = bump_hunt(passing, failing, EDGES, templates, nonclosure=nonclosure, limits="none")
    assert hunt.q0.max() > 0.5
    for index in range(templates.masses.size):
        workspace = _workspace(passing, failing, templates, index, nonclosure)
        with quiet_pyhf():
            q0, mu_hat = _pyhf_fits(workspace)
        assert hunt.q0[index] == pytest.approx(q0, rel=1e-8, abs=1e-8)
        assert hunt.mu_hat[index] == pytest.approx(mu_hat, rel=1e-4, abs=1e-4)


def _limits_are_pyhfs(spectra, nonclosure) -> None:
    passing, failing, templates = spectra
    hunt = bump_hunt(passing, failing, EDGES, templates, nonclosure=nonclosure)
    with quiet_pyhf():
        observed, expected = _pyhf_limits(_workspace(passing, failing, templates, 1, nonclosure))
    assert hunt.observed_limit[1] == pytest.approx(observed, rel=1e-5)
    np.testing.assert_allclose(hunt.expected_limits[1], expected, rtol=1e-5)


def test_the_cls_limits_of_two_categories_are_pyhfs(spectra) -> None:
    _limits_are_pyhfs(spectra, None)


@pytest.mark.slow
def test_the_cls_limits_of_two_categories_with_nonclosure_are_pyhfs(spectra) -> None:
    """pyhf's CLs crosses the level within 2e-5 of each limit (its root search takes minutes).

    The observed CLs about the observed limit, and the expected CLs of each
    band about that band's limit, from :func:`pyhf.infer.hypotest`.
    """
    passing, failing, templates = spectra
    hunt = bump_hunt(passing, failing, EDGES, templates, nonclosure=NONCLOSURE)
    workspace = _workspace(passing, failing, templates, 1, NONCLOSURE)
    limits = [hunt.observed_limit[1], *hunt.expected_limits[1]]
    with quiet_pyhf():
        model = workspace.model()
        data = workspace.data(model)
        for index, limit in enumerate(limits):
            below, above = (
                pyhf.infer.hypotest(limit * factor, data, model, return_expected_set=True)
                for factor in (1 - 2e-5, 1 + 2e-5)
            )
            if index == 0:
                cls_below, cls_above = float(below[0]), float(above[0])
            else:
                cls_below, cls_above = float(below[1][index - 1]), float(above[1][index - 1])
            assert cls_below > 0.05 > cls_above


def test_the_signal_strength_of_two_categories_equals_pyhfs_profile(spectra) -> None:
    passing, failing, templates = spectra
    for nonclosure in (None, NONCLOSURE):
        s_pass, s_fail = templates.passing[1], templates.failing[1]
        mu, low, high = signal_strength(passing, failing, s_pass, s_fail, nonclosure=nonclosure)
        with quiet_pyhf():
            expected = profile_interval(_workspace(passing, failing, templates, 1, nonclosure))
        assert low[0] < 0.0 < mu[0] < high[0]
        np.testing.assert_allclose([mu[0], low[0], high[0]], expected, atol=2e-3)


def test_many_data_sets_of_categories_at_once_equal_each_alone(spectra) -> None:
    passing, failing, templates = spectra
    rng = np.random.default_rng(2)
    many_pass = rng.poisson(passing, (3, *passing.shape)).astype(float)
    many_fail = rng.poisson(failing, (3, failing.size)).astype(float)
    ratios = [0.07 / 0.9, 0.03 / 0.9]
    s_pass, s_fail = templates.passing[1], templates.failing[1]
    together = np.stack(signal_strength(many_pass, many_fail, s_pass, s_fail, ratio=ratios))
    scans = local_significance_scan(
        many_pass, many_fail, templates, ratio=ratios, nonclosure=NONCLOSURE
    )
    assert scans.shape == (3, templates.masses.size)
    for i in range(3):
        alone = np.stack(signal_strength(many_pass[i], many_fail[i], s_pass, s_fail, ratio=ratios))
        np.testing.assert_allclose(together[:, i], alone[:, 0], rtol=1e-8, atol=1e-10)
        hunt = bump_hunt(
            many_pass[i],
            many_fail[i],
            EDGES,
            templates,
            ratio=ratios,
            nonclosure=NONCLOSURE,
            limits="none",
        )
        np.testing.assert_allclose(scans[i], hunt.local_z, rtol=1e-7, atol=1e-7)


def test_one_category_gives_the_numbers_of_one_cut(spectra) -> None:
    """A single category is routed to the one-cut profile: the same numbers, bit for bit."""
    passing, failing, _ = spectra
    single = gaussian_templates(EDGES, [0.3, 0.5], 0.08, signal_yield=30.0, efficiency=0.35)
    category = gaussian_templates(EDGES, [0.3, 0.5], 0.08, signal_yield=30.0, efficiency=[0.35])
    assert category.passing.shape == (2, 1, 6)
    np.testing.assert_array_equal(category.passing[:, 0], single.passing)
    for nonclosure in (None, NONCLOSURE[:1]):
        one = bump_hunt(
            passing[0],
            failing,
            EDGES,
            single,
            nonclosure=None if nonclosure is None else nonclosure[0],
        )
        many = bump_hunt(passing[:1], failing, EDGES, category, nonclosure=nonclosure)
        for name in ("q0", "mu_hat", "observed_limit", "expected_limits"):
            np.testing.assert_array_equal(getattr(many, name), getattr(one, name))
    np.testing.assert_array_equal(
        np.stack(signal_strength(passing[:1], failing, category.passing[1], single.failing[1])),
        np.stack(signal_strength(passing[0], failing, single.passing[1], single.failing[1])),
    )
    toys_one = global_significance(passing[0], failing, EDGES, single, n_toys=10, seed=1)
    toys_many = global_significance(passing[:1], failing, EDGES, category, n_toys=10, seed=1)
    np.testing.assert_array_equal(toys_many.toys_max_z, toys_one.toys_max_z)


@pytest.mark.parametrize("nonclosure", [None, NONCLOSURE[0]], ids=["plain", "nonclosure"])
def test_the_general_profile_of_one_category_is_the_quadratics(spectra, nonclosure) -> None:
    """The K-category profile (a search per bin) equals the one-cut closed form to 1e-10."""
    passing, failing, templates = spectra
    s_pass = templates.passing[1, 0]
    s_fail = templates.failing[1]
    ratio = float(passing[0].sum() / failing.sum())
    quadratic = Profile(failing, passing[0], ratio, nonclosure)
    general = CategoryProfile(
        failing, passing[:1], [ratio], None if nonclosure is None else nonclosure[None]
    )
    mu, best = quadratic.free(s_pass, s_fail)
    mu_k, best_k = general.free(s_pass[None], s_fail)
    assert mu_k[0] == pytest.approx(mu[0], rel=1e-10)
    assert best_k[0] == pytest.approx(best[0], rel=1e-10, abs=1e-10)
    for value in (0.0, 0.5 * mu[0], 3.0 * mu[0], -0.2 * mu[0]):
        at = np.array([value])
        assert general.conditional(at, s_pass[None], s_fail)[0] == pytest.approx(
            quadratic.conditional(at, s_pass, s_fail)[0], rel=1e-10, abs=1e-10
        )
    for mine, theirs in zip(general.null_expected(), quadratic.null_expected(), strict=True):
        if theirs is None:
            assert mine is None
        else:
            np.testing.assert_allclose(np.reshape(mine, np.shape(theirs)), theirs, rtol=1e-10)


#: 24 bins, a falling background, a resonance of resolution 0.04 at 0.5
WIDE_EDGES = np.linspace(0.0, 1.0, 25)
WIDE_BACKGROUND = 40000 * np.diff(-np.exp(-3 * WIDE_EDGES)) / -np.expm1(-3)


def test_categories_find_a_spread_resonance_more_significant_than_the_first_alone() -> None:
    """A signal in two categories of different purity: both together see it better than one."""
    shape = np.diff(stats.norm.cdf(WIDE_EDGES, 0.5, 0.04))
    shares = np.array([0.08, 0.01])
    efficiencies = [0.3, 0.3]
    signal = 100.0
    failing = WIDE_BACKGROUND * (1 - shares.sum()) + signal * 0.4 * shape
    passing = WIDE_BACKGROUND * shares[:, None] + signal * np.array(efficiencies)[:, None] * shape
    masses = np.linspace(0.3, 0.7, 5)
    both = gaussian_templates(
        WIDE_EDGES, masses, 0.04, signal_yield=signal, efficiency=efficiencies
    )
    first = gaussian_templates(
        WIDE_EDGES, masses, 0.04, signal_yield=signal, efficiency=efficiencies[0]
    )
    together = bump_hunt(passing, failing, WIDE_EDGES, both, limits="expected median")
    alone = bump_hunt(passing[0], failing, WIDE_EDGES, first, limits="expected median")
    peak = int(np.argmin(np.abs(masses - 0.5)))
    assert together.best == peak
    assert together.mu_hat[peak] == pytest.approx(1.0, rel=1e-6)
    assert together.local_z[peak] > alone.local_z[peak] + 0.5
    assert together.expected_limits[peak, 2] < alone.expected_limits[peak, 2]
    # on Poisson spectra too, the injected resonance stands out at its mass
    rng = np.random.default_rng(7)
    hunt = bump_hunt(
        rng.poisson(passing).astype(float),
        rng.poisson(failing).astype(float),
        WIDE_EDGES,
        both,
        limits="none",
    )
    assert hunt.best == peak
    assert hunt.local_z[peak] > 3.0


def test_the_global_significance_of_categories(spectra) -> None:
    passing, failing, templates = spectra
    hunt = bump_hunt(passing, failing, EDGES, templates, nonclosure=NONCLOSURE, limits="none")
    found = global_significance(
        passing, failing, EDGES, templates, n_toys=40, seed=3, nonclosure=NONCLOSURE
    )
    assert found.local_z == pytest.approx(float(hunt.local_z.max()))
    assert found.toys_max_z.shape == (40,)
    assert 0.0 < found.p_toys < 1.0
    assert found.p_toys >= found.local_p - 3 * found.p_toys_error


def test_inputs_of_categories_are_checked(spectra) -> None:
    passing, failing, templates = spectra
    with pytest.raises(ValueError, match="categories"):
        bump_hunt(passing[0], failing, EDGES, templates)
    with pytest.raises(ValueError, match="categories"):
        bump_hunt(np.vstack([passing, passing[:1]]), failing, EDGES, templates)
    with pytest.raises(ValueError, match="nonclosure"):
        bump_hunt(passing, failing, EDGES, templates, nonclosure=NONCLOSURE[:1])
    with pytest.raises(ValueError, match="ratio"):
        bump_hunt(passing, failing, EDGES, templates, ratio=[0.1])
    with pytest.raises(ValueError, match="more than 1"):
        gaussian_templates(EDGES, [0.5], 0.1, efficiency=[0.7, 0.6])
    with pytest.raises(ValueError, match="shape"):
        SignalTemplates(
            masses=np.array([0.5]),
            edges=EDGES,
            passing=np.ones((1, 2, 5)),
            failing=np.zeros((1, 6)),
        )


@pytest.mark.slow
def test_the_pyhf_method_on_categories_gives_the_same_results(spectra) -> None:
    passing, failing, templates = spectra
    one = SignalTemplates(
        masses=templates.masses[1:],
        edges=EDGES,
        passing=templates.passing[1:],
        failing=templates.failing[1:],
    )
    profile = bump_hunt(passing, failing, EDGES, one)
    direct = bump_hunt(passing, failing, EDGES, one, method="pyhf")
    assert direct.method == "pyhf"
    np.testing.assert_allclose(direct.q0, profile.q0, rtol=1e-3, atol=1e-6)
    np.testing.assert_allclose(direct.observed_limit, profile.observed_limit, rtol=1e-4)
    np.testing.assert_allclose(direct.expected_limits, profile.expected_limits, rtol=1e-4)


def test_an_empty_category_holds_its_ratio_at_the_bound() -> None:
    """A category without passing events (a pseudo-experiment's): its ratio at pyhf's bound."""
    rng = np.random.default_rng(5)
    failing = rng.poisson(BACKGROUND * 0.9).astype(float)
    passing = np.stack([rng.poisson(BACKGROUND * 0.08), np.zeros(BACKGROUND.size)])
    passing[0, 2:4] += 10.0
    ratios = [0.08 / 0.9, 0.02 / 0.9]
    templates = gaussian_templates(EDGES, [0.5], 0.08, signal_yield=30.0, efficiency=[0.5, 0.0])
    # the signal passes into the first category only; the second holds no event
    z = local_significance_scan(passing, failing, templates, ratio=ratios)
    with quiet_pyhf():
        workspace = passfail_categories_workspace(
            failing, list(passing), list(templates.passing[0]), templates.failing[0], ratios=ratios
        )
        q0, mu_hat = _pyhf_fits(workspace)
    assert q0 > 1.0
    assert mu_hat > 0
    assert z[0] ** 2 == pytest.approx(q0, rel=1e-6, abs=1e-8)
