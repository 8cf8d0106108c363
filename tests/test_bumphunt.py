"""The bump hunt: templates, local significance and limits against pyhf, the look-elsewhere effect."""

from __future__ import annotations

import json
import logging
import warnings

import numpy as np
import pytest
from scipy import stats

pyhf = pytest.importorskip("pyhf")

from rosenblatt.abcd.bumphunt import BumpHunt, bump_hunt, local_significance_scan, signal_strength
from rosenblatt.abcd.likelihood import profile_interval, quiet_pyhf
from rosenblatt.abcd.look_elsewhere import global_significance, upcrossings
from rosenblatt.abcd.passfail import passfail_workspace
from rosenblatt.abcd.templates import gaussian_templates, signal_templates

pytestmark = pytest.mark.filterwarnings(
    "ignore:jsonschema.RefResolver is deprecated:DeprecationWarning"
)

#: 24 bins of x on [0, 1], a falling background; the cut keeps EPS of it in every bin
EDGES = np.linspace(0.0, 1.0, 25)
BACKGROUND = 40000 * np.diff(-np.exp(-3 * EDGES)) / -np.expm1(-3)
EPS = 0.05
#: the mass grid, the resonance's resolution and the injected mass (on the grid)
MASSES = np.linspace(0.2, 0.8, 9)
RESOLUTION = 0.04
INJECTED = 0.5
#: the injected signal's events passing and failing the cut (mu = 87.5 of the templates below)
SIGNAL_PASS, SIGNAL_FAIL = 70.0, 17.5
#: the templates' signal per unit of mu passing the cut
EFFICIENCY = 0.8

#: a small model for the comparisons with pyhf (pyhf's fits take seconds with many bins)
SMALL_EDGES = np.linspace(0.0, 1.0, 7)
SMALL_BACKGROUND = 2000 * np.diff(-np.exp(-3 * SMALL_EDGES)) / -np.expm1(-3)


def _expected() -> tuple[np.ndarray, np.ndarray]:
    shape = np.diff(stats.norm.cdf(EDGES, INJECTED, RESOLUTION))
    return BACKGROUND * EPS + SIGNAL_PASS * shape, BACKGROUND * (1 - EPS) + SIGNAL_FAIL * shape


@pytest.fixture(scope="module")
def injected_hunt() -> BumpHunt:
    """Poisson spectra of the injected resonance (expected local significance 4.1 at 0.5)."""
    rng = np.random.default_rng(4)
    expected_pass, expected_fail = _expected()
    failing = rng.poisson(expected_fail).astype(float)
    passing = rng.poisson(expected_pass).astype(float)
    templates = gaussian_templates(EDGES, MASSES, RESOLUTION, efficiency=EFFICIENCY)
    return bump_hunt(passing, failing, EDGES, templates)


@pytest.fixture(scope="module")
def small() -> tuple[np.ndarray, np.ndarray, object]:
    """Background-only spectra in six bins with an upward fluctuation at the tested mass."""
    rng = np.random.default_rng(4)
    failing = rng.poisson(SMALL_BACKGROUND * (1 - EPS)).astype(float)
    passing = rng.poisson(SMALL_BACKGROUND * EPS).astype(float)
    templates = gaussian_templates(SMALL_EDGES, [0.5], 0.08, signal_yield=30.0, efficiency=0.5)
    return passing, failing, templates


def test_limits_left_out_are_nan_and_the_others_unchanged(small) -> None:
    """``limits`` computes fewer limits; each it computes is the one of ``limits="all"``."""
    passing, failing, templates = small
    options = {"nonclosure": [0.1] * 6}
    full = bump_hunt(passing, failing, SMALL_EDGES, templates, **options)
    median = bump_hunt(
        passing, failing, SMALL_EDGES, templates, limits="expected median", **options
    )
    alone = bump_hunt(passing, failing, SMALL_EDGES, templates, limits="none", **options)
    for hunt in (median, alone):
        np.testing.assert_array_equal(hunt.q0, full.q0)
        np.testing.assert_array_equal(hunt.mu_hat, full.mu_hat)
        assert np.all(np.isnan(hunt.observed_limit))
    assert np.all(np.isfinite(full.expected_limits))
    np.testing.assert_array_equal(median.expected_limits[:, 2], full.expected_limits[:, 2])
    assert np.all(np.isnan(median.expected_limits[:, [0, 1, 3, 4]]))
    assert np.all(np.isnan(alone.expected_limits))
    for method, limits in (("profile", "median"), ("pyhf", "none")):
        with pytest.raises(ValueError, match="limits must be one of"):
            bump_hunt(passing, failing, SMALL_EDGES, templates, method=method, limits=limits)


