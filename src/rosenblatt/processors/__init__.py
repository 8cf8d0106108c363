"""coffea processors of the rosenblatt studies."""

from __future__ import annotations

__all__: list[str] = []
