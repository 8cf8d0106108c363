"""Modules that moved keep their old import path for one release, with a DeprecationWarning."""

from __future__ import annotations

import importlib
import sys
import warnings
from typing import Any

import pytest

#: old path -> (module that now holds the code, one name that must stay reachable)
MOVED = {
    "rosenblatt.io.correctionlib": ("rosenblatt.correctionlib", "write_correctionlib"),
    "rosenblatt.io.correctionlib_export": ("rosenblatt.correctionlib._export", "to_correctionlib"),
    "rosenblatt.io.correctionlib_import": (
        "rosenblatt.correctionlib._import",
        "read_correctionlib",
    ),
    "rosenblatt.io._correctionlib_layout": ("rosenblatt.correctionlib._layout", "DEFAULT_NAME"),
    "rosenblatt.io._correctionlib_numbers": ("rosenblatt.correctionlib._numbers", "ExactNumbers"),
    "rosenblatt.io._correctionlib_staircase": (
        "rosenblatt.correctionlib._staircase",
        "staircase_columns",
    ),
    "rosenblatt.io._correctionlib_tables": ("rosenblatt.correctionlib._tables", "export_transform"),
    "rosenblatt.io._correctionlib_ensemble": ("rosenblatt.correctionlib._ensemble", "Ensemble"),
    "rosenblatt.io._correctionlib_vector": ("rosenblatt.correctionlib._vector", "tabulate"),
    "rosenblatt.io._correctionlib_nested": ("rosenblatt.correctionlib._nested", "NestedTable"),
}


def _fresh_import(name: str) -> Any:
    """Import ``name`` anew (its module-level warning is issued again)."""
    sys.modules.pop(name, None)
    parent, _, child = name.rpartition(".")
    if hasattr(sys.modules.get(parent), child):
        delattr(sys.modules[parent], child)
    return importlib.import_module(name)


@pytest.mark.parametrize("old", sorted(MOVED))
def test_old_path_warns_and_forwards(old: str) -> None:
    new, name = MOVED[old]
    with pytest.warns(DeprecationWarning, match=rf"^{old} is deprecated .* import rosenblatt\."):
        module = _fresh_import(old)
    target = importlib.import_module(new)
    assert getattr(module, name) is getattr(target, name)
    assert name in dir(module)
    with pytest.raises(AttributeError, match=rf"module '{old}' has no attribute 'no_such_name'"):
        module.no_such_name  # noqa: B018


def test_from_import_of_an_old_path_gives_the_new_function() -> None:
    sys.modules.pop("rosenblatt.io.correctionlib", None)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        from rosenblatt.io.correctionlib import write_correctionlib
    import rosenblatt.correctionlib

    assert write_correctionlib is rosenblatt.correctionlib.write_correctionlib
    assert [w.category for w in caught] == [DeprecationWarning]
    # the warning points at the line that imported the old path
    assert caught[0].filename == __file__


def test_the_new_paths_import_without_warnings() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for new, _ in MOVED.values():
            sys.modules.pop(new, None)
        for new, name in MOVED.values():
            assert hasattr(importlib.import_module(new), name)


def test_the_closure_test_module_is_reached_by_its_old_name() -> None:
    import rosenblatt.abcd
    from rosenblatt.abcd import closure_testing

    with pytest.warns(DeprecationWarning, match=r"^rosenblatt\.abcd\.closure_test is deprecated"):
        from rosenblatt.abcd.closure_test import ClosureTest, thinned_indices
    assert ClosureTest is closure_testing.ClosureTest
    assert thinned_indices is closure_testing.thinned_indices
    old = sys.modules["rosenblatt.abcd.closure_test"]
    assert "closure_test_histogram" in dir(old)
    # the package's attribute of that name stays the function, as before the rename
    assert rosenblatt.abcd.closure_test is closure_testing.closure_test
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        importlib.import_module("rosenblatt.abcd.closure_testing")