def test_gaussian_templates_carry_the_yield_efficiency_and_leakage() -> None:
    edges = np.linspace(0.0, 10.0, 201)
    templates = gaussian_templates(edges, [3.0, 6.0], 0.1, relative=True, signal_yield=50.0)
    np.testing.assert_allclose(templates.passing.sum(axis=1), 50.0, rtol=1e-9)
    np.testing.assert_allclose(templates.failing, 0.0)
    centres = 0.5 * (edges[1:] + edges[:-1])
    widths = [
        np.sqrt(np.sum(row * (centres - mass) ** 2) / row.sum())
        for row, mass in zip(templates.passing, (3.0, 6.0), strict=True)
    ]
    np.testing.assert_allclose(widths, [0.3, 0.6], rtol=0.01)
    split = gaussian_templates(edges, [5.0], 0.2, signal_yield=10.0, efficiency=0.3, leakage=0.5)
    assert split.passing.sum() == pytest.approx(3.0)
    assert split.failing.sum() == pytest.approx(5.0)
    with pytest.raises(ValueError, match="efficiency"):
        gaussian_templates(edges, [5.0], 0.2, efficiency=1.5)
    with pytest.raises(ValueError, match="increasing"):
        gaussian_templates(edges, [5.0, 4.0], 0.2)


def test_signal_templates_from_histograms_are_their_values() -> None:
    import hist

    rows = np.array([[0.0, 1.0, 4.0, 1.0], [0.0, 0.0, 2.0, 6.0]])
    histograms = []
    for row in rows:
        h = hist.Hist(hist.axis.Variable([0.0, 1.0, 2.0, 3.0, 4.0]), storage=hist.storage.Weight())
        h.fill(np.repeat([0.5, 1.5, 2.5, 3.5], 1), weight=row)
        histograms.append(h)
    templates = signal_templates([1.5, 3.0], [0.0, 1.0, 2.0, 3.0, 4.0], histograms, 0.1 * rows)
    np.testing.assert_array_equal(templates.passing, rows)
    np.testing.assert_allclose(templates.failing, 0.1 * rows)
    with pytest.raises(ValueError, match="edges"):
        signal_templates([1.5, 3.0], [0.0, 1.0, 2.0, 3.0, 5.0], histograms)


def test_the_local_significance_peaks_at_the_injected_mass(injected_hunt: BumpHunt) -> None:
    hunt = injected_hunt
    assert hunt.masses[hunt.best] == pytest.approx(INJECTED)
    assert hunt.local_z[hunt.best] > 3.0
    np.testing.assert_allclose(hunt.local_p, stats.norm.sf(hunt.local_z))
    assert np.all(hunt.local_z[np.abs(hunt.masses - INJECTED) >= 5 * RESOLUTION] < 2.0)


def test_the_expected_spectra_give_back_the_injected_signal() -> None:
    templates = gaussian_templates(EDGES, [INJECTED], RESOLUTION, efficiency=EFFICIENCY)
    hunt = bump_hunt(*_expected(), EDGES, templates)
    assert hunt.mu_hat[0] == pytest.approx(SIGNAL_PASS / EFFICIENCY, rel=1e-6)
    assert hunt.local_z[0] == pytest.approx(4.12, abs=0.01)


def test_far_from_the_signal_the_limit_is_within_the_expected_band(
    injected_hunt: BumpHunt,
) -> None:
    # the background-only transfer ratio absorbs part of the signal (+3.5% here), so far
    # from it the limits sit lower than without signal (by half a sigma on the expected
    # spectra): a larger signal, or another seed, can push one below the band
    hunt = injected_hunt
    far = np.abs(hunt.masses - INJECTED) >= 5 * RESOLUTION
    assert far.sum() >= 4
    band = hunt.expected_limits
    assert np.all(np.diff(band, axis=1) > 0)
    assert np.all(hunt.observed_limit[far] >= band[far, 0])
    assert np.all(hunt.observed_limit[far] <= band[far, 4])
    # at the resonance the excess lifts the observed limit above the band
    assert hunt.observed_limit[hunt.best] > band[hunt.best, 4]


