"""Distance correlation, ROC/AUC, background rejection and 1/JSD."""

from __future__ import annotations

import math
import sys
from types import ModuleType

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from rosenblatt import metrics
from rosenblatt._jit import numba_enabled

sklearn_metrics = pytest.importorskip("sklearn.metrics")

BACKENDS = ["numba", "numpy"]


def use_backend(patch: pytest.MonkeyPatch, name: str) -> None:
    """Select the numba kernel or the numpy fallback for the rest of the test."""
    if name == "numba":
        patch.delenv("ROSENBLATT_NO_NUMBA", raising=False)
        if not numba_enabled():
            pytest.skip("numba is not installed")
    else:
        patch.setenv("ROSENBLATT_NO_NUMBA", "1")


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run the test once with the numba kernel and once with the numpy fallback."""
    use_backend(monkeypatch, request.param)
    return str(request.param)


def naive_weighted_dcor_terms(
    x: np.ndarray, y: np.ndarray, weight: np.ndarray
) -> tuple[float, float, float]:
    """dCov², dVar²(x), dVar²(y) from the O(n²) doubly centred distance matrices."""
    prob = weight / weight.sum()

    def centred(values: np.ndarray) -> np.ndarray:
        distance = np.abs(values[:, None] - values[None, :])
        row = distance @ prob
        return distance - row[:, None] - row[None, :] + prob @ row

    a = centred(x)
    b = centred(y)
    return prob @ (a * b) @ prob, prob @ (a * a) @ prob, prob @ (b * b) @ prob


def naive_weighted_dcor_sqr(x: np.ndarray, y: np.ndarray, weight: np.ndarray) -> float:
    dcov, var_x, var_y = naive_weighted_dcor_terms(x, y, weight)
    return float(dcov / math.sqrt(var_x * var_y))


def dependent_sample(n: int, seed: int, ties: bool) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=n)
    y = np.sin(2 * x) + 0.5 * rng.normal(size=n)
    if ties:
        x = np.round(x, 1)
        y = np.round(y, 1)
    return x, y


# --- distance correlation: exact agreement --------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("n", [2, 3, 4, 11, 64, 65, 500, 3000])
@pytest.mark.parametrize("ties", [False, True])
def test_dcor_sqr_equals_dcor_package(backend: str, n: int, ties: bool, dcor: ModuleType) -> None:
    x, y = dependent_sample(n, seed=n, ties=ties)
    ours = metrics.distance_correlation_sqr(x, y)
    assert ours == pytest.approx(dcor.distance_correlation_sqr(x, y, method="naive"), abs=1e-9)
    assert ours == pytest.approx(dcor.distance_correlation_sqr(x, y, method="mergesort"), abs=1e-9)
    assert metrics.distance_covariance_sqr(x, y) == pytest.approx(
        dcor.distance_covariance_sqr(x, y, method="naive"), rel=1e-9, abs=1e-12
    )
    assert metrics.distance_correlation(x, y) == pytest.approx(
        dcor.distance_correlation(x, y, method="naive"), abs=1e-9
    )


def test_dcor_sqr_of_identical_pair_is_one(backend: str) -> None:
    x = np.array([3.0, -1.0, 2.5, 7.0, 0.0])
    assert metrics.distance_correlation_sqr(x, x) == pytest.approx(1.0, abs=1e-12)
    assert metrics.distance_correlation_sqr(x, 2 * x - 5) == pytest.approx(1.0, abs=1e-12)


def test_integer_weights_equal_replicated_events(backend: str, dcor: ModuleType) -> None:
    rng = np.random.default_rng(7)
    x, y = dependent_sample(300, seed=3, ties=True)
    counts = rng.integers(0, 5, size=x.size)
    replicated = dcor.distance_correlation_sqr(np.repeat(x, counts), np.repeat(y, counts))
    assert metrics.distance_correlation_sqr(x, y, counts) == pytest.approx(replicated, abs=1e-9)
    assert metrics.distance_covariance_sqr(x, y, counts) == pytest.approx(
        dcor.distance_covariance_sqr(np.repeat(x, counts), np.repeat(y, counts)), rel=1e-9
    )


def test_real_weights_equal_naive_weighted_reference(backend: str) -> None:
    rng = np.random.default_rng(11)
    x, y = dependent_sample(400, seed=5, ties=False)
    weight = rng.exponential(size=x.size)
    expected = naive_weighted_dcor_sqr(x, y, weight)
    assert metrics.distance_correlation_sqr(x, y, weight) == pytest.approx(expected, abs=1e-10)
    dcov, _, _ = naive_weighted_dcor_terms(x, y, weight)
    assert metrics.distance_covariance_sqr(x, y, weight) == pytest.approx(dcov, rel=1e-9)


def test_negative_weights_follow_the_signed_formula(backend: str) -> None:
    rng = np.random.default_rng(13)
    x, y = dependent_sample(300, seed=9, ties=False)
    weight = rng.uniform(0.2, 1.0, size=x.size)
    weight[rng.choice(x.size, size=30, replace=False)] *= -0.5
    expected = naive_weighted_dcor_sqr(x, y, weight)
    assert metrics.distance_correlation_sqr(x, y, weight) == pytest.approx(expected, abs=1e-10)


@pytest.mark.parametrize("seed", range(5))
def test_negative_weights_keep_dcor_non_negative(backend: str, seed: int) -> None:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=6)
    y = rng.normal(size=6)
    weight = rng.normal(size=6)
    weight[0] = abs(weight).sum()
    dcov, var_x, var_y = naive_weighted_dcor_terms(x, y, weight)
    assert min(dcov, var_x, var_y) > 0
    value = metrics.distance_correlation_sqr(x, y, weight)
    assert value == pytest.approx(dcov / math.sqrt(var_x * var_y), abs=1e-10)
    assert metrics.distance_correlation(x, y, weight) == pytest.approx(math.sqrt(value), rel=1e-12)


def test_weights_cancelling_to_one_value_give_zero(backend: str) -> None:
    x = np.array([0.0, 0.0, 1.0, 1.0])
    y = np.array([2.0, 2.0, 3.0, 5.0])
    weight = np.array([1.0, 1.0, 0.5, -0.5])
    assert metrics.distance_correlation_sqr(x, y, weight) == 0.0


def test_zero_weight_events_do_not_count(backend: str, dcor: ModuleType) -> None:
    x, y = dependent_sample(200, seed=21, ties=False)
    weight = np.ones(x.size)
    weight[::3] = 0.0
    keep = weight > 0
    assert metrics.distance_correlation_sqr(x, y, weight) == pytest.approx(
        dcor.distance_correlation_sqr(x[keep], y[keep]), abs=1e-10
    )


def test_numba_and_numpy_paths_agree(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("numba")
    rng = np.random.default_rng(17)
    x, y = dependent_sample(5000, seed=17, ties=True)
    weight = rng.uniform(-0.1, 2.0, size=x.size)
    values = {}
    for name in BACKENDS:
        use_backend(monkeypatch, name)
        values[name] = (
            metrics.distance_correlation_sqr(x, y, weight),
            metrics.distance_covariance_sqr(x, y, weight),
        )
    np.testing.assert_allclose(values["numba"], values["numpy"], rtol=1e-11)


def test_works_without_numba(monkeypatch: pytest.MonkeyPatch, dcor: ModuleType) -> None:
    monkeypatch.delenv("ROSENBLATT_NO_NUMBA", raising=False)
    monkeypatch.setitem(sys.modules, "numba", None)
    assert not numba_enabled()
    x, y = dependent_sample(300, seed=37, ties=True)
    assert metrics.distance_correlation_sqr(x, y) == pytest.approx(
        dcor.distance_correlation_sqr(x, y, method="naive"), abs=1e-9
    )


# --- distance correlation: invariances and known values ------------------------------


def test_invariant_under_shift_scale_and_swap(backend: str) -> None:
    x, y = dependent_sample(1000, seed=23, ties=False)
    reference = metrics.distance_correlation_sqr(x, y)
    assert metrics.distance_correlation_sqr(y, x) == pytest.approx(reference, rel=1e-12)
    assert metrics.distance_correlation_sqr(-3.5 * x + 1e4, y) == pytest.approx(
        reference, rel=1e-10
    )
    assert metrics.distance_correlation_sqr(x, 1e-3 * y + 0.25) == pytest.approx(
        reference, rel=1e-10
    )
    assert metrics.distance_covariance_sqr(2.0 * x, 3.0 * y) == pytest.approx(
        6.0 * metrics.distance_covariance_sqr(x, y), rel=1e-10
    )


def test_large_offset_keeps_precision() -> None:
    rng = np.random.default_rng(29)
    x = rng.normal(size=200_000)
    y = rng.normal(size=200_000)
    centred = metrics.distance_correlation_sqr(x, y)
    assert 0 < centred < 1e-3
    assert metrics.distance_correlation_sqr(x + 3e9, y - 7e8) == pytest.approx(centred, rel=1e-6)


def test_bivariate_normal_matches_population_value() -> None:
    rho = 0.6
    rng = np.random.default_rng(31)
    x, y = rng.multivariate_normal([0.0, 0.0], [[1.0, rho], [rho, 1.0]], size=20_000).T
    population = (
        rho * math.asin(rho)
        + math.sqrt(1 - rho**2)
        - rho * math.asin(rho / 2)
        - math.sqrt(4 - rho**2)
        + 1
    ) / (1 + math.pi / 3 - math.sqrt(3))
    assert population == pytest.approx(0.30, abs=0.005)
    assert metrics.distance_correlation_sqr(x, y) == pytest.approx(population, abs=0.02)


def test_constant_variable_gives_zero(backend: str) -> None:
    x = np.linspace(0.0, 1.0, 50)
    constant = np.full(50, 4.2)
    assert metrics.distance_correlation_sqr(x, constant) == 0.0
    assert metrics.distance_correlation(constant, x) == 0.0
    assert metrics.distance_covariance_sqr(constant, x) == 0.0
    weight = np.zeros(50)
    weight[10] = 1.0
    assert metrics.distance_correlation_sqr(x, x**2, weight) == 0.0


# --- distance correlation: bad input ----------------------------------------------------


def test_non_finite_values_are_named_and_counted() -> None:
    x = np.arange(10.0)
    y = np.arange(10.0)
    y[[2, 5]] = np.nan
    y[7] = np.inf
    with pytest.raises(ValueError, match=r"^y has 2 NaN and 1 infinite value\(s\) out of 10"):
        metrics.distance_correlation_sqr(x, y)
    with pytest.raises(ValueError, match=r"^x has 2 NaN"):
        metrics.distance_correlation(y, x)


def test_length_mismatch_and_too_few_events() -> None:
    with pytest.raises(ValueError, match="x has 3, y has 4 events"):
        metrics.distance_correlation_sqr([1.0, 2.0, 3.0], [1.0, 2.0, 3.0, 4.0])
    with pytest.raises(ValueError, match="1 event: distance correlation needs at least 2"):
        metrics.distance_correlation_sqr([1.0], [2.0])
    with pytest.raises(ValueError, match="weight has 2 events, the data have 3"):
        metrics.distance_correlation_sqr([1.0, 2.0, 3.0], [3.0, 1.0, 2.0], [1.0, 1.0])
    with pytest.raises(ValueError, match="weight must have a positive sum"):
        metrics.distance_correlation_sqr([1.0, 2.0, 3.0], [3.0, 1.0, 2.0], [1.0, -2.0, 0.5])


# --- distance correlation: properties ---------------------------------------------------

values_with_ties = st.one_of(
    st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False, allow_subnormal=False),
    st.sampled_from([0.0, 1.0, -2.5, 1e-3]),
)


@st.composite
def weighted_samples(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    n = draw(st.integers(2, 40))
    x = draw(arrays(np.float64, n, elements=values_with_ties))
    y = draw(arrays(np.float64, n, elements=values_with_ties))
    weight = draw(arrays(np.float64, n, elements=st.floats(0.01, 100.0)))
    return x, y, weight


@settings(max_examples=60, deadline=None)
@given(sample=weighted_samples(), exponent=st.integers(-150, 150))
def test_property_weighted_dcor_matches_reference(
    sample: tuple[np.ndarray, np.ndarray, np.ndarray], exponent: int
) -> None:
    x, y, weight = sample
    scale = 10.0**exponent
    if np.ptp(x) == 0 or np.ptp(y) == 0:
        expected = 0.0
    else:
        expected = naive_weighted_dcor_sqr(x / np.ptp(x), y / np.ptp(y), weight)
    for name in BACKENDS:
        with pytest.MonkeyPatch.context() as patch:
            use_backend(patch, name)
            value = metrics.distance_correlation_sqr(scale * x, y, weight)
        assert value == pytest.approx(expected, abs=1e-9)
        assert -1e-9 <= value <= 1 + 1e-9


@settings(max_examples=40, deadline=None)
@given(
    n=st.integers(2, 60),
    levels=st.integers(1, 6),
    seed=st.integers(0, 2**32 - 1),
)
def test_property_integer_weights_are_replication(
    n: int, levels: int, seed: int, dcor: ModuleType
) -> None:
    rng = np.random.default_rng(seed)
    x = rng.integers(0, levels + 1, size=n).astype(float)
    y = x * rng.integers(-1, 2) + rng.integers(0, levels + 1, size=n)
    counts = rng.integers(0, 4, size=n)
    counts[0] += 1
    replicated_x = np.repeat(x, counts)
    replicated_y = np.repeat(y, counts)
    expected = dcor.distance_correlation_sqr(replicated_x, replicated_y)
    assert metrics.distance_correlation_sqr(x, y, counts) == pytest.approx(expected, abs=1e-9)


# --- ROC, AUC ---------------------------------------------------------------------------


def classification_sample(
    n: int, seed: int, ties: bool = True, weighted: bool = True
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    rng = np.random.default_rng(seed)
    label = rng.integers(0, 2, size=n)
    score = rng.normal(size=n) + 0.8 * label
    if ties:
        score = np.round(score, 1)
    weight = rng.uniform(0.0, 2.0, size=n) if weighted else None
    if weight is not None:
        weight[::17] = 0.0
    return label, score, weight


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("drop_intermediate", [False, True])
def test_roc_curve_equals_sklearn(weighted: bool, drop_intermediate: bool) -> None:
    label, score, weight = classification_sample(2000, seed=41, weighted=weighted)
    ours = metrics.roc_curve(label, score, weight, drop_intermediate=drop_intermediate)
    theirs = sklearn_metrics.roc_curve(
        label, score, sample_weight=weight, drop_intermediate=drop_intermediate
    )
    for mine, reference in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(mine, reference, rtol=1e-14, atol=0)


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("ties", [False, True])
def test_roc_auc_equals_sklearn(weighted: bool, ties: bool) -> None:
    label, score, weight = classification_sample(5000, seed=43, ties=ties, weighted=weighted)
    expected = sklearn_metrics.roc_auc_score(label, score, sample_weight=weight)
    assert metrics.roc_auc(label, score, weight) == pytest.approx(expected, abs=1e-12)


def test_roc_auc_integer_weights_equal_replication() -> None:
    label, score, _ = classification_sample(500, seed=47)
    counts = np.random.default_rng(47).integers(0, 4, size=label.size)
    replicated = sklearn_metrics.roc_auc_score(np.repeat(label, counts), np.repeat(score, counts))
    assert metrics.roc_auc(label, score, counts) == pytest.approx(replicated, abs=1e-12)


def test_roc_auc_is_mann_whitney_probability() -> None:
    label, score, _ = classification_sample(300, seed=53)
    signal = score[label == 1]
    background = score[label == 0]
    wins = (signal[:, None] > background[None, :]).mean()
    ties = (signal[:, None] == background[None, :]).mean()
    assert metrics.roc_auc(label.astype(bool), score) == pytest.approx(wins + 0.5 * ties, abs=1e-12)


@settings(max_examples=60, deadline=None)
@given(
    label=st.lists(st.integers(0, 1), min_size=2, max_size=50),
    data=st.data(),
)
def test_property_roc_auc_equals_sklearn(label: list[int], data: st.DataObject) -> None:
    labels = np.array(label)
    if labels.min() == labels.max():
        labels[0] = 1 - labels[0]
    score = data.draw(arrays(np.float64, labels.size, elements=values_with_ties), label="score")
    weight = data.draw(
        arrays(np.float64, labels.size, elements=st.floats(0.5, 10.0)), label="weight"
    )
    expected = sklearn_metrics.roc_auc_score(labels, score, sample_weight=weight)
    assert metrics.roc_auc(labels, score, weight) == pytest.approx(expected, abs=1e-12)


def test_label_errors() -> None:
    score = np.arange(6.0)
    with pytest.raises(ValueError, match=r"label must be 0 \(background\) or 1 \(signal\): 2 of 6"):
        metrics.roc_auc([0, 1, 2, 1, -1, 0], score)
    with pytest.raises(ValueError, match=r"label has no background \(label 0\) events out of 6"):
        metrics.roc_curve(np.ones(6), score)
    with pytest.raises(ValueError, match=r"label has no signal \(label 1\) events"):
        metrics.background_rejection(np.zeros(6, dtype=bool), score)
    with pytest.raises(ValueError, match=r"the 3 signal \(label 1\) events have total weight 0"):
        metrics.roc_auc([0, 1, 0, 1, 0, 1], score, [1.0, 0.0, 1.0, 0.0, 1.0, 0.0])
    with pytest.raises(ValueError, match="length mismatch: label has 6, score has 5"):
        metrics.roc_auc([0, 1, 0, 1, 0, 1], score[:5])
    with pytest.raises(ValueError, match=r"score has 1 NaN"):
        metrics.roc_auc([0, 1, 0, 1, 0, 1], [0.1, np.nan, 0.2, 0.3, 0.4, 0.5])


# --- background rejection ---------------------------------------------------------------


def test_background_rejection_at_exact_working_point() -> None:
    rng = np.random.default_rng(59)
    signal_score = rng.permutation(np.arange(1000.0)) + 0.5
    background_score = rng.normal(300.0, 200.0, size=5000)
    background_weight = rng.uniform(0.5, 1.5, size=5000)
    label = np.r_[np.ones(1000), np.zeros(5000)]
    score = np.r_[signal_score, background_score]
    weight = np.r_[np.ones(1000), background_weight]
    cut = np.sort(signal_score)[500]  # 500 of 1000 signal events pass score >= cut
    passing = background_weight[background_score >= cut].sum() / background_weight.sum()
    assert metrics.background_rejection(label, score, 0.5, weight) == pytest.approx(
        1.0 / passing, rel=1e-12
    )
    cut_30 = np.sort(signal_score)[700]
    passing_30 = background_weight[background_score >= cut_30].sum() / background_weight.sum()
    assert metrics.background_rejection(label, score, 0.3, weight) == pytest.approx(
        1.0 / passing_30, rel=1e-12
    )


def test_background_rejection_interpolates_the_roc_curve() -> None:
    label, score, weight = classification_sample(3000, seed=61, ties=False)
    fpr, tpr, _ = sklearn_metrics.roc_curve(
        label, score, sample_weight=weight, drop_intermediate=False
    )
    for efficiency in (0.1, 0.5, 0.9):
        expected = 1.0 / np.interp(efficiency, tpr, fpr)
        assert metrics.background_rejection(label, score, efficiency, weight) == pytest.approx(
            expected, rel=1e-10
        )


def test_background_rejection_without_passing_background_is_infinite() -> None:
    label = np.array([1, 1, 1, 1, 0, 0])
    score = np.array([5.0, 6.0, 7.0, 8.0, 1.0, 2.0])
    assert metrics.background_rejection(label, score) == math.inf
    with pytest.raises(ValueError, match=r"signal_efficiency must be in \(0, 1\]"):
        metrics.background_rejection(label, score, 0.0)


# --- 1/JSD ------------------------------------------------------------------------------


def reference_jsd_bits(first: np.ndarray, second: np.ndarray) -> float:
    first = first / first.sum()
    second = second / second.sum()
    middle = 0.5 * (first + second)
    total = 0.0
    for p, m in ((first, middle), (second, middle)):
        used = p > 0
        total += 0.5 * float(np.sum(p[used] * np.log2(p[used] / m[used])))
    return total


def test_inverse_jsd_equals_direct_computation() -> None:
    rng = np.random.default_rng(67)
    n_background = 20_000
    mass = rng.exponential(400.0, size=n_background) + 1000.0
    background_score = rng.normal(size=n_background) + 1e-3 * (mass - 1000.0)
    weight_background = rng.uniform(0.5, 1.5, size=n_background)
    signal_score = rng.permutation(np.arange(2000.0)) / 1000.0 + 0.25
    label = np.r_[np.zeros(n_background), np.ones(2000)]
    score = np.r_[background_score, signal_score]
    x = np.r_[mass, rng.normal(3500.0, 100.0, size=2000)]
    weight = np.r_[weight_background, np.ones(2000)]
    cut = np.sort(signal_score)[1000]
    passing = background_score >= cut
    edges = np.linspace(1000.0, 4000.0, 31)
    mass_in = mass < edges[-1]
    keep = np.r_[mass_in, np.ones(2000, dtype=bool)]
    pass_hist, _ = np.histogram(
        mass[passing & mass_in], edges, weights=weight_background[passing & mass_in]
    )
    fail_hist, _ = np.histogram(
        mass[~passing & mass_in], edges, weights=weight_background[~passing & mass_in]
    )
    expected = 1.0 / reference_jsd_bits(pass_hist, fail_hist)
    value = metrics.inverse_jsd(x[keep], label[keep], score[keep], 0.5, weight[keep], bins=edges)
    assert value == pytest.approx(expected, rel=1e-10)
    hist = pytest.importorskip("hist")
    axis_value = metrics.inverse_jsd(
        x[keep], label[keep], score[keep], 0.5, weight[keep], bins=hist.axis.Regular(30, 1000, 4000)
    )
    assert axis_value == pytest.approx(expected, rel=1e-10)


def test_inverse_jsd_default_binning_spans_background_range() -> None:
    rng = np.random.default_rng(71)
    mass = rng.uniform(1000.0, 2000.0, size=5000)
    score = rng.normal(size=5000) + (mass > 1500.0)
    label = np.zeros(5000)
    label[:500] = 1
    value = metrics.inverse_jsd(mass, label, score, bins=7)
    background = label == 0
    cut = metrics.roc_curve(label, score, drop_intermediate=False)[2][
        int(np.argmax(metrics.roc_curve(label, score, drop_intermediate=False)[1] >= 0.5))
    ]
    edges = np.linspace(mass[background].min(), mass[background].max(), 8)
    edges[-1] = np.nextafter(edges[-1], np.inf)
    passing = score[background] >= cut
    pass_hist, _ = np.histogram(mass[background][passing], edges)
    fail_hist, _ = np.histogram(mass[background][~passing], edges)
    assert pass_hist.sum() + fail_hist.sum() == background.sum()
    assert value == pytest.approx(1.0 / reference_jsd_bits(pass_hist, fail_hist), rel=1e-6)


def test_inverse_jsd_is_one_for_disjoint_shapes() -> None:
    mass = np.r_[np.arange(100.0), np.arange(100.0)]
    label = np.r_[np.zeros(100), np.ones(100)]
    score = mass.copy()
    value = metrics.inverse_jsd(mass, label, score, bins=np.arange(-0.5, 100.5))
    assert value == pytest.approx(1.0, rel=1e-12)


def test_inverse_jsd_errors() -> None:
    mass = np.r_[np.arange(100.0), np.arange(100.0)]
    label = np.r_[np.zeros(100), np.ones(100)]
    with pytest.raises(ValueError, match=r"bins: 10 of 100 background x value\(s\) lie outside"):
        metrics.inverse_jsd(mass, label, mass, bins=np.linspace(0.0, 90.0, 10))
    with pytest.raises(ValueError, match="no background weight passes the cut"):
        metrics.inverse_jsd(mass, label, np.r_[np.zeros(100), np.ones(100)], bins=5)
    with pytest.raises(ValueError, match="length mismatch: x has 199, label has 200"):
        metrics.inverse_jsd(mass[1:], label, mass)
