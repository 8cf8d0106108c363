"""The exceptions and warnings that rosenblatt raises.

Each is also importable from the module that raises it (for example
``rosenblatt.transforms.NotFittedError`` or ``rosenblatt.io.EventFileError``).
This module imports nothing of the package, so that every layer may use it.
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = [
    "ConfigError",
    "EventFileError",
    "MissingExtraError",
    "NaNInputWarning",
    "NegativeWeightError",
    "NotFittedError",
    "PreflightError",
    "SchemaError",
    "TreeFileError",
    "UnreadableFileError",
]


class NotFittedError(ValueError, AttributeError):
    """Raised when a transform is used before :meth:`~rosenblatt.transforms.ConditionalCDFTransform.fit`.

    A :class:`ValueError` and an :class:`AttributeError`, as
    ``sklearn.exceptions.NotFittedError``: ``hasattr`` on a learned property
    of an unfitted transform is ``False``.
    """


class NaNInputWarning(RuntimeWarning):
    """Issued by ``transform(..., nan_policy="propagate")``: how many events came out NaN."""


class SchemaError(ValueError):
    """A saved transform is malformed, of an unknown version, or inconsistent."""


class NegativeWeightError(ValueError):
    """Negative event weights leave a fit undefined where its remedy cannot help.

    ``x_range`` is the interval of the protected observable where the fit
    failed (``None`` when it is not confined to one), so that a caller can
    name the events there.
    """

    def __init__(self, message: str, x_range: tuple[float, float] | None = None) -> None:
        super().__init__(message)
        self.x_range = x_range


class MissingExtraError(ModuleNotFoundError):
    """An optional module is missing; the message names the extra that provides it.

    A :class:`ModuleNotFoundError` (hence an :class:`ImportError`), so that code
    catching those keeps working; its ``name`` is the missing module and
    its ``extras`` the extras to install.
    """

    def __init__(self, message: str, *, name: str | None, extras: Iterable[str]) -> None:
        super().__init__(message, name=name)
        self.extras = tuple(extras)


class ConfigError(ValueError):
    """A configuration key is unknown, missing or of the wrong type."""


class EventFileError(ValueError):
    """An event file that cannot be used: damaged, empty, or without the expected content."""


class TreeFileError(ValueError):
    """A file, tree or branch that a command needs is not there, or a value is not finite."""


class PreflightError(ValueError):
    """A file, tree, branch or role the configuration needs is not there.

    The message is ``<configuration>: <key>: <what is wrong>``; ``reason`` is
    what is wrong alone.
    """

    def __init__(self, message: str, reason: str | None = None) -> None:
        super().__init__(message)
        self.reason = message if reason is None else reason


class UnreadableFileError(PreflightError):
    """A file exists but cannot be read (``skip_bad_files`` leaves it out)."""
