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


def test_a_name_with_line_breaks_is_said_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A file name holding a carriage return or a newline is escaped, not printed raw."""
    config = tmp_path / "breaks.yaml"
    config.write_text(
        'study: abcd\ndatasets: {bkg: {files: ["0\\r", "a\\nb"], role: background}}\nscore: s\n'
        "transforms: [{kind: irgi}]\nabcd: {x: x, x0: [1.0, 2.0], y0: [0.2, 0.5]}\n",
        encoding="utf-8",
    )
    status = main(["run", str(config), "--output", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert status == 2
    assert err.count("\n") == 1, err
    assert "file 0\\r does not exist" in err
    assert not (tmp_path / "out").exists()
