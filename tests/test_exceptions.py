"""rosenblatt.exceptions holds every exception class, each a RosenblattError."""

from __future__ import annotations

import ast
import builtins
import errno
import importlib
import inspect
from pathlib import Path

import pytest

import rosenblatt
from rosenblatt import exceptions

pytestmark = pytest.mark.core

#: where each class was importable before it moved to rosenblatt.exceptions
OLD_HOMES = {
    "NotFittedError": ["rosenblatt", "rosenblatt.transforms", "rosenblatt.transforms._base"],
    "NaNInputWarning": ["rosenblatt.transforms._base"],
    "NegativeWeightError": ["rosenblatt.transforms"],
    "SchemaError": ["rosenblatt", "rosenblatt._schema", "rosenblatt.serialization"],
    "MissingExtraError": ["rosenblatt._extras"],
    "ConfigError": ["rosenblatt.studies.config_checks"],
    "EventFileError": ["rosenblatt.io"],
    "TreeFileError": ["rosenblatt.processors.branches"],
    "PreflightError": ["rosenblatt.studies.abcd.preflight"],
    "UnreadableFileError": ["rosenblatt.studies.abcd.preflight"],
}


#: classes that moved to rosenblatt.exceptions with no name left at their old home
MOVED = {
    "CorruptCacheError": "rosenblatt._records",
    "DiskFullError": "rosenblatt._atomic",
    "FolderLockedError": "rosenblatt._lock",
    "QuantityError": "rosenblatt.processors.quantities",
    "UnknownStudyError": "rosenblatt.studies.keys",
    "NotCovered": "rosenblatt.outofcore._order",
}

#: classes of rosenblatt.exceptions that the package raises and catches itself
INTERNAL = {"InvariantError", "NotCovered"}

#: each class and the builtin exceptions it must remain, for the handlers that catch those
BUILTIN_BASES = {
    "ConfigError": (ValueError,),
    "CorruptCacheError": (ValueError,),
    "DiskFullError": (OSError,),
    "EventFileError": (ValueError,),
    "FolderLockedError": (RuntimeError,),
    "InvariantError": (AssertionError,),
    "MissingExtraError": (ModuleNotFoundError, ImportError),
    "NegativeWeightError": (ValueError,),
    "NotCovered": (LookupError,),
    "NotFittedError": (ValueError, AttributeError),
    "PreflightError": (ValueError,),
    "QuantityError": (ValueError,),
    "SchemaError": (ValueError,),
    "TreeFileError": (ValueError,),
    "UnknownStudyError": (KeyError,),
    "UnreadableFileError": (ValueError,),
}

SOURCE = Path(rosenblatt.__file__).parent


def _defined_classes() -> dict[str, type[BaseException]]:
    """Every exception or warning class that rosenblatt.exceptions defines, by name."""
    return {
        name: obj
        for name, obj in inspect.getmembers(exceptions, inspect.isclass)
        if issubclass(obj, BaseException) and obj.__module__ == exceptions.__name__
    }


def test_every_exception_is_listed() -> None:
    public = set(_defined_classes()) - INTERNAL
    assert sorted(exceptions.__all__) == sorted(public)
    new = {"RosenblattError", "InvariantError"}
    assert set(OLD_HOMES) | set(MOVED) | new == set(_defined_classes())
    for name in exceptions.__all__:
        cls = getattr(exceptions, name)
        assert issubclass(cls, Exception)
        assert cls.__module__ == "rosenblatt.exceptions"


@pytest.mark.parametrize(("name", "module"), [(n, m) for n, ms in OLD_HOMES.items() for m in ms])
def test_old_homes_re_export_the_same_class(name: str, module: str) -> None:
    try:
        imported = importlib.import_module(module)
    except ModuleNotFoundError as err:  # a module of an extra that is not installed
        pytest.skip(str(err))
    assert getattr(imported, name) is getattr(exceptions, name)


def test_the_classes_keep_their_bases_and_attributes() -> None:
    assert issubclass(exceptions.NotFittedError, ValueError)
    assert issubclass(exceptions.NotFittedError, AttributeError)
    assert issubclass(exceptions.NaNInputWarning, RuntimeWarning)
    assert issubclass(exceptions.UnreadableFileError, exceptions.PreflightError)
    err = exceptions.MissingExtraError("needs hep", name="uproot", extras=["hep"])
    assert isinstance(err, ModuleNotFoundError)
    assert (err.name, err.extras) == ("uproot", ("hep",))
    assert exceptions.PreflightError("a: b: c", "c").reason == "c"
    assert exceptions.PreflightError("a: b: c").reason == "a: b: c"


