"""The closure test: bootstrap covariance of the background non-closure over the cut grid."""

from __future__ import annotations

import numpy as np
import pytest

import rosenblatt as rb
from rosenblatt.abcd import abcd_histogram, closure_scan
from rosenblatt.abcd.closure_testing import ClosureTest, closure_test, thinned_indices

pytestmark = pytest.mark.core

N_EVENTS = 10_000


def independent(seed: int, n: int = N_EVENTS) -> tuple[np.ndarray, np.ndarray]:
    """A product distribution: x normal, y uniform and independent of it."""
    rng = np.random.default_rng(seed)
    return rng.standard_normal(n), rng.uniform(0.0, 1.0, n)


def cuts(x: np.ndarray, y: np.ndarray, n_cuts: int = 30) -> dict[str, np.ndarray]:
    levels = np.linspace(0.1, 0.9, n_cuts)
    return {"x0": np.quantile(x, levels), "y0": np.quantile(y, levels)}


@pytest.mark.slow
@pytest.mark.parametrize("weighted", [False, True], ids=["unweighted", "weighted"])
def test_p_value_is_uniform_for_independent_x_and_y(weighted: bool) -> None:
    p_values = []
    for seed in range(20):
        x, y = independent(seed)
        weight = np.random.default_rng(100 + seed).uniform(0.5, 1.5, len(x)) if weighted else None
        result = closure_test(
            x, y, np.zeros(len(x), int), weight, **cuts(x, y), n_boot=200, seed=seed
        )
        p_values.append(result.p_value)
    p_values = np.array(p_values)
    assert not np.all(p_values < 0.05)
    assert 0.2 < p_values.mean() < 0.8
    assert result.ndof == 25


def test_p_value_is_tiny_for_correlated_x_and_y() -> None:
    rng = np.random.default_rng(3)
    x = rng.standard_normal(N_EVENTS)
    y = 0.6 * x + 0.8 * rng.standard_normal(N_EVENTS)
    result = closure_test(x, y, np.zeros(N_EVENTS, int), **cuts(x, y), n_boot=200)
    assert result.p_value < 1e-10
    assert result.chi2_per_dof > 10
    assert result.closed_fraction == 0.0


def test_counts_match_the_closure_scan_and_the_bootstrap_errors_match_the_analytic_ones() -> None:
    x, y = independent(4, 40_000)
    label = (np.random.default_rng(5).random(len(x)) < 0.1).astype(int)
    grid = cuts(x, y, 12)
    result = closure_test(x, y, label, **grid, n_boot=400, seed=1)
    scan = closure_scan(abcd_histogram(x, y, label, **grid))
    np.testing.assert_array_equal(result.eta, scan.eta)
    background = closure_scan(
        abcd_histogram(x[label == 0], y[label == 0], label[label == 0], **grid)
    )
    np.testing.assert_allclose(result.nonclosure, background.signal_estimate, rtol=1e-12, atol=1e-9)
    np.testing.assert_allclose(result.background_estimate, background.background_estimate)
    # independent regions: the propagated error of N_A - N_B N_C / N_D, within bootstrap noise
    ratio = result.nonclosure_error / background.signal_estimate_error
    assert 0.85 < np.median(ratio) < 1.15
    assert 0.85 < np.median(result.eta_error / scan.eta_error) < 1.15


def test_independence_estimate_is_the_margins_product_and_uncorrelated_with_the_factor() -> None:
    """``(A + B)(A + C) / N`` moves independently of ``A D / (B C)``; ``B C / D`` does not."""
    x, y = independent(7, 20_000)
    grid = {"x0": np.array([0.0, 1.0]), "y0": np.array([0.5, 0.9])}
    result = closure_test(x, y, np.zeros(len(x), int), **grid, n_boot=20)
    right, up = x[:, None] >= grid["x0"], y[:, None] >= grid["y0"]
    margins = (right.sum(0)[:, None] * up.sum(0)[None, :]) / len(x)
    np.testing.assert_allclose(result.independence_estimate, margins, rtol=1e-12)
    # Poisson fluctuations of one cut's regions: 2,000 draws of (A, B, C, D)
    rng = np.random.default_rng(8)
    a, b, c, d = rng.poisson([300.0, 2000.0, 1500.0, 30000.0], size=(2000, 4)).T
    factor = np.log(a * d / (b * c))
    independence = np.log((a + b) * (a + c) / (a + b + c + d))
    ratio = np.log(b * c / d)
    assert abs(np.corrcoef(independence, factor)[0, 1]) < 0.1
    assert np.corrcoef(ratio, factor)[0, 1] < -0.35


