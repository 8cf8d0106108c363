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
from numpy.typing import NDArray

from rosenblatt.exceptions import SchemaError

__all__ = ["SchemaError", "check_array", "check_domain"]


def check_array(
    values: Any,
    name: str,
    shape: tuple[int, ...],
    *,
    increasing: bool = False,
    nondecreasing: bool = False,
    unit: bool = False,
) -> NDArray[np.float64]:
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
