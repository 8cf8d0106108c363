"""Input of several protected observables: ``x`` of shape ``(n, k)`` or one array per observable.

A transform fitted on ``k >= 2`` observables takes ``x`` as

- a numpy array (or nested list) of shape ``(..., k)``: the last axis holds the
  observables, the rest broadcasts with ``y``;
- a list or tuple of ``k`` arrays, one per observable (numpy of any shape
  broadcasting with ``y``, or awkward arrays of any jagged structure): the
  result has the broadcast shape, or the awkward structure, of the inputs.

An ``(n, 1)`` array and a one-element list are the scalar case.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from rosenblatt._awkward import is_awkward
from rosenblatt._validation import as_1d_float
from rosenblatt.typing import FloatArray

__all__ = ["MAX_OBSERVABLES", "apply_observables", "check_dims", "flat_values", "split_observables"]


#: most protected observables a transform takes
MAX_OBSERVABLES = 3


def _is_per_observable(x: Any) -> bool:
    """Whether ``x`` is a list or tuple of arrays, one per observable."""
    return (
        isinstance(x, (list, tuple))
        and len(x) > 0
        and all(is_awkward(v) or isinstance(v, np.ndarray) for v in x)
    )


def flat_values(values: Any, name: str) -> FloatArray:
    """One-dimensional values, or the flattened leaves of an awkward array (validated as numbers)."""
    if is_awkward(values):
        import awkward as ak

        values = ak.to_numpy(ak.flatten(values, axis=None))
    return as_1d_float(values, name, allow_empty=True)


def split_observables(x: Any) -> tuple[FloatArray | None, Any]:
    """``(matrix, None)`` for ``k >= 2`` observables, else ``(None, x)`` with ``x`` as a scalar input.

    The matrix is ``(n, k)`` float64; each observable is checked to be
    numeric, and all to have the same length.
    """
    if _is_per_observable(x):
        if len(x) == 1:
            return None, x[0]
        columns = [flat_values(v, f"x[{d}]") for d, v in enumerate(x)]
        lengths = {len(c) for c in columns}
        if len(lengths) > 1:
            described = ", ".join(f"x[{d}] has {len(c)}" for d, c in enumerate(columns))
            msg = f"length mismatch: {described} events"
            raise ValueError(msg)
        return np.ascontiguousarray(np.stack(columns, axis=1)), None
    if isinstance(x, (list, tuple)) or getattr(x, "ndim", 1) == 2:
        arr = np.asarray(x)
        if arr.ndim == 2:
            if arr.shape[1] == 1:
                return None, arr[:, 0]
            for d in range(arr.shape[1]):
                as_1d_float(arr[:, d], "x", allow_empty=True)
            return np.ascontiguousarray(arr, dtype=np.float64), None
    return None, x


def check_dims(shape: tuple[int, ...], most: int, name: str) -> None:
    """Refuse ``x`` of ``shape`` with more observables than ``most`` (``name`` is the transform's)."""
    if shape[1] > most:
        takes = (
            "a single protected observable"
            if most == 1
            else f"at most {most} protected observables"
        )
        allowed = "" if most == 1 else f" or of shape (n, k) with k <= {most}"
        msg = f"x must be one-dimensional{allowed}, got shape {shape} ({name} takes {takes})"
        raise ValueError(msg)


def apply_observables(
    function: Callable[[FloatArray, FloatArray], FloatArray], x: Any, y: Any, k: int
) -> Any:
    """Evaluate ``function(x_flat (m, k), y_flat (m,))`` on the events of ``x`` and ``y``.

    ``x`` is either ``(..., k)`` or a sequence of ``k`` arrays (see the module
    notes); the result has the broadcast shape of the observables and ``y``,
    or their awkward structure.
    """
    if _is_per_observable(x):
        columns = list(x)
    else:
        arr = np.asarray(x)
        if arr.ndim == 0 or arr.shape[-1] != k:
            msg = (
                f"x must hold the {k} observables the transform was fitted on: shape (..., {k}) "
                f"or a list of {k} arrays, got shape {arr.shape}"
            )
            raise ValueError(msg)
        columns = [arr[..., d] for d in range(k)]
    if len(columns) != k:
        msg = f"x must hold the {k} observables the transform was fitted on, got {len(columns)}"
        raise ValueError(msg)
    if any(is_awkward(v) for v in [*columns, y]):
        return _apply_awkward(function, columns, y)
    arrays = np.broadcast_arrays(*(np.asarray(c) for c in columns), np.asarray(y))
    flat = [
        as_1d_float(a.ravel(), "x" if d < k else "y", allow_empty=True)
        for d, a in enumerate(arrays)
    ]
    matrix = np.stack(flat[:k], axis=1) if flat[0].size else np.empty((0, k))
    return function(matrix, flat[k]).reshape(arrays[0].shape)


def _apply_awkward(
    function: Callable[[FloatArray, FloatArray], FloatArray], columns: list[Any], y: Any
) -> Any:
    import awkward as ak

    arrays = [ak.fill_none(a, np.nan, axis=None) for a in ak.broadcast_arrays(*columns, y)]
    packed = ak.to_packed(arrays[0])
    flat = [
        np.asarray(ak.to_numpy(ak.flatten(ak.to_packed(a), axis=None)), dtype=np.float64)
        for a in arrays
    ]
    result = function(np.stack(flat[:-1], axis=1), flat[-1])

    def replace_leaf(layout: Any, **_: Any) -> Any:
        if isinstance(layout, ak.contents.NumpyArray):
            return ak.contents.NumpyArray(result)
        return None

    return ak.transform(replace_leaf, packed, highlevel=True)
