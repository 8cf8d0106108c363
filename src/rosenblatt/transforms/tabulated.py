"""The transform read back from a correctionlib file written by rosenblatt.

The file holds ``gamma`` as a :class:`Table` of bins (see
:mod:`rosenblatt.correctionlib` for the layout); :func:`evaluate` computes
it as correctionlib does, with the same bins and the same arithmetic.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from rosenblatt.transforms._base import ConditionalCDFTransform, _reader, _writer
from rosenblatt.typing import FloatArray

__all__ = ["Table", "TabulatedTransform", "evaluate"]


@dataclasses.dataclass(frozen=True)
class Table:
    """The bins of a correction in the rosenblatt layout: what is written, read and evaluated.

    ``gamma`` is tabulated on ``x`` nodes; below the first, between each two
    neighbours and above the last, a group of ``y`` bins holds per bin the
    parameters of a formula linear in ``y`` (and, between nodes, linear in
    ``x``), whose last parameter is the bin's lower edge.
    """

    x_nodes: FloatArray
    #: per group (below x_0, each interval between nodes, above x_n): finite y edges
    y_edges: list[FloatArray]
    #: per group: (bins, 3) for the outer groups, (bins, 5) between nodes
    params: list[FloatArray]

    @property
    def n_bins(self) -> int:
        """Number of bins in all groups."""
        return sum(len(p) for p in self.params)

    @property
    def y_range(self) -> tuple[float, float]:
        """The ``y`` domain: the first and last edge of every group."""
        return float(self.y_edges[0][0]), float(self.y_edges[0][-1])


def evaluate(table: Table, x: FloatArray, y: FloatArray) -> FloatArray:
    """Evaluate the table as correctionlib does (same bins, same arithmetic)."""
    nodes = table.x_nodes
    out = np.empty(len(x))
    group = np.searchsorted(nodes, x, side="right")
    order = np.argsort(group, kind="stable")
    bounds = np.searchsorted(group[order], np.arange(len(nodes) + 2))
    for g in range(len(nodes) + 1):
        index = order[bounds[g] : bounds[g + 1]]
        if len(index) == 0:
            continue
        edges, params = table.y_edges[g], table.params[g]
        yg = y[index]
        where = np.searchsorted(edges, yg, side="right")
        values = np.where(where == 0, 0.0, 1.0)
        inside = (where > 0) & (where < len(edges))
        p = params[where[inside] - 1]
        dy = yg[inside] - p[:, -1]
        if g in (0, len(nodes)):
            values[inside] = p[:, 0] + p[:, 1] * dy
        else:
            lo = nodes[g - 1]
            t = (x[index][inside] - lo) / (nodes[g] - lo)
            values[inside] = (1 - t) * (p[:, 0] + p[:, 1] * dy) + t * (p[:, 2] + p[:, 3] * dy)
        out[index] = values
    return out


class TabulatedTransform(ConditionalCDFTransform, register=False):
    """A transform read from a correctionlib file written by rosenblatt.

    Evaluates the file's bins exactly as correctionlib does, so that
    :meth:`transform` equals the correction's values to rounding: for an
    exported IRGI these are the IRGI's values, for a KDE its table. It cannot
    be fitted; :meth:`save` writes the correctionlib file again, which
    :func:`rosenblatt.load` reads, so it has no ``kind`` of the JSON format
    (``register=False``).

    Attributes
    ----------
    name_ : str
        Name of the correction.
    source_kind_ : str
        The ``kind`` of the exported transform (``"irgi"``, ``"kde"``, ...).
    metadata_ : dict
        The metadata of the file (parameters, measured error, ...).
    max_abs_error_ : float
        Largest difference to the exported transform measured at export.
    x_nodes_ : numpy.ndarray
        The ``x`` nodes (column centres).
    """

    kind: ClassVar[str] = "tabulated"
    fittable: ClassVar[bool] = False

    table_: Table
    name_: str
    source_kind_: str
    metadata_: dict[str, Any]
    description_: str
    max_abs_error_: float

    def __repr__(self) -> str:
        if not self.is_fitted():
            return "TabulatedTransform()"
        return f"TabulatedTransform(name={self.name_!r}, source_kind={self.source_kind_!r})"

    @property
    def x_nodes_(self) -> FloatArray:
        """The ``x`` nodes of the table."""
        return self.table_.x_nodes

    def _fit(self, x: FloatArray, y: FloatArray, w: FloatArray | None) -> None:
        msg = (
            "a TabulatedTransform is read from a correctionlib file and cannot be fitted; "
            "fit an IRGI or KDE"
        )
        raise TypeError(msg)

    def _transform(self, x: FloatArray, y: FloatArray) -> FloatArray:
        return evaluate(self.table_, x, y)

    def save(self, path: str | Path) -> None:
        """Write the correctionlib file again (the table as read).

        Uses the ``"correctionlib-file"`` writer of
        :func:`~rosenblatt.transforms._base.register_writer`.
        """
        _writer("correctionlib-file")(self, path, self.name_)

    def get_state(self) -> dict[str, Any]:
        """The correctionlib document (plain JSON data)."""
        self._check_fitted()
        document: dict[str, Any] = _writer("correctionlib-document")(self, self.name_)
        return document

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> TabulatedTransform:
        """Rebuild from :meth:`get_state` output (a correctionlib document), checking it."""
        transform: TabulatedTransform = _reader("correctionlib")(state)
        return transform
