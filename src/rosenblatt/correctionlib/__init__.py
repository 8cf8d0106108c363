"""Fitted transforms as correctionlib (schema v2) corrections, and back.

correctionlib evaluates binned look-up tables and formulas in Python and C++
but has no interpolation node. A transform is written as one correction of the
inputs ``x``, ``y`` (real) and the output ``gamma``, laid out as follows:

- an ``x`` binning with edges ``-inf, c_0, ..., c_n, +inf`` over the column
  centres ``c_k``; beyond the outer centres ``gamma`` is that of the outer
  column, so ``x`` outside the domain is evaluated at the nearest edge;
- between two centres a ``transform`` node rewrites ``x`` to
  ``t = (x - c_k) / (c_(k+1) - c_k)`` in ``[0, 1)``, followed by a ``y``
  binning over the union of the two columns' ``y`` nodes, with edges
  ``-inf, y_min, ..., y_max, +inf`` and contents ``0``, one formula per bin,
  ``1``: ``y`` below the domain gives 0, ``y`` at or above its upper end 1;
- in each bin ``gamma = (1 - t) (g_0 + s_0 (y - y_b)) + t (g_1 + s_1 (y - y_b))``,
  linear in ``y`` within each column and linear in ``x`` between them, where
  ``y_b`` is the lower edge of the bin. The expression is written once as a
  generic formula; each bin holds only its five parameters.

What is written follows from what the transform provides, not from its class.
A grid of columns (a
:class:`~rosenblatt.transforms._column_grid.ColumnGridTransform`, through its
``column_table()``) is the transform itself: the values agree with its
``transform`` to rounding (about 1e-16). A conditional CDF that is a
staircase in ``y`` (a ``staircase()`` method: steps at the defining scores of
a kernel estimate) is tabulated: ``x`` nodes on a grid refined until the
interpolation between neighbours is within the tolerance, and per node the
``y`` nodes of a piecewise-linear approximation of its staircase within the
tolerance. The largest difference to the transform, measured on a dense
sample of points (placed where its ``kinks()`` say it jumps or bends), is
written in the correction's description, with its ``describe()``. Every step
larger than the tolerance needs its own bins, so the table grows when the
kernel holds few events (small samples, narrow kernels, tails in ``x``).

correctionlib reads JSON numbers up to 2 units in the last place off; the
edges and offsets are written in decimal forms that it reads exactly (see
``_numbers``), so that a bin edge on a defining
score or a steep segment evaluates the same in Python, C++ and rosenblatt.

The correction's description also carries a line ``rosenblatt-metadata:``
followed by a JSON object (kind, ``fitted_params()``, domain,
defining-sample size, measured error), from which :func:`from_correctionlib`
rebuilds a :class:`TabulatedTransform`. Reading never evaluates expressions
from the file: only the layout above is accepted, and every edge, parameter
and value is checked.

A bootstrap ensemble of grid transforms is written as one correction with a
third, string input ``variation``: a ``category`` node whose entries
``"nominal"``, ``"up"``, ``"down"`` and ``"replica_<k>"`` each hold the ``x``
binning above for one table. Its description carries a line
``rosenblatt-ensemble-metadata:`` instead; it is not read back.

A transform fitted on ``k`` protected observables is written as one
correction of the inputs ``x1, ..., xk`` and ``y``: a ``multibinning`` over
its tensor grid in ``x``, per box a ``y`` binning whose formulas blend the
corners' columns multilinearly: a GridKDE exactly. An IRGI's nested cells are
written exactly as nested binnings along the observables. Any other transform
(KDE), or one given ``x_nodes`` or ``y_nodes``, is tabulated on a regular
grid, with its measured error. Its metadata line names the layout
``rosenblatt-correctionlib-vector``, which is not read back.

This package is the one public face of the export and the import; its
private modules hold the parts: ``_export`` (the document and the file) and
``_import`` (reading back), the scalar layout's tables (``_tables``, with
``_staircase`` for tabulated staircases), the ensemble's (``_ensemble``), the
tensor-grid layout of several observables (``_vector``) and IRGI's nested
cells (``_nested``); ``_layout`` holds the names, formulas and checks they
share, ``_description`` the correction's description, ``_numbers`` the
decimal forms correctionlib reads exactly.
"""

from __future__ import annotations

from rosenblatt.correctionlib._export import (
    correctionlib_document,
    to_correctionlib,
    write_correctionlib,
)
from rosenblatt.correctionlib._import import from_correctionlib, read_correctionlib
from rosenblatt.correctionlib._layout import DEFAULT_NAME, LAYOUT, LAYOUT_VERSION
from rosenblatt.transforms.tabulated import TabulatedTransform

__all__ = [
    "DEFAULT_NAME",
    "LAYOUT",
    "LAYOUT_VERSION",
    "TabulatedTransform",
    "correctionlib_document",
    "from_correctionlib",
    "read_correctionlib",
    "to_correctionlib",
    "write_correctionlib",
]
