"""ABCD counts and closure over a grid of cuts, read off one ABCD histogram."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from rosenblatt.typing import BoolArray, FloatArray

__all__ = ["ClosureScan", "closure_scan", "region_sums"]


@dataclasses.dataclass(frozen=True)
class ClosureScan:
    """ABCD counts and closure over a grid of cuts ``(x0[i], y0[j])``.

    Arrays have shape ``(len(x0), len(y0))``. ``*_var`` are the variances of
    the summed weights.
    """

    x0: FloatArray
    y0: FloatArray
    n_a: FloatArray
    n_b: FloatArray
    n_c: FloatArray
    n_d: FloatArray
    var_a: FloatArray
    var_b: FloatArray
    var_c: FloatArray
    var_d: FloatArray
    signal_a: FloatArray

    @property
    def background_estimate(self) -> FloatArray:
        """``N_B N_C / N_D``: the estimated background in A."""
        with np.errstate(divide="ignore", invalid="ignore"):
            return self.n_b * self.n_c / self.n_d

    @property
    def signal_estimate(self) -> FloatArray:
        """``N_A - N_B N_C / N_D``: the estimated signal in A."""
        return self.n_a - self.background_estimate

    @property
    def signal_estimate_error(self) -> FloatArray:
        """Statistical uncertainty of :attr:`signal_estimate` (independent regions)."""
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio_c = self.n_c / self.n_d
            ratio_b = self.n_b / self.n_d
            variance = (
                self.var_a
                + ratio_c**2 * self.var_b
                + ratio_b**2 * self.var_c
                + (ratio_b * ratio_c) ** 2 * self.var_d
            )
        return np.sqrt(variance)

    @property
    def eta(self) -> FloatArray:
        """Relative signal non-closure ``N_A^sig / N_A - (1 - N_B N_C / (N_A N_D))``."""
        with np.errstate(divide="ignore", invalid="ignore"):
            return (self.signal_a - self.signal_estimate) / self.n_a

    @property
    def eta_error(self) -> FloatArray:
        """Statistical uncertainty of :attr:`eta`."""
        with np.errstate(divide="ignore", invalid="ignore"):
            return self.signal_estimate_error / self.n_a

    @property
    def pull(self) -> FloatArray:
        """Non-closure over its uncertainty, ``eta / eta_error``."""
        with np.errstate(divide="ignore", invalid="ignore"):
            return self.eta / self.eta_error

    @property
    def valid(self) -> BoolArray:
        """Cuts where every region is populated."""
        return (self.n_a > 0) & (self.n_b > 0) & (self.n_c > 0) & (self.n_d > 0)

    def best(self) -> dict[str, float]:
        """The cut of smallest ``|eta|`` with the numbers of the paper's closure table."""
        abs_eta = np.where(self.valid, np.abs(self.eta), np.inf)
        i, j = np.unravel_index(int(np.argmin(abs_eta)), abs_eta.shape)
        return {
            "x0": float(self.x0[i]),
            "y0": float(self.y0[j]),
            "eta": float(self.eta[i, j]),
            "eta_error": float(self.eta_error[i, j]),
            "total_a": float(self.n_a[i, j]),
            "true_signal_a": float(self.signal_a[i, j]),
            "signal_estimate": float(self.signal_estimate[i, j]),
            "signal_estimate_error": float(self.signal_estimate_error[i, j]),
        }

    def fraction_below(self, tolerance: float) -> float:
        """Fraction of the cut grid with ``|eta| < tolerance`` (unpopulated cuts count as failing)."""
        ok = self.valid & (np.abs(self.eta) < tolerance)
        return float(ok.mean())


def closure_scan(histogram: Any) -> ClosureScan:
    """ABCD counts for every cut on the inner edges of an :func:`abcd_histogram`.

    The cuts are every ``x`` edge and every ``y`` edge of the histogram, i.e.
    the ``x0`` and ``y0`` given when it was filled. Flow bins are included, so
    every event counts in exactly one region for each cut.
    """
    view = histogram.view(flow=True)
    process = histogram.axes["process"]
    # a category axis has no underflow bin, so its indices are not shifted
    bkg_index = process.index(0)
    sig_index = process.index(1)
    values = view.value[:, :, bkg_index] + view.value[:, :, sig_index]
    variances = view.variance[:, :, bkg_index] + view.variance[:, :, sig_index]
    signal = view.value[:, :, sig_index]

    n_a, n_b, n_c, n_d = region_sums(values)
    var_a, var_b, var_c, var_d = region_sums(variances)
    signal_a, _, _, _ = region_sums(signal)
    return ClosureScan(
        x0=histogram.axes["x"].edges.copy(),
        y0=histogram.axes["y"].edges.copy(),
        n_a=n_a,
        n_b=n_b,
        n_c=n_c,
        n_d=n_d,
        var_a=var_a,
        var_b=var_b,
        var_c=var_c,
        var_d=var_d,
        signal_a=signal_a,
    )


def region_sums(content: FloatArray) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray]:
    """Sums of ``content`` over the regions A, B, C, D of every cut on the inner edges.

    Parameters
    ----------
    content
        ``(..., n_x, n_y)``: a quantity per bin of the ``x`` and ``y`` axes of an
        ABCD histogram, flow bins included (``n_x = len(x0) + 1`` and
        ``n_y = len(y0) + 1``); leading axes (replicas, processes) are kept.

    Returns
    -------
    a, b, c, d
        Each ``(..., len(x0), len(y0))``: the sums over the region of the cut
        ``(x0[i], y0[j])``, which separates flow bins ``[0, i]`` from the rest
        along ``x`` and ``[0, j]`` along ``y``.
    """
    n_x, n_y = content.shape[-2:]
    # cumulative[..., i, j]: content with x-bin < i and y-bin < j
    cumulative = np.zeros((*content.shape[:-2], n_x + 1, n_y + 1))
    cumulative[..., 1:, 1:] = content.cumsum(axis=-2).cumsum(axis=-1)
    total = cumulative[..., -1:, -1:]
    d = cumulative[..., 1:n_x, 1:n_y]
    below_x = cumulative[..., 1:n_x, -1:]
    below_y = cumulative[..., -1:, 1:n_y]
    c = below_x - d
    b = below_y - d
    a = total - below_x - below_y + d
    return a, b, c, d
