"""The studies' code in small functions: no body over 60 lines, the exceptions named with their reason."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

pytestmark = pytest.mark.core

STUDIES = Path(__file__).parents[1] / "src" / "rosenblatt" / "studies"
LIMIT = 60

#: functions longer than LIMIT, each with why it is not split
EXCEPTIONS: dict[str, str] = {}


def _bodies(path: Path) -> dict[str, int]:
    """Qualified name -> lines of the body (the docstring left out) of every function of ``path``."""
    found: dict[str, int] = {}

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                body = child.body
                docstring = isinstance(body[0], ast.Expr) and isinstance(
                    getattr(body[0], "value", None), ast.Constant
                )
                first = body[1] if docstring and len(body) > 1 else body[0]
                found[prefix + child.name] = int(child.end_lineno or 0) - first.lineno + 1
                visit(child, f"{prefix}{child.name}.")
            elif isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}{child.name}.")

    visit(ast.parse(path.read_text(encoding="utf-8")), "")
    return found


def _long_functions() -> dict[str, int]:
    return {
        f"{path.relative_to(STUDIES).as_posix()}::{name}": lines
        for path in sorted(STUDIES.rglob("*.py"))
        for name, lines in _bodies(path).items()
        if lines > LIMIT
    }


def test_body_length_is_measured_without_the_docstring(tmp_path: Path) -> None:
    source = tmp_path / "m.py"
    source.write_text(
        'def f():\n    """Doc."""\n    a = 1\n    return a\n\n\nclass C:\n    def g(self):\n        pass\n'
    )
    assert _bodies(source) == {"f": 2, "C.g": 1}


def test_no_study_function_is_longer_than_the_limit_but_the_named_ones() -> None:
    long = _long_functions()
    unnamed = sorted(set(long) - set(EXCEPTIONS))
    assert unnamed == [], f"longer than {LIMIT} lines: {[(n, long[n]) for n in unnamed]}"
