"""Writing fitted transforms as correctionlib (schema v2) corrections.

See :mod:`rosenblatt.correctionlib` for the layout. The tables come from
:mod:`rosenblatt.correctionlib._tables` (one transform) and
:mod:`rosenblatt.correctionlib._ensemble` (a bootstrap ensemble); this
module lays them out as correctionlib nodes and writes the document.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rosenblatt._atomic import write_text
from rosenblatt._version import __version__
from rosenblatt.correctionlib._ensemble import Ensemble, export_ensemble
from rosenblatt.correctionlib._layout import (
    DEFAULT_NAME,
    ENSEMBLE_METADATA_MARKER,
    GENERIC_FORMULAS,
    METADATA_MARKER,
    formula_ref,
    y_binning,
)
from rosenblatt.correctionlib._tables import Export, export_transform
from rosenblatt.correctionlib._vector import VectorExport, export_vector

if TYPE_CHECKING:
    import correctionlib.schemav2

    from rosenblatt.transforms._base import ConditionalCDFTransform
    from rosenblatt.transforms.tabulated import Table

__all__ = ["DEFAULT_NAME", "correctionlib_document", "to_correctionlib", "write_correctionlib"]


def _y_binning(table: Table, g: int, index: int) -> dict[str, Any]:
    """The ``y`` binning of the ``g``-th interval of ``x`` nodes."""
    return y_binning(table.y_edges[g].tolist(), table.params[g].tolist(), index)


def _data(table: Table) -> dict[str, Any]:
    """The correction's ``data`` node: the ``x`` binning of per-interval ``y`` binnings."""
    nodes = table.x_nodes
    between = [
        {
            "nodetype": "transform",
            "input": "x",
            "rule": formula_ref(1, [float(lo), float(hi - lo)]),
            "content": _y_binning(table, k + 1, 0),
        }
        for k, (lo, hi) in enumerate(itertools.pairwise(nodes))
    ]
    return {
        "nodetype": "binning",
        "input": "x",
        "edges": ["-inf", *nodes.tolist(), "inf"],
        "content": [
            _y_binning(table, 0, 2),
            *between,
            _y_binning(table, len(nodes), 2),
        ],
        "flow": "clamp",
    }


def _correction(export: Export, name: str) -> dict[str, Any]:
    metadata = json.dumps(export.metadata, allow_nan=False, separators=(",", ":"))
    inputs = [
        {
            "name": "x",
            "type": "real",
            "description": "protected observable (e.g. dijet mass in GeV)",
        },
        {"name": "y", "type": "real", "description": "classifier score"},
    ]
    marker, data = METADATA_MARKER, _data(export.table)
    if export.variations:
        marker = ENSEMBLE_METADATA_MARKER
        inputs.append(
            {
                "name": "variation",
                "type": "string",
                "description": "'nominal', 'up', 'down' (+- 1 bootstrap sd) or 'replica_<k>'",
            }
        )
        data = {
            "nodetype": "category",
            "input": "variation",
            "content": [
                {"key": key, "value": _data(table)} for key, table in export.variations.items()
            ],
        }
    return {
        "name": name,
        "description": f"{export.description}\n{marker}{metadata}",
        "version": 1,
        "inputs": inputs,
        "output": {"name": "gamma", "type": "real", "description": "decorrelated score in [0, 1]"},
        "generic_formulas": [dict(f) for f in GENERIC_FORMULAS],
        "data": data,
    }


def _several_observables(transform: Any) -> bool:
    """Whether ``transform`` is a fitted transform of several protected observables."""
    from rosenblatt.transforms._base import ConditionalCDFTransform

    return (
        isinstance(transform, ConditionalCDFTransform)
        and transform.is_fitted()
        and transform.x_dims > 1
    )


def _build(
    transform: ConditionalCDFTransform,
    name: str,
    *,
    tolerance: float = 1e-3,
    x_step: float = 0.5,
    n_check: int = 100_000,
    max_x_nodes: int = 20_000,
    max_bins: int = 2_000_000,
    progress: bool = False,
    seed: int = 0,
    envelope_refine: int = 2,
    x_nodes: int | None = None,
    y_nodes: int | None = None,
) -> tuple[dict[str, Any], Export | VectorExport]:
    if not isinstance(name, str) or not name.strip():
        msg = f"name must be a non-empty string, got {name!r}"
        raise ValueError(msg)
    options: dict[str, Any] = {
        "tolerance": tolerance,
        "x_step": x_step,
        "n_check": n_check,
        "max_x_nodes": max_x_nodes,
        "max_bins": max_bins,
        "progress": progress,
        "seed": seed,
    }
    export: Export | VectorExport
    if isinstance(transform, Ensemble):
        export = export_ensemble(transform, envelope_refine=envelope_refine, **options)
        correction = _correction(export, name)
    elif _several_observables(transform):
        export = export_vector(
            transform,
            n_check=n_check,
            max_bins=max_bins,
            seed=seed,
            x_nodes=x_nodes,
            y_nodes=y_nodes,
        )
        correction = export.correction(name)
    else:
        export = export_transform(transform, **options)
        correction = _correction(export, name)
    document = {
        "schema_version": 2,
        "description": f"Rosenblatt transform written by rosenblatt {__version__}",
        "corrections": [correction],
    }
    return document, export


