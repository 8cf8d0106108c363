"""``rosenblatt run [CONFIG]``: run a study end to end and write its report."""

from __future__ import annotations

import argparse
import logging
import re
import sys
import time
from pathlib import Path

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


def _peek_study(path: Path) -> dict[str, str]:
    """The ``study:`` of a configuration, read without yaml (which the study extra installs)."""
    text = path.read_text(encoding="utf-8", errors="replace")
    found = re.search(r"^study:[ \t]*[\"']?([\w-]+)", text, flags=re.MULTILINE)
    return {"study": found.group(1)} if found else {}


def main(args: argparse.Namespace) -> int:
    """Run the configured study."""
    from rosenblatt._extras import importable, require
    from rosenblatt.config import find_config, load_config
    from rosenblatt.studies import run_study, study_extras

    logging.basicConfig(level=logging.INFO, format="%(message)s")
    start = time.perf_counter()
    what = f"rosenblatt run {args.config}"
    try:
        # every extra the study needs is checked before anything is written
        path = find_config(args.config)
        if not importable("yaml"):
            require(what, study_extras(_peek_study(path)))
        config = load_config(path)
        require(what, study_extras(config))
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
