"""GridKDE and automatic KDE travel like the paper's transforms: JSON and correctionlib."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from gaussian_blob import bivariate_normal

import rosenblatt as rb

pytest.importorskip("correctionlib")


@pytest.mark.slow
def test_grid_kde_save_load_and_correctionlib(tmp_path: Path) -> None:
    from rosenblatt.correctionlib import write_correctionlib

    x, y = bivariate_normal(20_000, seed=1)
    xq, yq = bivariate_normal(2000, seed=2)
    t = rb.GridKDE().fit(x, y)
    expected = t.transform(xq, yq)
    t.save(tmp_path / "g.json")
    np.testing.assert_array_equal(rb.load(tmp_path / "g.json").transform(xq, yq), expected)
    metadata = write_correctionlib(t, tmp_path / "c.json", "gamma", progress=False)
    assert metadata["max_abs_error"] < 1e-12
    np.testing.assert_allclose(rb.load(tmp_path / "c.json").transform(xq, yq), expected, atol=1e-12)


def test_automatic_kde_exports(tmp_path: Path) -> None:
    from rosenblatt.correctionlib import write_correctionlib

    x, y = bivariate_normal(3000, seed=3)
    t = rb.KDE("auto").fit(x, y)
    metadata = write_correctionlib(t, tmp_path / "k.json", "gamma", tolerance=1e-2, progress=False)
    assert metadata["params"]["sigma_r"] == t.sigma_r_
    assert metadata["max_abs_error"] <= 1e-2