def test_the_results_are_json(injected_hunt: BumpHunt) -> None:
    data = json.loads(json.dumps(injected_hunt.to_dict()))
    assert data["masses"] == pytest.approx(MASSES.tolist())
    assert set(data["expected_limits"]) == {"-2", "-1", "median", "+1", "+2"}
    assert data["expected_limits"]["median"] == pytest.approx(
        injected_hunt.expected_limits[:, 2].tolist()
    )


def test_q0_is_pyhfs_on_the_same_workspace(small: tuple) -> None:
    passing, failing, templates = small
    hunt = bump_hunt(passing, failing, SMALL_EDGES, templates)
    with quiet_pyhf():
        workspace = passfail_workspace(failing, passing, templates.passing[0], templates.failing[0])
        model = workspace.model()
        data = workspace.data(model)
        bounds = model.config.suggested_bounds()
        _, null = pyhf.infer.mle.fixed_poi_fit(
            0.0, data, model, par_bounds=bounds, return_fitted_val=True, tolerance=1e-12
        )
        best, free = pyhf.infer.mle.fit(
            data, model, par_bounds=bounds, return_fitted_val=True, tolerance=1e-12
        )
        p0 = float(pyhf.infer.hypotest(0.0, data, model, test_stat="q0"))
    q0 = float(null - free)
    assert q0 > 0.1
    assert hunt.q0[0] == pytest.approx(q0, rel=1e-6)
    assert hunt.mu_hat[0] == pytest.approx(float(best[model.config.poi_index]), rel=1e-4)
    assert hunt.local_p[0] == pytest.approx(stats.norm.sf(np.sqrt(q0)), rel=1e-6)
    assert hunt.local_p[0] == pytest.approx(p0, rel=1e-6)
    np.testing.assert_allclose(
        local_significance_scan(passing, failing, templates), hunt.local_z, rtol=1e-9
    )


def test_the_cls_limit_is_pyhfs_upper_limit(small: tuple) -> None:
    passing, failing, templates = small
    hunt = bump_hunt(passing, failing, SMALL_EDGES, templates)
    with quiet_pyhf():
        workspace = passfail_workspace(failing, passing, templates.passing[0], templates.failing[0])
        model = workspace.model()
        observed, expected = pyhf.infer.intervals.upper_limits.upper_limit(
            workspace.data(model), model, level=0.05
        )
    assert hunt.observed_limit[0] == pytest.approx(float(observed), rel=1e-4)
    np.testing.assert_allclose(hunt.expected_limits[0], np.asarray(expected, float), rtol=1e-4)


@pytest.mark.slow
def test_the_pyhf_method_gives_the_same_results(small: tuple) -> None:
    passing, failing, templates = small
    profile = bump_hunt(passing, failing, SMALL_EDGES, templates)
    direct = bump_hunt(passing, failing, SMALL_EDGES, templates, method="pyhf")
    assert direct.method == "pyhf"
    assert direct.q0[0] == pytest.approx(profile.q0[0], rel=1e-3)
    assert direct.observed_limit[0] == pytest.approx(profile.observed_limit[0], rel=1e-4)
    np.testing.assert_allclose(direct.expected_limits, profile.expected_limits, rtol=1e-4)


@pytest.mark.slow
def test_the_pyhf_method_where_pyhfs_own_limit_scan_fails() -> None:
    """pyhf's ``upper_limit`` starts at mu = 0, where CLs is 0/0, and stops on this spectrum."""
    edges = np.linspace(0.0, 1.0, 13)
    rng = np.random.default_rng(3)
    for _ in range(2):  # the second spectrum of this generator
        failing = rng.poisson(1250 * np.exp(-3 * 0.5 * (edges[1:] + edges[:-1])))
        passing = rng.poisson(0.05 * failing + 0.5)
    templates = gaussian_templates(edges, [0.6], 0.04, signal_yield=20.0)
    with quiet_pyhf():
        workspace = passfail_workspace(failing, passing, templates.passing[0], templates.failing[0])
        model = workspace.model()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # its 0/0
            with pytest.raises(ValueError, match="NaN"):
                pyhf.infer.intervals.upper_limits.upper_limit(workspace.data(model), model)
    profile = bump_hunt(passing, failing, edges, templates)
    direct = bump_hunt(passing, failing, edges, templates, method="pyhf")
    assert direct.observed_limit[0] == pytest.approx(profile.observed_limit[0], rel=1e-4)
    np.testing.assert_allclose(direct.expected_limits, profile.expected_limits, rtol=1e-4)


