"""``rosenblatt export``: a saved transform as a correctionlib file for C++ and Python frameworks."""

from __future__ import annotations

import argparse

from rosenblatt.commands._errors import print_error

__all__ = ["add_parser", "main"]

DESCRIPTION = """\
Write a transform saved with rosenblatt (TRANSFORM.json) as a correctionlib (schema v2)
JSON file with one correction of the inputs x, y and the output gamma. A transform whose
gamma is a grid of columns (IRGI, GridKDE) is written exactly; one whose gamma is smooth in x
(KDE) is tabulated until the largest difference measured on a dense set of points is below
--tolerance. The measured difference is written in the correction's description.
correctionlib evaluates the file from Python and C++ (`correction config` gives the flags);
`rosenblatt.load` reads it back.

A transform fitted on k protected observables gives a correction of the inputs x1, ..., xk
and y: a GridKDE (its tensor grid) and an IRGI (its nested cells) exactly, unless --x-nodes
or --y-nodes is given; KDE, or any transform given those options, tabulated on a regular
grid of --x-nodes per axis and --y-nodes values of y, with the measured difference in the
description. These files are not read back.
"""


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``export`` sub-command to ``subparsers``."""
    from rosenblatt.correctionlib._layout import DEFAULT_NAME

    parser = subparsers.add_parser(
        "export",
        help="write a saved transform as a correctionlib file",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("transform", metavar="TRANSFORM.json", help="transform saved by rosenblatt")
    parser.add_argument(
        "--correctionlib",
        required=True,
        metavar="OUT.json",
        help="correctionlib JSON file to write",
    )
    parser.add_argument(
        "--name",
        default=DEFAULT_NAME,
        help="name of the correction in the file (default: %(default)s)",
    )
    parser.add_argument(
        "--tolerance",
        type=float,
        default=1e-3,
        help="transforms tabulated rather than written exactly (KDE): largest difference allowed "
        "between the table and the transform "
        "(default: %(default)g); smaller values make larger files",
    )
    parser.add_argument(
        "--x-nodes",
        type=int,
        default=None,
        help="several observables: tabulate on this many nodes per axis (default: 25 for two "
        "observables, 11 for three; a GridKDE or an IRGI is written exactly unless given)",
    )
    parser.add_argument(
        "--y-nodes",
        type=int,
        default=None,
        help="several observables: tabulate on this many y values per node (default: 129 for "
        "two observables, 65 for three)",
    )
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    parser.set_defaults(func=main)


def _grid_options(args: argparse.Namespace) -> dict[str, int]:
    """The tabulation grid of a transform of several observables, where given."""
    given = {"x_nodes": args.x_nodes, "y_nodes": args.y_nodes}
    return {key: value for key, value in given.items() if value is not None}


def main(args: argparse.Namespace) -> int:
    """Run ``rosenblatt export``; return the exit status."""
    from pathlib import Path

    from rosenblatt.correctionlib import write_correctionlib
    from rosenblatt.serialization import load

    try:
        transform = load(args.transform)
        metadata = write_correctionlib(
            transform,
            args.correctionlib,
            args.name,
            tolerance=args.tolerance,
            progress=not args.quiet,
            **_grid_options(args),
        )
    except (OSError, ValueError, TypeError) as err:
        print_error("rosenblatt export", err)
        return 2
    size = Path(args.correctionlib).stat().st_size
    print(
        f"{args.correctionlib}: correction {args.name!r} of the {metadata['kind']} in "
        f"{args.transform}, {metadata['n_bins']} bins, {size / 1e6:.3g} MB; measured max "
        f"|gamma - transform| = {metadata['max_abs_error']:.3g} on "
        f"{metadata['n_check_points']} points"
    )
    return 0
