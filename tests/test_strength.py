"""The decorrelation strength: ``s_p = (1 - p) F(y) + p gamma(x, y)`` against exact answers.

On the paper's Gaussian blob with its closed-form conditional CDF: ``p = 1``
is the exact ``gamma``, ``p = 0`` ranks events exactly as the raw score (same
AUC and R50), the squared distance correlation with ``x`` falls with ``p``;
the marginal CDF is the mid-distribution function, strictly increasing, with
weights equal to replication (negative ones allowed).
"""

from __future__ import annotations

import itertools
from typing import Any, ClassVar

import numpy as np
import pytest
from gaussian_blob import RHO, bivariate_normal, exact_gamma
from scipy.stats import norm

import rosenblatt as rb
from rosenblatt.transforms import (
    ConditionalCDFTransform,
    MarginalCDF,
    PartialDecorrelation,
    partial_decorrelation,
)

pytestmark = pytest.mark.core

STRENGTHS = (0.0, 0.25, 0.5, 0.75, 0.9, 1.0)


class ExactBlob(ConditionalCDFTransform, register=False):
    """The bivariate normal's closed-form conditional CDF, whatever the defining sample."""

    kind: ClassVar[str] = "exact_blob_test"

    def _fit(self, x: Any, y: Any, w: Any) -> None:
        self.domain_ = ((float(x.min()), float(x.max())), (float(y.min()), float(y.max())))

    def _transform(self, x: Any, y: Any) -> Any:
        return exact_gamma(x, y)

    def get_state(self) -> dict[str, Any]:
        return {}

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> ExactBlob:
        return cls()


@pytest.fixture(scope="module")
def blob() -> dict[str, np.ndarray]:
    """A defining background, and a testing background with a signal shifted up in ``y``."""
    x_def, y_def = bivariate_normal(20_000, seed=1)
    x_bkg, y_bkg = bivariate_normal(5_000, seed=2)
    rng = np.random.default_rng(3)
    x_sig = rng.normal(size=2_000)
    y_sig = RHO * x_sig + 1.5 + 0.6 * rng.normal(size=2_000)
    return {
        "x_def": x_def,
        "y_def": y_def,
        "x": np.r_[x_bkg, x_sig],
        "y": np.r_[y_bkg, y_sig],
        "label": np.r_[np.zeros(5_000, int), np.ones(2_000, int)],
    }


def test_full_strength_is_the_exact_gamma(blob: dict[str, np.ndarray]) -> None:
    knob = PartialDecorrelation(ExactBlob(), strength=1.0).fit(blob["x_def"], blob["y_def"])
    exact = exact_gamma(blob["x"], blob["y"])
    np.testing.assert_array_equal(knob.transform(blob["x"], blob["y"]), exact)
    marginal = knob.marginal_(blob["y"])
    np.testing.assert_array_equal(partial_decorrelation(exact, marginal, 1.0), exact)
    np.testing.assert_array_equal(partial_decorrelation(exact, marginal, 0.0), marginal)


def test_full_strength_of_a_fitted_irgi_is_its_gamma(blob: dict[str, np.ndarray]) -> None:
    irgi = rb.IRGI(depth=5).fit(blob["x_def"], blob["y_def"])
    knob = PartialDecorrelation.from_fitted(irgi, blob["y_def"])
    np.testing.assert_array_equal(
        knob.scores(blob["x"], blob["y"], [1.0])[0], irgi.transform(blob["x"], blob["y"])
    )


def test_zero_strength_ranks_as_the_raw_score(blob: dict[str, np.ndarray]) -> None:
    knob = PartialDecorrelation(ExactBlob(), strength=0.0).fit(blob["x_def"], blob["y_def"])
    x, y, label = blob["x"], blob["y"], blob["label"]
    assert y.max() > blob["y_def"].max()  # signal above the defining range: still ranked
    s0 = knob.transform(x, y)
    np.testing.assert_array_equal(np.argsort(s0, kind="stable"), np.argsort(y, kind="stable"))
    assert rb.roc_auc(label, s0) == rb.roc_auc(label, y)
    assert rb.background_rejection(label, s0) == rb.background_rejection(label, y)
    # F is the normal CDF of the blob's y up to the sample's resolution
    assert np.max(np.abs(knob.marginal_(y) - norm.cdf(y))) < 0.02


def test_distance_correlation_falls_with_strength(blob: dict[str, np.ndarray]) -> None:
    knob = PartialDecorrelation(ExactBlob()).fit(blob["x_def"], blob["y_def"])
    bkg = blob["label"] == 0
    x, y = blob["x"][bkg], blob["y"][bkg]
    dcc = [rb.distance_correlation_sqr(x, s) for s in knob.scores(x, y, STRENGTHS)]
    assert dcc[0] == pytest.approx(rb.distance_correlation_sqr(x, norm.cdf(y)), rel=0.05)
    assert all(later < earlier for earlier, later in itertools.pairwise(dcc))
    assert dcc[-1] < 1e-3
    assert dcc[0] > 0.2


