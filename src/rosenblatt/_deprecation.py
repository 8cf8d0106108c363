"""Modules that moved: the old import path keeps working for one release, with a warning."""

from __future__ import annotations

import importlib
import sys
import types
import warnings
from collections.abc import Callable
from typing import Any

__all__ = ["alias_moved_module", "moved_module"]


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


class _MovedModule(types.ModuleType):
    """Stands at a module's old name: each attribute read warns and comes from the new module."""

    def __init__(self, old: str, new: str) -> None:
        super().__init__(old, f"Deprecated: moved to {new}.")
        self._new = new

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        warnings.warn(
            f"{self.__name__} is deprecated and will be removed in the next release; "
            f"import {self._new} instead",
            DeprecationWarning,
            stacklevel=2,
        )
        return getattr(importlib.import_module(self._new), name)

    def __dir__(self) -> list[str]:
        return sorted(set(dir(importlib.import_module(self._new))))


def alias_moved_module(old: str, new: str) -> None:
    """Make ``import old`` give ``new``'s names, each read warning that the module moved.

    For a module whose old file name cannot stay (one that test collectors take
    for a test file, say): its package calls this instead of keeping a file at
    the old path. Nothing is warned until a name is read through the old path.

    Parameters
    ----------
    old : str
        The old module's full name.
    new : str
        The full name of the module that now holds its code.
    """
    sys.modules.setdefault(old, _MovedModule(old, new))
