"""The package's imports: no cycle, and every import points down DESIGN.md's layers.

Every ``import`` of a ``rosenblatt`` module counts, those inside functions and under
``if TYPE_CHECKING:`` included: a cycle of type hints is still two modules that need each other.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

pytestmark = pytest.mark.core

PACKAGE = Path(__file__).parents[1] / "src" / "rosenblatt"

#: DESIGN.md's layers, top first, by the first name below ``rosenblatt`` ("" is the package)
LAYERS = (
    ("cli", "commands"),
    ("studies", "config"),
    ("processors", "outofcore", ""),
    (
        "hep",
        "ml",
        "abcd",
        "io",
        "plotting",
        "sklearn",
        "serialization",
        "correctionlib",
        "closed_forms",
        "testing",
    ),
    ("transforms", "metrics"),
    (
        "_validation",
        "typing",
        "_schema",
        "exceptions",
        "_atomic",
        "_awkward",
        "_extras",
        "_interrupt",
        "_jit",
        "_lock",
        "_records",
        "_version",
    ),
)


def _modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


MODULES = _modules()


def imported(name: str, path: Path) -> set[str]:
    """The package's modules that ``name`` (its file ``path``) imports, anywhere in it."""
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            visit_one(child)

    def visit_one(node: ast.AST) -> None:
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")[: len(package.split(".")) - node.level + 1]
            module = ".".join([*base, node.module or ""]) if node.level else node.module or ""
            module = module.rstrip(".")
            for alias in node.names:
                found.add(
                    f"{module}.{alias.name}" if f"{module}.{alias.name}" in MODULES else module
                )
        visit(node)

    visit(ast.parse(path.read_text(encoding="utf-8")))
    return {m for m in found if m in MODULES and m != name}


GRAPH = {name: imported(name, path) for name, path in MODULES.items()}


def layer(module: str) -> int:
    """The index in :data:`LAYERS` of ``module``'s layer."""
    top = module.split(".")[1] if "." in module else ""
    return next(i for i, names in enumerate(LAYERS) if top in names)


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def strong(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph[v]):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            strong(v)
    return found


def test_a_cycle_is_found() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c"]]


def test_imports_inside_functions_count(tmp_path: Path) -> None:
    source = tmp_path / "m.py"
    source.write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from rosenblatt import studies\n"
        "def f():\n    from rosenblatt.transforms import irgi\n"
    )
    assert imported("rosenblatt.m", source) == {"rosenblatt.studies", "rosenblatt.transforms.irgi"}


def test_no_import_cycle() -> None:
    assert cycles(GRAPH) == []


def test_every_module_has_a_layer() -> None:
    for module in MODULES:
        assert layer(module) >= 0, module


def test_imports_point_down_the_layers() -> None:
    upward = sorted(
        f"{module} -> {other}"
        for module, others in GRAPH.items()
        for other in others
        if layer(other) < layer(module)
    )
    assert upward == []


def _top(module: str) -> str:
    return module.split(".")[1] if "." in module else ""


def _imports_from(tops: tuple[str, ...], forbidden: tuple[str, ...]) -> list[str]:
    return sorted(
        f"{module} -> {other}"
        for module, others in GRAPH.items()
        if _top(module) in tops
        for other in others
        if _top(other) in forbidden
    )


def test_the_core_imports_neither_the_out_of_core_fit_nor_studies_nor_processors() -> None:
    """Estimators, metrics and ABCD statistics stand without the file-set machinery."""
    forbidden = ("outofcore", "processors", "studies", "config", "commands", "cli")
    assert _imports_from(("transforms", "metrics", "abcd"), forbidden) == []


def test_the_out_of_core_fit_imports_no_study_and_no_command() -> None:
    assert layer("rosenblatt.outofcore") == layer("rosenblatt.processors")
    assert _imports_from(("outofcore",), ("studies", "config", "commands", "cli")) == []


def test_the_abcd_statistics_are_not_borrowed_from_a_study() -> None:
    """The abcd study and the toys take the ABCD likelihood from ``abcd/``, not from lhco."""
    borrowed = sorted(
        f"{module} -> {other}"
        for module, others in GRAPH.items()
        if module.startswith("rosenblatt.studies.")
        and not module.startswith("rosenblatt.studies.lhco")
        for other in others
        if other.startswith("rosenblatt.studies.lhco")
    )
    assert borrowed == []
