"""``rosenblatt keys [STUDY]``: the configuration keys of a study, with types, defaults and meaning."""

from __future__ import annotations

import argparse
import shutil

from rosenblatt.commands._errors import print_error

__all__ = ["add_parser", "main"]

DESCRIPTION = """\
Print the keys a configuration of STUDY (its 'study:' value) accepts: one row per key,
with its type, its default ('required' when it must be given) and what it sets, wrapped
to the terminal's width. Keys of a section are dotted (abcd.x is x under abcd:). The
table is read from the same configuration classes as the studies' parsers and the
configuration reference of the documentation. Without STUDY, list the studies.
"""


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register the ``keys`` sub-command."""
    parser = subparsers.add_parser(
        "keys",
        help="print the configuration keys of a study (type, default, meaning)",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "study",
        nargs="?",
        default=None,
        metavar="STUDY",
        help="a study kind (abcd, blobs, ...); without it, the studies are listed",
    )
    parser.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    """Print the keys of ``args.study``, or the studies; an unknown study in one line, status 2."""
    from rosenblatt.exceptions import UnknownStudyError
    from rosenblatt.studies.keys import keys_text, studies_text

    width = shutil.get_terminal_size().columns
    try:
        text = studies_text(width) if args.study is None else keys_text(args.study, width)
    except UnknownStudyError as err:
        print_error("rosenblatt keys", err)
        return 2
    print(text, end="")
    return 0
