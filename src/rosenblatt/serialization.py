"""Saving and loading fitted transforms as versioned JSON.

A saved transform is plain data: loading it never executes code. Every array
is checked (shape, finiteness, monotonicity, range) before use, so that a
malformed or tampered file raises :class:`SchemaError` instead of giving a
wrong answer.

The class of a saved ``kind`` is looked up among the transform classes
defined (:func:`rosenblatt.transforms._base.transform_classes`). Importing
this module registers :func:`save` and the correctionlib export as the writers
behind ``transform.save(path)`` and ``transform.to_correctionlib()``
(:func:`rosenblatt.transforms._base.register_writer`), and the correctionlib
reader (:func:`rosenblatt.transforms._base.register_reader`); the correctionlib
modules are imported on first use.
"""

from __future__ import annotations

import importlib
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rosenblatt._atomic import write_text
from rosenblatt._schema import SchemaError, check_array, check_domain, check_fitted_on
from rosenblatt._validation import check_int
from rosenblatt._version import __version__
from rosenblatt.transforms import ConditionalCDFTransform
from rosenblatt.transforms._base import register_reader, register_writer, transform_classes

if TYPE_CHECKING:
    import correctionlib.schemav2

__all__ = [
    "FORMAT",
    "SCHEMA_VERSION",
    "SchemaError",
    "check_array",
    "check_domain",
    "dumps",
    "fitted_on",
    "load",
    "loads",
    "save",
]

#: identifies our files
FORMAT = "rosenblatt-transform"
#: version of the layout written by :func:`save`; older versions stay readable. The
#: ``fitted_on`` block is optional: a file without it is read as before, and a release
#: that does not know the block reads the file and ignores it, so it keeps version 1
SCHEMA_VERSION = 1
#: the package whose modules a saved file may name as the one defining its kind
_PACKAGE = "rosenblatt."


def fitted_on(transform: ConditionalCDFTransform) -> dict[str, Any] | None:
    """What ``rosenblatt fit`` fitted ``transform`` on, as its file records it, or ``None``.

    The block (``transform.fitted_on_``, set by ``rosenblatt fit`` and by
    :func:`load`; a new :meth:`~ConditionalCDFTransform.fit` drops it) holds
    the quantities ``x``, ``y`` and ``weight`` as written, ``treename``,
    ``schema``, ``jets``, ``files`` (each ``{"name", "size", "blake2b"}``),
    ``n_events`` and ``sum_weight``: see :data:`rosenblatt._schema.FITTED_ON_KEYS`.
    """
    block = transform.__dict__.get("fitted_on_")
    return None if block is None else dict(block)


def dumps(transform: ConditionalCDFTransform) -> str:
    """Return the JSON text of a fitted transform (with its ``fitted_on`` block, if any)."""
    document = {
        "format": FORMAT,
        "schema_version": SCHEMA_VERSION,
        "kind": transform.kind,
        "written_by": f"rosenblatt {__version__}",
        "module": type(transform).__module__,
        "state": transform.get_state(),
    }
    block = fitted_on(transform)
    if block is not None:
        document["fitted_on"] = check_fitted_on(block)
    return json.dumps(document, allow_nan=False, separators=(",", ":"))


def save(transform: ConditionalCDFTransform, path: str | Path) -> None:
    """Write a fitted transform to ``path`` as JSON."""
    write_text(path, dumps(transform))


def loads(text: str | bytes, *, source: str = "<string>") -> ConditionalCDFTransform:
    """Rebuild a transform from JSON text written by :func:`dumps`."""
    document = _parse(text, source)
    if "corrections" in document and "schema_version" in document:
        from rosenblatt.correctionlib import from_correctionlib

        return from_correctionlib(document, source=source)
    _check_version(document, source)
    kind, cls = _transform_class(document.get("kind"), document.get("module"), source)
    state = document.get("state")
    if not isinstance(state, dict):
        msg = f"{source}: 'state' must be an object"
        raise SchemaError(msg)
    written = f"{source} (written by {_writer(document)})"
    try:
        transform = cls.from_state(state)
        if "fitted_on" in document:
            transform.fitted_on_ = check_fitted_on(document["fitted_on"])
    except SchemaError as err:
        msg = f"{written}: {err}"
        raise SchemaError(msg) from err
    except (KeyError, TypeError, ValueError) as err:
        msg = f"{written}: malformed {kind} state ({type(err).__name__}: {err})"
        raise SchemaError(msg) from err
    return transform


def _writer(document: dict[str, Any]) -> str:
    """The document's ``written_by`` on one line (``rosenblatt 0.1.0``), or ``an unknown writer``."""
    writer = document.get("written_by")
    if not isinstance(writer, str) or not writer.split():
        return "an unknown writer"
    return " ".join(writer.split())


