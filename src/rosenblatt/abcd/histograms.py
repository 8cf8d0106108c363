"""The ABCD histogram: ``(x, y, process)`` on ``Variable`` axes whose edges are the cut values."""

from __future__ import annotations

from typing import Any

import numpy as np

from rosenblatt._validation import as_1d_float, check_finite, check_same_length
from rosenblatt.typing import ArrayLike

__all__ = ["abcd_histogram", "cut_axes", "process_axis"]


def abcd_histogram(
    x: ArrayLike,
    y: ArrayLike,
    label: ArrayLike,
    *,
    x0: ArrayLike,
    y0: ArrayLike,
    weight: ArrayLike | None = None,
    x_label: str = "x",
    y_label: str = "y",
) -> Any:
    """Fill a ``hist.Hist`` of ``(x, y, process)`` whose bin edges are the cut values.

    The ``x`` and ``y`` axes are ``Variable`` axes with the sorted cut values
    ``x0`` and ``y0`` as edges; under- and overflow hold everything outside,
    so no event is lost. The ``process`` axis separates background (label 0)
    from signal (label 1). Storage is ``Weight`` (sum of weights and of their
    squares).
    """
    import hist

    x_arr, y_arr = as_1d_float(x, "x"), as_1d_float(y, "y")
    label_arr = np.asarray(label)
    check_same_length(x=x_arr, y=y_arr, label=label_arr)
    check_finite(x_arr, "x")
    check_finite(y_arr, "y")
    if not np.all(np.isin(label_arr, (0, 1))):
        msg = "label must be 0 (background) or 1 (signal)"
        raise ValueError(msg)
    w = None if weight is None else as_1d_float(weight, "weight")
    if w is not None:
        check_same_length(x=x_arr, weight=w)
        check_finite(w, "weight")
    h = hist.Hist(
        *cut_axes(x0, y0, x_label=x_label, y_label=y_label),
        process_axis(),
        storage=hist.storage.Weight(),
    )
    h.fill(x=x_arr, y=y_arr, process=label_arr.astype(int), weight=w)
    return h


def cut_axes(
    x0: ArrayLike, y0: ArrayLike, *, x_label: str = "x", y_label: str = "y"
) -> tuple[Any, Any]:
    """The ``x`` and ``y`` axes of an ABCD histogram: ``Variable`` axes on the cut values.

    The sorted distinct cut values are the bin edges; the flow bins hold
    everything outside them, so a histogram on these axes loses no event.

    Raises
    ------
    ValueError
        If ``x0`` or ``y0`` has fewer than two distinct finite values.
    """
    import hist

    edges = []
    for values, name in ((x0, "x0"), (y0, "y0")):
        unique = np.unique(np.asarray(values, dtype=float))
        if len(unique) < 2 or not np.all(np.isfinite(unique)):
            msg = f"{name} needs at least two distinct finite cut values, got {len(unique)}"
            raise ValueError(msg)
        edges.append(unique)
    return (
        hist.axis.Variable(edges[0], name="x", label=x_label),
        hist.axis.Variable(edges[1], name="y", label=y_label),
    )


def process_axis() -> Any:
    """The ``process`` axis of an ABCD histogram: 0 background, 1 signal.

    Other labels (``-1`` for unlabelled events) grow the axis; :func:`closure_scan`
    reads the bins 0 and 1.
    """
    import hist

    return hist.axis.IntCategory(
        [0, 1], name="process", label="process (0 background, 1 signal)", growth=True
    )
