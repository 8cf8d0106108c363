"""The pass/fail fit in bins of ``x``: its closed form, its Asimov fit, its errors and its coverage."""

from __future__ import annotations

import numpy as np
import pytest

pyhf = pytest.importorskip("pyhf")

from rosenblatt.abcd.bumphunt import signal_strength
from rosenblatt.abcd.likelihood import quiet_pyhf
from rosenblatt.abcd.passfail import (
    SLOPE,
    SLOPE_SPAN,
    PassFailFit,
    passfail_categories_workspace,
    passfail_fit,
    passfail_workspace,
    with_linear_transfer,
)

pytestmark = pytest.mark.filterwarnings(
    "ignore:jsonschema.RefResolver is deprecated:DeprecationWarning"
)

#: bins of x on [0, 1], a falling background and a resonance at 0.6
EDGES = np.linspace(0.0, 1.0, 13)
CENTRES = 0.5 * (EDGES[1:] + EDGES[:-1])
BACKGROUND = 20000 * np.exp(-3 * CENTRES) * np.diff(EDGES) * 3 / -np.expm1(-3)
RESONANCE = np.exp(-0.5 * ((CENTRES - 0.6) / 0.04) ** 2)
SIGNAL = 300 * RESONANCE / RESONANCE.sum()
#: the cut keeps this fraction of the background in every bin (a decorrelated score)
EPS = 0.05


def _spectra(rng: np.random.Generator, eps: np.ndarray | float = EPS) -> tuple[np.ndarray, ...]:
    failing = rng.poisson(BACKGROUND * (1 - eps) + 0.5 * SIGNAL)
    passing = rng.poisson(BACKGROUND * eps + 0.5 * SIGNAL)
    return failing, passing


def test_the_background_only_fit_is_the_closed_form() -> None:
    failing, passing = _spectra(np.random.default_rng(1))
    workspace = passfail_workspace(failing, passing, 0.5 * SIGNAL, 0.5 * SIGNAL, ratio=0.04)
    model = workspace.model()
    pars = pyhf.infer.mle.fixed_poi_fit(0.0, workspace.data(model), model, tolerance=1e-12)
    # the maximum of sum_i Pois(f_i | b_i) Pois(p_i | r b_i): r = sum p / sum f
    ratio = passing.sum() / failing.sum()
    transfer = float(pars[model.config.par_slice("transfer")][0]) * 0.04
    assert transfer == pytest.approx(ratio, rel=1e-5)
    shape = np.asarray(pars[model.config.par_slice("background_shape")])
    np.testing.assert_allclose(shape * failing, (failing + passing) / (1 + ratio), rtol=1e-4)


def test_the_asimov_spectra_give_back_their_signal_and_ratio() -> None:
    failing = BACKGROUND * (1 - EPS) + 0.5 * SIGNAL
    passing = BACKGROUND * EPS + 0.5 * SIGNAL
    with quiet_pyhf():
        fit = passfail_fit(passfail_workspace(failing, passing, 0.5 * SIGNAL, 0.5 * SIGNAL))
    assert isinstance(fit, PassFailFit)
    assert fit.mu == pytest.approx(1.0, abs=2e-3)
    assert fit.mu_low < 1.0 < fit.mu_high
    assert fit.transfer == pytest.approx(EPS / (1 - EPS), rel=1e-3)
    np.testing.assert_allclose(fit.background_pass, BACKGROUND * EPS, rtol=5e-3)
    np.testing.assert_allclose(fit.signal_pass, fit.mu * 0.5 * SIGNAL, rtol=1e-9)


@pytest.mark.slow
def test_a_nonclosure_per_bin_widens_the_interval() -> None:
    failing = BACKGROUND * (1 - EPS) + 0.5 * SIGNAL
    passing = BACKGROUND * EPS + 0.5 * SIGNAL
    with quiet_pyhf():
        tight = passfail_fit(passfail_workspace(failing, passing, 0.5 * SIGNAL, 0.5 * SIGNAL))
        wide = passfail_fit(
            passfail_workspace(
                failing, passing, 0.5 * SIGNAL, 0.5 * SIGNAL, nonclosure=np.full(12, 0.2)
            )
        )
    assert "nonclosure" in wide_parameters(failing, passing)
    assert wide.mu_high - wide.mu_low > 1.2 * (tight.mu_high - tight.mu_low)