def test_bad_inputs_are_refused(small: tuple) -> None:
    passing, failing, templates = small
    with pytest.raises(ValueError, match="method"):
        bump_hunt(passing, failing, SMALL_EDGES, templates, method="toys")
    with pytest.raises(ValueError, match="nonclosure"):
        bump_hunt(passing, failing, SMALL_EDGES, templates, nonclosure=np.full(5, 0.1))
    with pytest.raises(ValueError, match="nonclosure"):
        bump_hunt(passing, failing, SMALL_EDGES, templates, nonclosure=np.full(6, -0.1))
    with pytest.raises(ValueError, match="edges"):
        bump_hunt(passing, failing, EDGES, templates)
    with pytest.raises(ValueError, match="bins"):
        bump_hunt(passing[:-1], failing, SMALL_EDGES, templates)


def test_upcrossings_count_rises_through_the_level() -> None:
    q0 = np.array([[0.0, 2.0, 0.5, 3.0, 3.0, 0.0], [2.0, 2.0, 0.0, 0.0, 0.0, 0.0]])
    np.testing.assert_array_equal(upcrossings(q0, 1.0), [2, 0])
    np.testing.assert_array_equal(upcrossings(q0[0], 2.5), [1])


@pytest.mark.slow
def test_the_look_elsewhere_effect_toys_and_gross_vitells() -> None:
    rng = np.random.default_rng(11)
    failing = rng.poisson(BACKGROUND * (1 - EPS)).astype(float)
    passing = rng.poisson(BACKGROUND * EPS).astype(float)
    masses = np.linspace(0.15, 0.85, 15)
    templates = gaussian_templates(EDGES, masses, RESOLUTION, efficiency=EFFICIENCY)
    result = global_significance(
        passing, failing, EDGES, templates, n_toys=200, seed=3, threshold=2.0
    )
    assert result.toys_max_z.shape == (200,)
    assert result.local_p == pytest.approx(stats.norm.sf(2.0))
    # the look-elsewhere effect: a 2 sigma excess somewhere on the grid is common
    assert result.p_toys > result.local_p + 3 * result.p_toys_error
    assert 0.5 < result.p_gross_vitells / result.p_toys < 2.0
    assert result.upcrossings_toys > 0.5
    data = json.loads(json.dumps(result.to_dict()))
    assert data["n_toys"] == 200
    assert data["z_toys"] < 2.0


def test_brazil_and_local_significance_plots_render(tmp_path, injected_hunt: BumpHunt) -> None:
    pytest.importorskip("mplhep")
    from test_figures import assert_inside_canvas

    from rosenblatt.plotting import plot_brazil, plot_local_significance, save_figure

    fig = plot_brazil(injected_hunt, xlabel="$m$")
    assert_inside_canvas(fig)
    ax = fig.axes[0]
    assert ax.get_xlabel() == "$m$"
    assert "upper limit" in ax.get_ylabel()
    labels = [text.get_text() for text in ax.get_legend().get_texts()]
    assert "observed" in labels
    assert "expected (median)" in labels
    path = save_figure(fig, tmp_path / "brazil.png")
    assert path.stat().st_size > 1000
    small_toys = global_significance(
        *_expected(), EDGES, gaussian_templates(EDGES, MASSES, RESOLUTION), n_toys=20, seed=1
    )
    fig = plot_local_significance(injected_hunt, global_significance=small_toys)
    assert_inside_canvas(fig)
    assert "significance" in fig.axes[0].get_ylabel()
    labels = [text.get_text() for text in fig.axes[0].get_legend().get_texts()]
    assert any("Gross-Vitells" in label for label in labels)
    assert save_figure(fig, tmp_path / "local.png").stat().st_size > 1000


def test_the_signal_strength_and_its_interval_equal_pyhf() -> None:
    """``mu`` free below 0 too: a downward fluctuation's fit and interval as pyhf's profile."""
    rng = np.random.default_rng(8)
    shape = np.diff(stats.norm.cdf(SMALL_EDGES, 0.45, 0.08))
    s_pass, s_fail = 30.0 * shape, 10.0 * shape
    for mu_true in (0.0, 1.0):
        failing = rng.poisson(SMALL_BACKGROUND * 0.9 + mu_true * s_fail).astype(float)
        passing = rng.poisson(SMALL_BACKGROUND * 0.1 + mu_true * s_pass).astype(float)
        mu, low, high = signal_strength(passing, failing, s_pass, s_fail)
        with quiet_pyhf():
            workspace = passfail_workspace(failing, passing, s_pass, s_fail)
            expected = profile_interval(workspace)
        np.testing.assert_allclose([mu[0], low[0], high[0]], expected, atol=2e-3)