def _parse(text: str | bytes, source: str) -> dict[str, Any]:
    """The JSON object of ``text``; non-finite numbers are refused."""

    def reject_constant(name: str) -> float:
        msg = f"{source}: non-finite number {name} in a saved transform"
        raise SchemaError(msg)

    try:
        document = json.loads(text, parse_constant=reject_constant)
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        msg = f"{source} is not valid JSON: {err}"
        raise SchemaError(msg) from err
    if not isinstance(document, dict):
        msg = f"{source}: expected a JSON object, got {type(document).__name__}"
        raise SchemaError(msg)
    return document


def _check_version(document: dict[str, Any], source: str) -> None:
    """The document is a rosenblatt transform of a schema version this release reads."""
    if document.get("format") != FORMAT:
        msg = f"{source} is not a saved rosenblatt transform (format {document.get('format')!r})"
        raise SchemaError(msg)
    version = document.get("schema_version")
    version = check_int(version, f"{source}: schema_version", error=SchemaError)
    if version > SCHEMA_VERSION:
        msg = (
            f"{source} was written with schema version {version} "
            f"({document.get('written_by', 'unknown writer')}); this rosenblatt "
            f"({__version__}) reads up to version {SCHEMA_VERSION}: upgrade rosenblatt"
        )
        raise SchemaError(msg)
    if version < 1:
        msg = f"{source}: unknown schema version {version}"
        raise SchemaError(msg)


def _transform_class(
    kind: Any, module: Any, source: str
) -> tuple[str, type[ConditionalCDFTransform]]:
    """The registered class of ``kind``.

    A kind defined in a module of an optional extra (not imported by ``import
    rosenblatt``) is registered by importing the module the file names, if that
    module belongs to this package.
    """
    unregistered = isinstance(kind, str) and kind not in transform_classes()
    if unregistered and isinstance(module, str) and module.startswith(_PACKAGE):
        try:
            importlib.import_module(module)
        except ImportError as err:
            needed = err.name or "an optional dependency"
            msg = (
                f"{source}: a saved {kind} transform needs {needed}, which is not installed "
                "(pip install 'rosenblatt[all]' installs every optional dependency)"
            )
            raise SchemaError(msg) from err
    registry = transform_classes()
    if not isinstance(kind, str) or kind not in registry:
        msg = f"{source}: unknown transform kind {kind!r}; known: {sorted(registry)}"
        raise SchemaError(msg)
    return kind, registry[kind]


def load(path: str | Path) -> ConditionalCDFTransform:
    """Load a transform saved with :meth:`~ConditionalCDFTransform.save`.

    Also reads correctionlib files written by :func:`rosenblatt.correctionlib.to_correctionlib`.

    Raises
    ------
    SchemaError
        If the file is malformed, tampered or of a newer schema version.
    """
    path = Path(path)
    try:
        text = path.read_bytes()
    except OSError as err:
        msg = f"cannot read transform file {path}: {err}"
        raise OSError(msg) from err
    return loads(text, source=str(path))


def _to_correctionlib(
    transform: ConditionalCDFTransform, name: str, **options: Any
) -> correctionlib.schemav2.CorrectionSet:
    """:func:`rosenblatt.correctionlib.to_correctionlib`, imported on first use."""
    from rosenblatt.correctionlib import to_correctionlib

    return to_correctionlib(transform, name, **options)


def _write_correctionlib(
    transform: ConditionalCDFTransform, path: str | Path, name: str, **options: Any
) -> dict[str, Any]:
    """:func:`rosenblatt.correctionlib.write_correctionlib`, imported on first use."""
    from rosenblatt.correctionlib import write_correctionlib

    return write_correctionlib(transform, path, name, **options)


def _correctionlib_document(
    transform: ConditionalCDFTransform, name: str, **options: Any
) -> dict[str, Any]:
    """:func:`rosenblatt.correctionlib.correctionlib_document`, imported on first use."""
    from rosenblatt.correctionlib import correctionlib_document

    return correctionlib_document(transform, name, **options)


def _from_correctionlib(document: Any) -> ConditionalCDFTransform:
    """:func:`rosenblatt.correctionlib.from_correctionlib`, imported on first use."""
    from rosenblatt.correctionlib import from_correctionlib

    return from_correctionlib(document)


register_writer("json", save)
register_writer("correctionlib", _to_correctionlib)
register_writer("correctionlib-file", _write_correctionlib)
register_writer("correctionlib-document", _correctionlib_document)
register_reader("correctionlib", _from_correctionlib)
