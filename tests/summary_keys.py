"""The key sets of the studies' summary.json, a public format: recorded once, compared after.

A summary's key set is every path from its root to a value: the keys of each mapping,
``[]`` for the elements of a list (all elements together). ``summary_keys.json`` holds
the sets of the studies' summaries as the tests' configurations write them, recorded
before the studies' code was reorganised.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

#: where the recorded key sets are kept
RECORDED = Path(__file__).with_name("summary_keys.json")

Path_ = tuple[str, ...]


def key_paths(value: Any, prefix: Path_ = ()) -> set[Path_]:
    """Every path of keys (``"[]"`` for a list's elements) from ``value``'s root, inner ones too."""
    found = {prefix} if prefix else set()
    if isinstance(value, dict):
        for key, item in value.items():
            found |= key_paths(item, (*prefix, str(key)))
    elif isinstance(value, list):
        found.add((*prefix, "[]"))
        for item in value:
            found |= key_paths(item, (*prefix, "[]"))
    return found


def recorded(name: str) -> set[Path_]:
    """The recorded key set of the summary ``name``."""
    return {tuple(path) for path in json.loads(RECORDED.read_text(encoding="utf-8"))[name]}


def assert_same_keys(name: str, summary: dict[str, Any]) -> None:
    """``summary`` has exactly the recorded keys of ``name``; the message names the differences."""
    got, expected = key_paths(summary), recorded(name)
    missing = sorted("/".join(p) for p in expected - got)
    new = sorted("/".join(p) for p in got - expected)
    assert (missing, new) == ([], []), f"{name}: missing {missing[:20]}, new {new[:20]}"
