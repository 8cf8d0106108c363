"""The keys of every study's configuration, read from its configuration dataclasses.

``.. study-keys:: KIND`` renders the keys of the configuration of ``study: KIND`` as a
table: the rows of :func:`rosenblatt.studies.keys.study_rows`, one per key its parser
reads, nested sections dotted (``data.folder``), with the key's type, default and
description as declared on the dataclass field. ``rosenblatt keys KIND`` prints the same
rows. The tables cannot drift from what the parsers accept: they are built from the same
classes at every build.
"""

from __future__ import annotations

import inspect
from typing import Any

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.util.docutils import SphinxDirective

from rosenblatt.studies.keys import config_class, study_rows

__all__ = ["config_class", "keys_table", "setup", "study_rows"]


def keys_table(kind: str) -> str:
    """The reStructuredText table of the keys of ``study: kind``."""
    lines = [
        ".. list-table::",
        "   :header-rows: 1",
        "   :widths: 22 22 16 40",
        "",
        "   * - key",
        "     - type",
        "     - default",
        "     - meaning",
    ]
    for key, type_text, default, doc in study_rows(kind):
        lines += [
            f"   * - ``{key}``",
            f"     - {type_text}",
            f"     - {default}",
            f"     - {doc}",
        ]
    return "\n".join(lines) + "\n"


class StudyKeys(SphinxDirective):
    """``.. study-keys:: KIND``: the table of a study's configuration keys."""

    required_arguments = 1

    def run(self) -> list[nodes.Node]:
        kind = self.arguments[0]
        cls = config_class(kind)
        intro = (
            f"``study: {kind}`` is read into ``{cls.__module__}.{cls.__qualname__}``; "
            f"its docstring: {(inspect.getdoc(cls) or '').splitlines()[0]}\n\n"
        )
        return self.parse_text_to_nodes(intro + keys_table(kind))


def setup(app: Sphinx) -> dict[str, Any]:
    """Register the directive."""
    app.add_directive("study-keys", StudyKeys)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
