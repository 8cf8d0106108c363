"""rosenblatt.exceptions holds every exception class; the modules that raise them re-export them."""

from __future__ import annotations

import importlib

import pytest

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
    "PreflightError": ["rosenblatt.studies.abcd_preflight"],
    "UnreadableFileError": ["rosenblatt.studies.abcd_preflight"],
}


def test_every_exception_is_listed() -> None:
    assert sorted(exceptions.__all__) == sorted(OLD_HOMES)
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
