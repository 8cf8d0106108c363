"""``rosenblatt run [CONFIG]``: run a study end to end and write its report."""

from __future__ import annotations

import argparse
import logging
import sys
import time

__all__ = ["add_parser", "main"]


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """Register the ``run`` sub-command."""
    from rosenblatt.config import DEFAULT_CONFIG

    parser = subparsers.add_parser(
        "run",
        help=f"run a study (default: {DEFAULT_CONFIG}) and write results/<name>/",
        description="Run a study from a YAML configuration and write its report, "
        "summary.json and figures to results/<name>/.",
    )
    parser.add_argument(
        "config",
        nargs="?",
        default=DEFAULT_CONFIG,
        help=f"configuration file or name in configs/ (default: {DEFAULT_CONFIG})",
    )
    parser.add_argument("--output", help="results folder (default: results/<name>)")
    parser.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    """Run the configured study."""
    from rosenblatt.config import load_config
    from rosenblatt.studies import run_study

    logging.basicConfig(level=logging.INFO, format="%(message)s")
    start = time.perf_counter()
    try:
        config = load_config(args.config)
        folder = run_study(config, args.output)
    except (OSError, ValueError, KeyError) as err:
        reason = f"missing configuration key {err}" if isinstance(err, KeyError) else str(err)
        print(f"rosenblatt run: error: {reason}", file=sys.stderr)
        return 2
    elapsed = time.perf_counter() - start
    logging.getLogger("rosenblatt").info(
        "study %r done in %.1f s: see %s", config["name"], elapsed, folder / "report.md"
    )
    return 0
