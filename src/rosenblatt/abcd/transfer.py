"""The pass/fail transfer ratio of a background over bins of ``x``, and the fit's expected reach.

Two pieces that sit beside :mod:`~rosenblatt.abcd.passfail` and
:mod:`~rosenblatt.abcd.bumphunt` where a study compares the pass/fail fit with
the cut-and-count ABCD estimate on a background sample of its own:

- :func:`transfer_check`: the background's pass/fail ratio per bin of ``x``
  against one constant (a chi-square) and against a straight line in ``x``
  (the slope and the p-value of zero slope). A score decorrelated from ``x``
  has a constant ratio; a sculpted score has not, and its slope says that a
  transfer ratio linear in ``x`` (:func:`~rosenblatt.abcd.passfail.with_linear_transfer`)
  would be needed. The per-bin ratio over the overall one, in quadrature with
  its statistical error, is the relative non-closure the fit gives the passing
  background (the ``shapesys`` ``nonclosure``).
- :func:`passfail_expected`: the expected (Asimov) discovery significance and
  the median expected CLs upper limit on the signal strength of the pass/fail
  fit, by the exact profile of :func:`~rosenblatt.abcd.bumphunt.bump_hunt`
  (the asymptotic formulae of pyhf, as
  :func:`~rosenblatt.abcd.likelihood.expected_significance` and
  :func:`~rosenblatt.abcd.likelihood.expected_upper_limit` for the ABCD
  likelihood). The Asimov data sets are the nominal expectation of
  :func:`~rosenblatt.abcd.passfail.passfail_workspace`: in every bin the
  failing background (at least :data:`~rosenblatt.abcd.passfail.FLOOR`, as
  the workspace's nominal), and the passing background the failing one times
  the overall transfer ratio, with the signal at ``mu = 1`` (significance)
  or ``mu = 0`` (limit); the results are those of pyhf's asymptotic formulae
  on that workspace.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

from rosenblatt.typing import ArrayLike, FloatArray

__all__ = [
    "LINEAR_P_MIN",
    "MAX_RELATIVE",
    "PassFailExpected",
    "TransferCheck",
    "passfail_expected",
    "transfer_check",
]

#: the largest relative non-closure of a bin (a bin where a region is empty gets it)
MAX_RELATIVE = 1.0
#: below this p-value of zero slope, the transfer ratio is not constant in ``x``
LINEAR_P_MIN = 0.05


@dataclasses.dataclass(frozen=True)
class TransferCheck:
    """A background's pass/fail ratio over bins of ``x`` against a constant and a line.

    Attributes
    ----------
    ratio
        Its passing over failing sum of weights, all bins together.
    relative
        Per bin, its ratio over ``ratio`` minus one (NaN where a region is empty).
    relative_error
        Per bin, that ratio's relative statistical error.
    uncertainty
        Per bin, ``relative`` in quadrature with ``relative_error``, at most
        :data:`MAX_RELATIVE` (which a bin with an empty region gets): the
        relative non-closure of the passing background in the fit.
    chi2, ndof, p_value
        The chi-square of the per-bin ratios against ``ratio``.
    slope, slope_error, slope_p_value
        A weighted straight line through the per-bin ``relative``: its slope
        per unit of ``x``, its error and the two-sided p-value of zero slope
        (NaN with fewer than three usable bins).
    """

    ratio: float
    relative: FloatArray
    relative_error: FloatArray
    uncertainty: FloatArray
    chi2: float
    ndof: int
    p_value: float
    slope: float
    slope_error: float
    slope_p_value: float

    @property
    def linear_needed(self) -> bool:
        """Whether the slope differs from zero at a p-value below :data:`LINEAR_P_MIN`."""
        return bool(self.slope_p_value < LINEAR_P_MIN)


def transfer_check(
    failing: ArrayLike,
    passing: ArrayLike,
    centres: ArrayLike,
    failing_variance: ArrayLike | None = None,
    passing_variance: ArrayLike | None = None,
) -> TransferCheck:
    """The background's pass/fail ratio per bin of ``x`` against a constant and a straight line.

    Parameters
    ----------
    failing, passing
        The background's sums of weights per bin of ``x`` failing and passing the cut.
    centres
        The bins' centres in ``x``.
    failing_variance, passing_variance
        Their sums of squared weights (default: the sums of weights, as for
        unweighted events).

    Returns
    -------
    TransferCheck

    Raises
    ------
    ValueError
        If the shapes differ or no event passes or fails.

    Examples
    --------
    >>> import numpy as np
    >>> from rosenblatt.abcd.transfer import transfer_check
    >>> check = transfer_check([900, 800, 700, 600], [100, 90, 77, 66], [1.0, 2.0, 3.0, 4.0])
    >>> round(check.ratio, 4), check.linear_needed
    (0.111, False)
    """
    from scipy import stats

    fail = np.asarray(failing, dtype=np.float64)
    passed = np.asarray(passing, dtype=np.float64)
    x = np.asarray(centres, dtype=np.float64)
    fail_var = fail if failing_variance is None else np.asarray(failing_variance, np.float64)
    pass_var = passed if passing_variance is None else np.asarray(passing_variance, np.float64)
    if not (fail.ndim == 1 and fail.shape == passed.shape == x.shape == fail_var.shape):
        msg = (
            f"failing, passing, centres and the variances must be 1-d of one length, got "
            f"{fail.shape}, {passed.shape}, {x.shape}, {fail_var.shape}"
        )
        raise ValueError(msg)
    if pass_var.shape != fail.shape:
        msg = f"passing_variance has shape {pass_var.shape}, failing {fail.shape}"
        raise ValueError(msg)
    total_fail, total_pass = float(fail.sum()), float(passed.sum())
    if not (total_fail > 0 and total_pass > 0):
        msg = f"the background has {total_pass:.3g} passing and {total_fail:.3g} failing events"
        raise ValueError(msg)
    ratio = total_pass / total_fail
    filled = (fail > 0) & (passed > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        relative = np.where(filled, passed / fail / ratio - 1.0, np.nan)
        error = np.where(filled, np.sqrt(pass_var / passed**2 + fail_var / fail**2), np.nan)
        uncertainty = np.minimum(np.hypot(relative, error), MAX_RELATIVE)
    uncertainty = np.where(np.isfinite(uncertainty), uncertainty, MAX_RELATIVE)
    usable = filled & np.isfinite(error) & (error > 0)
    ndof = max(int(usable.sum()) - 1, 0)
    chi2 = float(np.sum((relative[usable] / error[usable]) ** 2))
    p_value = float(stats.chi2.sf(chi2, ndof)) if ndof else float("nan")
    slope = slope_error = slope_p = float("nan")
    if usable.sum() >= 3:
        weights = 1.0 / error[usable] ** 2
        centred = x[usable] - np.average(x[usable], weights=weights)
        design = np.column_stack([np.ones_like(centred), centred])
        covariance = np.linalg.inv(design.T @ (design * weights[:, None]))
        coefficients = covariance @ (design.T @ (weights * relative[usable]))
        slope, slope_error = float(coefficients[1]), float(math.sqrt(covariance[1, 1]))
        slope_p = float(2.0 * stats.norm.sf(abs(slope) / slope_error))
    return TransferCheck(
        ratio=ratio,
        relative=relative,
        relative_error=error,
        uncertainty=uncertainty,
        chi2=chi2,
        ndof=ndof,
        p_value=p_value,
        slope=slope,
        slope_error=slope_error,
        slope_p_value=slope_p,
    )


@dataclasses.dataclass(frozen=True)
class PassFailExpected:
    """The pass/fail fit's expected reach on Asimov data sets.

    Attributes
    ----------
    significance
        The median discovery significance ``sqrt(q0)`` at ``mu = 1``.
    upper_limit
        The median expected CLs upper limit on ``mu`` at confidence ``1 - level``.
    ratio
        The transfer ratio of the Asimov data sets (passing over failing background).
    level
        The CLs level.
    """

    significance: float
    upper_limit: float
    ratio: float
    level: float


def passfail_expected(
    background_fail: ArrayLike,
    signal_fail: ArrayLike,
    signal_pass: ArrayLike,
    edges: ArrayLike,
    *,
    ratio: float,
    nonclosure: ArrayLike | None = None,
    level: float = 0.05,
) -> PassFailExpected:
    """Expected significance and upper limit of the pass/fail fit in bins of ``x``.

    Parameters
    ----------
    background_fail
        The background failing the cut per bin of ``x``: the nominal
        background of the fit (at least :data:`~rosenblatt.abcd.passfail.FLOOR`
        in each bin), whose passing part is ``ratio`` times it.
    signal_fail, signal_pass
        The signal's yields per bin at ``mu = 1``, failing and passing the cut.
    edges
        The bin edges of ``x``.
    ratio
        The background's transfer ratio, passing over failing.
    nonclosure
        The relative non-closure per bin of the passing background
        (:attr:`TransferCheck.uncertainty`; none: a constant ratio is exact).
    level
        The CLs level (0.05: 95% confidence).

    Returns
    -------
    PassFailExpected

    Raises
    ------
    ValueError
        If no signal passes the cut, or the spectra do not match ``edges``.

    Examples
    --------
    >>> import numpy as np
    >>> from rosenblatt.abcd.transfer import passfail_expected
    >>> fail = np.array([950.0, 800, 700, 600, 500])
    >>> expected = passfail_expected(
    ...     fail, [0, 0, 5, 5, 0], [0, 2, 20, 2, 0], np.arange(6.0), ratio=0.05
    ... )
    >>> round(expected.significance, 2), round(expected.upper_limit, 2)
    (2.5, 0.75)
    """
    from rosenblatt.abcd.bumphunt import bump_hunt
    from rosenblatt.abcd.passfail import FLOOR
    from rosenblatt.abcd.templates import signal_templates

    b_fail = np.maximum(np.asarray(background_fail, dtype=np.float64), FLOOR)
    s_fail = np.asarray(signal_fail, dtype=np.float64)
    s_pass = np.asarray(signal_pass, dtype=np.float64)
    if not (math.isfinite(ratio) and ratio > 0):
        msg = f"ratio must be positive, got {ratio!r}"
        raise ValueError(msg)
    if not s_pass.sum() > 0:
        msg = "no signal passes the cut"
        raise ValueError(msg)
    edges = np.asarray(edges, dtype=np.float64)
    centres = 0.5 * (edges[1:] + edges[:-1])
    mass = float(np.average(centres, weights=s_pass)) if s_pass.shape == centres.shape else 0.0
    templates = signal_templates([mass], edges, s_pass[None, :], s_fail[None, :])
    options: dict[str, Any] = {"ratio": ratio, "nonclosure": nonclosure, "level": level}
    # the significance of the data with signal, the median limit of the background alone
    with_signal = bump_hunt(
        ratio * b_fail + s_pass, b_fail + s_fail, edges, templates, limits="none", **options
    )
    background = bump_hunt(
        ratio * b_fail, b_fail, edges, templates, limits="expected median", **options
    )
    return PassFailExpected(
        significance=float(with_signal.local_z[0]),
        upper_limit=float(background.expected_limits[0, 2]),
        ratio=float(ratio),
        level=level,
    )
