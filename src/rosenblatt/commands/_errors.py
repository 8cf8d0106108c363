"""The one line that a command prints for a mistake in its input."""

from __future__ import annotations

import sys

__all__ = ["one_line", "print_error"]


def one_line(message: object) -> str:
    """``message`` as one line: line breaks and other unprintable characters escaped (``\\r``).

    A message may quote what the user wrote (a file name, a key), which may hold
    any character; escaped, it still names it exactly.
    """
    text = str(message)
    if text.isprintable():
        return text
    return "".join(
        c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text
    )


def print_error(command: str, message: object) -> None:
    """Print ``<command>: error: <message>`` on standard error, in one line."""
    print(f"{command}: error: {one_line(message)}", file=sys.stderr)