def test_weighted_bootstrap_uses_poisson_weights_per_event() -> None:
    x, y = independent(6, 5000)
    label = np.zeros(len(x), int)
    grid = cuts(x, y, 8)
    ones = closure_test(x, y, label, np.ones(len(x)), **grid, n_boot=300, seed=2)
    doubled = closure_test(x, y, label, np.full(len(x), 2.0), **grid, n_boot=300, seed=2)
    np.testing.assert_allclose(doubled.nonclosure_error, 2 * ones.nonclosure_error, rtol=1e-12)
    assert doubled.chi2 == pytest.approx(ones.chi2, rel=1e-9)
    negative = np.where(np.arange(len(x)) % 20 == 0, -0.5, 1.0)
    result = closure_test(x, y, label, negative, **grid, n_boot=300, seed=2)
    assert np.all(np.isfinite(result.nonclosure_error))


def test_deterministic_from_the_seed() -> None:
    x, y = independent(7, 3000)
    label = np.zeros(len(x), int)
    first = closure_test(x, y, label, **cuts(x, y, 6), n_boot=100, seed=9)
    again = closure_test(x, y, label, **cuts(x, y, 6), n_boot=100, seed=9)
    other = closure_test(x, y, label, **cuts(x, y, 6), n_boot=100, seed=10)
    assert first.chi2 == again.chi2
    np.testing.assert_array_equal(first.covariance, again.covariance)
    assert first.chi2 != other.chi2


def test_closed_fraction_counts_small_and_statistical_eta() -> None:
    x, y = independent(8, 200_000)
    label = np.zeros(len(x), int)
    result = closure_test(x, y, label, **cuts(x, y, 10), n_boot=100)
    assert isinstance(result, ClosureTest)
    eta, error = np.abs(result.eta), result.eta_error
    expected = np.mean((eta < 1e-2) & (eta < 2 * error))
    assert result.closed_fraction == pytest.approx(expected)
    assert 0.3 < result.closed_fraction < 1.0
    assert result.fraction_closed(tolerance=1e-9) == 0.0


@pytest.mark.parametrize("weighted", [False, True], ids=["unweighted", "weighted"])
def test_replica_scores_equal_to_the_nominal_give_the_testing_bootstrap(weighted: bool) -> None:
    """Replica k draws the same Poisson counts as the testing-only bootstrap: bit-identical results."""
    x, y = independent(11, 5000)
    rng = np.random.default_rng(12)
    label = (rng.random(len(x)) < 0.1).astype(int)
    weight = rng.uniform(0.5, 1.5, len(x)) if weighted else None
    grid = cuts(x, y, 8)
    alone = closure_test(x, y, label, weight, **grid, n_boot=60, seed=3)
    replicas = closure_test(x, y, label, weight, **grid, replica_scores=[y] * 60, seed=3)
    streamed = closure_test(
        x, y, label, weight, **grid, replica_scores=(y for _ in range(60)), seed=3
    )
    assert streamed.chi2 == replicas.chi2
    assert replicas.n_boot == 60
    assert replicas.transform_replicas
    assert not alone.transform_replicas
    assert replicas.chi2 == alone.chi2
    np.testing.assert_array_equal(replicas.covariance, alone.covariance)
    np.testing.assert_array_equal(replicas.nonclosure_error, alone.nonclosure_error)
    np.testing.assert_array_equal(replicas.eta_error, alone.eta_error)


@pytest.mark.slow
def test_transform_replicas_account_for_the_fit_of_the_transform() -> None:
    """IRGI fitted on 2000 events, tested on 20000: its fit noise fails the testing-only test.

    x and y are independent, so the transform's only error is statistical. With
    the testing sample's bootstrap alone, the residual dependence left by the
    fit looks significant; with every replica refitted (``rb.bootstrap``) it
    is consistent with statistics.
    """
    alone, both = [], []
    for seed in range(3):
        x_def, y_def = independent(20 + seed, 2000)
        x, y = independent(30 + seed, 20_000)
        ensemble = rb.bootstrap(rb.IRGI(depth=3), x_def, y_def, n=60, seed=seed)
        gamma = ensemble.transform(x, y)
        grid = {"x0": np.quantile(x, np.linspace(0.1, 0.9, 30)), "y0": np.linspace(0.1, 0.9, 30)}
        label = np.zeros(len(x), int)
        kwargs = {"seed": seed, "thin": 4, **grid}
        alone.append(closure_test(x, gamma, label, n_boot=60, **kwargs))
        both.append(
            closure_test(x, gamma, label, replica_scores=ensemble.variations(x, y), **kwargs)
        )
    assert max(t.p_value for t in alone) < 1e-4
    assert min(t.p_value for t in both) > 0.01
    assert all(
        b.consistent_fraction > a.consistent_fraction for a, b in zip(alone, both, strict=True)
    )
    np.testing.assert_array_equal(both[0].nonclosure, alone[0].nonclosure)