def test_every_exception_is_a_rosenblatt_error() -> None:
    classes = _defined_classes()
    errors = {name: cls for name, cls in classes.items() if not issubclass(cls, Warning)}
    assert set(errors) == set(BUILTIN_BASES) | {"RosenblattError"}
    for name, cls in errors.items():
        assert issubclass(cls, exceptions.RosenblattError), name
    for name, bases in BUILTIN_BASES.items():
        for base in bases:
            assert issubclass(classes[name], base), (name, base)
    assert exceptions.RosenblattError.__bases__ == (Exception,)


def test_the_warnings_are_runtime_warnings_and_no_errors() -> None:
    warnings = {n: c for n, c in _defined_classes().items() if issubclass(c, Warning)}
    assert warnings == {"NaNInputWarning": exceptions.NaNInputWarning}
    assert issubclass(exceptions.NaNInputWarning, RuntimeWarning)
    assert not issubclass(exceptions.NaNInputWarning, exceptions.RosenblattError)


def test_rosenblatt_error_is_exported() -> None:
    assert "RosenblattError" in rosenblatt.__all__
    assert rosenblatt.RosenblattError is exceptions.RosenblattError


@pytest.mark.parametrize(("name", "module"), sorted(MOVED.items()))
def test_moved_classes_are_not_exported_from_their_old_home(name: str, module: str) -> None:
    imported = importlib.import_module(module)
    assert name not in getattr(imported, "__all__", ())
    assert getattr(imported, name, exceptions.__dict__[name]) is exceptions.__dict__[name]


def _exception_classes(tree: ast.Module, defined: set[str]) -> list[str]:
    """Names of the classes in ``tree`` whose bases include an exception or warning class."""
    builtin = {
        name
        for name, obj in vars(builtins).items()
        if isinstance(obj, type) and issubclass(obj, BaseException)
    }
    known = builtin | defined
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.ClassDef):
            continue
        bases = {ast.unparse(base).rsplit(".", 1)[-1] for base in node.bases}
        if bases & known or any(b.endswith(("Error", "Exception", "Warning")) for b in bases):
            found.append(node.name)
    return found


def test_no_module_but_exceptions_defines_an_exception_class() -> None:
    defined = set(_defined_classes())
    found = {}
    for path in sorted(SOURCE.rglob("*.py")):
        if path.name == "exceptions.py" and path.parent == SOURCE:
            continue
        names = _exception_classes(ast.parse(path.read_text(encoding="utf-8")), defined)
        if names:
            found[str(path.relative_to(SOURCE))] = names
    # a stop signal unwinds as Ctrl-C does: a KeyboardInterrupt, not an error to catch
    assert found == {"_interrupt.py": ["Stopped"]}


def test_exceptions_imports_nothing_of_the_package() -> None:
    tree = ast.parse((SOURCE / "exceptions.py").read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            assert node.level == 0
            assert not (node.module or "").startswith("rosenblatt")
        elif isinstance(node, ast.Import):
            assert not any(alias.name.startswith("rosenblatt") for alias in node.names)


def test_moved_classes_keep_their_messages_and_attributes(tmp_path: Path) -> None:
    full = exceptions.DiskFullError(tmp_path / "a.json", 10, exact=False, free=3)
    assert (full.errno, full.path, full.needed, full.exact, full.free) == (
        errno.ENOSPC,
        tmp_path / "a.json",
        10,
        False,
        3,
    )
    assert str(full).startswith(f"no space left on the device writing {tmp_path / 'a.json'}")
    assert "more than 10 bytes, 3 bytes free there" in str(full)
    assert "bytes free" not in str(exceptions.DiskFullError(tmp_path / "a.json", 10))
    assert str(exceptions.UnknownStudyError("unknown study 'x'")) == "unknown study 'x'"
    assert len(exceptions.NotCovered([(0.0, 1.0), (2.0, 3.0)]).intervals) == 2
