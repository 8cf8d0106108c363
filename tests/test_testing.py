"""rosenblatt.testing.check_transform: every registered kind meets the contract; broken toys fail it."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pytest
from gaussian_blob import bivariate_normal
from numpy.typing import NDArray

import rosenblatt as rb
from rosenblatt.closed_forms import closed_form
from rosenblatt.testing import INVARIANTS, check_transform, exact_gamma, negative_weight_sample
from rosenblatt.transforms import _base
from rosenblatt.transforms._base import ConditionalCDFTransform, transform_classes

Array = NDArray[np.float64]

#: per registered kind, the transform checked and the options of check_transform; a kind
#: missing here is checked as its class with the default parameters
EXAMPLES: dict[str, tuple[Callable[[], Any], dict[str, Any]]] = {
    "irgi": (lambda: rb.IRGI(5), {}),
    "kde": (lambda: rb.KDE(0.1), {}),
    "grid_kde": (lambda: rb.GridKDE(0.3), {}),
    "ddt": (lambda: rb.DDT([0.1, 0.5]), {}),
    "rarity": (rb.Rarity, {}),
    "ensemble": (lambda: rb.TransformEnsemble(rb.IRGI(4), n=3), {}),
    "sequential": (
        lambda: rb.SequentialTransform([rb.IRGI(4), rb.GridKDE(0.3)]),
        {"n_observables": 2},
    ),
    "conditional_flow": (
        lambda: _flow()(bins=8, hidden=(32, 32), max_epochs=100, batch_size=512),
        {},
    ),
}


def _flow() -> Any:
    return pytest.importorskip("rosenblatt.ml.flow").ConditionalFlow


def _package_kinds() -> list[str]:
    """The kinds registered by rosenblatt's own modules (the flow's when its extra is there)."""
    with contextlib.suppress(ImportError):
        import rosenblatt.ml.flow  # noqa: F401
    return sorted(
        kind
        for kind, cls in transform_classes().items()
        if cls.__module__.startswith("rosenblatt.")
    )


@pytest.mark.parametrize(
    "kind",
    [
        pytest.param(k, marks=pytest.mark.slow) if k == "conditional_flow" else k
        for k in _package_kinds()
    ],
)
def test_every_registered_kind_meets_the_contract(kind: str) -> None:
    make, options = EXAMPLES.get(kind, (transform_classes()[kind], {}))
    check_transform(make(), **options)


def test_a_class_is_checked_with_its_default_parameters() -> None:
    check_transform(rb.Rarity)
    check_transform(rb.GridKDE, n_events=2048)


def test_a_transform_read_from_correctionlib_is_checked_as_given(tmp_path: Path) -> None:
    from rosenblatt.correctionlib import read_correctionlib, write_correctionlib

    x, y = bivariate_normal(4096, seed=3)
    write_correctionlib(rb.IRGI(5).fit(x, y), tmp_path / "t.json", "gamma")
    tabulated = read_correctionlib(tmp_path / "t.json")
    assert not type(tabulated).fittable
    check_transform(tabulated, x=x, y=y)
    # its defining sample matters: a sample it was not fitted on is not uniform under it
    with pytest.raises(AssertionError, match="invariant 'uniform on the defining sample' broken"):
        check_transform(tabulated, x=x, y=y + 1.0)


# ----------------------------------------------------------------- toy transforms
class EmpiricalCDF(ConditionalCDFTransform, register=False):
    """``gamma`` = the weighted empirical CDF of ``y``, whatever ``x``: meets every invariant."""

    kind: ClassVar[str] = "ecdf_test"
    weights_replicate: ClassVar[bool] = True

    def __init__(self, offset: float = 0.0) -> None:
        self.offset = offset

    def _fit(self, x: Array, y: Array, w: Array | None) -> None:
        order = np.argsort(y, kind="stable")
        weight = np.ones(len(y)) if w is None else w[order]
        self.y_sorted_ = y[order]
        self.levels_ = np.concatenate(([0.0], np.cumsum(weight) / weight.sum()))
        self.domain_ = ((float(x.min()), float(x.max())), (float(y.min()), float(y.max())))

    def _transform(self, x: Array, y: Array) -> Array:
        levels: Array = self.levels_[np.searchsorted(self.y_sorted_, y, side="right")]
        return np.clip(levels, 0.0, 1.0)

    def get_state(self) -> dict[str, Any]:
        return {
            "offset": self.offset,
            "y_sorted": self.y_sorted_.tolist(),
            "levels": self.levels_.tolist(),
            "domain": [list(axis) for axis in self.domain_],
            "n_events": self.n_events_,
            "sum_weight": self.sum_weight_,
        }

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> EmpiricalCDF:
        obj = cls(state["offset"])
        obj.y_sorted_ = np.asarray(state["y_sorted"], dtype=np.float64)
        obj.levels_ = np.asarray(state["levels"], dtype=np.float64)
        obj.domain_ = rb.serialization.check_domain(state["domain"])
        obj.n_events_ = state["n_events"]
        obj.sum_weight_ = state["sum_weight"]
        return obj


class NotMonotone(EmpiricalCDF, register=False):
    """Reflects ``gamma`` between 0.4 and 0.6: in [0, 1], not monotone in ``y``."""

    def _transform(self, x: Array, y: Array) -> Array:
        g = super()._transform(x, y)
        return np.where((g > 0.4) & (g < 0.6), 1.0 - g, g)


class OutOfRange(EmpiricalCDF, register=False):
    """``1.2 gamma - 0.1``: monotone, but below 0 and above 1."""

    def _transform(self, x: Array, y: Array) -> Array:
        return 1.2 * super()._transform(x, y) - 0.1


class MutatingFit(EmpiricalCDF, register=False):
    """Stores what it learned in its hyper-parameter ``offset``."""

    def _fit(self, x: Array, y: Array, w: Array | None) -> None:
        super()._fit(x, y, w)
        self.offset = float(np.median(y))


class IgnoresWeights(EmpiricalCDF, register=False):
    """Claims that weights equal replication, then drops the weights."""

    def _fit(self, x: Array, y: Array, w: Array | None) -> None:
        super()._fit(x, y, None)


class ReturnsNothing(EmpiricalCDF, register=False):
    """``fit`` returns ``None``."""

    def fit(self, x: Any, y: Any, weight: Any = None) -> Any:
        super().fit(x, y, weight)


class AcceptsNaN(EmpiricalCDF, register=False):
    """Replaces non-finite scores by 0 instead of refusing them."""

    def fit(self, x: Any, y: Any, weight: Any = None) -> Any:
        return super().fit(x, np.nan_to_num(np.asarray(y, dtype=np.float64)), weight)


@pytest.fixture
def ecdf_registered(monkeypatch: pytest.MonkeyPatch) -> None:
    """The toy's kind registered for the test, so that rosenblatt.load finds it."""
    monkeypatch.setitem(_base._KINDS, "ecdf_test", EmpiricalCDF)


