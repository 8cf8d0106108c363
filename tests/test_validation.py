"""The shared parameter checks: what each accepts, and the one message each refusal gives."""

from __future__ import annotations

import math
import re
from typing import Any

import numpy as np
import pytest

from rosenblatt._schema import SchemaError
from rosenblatt._validation import (
    check_bool,
    check_int,
    check_ints,
    check_option,
    check_real,
    describe_int,
    describe_real,
    is_int,
    is_real,
)

pytestmark = pytest.mark.core


@pytest.mark.parametrize(
    ("value", "expected"),
    [(3, True), (np.int64(3), True), (True, False), (np.bool_(True), False), (3.0, False)],
)
def test_is_int(value: Any, expected: bool) -> None:
    assert is_int(value) is expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [(0.5, True), (np.float32(0.5), True), (2, True), (False, False), ("1", False)],
)
def test_is_real(value: Any, expected: bool) -> None:
    assert is_real(value) is expected


@pytest.mark.parametrize(
    ("low", "high", "words"),
    [
        (None, None, "an integer"),
        (0, None, "a non-negative integer"),
        (1, None, "a positive integer"),
        (2, None, "an integer >= 2"),
        (None, 9, "an integer <= 9"),
        (1, 24, "an integer in [1, 24]"),
    ],
)
def test_describe_int(low: int | None, high: int | None, words: str) -> None:
    assert describe_int(low, high) == words


def test_check_int_accepts_and_converts() -> None:
    value = check_int(np.int32(7), "n", low=1, high=7)
    assert value == 7
    assert type(value) is int


@pytest.mark.parametrize(
    ("value", "kwargs", "message"),
    [
        (True, {"low": 1}, "n must be a positive integer, got True"),
        (0, {"low": 1}, "n must be a positive integer, got 0"),
        (2.0, {}, "n must be an integer, got 2.0"),
        (25, {"low": 1, "high": 24}, "n must be an integer in [1, 24], got 25"),
        (4, {"low": 0, "high": 3, "what": "0, 1, 2 or 3"}, "n must be 0, 1, 2 or 3, got 4"),
    ],
)
def test_check_int_refuses(value: Any, kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        check_int(value, "n", **kwargs)


def test_error_class_is_chosen() -> None:
    with pytest.raises(SchemaError, match="depth must be an integer in"):
        check_int("3", "depth", low=0, high=30, error=SchemaError)
    with pytest.raises(TypeError, match="must be True or False, got 1"):
        check_bool(1, "flag", error=TypeError)


def test_check_ints() -> None:
    assert check_ints([1, np.int64(0)], "depth", low=0, length=2) == (1, 0)
    for bad in ([1, -1], [1], [], (1, True), "12", None):
        message = f"depth must be 2 non-negative integers, got {bad!r}"
        with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
            check_ints(bad, "depth", low=0, length=2)
    with pytest.raises(ValueError, match=r"hidden must be one or more positive integers"):
        check_ints([0], "hidden", low=1)


@pytest.mark.parametrize(
    ("kwargs", "words"),
    [
        ({}, "a finite number"),
        ({"low": 0, "low_open": True}, "a positive number"),
        ({"low": 0}, "a non-negative number"),
        ({"low": 1, "high": 64}, "a number in [1, 64]"),
        ({"low": 0, "high": 1, "low_open": True, "high_open": True}, "a number in (0, 1)"),
        ({"high": 2, "high_open": True}, "a number < 2"),
    ],
)
def test_describe_real(kwargs: dict[str, Any], words: str) -> None:
    assert describe_real(**kwargs) == words


def test_check_real() -> None:
    assert check_real(np.float32(0.25), "t", low=0, high=1) == 0.25
    assert check_real(3, "t") == 3.0
    for bad in (math.nan, math.inf, 1.5, -0.1, True, "0.5", None):
        message = f"t must be a number in [0, 1], got {bad!r}"
        with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
            check_real(bad, "t", low=0, high=1)
    with pytest.raises(ValueError, match=r"must be a number in \(0, 1\), got 0"):
        check_real(0, "t", low=0, high=1, low_open=True, high_open=True)


def test_check_option() -> None:
    assert check_option("direct", "method", ("auto", "direct")) == "direct"
    assert check_option(2, "degree", (1, 2)) == 2
    for bad in ("fast", True, np.array([1, 2]), None):
        with pytest.raises(ValueError, match=r"^method must be one of 'auto', 1, got "):
            check_option(bad, "method", ("auto", 1))


def test_check_bool() -> None:
    assert check_bool(np.bool_(False), "b") is False
    for bad in (0, "yes", None):
        with pytest.raises(ValueError, match="b must be True or False"):
            check_bool(bad, "b")
