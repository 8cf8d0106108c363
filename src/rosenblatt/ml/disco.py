"""Differentiable weighted distance correlation for the DisCo loss.

The squared distance correlation of two 1-D samples ``x`` and ``y`` with
event weights ``w`` is defined with the normalised weights ``p_i = w_i / W``
(``W = sum w``) in every pair sum and in the weighted means of the double
centring, exactly as :func:`rosenblatt.metrics.distance_correlation_sqr`:

.. math::

    a_{ij} = |x_i - x_j|, \\quad a_{i\\cdot} = \\sum_j p_j a_{ij}, \\quad
    a_{\\cdot\\cdot} = \\sum_i p_i a_{i\\cdot}, \\quad
    A_{ij} = a_{ij} - a_{i\\cdot} - a_{\\cdot j} + a_{\\cdot\\cdot},

    \\mathrm{dCov}^2(x, y) = \\sum_{ij} p_i p_j A_{ij} B_{ij}, \\qquad
    \\mathrm{dCor}^2 = \\frac{\\mathrm{dCov}^2(x, y)}
    {\\sqrt{\\mathrm{dCov}^2(x, x)\\,\\mathrm{dCov}^2(y, y)}}.

Integer weights therefore give the same value as replicating events, and unit
weights give the V-statistic of :func:`dcor.distance_correlation_sqr`.

Memory
------
The double-centred sum is expanded as
``dCov^2 = S1 - 2 S3 + S2`` with ``S1 = sum_ij p_i p_j a_ij b_ij``,
``S3 = sum_i p_i a_i. b_i.`` and ``S2 = a.. b..``. The row means ``a_i.`` of
1-D data come from a sort and two cumulative sums (O(n log n) time, O(n)
memory), and ``dCov^2(x, x) = S1(x, x) - 2 sum_i p_i a_i.^2 + a..^2`` with
``S1(x, x) = 2 Var_p(x)`` in closed form. Only the cross term ``S1`` needs all
pairs: it is summed over row blocks of ``block`` rows in a custom autograd
function whose backward pass is blockwise too, so neither pass holds an
``n x n`` matrix. Peak extra memory is about ``3 * block * n * 8`` bytes
(float64), bounded by ``max_block_bytes`` (2 MiB by default, so that a block
stays in cache: at ``n = 10^4`` a block has 8 rows); time is O(n^2), about
0.1-0.3 s for forward and backward at ``n = 5000``. The block loop runs on one
CPU thread (cache-sized blocks gain nothing from more). The direct
:func:`distance_correlation_sqr_direct` materialises the four ``n x n``
matrices (about ``5 * 8 n^2`` bytes with autograd, 4 GB at ``n = 10^4``) and
serves as the reference in the tests.

All arithmetic is in float64 whatever the input dtype; the result has the
dtype of ``y``.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from rosenblatt._extras import optional_imports

with optional_imports(__name__):
    import torch

__all__ = [
    "DEFAULT_MAX_BLOCK_BYTES",
    "distance_correlation_sqr",
    "distance_correlation_sqr_direct",
]

#: default bound on the temporaries of one row block of the pair sum (bytes)
DEFAULT_MAX_BLOCK_BYTES = 2 * 2**20

#: float64 temporaries of size ``block x n`` alive at once in one block
_TEMPORARIES_PER_BLOCK = 3


def _prepare(
    x: torch.Tensor, y: torch.Tensor, weight: torch.Tensor | None
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Check shapes and return float64 ``x``, ``y`` and normalised weights ``p``."""
    if x.ndim != 1 or y.ndim != 1:
        msg = f"x and y must be one-dimensional, got shapes {tuple(x.shape)} and {tuple(y.shape)}"
        raise ValueError(msg)
    if x.shape[0] != y.shape[0]:
        msg = f"length mismatch: x has {x.shape[0]} events, y has {y.shape[0]}"
        raise ValueError(msg)
    if x.shape[0] < 2:
        msg = f"distance correlation needs at least 2 events, got {x.shape[0]}"
        raise ValueError(msg)
    x64 = x.to(torch.float64)
    y64 = y.to(torch.float64)
    if weight is None:
        w = torch.ones_like(x64)
    else:
        if weight.shape != x.shape:
            msg = (
                f"length mismatch: weight has shape {tuple(weight.shape)}, "
                f"x has {x.shape[0]} events"
            )
            raise ValueError(msg)
        w = weight.to(device=x64.device, dtype=torch.float64)
    total = w.sum()
    if not bool(total > 0):
        msg = f"weight must have a positive sum, got {float(total):g} over {w.shape[0]} events"
        raise ValueError(msg)
    return x64, y64, w / total


