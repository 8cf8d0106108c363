"""Sub-commands of the ``rosenblatt`` command line, one module each."""

from __future__ import annotations

__all__: list[str] = []
