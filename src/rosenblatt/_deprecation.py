"""Modules that moved: the old import path keeps working for one release, with a warning."""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Callable
from typing import Any

__all__ = ["moved_module"]


def moved_module(
    old: str, new: str, public: str | None = None
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """Warn that module ``old`` moved to ``new``; return its ``__getattr__`` and ``__dir__``.

    Called at the top level of the module left at the old path, as
    ``__getattr__, __dir__ = moved_module(__name__, "rosenblatt.new.place")``:
    importing it issues a :class:`DeprecationWarning` at the importer's line,
    and every name of ``new`` stays reachable through it.

    Parameters
    ----------
    old : str
        The old module's name.
    new : str
        The module that now holds its code.
    public : str, optional
        The module users should import instead (default ``new``).
    """
    warnings.warn(
        f"{old} is deprecated and will be removed in the next release; "
        f"import {public or new} instead",
        DeprecationWarning,
        stacklevel=3,
    )
    target = importlib.import_module(new)

    def __getattr__(name: str) -> Any:
        try:
            return getattr(target, name)
        except AttributeError:
            msg = f"module {old!r} has no attribute {name!r}"
            raise AttributeError(msg) from None

    def __dir__() -> list[str]:
        return sorted(set(dir(target)))

    return __getattr__, __dir__
