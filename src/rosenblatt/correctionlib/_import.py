"""Reading back a correctionlib file written by rosenblatt, as a :class:`TabulatedTransform`.

Reading never evaluates expressions from the file: only the layout of
:mod:`rosenblatt.correctionlib` is accepted, and every edge, parameter and
value is checked.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np

from rosenblatt._validation import is_int, is_real
from rosenblatt._version import __version__
from rosenblatt.correctionlib._layout import (
    GENERIC_FORMULAS,
    LAYOUT,
    LAYOUT_VERSION,
    METADATA_MARKER,
    N_PARAMETERS,
    check_table,
    fail,
)
from rosenblatt.correctionlib._vector import VECTOR_LAYOUT
from rosenblatt.transforms.tabulated import Table, TabulatedTransform
from rosenblatt.typing import FloatArray

__all__ = ["from_correctionlib", "read_correctionlib"]


def _dict(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise fail(where, f"expected an object, got {type(value).__name__}")
    return value


def _list(value: Any, where: str) -> list[Any]:
    if not isinstance(value, list):
        raise fail(where, f"expected a list, got {type(value).__name__}")
    return value


def _numbers(values: Any, where: str) -> FloatArray:
    items = _list(values, where)
    if not all(is_real(v) for v in items):
        raise fail(where, "expected a list of numbers")
    arr = np.array(items, dtype=np.float64)
    if not np.all(np.isfinite(arr)):
        raise fail(where, f"{int((~np.isfinite(arr)).sum())} non-finite number(s)")
    return arr


def _keys(node: dict[str, Any], allowed: set[str], where: str) -> None:
    extra = set(node) - allowed
    if extra:
        raise fail(where, f"unexpected field(s) {sorted(extra)} in the rosenblatt layout")


def _edges(node: dict[str, Any], variable: str, where: str) -> FloatArray:
    """The finite edges of a binning laid out as ``-inf, e_0, ..., e_m, +inf``."""
    _keys(node, {"nodetype", "input", "edges", "content", "flow"}, where)
    if node.get("nodetype") != "binning" or node.get("input") != variable:
        raise fail(where, f"expected a binning in {variable}")
    if node.get("flow") != "clamp":
        raise fail(where, f"flow must be 'clamp', got {node.get('flow')!r}")
    edges = _list(node.get("edges"), f"{where}.edges")
    if len(edges) < 3 or edges[0] != "-inf" or edges[-1] not in ("inf", "+inf"):
        raise fail(f"{where}.edges", "must start at '-inf', end at 'inf' and hold a finite edge")
    finite = _numbers(edges[1:-1], f"{where}.edges")
    if np.any(np.diff(finite) <= 0):
        raise fail(
            f"{where}.edges", f"{int((np.diff(finite) <= 0).sum())} edge(s) not strictly increasing"
        )
    content = _list(node.get("content"), f"{where}.content")
    if len(content) != len(finite) + 1:
        raise fail(f"{where}.content", f"expected {len(finite) + 1} bins, got {len(content)}")
    return finite


def _parameters(node: Any, index: int, where: str) -> FloatArray:
    node = _dict(node, where)
    _keys(node, {"nodetype", "index", "parameters"}, where)
    if node.get("nodetype") != "formularef" or node.get("index") != index:
        raise fail(where, f"expected a formularef to generic formula {index}")
    params = _numbers(node.get("parameters"), f"{where}.parameters")
    if len(params) != N_PARAMETERS[index]:
        raise fail(where, f"expected {N_PARAMETERS[index]} parameters, got {len(params)}")
    return params


def _y_group(node: Any, index: int, where: str) -> tuple[FloatArray, FloatArray]:
    node = _dict(node, where)
    edges = _edges(node, "y", where)
    content = node["content"]
    if not (content[0] == 0 and content[-1] == 1) or any(
        isinstance(c, bool) for c in (content[0], content[-1])
    ):
        raise fail(f"{where}.content", "must be 0 below the y domain and 1 above it")
    params = np.array(
        [_parameters(c, index, f"{where}.content[{i + 1}]") for i, c in enumerate(content[1:-1])]
    )
    return edges, params.reshape(len(edges) - 1, N_PARAMETERS[index])


def _read_metadata(correction: dict[str, Any], where: str) -> dict[str, Any]:
    description = correction.get("description")
    if not isinstance(description, str) or METADATA_MARKER not in description:
        raise fail(where, f"no '{METADATA_MARKER.strip()}' line: not written by rosenblatt")
    line = description.split(METADATA_MARKER, 1)[1].split("\n", 1)[0]

    def reject_constant(constant: str) -> float:
        raise fail(where, f"non-finite number {constant} in the metadata")

    try:
        metadata = json.loads(line, parse_constant=reject_constant)
    except json.JSONDecodeError as err:
        raise fail(where, f"the metadata line is not valid JSON ({err})") from err
    metadata = _dict(metadata, f"{where} metadata")
    if metadata.get("layout") == VECTOR_LAYOUT:
        msg = (
            f"gamma of {metadata.get('x_dims')} protected observables (inputs x1, ..., y): "
            "rosenblatt reads back only corrections of one observable; evaluate this one with "
            "correctionlib, or load the transform saved with its save()"
        )
        raise fail(where, msg)
    if metadata.get("layout") != LAYOUT:
        raise fail(where, f"unknown layout {metadata.get('layout')!r}")
    version = metadata.get("layout_version")
    if not is_int(version) or version < 1:
        raise fail(where, f"layout_version must be a positive integer, got {version!r}")
    if version > LAYOUT_VERSION:
        msg = (
            f"written with layout version {version} ({metadata.get('written_by', 'unknown writer')}); "
            f"this rosenblatt ({__version__}) reads up to version {LAYOUT_VERSION}: upgrade rosenblatt"
        )
        raise fail(where, msg)
    if not isinstance(metadata.get("kind"), str) or not metadata["kind"]:
        raise fail(where, f"unknown transform kind {metadata.get('kind')!r}")
    for key in ("n_events", "sum_weight", "max_abs_error"):
        value = metadata.get(key)
        if not is_real(value) or not (value >= 0 and math.isfinite(value)):
            raise fail(where, f"metadata {key} must be a non-negative number, got {value!r}")
    return metadata


def _parse(correction: dict[str, Any], where: str) -> tuple[Table, dict[str, Any], str]:
    metadata = _read_metadata(correction, where)
    inputs = _list(correction.get("inputs"), f"{where}.inputs")
    if [(_dict(v, f"{where}.inputs").get("name"), v.get("type")) for v in inputs] != [
        ("x", "real"),
        ("y", "real"),
    ]:
        raise fail(f"{where}.inputs", "expected the real inputs x and y")
    if _dict(correction.get("output"), f"{where}.output").get("type") != "real":
        raise fail(f"{where}.output", "expected a real output")
    if correction.get("generic_formulas") != [dict(f) for f in GENERIC_FORMULAS]:
        raise fail(f"{where}.generic_formulas", "not the formulas of the rosenblatt layout")
    data = _dict(correction.get("data"), f"{where}.data")
    nodes = _edges(data, "x", f"{where}.data")
    if len(nodes) < 2:
        raise fail(f"{where}.data.edges", "expected at least two x nodes")
    content = data["content"]
    y_edges, params = [], []
    low = _y_group(content[0], 2, f"{where}.data.content[0]")
    for k, item in enumerate(content[1:-1]):
        at = f"{where}.data.content[{k + 1}]"
        node = _dict(item, at)
        _keys(node, {"nodetype", "input", "rule", "content"}, at)
        if node.get("nodetype") != "transform" or node.get("input") != "x":
            raise fail(at, "expected a transform of x")
        rule = _parameters(node.get("rule"), 1, f"{at}.rule")
        if rule[0] != nodes[k] or rule[1] != nodes[k + 1] - nodes[k]:
            raise fail(f"{at}.rule", "does not map the x bin onto [0, 1)")
        edges, group = _y_group(node.get("content"), 0, f"{at}.content")
        y_edges.append(edges)
        params.append(group)
    high = _y_group(content[-1], 2, f"{where}.data.content[{len(content) - 1}]")
    table = Table(nodes, [low[0], *y_edges, high[0]], [low[1], *params, high[1]])
    check_table(table, where)
    y_lo, y_hi = table.y_range
    if metadata.get("domain") != [[nodes[0], nodes[-1]], [y_lo, y_hi]]:
        raise fail(where, "the metadata domain does not match the bins")
    description = correction["description"].split(f"\n{METADATA_MARKER}", 1)[0]
    return table, metadata, description


def from_correctionlib(
    document: Any, *, source: str = "<document>", name: str | None = None
) -> TabulatedTransform:
    """Rebuild a transform from a correctionlib document written by rosenblatt.

    Parameters
    ----------
    document
        The parsed JSON of the file.
    source
        Where the document comes from, for error messages.
    name
        The correction to read; by default the only one written by rosenblatt.

    Raises
    ------
    SchemaError
        If the document is not a correctionlib v2 set holding a correction of
        the rosenblatt layout, or any of its values is out of place.
    """
    document = _dict(document, source)
    version = document.get("schema_version")
    if version != 2 or isinstance(version, bool):
        raise fail(
            source, f"correctionlib schema version {version!r}; this rosenblatt reads version 2"
        )
    corrections = _list(document.get("corrections"), f"{source}.corrections")
    ours = [
        c
        for c in corrections
        if isinstance(c, dict)
        and isinstance(c.get("description"), str)
        and METADATA_MARKER in c["description"]
    ]
    names = [c.get("name") for c in ours]
    if name is not None:
        ours = [c for c in ours if c.get("name") == name]
        if not ours:
            raise fail(source, f"no correction {name!r} written by rosenblatt; there are {names}")
    if not ours:
        raise fail(
            source, "no correction written by rosenblatt (no metadata line in any description)"
        )
    if len(ours) > 1:
        raise fail(
            source, f"several corrections written by rosenblatt ({names}): pick one with name="
        )
    correction = ours[0]
    where = f"{source}: correction {correction.get('name')!r}"
    if not isinstance(correction.get("name"), str) or not correction["name"]:
        raise fail(where, "a correction needs a non-empty string 'name'")
    table, metadata, description = _parse(correction, where)
    obj = TabulatedTransform()
    obj.table_ = table
    obj.name_ = str(correction["name"])
    obj.source_kind_ = metadata["kind"]
    obj.metadata_ = metadata
    obj.description_ = description
    obj.max_abs_error_ = float(metadata["max_abs_error"])
    obj.domain_ = ((float(table.x_nodes[0]), float(table.x_nodes[-1])), table.y_range)
    obj.n_events_ = int(metadata["n_events"])
    obj.sum_weight_ = float(metadata["sum_weight"])
    return obj


def read_correctionlib(path: str | Path, name: str | None = None) -> TabulatedTransform:
    """Read a correctionlib file written by rosenblatt (see :func:`from_correctionlib`).

    :func:`rosenblatt.load` reads these files too, when they hold one such correction.
    """
    path = Path(path)

    def reject_constant(constant: str) -> float:
        raise fail(str(path), f"non-finite number {constant}")

    try:
        document = json.loads(path.read_bytes(), parse_constant=reject_constant)
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise fail(str(path), f"not valid JSON ({err})") from err
    return from_correctionlib(document, source=str(path), name=name)
