"""The correctionlib tables of a bootstrap ensemble of grid transforms.

An ensemble (a transform with ``nominal_``, ``replicas_``, ``std()`` and the
``variation`` of ``transform()``, see :class:`Ensemble`) is written as one
table per variation: ``"nominal"`` and ``"replica_<k>"`` each as the member
alone, ``"up"`` and ``"down"`` tabulated on the nominal's grid refined.
"""

from __future__ import annotations

import itertools
from typing import Any, ClassVar, Protocol, runtime_checkable

import numpy as np

from rosenblatt._validation import check_int
from rosenblatt._version import __version__
from rosenblatt.correctionlib._layout import ENSEMBLE_LAYOUT, LAYOUT_VERSION
from rosenblatt.correctionlib._numbers import ExactNumbers
from rosenblatt.correctionlib._tables import (
    Export,
    check_points,
    check_readable,
    export_transform,
    grid_columns,
    table_of_columns,
)
from rosenblatt.transforms._base import ConditionalCDFTransform, NaNPolicy
from rosenblatt.transforms._column_grid import ColumnGridTransform
from rosenblatt.transforms.tabulated import Table, evaluate
from rosenblatt.typing import BoolArray, FloatArray

__all__ = ["Ensemble", "export_ensemble"]


@runtime_checkable
class Ensemble(Protocol):
    """A transform with bootstrap replicas: what the export of an ensemble reads of it."""

    kind: ClassVar[str]
    nominal_: ConditionalCDFTransform
    replicas_: list[ConditionalCDFTransform]
    seed: int
    n_events_: int
    sum_weight_: float

    @property
    def n_refits_(self) -> int:
        """Draws that failed to fit and were replaced."""
        ...

    @property
    def variation_names(self) -> list[str]:
        """``"nominal"``, ``"up"``, ``"down"`` and ``"replica_<k>"``."""
        ...

    def transform(
        self, x: Any, y: Any, *, variation: str = ..., nan_policy: NaNPolicy = ...
    ) -> Any:
        """``gamma`` of the nominal or of a variation."""
        ...

    def std(self, x: Any, y: Any) -> Any:
        """Standard deviation of the replicas' ``gamma`` at each event."""
        ...


def export_ensemble(
    ensemble: Ensemble,
    *,
    n_check: int,
    max_bins: int,
    seed: int,
    envelope_refine: int,
    **options: Any,
) -> Export:
    """The tables of an ensemble of grid transforms: nominal, up, down and every replica.

    Each member is tabulated as :func:`export_transform` tabulates it alone; ``up`` and
    ``down`` by :func:`_envelope_tables`.
    """
    nominal = ensemble.nominal_
    if not isinstance(nominal, ColumnGridTransform):
        msg = (
            f"an ensemble of {type(nominal).__name__} cannot be exported: correctionlib "
            "ensembles are written for grid transforms (a grid of columns)"
        )
        raise TypeError(msg)
    check_int(envelope_refine, "envelope_refine", low=1, high=64)
    members = [nominal, *ensemble.replicas_]
    exports = [
        export_transform(m, n_check=n_check, max_bins=max_bins, seed=seed, **options)
        for m in members
    ]
    up, down, envelope_errors = _envelope_tables(ensemble, nominal, envelope_refine, n_check, seed)
    variations = {"nominal": exports[0].table, "up": up, "down": down}
    variations.update({f"replica_{k}": e.table for k, e in enumerate(exports[1:])})
    for name in ("up", "down"):
        if variations[name].n_bins > max_bins:
            msg = (
                f"the {name} table has {variations[name].n_bins} bins, more than max_bins = "
                f"{max_bins}; use a smaller envelope_refine"
            )
            raise ValueError(msg)
    numbers = ExactNumbers()
    inexact = sum(check_readable(table, numbers) for table in (up, down))
    metadata = _metadata(ensemble, exports, variations, envelope_refine, envelope_errors, n_check)
    metadata["inexact_numbers"] += inexact
    description = _description(exports, envelope_refine, envelope_errors, n_check)
    return Export(exports[0].table, metadata, description, numbers, variations)


def _metadata(
    ensemble: Ensemble,
    exports: list[Export],
    variations: dict[str, Table],
    envelope_refine: int,
    envelope_errors: dict[str, dict[str, float]],
    n_check: int,
) -> dict[str, Any]:
    """The metadata line of the ensemble's correction (its members' inexact numbers counted)."""
    return {
        "layout": ENSEMBLE_LAYOUT,
        "layout_version": LAYOUT_VERSION,
        "written_by": f"rosenblatt {__version__}",
        "kind": ensemble.kind,
        "member_kind": exports[0].metadata["kind"],
        "params": exports[0].metadata["params"],
        "n_replicas": len(ensemble.replicas_),
        "seed": int(ensemble.seed),
        "n_refits": ensemble.n_refits_,
        "domain": exports[0].metadata["domain"],
        "n_events": int(ensemble.n_events_),
        "sum_weight": float(ensemble.sum_weight_),
        "n_bins": sum(table.n_bins for table in variations.values()),
        "max_abs_error": max(float(e.metadata["max_abs_error"]) for e in exports),
        "envelope_refine": envelope_refine,
        "envelope_error": envelope_errors,
        "n_check_points": n_check,
        "inexact_numbers": sum(int(e.metadata["inexact_numbers"]) for e in exports),
    }


