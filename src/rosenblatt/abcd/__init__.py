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

- :mod:`~rosenblatt.abcd.histograms`: the ABCD histogram (:func:`abcd_histogram`);
- :mod:`~rosenblatt.abcd.closure`: counts, ``eta_A`` and errors over a grid of
  cuts (:func:`closure_scan`);
- :mod:`~rosenblatt.abcd.closure_testing`: whether the background's non-closure
  is statistical, with a bootstrap covariance over the grid (:func:`closure_test`);
- :mod:`~rosenblatt.abcd.closure_correction`: the closure factor that corrects
  ``B C / D`` and its uncertainty from a keyed bootstrap of the transform's fit
  (:func:`closure_correction`), and the corrected prediction (:func:`abcd_prediction`);
- :mod:`~rosenblatt.abcd.likelihood`: the estimate as a pyhf model
  (:func:`pyhf_workspace`), its expected significance and limit at one cut
  (:func:`likelihood_at_cut`) and their map over the cuts (pyhf is imported on
  first use);
- :mod:`~rosenblatt.abcd.passfail`: beyond one cut, the pass/fail fit of the
  spectrum in bins of ``x`` (:func:`passfail_workspace`, :func:`passfail_fit`;
  several cuts as categories, :func:`passfail_categories_workspace`): the
  passing background is the failing one times a transfer ratio;
- :mod:`~rosenblatt.abcd.transfer_correction`: the pass/fail fit's per-bin
  non-closure with its uncertainty from the keyed bootstrap of the
  transform's fit (:func:`~rosenblatt.abcd.transfer_correction.transfer_correction`);
- :mod:`~rosenblatt.abcd.templates`: the signal of each mass hypothesis in bins
  of ``x`` (:func:`gaussian_templates`, :func:`signal_templates`);
- :mod:`~rosenblatt.abcd.bumphunt`: the bump hunt on a grid of mass hypotheses
  with that fit (:func:`bump_hunt`; one cut, or several as categories with one
  ``mu``): the local significance and the CLs limit per hypothesis
  (:func:`local_significance_scan`; the signal strength, :func:`signal_strength`);
- :mod:`~rosenblatt.abcd.look_elsewhere`: the look-elsewhere effect over that grid,
  the global significance from pseudo-experiments and from Gross and Vitells'
  upcrossings (:func:`global_significance`, :func:`upcrossings`).
"""

from __future__ import annotations

from rosenblatt.abcd.bumphunt import BumpHunt, bump_hunt, local_significance_scan, signal_strength
from rosenblatt.abcd.closure import ClosureScan, closure_scan
from rosenblatt.abcd.closure_correction import (
    AbcdPrediction,
    ClosureCorrection,
    abcd_prediction,
    closure_correction,
    measured_closure,
)
from rosenblatt.abcd.closure_testing import ClosureTest, closure_test
from rosenblatt.abcd.histograms import abcd_histogram, cut_axes, process_axis
from rosenblatt.abcd.likelihood import (
    MAX_NONCLOSURE,
    CutLikelihood,
    SensitivityMap,
    background_fit,
    expected_significance,
    expected_upper_limit,
    likelihood_at_cut,
    profile_interval,
    pyhf_workspace,
    quiet_pyhf,
    sensitivity_map,
)
from rosenblatt.abcd.look_elsewhere import GlobalSignificance, global_significance, upcrossings
from rosenblatt.abcd.passfail import (
    PassFailFit,
    passfail_categories_workspace,
    passfail_fit,
    passfail_workspace,
)
from rosenblatt.abcd.templates import SignalTemplates, gaussian_templates, signal_templates

__all__ = [
    "MAX_NONCLOSURE",
    "AbcdPrediction",
    "BumpHunt",
    "ClosureCorrection",
    "ClosureScan",
    "ClosureTest",
    "CutLikelihood",
    "GlobalSignificance",
    "PassFailFit",
    "SensitivityMap",
    "SignalTemplates",
    "abcd_histogram",
    "abcd_prediction",
    "background_fit",
    "bump_hunt",
    "closure_correction",
    "closure_scan",
    "closure_test",
    "cut_axes",
    "expected_significance",
    "expected_upper_limit",
    "gaussian_templates",
    "global_significance",
    "likelihood_at_cut",
    "local_significance_scan",
    "measured_closure",
    "passfail_categories_workspace",
    "passfail_fit",
    "passfail_workspace",
    "process_axis",
    "profile_interval",
    "pyhf_workspace",
    "quiet_pyhf",
    "sensitivity_map",
    "signal_strength",
    "signal_templates",
    "upcrossings",
]
