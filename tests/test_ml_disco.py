"""The differentiable weighted dCor^2 of the DisCo loss."""

from __future__ import annotations

from types import ModuleType

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import rosenblatt.metrics as rbm
from rosenblatt.ml.disco import (
    distance_correlation_sqr,
    distance_correlation_sqr_direct,
)


def mass_and_score(n: int, seed: int, strength: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """A dijet-mass-like x (GeV) and a sigmoid score that depends on it."""
    rng = np.random.default_rng(seed)
    mjj = 2400.0 + rng.exponential(600.0, n)
    logit = strength * (mjj - 3000.0) / 500.0 + rng.standard_normal(n)
    return mjj, 1.0 / (1.0 + np.exp(-logit))


@pytest.mark.parametrize("n", [2, 7, 500])
def test_unweighted_equals_dcor(n: int, dcor: ModuleType) -> None:
    mjj, score = mass_and_score(n, seed=n)
    value = distance_correlation_sqr(torch.tensor(mjj), torch.tensor(score))
    assert float(value) == pytest.approx(dcor.distance_correlation_sqr(mjj, score), abs=1e-12)


def test_integer_weights_equal_replication(dcor: ModuleType) -> None:
    mjj, score = mass_and_score(300, seed=1)
    weight = np.random.default_rng(2).integers(0, 4, 300)
    value = distance_correlation_sqr(
        torch.tensor(mjj), torch.tensor(score), torch.tensor(weight, dtype=torch.float64)
    )
    replicated = dcor.distance_correlation_sqr(np.repeat(mjj, weight), np.repeat(score, weight))
    assert float(value) == pytest.approx(replicated, abs=1e-12)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_weighted_equals_package_metric(dtype: torch.dtype) -> None:
    """The in-loss value is rb.distance_correlation_sqr of the same batch (float32 scores too)."""
    mjj, score = mass_and_score(2000, seed=3)
    weight = np.random.default_rng(4).uniform(0.2, 3.0, 2000)
    score_t = torch.tensor(score, dtype=dtype)
    value = distance_correlation_sqr(torch.tensor(mjj), score_t, torch.tensor(weight))
    assert value.dtype == dtype
    reference = rbm.distance_correlation_sqr(mjj, score_t.double().numpy(), weight)
    assert float(value) == pytest.approx(reference, abs=1e-6)
    assert reference > 0.05  # a dependent sample: the agreement is not between two zeros


@pytest.mark.parametrize("max_block_bytes", [24 * 301, 24 * 301 * 7, 2**30])
def test_blockwise_equals_direct_in_value_and_gradient(max_block_bytes: int) -> None:
    """Row blocks of 1, 7 (not dividing n) and all rows give the direct result."""
    mjj, score = mass_and_score(301, seed=5)
    weight = np.random.default_rng(6).uniform(0.5, 2.0, 301)
    inputs = [torch.tensor(a, requires_grad=True) for a in (mjj, score, weight)]
    blockwise = distance_correlation_sqr(*inputs, max_block_bytes=max_block_bytes)
    grads_blockwise = torch.autograd.grad(blockwise, inputs)
    direct = distance_correlation_sqr_direct(*inputs)
    grads_direct = torch.autograd.grad(direct, inputs)
    assert blockwise.item() == pytest.approx(direct.item(), abs=1e-12)
    for got, expected in zip(grads_blockwise, grads_direct, strict=True):
        scale = float(expected.abs().max())
        assert scale > 0
        np.testing.assert_allclose(got.numpy(), expected.numpy(), atol=1e-10 * scale, rtol=0)


def test_gradient_matches_finite_differences() -> None:
    rng = np.random.default_rng(7)
    x = torch.tensor(rng.normal(size=25), requires_grad=True)
    y = torch.tensor(x.detach().numpy() ** 2 + rng.normal(size=25), requires_grad=True)
    w = torch.tensor(rng.uniform(0.5, 2.0, 25), requires_grad=True)
    assert torch.autograd.gradcheck(
        lambda a, b, c: distance_correlation_sqr(a, b, c, max_block_bytes=24 * 25 * 4), (x, y, w)
    )


def test_gradient_is_finite_on_a_large_float32_batch() -> None:
    """A 5000-event background batch as in training: finite gradient, bounded memory."""
    mjj, score = mass_and_score(5000, seed=8)
    logits = torch.tensor(np.log(score / (1 - score)), dtype=torch.float32, requires_grad=True)
    value = distance_correlation_sqr(torch.tensor(mjj), torch.sigmoid(logits))
    (gradient,) = torch.autograd.grad(value, logits)
    assert 0 < value.item() < 1
    assert torch.isfinite(gradient).all()
    assert float(gradient.abs().max()) > 0


def test_constant_score_gives_zero_with_zero_gradient() -> None:
    mjj, _ = mass_and_score(50, seed=9)
    score = torch.full((50,), 0.5, dtype=torch.float64, requires_grad=True)
    value = distance_correlation_sqr(torch.tensor(mjj), score)
    (gradient,) = torch.autograd.grad(value, score)
    assert value.item() == 0.0
    assert torch.equal(gradient, torch.zeros(50, dtype=torch.float64))


def test_bad_input_is_named() -> None:
    x = torch.zeros(5, dtype=torch.float64)
    with pytest.raises(ValueError, match="x has 5 events, y has 4"):
        distance_correlation_sqr(x, torch.zeros(4))
    with pytest.raises(ValueError, match="at least 2 events"):
        distance_correlation_sqr(x[:1], x[:1])
    with pytest.raises(ValueError, match="positive sum"):
        distance_correlation_sqr(x, x + torch.arange(5.0), torch.zeros(5))
    with pytest.raises(ValueError, match="max_block_bytes"):
        distance_correlation_sqr(x, x + torch.arange(5.0), max_block_bytes=0)
