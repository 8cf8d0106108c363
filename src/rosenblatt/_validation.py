"""Input checks shared by the transforms and the metrics.

Every check raises a :class:`ValueError` (or :class:`TypeError`) that names the
argument, says what is wrong and how many events are affected.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

__all__ = [
    "as_1d_float",
    "as_sigma_r",
    "as_weight",
    "check_finite",
    "check_same_length",
]


def as_1d_float(values: Any, name: str, *, allow_empty: bool = False) -> NDArray[np.float64]:
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


def check_finite(arr: NDArray[np.float64], name: str) -> None:
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


def as_weight(weight: Any, n: int, *, name: str = "weight") -> NDArray[np.float64] | None:
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


def as_sigma_r(value: Any) -> float | None:
    """Validate a relative kernel width: a positive finite number, or ``"auto"`` (``None``)."""
    import math

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
