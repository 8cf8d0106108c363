"""Numpy or awkward in, the same structure out.

The transforms work on flat float64 arrays. These helpers flatten an awkward
array of any jagged structure to its leaf values and rebuild an array of the
same structure from new leaf values.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import NDArray

from rosenblatt.typing import FloatArray

__all__ = ["apply_flat", "is_awkward"]


def is_awkward(values: Any) -> bool:
    """Return whether ``values`` is an :class:`awkward.Array` (without importing awkward)."""
    return type(values).__module__.startswith("awkward") and hasattr(values, "layout")


def apply_flat(
    function: Callable[[NDArray[Any], NDArray[Any]], FloatArray],
    x: Any,
    y: Any,
) -> Any:
    """Evaluate ``function`` on the flattened values of ``x`` and ``y``.

    If either argument is an awkward array, both are broadcast to a common
    jagged structure and the result has that structure; otherwise the result
    is a numpy array of the broadcast shape of the inputs.
    """
    if not (is_awkward(x) or is_awkward(y)):
        return function(np.asarray(x), np.asarray(y))

    import awkward as ak

    x_b, y_b = (ak.fill_none(a, np.nan, axis=None) for a in ak.broadcast_arrays(x, y))
    x_packed = ak.to_packed(x_b)
    x_flat = ak.to_numpy(ak.flatten(x_packed, axis=None))
    y_flat = ak.to_numpy(ak.flatten(ak.to_packed(y_b), axis=None))
    result = function(x_flat, y_flat)

    def replace_leaf(layout: Any, **_: Any) -> Any:
        if isinstance(layout, ak.contents.NumpyArray):
            return ak.contents.NumpyArray(result)
        return None

    return ak.transform(
        replace_leaf, x_packed, highlevel=True, behavior=getattr(x, "behavior", None)
    )
