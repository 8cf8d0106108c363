"""The array types of rosenblatt's signatures.

The functions of the package take array-like inputs (a list, a numpy array, anything
:func:`numpy.asarray` reads) and return numpy arrays of a fixed dtype; these names say
which. Use them in code that calls rosenblatt as well::

    from rosenblatt.typing import ArrayLike, FloatArray

    def decorrelated(x: ArrayLike, y: ArrayLike) -> FloatArray: ...

Notes
-----
The aliases are numpy's generic array types (:data:`numpy.typing.NDArray` of one dtype),
so a :class:`numpy.ndarray` of that dtype is one at run time; they check nothing
themselves.
"""

from __future__ import annotations

from typing import TypeAlias

import numpy as np
import numpy.typing as npt

__all__ = ["ArrayLike", "BoolArray", "FloatArray", "Int64Array", "IntArray"]

#: An input that :func:`numpy.asarray` reads as an array of numbers: a list, a tuple, a
#: numpy array, a scalar (:data:`numpy.typing.ArrayLike`).
ArrayLike: TypeAlias = npt.ArrayLike

#: An array of 64-bit floats (``NDArray[numpy.float64]``): the values, weights and results
#: the package returns.
FloatArray: TypeAlias = npt.NDArray[np.float64]

#: An array of indices (``NDArray[numpy.intp]``): an order, positions in another array.
IntArray: TypeAlias = npt.NDArray[np.intp]

#: An array of 64-bit integers (``NDArray[numpy.int64]``): counts, seeds and entries.
Int64Array: TypeAlias = npt.NDArray[np.int64]

#: An array of booleans (``NDArray[numpy.bool_]``): a selection of events.
BoolArray: TypeAlias = npt.NDArray[np.bool_]
