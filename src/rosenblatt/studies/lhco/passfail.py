"""The pass/fail fit in bins of m_jj beside the cut-and-count ABCD estimate, on the testing sample.

At each classifier's best ABCD cut (the ``y0`` of its ``(x0, y0)``), the
testing events below ``abcd.mjj_max`` are split into those failing
(``score < y0``) and passing the cut, in bins of m_jj of :data:`BIN_WIDTH` GeV
from the lowest testing mass up to ``mjj_max``. The pass/fail likelihood of
:mod:`rosenblatt.abcd.passfail` over those bins (the failing background free
per bin, the passing one the same times a transfer ratio, the W' signal's
template in both regions) gives:

- the expected (Asimov) significance of the testing sample's W' signal at
  ``mu = 1`` and the median expected 95% CLs upper limit on ``mu``
  (:func:`rosenblatt.abcd.transfer.passfail_expected`: the asymptotic
  formulae, as the ABCD likelihood's :func:`rosenblatt.abcd.likelihood_at_cut`
  at the same cut), with the testing background's per-bin non-closure (its
  pass/fail ratio in the bin over the overall one, in quadrature with that
  ratio's statistical error) as the ``shapesys`` of the passing background,
  and without it;
- the transfer ratio's check (:func:`rosenblatt.abcd.transfer.transfer_check`):
  the chi-square of the per-bin ratios against a constant, and a straight
  line's slope in m_jj with the p-value of zero slope. A sculpted score's
  passing background is not the failing one times a constant.

The workspace of each fit is written as ``passfail_workspace_<classifier>.json``
(observations: the testing background failing and passing).
"""

from __future__ import annotations

import json
import logging
import math
from pathlib import Path

import numpy as np

from rosenblatt._atomic import write_text
from rosenblatt.studies.lhco.summary import ClassifierJson, PassFailComparison, PassFailSide
from rosenblatt.typing import FloatArray, Int64Array

__all__ = ["BIN_WIDTH", "LEVEL", "mass_edges", "passfail_comparison", "passfail_side"]

log = logging.getLogger("rosenblatt.lhco")

#: the width of the bins of m_jj of the pass/fail fit, in GeV
BIN_WIDTH = 100.0
#: the CLs level of the limits
LEVEL = 0.05


def _finite(value: float) -> float | None:
    return float(value) if math.isfinite(value) else None


def mass_edges(mjj: FloatArray, mjj_max: float, width: float = BIN_WIDTH) -> FloatArray:
    """Bins of ``width`` from the lowest mass (rounded down to a multiple of it) to ``mjj_max``.

    The last bin ends at ``mjj_max`` (it may be narrower).
    """
    low = math.floor(float(np.min(mjj)) / width) * width
    edges = np.arange(low, mjj_max, width)
    return np.append(edges, mjj_max)


