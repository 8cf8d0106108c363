"""A run whose validated sizes do not fit in memory ends in one line naming the size setting."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml
from test_concurrent_runs import TINY

from rosenblatt.cli import main


def test_a_huge_size_is_named_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = copy.deepcopy(TINY)
    config["background"]["n_defining"] = 10**13
    path = tmp_path / "huge.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    assert main(["run", str(path), "--output", str(tmp_path / "results")]) == 2
    [line] = [line for line in capsys.readouterr().err.splitlines() if "error" in line]
    assert line.startswith(f"rosenblatt run: error: {path}: background.n_defining")
    assert "10000000000000" in line
    assert not (tmp_path / "results").exists()