def test_consistent_fraction_counts_cuts_within_two_sd() -> None:
    x, y = independent(13, 20_000)
    label = np.zeros(len(x), int)
    result = closure_test(x, y, label, **cuts(x, y, 10), n_boot=100)
    expected = np.mean(np.abs(result.nonclosure) <= 2 * result.nonclosure_error)
    assert result.consistent_fraction == pytest.approx(expected)
    assert result.fraction_consistent(n_sigma=1e-9) < 0.05
    assert result.fraction_consistent(n_sigma=100.0) == 1.0
    rng = np.random.default_rng(14)
    correlated = 0.6 * x + 0.8 * rng.standard_normal(len(x))
    assert (
        closure_test(
            x, correlated, label, **cuts(x, correlated, 10), n_boot=100
        ).consistent_fraction
        == 0.0
    )


def test_singular_covariance_uses_its_rank() -> None:
    x, y = independent(9, 5000)
    grid = cuts(x, y, 5)
    grid["x0"] = np.concatenate((grid["x0"], grid["x0"][:2] + 1e-9))  # cuts with the same events
    result = closure_test(x, y, np.zeros(len(x), int), **grid, n_boot=200, thin=None)
    assert result.ndof < len(result.chi2_cuts[0])
    assert 0.0 <= result.p_value <= 1.0


def test_invalid_input() -> None:
    x, y = independent(10, 2000)
    label = np.zeros(len(x), int)
    with pytest.raises(ValueError, match="cannot estimate the covariance"):
        closure_test(x, y, label, **cuts(x, y, 10), n_boot=20, thin=None)
    with pytest.raises(ValueError, match="effective background events"):
        closure_test(x, y, label, **cuts(x, y), min_events=1e9)
    with pytest.raises(ValueError, match="n_boot"):
        closure_test(x, y, label, **cuts(x, y), n_boot=1)
    with pytest.raises(ValueError, match="label"):
        closure_test(x, y, np.full(len(x), 2), **cuts(x, y))
    with pytest.raises(ValueError, match=r"replica_scores\[1\] has 1999 values"):
        closure_test(x, y, label, **cuts(x, y, 4), replica_scores=[y, y[1:], y])
    with pytest.raises(ValueError, match="n_boot = 40 but 30 replica scores"):
        closure_test(x, y, label, **cuts(x, y, 4), n_boot=40, replica_scores=[y] * 30)
    with pytest.raises(ValueError, match="not finite"):
        closure_test(x, y, label, **cuts(x, y, 4), replica_scores=[y, np.full(len(y), np.nan), y])
    with pytest.raises(ValueError, match="replica scores must be an integer >= 2"):
        closure_test(x, y, label, **cuts(x, y, 4), replica_scores=[y])


def test_thinned_indices() -> None:
    np.testing.assert_array_equal(thinned_indices(100, 5), [0, 25, 50, 74, 99])
    np.testing.assert_array_equal(thinned_indices(4, 10), [0, 1, 2, 3])
    np.testing.assert_array_equal(thinned_indices(4, None), [0, 1, 2, 3])


def test_histogram_test_adds_the_transform_replicas_spread() -> None:
    """Replica histograms equal to the nominal change nothing; varied ones widen the errors."""
    from rosenblatt.abcd import abcd_histogram
    from rosenblatt.abcd.closure_testing import closure_test_histogram

    rng = np.random.default_rng(4)
    n = 20_000
    x, y = rng.normal(size=n), rng.uniform(size=n)
    label = (rng.uniform(size=n) < 0.05).astype(int)
    grid = {"x0": np.linspace(-1.0, 1.0, 11), "y0": np.linspace(0.1, 0.9, 11)}
    nominal = abcd_histogram(x, y, label, **grid)
    plain = closure_test_histogram(nominal)
    same = closure_test_histogram(nominal, replica_histograms=[nominal, nominal])
    np.testing.assert_array_equal(plain.nonclosure_error, same.nonclosure_error)
    assert same.transform_replicas
    varied = [
        # each replica's transform leans with x a little: a correlated change of the non-closure
        abcd_histogram(x, np.clip(y + rng.normal(0.0, 0.02) * x, 0, 1), label, **grid)
        for _ in range(20)
    ]
    wider = closure_test_histogram(nominal, replica_histograms=varied)
    inside = np.isfinite(plain.nonclosure_error) & (plain.nonclosure_error > 0)
    ratio = wider.nonclosure_error[inside] / plain.nonclosure_error[inside]
    assert np.median(ratio) > 1.2


