"""The ``--if-locked`` option of the commands that write a cache, results folder or file."""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterable
from contextlib import AbstractContextManager

__all__ = ["LOCK_CHOICES", "add_lock_argument", "holding_locks"]

#: what a command does when another process writes the same folder
LOCK_CHOICES = ("wait", "refuse")


def add_lock_argument(parser: argparse.ArgumentParser) -> None:
    """Add ``--if-locked {wait,refuse}`` to a command's parser."""
    parser.add_argument(
        "--if-locked",
        choices=LOCK_CHOICES,
        default="wait",
        help="when another rosenblatt process is writing the same folder or file (its lock "
        ".NAME.lock beside it): wait for it, saying so (default), or refuse at once with "
        "exit status 75",
    )


def holding_locks(
    args: argparse.Namespace, paths: Iterable[str | os.PathLike[str]]
) -> AbstractContextManager[None]:
    """The locks of ``paths`` (:func:`rosenblatt._lock.folder_locks`) as ``--if-locked`` says."""
    from rosenblatt._lock import folder_locks

    return folder_locks(paths, wait=getattr(args, "if_locked", "wait") != "refuse")
