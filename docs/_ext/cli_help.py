"""The command line's reference, rendered from its argument parsers.

``.. command-help::`` writes ``rosenblatt --help`` and then one section per sub-command
with its ``--help``, exactly as argparse formats them (at 90 columns), so the page says
what the installed command says.
"""

from __future__ import annotations

import argparse
import os
from typing import Any

from docutils import nodes
from docutils.statemachine import StringList
from sphinx.application import Sphinx
from sphinx.util.docutils import SphinxDirective
from sphinx.util.nodes import nested_parse_with_titles

#: the width argparse formats the help texts to
COLUMNS = 90


def _help_texts() -> list[tuple[str, str]]:
    """``(command, help text)`` of ``rosenblatt`` and of each sub-command, in order."""
    from rosenblatt.cli import build_parser

    previous = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = str(COLUMNS)
    try:
        parser = build_parser()
        texts = [("rosenblatt", parser.format_help())]
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                texts += [
                    (f"rosenblatt {name}", sub.format_help())
                    for name, sub in action.choices.items()
                ]
    finally:
        if previous is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = previous
    return texts


class CommandHelp(SphinxDirective):
    """``.. command-help::``: every command's ``--help``, one section each."""

    def run(self) -> list[nodes.Node]:
        lines: list[str] = []
        for command, text in _help_texts():
            title = f"``{command}``"
            lines += [title, "-" * len(title), "", ".. code-block:: text", ""]
            lines += [f"   {line}" if line else "" for line in text.rstrip().splitlines()]
            lines.append("")
        container = nodes.section()
        container.document = self.state.document
        nested_parse_with_titles(self.state, StringList(lines, source="rosenblatt.cli"), container)
        return list(container.children)


def setup(app: Sphinx) -> dict[str, Any]:
    """Register the directive."""
    app.add_directive("command-help", CommandHelp)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
