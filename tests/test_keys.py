"""``rosenblatt keys``: every study's configuration keys, the same rows as the reference."""

from __future__ import annotations

import pytest

from rosenblatt.cli import main
from rosenblatt.exceptions import UnknownStudyError
from rosenblatt.studies import STUDIES
from rosenblatt.studies.config_fields import study_keys
from rosenblatt.studies.keys import (
    config_class,
    keys_text,
    studies_text,
    study_rows,
)

pytestmark = pytest.mark.core


def _keys(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = main(["keys", *argv])
    out, err = capsys.readouterr()
    return status, out, err


def test_every_study_has_its_keys() -> None:
    """Every study that runs has a configuration declared key by key: its rows are known."""
    for kind in STUDIES:
        rows = study_rows(kind)
        assert rows == [tuple(k) for k in study_keys(kind)]
        assert rows[0] == ("study", "text", "required", f"the study: {kind}")
        assert STUDIES[kind].config.endswith(f":{config_class(kind).__name__}")


@pytest.mark.parametrize("kind", sorted(STUDIES))
@pytest.mark.parametrize("width", [40, 80, 160])
def test_every_key_is_printed(
    kind: str, width: int, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("COLUMNS", str(width))
    status, out, err = _keys(capsys, kind)
    assert (status, err) == (0, "")
    assert out == keys_text(kind, width)
    lines = out.splitlines()
    assert lines[0].startswith(f"study: {kind} ")
    starts = [line.split("  ")[0] for line in lines]
    for key, *_ in study_rows(kind):
        assert key in starts, key  # a key starts its line, whole
    # every word of every meaning is printed (wrapped, not cut)
    words = " ".join(out.split())
    for *_, meaning in study_rows(kind):
        assert all(word in words for word in meaning.split())
    longest_key = max(len(row[0]) for row in study_rows(kind))
    assert max(len(line) for line in lines) <= max(width, longest_key)


def _row_of(text: str, key: str) -> list[str]:
    """The cells of ``key``'s first line in the table of ``text``."""
    line = next(line for line in text.splitlines() if line.split("  ")[0] == key)
    return [cell.strip() for cell in line.split("  ") if cell.strip()]


def test_the_default_of_a_key_is_printed() -> None:
    """Defaults as the file would give them: ``abcd.x`` is "mjj", a blob's rho 0.0."""
    x = next(row for row in study_rows("abcd") if row[0] == "abcd.x")
    assert x[1:3] == ("quantity", '"mjj"')
    assert _row_of(keys_text("abcd", 160), "abcd.x")[:3] == ["abcd.x", "quantity", '"mjj"']
    rho = next(row for row in study_rows("blobs") if row[0] == "background.rho")
    assert rho[2] == "0.0"
    assert _row_of(keys_text("blobs", 160), "background.rho")[2] == "0.0"
    assert _row_of(keys_text("blobs", 160), "background.n_defining")[2] == "required"
    # too narrow for the table: each key a block, its type and default beneath it
    narrow = keys_text("blobs", 40).splitlines()
    below = narrow[narrow.index("background.rho") + 1]
    assert below == "    type: number; default: 0.0"


def test_the_table_has_a_header_and_no_line_too_long() -> None:
    text = keys_text("toys", 100)
    header = text.splitlines()[3]
    assert header.split() == ["key", "type", "default", "meaning"]
    assert max(len(line) for line in text.splitlines()) <= 100


def test_without_a_study_the_studies_are_listed(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("COLUMNS", "70")
    status, out, err = _keys(capsys)
    assert (status, err) == (0, "")
    assert out == studies_text(70)
    assert max(len(line) for line in out.splitlines()) <= 70
    paragraphs = out.split("\n\n")[1:]  # after the heading, one paragraph per study
    assert [p.splitlines()[0] for p in paragraphs] == sorted(STUDIES)
    assert "``" not in out  # plain text, no reStructuredText literals


def test_an_unknown_study_is_refused_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = _keys(capsys, "nope")
    assert status == 2
    assert out == ""
    known = ", ".join(sorted(STUDIES))
    assert err == f"rosenblatt keys: error: unknown study 'nope'; known: {known}\n"
    with pytest.raises(UnknownStudyError, match="unknown study 'nope'"):
        study_rows("nope")
    with pytest.raises(KeyError):
        config_class("nope")