def _description(
    exports: list[Export],
    envelope_refine: int,
    envelope_errors: dict[str, dict[str, float]],
    n_check: int,
) -> str:
    """The nominal's description, followed by what each variation holds and its error."""
    member_error = max(float(e.metadata["max_abs_error"]) for e in exports)
    grid = (
        "at the nominal's grid vertices"
        if envelope_refine == 1
        else f"on the nominal's grid refined {envelope_refine} times in x and in y"
    )
    return (
        f"{exports[0].description} The string input 'variation' chooses the table: "
        f"'nominal'; 'replica_<k>' (k = 0..{len(exports) - 2}), the transform fitted with "
        "Poisson(1) event weights of bootstrap draw k, each tabulated as the nominal (measured "
        f"max |gamma - rosenblatt| over all = {member_error:.3g}); 'up' and 'down', the nominal "
        "plus and minus the replicas' standard deviation of gamma per event, clipped to "
        f"[0, 1], tabulated {grid} and linear between vertices (measured max |difference to "
        f"the exact envelope| = {envelope_errors['up']['max_abs_error']:.3g} up, "
        f"{envelope_errors['down']['max_abs_error']:.3g} down, RMS "
        f"{envelope_errors['up']['rms_error']:.3g} and {envelope_errors['down']['rms_error']:.3g}, "
        f"on {n_check} points)."
    )


def _envelope_tables(
    ensemble: Ensemble, nominal: ColumnGridTransform, refine: int, n_check: int, seed: int
) -> tuple[Table, Table, dict[str, dict[str, float]]]:
    """The ``up`` and ``down`` tables, and their differences to the exact envelope.

    The vertices are the nominal's grid, with ``refine - 1`` columns added
    between neighbouring columns and ``refine - 1`` values of ``y`` between
    neighbouring edges. The nominal is linear between them, so the tables
    hold it exactly (its steps included); the replicas' standard deviation is
    interpolated linearly between vertices, which is the approximation. The
    tables are not made monotone in ``y``: they follow the envelope.
    """
    (_, _), (_, y_hi) = nominal.domain_
    centres, y_edges, _ = nominal.column_table()
    nodes, columns = _refined_grid(centres, y_edges, refine)
    x = np.repeat(nodes, [len(edges) for edges, _ in columns])
    y = np.concatenate(
        [np.where(left, np.nextafter(edges, -np.inf), edges) for edges, left in columns]
    )
    gamma = np.asarray(ensemble.transform(x, y))
    spread = np.asarray(ensemble.std(x, y))
    bounds = np.cumsum([0, *(len(edges) for edges, _ in columns)])
    x_check, y_check = check_points(nominal, n_check, seed)
    tables, errors = [], {}
    for name, sign in (("up", 1.0), ("down", -1.0)):
        values = np.clip(gamma + sign * spread, 0.0, 1.0)
        rows = [values[lo:hi] for lo, hi in itertools.pairwise(bounds)]
        table = table_of_columns(
            nodes, grid_columns([edges for edges, _ in columns], rows, y_hi), y_hi
        )
        exact = ensemble.transform(x_check, y_check, variation=name)
        difference = evaluate(table, x_check, y_check) - exact
        errors[name] = {
            "max_abs_error": float(np.max(np.abs(difference), initial=0.0)),
            "rms_error": float(np.sqrt(np.mean(difference**2))),
        }
        tables.append(table)
    return tables[0], tables[1], errors


def _refined_grid(
    centres: FloatArray, y_edges: FloatArray, refine: int
) -> tuple[FloatArray, list[tuple[FloatArray, BoolArray]]]:
    """``x`` nodes and, per node, its ``y`` vertices and which of them are left limits.

    A node on a column centre has that column's edges, a node between two
    centres the edges of both; ``refine - 1`` values are added between
    neighbouring edges. An edge where the grid steps (a tied edge) is written
    twice, first as a left limit; so is the upper end of the domain.
    """
    nodes: list[float] = []
    columns = []
    for k, centre in enumerate(centres):
        nodes.append(float(centre))
        columns.append(_refined_edges([y_edges[k]], refine))
        if k + 1 < len(centres):
            shared = _refined_edges([y_edges[k], y_edges[k + 1]], refine)
            step = (centres[k + 1] - centre) / refine
            for j in range(1, refine):
                nodes.append(float(centre + j * step))
                columns.append(shared)
    return np.array(nodes), columns


def _refined_edges(rows: list[FloatArray], refine: int) -> tuple[FloatArray, BoolArray]:
    """The union of the edges of ``rows``, refined; ties and the top doubled as left limits."""
    values = np.unique(np.concatenate(rows))
    fractions = np.arange(1, refine) / refine
    inner = (values[:-1, None] + np.diff(values)[:, None] * fractions[None, :]).ravel()
    points = np.unique(np.concatenate((values, inner)))
    steps = np.concatenate([row[1:][row[1:] == row[:-1]] for row in rows])
    doubled = np.isin(points, steps)
    doubled[-1] = True
    edges = np.sort(np.concatenate((points, points[doubled])), kind="stable")
    left = np.zeros(len(edges), dtype=bool)
    left[np.searchsorted(edges, points[doubled], side="left")] = True
    return edges, left
