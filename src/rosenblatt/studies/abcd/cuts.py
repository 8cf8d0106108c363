"""The ``abcd:`` section of the ABCD study's configuration: the cut grid and the observable.

``AbcdCuts`` is declared field by field (:mod:`rosenblatt.studies.config_fields`);
the checks that involve several keys (the grid from ``[low, high]`` and ``n_x0``,
the chosen cut added to it) run after the fields are read.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Mapping
from typing import Any

import numpy as np

from rosenblatt.studies.config_checks import (
    check_keys,
)
from rosenblatt.studies.config_checks import count as _count
from rosenblatt.studies.config_checks import fail as _fail
from rosenblatt.studies.config_checks import mapping as _mapping
from rosenblatt.studies.config_checks import number as _number
from rosenblatt.studies.config_fields import (
    config_dataclass,
    option,
    parse_dataclass,
)

__all__ = ["AbcdCuts"]

#: the most cut values of one axis of the ABCD grid
MAX_CUTS = 10_000


def _cut_list(value: Any, source: str, key: str) -> tuple[float, ...]:
    """A list of at least two cut values (numbers)."""
    if not isinstance(value, (list, tuple)) or len(value) < 2:
        raise _fail(source, key, f"must be a list of at least two cut values, got {value!r}")
    return tuple(_number(v, source, key) for v in value)


def _score_cuts(value: Any, source: str, key: str) -> tuple[float, ...] | None:
    """``abcd.score_y0``: increasing cuts on the raw score, or ``None``."""
    if value is None:
        return None
    return _increasing(list(_cut_list(value, source, key)), source, key)


def _n_cuts(value: Any, source: str, key: str) -> int:
    return _count(value, source, key, 2, MAX_CUTS)


def _optional_number(value: Any, source: str, key: str) -> float | None:
    return None if value is None else _number(value, source, key)


def _chosen_cut(value: Any, source: str, key: str) -> tuple[float, float] | None:
    """``abcd.cut``: ``{x0, y0}`` of the cut reported, ``y0`` in (0, 1), or ``None``."""
    if value is None:
        return None
    given = _mapping(value, source, key)
    if set(given) != {"x0", "y0"}:
        raise _fail(source, key, f"give x0 and y0, got {sorted(map(str, given))}")
    cut = (_number(given["x0"], source, f"{key}.x0"), _number(given["y0"], source, f"{key}.y0"))
    if not 0.0 < cut[1] < 1.0:
        raise _fail(
            source, f"{key}.y0", f"a cut on the transformed score lies in (0, 1), got {cut[1]!r}"
        )
    return cut


def as_written(value: Any, source: str, key: str) -> Any:
    """A value read later (``abcd.x``: a quantity, parsed with the file's folder and jets)."""
    return value


@config_dataclass
class AbcdCuts:
    """The ABCD cut grid: ``x0`` and ``y0`` cut values, the observable and its upper limit.

    ``x0`` and ``y0`` are lists of cut values, or ``[low, high]`` with
    ``n_x0``/``n_y0`` cuts between them; :meth:`parse` gives the grid itself.
    """

    x: Any = option(
        default="mjj",
        doc="the observable x the score is decorrelated from: a quantity (branch, jet "
        "feature, function)",
        check=as_written,
        type="quantity",
    )
    x0: tuple[float, ...] = option(
        default=(),
        doc="the cuts on x: a list of increasing values, or [low, high] with n_x0",
        check=_cut_list,
        type="list of numbers",
        default_doc="required",
    )
    n_x0: int | None = option(
        default=None,
        doc="cuts on x between x0's [low, high]",
        check=_n_cuts,
        type="integer in [2, 10000]",
        default_doc="none: x0 lists every cut",
    )
    y0: tuple[float, ...] = option(
        default=(),
        doc="the cuts on the transformed score, in [0, 1]: a list, or [low, high] with n_y0",
        check=_cut_list,
        type="list of numbers",
        default_doc="required",
    )
    n_y0: int | None = option(
        default=None,
        doc="cuts on the transformed score between y0's [low, high]",
        check=_n_cuts,
        type="integer in [2, 10000]",
        default_doc="none: y0 lists every cut",
    )
    score_y0: tuple[float, ...] | None = option(
        default=None,
        doc="cuts on the raw score, for the ABCD closure without a transform",
        check=_score_cuts,
        type="list of numbers or null",
    )
    x_max: float | None = option(
        default=None,
        doc="the upper limit of x: events at or above it are neither filled nor used to fit "
        "the transforms (counted in the cut flow as x above x_max)",
        check=_optional_number,
    )
    cut: tuple[float, float] | None = option(
        default=None,
        doc="the cut reported, {x0, y0} (added to the grid), y0 in (0, 1)",
        check=_chosen_cut,
        type="{x0: number, y0: number} or null",
        default_doc="the cut chosen on simulation: of largest expected significance where the "
        "background simulation closes and sums above zero in each region",
    )
    x_axis: tuple[str | None, str | None] = option(
        default=(None, None),
        doc='{label, unit} of x on the figures\' axes (label: "$m_{jj}$", unit: TeV), each '
        "optional: a built-in quantity has its symbol and unit (GeV for mjj, mj1, mj2, "
        "pt_j1), another its name and no unit",
        check=lambda value, source, key: _x_axis(value, source),
        type="{label: text, unit: text} (mathtext)",
        default_doc="the quantity's own",
    )

    @property
    def x_label(self) -> str:
        """How ``x`` is written, for histogram axes and tables."""
        return (
            self.x if isinstance(self.x, str) else ", ".join(f"{k}: {v}" for k, v in self.x.items())
        )

    @property
    def x_axis_label(self) -> str:
        """The figures' label of ``x`` with its unit (``x_axis: {label, unit}``, else the built-in's)."""
        from rosenblatt.plotting import quantity_label

        label, unit = self.x_axis
        return quantity_label(self.x_label, label=label, unit=unit)

    @classmethod
    def parse(cls, value: Any, source: str) -> AbcdCuts:
        """Validate ``abcd:``; ``x0``/``y0`` are lists, or ``[low, high]`` with ``n_x0``/``n_y0``."""
        given = _mapping(value, source, "abcd")
        cuts: AbcdCuts = parse_dataclass(cls, given, source, "abcd")
        return cuts.with_grid(given, source)

    def with_grid(self, given: Mapping[str, Any], source: str) -> AbcdCuts:
        """These cuts with ``x0``/``y0`` the grid itself (``n_x0``/``n_y0`` spread, the cut added).

        ``given`` is ``abcd:`` as written, for the messages.
        """
        grids = {}
        for axis, n in (("x0", self.n_x0), ("y0", self.n_y0)):
            numbers = list(getattr(self, axis))
            if not numbers:
                raise _fail(
                    source, f"abcd.{axis}", "must be a list of at least two cut values, got None"
                )
            if n is not None:
                if len(numbers) != 2:
                    raise _fail(
                        source,
                        f"abcd.{axis}",
                        f"with n_{axis}, give [low, high], got {given[axis]!r}",
                    )
                numbers = list(np.linspace(numbers[0], numbers[1], n))
            grids[axis] = _increasing(numbers, source, f"abcd.{axis}")
        if any(not 0.0 <= v <= 1.0 for v in grids["y0"]):
            raise _fail(
                source,
                "abcd.y0",
                "cuts on the transformed score lie in [0, 1], got "
                f"[{', '.join(f'{v:g}' for v in grids['y0'])}]",
            )
        if self.cut is not None:
            grids["x0"] = tuple(sorted({*grids["x0"], self.cut[0]}))
            grids["y0"] = tuple(sorted({*grids["y0"], self.cut[1]}))
        return dataclasses.replace(self, x0=grids["x0"], y0=grids["y0"])


def _x_axis(value: Any, source: str) -> tuple[str | None, str | None]:
    """``abcd.x_axis``: ``{label, unit}`` of ``x`` in the figures, each optional."""
    if value is None:
        return (None, None)
    entry = dict(_mapping(value, source, "abcd.x_axis"))
    check_keys(entry, {"label", "unit"}, source, "abcd.x_axis")
    for key in ("label", "unit"):
        given = entry.get(key)
        if given is not None and not isinstance(given, str):
            raise _fail(source, f"abcd.x_axis.{key}", f"must be text, got {given!r}")
        if given is not None and (problem := _mathtext_problem(given)):
            raise _fail(source, f"abcd.x_axis.{key}", f"{given!r} is no valid mathtext: {problem}")
    return (entry.get("label"), entry.get("unit"))


def _mathtext_problem(text: str) -> str | None:
    """Why matplotlib cannot draw ``text`` (``$...$`` is mathtext), or None."""
    dollars = text.count("$") - text.count(r"\$")
    if dollars == 0 or dollars % 2:
        return None
    try:
        from matplotlib.mathtext import MathTextParser
    except ImportError:
        return None
    try:
        MathTextParser("path").parse(text)
    except ValueError as error:
        return str(error).strip().splitlines()[-1]
    return None


def _increasing(values: list[float], source: str, key: str) -> tuple[float, ...]:
    """Cut values, checked strictly increasing."""
    if any(b <= a for a, b in itertools.pairwise(values)):
        raise _fail(source, key, f"cut values must increase, got {[float(v) for v in values]}")
    return tuple(float(v) for v in values)