def test_the_correct_toy_meets_every_invariant(ecdf_registered: None) -> None:
    check_transform(EmpiricalCDF)
    check_transform(EmpiricalCDF(offset=2.5), n_events=1000, seed=4)


@pytest.mark.parametrize(
    ("toy", "invariant", "what"),
    [
        (NotMonotone, "monotone in y at fixed x", r"gamma falls from"),
        (OutOfRange, "gamma in [0, 1]", r"values outside \[0, 1\]"),
        (MutatingFit, "parameters unchanged by fit", r"fit changed offset"),
        (IgnoresWeights, "weights equal replication", r"differs from gamma fitted on the repeated"),
        (ReturnsNothing, "fit returns self", r"fit returned NoneType"),
        (AcceptsNaN, "bad input refused", r"fit with NaN in y was accepted"),
    ],
)
def test_a_broken_toy_fails_naming_the_invariant(
    toy: type[EmpiricalCDF], invariant: str, what: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(_base._KINDS, "ecdf_test", toy)
    assert invariant in INVARIANTS
    pattern = rf"^{toy.__name__}: invariant '{re.escape(invariant)}' broken: .*{what}"
    with pytest.raises(AssertionError, match=pattern):
        check_transform(toy)


def test_a_transform_that_cannot_be_saved_fails_save_load() -> None:
    # not registered: rosenblatt.load cannot find its kind
    with pytest.raises(AssertionError, match=r"invariant 'save/load bit-identical' broken: "):
        check_transform(EmpiricalCDF)


def test_only_transforms_are_checked() -> None:
    with pytest.raises(TypeError, match="takes a ConditionalCDFTransform class or instance"):
        check_transform(np.ndarray)  # type: ignore[arg-type]


# ----------------------------------------------------------------- negative weights
def test_the_kernel_estimators_claim_negative_weights() -> None:
    claims = {kind for kind, cls in transform_classes().items() if cls.negative_weights}
    assert {"kde", "grid_kde"} <= claims
    assert not rb.IRGI.negative_weights


def test_the_negative_weight_sample_has_the_gaussian_weighted_distribution() -> None:
    x, y, w = negative_weight_sample(400_000, 0.25, seed=5)
    assert np.mean(w < 0) == pytest.approx(0.25, abs=0.003)
    assert set(np.unique(w)) == {-1.0, 1.25 / 0.75}
    residual = (y - 0.6 * x) / 0.8
    total = w.sum()
    # the weighted residual is standard normal; the events of weight -1 alone are not
    for k, moment in ((1, 0.0), (2, 1.0), (3, 0.0), (4, 3.0)):
        assert np.dot(w, residual**k) / total == pytest.approx(moment, abs=0.05)
    assert np.mean(residual[w < 0]) == pytest.approx(1.0, abs=0.01)
    for q in (-1.5, 0.0, 0.8, 2.0):  # the weighted CDF is the exact one
        below = y <= 0.6 * x + 0.8 * q
        assert np.dot(w, below) / total == pytest.approx(
            float(exact_gamma(np.zeros(1), np.full(1, 0.8 * q))[0]), abs=0.005
        )
    xs, ys = np.array([-1.0, 0.3]), np.array([0.2, 1.1])
    np.testing.assert_allclose(
        exact_gamma(xs, ys),
        closed_form("bivariate_normal").exact(xs, ys),
        rtol=1e-15,
    )


class _NoRemedyKDE(rb.KDE, register=False):
    """A KDE fitted with the negative weights as they are."""

    def _fit(self, x: Array, y: Array, w: Array | None) -> None:
        self._set_state(x, y, w, float(self.sigma_r), rb.transforms.absolute_sigma(x, w))
        self.selection_ = None


class _DropsNegativeWeights(rb.GridKDE, register=False):
    """A GridKDE that leaves the events of negative weight out."""

    def _fit(self, x: Array, y: Array, w: Array | None) -> None:
        keep = np.ones(len(y), dtype=bool) if w is None else w > 0
        super()._fit(x[keep], y[keep], None if w is None else w[keep])


@pytest.mark.parametrize(
    ("broken", "what"),
    [
        (_NoRemedyKDE(0.1), r"(values outside \[0, 1\]|gamma falls from|not positive)"),
        (_DropsNegativeWeights(0.3), r"gamma differs from the exact conditional CDF by 0\.0[5-9]"),
    ],
)
def test_an_estimator_without_a_remedy_fails_the_negative_weights(broken: Any, what: str) -> None:
    pattern = rf"invariant 'negative weights' broken: .*{what}"
    with pytest.raises(AssertionError, match=pattern):
        check_transform(broken)