def test_keyed_replicas_give_the_error_and_covariance_of_the_closure_correction() -> None:
    """With resampled histograms, the test's errors are the spread of the keyed deltas."""
    from rosenblatt.abcd import abcd_histogram
    from rosenblatt.abcd.closure import region_sums
    from rosenblatt.abcd.closure_testing import closure_test_histogram
    from rosenblatt.transforms.ensemble import keyed_poisson_weights

    rng = np.random.default_rng(6)
    n = 20_000
    x, y = rng.normal(size=n), rng.uniform(size=n)
    label = np.zeros(n, dtype=int)
    grid = {"x0": np.linspace(-1.0, 1.0, 11), "y0": np.linspace(0.1, 0.9, 11)}
    nominal = abcd_histogram(x, y, label, **grid)
    replicas = [nominal] * 20
    resampled = [
        abcd_histogram(x, y, label, weight=keyed_poisson_weights(x, y, 2, k), **grid)
        for k in range(20)
    ]
    test = closure_test_histogram(
        nominal, replica_histograms=replicas, resampled_histograms=resampled
    )
    deltas = []
    for h in resampled:
        a, b, c, d = region_sums(h.view(flow=True).value[..., 0])
        deltas.append(a - b * c / d)
    np.testing.assert_allclose(test.nonclosure_error, np.std(deltas, axis=0, ddof=1))
    # the chi-square's cuts are thinned below the 20 replicas (4 x 4 at most)
    assert test.n_boot == 20
    assert len(test.chi2_cuts[0]) <= 16
    assert 0.0 <= test.p_value <= 1.0
    with pytest.raises(ValueError, match="same replicas"):
        closure_test_histogram(
            nominal, replica_histograms=replicas[:3], resampled_histograms=resampled
        )


@pytest.mark.slow
@pytest.mark.parametrize("shared", [False, True], ids=["independent", "shared"])
def test_keyed_errors_are_the_spread_of_a_closing_transforms_nonclosure(shared: bool) -> None:
    """Over defining samples, the keyed test's errors match the non-closure's real spread.

    ``y`` is uniform and independent of ``x``, so the exact transform closes
    and IRGI's interpolation adds no bias: the non-closure is its fit's and
    the simulation's statistics. The simulation is either independent of the
    defining sample (the spread holds the fit) or the defining sample itself
    (the transform closes better on its own events than ``delta_k`` says).
    """
    from rosenblatt.abcd.closure_testing import closure_test_histogram
    from rosenblatt.transforms.ensemble import keyed_poisson_weights

    n, grid = 5000, {"x0": np.linspace(-0.5, 1.0, 5), "y0": np.linspace(0.5, 0.9, 5)}
    values, errors = [], []
    for toy in range(40):
        rng = np.random.default_rng([21, toy])
        x_fit, y_fit = rng.normal(size=n), rng.uniform(size=n)
        x, y = (x_fit, y_fit) if shared else (rng.normal(size=n), rng.uniform(size=n))
        label = np.zeros(n, dtype=int)
        ensemble = rb.bootstrap(rb.IRGI(depth=4), x_fit, y_fit, n=20, seed=toy, keyed=True)
        nominal = abcd_histogram(x, ensemble.nominal_.transform(x, y), label, **grid)
        replicas, resampled = [], []
        for replica, draw in zip(ensemble.replicas_, ensemble.replica_draws_, strict=True):
            gamma = replica.transform(x, y)
            counts = keyed_poisson_weights(x, y, toy, draw).astype(np.float64)
            replicas.append(abcd_histogram(x, gamma, label, **grid))
            resampled.append(abcd_histogram(x, gamma, label, weight=counts, **grid))
        test = closure_test_histogram(
            nominal, replica_histograms=replicas, resampled_histograms=resampled
        )
        values.append(test.nonclosure[1:-1, 1:-1])
        errors.append(test.nonclosure_error[1:-1, 1:-1])
    stated = np.mean(np.square(errors), axis=0)
    ratio = np.median(stated / np.var(values, axis=0, ddof=1))
    # delta_k alone gives 0.42 (independent) and 7.8 (shared) here
    assert 0.6 < ratio < 1.7