def test_weights_equal_replication() -> None:
    rng = np.random.default_rng(4)
    y = rng.normal(size=300)
    counts = rng.integers(0, 4, size=300)
    counts[0] = 1
    weighted = MarginalCDF().fit(y, counts.astype(float))
    repeated = MarginalCDF().fit(np.repeat(y, counts))
    probe = np.r_[np.linspace(-5, 5, 201), y]
    np.testing.assert_allclose(weighted(probe), repeated(probe), rtol=0, atol=1e-14)


def test_mid_distribution_and_strictly_increasing_tails() -> None:
    marginal = MarginalCDF().fit([1.0, 2.0, 2.0, 4.0])
    np.testing.assert_allclose(marginal([1.0, 2.0, 4.0]), [0.125, 0.5, 0.875])
    probe = np.r_[-1e6, -10.0, 0.0, 0.999, np.linspace(1, 4, 50), 4.001, 10.0, 1e6]
    values = marginal(probe)
    assert np.all(np.diff(values) > 0)
    assert values[0] > 0
    assert values[-1] < 1
    assert marginal([-np.inf, np.inf]).tolist() == [0.0, 1.0]


def test_negative_weights_keep_it_strictly_increasing() -> None:
    y = np.array([0.0, 1.0, 2.0, 3.0, 4.0])
    w = np.array([1.0, 2.0, -2.0, 1.0, 1.0])  # the CDF is flat from 1 to 2
    marginal = MarginalCDF().fit(y, w)
    assert np.all(np.diff(marginal.levels_) > 0)
    assert np.all(np.diff(marginal(np.linspace(-1, 5, 101))) > 0)


@pytest.mark.parametrize("strength", [-0.1, 1.5, float("nan"), float("inf"), True, "half"])
def test_strength_outside_zero_one_is_refused(strength: Any) -> None:
    with pytest.raises(ValueError, match=r"strength must be a number in \[0, 1\]"):
        partial_decorrelation([0.5], [0.5], strength)
    with pytest.raises(ValueError, match="strength must be"):
        PartialDecorrelation(ExactBlob(), strength=strength).fit([0.0, 1.0], [0.0, 1.0])
    knob = PartialDecorrelation(ExactBlob()).fit([0.0, 1.0], [0.0, 1.0])
    with pytest.raises(ValueError, match="strength must be"):
        knob.scores([0.0], [0.0], [0.5, strength])
    with pytest.raises(ValueError, match="strength must be"):
        knob.with_strength(strength)


def test_nan_and_mismatched_inputs_are_refused() -> None:
    with pytest.raises(ValueError, match="gamma has 1 NaN"):
        partial_decorrelation([0.5, np.nan], [0.5, 0.5], 0.5)
    with pytest.raises(ValueError, match="length mismatch"):
        partial_decorrelation([0.5], [0.5, 0.5], 0.5)
    with pytest.raises(ValueError, match="y has 1 NaN"):
        MarginalCDF().fit([0.0, np.nan])
    marginal = MarginalCDF().fit([0.0, 1.0])
    with pytest.raises(ValueError, match="y has 1 NaN"):
        marginal([0.5, np.nan])
    with pytest.raises(ValueError, match="positive sum"):
        MarginalCDF().fit([0.0, 1.0], [1.0, -2.0])


def test_unfitted_use_is_refused() -> None:
    with pytest.raises(rb.NotFittedError, match="MarginalCDF is not fitted"):
        MarginalCDF()([0.5])
    with pytest.raises(rb.NotFittedError, match="PartialDecorrelation is not fitted"):
        PartialDecorrelation(rb.IRGI(depth=2)).transform([0.0], [0.0])
    with pytest.raises(rb.NotFittedError, match="is not fitted"):
        PartialDecorrelation.from_fitted(rb.IRGI(depth=2), [0.0, 1.0])


def test_with_strength_shares_the_fit(blob: dict[str, np.ndarray]) -> None:
    knob = PartialDecorrelation(ExactBlob(), strength=0.0).fit(blob["x_def"], blob["y_def"])
    half = knob.with_strength(0.5)
    assert half.marginal_ is knob.marginal_
    assert half.estimator is knob.estimator
    assert knob.strength == 0.0
    x, y = blob["x"][:10], blob["y"][:10]
    expected = 0.5 * knob.marginal_(y) + 0.5 * exact_gamma(x, y)
    np.testing.assert_allclose(half.transform(x, y), expected, rtol=0, atol=1e-15)
