"""The spectra of ``x`` that the ABCD study's pass/fail fit takes, read off its histograms.

The analysis pass fills per variant a histogram over ``dataset``, ``x``, the
score ``y`` (whose edges are the variant's cut levels) and ``process``
(0 background simulation, 1 signal simulation, 2 data). Summed over the
datasets, a process's events below a cut fail it; with several cuts
(``passfail.cuts``) those between one cut and the next make a category.
"""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from hist import Hist
    from hist.storage import Weight

    from rosenblatt.typing import FloatArray

__all__ = ["category_spectra", "spectra"]


def category_spectra(
    histogram: Hist[Weight], cuts: tuple[float, ...], process: int
) -> tuple[FloatArray, FloatArray, list[FloatArray], list[FloatArray]]:
    """A process's spectra of ``x`` below the first cut and in each category between cuts.

    Category ``k`` holds ``cuts[k] <= score < cuts[k + 1]`` (the last: above
    its cut). Returns the failing sums of weights per bin of ``x`` and their
    sums of squared weights, and per category the same.
    """
    from rosenblatt.processors.analysis import summed_over_datasets

    h: Any = summed_over_datasets(histogram) if "dataset" in histogram.axes.name else histogram
    bins = len(h.axes["x"])
    axis = h.axes["process"]
    if process not in axis:
        zeros = np.zeros(bins)
        return zeros, zeros.copy(), [zeros.copy() for _ in cuts], [zeros.copy() for _ in cuts]
    edges = np.asarray(h.axes["y"].edges)
    # flow indices of the first bin at or above each cut, and past the overflow
    bounds = [int(np.argmin(np.abs(edges - cut))) + 1 for cut in cuts] + [len(edges) + 1]
    view = h.view(flow=True)
    k = axis.index(process)
    value = np.asarray(view.value[1:-1, :, k], dtype=np.float64)
    variance = np.asarray(view.variance[1:-1, :, k], dtype=np.float64)
    fail = value[:, : bounds[0]].sum(axis=1)
    fail_variance = variance[:, : bounds[0]].sum(axis=1)
    passes = [value[:, lo:hi].sum(axis=1) for lo, hi in itertools.pairwise(bounds)]
    variances = [variance[:, lo:hi].sum(axis=1) for lo, hi in itertools.pairwise(bounds)]
    return fail, fail_variance, passes, variances


def spectra(
    histogram: Hist[Weight], y0: float, process: int
) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray]:
    """A process's spectra of ``x`` failing and passing the cut ``y0`` (summed over datasets).

    Returns the failing and passing sums of weights per bin of ``x`` (the flow
    bins of ``x`` left out) and their sums of squared weights; zeros where the
    histogram holds no event of ``process``.
    """
    fail, fail_variance, (passed,), (pass_variance,) = category_spectra(histogram, (y0,), process)
    return fail, passed, fail_variance, pass_variance
