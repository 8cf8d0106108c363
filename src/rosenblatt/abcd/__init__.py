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

from rosenblatt.abcd.closure import ClosureScan, closure_scan
from rosenblatt.abcd.histograms import abcd_histogram, cut_axes, process_axis

__all__ = ["ClosureScan", "abcd_histogram", "closure_scan", "cut_axes", "process_axis"]