def test_the_signal_strength_of_many_data_sets_at_once() -> None:
    """Rows fitted together equal rows fitted alone, with one signal or one per row."""
    rng = np.random.default_rng(9)
    expected_pass, expected_fail = _expected()
    passing = rng.poisson(expected_pass, (3, EDGES.size - 1)).astype(float)
    failing = rng.poisson(expected_fail, (3, EDGES.size - 1)).astype(float)
    templates = gaussian_templates(EDGES, [INJECTED], RESOLUTION, efficiency=EFFICIENCY)
    s_pass, s_fail = templates.passing[0], templates.failing[0]
    ratio = float(passing.sum() / failing.sum())
    together = np.stack(signal_strength(passing, failing, s_pass, s_fail, ratio=ratio))
    rows = np.stack([s_pass, 1.1 * s_pass, 0.9 * s_pass])
    own = np.stack(signal_strength(passing, failing, rows, rows * 0.25, ratio=ratio))
    for i in range(3):
        alone = np.stack(signal_strength(passing[i], failing[i], s_pass, s_fail, ratio=ratio))
        np.testing.assert_allclose(together[:, i], alone[:, 0], rtol=1e-8)
        scaled = np.stack(
            signal_strength(passing[i], failing[i], rows[i], rows[i] * 0.25, ratio=ratio)
        )
        np.testing.assert_allclose(own[:, i], scaled[:, 0], rtol=1e-8)
    assert np.all(together[1] < together[0])
    assert np.all(together[0] < together[2])
    with pytest.raises(ValueError, match="the signal's yields"):
        signal_strength(passing, failing, s_pass[:-1], s_fail[:-1])


#: a relative non-closure per bin of the small model (none in its third bin)
SMALL_NONCLOSURE = np.array([0.05, 0.1, 0.0, 0.2, 0.1, 0.3])


def test_the_nonclosure_profile_is_pyhfs_shapesys() -> None:
    """q0, mu and the CLs limits with a non-closure per bin equal pyhf's on the workspace."""
    rng = np.random.default_rng(4)
    failing = rng.poisson(SMALL_BACKGROUND * (1 - EPS)).astype(float)
    passing = rng.poisson(SMALL_BACKGROUND * EPS).astype(float)
    passing[2] += 6.0
    templates = gaussian_templates(
        SMALL_EDGES, [0.3, 0.5, 0.7], 0.08, signal_yield=30.0, efficiency=0.5
    )
    hunt = bump_hunt(passing, failing, SMALL_EDGES, templates, nonclosure=SMALL_NONCLOSURE)
    for index in range(templates.masses.size):
        s_pass, s_fail = templates.passing[index], templates.failing[index]
        with quiet_pyhf():
            workspace = passfail_workspace(
                failing, passing, s_pass, s_fail, nonclosure=SMALL_NONCLOSURE
            )
            model = workspace.model()
            data = workspace.data(model)
            bounds = model.config.suggested_bounds()
            fixed = model.config.suggested_fixed()
            _, null = pyhf.infer.mle.fixed_poi_fit(
                0.0,
                data,
                model,
                par_bounds=bounds,
                fixed_params=fixed,
                return_fitted_val=True,
                tolerance=1e-12,
            )
            best, free = pyhf.infer.mle.fit(
                data,
                model,
                par_bounds=bounds,
                fixed_params=fixed,
                return_fitted_val=True,
                tolerance=1e-12,
            )
        q0 = max(float(null - free), 0.0)
        assert hunt.q0[index] == pytest.approx(q0, rel=1e-6, abs=1e-8)
        assert hunt.mu_hat[index] == pytest.approx(
            float(best[model.config.poi_index]), rel=1e-4, abs=1e-4
        )
        if index == 1:
            with quiet_pyhf():
                observed, expected = pyhf.infer.intervals.upper_limits.upper_limit(
                    data, model, level=0.05
                )
            assert hunt.observed_limit[index] == pytest.approx(float(observed), rel=1e-4)
            np.testing.assert_allclose(
                hunt.expected_limits[index], np.asarray(expected, float), rtol=1e-4
            )
            mu, low, high = signal_strength(
                passing, failing, s_pass, s_fail, nonclosure=SMALL_NONCLOSURE
            )
            with quiet_pyhf():
                interval = profile_interval(workspace)
            np.testing.assert_allclose([mu[0], low[0], high[0]], interval, atol=2e-4)
    assert hunt.q0[1] > 0.5


