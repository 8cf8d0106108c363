"""The ABCD background estimate on ``hist`` histograms, and its closure test.

For a cut ``(x0, y0)`` the plane of protected observable ``x`` and score ``y``
divides into::

    A: x >= x0, y >= y0        B: x >= x0, y < y0
    C: x <  x0, y >= y0        D: x <  x0, y < y0

If ``x`` and ``y`` are independent for the background, ``N_A = N_B N_C / N_D``
for it, and the signal in ``A`` is estimated as ``N_A - N_B N_C / N_D``. The
relative signal non-closure of the method paper is::

    eta_A = N_A^sig / N_A - (1 - N_B N_C / (N_A N_D))

Every count is read off one histogram with weighted storage, so each estimate
carries its statistical uncertainty.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from rosenblatt._validation import as_1d_float, check_finite, check_same_length

__all__ = ["ClosureScan", "abcd_histogram", "closure_scan", "cut_axes", "process_axis"]

FloatArray = NDArray[np.float64]


def abcd_histogram(
    x: ArrayLike,
    y: ArrayLike,
    label: ArrayLike,
    *,
    x0: ArrayLike,
    y0: ArrayLike,
    weight: ArrayLike | None = None,
    x_label: str = "x",
    y_label: str = "y",
) -> Any:
    """Fill a ``hist.Hist`` of ``(x, y, process)`` whose bin edges are the cut values.

    The ``x`` and ``y`` axes are ``Variable`` axes with the sorted cut values
    ``x0`` and ``y0`` as edges; under- and overflow hold everything outside,
    so no event is lost. The ``process`` axis separates background (label 0)
    from signal (label 1). Storage is ``Weight`` (sum of weights and of their
    squares).
    """
    import hist

    x_arr, y_arr = as_1d_float(x, "x"), as_1d_float(y, "y")
    label_arr = np.asarray(label)
    check_same_length(x=x_arr, y=y_arr, label=label_arr)
    check_finite(x_arr, "x")
    check_finite(y_arr, "y")
    if not np.all(np.isin(label_arr, (0, 1))):
        msg = "label must be 0 (background) or 1 (signal)"
        raise ValueError(msg)
    w = None if weight is None else as_1d_float(weight, "weight")
    if w is not None:
        check_same_length(x=x_arr, weight=w)
        check_finite(w, "weight")
    h = hist.Hist(*cut_axes(x0, y0, x_label=x_label, y_label=y_label), process_axis(), storage=hist.storage.Weight())
    h.fill(x=x_arr, y=y_arr, process=label_arr.astype(int), weight=w)
    return h


def cut_axes(x0: ArrayLike, y0: ArrayLike, *, x_label: str = "x", y_label: str = "y") -> tuple[Any, Any]:
    """The ``x`` and ``y`` axes of an ABCD histogram: ``Variable`` axes on the cut values.

    The sorted distinct cut values are the bin edges; the flow bins hold
    everything outside them, so a histogram on these axes loses no event.

    Raises
    ------
    ValueError
        If ``x0`` or ``y0`` has fewer than two distinct finite values.
    """
    import hist

    edges = []
    for values, name in ((x0, "x0"), (y0, "y0")):
        unique = np.unique(np.asarray(values, dtype=float))
        if len(unique) < 2 or not np.all(np.isfinite(unique)):
            msg = f"{name} needs at least two distinct finite cut values, got {len(unique)}"
            raise ValueError(msg)
        edges.append(unique)
    return (
        hist.axis.Variable(edges[0], name="x", label=x_label),
        hist.axis.Variable(edges[1], name="y", label=y_label),
    )


def process_axis() -> Any:
    """The ``process`` axis of an ABCD histogram: 0 background, 1 signal.

    Other labels (``-1`` for unlabelled events) grow the axis; :func:`closure_scan`
    reads the bins 0 and 1.
    """
    import hist

    return hist.axis.IntCategory([0, 1], name="process", label="process (0 background, 1 signal)", growth=True)


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
    def valid(self) -> NDArray[np.bool_]:
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

    def regions(content: FloatArray) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray]:
        # cumulative[i, j]: content with x-bin < i and y-bin < j (flow included);
        # the cut at inner edge k of an axis separates flow-bins [0, k] from the rest
        cumulative = np.zeros((content.shape[0] + 1, content.shape[1] + 1))
        cumulative[1:, 1:] = content.cumsum(axis=0).cumsum(axis=1)
        total = cumulative[-1, -1]
        xi = np.arange(1, content.shape[0])[:, None]
        yi = np.arange(1, content.shape[1])[None, :]
        d = cumulative[xi, yi]
        below_x = cumulative[xi, -1]
        below_y = cumulative[-1, yi]
        c = below_x - d
        b = below_y - d
        a = total - below_x - below_y + d
        return a, b, c, d

    n_a, n_b, n_c, n_d = regions(values)
    var_a, var_b, var_c, var_d = regions(variances)
    signal_a, _, _, _ = regions(signal)
    return ClosureScan(
        x0=histogram.axes["x"].edges.copy(),
        y0=histogram.axes["y"].edges.copy(),
        n_a=n_a, n_b=n_b, n_c=n_c, n_d=n_d,
        var_a=var_a, var_b=var_b, var_c=var_c, var_d=var_d,
        signal_a=signal_a,
    )
