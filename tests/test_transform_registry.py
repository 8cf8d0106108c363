"""Transform classes are found by kind, and save/to_correctionlib go through registered writers."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pytest
from numpy.typing import NDArray

import rosenblatt as rb
from rosenblatt import serialization
from rosenblatt.transforms import _base
from rosenblatt.transforms._base import (
    ConditionalCDFTransform,
    register_writer,
    transform_classes,
)


class _Identity(ConditionalCDFTransform, register=False):
    """gamma = y clipped to [0, 1]: a minimal concrete transform for the registry tests."""

    kind: ClassVar[str] = "test-identity"

    def _fit(self, x: NDArray[np.float64], y: NDArray[np.float64], w: Any) -> None:
        self.domain_ = ((float(x.min()), float(x.max())), (0.0, 1.0))

    def _transform(self, x: NDArray[np.float64], y: NDArray[np.float64]) -> NDArray[np.float64]:
        return np.clip(y, 0.0, 1.0)

    def get_state(self) -> dict[str, Any]:
        return {"domain": [list(self.domain_[0]), list(self.domain_[1])]}

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> _Identity:
        obj = cls()
        obj.domain_ = rb.serialization.check_domain(state["domain"])
        return obj


@pytest.fixture
def kinds(monkeypatch: pytest.MonkeyPatch) -> dict[str, type[ConditionalCDFTransform]]:
    """A copy of the registry of kinds that the test may change."""
    registry = dict(_base._KINDS)
    monkeypatch.setattr(_base, "_KINDS", registry)
    return registry


def test_the_estimators_are_registered() -> None:
    expected = {"irgi": rb.IRGI, "kde": rb.KDE, "grid_kde": rb.GridKDE}
    assert expected.items() <= transform_classes().items()


def test_a_new_transform_is_saved_and_loaded_by_kind(
    kinds: dict[str, type[ConditionalCDFTransform]], tmp_path: Path
) -> None:
    class Identity(_Identity):
        kind: ClassVar[str] = "test-identity"

    assert kinds["test-identity"] is Identity
    fitted = Identity().fit(np.arange(10.0), np.linspace(0, 1, 10))
    fitted.save(tmp_path / "t.json")
    loaded = rb.load(tmp_path / "t.json")
    assert type(loaded) is Identity
    assert loaded.domain_ == fitted.domain_


def test_abstract_inherited_and_opted_out_classes_are_not_registered(
    kinds: dict[str, type[ConditionalCDFTransform]],
) -> None:
    before = dict(kinds)

    class Abstract(ConditionalCDFTransform):
        kind: ClassVar[str] = "test-abstract"

    class Inherited(rb.IRGI):
        pass

    assert Abstract.kind == "test-abstract"
    assert Inherited.kind == "irgi"
    assert "test-identity" not in kinds
    assert kinds == before


def test_a_kind_is_taken_once(kinds: dict[str, type[ConditionalCDFTransform]]) -> None:
    with pytest.raises(TypeError, match=r"kind 'irgi' .* already taken by .*IRGI"):

        class Other(_Identity):
            kind: ClassVar[str] = "irgi"

    assert kinds["irgi"] is rb.IRGI


def test_save_and_to_correctionlib_use_the_registered_writers(
    monkeypatch: pytest.MonkeyPatch, small_sample: tuple[np.ndarray, np.ndarray]
) -> None:
    monkeypatch.setattr(_base, "_WRITERS", dict(_base._WRITERS))
    assert _base._WRITERS["json"] is serialization.save
    calls: list[tuple[Any, ...]] = []
    register_writer("json", lambda t, path: calls.append((t, path)))
    register_writer("correctionlib", lambda t, name, **options: calls.append((t, name, options)))
    fitted = rb.IRGI(depth=3).fit(*small_sample)
    fitted.save("somewhere.json")
    fitted.to_correctionlib("gamma", check=False)
    assert calls == [(fitted, "somewhere.json"), (fitted, "gamma", {"check": False})]


def test_unknown_writer_format() -> None:
    with pytest.raises(ValueError, match="unknown writer format 'yaml'"):
        register_writer("yaml", print)  # type: ignore[arg-type]


def test_missing_writer_is_a_clear_error(
    monkeypatch: pytest.MonkeyPatch, small_sample: tuple[np.ndarray, np.ndarray]
) -> None:
    monkeypatch.setattr(_base, "_WRITERS", {})
    with pytest.raises(RuntimeError, match=r"import rosenblatt\.serialization"):
        rb.IRGI(depth=3).fit(*small_sample).save("never.json")
