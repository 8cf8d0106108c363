"""IRGI's depth: its choice by cross-validation, and whether its ``y`` bins resolve a cut.

A cut on ``gamma`` at a level ``l`` close to 1 (or 0) falls in the last
equal-occupancy ``y`` bins of each column, where ``gamma`` is interpolated
linearly up to the sample's extreme score. Where fewer than
:data:`MIN_BINS_BEYOND_CUT` bins lie beyond the cut, that interpolation
decides which events pass it, the fraction passing then depends on ``x``,
and an ABCD estimate at the cut is biased by more than its statistics: on a
toy population (``x`` of density ``e^(-3x)`` on ``[0, 1]``, ``y | x`` Beta of
mean ``0.3 + 0.4 x`` and concentration 5; region A ``x >= 0.6``,
``gamma >= l``; 20 fits of 20k events each, the exact yields integrated)
the estimate ``B C / D`` of A was off by, per bins beyond the cut
``2**depth * (1 - l)``:

============  ============================================  ===================
bins beyond   bias of ``B C / D`` (depth, level)            in sd of one fit
============  ============================================  ===================
0.2 - 0.64    -19% to -97%                                  1.4 to 600
0.8           -23% (4, 0.95), -33% (3, 0.9), -47% (2, 0.8)  3.7 to 22
1.6           -1% (5, 0.95), -5% (4, 0.9), -17% (3, 0.8)    0.1 to 4.2
3.2 and more  +1.1% to -4.5%                                1.0 at most
============  ============================================  ===================

At 5k events the same pattern holds with twice the spread. Two bins beyond
every cut is the least that was within the fit's statistics at every depth.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from rosenblatt.transforms._bisection import max_depth
from rosenblatt.typing import FloatArray

if TYPE_CHECKING:
    from rosenblatt.transforms._base import ConditionalCDFTransform
    from rosenblatt.transforms.selection import Selection

__all__ = [
    "COARSE_CUT_MESSAGE",
    "MIN_BINS_BEYOND_CUT",
    "check_levels",
    "coarse_cut_note",
    "cut_depth",
    "fit_options",
    "inner_levels",
    "read_fit_options",
    "select_depth",
    "unresolved_levels",
]

#: ``y`` bins of a column's conditional probability that must lie beyond every cut level,
#: on either side, for IRGI's grid to resolve the cut (see the module)
MIN_BINS_BEYOND_CUT = 2.0

#: the start of :func:`coarse_cut_note`'s warning, as a pattern of :func:`warnings.filterwarnings`:
#: a study that reports the note once silences the warning of each of its fits
COARSE_CUT_MESSAGE = "IRGI .* bins beyond the cut"


def check_levels(levels: Any) -> tuple[float, ...]:
    """``cut_levels`` as floats, each in ``[0, 1]``."""
    try:
        values = tuple(float(level) for level in levels)
    except (TypeError, ValueError) as err:
        msg = f"cut_levels must be numbers in [0, 1], got {levels!r}"
        raise ValueError(msg) from err
    if not all(0.0 <= level <= 1.0 for level in values):
        msg = f"cut_levels must be numbers in [0, 1], got {list(values)}"
        raise ValueError(msg)
    return values


def inner_levels(levels: Any) -> tuple[float, ...] | None:
    """The levels of ``cut_levels`` in ``(0, 1)``, checked; ``None`` where there is none."""
    if levels is None:
        return None
    inner = tuple(level for level in check_levels(levels) if 0.0 < level < 1.0)
    return inner or None


def cut_depth(levels: Any) -> int:
    """Smallest depth whose ``2**depth`` bins put :data:`MIN_BINS_BEYOND_CUT` beyond every level.

    Only the levels in ``(0, 1)`` count (a cut at 0 or 1 passes all or none);
    0 where there is none.
    """
    inner = [min(level, 1.0 - level) for level in check_levels(levels) if 0.0 < level < 1.0]
    if not inner:
        return 0
    return max(0, math.ceil(math.log2(MIN_BINS_BEYOND_CUT / min(inner)) - 1e-9))


def unresolved_levels(levels: Any, bins: int) -> tuple[float, ...]:
    """The levels that ``bins`` equal-occupancy ``y`` bins do not resolve."""
    return tuple(
        level
        for level in check_levels(levels)
        if 0.0 < level < 1.0 and bins * min(level, 1.0 - level) < MIN_BINS_BEYOND_CUT * (1.0 - 1e-9)
    )


def coarse_cut_note(unresolved: tuple[float, ...], grid: str, *, n_train: int | None = None) -> str:
    """The warning of a grid (described by ``grid``) that does not resolve the levels ``unresolved``.

    ``n_train`` is the size of a training fold of ``depth="auto"``: where it
    supports the depth that resolves the levels, neither a fold nor the
    whole sample could fit a resolving depth, and the note says so.
    """
    needed = cut_depth(unresolved)
    levels = ", ".join(f"{level:g}" for level in unresolved)
    start = (
        f"IRGI {grid} puts fewer than {MIN_BINS_BEYOND_CUT:g} bins beyond the cut level(s) "
        f"{levels}, where gamma is interpolated across its last bin and an ABCD estimate is "
        "biased; "
    )
    if n_train is not None and max_depth(n_train) >= needed:
        return start + (
            f"depth {needed} resolves them, but neither the whole sample nor every training "
            "fold of depth='auto' could fit a depth that does (a cell of equal summed weight "
            "held fewer than two events: uneven weights or tied values); cuts nearer the middle "
            "need fewer bins"
        )
    return start + (
        f"resolving them needs depth {needed} ({2 ** (2 * needed + 1)} defining events) "
        "or cuts nearer the middle"
    )


def select_depth(
    make: Callable[[int], ConditionalCDFTransform],
    x: FloatArray,
    y: FloatArray,
    w: FloatArray | None,
    *,
    folds: Any,
    seed: Any,
    cut_levels: Any = None,
) -> Selection:
    """Cross-validate the depths 1 to the largest a training fold supports (``make(depth)``).

    With ``cut_levels``, only the depths that resolve them, and among those
    the best-scoring whose held-out pass fraction at every level does not
    depend on ``x`` (:func:`~rosenblatt.transforms.selection.cross_validate`;
    where none passes, the best-scoring, and the selection's
    :meth:`~rosenblatt.transforms.selection.Selection.cut_note` says so);
    where a resolving depth fits the whole sample but not every training
    fold (signed weights), the smallest such depth is chosen, uncompared;
    where no depth resolves them, or none fits the weights, every depth is
    scored and the largest that fits is chosen: the finest grid the sample
    allows.
    """
    from rosenblatt.transforms.selection import (
        check_folds,
        check_seed,
        cross_validate,
        smallest_training_fold,
    )

    folds = check_folds(folds, len(x))
    seed = check_seed(seed)
    n_train = smallest_training_fold(len(x), folds)
    largest = max_depth(n_train)
    if largest < 1:
        msg = (
            f"too few events for depth='auto': a training fold of {n_train} events supports "
            f"no depth >= 1 (depth 1 needs {2**3} events); give a depth instead"
        )
        raise ValueError(msg)

    def score(depths: list[int], levels: tuple[float, ...] | None = None) -> Selection:
        return cross_validate(
            make,
            depths,
            x,
            y,
            w,
            parameter="depth",
            folds=folds,
            seed=seed,
            skip_failures=True,
            cut_levels=levels,
        )

    depths = list(range(1, largest + 1))
    if cut_levels is None:
        return score(depths)
    resolving = [d for d in depths if d >= cut_depth(cut_levels)]
    if resolving:
        try:
            return score(resolving, inner_levels(cut_levels))
        except ValueError:
            pass  # no resolving depth fits every training fold's weights
    selection = score(depths)
    return dataclasses.replace(
        selection, chosen=_fitting_depth(make, resolving, x, y, w) or max(selection.values)
    )


def _fitting_depth(
    make: Callable[[int], ConditionalCDFTransform],
    depths: list[int],
    x: FloatArray,
    y: FloatArray,
    w: FloatArray | None,
) -> int | None:
    """The smallest of ``depths`` that fits the whole sample, or ``None``.

    A depth can fit the whole sample where a training fold, short of some of
    its events, leaves a cell of equal summed weight with a single event
    (signed weights, tied values).
    """
    for depth in depths:
        try:
            make(depth).fit(x, y, w)
        except ValueError:
            continue
        return depth
    return None


def fit_options(cut_levels: Any, empty_bins: bool) -> dict[str, Any]:
    """``cut_levels`` and ``empty_bins`` for a saved state's parameters, where given."""
    options: dict[str, Any] = {}
    if cut_levels is not None:
        options["cut_levels"] = list(check_levels(cut_levels))
    if empty_bins:
        options["empty_bins"] = True
    return options


def read_fit_options(params: dict[str, Any]) -> tuple[tuple[float, ...] | None, bool]:
    """``(cut_levels, empty_bins)`` from a saved state's parameters, checked (``SchemaError``)."""
    from rosenblatt._schema import SchemaError

    levels = params.get("cut_levels")
    if levels is not None:
        try:
            levels = check_levels(levels)
        except ValueError as err:
            raise SchemaError(str(err)) from err
    empty = params.get("empty_bins", False)
    if not isinstance(empty, bool):
        msg = f"empty_bins must be true or false, got {empty!r}"
        raise SchemaError(msg)
    return levels, empty
