"""Closed-form background populations and the estimators' accuracy against them.

The exact conditional CDF of each population agrees with its draws; IRGI and KDE
fitted on the paper's Gaussian blob approach the exact conditional CDF.
"""

from __future__ import annotations

import numpy as np
import pytest
from gaussian_blob import exact_gamma
from scipy import stats

import rosenblatt as rb
from rosenblatt.closed_forms import CASES, accuracy_rows, closed_form, rms_to_exact, summarize

NAMES = sorted(CASES)


@pytest.mark.parametrize("name", NAMES)
def test_exact_gamma_is_uniform_and_independent_of_x(name: str) -> None:
    case = CASES[name]
    x, y = case.sample(40_000, seed=5)
    gamma = case.exact(x, y)
    assert stats.kstest(gamma, "uniform").pvalue > 1e-3
    # the same uniform distribution below and above the median of x
    low = x < np.median(x)
    assert stats.ks_2samp(gamma[low], gamma[~low]).pvalue > 1e-3
    # while y itself depends on x
    assert stats.ks_2samp(y[low], y[~low]).pvalue < 1e-6


@pytest.mark.parametrize("name", NAMES)
def test_exact_gamma_matches_conditional_frequencies(name: str) -> None:
    """In a narrow slice of x, the fraction of events below y equals the exact CDF."""
    case = CASES[name]
    x, y = case.sample(400_000, seed=6)
    for x0 in np.quantile(x, [0.1, 0.5, 0.9]):
        inside = np.abs(x - x0) < 0.01 * np.std(x)
        y_slice = y[inside]
        for level in (0.1, 0.3, 0.5, 0.7, 0.9):
            y0 = np.quantile(y_slice, level)
            observed = np.mean(y_slice <= y0)
            expected = case.exact(x0, y0)
            tolerance = 5 * np.sqrt(level * (1 - level) / inside.sum()) + 0.01
            assert abs(observed - expected) < tolerance, (x0, y0)


@pytest.mark.parametrize("name", NAMES)
def test_exact_gamma_is_a_cdf_in_y(name: str) -> None:
    case = CASES[name]
    x, _ = case.sample(5, seed=7)
    ys = np.linspace(-30, 40, 4001)
    for x0 in x:
        g = case.exact(np.full_like(ys, x0), ys)
        assert np.all(np.diff(g) >= 0)
        assert g[0] == pytest.approx(0.0, abs=1e-9)
        assert g[-1] == pytest.approx(1.0, abs=1e-9)


def test_bivariate_normal_is_the_papers_blob() -> None:
    x, y = CASES["bivariate_normal"].sample(1000, seed=8)
    np.testing.assert_allclose(
        CASES["bivariate_normal"].exact(x, y), exact_gamma(x, y), rtol=0, atol=1e-14
    )
    assert np.corrcoef(x, y)[0, 1] == pytest.approx(0.6, abs=0.06)


def test_classifier_score_is_bounded() -> None:
    _, y = CASES["classifier"].sample(20_000, seed=9)
    assert np.all((y > 0) & (y < 1))


def test_sampling_is_reproducible() -> None:
    a = CASES["skewed"].sample(100, seed=3)
    b = CASES["skewed"].sample(100, seed=3)
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_array_equal(a[1], b[1])


def test_unknown_case_and_bad_size() -> None:
    with pytest.raises(KeyError, match="known"):
        closed_form("gaussian")
    with pytest.raises(ValueError, match="positive integer"):
        CASES["skewed"].sample(0)


def test_rms_to_exact_and_accuracy_rows() -> None:
    case = CASES["heteroscedastic"]
    x, y = case.sample(20_000, seed=10)
    x_test, y_test = case.sample(5000, seed=11)
    t = rb.IRGI(4).fit(x, y)
    expected = np.sqrt(np.mean((t.transform(x_test, y_test) - case.exact(x_test, y_test)) ** 2))
    assert rms_to_exact(t, "heteroscedastic", x_test, y_test) == pytest.approx(expected, rel=1e-12)

    rows = accuracy_rows(
        {"irgi3": lambda: rb.IRGI(3), "irgi5": lambda: rb.IRGI(5)},
        cases=["bivariate_normal"],
        sizes=[8192],
        draws=2,
        n_testing=2000,
        progress=False,
    )
    assert len(rows) == 4
    assert {r["parameter"] for r in rows} == {3.0, 5.0}
    # both estimators see the same events: draws differ, estimators on one draw share them
    table = summarize(rows)
    assert {(r["estimator"], r["draws"]) for r in table} == {("irgi3", 2), ("irgi5", 2)}
    by_name = {r["estimator"]: r["rms"] for r in table}
    assert by_name["irgi5"] < by_name["irgi3"]


# --- IRGI and KDE against the exact conditional CDF of the Gaussian blob ------------


def blob_rms_to_exact(transform: rb.IRGI | rb.KDE, sample: dict[str, np.ndarray]) -> float:
    transform.fit(sample["x_def"], sample["y_def"])
    gamma = transform.transform(sample["x_test"], sample["y_test"])
    exact = exact_gamma(sample["x_test"], sample["y_test"])
    return float(np.sqrt(np.mean((gamma - exact) ** 2)))


def test_irgi_depth7_rms(blob_sample: dict[str, np.ndarray]) -> None:
    assert blob_rms_to_exact(rb.IRGI(depth=7), blob_sample) <= 0.02


def test_kde_sigma005_rms(blob_sample: dict[str, np.ndarray]) -> None:
    assert blob_rms_to_exact(rb.KDE(sigma_r=0.05), blob_sample) <= 0.012


def test_irgi_converges_with_depth(blob_sample: dict[str, np.ndarray]) -> None:
    errors = [blob_rms_to_exact(rb.IRGI(depth=d), blob_sample) for d in (1, 3, 5)]
    assert errors[0] > errors[1] > errors[2]


@pytest.mark.slow
@pytest.mark.parametrize("sigma_r", [0.005, 0.05, 0.3, 2.0])
def test_kde_fast_equals_direct(blob_sample: dict[str, np.ndarray], sigma_r: float) -> None:
    x, y = blob_sample["x_def"][:20_000], blob_sample["y_def"][:20_000]
    xq, yq = blob_sample["x_test"][:1500], blob_sample["y_test"][:1500]
    # include queries in the sparse tails and beyond the sample
    xq = np.concatenate((xq, [-6.0, -4.3, 3.9, 4.4, 7.0]))
    yq = np.concatenate((yq, [0.0, -2.0, 1.0, 3.0, -0.5]))
    fast = rb.KDE(sigma_r).fit(x, y).transform(xq, yq)
    direct = rb.KDE(sigma_r, method="direct").fit(x, y).transform(xq, yq)
    np.testing.assert_allclose(fast, direct, rtol=0, atol=1e-9)
