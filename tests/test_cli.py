"""The command line: help, version and clear errors instead of tracebacks."""

from __future__ import annotations

from pathlib import Path

import pytest

from rosenblatt import __version__
from rosenblatt.cli import main


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["--version"])
    assert exit_info.value.code == 0
    assert __version__ in capsys.readouterr().out


def test_help_lists_every_command(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    for command in ("run", "generate", "features", "train", "export"):
        assert command in out


def test_unknown_configuration(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "no-such-study"]) == 2
    err = capsys.readouterr().err
    assert "no configuration 'no-such-study'" in err
    assert "blobs" in err
    assert "lhco-quick" in err


def test_configuration_without_study(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "bad.yaml"
    config.write_text("name: bad\n")
    assert main(["run", str(config)]) == 2
    assert "'study' key" in capsys.readouterr().err


def test_configuration_missing_a_section(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "bad.yaml"
    config.write_text("study: blobs\nseed: 1\n")
    assert main(["run", str(config), "--output", str(tmp_path / "out")]) == 2
    assert "bad.yaml: background: missing" in capsys.readouterr().err


def test_unknown_study(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "bad.yaml"
    config.write_text("study: cifar\n")
    assert main(["run", str(config)]) == 2
    assert "unknown study 'cifar'" in capsys.readouterr().err