def wide_parameters(failing: np.ndarray, passing: np.ndarray) -> list[str]:
    workspace = passfail_workspace(
        failing, passing, 0.5 * SIGNAL, 0.5 * SIGNAL, nonclosure=np.full(12, 0.2)
    )
    return list(workspace.model().config.parameters)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"passing": np.ones(5)}, "passing has 5 bins, the failing spectrum 12"),
        (
            {"failing": np.full(12, -1.0)},
            r"failing must be finite and non-negative, got -1.0 in bin 0",
        ),
        ({"signal_passing": np.zeros(12)}, "signal_passing must have a positive yield"),
        ({"failing": np.zeros(12)}, "ratio must be a positive number"),
        ({"nonclosure": [np.nan] * 12}, "nonclosure must be finite"),
        ({"failing": np.ones((2, 6))}, r"failing must be a non-empty 1-d array"),
    ],
)
def test_bad_input_is_named(change: dict[str, object], message: str) -> None:
    arguments: dict[str, object] = {
        "failing": BACKGROUND,
        "passing": BACKGROUND * EPS,
        "signal_passing": SIGNAL,
        **change,
    }
    with pytest.raises(ValueError, match=message):
        passfail_workspace(**arguments)  # type: ignore[arg-type]


def _coverage(eps: np.ndarray | float, toys: int, fitted: int) -> tuple[np.ndarray, float]:
    """The signal strengths of ``toys`` pseudo-experiments and their intervals' coverage of 1.

    Every toy is fitted by the exact profile (:func:`~rosenblatt.abcd.signal_strength`,
    all at once); the first ``fitted`` of them by pyhf too, which must find the same
    ``mu`` and interval.
    """
    spectra = [_spectra(np.random.default_rng([5, toy]), eps) for toy in range(toys)]
    failing = np.array([f for f, _ in spectra])
    passing = np.array([p for _, p in spectra])
    mu, low, high = signal_strength(passing, failing, 0.5 * SIGNAL, 0.5 * SIGNAL)
    for toy in range(fitted):
        with quiet_pyhf():
            fit = passfail_fit(
                passfail_workspace(failing[toy], passing[toy], 0.5 * SIGNAL, 0.5 * SIGNAL)
            )
        np.testing.assert_allclose(
            [fit.mu, fit.mu_low, fit.mu_high], [mu[toy], low[toy], high[toy]], atol=2e-3
        )
    return mu, float(np.mean((low <= 1.0) & (high >= 1.0)))


@pytest.mark.slow
def test_the_interval_covers_for_a_decorrelated_score_and_not_for_a_sculpted_one() -> None:
    toys = 500
    mu, coverage = _coverage(EPS, toys, fitted=10)
    error = np.sqrt(0.68 * 0.32 / toys)
    assert abs(coverage - 0.68) < 3 * error, coverage
    assert abs(mu.mean() - 1.0) < 3 * mu.std() / np.sqrt(toys), mu.mean()
    # a raw score whose efficiency rises with x sculpts the passing spectrum: the constant
    # transfer ratio is wrong, and the fitted signal is biased beyond its error
    sculpted, sculpted_coverage = _coverage(EPS + 0.1 * (CENTRES - 0.3), 100, fitted=3)
    assert abs(sculpted.mean() - 1.0) > 5 * sculpted.std() / np.sqrt(100), sculpted.mean()
    assert sculpted_coverage < 0.2


def test_the_post_fit_figure(tmp_path) -> None:
    from rosenblatt.plotting import plot_passfail, save_figure

    failing = BACKGROUND * (1 - EPS) + 0.5 * SIGNAL
    passing = BACKGROUND * EPS + 0.5 * SIGNAL
    with quiet_pyhf():
        fit = passfail_fit(passfail_workspace(failing, passing, 0.5 * SIGNAL, 0.5 * SIGNAL))
    fig = plot_passfail(fit, EDGES, failing, passing, expected_ratio=EPS / (1 - EPS))
    labels = [text.get_text() for ax in fig.axes for text in ax.get_legend().get_texts()]
    assert "data: pass / fail" in labels
    assert f"fitted ratio {fit.transfer:.4f}" in labels
    assert any(label.startswith("signal, $\\mu$ = 1.00") for label in labels)
    path = save_figure(fig, tmp_path / "passfail.png")
    assert path.stat().st_size > 10_000


