"""The pass/fail fit beside the ABCD count (``rosenblatt.abcd.transfer``, the LHCO study's use of it).

On synthetic spectra: a signal concentrated in few bins of ``x`` is seen better by the
fit over the bins than by the one-bin ABCD count at the same cut, and the exact profile
agrees with pyhf's asymptotic formulae on the same workspace. On a synthetic sample: the
raw score's transfer ratio changes with the mass (the linear check flags it), IRGI's
does not.
"""

from __future__ import annotations

import numpy as np
import pytest

import rosenblatt as rb
from rosenblatt.abcd.transfer import passfail_expected, transfer_check
from rosenblatt.studies.lhco.passfail import mass_edges, passfail_side

pytestmark = pytest.mark.core

EDGES = np.linspace(2000.0, 4000.0, 21)
CENTRES = 0.5 * (EDGES[1:] + EDGES[:-1])
#: the background's fraction passing the cut, the same in every bin
EPSILON = 0.1


def _spectra(total_signal: float) -> dict[str, np.ndarray]:
    """A falling background, a constant pass fraction; a signal in the two bins 3400-3600 GeV."""
    background = 4000.0 * np.exp(-(CENTRES - 2000.0) / 500.0)
    signal = np.where((CENTRES > 3400) & (CENTRES < 3600), 0.5 * total_signal, 0.0)
    return {
        "b_fail": (1 - EPSILON) * background,
        "b_pass": EPSILON * background,
        "s_fail": 0.4 * signal,
        "s_pass": 0.6 * signal,
    }


def _abcd_regions(spectra: dict[str, np.ndarray], x0: float) -> tuple[list[float], list[float]]:
    """The four regions' background and signal of the cut at ``x0`` (a bin edge)."""
    above = x0 < CENTRES

    def regions(passing: np.ndarray, failing: np.ndarray) -> list[float]:
        return [
            float(passing[above].sum()),  # A: above x0, passing
            float(failing[above].sum()),  # B: above x0, failing
            float(passing[~above].sum()),  # C: below x0, passing
            float(failing[~above].sum()),  # D: below x0, failing
        ]

    return regions(spectra["b_pass"], spectra["b_fail"]), regions(
        spectra["s_pass"], spectra["s_fail"]
    )


@pytest.mark.parametrize("x0", [2600.0, 3000.0, 3400.0])
def test_the_fit_sees_a_narrow_signal_at_least_as_well_as_the_count(x0: float) -> None:
    pytest.importorskip("pyhf")
    from rosenblatt.abcd.likelihood import (
        expected_significance,
        expected_upper_limit,
        pyhf_workspace,
        quiet_pyhf,
    )

    spectra = _spectra(40.0)
    background, signal = _abcd_regions(spectra, x0)
    with quiet_pyhf():
        workspace = pyhf_workspace(*background, *signal)
        abcd_z = expected_significance(workspace)
        abcd_limit = expected_upper_limit(workspace)
    fit = passfail_expected(
        spectra["b_fail"],
        spectra["s_fail"],
        spectra["s_pass"],
        EDGES,
        ratio=EPSILON / (1 - EPSILON),
    )
    assert abcd_z > 0.5
    assert fit.significance >= abcd_z
    assert fit.upper_limit <= abcd_limit


def test_the_exact_profile_agrees_with_pyhf_on_the_workspace() -> None:
    """Asimov significance and expected limit, with and without a non-closure per bin."""
    pytest.importorskip("pyhf")
    from rosenblatt.abcd.likelihood import expected_significance, expected_upper_limit, quiet_pyhf
    from rosenblatt.abcd.passfail import passfail_workspace

    spectra = {key: value[8:16] for key, value in _spectra(40.0).items()}
    edges = EDGES[8:17]
    ratio = EPSILON / (1 - EPSILON)
    nonclosure = np.linspace(0.05, 0.3, 8)
    # a failing bin without background takes the workspace's floor in both
    sparse = spectra["b_fail"].copy()
    sparse[[2, 5]] = 0.0
    for relative, failing in (
        (None, spectra["b_fail"]),
        (nonclosure, spectra["b_fail"]),
        (None, sparse),
    ):
        fit = passfail_expected(
            failing,
            spectra["s_fail"],
            spectra["s_pass"],
            edges,
            ratio=ratio,
            nonclosure=relative,
        )
        with quiet_pyhf():
            workspace = passfail_workspace(
                failing,
                ratio * failing,
                spectra["s_pass"],
                spectra["s_fail"],
                ratio=ratio,
                nonclosure=relative,
            )
            assert fit.significance == pytest.approx(expected_significance(workspace), rel=1e-4)
            assert fit.upper_limit == pytest.approx(expected_upper_limit(workspace), rel=1e-4)


