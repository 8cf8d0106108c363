"""A toy grid transform defined outside the package: ``Y`` given ``X = c`` uniform on ``[c, c + 1]``.

It is a :class:`~rosenblatt.transforms._column_grid.ColumnGridTransform` whose
columns hold the exact conditional CDF ``clip(y - c, 0, 1)`` at evenly spaced
``x`` nodes ``c`` over the defining sample's range; between nodes ``gamma`` is
interpolated linearly in ``x``. Defining it registers the kind ``"toy_test"``;
nothing else in rosenblatt names it.
"""

from __future__ import annotations

import numbers
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from rosenblatt._schema import SchemaError, check_domain
from rosenblatt.transforms._column_grid import ColumnGridTransform

__all__ = ["ShiftedUniform"]


class ShiftedUniform(ColumnGridTransform):
    """``gamma(c, y) = clip(y - c, 0, 1)`` on ``n_columns`` nodes ``c``, linear in ``x`` between them.

    Parameters
    ----------
    n_columns
        Number of ``x`` nodes, at least 2.
    """

    kind: ClassVar[str] = "toy_test"

    def __init__(self, n_columns: int = 5) -> None:
        self.n_columns = n_columns

    def __repr__(self) -> str:
        return f"ShiftedUniform(n_columns={self.n_columns!r})"

    def _fit(
        self, x: NDArray[np.float64], y: NDArray[np.float64], w: NDArray[np.float64] | None
    ) -> None:
        self._set_grid(float(x.min()), float(x.max()))

    def _set_grid(self, x_lo: float, x_hi: float) -> None:
        n = self.n_columns
        if isinstance(n, bool) or not isinstance(n, numbers.Integral) or n < 2:
            msg = f"n_columns must be an integer >= 2, got {n!r}"
            raise ValueError(msg)
        y_lo, y_hi = x_lo, x_hi + 1.0
        centres = np.linspace(x_lo, x_hi, int(n))
        self.domain_ = ((x_lo, x_hi), (y_lo, y_hi))
        self.x_centres_ = centres
        self.y_edges_ = np.column_stack(
            (np.full(n, y_lo), centres, centres + 1.0, np.full(n, y_hi))
        )
        self.cdf_ = np.tile([0.0, 0.0, 1.0, 1.0], (int(n), 1))

    def describe(self) -> str:
        """The number of columns and the shape of ``gamma``."""
        return f"shifted uniform on {self.n_columns} columns, linear in y and in x between them"

    def fitted_params(self) -> dict[str, Any]:
        """The number of columns."""
        return {"n_columns": int(self.n_columns)}

    def get_state(self) -> dict[str, Any]:
        """The number of columns, the domain and the defining sample's size."""
        self._check_fitted()
        return {
            "params": {"n_columns": int(self.n_columns)},
            "domain": [list(axis) for axis in self.domain_],
            "n_events": int(self.n_events_),
            "sum_weight": float(self.sum_weight_),
        }

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> ShiftedUniform:
        """Rebuild the grid from the number of columns and the ``x`` domain, checking both."""
        obj = cls(n_columns=state["params"]["n_columns"])
        (x_lo, x_hi), (y_lo, y_hi) = check_domain(state["domain"])
        try:
            obj._set_grid(x_lo, x_hi)
        except ValueError as err:
            raise SchemaError(str(err)) from err
        if (y_lo, y_hi) != obj.domain_[1]:
            msg = f"the y domain {[y_lo, y_hi]} is not the x domain shifted by [0, 1]"
            raise SchemaError(msg)
        obj.n_events_ = int(state["n_events"])
        obj.sum_weight_ = float(state["sum_weight"])
        return obj
