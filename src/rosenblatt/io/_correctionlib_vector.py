"""Deprecated: moved to :mod:`rosenblatt.correctionlib` (this path is removed in the next release)."""

from __future__ import annotations

from rosenblatt._deprecation import moved_module

__getattr__, __dir__ = moved_module(
    __name__, "rosenblatt.correctionlib._vector", "rosenblatt.correctionlib"
)
