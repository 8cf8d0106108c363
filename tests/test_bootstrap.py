"""Bootstrap ensembles: the spread of independent fits, determinism, weights, JSON and correctionlib."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import numpy as np
import pytest
from gaussian_blob import bivariate_normal

import rosenblatt as rb
from rosenblatt.closed_forms import closed_form
from rosenblatt.transforms.ensemble import keyed_poisson_weights, poisson_weights

BLOB = closed_form("bivariate_normal")
N_DEFINING = 20_000


def fixed_points() -> tuple[np.ndarray, np.ndarray]:
    """49 points in the bulk of the blob: x in [-1.2, 1.2], gamma between 0.1 and 0.9."""
    x, quantile = np.meshgrid(np.linspace(-1.2, 1.2, 7), np.linspace(-1.2, 1.2, 7), indexing="ij")
    y = 0.6 * x + 0.8 * quantile  # the conditional mean plus 0.8 quantile widths
    return x.ravel(), y.ravel()


@pytest.mark.slow
@pytest.mark.parametrize(
    "estimator",
    [
        rb.IRGI(depth=4),
        rb.IRGI(depth=rb.IRGI.max_depth(N_DEFINING)),
        rb.KDE(sigma_r=0.1),
        rb.GridKDE(sigma_r=0.3, y_levels=128),
    ],
    ids=["irgi", "irgi_largest_depth", "kde", "grid_kde"],
)
def test_bootstrap_spread_matches_independent_samples(estimator: rb.IRGI) -> None:
    n_samples = 24
    x_fixed, y_fixed = fixed_points()
    independent = np.array(
        [
            copy.deepcopy(estimator)
            .fit(*BLOB.sample(N_DEFINING, [7, k]))
            .transform(x_fixed, y_fixed)
            for k in range(n_samples)
        ]
    )
    ensemble = rb.bootstrap(estimator, *BLOB.sample(N_DEFINING, [8, 0]), n=n_samples, seed=3)
    ratio = ensemble.std(x_fixed, y_fixed) / independent.std(axis=0, ddof=1)
    assert 0.7 < np.median(ratio) < 1.4


@pytest.fixture(scope="module")
def sample() -> tuple[np.ndarray, np.ndarray]:
    return bivariate_normal(4096, seed=5)


@pytest.fixture(scope="module")
def ensemble(sample: tuple[np.ndarray, np.ndarray]) -> rb.TransformEnsemble:
    return rb.bootstrap(rb.IRGI(depth=3), *sample, n=12, seed=4)


def test_replicas_are_fits_with_poisson_weights(sample, ensemble) -> None:
    x, y = sample
    assert len(ensemble.replicas_) == 12
    assert ensemble.n_refits_ == 0
    nominal = rb.IRGI(depth=3).fit(x, y)
    np.testing.assert_array_equal(ensemble.transform(x, y), nominal.transform(x, y))
    for k in (0, 7):
        weight = poisson_weights(len(x), 4, ensemble.replica_draws_[k])
        expected = rb.IRGI(depth=3).fit(x, y, weight).transform(x, y)
        np.testing.assert_array_equal(ensemble.transform(x, y, variation=f"replica_{k}"), expected)


def test_variations_std_and_envelope(sample, ensemble) -> None:
    x, y = sample
    gamma = ensemble.transform(x, y)
    variations = ensemble.variations(x, y)
    assert variations.shape == (12, len(x))
    std = ensemble.std(x, y)
    np.testing.assert_allclose(std, variations.std(axis=0, ddof=1), atol=1e-12)
    np.testing.assert_array_equal(ensemble.transform(x, y, variation="replica_5"), variations[5])
    np.testing.assert_allclose(ensemble.transform(x, y, variation="up"), np.clip(gamma + std, 0, 1))
    np.testing.assert_allclose(
        ensemble.transform(x, y, variation="down"), np.clip(gamma - std, 0, 1)
    )
    assert 0.002 < np.median(std) < 0.05
    for bad in ("replica_12", "replica_01", "sideways", "replica_-1"):
        with pytest.raises(ValueError, match="unknown variation"):
            ensemble.transform(x, y, variation=bad)


def test_awkward_input_keeps_its_structure(ensemble) -> None:
    ak = pytest.importorskip("awkward")
    x = ak.Array([[0.1, -0.5], [], [1.0]])
    y = ak.Array([[0.0, 0.3], [], [-1.0]])
    variations = ensemble.variations(x, y)
    assert ak.to_list(ak.num(variations, axis=2)) == [[2, 0, 1]] * 12
    flat = ensemble.variations(np.array([0.1, -0.5, 1.0]), np.array([0.0, 0.3, -1.0]))
    np.testing.assert_array_equal(ak.to_numpy(ak.flatten(variations, axis=2)), flat)
    assert ak.to_list(ak.num(ensemble.std(x, y))) == [2, 0, 1]


def test_nan_input_warns_once(ensemble) -> None:
    x, y = np.array([0.0, np.nan, 0.5]), np.array([0.1, 0.2, np.nan])
    with pytest.warns(rb.NaNInputWarning) as record:
        variations = ensemble.variations(x, y, nan_policy="propagate")
    assert len(record) == 1
    assert np.isnan(variations[:, 1:]).all()
    assert np.isfinite(variations[:, 0]).all()


def test_deterministic_from_the_seed(sample, ensemble) -> None:
    x, y = sample
    again = rb.bootstrap(rb.IRGI(depth=3), x, y, n=12, seed=4)
    np.testing.assert_array_equal(again.variations(x, y), ensemble.variations(x, y))
    other = rb.bootstrap(rb.IRGI(depth=3), x, y, n=12, seed=5)
    assert not np.array_equal(other.variations(x, y), ensemble.variations(x, y))


class _FirstEventNeeded(rb.IRGI):
    """IRGI that refuses weights leaving its first event out (a third of the Poisson draws)."""

    def _fit(self, x: np.ndarray, y: np.ndarray, w: np.ndarray | None) -> None:
        if w is not None and w[0] == 0:
            msg = "the first event has no weight"
            raise ValueError(msg)
        super()._fit(x, y, w)


def test_failed_draws_are_refitted_and_counted() -> None:
    x, y = bivariate_normal(6000, seed=6)
    ensemble = rb.bootstrap(_FirstEventNeeded(depth=3), x, y, n=10, seed=0)
    assert ensemble.n_refits_ > 0
    assert len(ensemble.replicas_) == 10
    draws = sorted(ensemble.replica_draws_ + ensemble.failed_draws_)
    assert draws == list(range(10 + ensemble.n_refits_))
    assert all(poisson_weights(len(x), 0, d)[0] == 0 for d in ensemble.failed_draws_)
    with pytest.raises(ValueError, match="could not be fitted"):
        rb.TransformEnsemble(_FirstEventNeeded(depth=3), n=10, seed=0, max_refits=0).fit(x, y)


@pytest.mark.parametrize("keyed", [False, True])
def test_replicas_fit_at_the_largest_depth_the_sample_supports(keyed: bool) -> None:
    # Poisson(1) weights leave a third of the events out, and cells of equal weight at the
    # largest depth then hold single events: each replica keeps the nominal's depth
    x, y = bivariate_normal(5000, seed=6)
    depth = rb.IRGI.max_depth(len(x))
    ensemble = rb.bootstrap(rb.IRGI(depth=depth), x, y, n=20, seed=0, keyed=keyed)
    assert ensemble.n_refits_ == 0
    assert {replica.depth_ for replica in ensemble.replicas_} == {depth}
    assert all(replica.empty_bins for replica in ensemble.replicas_)
    assert not ensemble.nominal_.empty_bins
    # the empty bins are coincident edges: gamma stays a CDF in y
    grid = np.linspace(y.min() - 0.1, y.max() + 0.1, 400)
    for replica in ensemble.replicas_[:5]:
        assert np.all(np.diff(replica.y_edges_, axis=1) >= 0)
        for x0 in (x.min(), np.median(x), x.max()):
            gamma = replica.transform(np.full_like(grid, x0), grid)
            assert np.all(np.diff(gamma) >= 0)
            assert gamma[0] == 0.0
            assert gamma[-1] == 1.0
    # the replicas scatter about the nominal by the fit's statistics
    x_fixed, y_fixed = fixed_points()
    spread = ensemble.std(x_fixed, y_fixed)
    assert 0.005 < np.median(spread) < 0.05
    shift = ensemble.variations(x_fixed, y_fixed).mean(axis=0) - ensemble.transform(
        x_fixed, y_fixed
    )
    assert np.median(np.abs(shift)) < np.median(spread)


def test_weights_multiply_and_may_be_negative(sample) -> None:
    x, y = sample
    weight = np.where(np.arange(len(x)) % 10 == 0, -0.2, 1.3)
    ensemble = rb.bootstrap(rb.KDE(sigma_r=0.3), x, y, weight, n=4, seed=2)
    counts = poisson_weights(len(x), 2, ensemble.replica_draws_[1])
    expected = rb.KDE(sigma_r=0.3).fit(x, y, counts * weight).transform(x[:50], y[:50])
    np.testing.assert_array_equal(
        ensemble.transform(x[:50], y[:50], variation="replica_1"), expected
    )
    assert ensemble.sum_weight_ == pytest.approx(weight.sum())


def test_automatic_parameter_is_chosen_once(sample) -> None:
    x, y = sample
    ensemble = rb.bootstrap(rb.GridKDE(sigma_r="auto", y_levels=32), x, y, n=3)
    assert ensemble.nominal_.selection_ is not None
    widths = {replica.sigma_r_ for replica in ensemble.replicas_}
    assert widths == {ensemble.nominal_.sigma_r_}
    assert all(replica.selection_ is None for replica in ensemble.replicas_)


def test_invalid_parameters(sample) -> None:
    x, y = sample
    with pytest.raises(ValueError, match="n must be an integer >= 2"):
        rb.bootstrap(rb.IRGI(depth=3), x, y, n=1)
    with pytest.raises(ValueError, match="seed"):
        rb.bootstrap(rb.IRGI(depth=3), x, y, seed=-1)
    with pytest.raises(TypeError, match="not an ensemble"):
        rb.bootstrap(rb.bootstrap(rb.IRGI(depth=3), x, y, n=2), x, y)
    with pytest.raises(rb.NotFittedError):
        rb.TransformEnsemble(rb.IRGI(depth=3)).variations(x, y)


@pytest.mark.parametrize(
    "estimator", [rb.IRGI(depth=3), rb.KDE(sigma_r=0.2), rb.GridKDE(0.3, y_levels=32)]
)
def test_save_and_load_give_identical_values(sample, estimator: rb.IRGI, tmp_path: Path) -> None:
    x, y = sample
    ensemble = rb.bootstrap(estimator, x, y, np.full(len(x), 0.5), n=3, seed=1)
    path = tmp_path / "ensemble.json"
    ensemble.save(path)
    loaded = rb.load(path)
    assert isinstance(loaded, rb.TransformEnsemble)
    assert type(loaded.nominal_) is type(estimator)
    assert loaded.replica_draws_ == ensemble.replica_draws_
    for variation in ("nominal", "up", "down", "replica_2"):
        np.testing.assert_array_equal(
            loaded.transform(x, y, variation=variation),
            ensemble.transform(x, y, variation=variation),
        )
    document = json.loads(path.read_text())
    assert document["kind"] == "ensemble"
    assert document["state"]["member_kind"] == estimator.kind
    if isinstance(estimator, rb.KDE):  # the defining events are stored once
        assert {"x", "y"} <= set(document["state"]["replicas"][0]["shared"])
        assert "x" not in document["state"]["replicas"][0]["state"]


def test_tampered_ensembles_are_refused(sample, ensemble, tmp_path: Path) -> None:
    path = tmp_path / "ensemble.json"
    ensemble.save(path)
    document = json.loads(path.read_text())

    def load(change) -> None:
        tampered = json.loads(json.dumps(document))
        change(tampered["state"])
        path.write_text(json.dumps(tampered))
        rb.load(path)

    with pytest.raises(rb.SchemaError, match="member kind"):
        load(lambda s: s.update(member_kind="ensemble"))
    with pytest.raises(rb.SchemaError, match="replica 3"):
        load(lambda s: s["replicas"][3]["state"].update(cdf=[[0.0]]))
    with pytest.raises(rb.SchemaError, match="n = 12"):
        load(lambda s: s.update(replicas=s["replicas"][:5], replica_draws=s["replica_draws"][:5]))
    with pytest.raises(rb.SchemaError, match="shared"):
        load(lambda s: s["replicas"][0].update(shared=["__class__"]))


def test_correctionlib_export(sample, tmp_path: Path) -> None:
    correctionlib = pytest.importorskip("correctionlib")
    from rosenblatt.correctionlib import write_correctionlib

    x, y = sample
    ensemble = rb.bootstrap(rb.IRGI(depth=3), x, y, n=5, seed=1)
    path = tmp_path / "ensemble-correctionlib.json"
    metadata = write_correctionlib(ensemble, path, "gamma", n_check=20_000)
    correction = correctionlib.CorrectionSet.from_file(str(path))["gamma"]
    assert [v.name for v in correction.inputs] == ["x", "y", "variation"]
    x_test, y_test = bivariate_normal(5000, seed=9)
    for variation in ("nominal", "replica_0", "replica_4"):
        expected = ensemble.transform(x_test, y_test, variation=variation)
        np.testing.assert_allclose(
            correction.evaluate(x_test, y_test, variation), expected, atol=1e-12
        )
    for variation in ("up", "down"):
        error = metadata["envelope_error"][variation]
        difference = correction.evaluate(x_test, y_test, variation) - ensemble.transform(
            x_test, y_test, variation=variation
        )
        assert np.max(np.abs(difference)) <= error["max_abs_error"] + 1e-12
        assert np.sqrt(np.mean(difference**2)) < 0.5 * np.sqrt(
            np.mean(ensemble.std(x_test, y_test) ** 2)
        )
    with pytest.raises(Exception, match="replica_5"):
        correction.evaluate(0.0, 0.0, "replica_5")
    validated = ensemble.to_correctionlib("gamma", n_check=1000)
    assert validated.corrections[0].data.nodetype == "category"


def test_correctionlib_export_of_a_kde_ensemble_is_refused(sample) -> None:
    from rosenblatt.correctionlib import correctionlib_document

    ensemble = rb.bootstrap(rb.KDE(sigma_r=0.2), *sample, n=2)
    with pytest.raises(TypeError, match="grid transforms"):
        correctionlib_document(ensemble)


def test_keyed_counts_are_poisson_and_follow_the_event() -> None:
    from scipy import stats

    rng = np.random.default_rng(11)
    x, y = rng.normal(size=200_000), rng.normal(size=200_000)
    counts = keyed_poisson_weights(x, y, 3, 5)
    observed = np.bincount(counts, minlength=6)[:6]
    expected = stats.poisson.pmf(np.arange(6), 1.0) * len(x)
    assert stats.chisquare(observed, expected * observed.sum() / expected.sum()).pvalue > 1e-3
    # the same event gets the same count wherever it is read: shuffled, in chunks
    order = rng.permutation(len(x))
    np.testing.assert_array_equal(keyed_poisson_weights(x[order], y[order], 3, 5), counts[order])
    np.testing.assert_array_equal(keyed_poisson_weights(x[:7], y[:7], 3, 5), counts[:7])
    # other draws, seeds and coordinates are independent
    for other in (
        keyed_poisson_weights(x, y, 3, 6),
        keyed_poisson_weights(x, y, 4, 5),
        keyed_poisson_weights(y, x, 3, 5),
    ):
        assert abs(np.corrcoef(counts, other)[0, 1]) < 0.01
    with pytest.raises(ValueError, match="same length"):
        keyed_poisson_weights(x[:3], y[:4], 0, 0)


def test_a_keyed_ensemble_fits_replicas_with_keyed_counts(sample, tmp_path: Path) -> None:
    x, y = sample
    ensemble = rb.bootstrap(rb.IRGI(depth=3), x, y, n=4, seed=9, keyed=True)
    assert ensemble.keyed
    for k in (0, 3):
        weight = keyed_poisson_weights(x, y, 9, ensemble.replica_draws_[k])
        expected = rb.IRGI(depth=3).fit(x, y, weight).transform(x, y)
        np.testing.assert_array_equal(ensemble.transform(x, y, variation=f"replica_{k}"), expected)
    ensemble.save(tmp_path / "keyed.json")
    again = rb.load(tmp_path / "keyed.json")
    assert again.keyed
    np.testing.assert_array_equal(again.variations(x, y), ensemble.variations(x, y))
    with pytest.raises(TypeError, match="keyed"):
        rb.bootstrap(rb.IRGI(depth=3), x, y, n=4, keyed="yes")  # type: ignore[arg-type]
