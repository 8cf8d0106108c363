"""Input checks shared by the transforms, the metrics and the readers of saved states.

Every check raises a :class:`ValueError` (or :class:`TypeError`) that names the
argument, says what is wrong and, for arrays, how many events are affected.
The parameter checks (:func:`check_int`, :func:`check_real`,
:func:`check_option`, :func:`check_bool`, :func:`check_ints`) say
``<name> must be <what is allowed>, got <value>``; ``error`` chooses the
exception class (e.g. :class:`rosenblatt._schema.SchemaError` for saved states).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Collection
from typing import Any, TypeGuard

import numpy as np
from numpy.typing import NDArray

from rosenblatt.typing import FloatArray

__all__ = [
    "as_1d_float",
    "as_sigma_r",
    "as_weight",
    "check_bool",
    "check_finite",
    "check_int",
    "check_ints",
    "check_option",
    "check_real",
    "check_same_length",
    "describe_int",
    "describe_real",
    "is_int",
    "is_real",
]


def as_1d_float(values: object, name: str, *, allow_empty: bool = False) -> FloatArray:
    """Return ``values`` as a contiguous 1-D float64 array.

    Parameters
    ----------
    values
        Array-like of numbers.
    name
        Argument name used in error messages.
    allow_empty
        Accept zero-length input.

    Raises
    ------
    TypeError
        If the input is not numeric.
    ValueError
        If the input is not one-dimensional, or empty when not allowed.
    """
    arr = np.asarray(values)
    if arr.dtype == object or not (
        np.issubdtype(arr.dtype, np.number) or np.issubdtype(arr.dtype, np.bool_)
    ):
        msg = f"{name} must be numeric, got an array of dtype {arr.dtype}"
        raise TypeError(msg)
    if np.issubdtype(arr.dtype, np.complexfloating):
        msg = f"{name} must be real, got an array of dtype {arr.dtype}"
        raise TypeError(msg)
    if arr.ndim != 1:
        msg = f"{name} must be one-dimensional, got shape {arr.shape}"
        raise ValueError(msg)
    if arr.size == 0 and not allow_empty:
        msg = f"{name} is empty: at least one event is needed"
        raise ValueError(msg)
    return np.ascontiguousarray(arr, dtype=np.float64)


def check_finite(arr: FloatArray, name: str) -> None:
    """Raise a :class:`ValueError` naming how many entries of ``arr`` are NaN or infinite."""
    bad = ~np.isfinite(arr)
    if bad.any():
        n_nan = int(np.isnan(arr).sum())
        n_inf = int(bad.sum()) - n_nan
        first = int(np.flatnonzero(bad)[0])
        msg = (
            f"{name} has {n_nan} NaN and {n_inf} infinite value(s) out of {arr.size} "
            f"(first at index {first})"
        )
        raise ValueError(msg)


def check_same_length(**arrays: NDArray[Any]) -> None:
    """Raise a :class:`ValueError` if the named arrays differ in length."""
    lengths = {name: len(a) for name, a in arrays.items()}
    if len(set(lengths.values())) > 1:
        described = ", ".join(f"{name} has {n}" for name, n in lengths.items())
        msg = f"length mismatch: {described} events"
        raise ValueError(msg)


def as_weight(weight: object, n: int, *, name: str = "weight") -> FloatArray | None:
    """Validate an optional per-event weight array of length ``n``.

    Negative weights are allowed (Monte Carlo weights can be negative); the
    total must be positive and every weight finite.
    Returns ``None`` when ``weight`` is ``None``.
    """
    if weight is None:
        return None
    w = as_1d_float(weight, name, allow_empty=True)
    if len(w) != n:
        msg = f"length mismatch: {name} has {len(w)} events, the data have {n}"
        raise ValueError(msg)
    check_finite(w, name)
    total = float(w.sum())
    if not total > 0:
        msg = (
            f"{name} must have a positive sum, got {total:g} "
            f"({int((w < 0).sum())} negative and {int((w == 0).sum())} zero weight(s) "
            f"out of {n})"
        )
        raise ValueError(msg)
    return w


def as_sigma_r(value: object) -> float | None:
    """Validate a relative kernel width: a positive finite number, or ``"auto"`` (``None``)."""
    if isinstance(value, str):
        if value != "auto":
            msg = f"sigma_r must be a positive number or 'auto', got {value!r}"
            raise ValueError(msg)
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float, np.floating)):
        msg = f"sigma_r must be a positive number or 'auto', got {value!r}"
        raise TypeError(msg)
    if not (math.isfinite(value) and value > 0):
        msg = f"sigma_r must be a positive finite number or 'auto', got {value!r}"
        raise ValueError(msg)
    return float(value)


def is_int(value: object) -> TypeGuard[int]:
    """Whether ``value`` is an integer (Python or numpy), and not a bool."""
    return isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_))


def is_real(value: object) -> TypeGuard[float]:
    """Whether ``value`` is a real number (Python or numpy), and not a bool."""
    return isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_))


def describe_int(low: int | None = None, high: int | None = None) -> str:
    """The integers allowed, in words: ``a positive integer``, ``an integer in [2, 64]``."""
    if low is not None and high is not None:
        return f"an integer in [{low}, {high}]"
    if high is not None:
        return f"an integer <= {high}"
    if low == 0:
        return "a non-negative integer"
    if low == 1:
        return "a positive integer"
    return "an integer" if low is None else f"an integer >= {low}"


def check_int(
    value: object,
    name: str,
    *,
    low: int | None = None,
    high: int | None = None,
    what: str | None = None,
    error: type[Exception] = ValueError,
) -> int:
    """``value`` as an ``int`` if it is an integer (not a bool) in ``[low, high]``.

    Parameters
    ----------
    value
        The parameter's value.
    name
        The parameter's name, first word of the message.
    low, high
        The inclusive bounds (``None``: unbounded).
    what
        What is allowed, in words, when :func:`describe_int` does not say it
        (e.g. ``"0, 1, 2 or 3"``).
    error
        The exception class raised.

    Raises
    ------
    Exception
        ``error``: ``<name> must be <what is allowed>, got <value>``.
    """
    if (
        not is_int(value)
        or (low is not None and value < low)
        or (high is not None and value > high)
    ):
        msg = f"{name} must be {what or describe_int(low, high)}, got {value!r}"
        raise error(msg)
    return int(value)


def check_ints(
    values: object,
    name: str,
    *,
    low: int | None = None,
    high: int | None = None,
    length: int | None = None,
    what: str | None = None,
    error: type[Exception] = ValueError,
) -> tuple[int, ...]:
    """``values`` as a tuple of ints if it is a non-empty list or tuple of integers in ``[low, high]``.

    ``length``, when given, is the number of integers required. The message
    says ``<name> must be <what>, got <values>``; ``what`` defaults to
    ``<length or "one or more"> <integers allowed>``.
    """
    if (
        not isinstance(values, (list, tuple))
        or not values
        or (length is not None and len(values) != length)
        or not all(
            is_int(v) and (low is None or v >= low) and (high is None or v <= high) for v in values
        )
    ):
        if what is None:
            single = describe_int(low, high).split(" ", 1)[1]
            what = f"{length or 'one or more'} {single.replace('integer', 'integers')}"
        msg = f"{name} must be {what}, got {values!r}"
        raise error(msg)
    return tuple(int(v) for v in values)


def describe_real(
    low: float | None = None,
    high: float | None = None,
    *,
    low_open: bool = False,
    high_open: bool = False,
) -> str:
    """The numbers allowed, in words: ``a number in (0, 1]``, ``a positive number``."""
    if low is not None and high is not None:
        return f"a number in {'(' if low_open else '['}{low:g}, {high:g}{')' if high_open else ']'}"
    if high is not None:
        return f"a number {'<' if high_open else '<='} {high:g}"
    if low == 0:
        return "a positive number" if low_open else "a non-negative number"
    if low is None:
        return "a finite number"
    return f"a number {'>' if low_open else '>='} {low:g}"


def check_real(
    value: object,
    name: str,
    *,
    low: float | None = None,
    high: float | None = None,
    low_open: bool = False,
    high_open: bool = False,
    what: str | None = None,
    error: type[Exception] = ValueError,
) -> float:
    """``value`` as a ``float`` if it is a finite real number (not a bool) within the bounds.

    Parameters
    ----------
    value
        The parameter's value.
    name
        The parameter's name, first word of the message.
    low, high
        The bounds (``None``: unbounded); ``low_open``/``high_open`` exclude them.
    what
        What is allowed, in words, when :func:`describe_real` does not say it.
    error
        The exception class raised.

    Raises
    ------
    Exception
        ``error``: ``<name> must be <what is allowed>, got <value>``.
    """
    bounds = (low, high, low_open, high_open)
    if not (is_real(value) and math.isfinite(value) and _within(value, *bounds)):
        allowed = what or describe_real(low, high, low_open=low_open, high_open=high_open)
        msg = f"{name} must be {allowed}, got {value!r}"
        raise error(msg)
    return float(value)


def _within(
    value: float, low: float | None, high: float | None, low_open: bool, high_open: bool
) -> bool:
    """Whether ``value`` lies within the bounds (``None``: unbounded; ``*_open``: excluded)."""
    above = low is None or (value > low if low_open else value >= low)
    below = high is None or (value < high if high_open else value <= high)
    return above and below


def check_option(
    value: Any, name: str, options: Collection[Any], *, error: type[Exception] = ValueError
) -> Any:
    """``value`` if it equals one of ``options`` (a bool never stands for 0 or 1).

    Raises ``error``: ``<name> must be one of <options>, got <value>``.
    """
    if not any(_same(value, option) for option in options):
        listed = ", ".join(repr(o) for o in options)
        msg = f"{name} must be one of {listed}, got {value!r}"
        raise error(msg)
    return value


def _same(value: Any, option: Any) -> bool:
    if isinstance(value, (bool, np.bool_)) != isinstance(option, bool):
        return False
    try:
        return bool(value == option)
    except (TypeError, ValueError):
        return False


def check_bool(value: object, name: str, *, error: type[Exception] = ValueError) -> bool:
    """``value`` as a ``bool`` if it is ``True`` or ``False`` (numpy's included)."""
    if not isinstance(value, (bool, np.bool_)):
        msg = f"{name} must be True or False, got {value!r}"
        raise error(msg)
    return bool(value)
