"""An automatic parameter that does not close at the cut levels: its held-out test and its note."""

from __future__ import annotations

import json
import re
import warnings
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

import rosenblatt as rb
from rosenblatt.serialization import SchemaError
from rosenblatt.transforms import _cut_dependence as cd
from rosenblatt.transforms import selection as sel
from rosenblatt.transforms.grid_kde import GridKDE
from rosenblatt.transforms.kde import absolute_sigma


def spike(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``y`` uniform, but a share ``0.1 x`` of the events in ``[0.97, 1)``: ``x`` shows only in the tail."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(size=n)
    y = rng.uniform(size=n)
    top = rng.uniform(size=n) < 0.1 * x
    y[top] = rng.uniform(0.97, 1.0, size=int(top.sum()))
    return x, y


def falling(n: int, seed: int, independent: bool) -> tuple[np.ndarray, np.ndarray]:
    """``x`` of density ``e^(-3x)`` on ``[0, 1]``; ``y`` uniform, or Beta of mean ``0.3 + 0.4 x``."""
    rng = np.random.default_rng(seed)
    x = -np.log1p(-rng.uniform(size=n) * (1 - np.exp(-3.0))) / 3.0
    if independent:
        return x, rng.uniform(size=n)
    mean = 0.3 + 0.4 * x
    return x, rng.beta(5 * mean, 5 * (1 - mean))


def irgi(depth: int) -> rb.IRGI:
    return rb.IRGI(depth=int(depth))


# ------------------------------------------------------------------ the statistic
def test_unit_weights_give_pearsons_statistic() -> None:
    rng = np.random.default_rng(3)
    n = rng.integers(50, 400, size=5).astype(float)
    passing = rng.binomial(n.astype(int), 0.3).astype(float)
    table = np.stack([passing, n - passing])
    expected = stats.chi2_contingency(table, correction=False).pvalue
    assert cd.homogeneity_pvalue(passing, n, n) == pytest.approx(expected, rel=1e-10)
    # a common scale of the weights changes nothing
    assert cd.homogeneity_pvalue(3 * passing, 3 * n, 9 * n) == pytest.approx(expected, rel=1e-10)


def test_degenerate_tables_pass() -> None:
    n = np.array([10.0, 20.0, 30.0])
    assert cd.homogeneity_pvalue(n, n, n) == 1.0  # every event passes
    assert cd.homogeneity_pvalue(0 * n, n, n) == 1.0  # none does
    assert cd.homogeneity_pvalue(n[:1], n[:1], n[:1]) == 1.0  # a single bin


def test_x_bins_hold_equal_weight() -> None:
    x = np.random.default_rng(1).uniform(size=10_000)
    counts = np.bincount(cd.x_bins(x, None))
    assert len(counts) == cd.X_BINS
    assert np.all(np.abs(counts - len(x) / cd.X_BINS) <= 1)
    weight = np.where(x < 0.5, -1.0, 3.0)  # bins of equal summed |w|
    summed = np.bincount(cd.x_bins(x, weight), weights=np.abs(weight))
    assert np.allclose(summed, summed.mean(), rtol=0.01)


# ------------------------------------------------------------------ the choice
def test_a_coarse_depth_the_score_prefers_is_rejected() -> None:
    # the score weighs the whole distribution, where x barely shows: it prefers depth 3,
    # whose top y bin ([0.875, 1]) smears the tail that depends on x; depth 4 closes
    x, y = spike(20_000, seed=0)
    plain = sel.cross_validate(irgi, [3, 4], x, y, None, parameter="depth")
    assert plain.chosen == 3
    assert plain.cut_levels == ()
    assert plain.cut_pvalues == ()
    checked = sel.cross_validate(irgi, [3, 4], x, y, None, parameter="depth", cut_levels=[0.95])
    assert checked.scores == plain.scores
    assert checked.cut_levels == (0.95,)
    (p3,), (p4,) = checked.cut_pvalues
    assert p3 < 1e-4  # 1.2e-6
    assert p4 > 0.1  # 0.94
    assert checked.cut_passes == (False, True)
    assert checked.chosen == 4
    assert checked.cut_note() is None


def test_the_note_says_when_no_depth_passes() -> None:
    x, y = spike(20_000, seed=0)
    s = sel.cross_validate(irgi, [1, 2], x, y, None, parameter="depth", cut_levels=[0.5, 0.95])
    assert s.cut_passes == (False, False)
    assert s.chosen == s.values[s.best_index]
    assert s.failing_levels(s.chosen) == (0.95,)
    note = s.cut_note()
    assert note is not None
    assert "every depth tried (1, 2) depends on x at the cut level(s) 0.95" in note
    assert f"the best-scoring, {s.chosen}, is kept" in note
    # the test and its outcome are saved with the selection
    again = sel.Selection.from_dict(json.loads(json.dumps(s.to_dict())))
    assert again == s
    assert again.cut_note() == note


def test_saved_tests_are_checked() -> None:
    x, y = spike(2000, seed=1)
    data = sel.cross_validate(
        irgi, [1, 2], x, y, None, parameter="depth", cut_levels=[0.5]
    ).to_dict()
    assert len(data["cut_pvalues"]) == 2
    for key, value in (("cut_pvalues", [[0.5]]), ("cut_levels", [1.5]), ("cut_pvalues", "x")):
        broken = {**data, key: value}
        with pytest.raises(SchemaError):
            sel.Selection.from_dict(broken)
    del data["cut_pvalues"]
    with pytest.raises(SchemaError, match="malformed selection"):
        sel.Selection.from_dict(data)


def test_irgi_notes_a_depth_that_fails_the_test(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # a threshold no p-value reaches: every depth fails, the best-scoring is kept and noted
    monkeypatch.setattr(cd, "ALPHA", 2.5)
    x, y = falling(4000, seed=2, independent=False)
    with pytest.warns(UserWarning, match=r"depth='auto': the held-out pass fraction of every"):
        t = rb.IRGI(depth="auto", cut_levels=(0.5, 0.8)).fit(x, y)
    assert t.unresolved_cut_levels() == ()
    assert t.depth_ == t.selection_.values[t.selection_.best_index]
    assert t.selection_.cut_levels == (0.5, 0.8)
    assert len(t.selection_.cut_pvalues) == len(t.selection_.values)
    note = t.coarse_cut_note()
    assert note is not None
    assert note.startswith(f"IRGI depth {t.depth_} ({2**t.depth_} y bins, at least 2 bins beyond")
    # the pattern by which the abcd study and `rosenblatt fit` take the warning into their notes
    assert re.match(r"IRGI .* bins beyond the cut", note)
    t.save(tmp_path / "t.json")
    assert rb.load(tmp_path / "t.json").coarse_cut_note() == note


def test_without_cut_levels_nothing_is_tested() -> None:
    x, y = falling(4000, seed=2, independent=False)
    t = rb.IRGI(depth="auto").fit(x, y)
    assert t.selection_.cut_pvalues == ()
    assert t.coarse_cut_note() is None
    assert "cut_levels" not in t.selection_.to_dict()


@pytest.mark.parametrize("independent", [True, False], ids=["independent", "correlated"])
def test_fine_depths_pass_on_a_population_they_fit(independent: bool) -> None:
    # measured over 40 toys of 20k events each: no depth 5 or 6 failed (module docstring)
    failed = tested = 0
    for seed in range(4):
        x, y = falling(10_000, seed=seed, independent=independent)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            t = rb.IRGI(depth="auto", cut_levels=(0.5, 0.8, 0.95), seed=seed).fit(x, y)
        s = t.selection_
        tested += len(s.values)
        failed += s.cut_passes.count(False)
        assert t.depth_ == s.values[s.best_index]
        assert t.coarse_cut_note() is None
    assert tested >= 4
    assert failed == 0


# ------------------------------------------------------------------ kernel widths
def test_a_too_wide_kernel_the_score_prefers_is_rejected() -> None:
    # a kernel of 0.64 sigma_a smears the tail's dependence on x at the edges of x, which the
    # score, weighing the whole distribution, does not mind; 0.01 follows it
    x, y = spike(20_000, seed=0)
    sigma_a = absolute_sigma(x)
    widths = [0.01, 0.64]
    plain = sel.select_bandwidth(x, y, None, degree=0, sigma_a=sigma_a, candidates=widths)
    assert plain.chosen == 0.64
    checked = sel.select_bandwidth(
        x, y, None, degree=0, sigma_a=sigma_a, candidates=widths, cut_levels=[0.95]
    )
    assert checked.scores == plain.scores
    (p_narrow,), (p_wide,) = checked.cut_pvalues
    assert p_wide < 1e-3  # 3e-4
    assert p_narrow > 0.1  # 0.99
    assert checked.chosen == 0.01
    assert checked.cut_note() is None


@pytest.mark.parametrize("make", [rb.KDE, GridKDE], ids=["KDE", "GridKDE"])
def test_auto_width_that_passes_keeps_its_choice(make: type) -> None:
    x, y = falling(10_000, seed=4, independent=False)
    plain = make(sigma_r="auto").fit(x, y)
    checked = make(sigma_r="auto", cut_levels=[0.5, 0.8, 0.95]).fit(x, y)
    assert checked.sigma_r_ == plain.sigma_r_  # the minimum of the parabola, not a value tried
    assert checked.selection_.cut_levels == (0.5, 0.8, 0.95)
    selection = checked.selection_
    assert selection.cut_passes[selection.best_index]
    if make is rb.KDE:  # its widest kernel tried smears x's dependence (degree 2 follows it)
        assert not selection.cut_passes[-1]
    assert checked.coarse_cut_note() is None
    assert plain.selection_.cut_pvalues == ()


@pytest.mark.parametrize("make", [rb.KDE, GridKDE], ids=["KDE", "GridKDE"])
def test_kernels_note_a_width_that_fails_the_test(
    make: type, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(cd, "ALPHA", 2.5)  # no p-value reaches it
    x, y = falling(4000, seed=2, independent=False)
    plain = make(sigma_r="auto").fit(x, y)
    t = make(sigma_r="auto", cut_levels=(0, 0.5, 0.8, 1)).fit(x, y)
    assert t.sigma_r_ == plain.sigma_r_  # none passes: the choice stands
    assert t.selection_.cut_levels == (0.5, 0.8)  # the levels inside (0, 1)
    note = t.coarse_cut_note()
    assert note is not None
    assert note.startswith(f"{make.__name__} sigma_r {t.sigma_r_:.3g}: sigma_r='auto': the held")
    t.save(tmp_path / "t.json")
    loaded = rb.load(tmp_path / "t.json")
    assert tuple(loaded.cut_levels) == (0, 0.5, 0.8, 1)
    assert loaded.coarse_cut_note() == note
    with pytest.raises(ValueError, match=r"cut_levels must be numbers in \[0, 1\]"):
        make(sigma_r=0.2, cut_levels=[1.5]).fit(x, y)
