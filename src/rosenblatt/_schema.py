"""Validation of the arrays and domains of a saved transform's state.

These helpers are shared by every reader of saved transforms (the JSON files
of :mod:`rosenblatt.serialization`, the ``from_state`` methods of the
transforms, the correctionlib import). They know no file format, so that the
transforms can check a state without importing any reader.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from rosenblatt.exceptions import SchemaError
from rosenblatt.typing import FloatArray

__all__ = ["FITTED_ON_KEYS", "SchemaError", "check_array", "check_domain", "check_fitted_on"]


def check_array(
    values: Any,
    name: str,
    shape: tuple[int, ...],
    *,
    increasing: bool = False,
    nondecreasing: bool = False,
    unit: bool = False,
) -> FloatArray:
    """Validate one array of a saved state and return it as float64.

    Parameters
    ----------
    values
        The array as read (nested lists of numbers).
    name
        Name of the array in error messages.
    shape
        The expected shape.
    increasing, nondecreasing
        Require strictly increasing (non-decreasing) values along the last axis.
    unit
        Require values in ``[0, 1]``.

    Returns
    -------
    numpy.ndarray
        The values as float64.

    Raises
    ------
    SchemaError
        If the values are not numbers, have another shape, are not finite or
        break a required order or range.
    """
    try:
        arr = np.array(values, dtype=np.float64)
    except (TypeError, ValueError) as err:
        msg = f"{name} must be an array of numbers"
        raise SchemaError(msg) from err
    if arr.shape != shape:
        msg = f"{name} must have shape {shape}, got {arr.shape}"
        raise SchemaError(msg)
    if not np.all(np.isfinite(arr)):
        msg = f"{name} has non-finite values"
        raise SchemaError(msg)
    if increasing and np.any(np.diff(arr, axis=-1) <= 0):
        msg = f"{name} must be strictly increasing"
        raise SchemaError(msg)
    if nondecreasing and np.any(np.diff(arr, axis=-1) < 0):
        msg = f"{name} must be non-decreasing"
        raise SchemaError(msg)
    if unit and (np.any(arr < 0) or np.any(arr > 1)):
        msg = f"{name} must lie in [0, 1]"
        raise SchemaError(msg)
    return arr


def check_domain(values: Any) -> tuple[tuple[float, float], tuple[float, float]]:
    """Validate a saved ``((x_min, x_max), (y_min, y_max))`` domain.

    Raises
    ------
    SchemaError
        If it is not a finite 2 x 2 array increasing along each row.
    """
    arr = check_array(values, "domain", (2, 2), increasing=True)
    if not all(math.isfinite(v) for v in arr.ravel()):
        msg = "domain must be finite"
        raise SchemaError(msg)
    return ((float(arr[0, 0]), float(arr[0, 1])), (float(arr[1, 0]), float(arr[1, 1])))


#: the keys of a saved transform's ``fitted_on`` block, and the type of each value
FITTED_ON_KEYS: dict[str, tuple[type, ...]] = {
    "x": (str,),
    "y": (str,),
    "weight": (str, type(None)),
    "treename": (str,),
    "schema": (str,),
    "jets": (str,),
    "files": (list,),
    "n_events": (int,),
    "sum_weight": (int, float),
}

#: the keys of one file of ``fitted_on.files``
_FILE_KEYS: dict[str, tuple[type, ...]] = {"name": (str,), "size": (int,), "blake2b": (str,)}


def _check_keys(value: Any, keys: dict[str, tuple[type, ...]], name: str) -> dict[str, Any]:
    """``value`` as a mapping holding each of ``keys`` with a value of its types."""
    if not isinstance(value, dict):
        msg = f"{name} must be an object, got {type(value).__name__}"
        raise SchemaError(msg)
    for key, types in keys.items():
        if key not in value:
            msg = f"{name} lacks {key!r}"
            raise SchemaError(msg)
        item = value[key]
        if isinstance(item, bool) or not isinstance(item, types):
            wanted = " or ".join("null" if t is type(None) else t.__name__ for t in types)
            msg = f"{name}.{key} must be {wanted}, got {item!r}"
            raise SchemaError(msg)
    return value


def check_fitted_on(value: Any) -> dict[str, Any]:
    """Validate a saved transform's ``fitted_on`` block: what ``rosenblatt fit`` fitted it on.

    Its keys are :data:`FITTED_ON_KEYS` (other keys are kept as they are);
    ``files`` lists ``{"name", "size", "blake2b"}`` of each file.

    Raises
    ------
    SchemaError
        If a key is missing or holds a value of another type, or a count or a
        sum of weights is not finite and positive.
    """
    block = _check_keys(value, FITTED_ON_KEYS, "fitted_on")
    for index, entry in enumerate(block["files"]):
        _check_keys(entry, _FILE_KEYS, f"fitted_on.files[{index}]")
    if block["n_events"] < 1:
        msg = f"fitted_on.n_events must be positive, got {block['n_events']}"
        raise SchemaError(msg)
    if not (math.isfinite(block["sum_weight"]) and block["sum_weight"] > 0):
        msg = f"fitted_on.sum_weight must be finite and positive, got {block['sum_weight']}"
        raise SchemaError(msg)
    return block
