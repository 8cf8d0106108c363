"""The keys of every study's configuration, as rows and as a plain-text table.

The rows are read from the configuration dataclasses the studies parse their files into
(:func:`rosenblatt.studies.config_fields.study_keys`): one ``(key, type, default, meaning)``
per key, nested sections dotted (``abcd.x``). The configuration reference
(``docs/_ext/study_keys.py``, the ``.. study-keys::`` directive) and ``rosenblatt keys``
show these same rows, so neither can drift from what the parsers accept.

Examples
--------
>>> study_rows("blobs")[0]
('study', 'text', 'required', 'the study: blobs')
>>> print(keys_text("blobs", width=100).splitlines()[0])
study: blobs (read into rosenblatt.studies.blobs.config.BlobsConfig)
"""

from __future__ import annotations

import inspect
import textwrap

from rosenblatt.exceptions import UnknownStudyError
from rosenblatt.studies import STUDIES
from rosenblatt.studies.config_fields import study_keys

__all__ = [
    "KeyRow",
    "config_class",
    "keys_text",
    "studies_text",
    "study_rows",
]

#: ``(key, type, default, meaning)`` of one configuration key
KeyRow = tuple[str, str, str, str]

#: the column headers of :func:`keys_text`
HEADERS: KeyRow = ("key", "type", "default", "meaning")

#: spaces between two columns
_GAP = 2
#: the narrowest meaning column of a table; narrower, each key is a block of its own
_MIN_MEANING = 30
#: the narrowest type and default columns of a table
_MIN_TYPE, _MIN_DEFAULT = 10, 8


def known_studies() -> list[str]:
    """The study kinds whose keys are known (``study:`` values), sorted."""
    return sorted(STUDIES)


def _check(kind: str) -> None:
    if kind not in STUDIES:
        msg = f"unknown study {kind!r}; known: {', '.join(known_studies())}"
        raise UnknownStudyError(msg)


def config_class(kind: str) -> type:
    """The root configuration dataclass the study of ``kind`` parses its file into.

    Raises
    ------
    UnknownStudyError
        For a kind :data:`rosenblatt.studies.STUDIES` does not hold.
    """
    _check(kind)
    return STUDIES[kind].config_class()


def study_rows(kind: str) -> list[KeyRow]:
    """``(key, type, default, meaning)`` of every key of ``study: kind``, ``study`` first.

    Raises
    ------
    UnknownStudyError
        For a kind :data:`rosenblatt.studies.STUDIES` does not hold.
    """
    _check(kind)
    return [(k.key, k.type, k.default, k.doc) for k in study_keys(kind)]


def _summary(kind: str) -> str:
    """What the study is, in words: the first paragraph of its configuration module's docstring.

    Plain text: reStructuredText literals (````study: abcd````) lose their backquotes.
    """
    module = inspect.getmodule(config_class(kind))
    first = inspect.cleandoc(getattr(module, "__doc__", None) or "").split("\n\n")[0]
    return " ".join(first.replace("``", "").split())


def _fill(text: str, width: int, indent: str = "") -> list[str]:
    lines = textwrap.wrap(
        text,
        width=max(width, 1),
        initial_indent=indent,
        subsequent_indent=indent,
        break_on_hyphens=False,
    )
    return lines or [indent.rstrip()]


def _column_widths(rows: list[KeyRow], width: int) -> tuple[int, int, int, int] | None:
    """Widths of the four columns within ``width``; ``None`` if the meaning would be too narrow.

    The key column is as wide as the longest key (a key is never broken); the type and
    default columns are at most as wide as their longest entry, the meaning takes the rest.
    """
    longest = [max(len(row[i]) for row in [HEADERS, *rows]) for i in range(4)]
    rest = width - longest[0] - 3 * _GAP
    type_width = min(longest[1], max(_MIN_TYPE, rest // 4))
    default_width = min(longest[2], max(_MIN_DEFAULT, rest // 5))
    meaning = rest - type_width - default_width
    if meaning < min(_MIN_MEANING, longest[3]):
        return None
    return longest[0], type_width, default_width, min(meaning, longest[3])


def _table(rows: list[KeyRow], widths: tuple[int, int, int, int]) -> list[str]:
    lines = []
    rule: KeyRow = ("-" * widths[0], "-" * widths[1], "-" * widths[2], "-" * widths[3])
    for row in [HEADERS, rule, *rows]:
        cells = [[row[0]], *(_fill(text, w) for text, w in zip(row[1:], widths[1:], strict=True))]
        for i in range(max(len(cell) for cell in cells)):
            parts = [cell[i] if i < len(cell) else "" for cell in cells]
            padded = [part.ljust(w) for part, w in zip(parts, widths, strict=True)]
            lines.append((" " * _GAP).join(padded).rstrip())
    return lines


def _blocks(rows: list[KeyRow], width: int) -> list[str]:
    """One block per key, for a terminal too narrow for the table."""
    lines = []
    for key, type_text, default, doc in rows:
        lines.append(key)
        lines += _fill(f"type: {type_text}; default: {default}", width, "    ")
        lines += _fill(doc, width, "    ")
    return lines


def keys_text(kind: str, width: int = 80) -> str:
    """The keys of ``study: kind`` as a plain-text table (key, type, default, meaning).

    Lines are at most ``width`` characters, except a key longer than the whole width;
    a key is never broken. Where the meaning column would be narrower than 30
    characters, each key is written as a block: the key, then its type, default and
    meaning indented below it.

    Raises
    ------
    UnknownStudyError
        For a kind :data:`rosenblatt.studies.STUDIES` does not hold.
    """
    rows = study_rows(kind)
    cls = config_class(kind)
    lines = _fill(f"study: {kind} (read into {cls.__module__}.{cls.__qualname__})", width)
    lines += _fill(_summary(kind), width)
    lines.append("")
    widths = _column_widths(rows, width)
    lines += _table(rows, widths) if widths is not None else _blocks(rows, width)
    return "\n".join(lines) + "\n"


def studies_text(width: int = 80) -> str:
    """The studies whose keys :func:`keys_text` shows, one paragraph each."""
    intro = "studies (a configuration's 'study:' key); rosenblatt keys STUDY lists its keys:"
    lines = _fill(intro, width)
    for kind in known_studies():
        lines.append("")
        lines.append(kind)
        lines += _fill(_summary(kind), width, "    ")
    return "\n".join(lines) + "\n"
