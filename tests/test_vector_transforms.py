"""Transforms fitted on several protected observables, ``x`` of shape ``(n, k)``.

Checked against the exact conditional CDF of the closed forms with two and
three correlated observables, and for every guarantee of the scalar case.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy import stats

import rosenblatt as rb
from rosenblatt.closed_forms import closed_form

TWO = closed_form("two_observables")
THREE = closed_form("three_observables")

#: estimators of several observables, at parameters fixed for speed
MAKERS = {
    "grid_kde": lambda: rb.GridKDE(0.35),
    "grid_kde_linear": lambda: rb.GridKDE(0.3, degree=1),
    "kde": lambda: rb.KDE(0.17),
    "irgi": lambda: rb.IRGI(6),
}
#: RMS against the exact CDF at 10^4 defining events that each estimator stays below
RMS_BOUND = {"grid_kde": 0.035, "grid_kde_linear": 0.035, "kde": 0.035, "irgi": 0.035}
#: largest KS distance between gamma below and above the median of an observable
SPLIT_BOUND = {"grid_kde": 0.05, "grid_kde_linear": 0.05, "kde": 0.05, "irgi": 0.08}


@pytest.fixture(scope="module")
def sample() -> tuple[np.ndarray, np.ndarray]:
    return TWO.sample(10_000, seed=1)


@pytest.fixture(scope="module")
def testing() -> tuple[np.ndarray, np.ndarray]:
    return TWO.sample(5_000, seed=2)


@pytest.fixture(scope="module", params=sorted(MAKERS))
def fitted(request: pytest.FixtureRequest, sample: tuple[np.ndarray, np.ndarray]) -> rb.GridKDE:
    transform = MAKERS[request.param]().fit(*sample)
    transform.test_name = request.param
    return transform


def _rms(transform: object, case: object, x: np.ndarray, y: np.ndarray) -> float:
    gamma = transform.transform(x, y)  # type: ignore[attr-defined]
    return float(np.sqrt(np.mean((gamma - case.exact(x, y)) ** 2)))  # type: ignore[attr-defined]


def test_joint_estimate_beats_the_first_observable_alone(fitted, sample, testing) -> None:
    x, y = sample
    alone = rb.GridKDE(0.2).fit(x[:, 0], y)
    rms_alone = float(
        np.sqrt(np.mean((alone.transform(testing[0][:, 0], testing[1]) - TWO.exact(*testing)) ** 2))
    )
    rms_joint = _rms(fitted, TWO, *testing)
    assert rms_alone > 0.13
    assert rms_joint < RMS_BOUND[fitted.test_name]
    assert fitted.x_dims == 2


def test_gamma_is_a_cdf_in_y_at_every_x(fitted) -> None:
    rng = np.random.default_rng(3)
    ys = np.linspace(-5, 5, 401)
    for x0 in rng.normal(size=(6, 2)) * 1.5:
        gamma = fitted.transform(np.tile(x0, (len(ys), 1)), ys)
        assert np.all((gamma >= 0) & (gamma <= 1))
        assert np.all(np.diff(gamma) >= 0)
        assert gamma[0] == 0.0
        assert gamma[-1] == 1.0


def test_gamma_is_continuous_in_x(fitted) -> None:
    t = np.linspace(-2, 2, 4001)
    x = np.stack([t, 0.3 * t], axis=1)
    gamma = fitted.transform(x, np.full(len(t), 0.2))
    assert np.max(np.abs(np.diff(gamma))) < 0.01


def test_uniform_on_the_defining_sample_and_independent_of_each_observable(fitted, sample) -> None:
    x, y = sample
    gamma = fitted.transform(x, y)
    assert stats.kstest(gamma, "uniform").statistic < 0.04
    for d in range(2):
        low = x[:, d] < np.median(x[:, d])
        assert stats.ks_2samp(gamma[low], gamma[~low]).statistic < SPLIT_BOUND[fitted.test_name]
        assert stats.ks_2samp(y[low], y[~low]).statistic > 0.3


def test_outside_the_domain_events_are_kept(fitted) -> None:
    (x_lo, x_hi), (y_lo, y_hi) = fitted.domain_
    x = np.array([[x_hi[0] + 5, 0.0], [x_lo[0] - 1, x_hi[1] + 2], [0.0, 0.0], [0.0, 0.0]])
    y = np.array([0.0, 0.0, y_lo - 1, y_hi + 1])
    gamma = fitted.transform(x, y)
    assert gamma[2] == 0.0
    assert gamma[3] == 1.0
    edge = fitted.transform(np.array([[x_hi[0], 0.0], [x_lo[0], x_hi[1]]]), y[:2])
    assert np.array_equal(gamma[:2], edge)
    counts = fitted.outside(x, y)
    assert (counts.x_below, counts.x_above, counts.y_below, counts.y_above, counts.total) == (
        1,
        2,
        1,
        1,
        4,
    )


def test_nan_policy(fitted) -> None:
    x = np.array([[0.0, np.nan], [0.1, 0.2], [np.inf, 0.0]])
    y = np.array([0.0, np.nan, -np.inf])
    with pytest.raises(ValueError, match="x has 1 NaN and 1 infinite"):
        fitted.transform(x, y)
    with pytest.warns(rb.NaNInputWarning, match="2 of 3"):
        gamma = fitted.transform(x, y, nan_policy="propagate")
    assert np.isnan(gamma[:2]).all()
    assert gamma[2] == 0.0


def test_weights_scale_free_and_reweighting_x_keeps_the_conditional(sample) -> None:
    x, y = sample
    xt, yt = TWO.sample(3000, seed=5)
    plain = rb.GridKDE(0.4).fit(x, y)
    doubled = rb.GridKDE(0.4).fit(x, y, np.full(len(y), 2.0))
    assert np.allclose(doubled.transform(xt, yt), plain.transform(xt, yt), rtol=0, atol=1e-12)
    # weights that depend on x only change the density of x, not P(Y <= y | x)
    tilted = rb.GridKDE(0.4).fit(x, y, np.exp(0.5 * x[:, 0] - 0.3 * x[:, 1]))
    assert _rms(tilted, TWO, xt, yt) < 0.04


def test_negative_weights_keep_gamma_a_cdf(sample) -> None:
    x, y = sample
    w = np.where(np.random.default_rng(6).uniform(size=len(y)) < 0.1, -0.5, 1.0)
    t = rb.GridKDE(0.4).fit(x, y, w)
    assert t.sum_weight_ == pytest.approx(w.sum())
    ys = np.linspace(-4, 4, 201)
    gamma = t.transform(np.zeros((len(ys), 2)), ys)
    assert np.all(np.diff(gamma) >= 0)
    assert np.all((gamma >= 0) & (gamma <= 1))
    xt, yt = TWO.sample(3000, seed=7)
    assert _rms(t, TWO, xt, yt) < 0.05


@pytest.mark.slow
def test_save_load_round_trip(fitted, tmp_path) -> None:
    path = tmp_path / "t.json"
    fitted.save(path)
    loaded = rb.load(path)
    xt, yt = TWO.sample(2000, seed=8)
    assert type(loaded) is type(fitted)
    assert loaded.x_dims == 2
    assert np.array_equal(loaded.transform(xt, yt), fitted.transform(xt, yt))
    assert loaded.domain_ == fitted.domain_


def test_one_array_per_observable_numpy_and_awkward(fitted) -> None:
    ak = pytest.importorskip("awkward")
    xt, yt = TWO.sample(1000, seed=9)
    flat = fitted.transform(xt, yt)
    assert np.array_equal(fitted.transform([xt[:, 0], xt[:, 1]], yt), flat)
    counts = [3, 0, 5] + [1] * (1000 - 8)
    jagged = [ak.unflatten(xt[:, d], counts) for d in range(2)]
    gamma = fitted.transform(jagged, ak.unflatten(yt, counts))
    assert ak.to_list(ak.num(gamma)) == counts
    assert np.array_equal(ak.to_numpy(ak.flatten(gamma)), flat)
    refit = rb.GridKDE(0.35).fit(jagged, ak.unflatten(yt, counts))
    assert refit.x_dims == 2


def test_column_is_the_scalar_case_exactly(sample) -> None:
    x, y = sample
    column = rb.GridKDE(0.2).fit(x[:, :1], y)
    scalar = rb.GridKDE(0.2).fit(x[:, 0], y)
    assert column.x_dims == 1
    assert np.array_equal(column.cdf_, scalar.cdf_)
    assert np.array_equal(column.transform(x[:, 0], y), scalar.transform(x[:, 0], y))


def test_refit_on_one_observable_after_several(sample) -> None:
    x, y = sample
    t = rb.GridKDE(0.35).fit(x, y)
    t.fit(x[:, 0], y)
    assert t.x_dims == 1
    assert np.array_equal(
        t.transform(x[:, 0], y), rb.GridKDE(0.35).fit(x[:, 0], y).transform(x[:, 0], y)
    )


def test_bad_input_is_refused(sample, fitted) -> None:
    x, y = sample
    with pytest.raises(ValueError, match="k <= 3"):
        rb.GridKDE(0.3).fit(np.zeros((100, 4)), y[:100])
    with pytest.raises(ValueError, match="length mismatch"):
        rb.GridKDE(0.3).fit(x[:-1], y)
    with pytest.raises(ValueError, match="length mismatch"):
        rb.GridKDE(0.3).fit([x[:, 0], x[:-1, 1]], y)
    bad = x.copy()
    bad[5, 1] = np.nan
    with pytest.raises(ValueError, match="x has 1 NaN"):
        rb.GridKDE(0.3).fit(bad, y)
    with pytest.raises(ValueError, match="2 observables"):
        fitted.transform(np.zeros((3, 3)), np.zeros(3))
    with pytest.raises(ValueError, match="constant"):
        rb.GridKDE(0.3).fit(np.stack([x[:, 0], np.ones(len(y))], axis=1), y)
    with pytest.raises(ValueError, match="degree"):
        rb.GridKDE(0.3, degree=3).fit(x, y)


@pytest.mark.slow
def test_automatic_width_on_three_observables() -> None:
    x, y = THREE.sample(10_000, seed=10)
    xt, yt = THREE.sample(4000, seed=11)
    joint = rb.GridKDE(degree=1).fit(x, y)
    assert joint.x_dims == 3
    assert joint.selection_ is not None
    assert 0.08 <= joint.sigma_r_ <= 1.3
    best_alone = min(
        float(
            np.sqrt(
                np.mean(
                    (
                        rb.GridKDE(degree=1).fit(x[:, d], y).transform(xt[:, d], yt)
                        - THREE.exact(xt, yt)
                    )
                    ** 2
                )
            )
        )
        for d in range(3)
    )
    assert _rms(joint, THREE, xt, yt) < best_alone / 2


def test_kde_sums_numpy_path_equals_compiled_and_far_queries_stay_exact(
    monkeypatch, sample
) -> None:
    from rosenblatt.transforms import _kde_vector

    x, y = sample[0][:2000], sample[1][:2000]
    t = rb.KDE(0.02).fit(x, y)
    # a point far from every event in kernel units: all kernel values underflow
    xq = np.array([[3.0, -3.0], [0.0, 0.0], [x[0, 0], x[0, 1]]])
    yq = np.array([0.0, 0.3, y[0]])
    compiled = t.transform(xq, yq)
    nearest = int(np.argmin(((x - xq[0]) ** 2 / t.bandwidth_**2).sum(axis=1)))
    assert compiled[0] == float(y[nearest] <= 0.0)
    monkeypatch.setattr(_kde_vector, "_compiled", lambda: None)
    assert np.allclose(t.transform(xq, yq), compiled, rtol=0, atol=1e-12)


def test_kde_automatic_widths(sample, testing) -> None:
    x, y = sample[0][:4000], sample[1][:4000]
    t = rb.KDE("auto").fit(x, y)
    assert t.selection_ is not None
    assert t.axis_sigma_r_.shape == (2,)
    assert 0.08 <= t.sigma_r_ <= 0.6
    assert _rms(t, TWO, *testing) < 0.05
    loaded = type(t).from_state(t.get_state())
    assert np.array_equal(loaded.transform(*testing), t.transform(*testing))


def test_sequential_removes_the_last_observable_only(sample, testing) -> None:
    x, y = sample
    t = rb.SequentialTransform([rb.GridKDE(0.2), rb.GridKDE(0.2)]).fit(x, y)
    assert t.x_dims == 2
    gamma = t.transform(x, y)
    assert stats.kstest(gamma, "uniform").statistic < 0.03
    joint = rb.GridKDE(0.35).fit(x, y)
    # independent of the last observable, not of the vector: its dCor² with x stays above the joint's
    assert rb.distance_correlation_sqr(x[:, 1], gamma) < 2e-3
    assert rb.distance_correlation_sqr(x, gamma) > 2 * rb.distance_correlation_sqr(
        x, joint.transform(x, y)
    )
    ys = np.linspace(-4, 4, 101)
    curve = t.transform(np.zeros((len(ys), 2)), ys)
    assert np.all(np.diff(curve) >= 0)
    loaded = rb.SequentialTransform.from_state(t.get_state())
    assert np.array_equal(loaded.transform(*testing), t.transform(*testing))
    with pytest.raises(ValueError, match="one transform per observable"):
        rb.SequentialTransform([rb.GridKDE(0.2)]).fit(x, y)
    with pytest.raises(ValueError, match="k >= 2"):
        rb.SequentialTransform([rb.GridKDE(0.2)]).fit(x[:, 0], y)


@pytest.mark.slow
def test_irgi_cells_automatic_depth_and_numpy_blend(monkeypatch, sample, testing) -> None:
    from rosenblatt.transforms import _irgi_nested

    x, y = sample
    t = rb.IRGI("auto").fit(x, y)
    assert t.selection_ is not None
    assert t.selection_.parameter == "splits"
    assert t.splits_ in t.selection_.values
    # the fewest levels among the splits scored within one standard error of the best
    scores = dict(zip(t.selection_.values, t.selection_.scores, strict=True))
    best = min(scores, key=scores.__getitem__)
    assert sum(t.splits_) <= sum(best)
    assert scores[t.splits_] >= scores[best]
    assert len(t.boxes_) == 2**t.depth_ == 2 ** sum(t.splits_)
    # the cells hold equal weight
    inside = [np.all((x >= b[0]) & (x <= b[1]), axis=1).sum() for b in t.boxes_]
    assert max(inside) - min(inside) <= 2 + 0.01 * len(y) / len(inside)
    assert _rms(t, TWO, *testing) < 0.035
    # the balanced splits of every depth were scored before single levels moved
    balanced = {(d - d // 2, d // 2) for d in range(1, 10)}
    assert balanced <= set(t.selection_.values)
    assert len(t.selection_.values) > len(balanced)
    compiled = t.transform(testing[0][:300], testing[1][:300])
    monkeypatch.setattr(_irgi_nested, "_compiled", lambda: None)
    assert np.allclose(
        t.transform(testing[0][:300], testing[1][:300]), compiled, rtol=0, atol=1e-12
    )
    with pytest.raises(ValueError, match=r"depth must be 'auto', an integer in \[1, 9\]"):
        rb.IRGI(12).fit(x, y)


def test_irgi_levels_per_observable(sample, testing) -> None:
    x, y = sample
    t = rb.IRGI((1, 3)).fit(x, y)
    assert t.splits_ == (1, 3)
    assert t.depth_ == 4
    assert t.fitted_params() == {"depth": [1, 3]}
    # the slabs: two along x1, each cut in eight along x2 at its own medians
    assert len(np.unique(t.boxes_[:, 0, 0])) == 2
    assert not np.allclose(t.boxes_[:7, 1, 1], t.boxes_[8:15, 1, 1])
    again = rb.IRGI(**t.fitted_params()).fit(x, y)
    assert np.array_equal(again.transform(*testing), t.transform(*testing))
    assert rb.IRGI(4).fit(x, y).splits_ == (2, 2)
    assert rb.IRGI(5).fit(x, y).splits_ == (3, 2)
    # a level count of zero: no split along that observable, linear in x2 alone
    flat = rb.IRGI((0, 3)).fit(x, y)
    xs = np.column_stack([np.linspace(-2, 2, 50), np.full(50, 0.3)])
    u_equal = 1.0 + (xs - flat.trend_centre_) @ flat.trend_slope_
    assert np.ptp(flat.transform(xs, u_equal)) < 1e-12
    for bad in ((1, 2, 3), (1, -1), (0, 0), (1.5, 2)):
        with pytest.raises(ValueError, match="depth"):
            rb.IRGI(bad).fit(x, y)


def test_irgi_nested_gamma_is_continuous_and_multilinear_between_centres(sample) -> None:
    from rosenblatt.transforms._irgi_nested import cell_centres

    x, y = sample
    t = rb.IRGI((2, 2)).fit(x, y)
    slabs = cell_centres(t.boxes_, t.splits_)[0]
    # along x1 between two slab centres, at x2 beyond every cell centre: linear in x1
    x1 = np.linspace(slabs[1], slabs[2], 7)
    pts = np.column_stack([x1, np.full(7, 3.9)])
    level = 0.2 + (pts - t.trend_centre_) @ t.trend_slope_
    gamma = t.transform(pts, level)
    assert np.allclose(np.diff(gamma, 2), 0.0, atol=1e-12)
    # no jump across a slab centre or a face
    for edge in (*slabs, *t.boxes_[:, 1, 0]):
        near = np.array([[np.nextafter(edge, -np.inf), 0.1], [np.nextafter(edge, np.inf), 0.1]])
        assert abs(np.diff(t.transform(near, np.array([0.4, 0.4])))[0]) < 1e-9
    grid = np.linspace(-4, 4, 301)
    for point in ((0.0, 0.0), (1.5, -2.0), (-3.0, 3.0)):
        curve = t.transform(np.tile(point, (len(grid), 1)), grid)
        assert np.all(np.diff(curve) >= 0)
        assert curve.min() >= 0
        assert curve.max() <= 1


def test_irgi_nested_cells_of_a_discrete_observable(tmp_path) -> None:
    rng = np.random.default_rng(3)
    n = 5000
    x = np.column_stack([rng.normal(size=n), rng.integers(0, 4, n).astype(float)])
    y = x[:, 0] + x[:, 1] + rng.normal(size=n)
    t = rb.IRGI((1, 3)).fit(x, y)
    # eight cells along x2 in each slab share its four values: some cells are one value wide
    assert np.any(t.boxes_[:, 1, 1] == t.boxes_[:, 0, 1])
    gamma = t.transform(x, y)
    assert np.all(np.isfinite(gamma))
    assert np.abs(np.histogram(gamma, 10, (0, 1))[0] / n - 0.1).max() < 0.02
    t.save(tmp_path / "irgi.json")
    loaded = rb.load(tmp_path / "irgi.json")
    assert np.array_equal(loaded.transform(x, y), gamma)


@pytest.mark.parametrize("plane", [True, False], ids=["with-plane", "without-plane"])
def test_irgi_file_of_kd_cells_is_refused_in_one_line_naming_its_writer(
    sample, tmp_path, plane: bool
) -> None:
    x, y = sample
    document = json.loads(rb.serialization.dumps(rb.IRGI(4).fit(x, y)))
    # the layout before the nested cells: no levels per observable (and, earlier still, no plane)
    del document["state"]["splits"]
    if not plane:
        del document["state"]["trend_centre"], document["state"]["trend_slope"]
    path = tmp_path / "irgi.json"
    path.write_text(json.dumps(document))
    with pytest.raises(rb.SchemaError) as refused:
        rb.load(path)
    message = str(refused.value)
    assert "\n" not in message
    assert message == (
        f"{path} (written by {document['written_by']}): IRGI on several observables saved as "
        "k-d cells blended by hats, the layout before its nested cells, which is no longer "
        "read: fit the transform again"
    )
    del document["written_by"]
    with pytest.raises(rb.SchemaError, match=r"irgi\.json \(written by an unknown writer\): IRGI"):
        rb.serialization.loads(json.dumps(document), source="irgi.json")


def test_irgi_file_of_nested_cells_needs_its_levels_and_its_plane(sample) -> None:
    x, y = sample
    document = json.loads(rb.serialization.dumps(rb.IRGI(4).fit(x, y)))
    document["state"]["splits"] = [3, 2]
    with pytest.raises(rb.SchemaError, match="splits must be 2 non-negative integers summing"):
        rb.serialization.loads(json.dumps(document), source="irgi.json")
    document["state"]["splits"] = [2, 2]
    del document["state"]["trend_centre"]
    with pytest.raises(rb.SchemaError, match=r"malformed irgi state \(KeyError: 'trend_centre'\)"):
        rb.serialization.loads(json.dumps(document), source="irgi.json")


def test_irgi_plane_is_weighted_least_squares_and_its_cdf_is_read_at_the_residual(sample) -> None:
    from rosenblatt.transforms._irgi_vector import linear_trend

    x, y = sample
    w = np.random.default_rng(9).uniform(0.5, 2.0, len(y))
    t = rb.IRGI(6).fit(x, y, w)
    design = np.column_stack([np.ones(len(y)), x]) * np.sqrt(w)[:, None]
    coefficients = np.linalg.lstsq(design, y * np.sqrt(w), rcond=None)[0]
    assert np.allclose(t.trend_slope_, coefficients[1:], rtol=0, atol=1e-10)
    assert np.allclose(t.trend_centre_, np.average(x, axis=0, weights=w), rtol=0, atol=1e-12)
    # the closed form's mean is 0.6 x1 + 0.4 x2
    assert np.allclose(t.trend_slope_, [0.6, 0.4], atol=0.03)
    # the same CDF as a fit on y shifted by any plane: the plane is a change of variable only
    shift = np.array([2.0, -1.0])
    moved = rb.IRGI(6).fit(x, y + x @ shift, w)
    xt, yt = TWO.sample(2000, seed=10)
    inside = (yt > y.min()) & (yt < y.max())
    inside &= (yt + xt @ shift > (y + x @ shift).min()) & (yt + xt @ shift < (y + x @ shift).max())
    assert np.allclose(
        moved.transform(xt[inside], (yt + xt @ shift)[inside]),
        t.transform(xt[inside], yt[inside]),
        rtol=0,
        atol=1e-9,
    )
    # no plane where the weighted spread of x is not positive
    _, slope = linear_trend(x, y, -np.ones(len(y)))
    assert np.array_equal(slope, np.zeros(2))
    flat = np.column_stack([x[:, 0], np.full(len(y), 1.5)])
    assert np.array_equal(linear_trend(flat, y, np.ones(len(y)))[1], np.zeros(2))


def test_irgi_reaches_the_joint_accuracy_of_the_kernel_estimators(sample, testing) -> None:
    x, y = sample
    irgi = min(_rms(rb.IRGI(depth).fit(x, y), TWO, *testing) for depth in (4, 5, 6))
    kde = _rms(rb.KDE(0.17).fit(x, y), TWO, *testing)
    assert irgi < 0.03
    assert irgi < 1.5 * kde
