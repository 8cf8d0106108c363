"""The description of an exported correction: what its table is, its measured error, its domain."""

from __future__ import annotations

from typing import Any

import numpy as np

from rosenblatt.transforms._base import ConditionalCDFTransform

__all__ = ["describe_table"]


def describe_table(
    transform: ConditionalCDFTransform,
    what: str,
    n_check: int,
    inexact: int,
    error: float,
    rms: float | None = None,
) -> str:
    """The correction's description of a table of ``transform`` on one or several observables.

    Parameters
    ----------
    transform : ConditionalCDFTransform
        The fitted transform (its domain and defining-sample size are written).
    what : str
        What the table is (the transform's ``describe()`` and how it is laid out).
    n_check : int
        Number of points the difference to the transform was measured on.
    inexact : int
        Numbers written that correctionlib reads up to 2 units in the last place off.
    error : float
        Largest difference to the transform measured.
    rms : float, optional
        Root mean square of that difference, written when given.
    """
    domain: Any = transform.domain_
    (x_lo, x_hi), (y_lo, y_hi) = domain
    lows = np.atleast_1d(np.asarray(x_lo, dtype=np.float64)).tolist()
    highs = np.atleast_1d(np.asarray(x_hi, dtype=np.float64)).tolist()
    k = len(lows)
    names = ["x"] if k == 1 else [f"x{d + 1}" for d in range(k)]
    given = ", ".join(f"{name.upper()} = {name}" for name in names)
    ranges = ", ".join(
        f"{name} in [{lo:.10g}, {hi:.10g}]" for name, lo, hi in zip(names, lows, highs, strict=True)
    )
    if k == 1:
        head = "gamma(x, y)"
        against, edge = "x", "end"
    else:
        head = f"gamma(x1, ..., x{k}, y)"
        against, edge = f"{k} protected observables", "face of the grid"
    spread = "" if rms is None else f" (RMS {rms:.3g})"
    reading = "Edges and offsets are written in decimal forms that correctionlib reads exactly" + (
        f", except {inexact} read up to 2 units in the last place off." if inexact else "."
    )
    return (
        f"{head} = P(Y <= y | {given}) of the defining background sample "
        f"({transform.n_events_} events): the Rosenblatt transform of the score y against "
        f"{against}. {what}. Measured max |gamma - rosenblatt| = {error:.3g}{spread} on "
        f"{n_check} points. Domain {ranges}, y in [{y_lo:.10g}, {y_hi:.10g}]: y below it gives 0, "
        f"y at or above its upper end 1, x beyond it is evaluated at the nearest {edge}. {reading}"
    )