def passfail_side(
    mjj: FloatArray,
    score: FloatArray,
    label: Int64Array,
    y0: float,
    edges: FloatArray,
) -> tuple[PassFailSide, dict[str, FloatArray]]:
    """One score's pass/fail fit at the cut ``y0`` over the bins ``edges`` of m_jj.

    Parameters
    ----------
    mjj, score, label
        The events (label 0 background, 1 signal), within the edges' range.
    y0
        The cut: events with ``score >= y0`` pass.
    edges
        The bin edges of m_jj, in GeV.

    Returns
    -------
    entry : PassFailSide
        The summary's numbers (``workspace`` not yet set).
    spectra : dict
        The background's and the signal's failing and passing counts per bin,
        and the non-closure per bin (``nonclosure``), for the workspace.
    """
    from rosenblatt.abcd.transfer import passfail_expected, transfer_check

    passing = score >= y0
    spectra = {
        f"{process}_{region}": np.histogram(
            mjj[(label == value) & (passing if region == "pass" else ~passing)], bins=edges
        )[0].astype(np.float64)
        for process, value in (("background", 0), ("signal", 1))
        for region in ("fail", "pass")
    }
    centres_tev = 0.5 * (edges[1:] + edges[:-1]) / 1000.0
    entry: PassFailSide = {
        "y0": float(y0),
        "significance": None,
        "upper_limit": None,
        "significance_stat_only": None,
        "upper_limit_stat_only": None,
        "transfer_ratio": float("nan"),
        "transfer_chi2_ndf": None,
        "transfer_p_value": None,
        "transfer_slope": None,
        "transfer_slope_error": None,
        "transfer_slope_p_value": None,
        "linear_transfer_needed": None,
        "background_pass": float(spectra["background_pass"].sum()),
        "signal_pass": float(spectra["signal_pass"].sum()),
        "workspace": None,
        "note": None,
    }
    try:
        check = transfer_check(spectra["background_fail"], spectra["background_pass"], centres_tev)
    except ValueError as err:
        entry["note"] = f"no fit: {err}"
        return entry, spectra
    spectra["nonclosure"] = check.uncertainty
    entry.update(
        {
            "transfer_ratio": check.ratio,
            "transfer_chi2_ndf": _finite(check.chi2 / check.ndof) if check.ndof else None,
            "transfer_p_value": _finite(check.p_value),
            "transfer_slope": _finite(check.slope),
            "transfer_slope_error": _finite(check.slope_error),
            "transfer_slope_p_value": _finite(check.slope_p_value),
            "linear_transfer_needed": check.linear_needed
            if math.isfinite(check.slope_p_value)
            else None,
        }
    )
    for suffix, nonclosure in (("", check.uncertainty), ("_stat_only", None)):
        try:
            expected = passfail_expected(
                spectra["background_fail"],
                spectra["signal_fail"],
                spectra["signal_pass"],
                edges,
                ratio=check.ratio,
                nonclosure=nonclosure,
                level=LEVEL,
            )
        except ValueError as err:
            entry["note"] = f"no expected result: {err}"
            break
        entry[f"significance{suffix}"] = _finite(expected.significance)  # type: ignore[literal-required]
        entry[f"upper_limit{suffix}"] = _finite(expected.upper_limit)  # type: ignore[literal-required]
    return entry, spectra


def _write_workspace(folder: Path, name: str, spectra: dict[str, FloatArray], ratio: float) -> str:
    """The fit's pyhf workspace, its observations the testing background; the file's name."""
    from rosenblatt.abcd.likelihood import quiet_pyhf
    from rosenblatt.abcd.passfail import passfail_workspace

    with quiet_pyhf():
        workspace = passfail_workspace(
            spectra["background_fail"],
            spectra["background_pass"],
            spectra["signal_pass"],
            spectra["signal_fail"],
            ratio=ratio,
            nonclosure=spectra["nonclosure"],
        )
    path = folder / f"passfail_workspace_{name}.json"
    write_text(path, json.dumps(dict(workspace), indent=2))
    return path.name


def passfail_comparison(
    folder: Path,
    mjj: FloatArray,
    label: Int64Array,
    scores: dict[str, FloatArray],
    classifiers: dict[str, ClassifierJson],
    mjj_max: float,
) -> PassFailComparison:
    """Every classifier's pass/fail fit at the ``y0`` of its best ABCD cut, on the testing sample.

    Parameters
    ----------
    folder
        Where the workspaces are written.
    mjj, label
        The testing sample's masses and labels.
    scores
        Each classifier's testing scores.
    classifiers
        Each classifier's summary entry (its ``y0``).
    mjj_max
        The upper limit of the dijet mass: events above it are left out.

    Returns
    -------
    PassFailComparison
        The summary's ``passfail``.
    """
    keep = mjj < mjj_max
    edges = mass_edges(mjj[keep], mjj_max)
    out: dict[str, PassFailSide] = {}
    for name, score in scores.items():
        entry, spectra = passfail_side(
            mjj[keep], score[keep], label[keep], classifiers[name]["y0"], edges
        )
        if "nonclosure" in spectra and spectra["signal_pass"].sum() > 0:
            try:
                entry["workspace"] = _write_workspace(
                    folder, name, spectra, entry["transfer_ratio"]
                )
            except ImportError as err:
                entry["note"] = f"no workspace: {err}"
        log.info(
            "%s pass/fail fit at y0 = %.3g: expected significance %s, limit on mu %s "
            "(ABCD at the cut: %.3g, %.3g)",
            name,
            entry["y0"],
            entry["significance"],
            entry["upper_limit"],
            classifiers[name].get("significance", float("nan")),
            classifiers[name].get("upper_limit", float("nan")),
        )
        out[name] = entry
    return {"edges": edges.tolist(), "level": LEVEL, "classifiers": out}
