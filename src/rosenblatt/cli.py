"""The ``rosenblatt`` command line.

Each sub-command lives in its own module of :mod:`rosenblatt.commands`, which
provides ``add_parser(subparsers)`` and ``main(args) -> int``.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from rosenblatt._version import __version__

__all__ = ["COMMANDS", "build_parser", "main"]

#: sub-command name -> module in :mod:`rosenblatt.commands`
COMMANDS = {
    "run": "run",
    "generate": "generate",
    "features": "features",
    "train": "train",
    "export": "export",
    "fit": "fit",
    "apply": "apply",
}


def build_parser() -> argparse.ArgumentParser:
    """Return the argument parser with every available sub-command."""
    parser = argparse.ArgumentParser(
        prog="rosenblatt",
        description="Decorrelate a classifier score from a protected observable "
        "with the numerical Rosenblatt transform.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module_name in COMMANDS.values():
        try:
            module = importlib.import_module(f"rosenblatt.commands.{module_name}")
        except ModuleNotFoundError as err:
            if err.name != f"rosenblatt.commands.{module_name}":
                raise
            continue
        module.add_parser(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``rosenblatt`` command."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        args = parser.parse_args(["run", *(argv or [])])
    return int(args.func(args))


if __name__ == "__main__":
    sys.exit(main())
