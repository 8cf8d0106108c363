"""Every command's --help: plain text (no reStructuredText), and run's lists what it can run."""

from __future__ import annotations

import re

import pytest

from rosenblatt.cli import COMMANDS, main

pytestmark = pytest.mark.core

#: reStructuredText that a terminal shows as it is: literals, roles, a literal block's "::"
RST = re.compile(r"``|:(?:func|class|mod|meth|attr|data):`|::$", re.MULTILINE)


def _help(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    with pytest.raises(SystemExit) as exit_:
        main([*argv, "--help"])
    assert exit_.value.code == 0
    return capsys.readouterr().out


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_help_has_no_restructured_text(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    text = _help(capsys, command)
    assert f"rosenblatt {command}" in text
    assert RST.findall(text) == []


def test_run_help_lists_the_configurations_and_the_study_kinds(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from rosenblatt.config import known_configs, study_configs
    from rosenblatt.studies import STUDIES

    text = " ".join(_help(capsys, "run").split())  # as one line: names are never split
    configurations = study_configs()
    assert {"lhco-quick", "lhco-paper", "blobs", "fairness", "abcd-example"} <= set(configurations)
    assert set(known_configs()) - set(configurations) == {"train-example"}  # read by train
    assert (
        "study configurations by name (./configs/, then those shipped with the package): "
        + (", ".join(configurations))
        in text
    )
    assert "train-example" not in text
    assert "study kinds (a configuration's 'study:' key): " + ", ".join(sorted(STUDIES)) in text
