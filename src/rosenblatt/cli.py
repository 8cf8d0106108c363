"""The ``rosenblatt`` command line.

Each sub-command lives in its own module of :mod:`rosenblatt.commands`, which
provides ``add_parser(subparsers)`` and ``main(args) -> int``. Building the
parser imports no optional dependency: ``rosenblatt --help`` works with the core
alone, and a command whose extra is missing says which in one line
(:mod:`rosenblatt._extras`), exits with status 1 and writes nothing.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import signal
import sys
from collections.abc import Sequence

from rosenblatt._atomic import is_disk_full
from rosenblatt._extras import MissingExtraError, extra_for, needs_message, require
from rosenblatt._interrupt import (
    INTERRUPTED_STATUS,
    interrupted_message,
    interrupted_status,
    stop_on_signals,
    stop_signal,
    stop_workers,
)
from rosenblatt._version import __version__
from rosenblatt.commands._errors import print_error
from rosenblatt.exceptions import DiskFullError, FolderLockedError

__all__ = [
    "COMMANDS",
    "COMMAND_EXTRAS",
    "DISK_FULL_STATUS",
    "INTERRUPTED_STATUS",
    "LOCKED_STATUS",
    "build_parser",
    "main",
]

#: sub-command name -> module in :mod:`rosenblatt.commands`
COMMANDS = {
    "run": "run",
    "generate": "generate",
    "features": "features",
    "train": "train",
    "export": "export",
    "fit": "fit",
    "apply": "apply",
    "keys": "keys",
}

#: sub-command -> the extras it needs before it starts (``run``: its study's, see
#: :func:`rosenblatt.studies.study_extras`; ``export`` needs none)
COMMAND_EXTRAS: dict[str, tuple[str, ...]] = {
    "generate": ("hep",),
    "features": ("hep",),
    "train": ("ml",),
    "fit": ("io",),
    "apply": ("io",),
}

#: exit status of a command whose extra is missing
MISSING_EXTRA_STATUS = 1

#: exit status of a command whose device ran out of space (``EX_IOERR`` of sysexits.h)
DISK_FULL_STATUS = 74

#: exit status of a command refused because another process writes its folder
#: (``--if-locked refuse``; ``EX_TEMPFAIL`` of sysexits.h: try again later)
LOCKED_STATUS = 75


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


def _invocation(args: argparse.Namespace) -> str:
    """``rosenblatt <command>``, with the configuration for ``run``."""
    config = getattr(args, "config", None) if args.command == "run" else None
    return " ".join(str(part) for part in ("rosenblatt", args.command, config) if part)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``rosenblatt`` command."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        args = parser.parse_args(["run", *(argv or [])])
    # SIGTERM, SIGHUP and SIGXCPU (a batch system's, a closed terminal's) stop it as Ctrl-C does
    with stop_on_signals():
        try:
            return _command(args)
        except BaseException as err:
            # once a stop signal came, whatever unwinds is that signal's doing
            if not isinstance(err, KeyboardInterrupt) and stop_signal() is None:
                raise
            return _interrupted(args, err)


def _interrupted(args: argparse.Namespace, error: BaseException) -> int:
    """Ctrl-C or a stop signal: end any child left, say so in one line; 128 + the signal."""
    # the pools were stopped as the interrupt unwound (a second Ctrl-C meanwhile changes nothing)
    previous = None
    with contextlib.suppress(ValueError):
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        stop_workers()
        print(interrupted_message(_invocation(args), error), file=sys.stderr)
    finally:
        if previous is not None:
            signal.signal(signal.SIGINT, previous)
    return interrupted_status(error)


def _command(args: argparse.Namespace) -> int:
    """Run the parsed command; a known failure said in one line with its status."""
    try:
        require(_invocation(args), COMMAND_EXTRAS.get(args.command, ()))
        return int(args.func(args))
    except FolderLockedError as err:
        print_error(_invocation(args), err)
        return LOCKED_STATUS
    except OSError as err:
        if not is_disk_full(err):
            raise
        print_error(_invocation(args), _disk_full_line(err))
        return DISK_FULL_STATUS
    except ModuleNotFoundError as err:
        # a missing optional module, wherever it was imported: one line naming its extra
        extra = extra_for(err.name)
        extras = err.extras if isinstance(err, MissingExtraError) else [extra] if extra else []
        if not extras:
            raise
        print(needs_message(_invocation(args), extras), file=sys.stderr)
        return MISSING_EXTRA_STATUS


def _disk_full_line(error: OSError) -> str:
    """One line for a full device: a :class:`~rosenblatt.exceptions.DiskFullError` says it all."""
    if isinstance(error, DiskFullError):
        return str(error)
    where = f" writing {error.filename}" if error.filename else ""
    reason = " ".join(str(error.strerror or error).split())
    return (
        f"no space left on the device{where} ({reason}); "
        "free some space and run the same command again"
    )


if __name__ == "__main__":
    sys.exit(main())
