"""The abcd study's console text writes the cut levels of a grid as a person reads them."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import rosenblatt as rb
from rosenblatt.exceptions import ConfigError
from rosenblatt.studies.abcd.cuts import AbcdCuts
from rosenblatt.studies.abcd.study import described

#: the grid ``y0: [0.1, 0.9]`` with ``n_y0: 9``, as the configuration spreads it
LEVELS = tuple(np.linspace(0.1, 0.9, 9).tolist())
SHOWN = "(0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)"


def test_the_configured_grid_holds_unrounded_levels() -> None:
    cuts = AbcdCuts.parse({"x": "mjj", "x0": [1.0, 2.0], "y0": [0.1, 0.9], "n_y0": 9}, "c.yaml")
    assert cuts.y0 == LEVELS
    assert 0.30000000000000004 in cuts.y0


@pytest.mark.parametrize(
    ("transform", "text"),
    [
        (rb.IRGI(depth=3, cut_levels=LEVELS), f"IRGI(depth=3, cut_levels={SHOWN})"),
        (rb.KDE(sigma_r=0.1, cut_levels=LEVELS), f"KDE(sigma_r=0.1, cut_levels={SHOWN})"),
        (
            rb.GridKDE(sigma_r=0.3, degree=1, cut_levels=LEVELS),
            f"GridKDE(sigma_r=0.3, degree=1, cut_levels={SHOWN})",
        ),
        (rb.IRGI(depth=3, cut_levels=(0.5,)), "IRGI(depth=3, cut_levels=(0.5,))"),
        (rb.IRGI(depth=3), "IRGI(depth=3)"),
    ],
)
def test_a_transform_is_shown_with_its_cut_levels_written_short(
    transform: object, text: str
) -> None:
    assert described(transform) == text
    assert "0000000" not in described(transform)


def test_the_fitted_transform_and_its_file_keep_the_exact_levels(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    x, y = rng.uniform(size=4000), rng.uniform(size=4000)
    transform = rb.IRGI(depth=5, cut_levels=LEVELS).fit(x, y)
    assert described(transform) == f"IRGI(depth=5, cut_levels={SHOWN})"
    assert transform.cut_levels == LEVELS
    assert repr(transform).count("0.30000000000000004") == 1
    transform.save(tmp_path / "irgi.json")
    assert "0.30000000000000004" in (tmp_path / "irgi.json").read_text(encoding="utf-8")
    assert tuple(rb.load(tmp_path / "irgi.json").cut_levels) == LEVELS


def test_a_grid_outside_zero_one_is_named_with_short_levels() -> None:
    with pytest.raises(ConfigError) as raised:
        AbcdCuts.parse({"x": "mjj", "x0": [1.0, 2.0], "y0": [0.1, 1.3], "n_y0": 7}, "c.yaml")
    assert str(raised.value).endswith(
        "cuts on the transformed score lie in [0, 1], got [0.1, 0.3, 0.5, 0.7, 0.9, 1.1, 1.3]"
    )