def _row_means(values: torch.Tensor, p: torch.Tensor) -> torch.Tensor:
    """Return ``sum_j p_j |v_i - v_j|`` for every ``i`` by sorting (autograd-safe).

    With ``v`` sorted, ``P_i`` and ``Q_i`` the cumulative sums of ``p`` and
    ``p v`` up to and including ``i``, the sum is
    ``v_i (2 P_i - 1) + Q_n - 2 Q_i``; tied values contribute zero on either
    side, so ties need no care.
    """
    order = torch.argsort(values)
    v_sorted = values[order]
    p_sorted = p[order]
    cum_p = torch.cumsum(p_sorted, 0)
    cum_pv = torch.cumsum(p_sorted * v_sorted, 0)
    sorted_means = v_sorted * (2 * cum_p - 1) + cum_pv[-1] - 2 * cum_pv
    return torch.empty_like(sorted_means).scatter(0, order, sorted_means)


def _block_rows(n: int, max_block_bytes: int) -> int:
    """Rows per block so that the block temporaries stay under ``max_block_bytes``."""
    if max_block_bytes <= 0:
        msg = f"max_block_bytes must be positive, got {max_block_bytes}"
        raise ValueError(msg)
    return max(1, min(n, max_block_bytes // (_TEMPORARIES_PER_BLOCK * 8 * n)))


@contextmanager
def _one_cpu_thread(tensor: torch.Tensor) -> Iterator[None]:
    """Run the block loop on one CPU thread, restoring torch's setting afterwards.

    The blocks are cache-sized: extra threads only add synchronisation, and
    on busy cores they slow the loop down by an order of magnitude.
    """
    if tensor.device.type != "cpu":
        yield
        return
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(previous)


class _PairAbsProductSum(torch.autograd.Function):
    """``S = sum_ij p_i p_j |x_i - x_j| |y_i - y_j|`` summed over row blocks.

    Gradients (all blockwise):
    ``dS/dy_k = 2 p_k sum_j p_j |x_k - x_j| sign(y_k - y_j)``, the same with
    ``x`` and ``y`` swapped, and ``dS/dp_k = 2 sum_j p_j |x_k - x_j| |y_k - y_j|``.
    """

    @staticmethod
    def forward(
        ctx: Any, x: torch.Tensor, y: torch.Tensor, p: torch.Tensor, block: int
    ) -> torch.Tensor:
        ctx.save_for_backward(x, y, p)
        ctx.block = block
        total = x.new_zeros(())
        with _one_cpu_thread(x):
            for start in range(0, x.shape[0], block):
                stop = start + block
                dx = (x[start:stop, None] - x[None, :]).abs_()
                dy = (y[start:stop, None] - y[None, :]).abs_()
                total = total + p[start:stop] @ (dx.mul_(dy) @ p)
        return total

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(
        ctx: Any, grad_total: torch.Tensor
    ) -> tuple[torch.Tensor | None, torch.Tensor | None, torch.Tensor | None, None]:
        x, y, p = ctx.saved_tensors
        need_x, need_y, need_p = ctx.needs_input_grad[:3]
        grad_x = torch.zeros_like(x) if need_x else None
        grad_y = torch.zeros_like(y) if need_y else None
        grad_p = torch.zeros_like(p) if need_p else None
        with _one_cpu_thread(x):
            for start in range(0, x.shape[0], ctx.block):
                stop = start + ctx.block
                dx = x[start:stop, None] - x[None, :]
                dy = y[start:stop, None] - y[None, :]
                p_rows = p[start:stop]
                if grad_x is not None:
                    grad_x[start:stop] = 2 * p_rows * ((dy.abs() * dx.sign()) @ p)
                if grad_y is not None:
                    grad_y[start:stop] = 2 * p_rows * ((dx.abs() * dy.sign()) @ p)
                if grad_p is not None:
                    grad_p[start:stop] = 2 * (dx.abs_().mul_(dy.abs_()) @ p)
        scale = grad_total
        return (
            None if grad_x is None else grad_x * scale,
            None if grad_y is None else grad_y * scale,
            None if grad_p is None else grad_p * scale,
            None,
        )


def _dcor_from_terms(
    cross: torch.Tensor,
    a_row: torch.Tensor,
    b_row: torch.Tensor,
    x: torch.Tensor,
    y: torch.Tensor,
    p: torch.Tensor,
) -> torch.Tensor:
    """Assemble dCor^2 from the pair sum ``cross`` and the row means."""
    a_mean = p @ a_row
    b_mean = p @ b_row
    dcov_xy = cross - 2 * (p * a_row) @ b_row + a_mean * b_mean
    var_x = 2 * (p @ (x - p @ x) ** 2)
    var_y = 2 * (p @ (y - p @ y) ** 2)
    dcov_xx = var_x - 2 * (p * a_row) @ a_row + a_mean**2
    dcov_yy = var_y - 2 * (p * b_row) @ b_row + b_mean**2
    denominator = dcov_xx * dcov_yy
    # a constant sample has dCor^2 = 0 (as in dcor); keep the graph for a zero gradient
    safe = torch.where(denominator > 0, denominator, torch.ones_like(denominator))
    return torch.where(denominator > 0, dcov_xy / torch.sqrt(safe), dcov_xy * 0)


def distance_correlation_sqr(
    x: torch.Tensor,
    y: torch.Tensor,
    weight: torch.Tensor | None = None,
    *,
    max_block_bytes: int = DEFAULT_MAX_BLOCK_BYTES,
) -> torch.Tensor:
    """Weighted squared distance correlation of 1-D tensors, differentiable, O(n) memory.

    Parameters
    ----------
    x, y
        One-dimensional tensors of the same length ``n >= 2`` (e.g. ``mjj`` and
        the classifier score of the background events of a batch).
    weight
        Optional per-event weights (positive sum); integer weights equal
        replication.
    max_block_bytes
        Bound on the temporaries of one row block of the pair sum (see the
        module docstring for the memory use).

    Returns
    -------
    torch.Tensor
        Scalar dCor^2 in [0, 1], in the dtype of ``y``, with gradients with
        respect to ``x``, ``y`` and ``weight`` where they require them.
    """
    x64, y64, p = _prepare(x, y, weight)
    # dCor^2 is invariant to shifts and scales of x: standardise it for precision
    x_centred = x64 - (p @ x64).detach()
    x_scale = torch.sqrt(p @ x_centred.detach() ** 2)
    if bool(x_scale > 0):
        x_centred = x_centred / x_scale
    block = _block_rows(x64.shape[0], max_block_bytes)
    # torch.autograd.Function.apply has no type hints
    cross = _PairAbsProductSum.apply(x_centred, y64, p, block)  # type: ignore[no-untyped-call]
    a_row = _row_means(x_centred, p)
    b_row = _row_means(y64, p)
    result = _dcor_from_terms(cross, a_row, b_row, x_centred, y64, p)
    return result.to(y.dtype)


def distance_correlation_sqr_direct(
    x: torch.Tensor, y: torch.Tensor, weight: torch.Tensor | None = None
) -> torch.Tensor:
    """The same dCor^2 from the full double-centred ``n x n`` distance matrices.

    The textbook formula with plain autograd; memory O(n^2). Use
    :func:`distance_correlation_sqr` for large batches.
    """
    x64, y64, p = _prepare(x, y, weight)

    def centred(values: torch.Tensor) -> torch.Tensor:
        distances = (values[:, None] - values[None, :]).abs()
        row = distances @ p
        return distances - row[:, None] - row[None, :] + p @ row

    a = centred(x64)
    b = centred(y64)
    dcov_xy = p @ (a * b) @ p
    denominator = (p @ (a * a) @ p) * (p @ (b * b) @ p)
    safe = torch.where(denominator > 0, denominator, torch.ones_like(denominator))
    result = torch.where(denominator > 0, dcov_xy / torch.sqrt(safe), dcov_xy * 0)
    return result.to(y.dtype)