def test_a_linear_transfer_takes_up_a_slope_the_constant_one_reads_as_signal() -> None:
    # the expected spectra of a cut whose efficiency rises by 40% across x, no signal
    eps = EPS * (1.0 + 0.4 * (CENTRES - 0.5) / (CENTRES[-1] - 0.5))
    failing, passing = BACKGROUND * (1 - eps), BACKGROUND * eps
    ratio = float(np.mean(eps / (1 - eps)))
    constant = passfail_workspace(failing, passing, SIGNAL, 0.1 * SIGNAL, ratio=ratio)
    linear = with_linear_transfer(constant, CENTRES)
    assert SLOPE in linear.model().config.par_order
    with quiet_pyhf():
        biased, fitted = passfail_fit(constant), passfail_fit(linear)
    assert abs(fitted.mu) < 0.05
    assert abs(biased.mu) > 3 * abs(fitted.mu)
    # the fitted slope: the transfer ratio's relative change from the middle to the last bin
    change = float(fitted.parameters[SLOPE][0]) * SLOPE_SPAN
    expected = (passing / failing)[-1] / np.interp(0.5, CENTRES, passing / failing) - 1.0
    assert change == pytest.approx(expected, rel=0.1)
    with pytest.raises(ValueError, match="centres"):
        with_linear_transfer(constant, CENTRES[:-1])


#: two disjoint categories of a decorrelated score cut at 0.9 and 0.97: 0.9 <= s < 0.97, s >= 0.97
CUTS = (0.9, 0.97)
EPS_K = (CUTS[1] - CUTS[0], 1.0 - CUTS[1])
#: the signal's fraction in each category and failing
SIGNAL_K, SIGNAL_FAILING = (0.3, 0.5), 0.2


def test_categories_share_mu_and_give_back_each_ratio() -> None:
    """Asimov spectra: the combined fit's mu and each category's ratio eps_k / (1 - eps)."""
    failing = BACKGROUND * CUTS[0] + SIGNAL_FAILING * SIGNAL
    passing = [
        BACKGROUND * eps + share * SIGNAL for eps, share in zip(EPS_K, SIGNAL_K, strict=True)
    ]
    templates = [share * SIGNAL for share in SIGNAL_K]
    expected = [eps / CUTS[0] for eps in EPS_K]
    with quiet_pyhf():
        workspace = passfail_categories_workspace(
            failing, passing, templates, SIGNAL_FAILING * SIGNAL, ratios=expected
        )
        both = passfail_fit(workspace)
        alone = [
            passfail_fit(
                passfail_workspace(
                    failing, passing[k], templates[k], SIGNAL_FAILING * SIGNAL, ratio=expected[k]
                )
            )
            for k in range(2)
        ]
    assert workspace.channels == ["fail", "pass_0", "pass_1"]
    assert {"transfer_0", "transfer_1", "background_shape", "mu"} <= set(
        workspace.model().config.parameters
    )
    assert both.mu == pytest.approx(1.0, abs=2e-3)
    assert set(both.transfers) == {"pass_0", "pass_1"}
    for k in range(2):
        assert both.transfers[f"pass_{k}"] == pytest.approx(expected[k], rel=1e-3)
        np.testing.assert_allclose(
            both.backgrounds_pass[f"pass_{k}"], BACKGROUND * EPS_K[k], rtol=2e-3
        )
        assert alone[k].mu == pytest.approx(1.0, abs=5e-3)
    assert both.transfer == pytest.approx(sum(expected), rel=1e-3)
    width = both.mu_high - both.mu_low
    assert all(width < 0.95 * (fit.mu_high - fit.mu_low) for fit in alone)


def test_categories_take_a_nonclosure_each_and_refuse_bad_input() -> None:
    failing = BACKGROUND * CUTS[0]
    passing = [BACKGROUND * eps for eps in EPS_K]
    templates = [share * SIGNAL for share in SIGNAL_K]
    workspace = passfail_categories_workspace(
        failing, passing, templates, nonclosure=[None, np.full(12, 0.1)]
    )
    assert "nonclosure_1" in workspace.model().config.parameters
    assert "nonclosure_0" not in workspace.model().config.parameters
    with pytest.raises(ValueError, match="one spectrum per category"):
        passfail_categories_workspace(failing, passing, templates[:1])
    with pytest.raises(ValueError, match="ratios has 1 entries"):
        passfail_categories_workspace(failing, passing, templates, ratios=[0.1])
    with pytest.raises(ValueError, match=r"passing\[1\] has 5 bins"):
        passfail_categories_workspace(failing, [passing[0], np.ones(5)], templates)
    linear = with_linear_transfer(workspace, CENTRES)
    assert SLOPE in linear.model().config.parameters
