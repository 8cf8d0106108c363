"""The exceptions and warnings that rosenblatt raises.

Every exception class of the package derives from :class:`RosenblattError`, so
that ``except RosenblattError`` catches whatever the package raises on
purpose. Each also keeps the builtin base it had before: handlers that catch
``ValueError``, ``OSError`` or ``ModuleNotFoundError`` keep working.

.. code-block:: text

    Exception
    └── RosenblattError
        ├── ConfigError                (ValueError)
        ├── CorruptCacheError          (ValueError)
        ├── DiskFullError              (OSError)
        ├── EventFileError             (ValueError)
        ├── FolderLockedError          (RuntimeError)
        ├── InvariantError             (AssertionError)
        ├── MissingExtraError          (ModuleNotFoundError)
        ├── NegativeWeightError        (ValueError)
        ├── NotCovered                 (LookupError)
        ├── NotFittedError             (ValueError, AttributeError)
        ├── PreflightError             (ValueError)
        │   └── UnreadableFileError
        ├── QuantityError              (ValueError)
        ├── SchemaError                (ValueError)
        ├── TreeFileError              (ValueError)
        └── UnknownStudyError          (KeyError)

    Warning
    └── RuntimeWarning
        └── NaNInputWarning

:class:`~rosenblatt.exceptions.InvariantError` and
:class:`~rosenblatt.exceptions.NotCovered` do not leave the package:
:func:`rosenblatt.testing.check_transform` turns the first into an
:class:`AssertionError` naming the invariant, and the out-of-core fit answers
the second with one more pass over the events.

Some classes are also importable from the module that raises them (for example
``rosenblatt.transforms.NotFittedError`` or ``rosenblatt.io.EventFileError``).
This module imports nothing of the package, so that every layer may use it.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

__all__ = [
    "ConfigError",
    "CorruptCacheError",
    "DiskFullError",
    "EventFileError",
    "FolderLockedError",
    "MissingExtraError",
    "NaNInputWarning",
    "NegativeWeightError",
    "NotFittedError",
    "PreflightError",
    "QuantityError",
    "RosenblattError",
    "SchemaError",
    "TreeFileError",
    "UnknownStudyError",
    "UnreadableFileError",
]


class RosenblattError(Exception):
    """The base of every exception class of rosenblatt.

    Each subclass also derives from the builtin exception it is raised in place
    of (:class:`ValueError` for a bad value, :class:`OSError` for a full disk).
    """


class NotFittedError(RosenblattError, ValueError, AttributeError):
    """Raised when a transform is used before :meth:`~rosenblatt.transforms.ConditionalCDFTransform.fit`.

    A :class:`ValueError` and an :class:`AttributeError`, as
    ``sklearn.exceptions.NotFittedError``: ``hasattr`` on a learned property
    of an unfitted transform is ``False``.
    """


class NaNInputWarning(RuntimeWarning):
    """Issued by ``transform(..., nan_policy="propagate")``: how many events came out NaN."""


class SchemaError(RosenblattError, ValueError):
    """A saved transform is malformed, of an unknown version, or inconsistent."""


class NegativeWeightError(RosenblattError, ValueError):
    """Negative event weights leave a fit undefined where its remedy cannot help.

    ``x_range`` is the interval of the protected observable where the fit
    failed (``None`` when it is not confined to one), so that a caller can
    name the events there.
    """

    def __init__(self, message: str, x_range: tuple[float, float] | None = None) -> None:
        super().__init__(message)
        self.x_range = x_range


class MissingExtraError(RosenblattError, ModuleNotFoundError):
    """An optional module is missing; the message names the extra that provides it.

    A :class:`ModuleNotFoundError` (hence an :class:`ImportError`), so that code
    catching those keeps working; its ``name`` is the missing module and
    its ``extras`` the extras to install.
    """

    def __init__(self, message: str, *, name: str | None, extras: Iterable[str]) -> None:
        super().__init__(message, name=name)
        self.extras = tuple(extras)


class ConfigError(RosenblattError, ValueError):
    """A configuration key is unknown, missing or of the wrong type."""


class EventFileError(RosenblattError, ValueError):
    """An event file that cannot be used: damaged, empty, or without the expected content."""


class TreeFileError(RosenblattError, ValueError):
    """A file, tree or branch that a command needs is not there, or a value is not finite."""


class PreflightError(RosenblattError, ValueError):
    """A file, tree, branch or role the configuration needs is not there.

    The message is ``<configuration>: <key>: <what is wrong>``; ``reason`` is
    what is wrong alone.
    """

    def __init__(self, message: str, reason: str | None = None) -> None:
        super().__init__(message)
        self.reason = message if reason is None else reason


class UnreadableFileError(PreflightError):
    """A file exists but cannot be read (``skip_bad_files`` leaves it out)."""


class QuantityError(RosenblattError, ValueError):
    """A quantity is malformed, or the events lack what it reads."""


class CorruptCacheError(RosenblattError, ValueError):
    """A cached file was truncated or altered after it was written, and reuse is refused."""


class FolderLockedError(RosenblattError, RuntimeError):
    """Another process holds the lock of a folder this one would write (and waiting was refused)."""


class DiskFullError(RosenblattError, OSError):
    """Writing a file ran out of space on its device.

    An :class:`OSError` with ``errno.ENOSPC``. Its message is one line naming
    the file, the bytes it needed and the bytes free on that device.

    Parameters
    ----------
    path : path-like
        The file that was being written (its final name).
    needed : int
        Bytes the file needed: its whole size where it was known, else the
        bytes written when the space ran out (then ``exact`` is false).
    exact : bool, default True
        Whether ``needed`` is the whole size of the file.
    free : int or None, default None
        Bytes free to this user on the device of ``path``; ``None`` when they
        could not be read (the message then leaves them out).
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        needed: int,
        *,
        exact: bool = True,
        free: int | None = None,
    ) -> None:
        self.path = Path(path)
        self.needed = int(needed)
        self.exact = bool(exact)
        self.free = None if free is None else int(free)
        amount = f"{self.needed} bytes" if exact else f"more than {self.needed} bytes"
        there = "" if self.free is None else f", {self.free} bytes free there"
        message = (
            f"no space left on the device writing {self.path}: it needed {amount}{there}; "
            "free some space and run the same command again"
        )
        super().__init__(errno.ENOSPC, message, str(self.path))

    def __str__(self) -> str:
        return str(self.strerror)


class UnknownStudyError(RosenblattError, KeyError):
    """A study kind that no configuration declares; its message names the known ones."""

    def __str__(self) -> str:
        return str(self.args[0])


class NotCovered(RosenblattError, LookupError):
    """The windows do not hold an answer: another pass must fetch ``intervals`` of ``C``.

    Raised and caught within the out-of-core fit
    (:mod:`rosenblatt.outofcore._order`); ``intervals`` is an array of shape
    ``(n, 2)``, the intervals of the cumulative weight still to fetch.
    """

    def __init__(self, intervals: NDArray[np.float64]) -> None:
        super().__init__(f"{len(intervals)} interval(s) of the cumulative weight are not covered")
        self.intervals = intervals


class InvariantError(RosenblattError, AssertionError):
    """An invariant of :func:`rosenblatt.testing.check_transform` is broken: the message says what was found.

    The check turns it into an :class:`AssertionError` that names the invariant.
    """