def test_no_nonclosure_gives_the_same_numbers_exactly(small: tuple) -> None:
    passing, failing, templates = small
    zero = np.zeros(SMALL_EDGES.size - 1)
    for nonclosure in (zero, None):
        plain = bump_hunt(passing, failing, SMALL_EDGES, templates)
        given = bump_hunt(passing, failing, SMALL_EDGES, templates, nonclosure=nonclosure)
        for name in ("q0", "mu_hat", "observed_limit", "expected_limits"):
            np.testing.assert_array_equal(getattr(given, name), getattr(plain, name))
    s_pass, s_fail = templates.passing[0], templates.failing[0]
    np.testing.assert_array_equal(
        np.stack(signal_strength(passing, failing, s_pass, s_fail, nonclosure=zero)),
        np.stack(signal_strength(passing, failing, s_pass, s_fail)),
    )
    found = global_significance(
        passing, failing, SMALL_EDGES, templates, n_toys=30, seed=2, nonclosure=zero
    )
    plain_toys = global_significance(passing, failing, SMALL_EDGES, templates, n_toys=30, seed=2)
    np.testing.assert_array_equal(found.toys_max_z, plain_toys.toys_max_z)


def test_a_nonclosure_widens_the_interval_and_lowers_the_significance() -> None:
    rng = np.random.default_rng(4)
    expected_pass, expected_fail = _expected()
    failing = rng.poisson(expected_fail).astype(float)
    passing = rng.poisson(expected_pass).astype(float)
    masses = np.array([0.35, 0.5, 0.65])
    templates = gaussian_templates(EDGES, masses, RESOLUTION, efficiency=EFFICIENCY)
    nonclosure = np.full(EDGES.size - 1, 0.05)
    plain = bump_hunt(passing, failing, EDGES, templates)
    wide = bump_hunt(passing, failing, EDGES, templates, nonclosure=nonclosure)
    assert plain.local_z[1] > 3.0
    assert wide.local_z[1] < plain.local_z[1] - 0.1
    assert np.all(wide.expected_limits > plain.expected_limits)
    s_pass, s_fail = templates.passing[1], templates.failing[1]
    _, low, high = signal_strength(passing, failing, s_pass, s_fail)
    _, wide_low, wide_high = signal_strength(
        passing, failing, s_pass, s_fail, nonclosure=nonclosure
    )
    assert wide_high[0] - wide_low[0] > 1.05 * (high[0] - low[0])
    scan = local_significance_scan(passing, failing, templates, nonclosure=nonclosure)
    np.testing.assert_allclose(scan, wide.local_z, rtol=1e-9)
    toys = global_significance(
        passing, failing, EDGES, templates, n_toys=20, seed=5, nonclosure=nonclosure
    )
    assert toys.local_z == pytest.approx(float(wide.local_z.max()))
    assert toys.toys_max_z.shape == (20,)


def test_a_failed_pyhf_fit_logs_no_traceback(caplog: pytest.LogCaptureFixture) -> None:
    """pyhf logs a failed minimisation at ERROR before raising it; the caller reports it once."""
    pyhf = pytest.importorskip("pyhf")
    model = pyhf.simplemodels.uncorrelated_background([5.0], [50.0], [7.0])
    data = [float("nan"), *model.config.auxdata]
    caplog.clear()
    failure = pytest.raises(pyhf.exceptions.FailedMinimization)
    with caplog.at_level(logging.DEBUG), quiet_pyhf(), failure:
        pyhf.infer.mle.fit(data, model)
    assert not [r for r in caplog.records if r.name.startswith("pyhf")]
    caplog.clear()
    with caplog.at_level(logging.DEBUG), pytest.raises(pyhf.exceptions.FailedMinimization):
        pyhf.infer.mle.fit(data, model)
    assert [r for r in caplog.records if r.levelno == logging.ERROR and r.exc_info]