def test_a_non_closure_lowers_the_significance() -> None:
    spectra = _spectra(40.0)
    ratio = EPSILON / (1 - EPSILON)
    args = (spectra["b_fail"], spectra["s_fail"], spectra["s_pass"], EDGES)
    exact = passfail_expected(*args, ratio=ratio)
    loose = passfail_expected(*args, ratio=ratio, nonclosure=np.full(20, 0.2))
    assert loose.significance < exact.significance
    assert loose.upper_limit > exact.upper_limit


def test_transfer_check_of_a_constant_and_of_a_sloped_ratio() -> None:
    background = 1e5 * np.exp(-(CENTRES - 2000.0) / 800.0)
    constant = transfer_check((1 - EPSILON) * background, EPSILON * background, CENTRES)
    assert constant.ratio == pytest.approx(EPSILON / (1 - EPSILON))
    assert constant.chi2 == pytest.approx(0.0, abs=1e-20)
    assert not constant.linear_needed
    fraction = EPSILON * (1 + 0.5 * (CENTRES - 3000.0) / 1000.0)
    sloped = transfer_check((1 - fraction) * background, fraction * background, CENTRES)
    assert sloped.linear_needed
    assert sloped.slope > 0
    with pytest.raises(ValueError, match="passing"):
        transfer_check(background, np.zeros(20), CENTRES)


def _sample(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """A falling mass spectrum whose raw score rises with the mass (a sculpting score)."""
    rng = np.random.default_rng(seed)
    mjj = 2000.0 + rng.exponential(500.0, 3 * n)
    mjj = mjj[mjj < 4000.0][:n]
    score = 1.0 / (1.0 + np.exp(-(rng.normal(0.0, 1.0, n) + 1.5 * (mjj - 3000.0) / 1000.0)))
    return mjj, score


def test_the_raw_score_needs_a_linear_transfer_and_irgi_does_not() -> None:
    """The pass/fail ratio of the raw score's background changes with m_jj, IRGI's is constant."""
    x_def, y_def = _sample(20_000, 1)
    mjj, raw = _sample(20_000, 2)
    rng = np.random.default_rng(3)
    mjj_sig = rng.normal(3500.0, 100.0, 300)
    mjj_sig = mjj_sig[mjj_sig < 4000.0]
    raw_sig = rng.uniform(0.7, 1.0, len(mjj_sig))
    gamma = rb.IRGI(depth=4).fit(x_def, y_def)
    x = np.r_[mjj, mjj_sig]
    label = np.r_[np.zeros(len(mjj), np.int64), np.ones(len(mjj_sig), np.int64)]
    edges = mass_edges(x, 4000.0)
    assert edges[0] == 2000.0
    assert np.allclose(np.diff(edges), 100.0)
    scores = {"raw": np.r_[raw, raw_sig], "irgi": gamma.transform(x, np.r_[raw, raw_sig])}
    cuts = {"raw": float(np.quantile(raw, 0.8)), "irgi": 0.8}
    sides = {
        name: passfail_side(x, score, label, cuts[name], edges)[0] for name, score in scores.items()
    }
    assert sides["raw"]["linear_transfer_needed"] is True
    assert sides["raw"]["transfer_slope"] > 0
    assert sides["irgi"]["linear_transfer_needed"] is False
    assert sides["irgi"]["transfer_p_value"] > 0.01
    for side in sides.values():
        assert side["note"] is None
        assert side["significance"] is not None
        assert side["significance_stat_only"] is not None
        assert side["upper_limit"] > side["upper_limit_stat_only"] > 0
    # the raw score's sculpting enters its fit as a large non-closure per bin
    raw_loss = sides["raw"]["significance"] / sides["raw"]["significance_stat_only"]
    irgi_loss = sides["irgi"]["significance"] / sides["irgi"]["significance_stat_only"]
    assert raw_loss < irgi_loss
