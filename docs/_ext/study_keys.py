"""The keys of every study's configuration, read from its configuration dataclasses.

``.. study-keys:: KIND`` renders the keys of the configuration of ``study: KIND`` as
tables: one row per field of the study's configuration dataclass, the fields of nested
dataclasses under their parent's key (``data.folder``). A field's key, description and
whether it is a key at all come from its ``dataclasses.field`` metadata (``key``, ``doc``
or ``help``, ``internal``) when it has them, else from the field's name and the comment
(``#:``) or docstring written beside it in the class. The tables cannot drift from what
the parsers accept: they are built from the same classes at every build.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import typing
from typing import Any

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.pycode import ModuleAnalyzer
from sphinx.util.docutils import SphinxDirective

#: metadata names that carry a field's description
DOC_KEYS = ("doc", "help", "description")


def study_module(kind: str) -> Any:
    """The module that runs ``study: kind``."""
    from rosenblatt.studies import STUDIES

    return importlib.import_module(f"rosenblatt.studies.{STUDIES[kind]}")


def _field_types(cls: type) -> dict[str, Any]:
    try:
        module = importlib.import_module(cls.__module__)
        return typing.get_type_hints(cls, vars(module))
    except (NameError, TypeError):
        return {f.name: f.type for f in dataclasses.fields(cls)}


def _nested(tp: Any) -> list[type]:
    """The configuration dataclasses a field's type names (``X``, ``X | None``, ``tuple[X, ...]``).

    Only dataclasses of :mod:`rosenblatt.studies` are sections of a configuration; a value
    parsed into a class of a lower layer (a quantity's grammar) is one key.
    """
    if dataclasses.is_dataclass(tp) and isinstance(tp, type):
        return [tp] if tp.__module__.startswith("rosenblatt.studies") else []
    found: list[type] = []
    for arg in typing.get_args(tp):
        found += _nested(arg)
    return found


def config_class(kind: str) -> type:
    """The root configuration dataclass the study of ``kind`` parses its file into."""
    module = study_module(kind)
    classes = [
        obj
        for obj in vars(module).values()
        if inspect.isclass(obj) and dataclasses.is_dataclass(obj) and hasattr(obj, "parse")
    ]
    inner = {
        nested for cls in classes for tp in _field_types(cls).values() for nested in _nested(tp)
    }
    roots = [cls for cls in classes if cls not in inner]
    if len(roots) != 1:
        msg = f"study {kind!r}: expected one configuration dataclass, found {roots}"
        raise RuntimeError(msg)
    return roots[0]


def _attribute_docs(cls: type) -> dict[str, str]:
    try:
        analyzer = ModuleAnalyzer.for_module(cls.__module__)
        docs = analyzer.find_attr_docs()
    except Exception:  # noqa: BLE001  (no source: no comments)
        return {}
    return {
        attr: " ".join(lines).strip()
        for (owner, attr), lines in docs.items()
        if owner == cls.__qualname__
    }


def _default(field: dataclasses.Field[Any]) -> str:
    if field.default is not dataclasses.MISSING:
        return f"``{field.default!r}``"
    if field.default_factory is not dataclasses.MISSING:
        return f"``{field.default_factory()!r}``"
    return "required"


def _type_text(tp: Any) -> str:
    text = tp if isinstance(tp, str) else getattr(tp, "__name__", None) or repr(tp)
    if not isinstance(tp, str) and typing.get_args(tp):
        text = repr(tp)
    return text.replace("typing.", "").replace("collections.abc.", "")


def key_rows(
    cls: type, prefix: str = "", seen: frozenset[type] = frozenset()
) -> list[tuple[str, str, str, str]]:
    """``(key, type, default, description)`` of every key of ``cls``, nested ones included.

    A dataclass that contains itself (directly or not) is expanded once.
    """
    seen = seen | {cls}
    types = _field_types(cls)
    comments = _attribute_docs(cls)
    rows = []
    for field in dataclasses.fields(cls):
        meta = field.metadata
        if meta.get("internal"):
            continue
        key = prefix + str(meta.get("key") or field.name)
        doc = next(
            (str(meta[name]) for name in DOC_KEYS if name in meta), comments.get(field.name, "")
        )
        nested = _nested(types[field.name])
        if not doc and nested:
            doc = (inspect.getdoc(nested[0]) or "").split("\n\n")[0]
        rows.append(
            (key, f"``{_type_text(types[field.name])}``", _default(field), " ".join(doc.split()))
        )
        for inner in nested:
            if inner not in seen:
                rows += key_rows(inner, prefix=f"{key}.", seen=seen)
    return rows


def study_rows(kind: str) -> list[tuple[str, str, str, str]]:
    """``(key, type, default, description)`` of every key of ``study: kind``.

    A study whose configuration is declared field by field
    (:func:`rosenblatt.studies.config_fields.study_keys`) lists the keys its parser reads;
    the others are read from their dataclasses' fields by :func:`key_rows`.
    """
    try:
        from rosenblatt.studies.config_fields import CONFIG_CLASSES, study_keys
    except ImportError:
        CONFIG_CLASSES, study_keys = {}, None
    if study_keys is not None and kind in CONFIG_CLASSES:
        return [(k.key, k.type, k.default, k.doc) for k in study_keys(kind)]
    return key_rows(config_class(kind))


def keys_table(kind: str) -> str:
    """The reStructuredText table of the keys of ``study: kind``."""
    lines = [
        ".. list-table::",
        "   :header-rows: 1",
        "   :widths: 22 22 16 40",
        "",
        "   * - key",
        "     - type",
        "     - default",
        "     - meaning",
    ]
    for key, type_text, default, doc in study_rows(kind):
        lines += [
            f"   * - ``{key}``",
            f"     - {type_text}",
            f"     - {default}",
            f"     - {doc}",
        ]
    return "\n".join(lines) + "\n"


class StudyKeys(SphinxDirective):
    """``.. study-keys:: KIND``: the table of a study's configuration keys."""

    required_arguments = 1

    def run(self) -> list[nodes.Node]:
        kind = self.arguments[0]
        cls = config_class(kind)
        intro = (
            f"``study: {kind}`` is read into ``{cls.__module__}.{cls.__qualname__}``; "
            f"its docstring: {(inspect.getdoc(cls) or '').splitlines()[0]}\n\n"
        )
        return self.parse_text_to_nodes(intro + keys_table(kind))


def setup(app: Sphinx) -> dict[str, Any]:
    """Register the directive."""
    app.add_directive("study-keys", StudyKeys)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