def correctionlib_document(
    transform: ConditionalCDFTransform, name: str = DEFAULT_NAME, **options: Any
) -> dict[str, Any]:
    """Return the correctionlib (schema v2) document of a fitted transform as plain data.

    Parameters
    ----------
    transform
        A fitted transform that provides a grid of columns (written exactly),
        a staircase in ``y`` (tabulated within ``tolerance``), a
        :class:`~rosenblatt.transforms.tabulated.TabulatedTransform` read from
        such a file (written again as read), or a bootstrap ensemble of grid
        transforms: then the correction has a third, string input
        ``variation``, a ``category`` node over one table per variation, each
        built as for the transform alone: ``"nominal"``, ``"replica_<k>"`` and
        ``"up"`` / ``"down"`` (the nominal plus or minus the replicas' standard
        deviation, clipped to ``[0, 1]``, tabulated at the nominal's grid
        vertices and linear between them; the largest and RMS difference to
        the exact envelope measured on the check points is written in the
        description and under ``envelope_error`` in the metadata line, which
        starts with ``rosenblatt-ensemble-metadata:``).
    name
        Name of the correction in the set.
    **options
        ``tolerance`` (staircases only, default 1e-3): largest difference
        allowed between the table and the transform; the table is refined
        until the difference measured on the check points is below it, and a
        smaller tolerance makes a larger file. ``x_step`` (staircases only,
        default 0.5): starting spacing of the ``x`` nodes in units of the
        staircase's ``x_scale`` (a kernel width). ``n_check`` (default
        100000): number of points on which the difference to the transform is
        measured and written in the description. ``max_x_nodes`` (staircases
        only, default 20000), ``max_bins`` (default 2000000): limits on the
        table, beyond which export is an error. ``progress``: show a
        progress bar while tabulating a staircase. ``seed``: seed of the check
        points. ``envelope_refine`` (ensembles only, default 2): the ``up``
        and ``down`` tables have ``envelope_refine - 1`` more columns between
        neighbouring columns of the nominal and as many more ``y`` values
        between neighbouring edges, for a smaller error (about
        ``envelope_refine**2`` times the bins). ``x_nodes``, ``y_nodes``
        (transforms of several observables only): tabulate on a regular grid
        of ``x_nodes`` nodes per axis and ``y_nodes`` values of ``y`` per node
        (default 25 and 129 for two observables, 11 and 65 for three); a
        GridKDE or an IRGI is written exactly unless one of them is given.

    Notes
    -----
    A transform fitted on ``k`` observables (``k = 2, 3``) is written as a
    correction of the inputs ``x1, ..., xk`` and ``y`` (see
    :mod:`rosenblatt.correctionlib`): a GridKDE exactly (to rounding; the
    file holds about 250 bytes per bin for ``k = 2``, 400 for ``k = 3``, and
    a GridKDE(0.3) on 10**5 events of two observables 211 MB) and an IRGI's
    nested cells exactly, unless ``x_nodes`` or ``y_nodes`` is given; any
    other transform (KDE) tabulated on a regular grid, with the largest and
    RMS difference measured on ``n_check`` points written in its description. ``tolerance`` does not
    apply to them.

    ``json.dumps`` of this document writes numbers that correctionlib may
    read up to 2 units in the last place off; :func:`write_correctionlib`
    writes them in forms it reads exactly.
    """
    return _build(transform, name, **options)[0]


def to_correctionlib(
    transform: ConditionalCDFTransform, name: str = DEFAULT_NAME, **options: Any
) -> correctionlib.schemav2.CorrectionSet:
    """Return a fitted transform as a validated correctionlib ``CorrectionSet``.

    Takes the options of :func:`correctionlib_document` and needs correctionlib
    (the ``correctionlib`` extra). Evaluate files written by
    :func:`write_correctionlib` for values exact to rounding: correctionlib
    may read the bin edges of the model's own JSON up to 2 units in the last
    place off.
    """
    import correctionlib.schemav2 as cs

    return cs.CorrectionSet.model_validate(correctionlib_document(transform, name, **options))


def write_correctionlib(
    transform: ConditionalCDFTransform, path: str | Path, name: str = DEFAULT_NAME, **options: Any
) -> dict[str, Any]:
    """Write a fitted transform to ``path`` as a correctionlib JSON file.

    Takes the options of :func:`correctionlib_document`; needs no
    correctionlib. Bin edges and formula offsets are written in decimal forms
    that correctionlib reads exactly.

    Returns
    -------
    dict
        The metadata written in the correction's description (kind, number of
        bins, measured max error, ...).
    """
    document, export = _build(transform, name, **options)
    text = json.dumps(document, allow_nan=False, separators=(",", ":"))
    text = export.numbers.dumps(text, export.positions())
    write_text(path, text)
    return dict(export.metadata)
