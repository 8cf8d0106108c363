"""Study configurations declared once, as dataclass fields, and parsed from those fields.

Each key of a study's YAML file is a field of the study's configuration
dataclass, declared with :func:`option`: its name (or the dotted ``key`` under
which it sits in the file), its Python type, its default and its
documentation, and the check that turns the file's value into the field's
value. :func:`parse_dataclass` walks the fields, so that unknown keys, missing
keys, wrong types and ranges are all reported as
``<file>: <key>: <what is wrong>`` (:class:`ConfigError`), and
:func:`config_keys` lists what a study accepts, for its reference page::

    @config_dataclass
    class Example:
        n_events: int = option(default=100, doc="events drawn", check=count)
        depths: tuple[int, ...] = option(key="irgi.depths", doc="IRGI depths", check=depths)

A field whose ``check`` is a dataclass type is a section of the file
(a mapping) parsed field by field in turn, or, with ``key=""``, a group of
keys of the file's own level (e.g. ``classifier.kind`` beside ``disco.alphas``);
a field declared with
``dataclasses.field`` (no ``check``) is not read from the file but given by
the caller of :func:`parse_dataclass` (e.g. the file's name).
"""

from __future__ import annotations

import dataclasses
import json
import sys
import types
import typing
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar

from rosenblatt.studies.config_checks import check_keys, fail, folder, mapping

if TYPE_CHECKING:
    from typing_extensions import Self, dataclass_transform
elif sys.version_info >= (3, 11):
    from typing import dataclass_transform
else:  # only type checkers read it

    def dataclass_transform(**_: Any) -> Callable[[Any], Any]:
        return lambda decorated: decorated


__all__ = [
    "Check",
    "ConfigKey",
    "StudyConfig",
    "config_dataclass",
    "config_keys",
    "config_source",
    "data_folder_option",
    "default_data_folder",
    "option",
    "parse_dataclass",
    "study_keys",
]

#: a check: ``(value from the file, file name, key) -> the field's value``
Check = Callable[[Any, str, str], Any]

_MISSING: Any = dataclasses.MISSING


class ConfigKey(NamedTuple):
    """One key a study's configuration accepts, for its reference.

    Attributes
    ----------
    key
        The key, dotted below its sections (``irgi.depths``).
    type
        What the file may give, in words (the field's Python type unless
        the field says otherwise).
    default
        The value used when the key is left out, in words (``"required"``
        when it must be given).
    doc
        What the key sets.
    """

    key: str
    type: str
    default: str
    doc: str


def option(
    *,
    default: Any = _MISSING,
    doc: str,
    check: Check | type,
    key: str | None = None,
    default_factory: Callable[[], Any] | None = None,
    type: str | None = None,
    default_doc: str | None = None,
    only: Iterable[str] | None = None,
    each: type | None = None,
) -> Any:
    """A configuration field: a :func:`dataclasses.field` that says how its key is read.

    Parameters
    ----------
    default, default_factory
        The field's value when the key is left out (neither: the key is required).
    doc
        What the key sets (one sentence, for the configuration reference).
    check
        ``check(value, source, key)`` returns the field's value or raises the
        :class:`ConfigError` of :func:`rosenblatt.studies.config_checks.fail`;
        a dataclass type reads a section (a mapping, ``null`` for all defaults)
        with :func:`parse_dataclass`.
    key
        The key in the file, dotted below its sections (default: the field's name);
        ``""`` for a dataclass ``check`` whose keys sit at this field's own level.
    type
        What the file may give, in words, when the field's Python type does not say it.
    default_doc
        The default in words, when it is not the field's default itself.
    only
        For a section: the names of the fields of ``check`` read there (the
        others keep their defaults).
    each
        For a list or mapping of entries that ``check`` reads one by one: the
        configuration dataclass of an entry, whose keys the reference lists
        below this one (``key[].field`` for a list, ``key.NAME.field`` for a
        mapping).
    """
    metadata = {
        "doc": doc,
        "check": check,
        "key": key,
        "type": type,
        "default_doc": default_doc,
        "only": None if only is None else tuple(only),
        "each": each,
    }
    if default_factory is not None:
        return dataclasses.field(default_factory=default_factory, metadata=metadata)
    return dataclasses.field(default=default, metadata=metadata)


_T = TypeVar("_T")


@dataclass_transform(frozen_default=True, field_specifiers=(dataclasses.field, option))
def config_dataclass(cls: type[_T]) -> type[_T]:
    """Make ``cls`` a frozen dataclass whose fields are declared with :func:`option`."""
    return dataclasses.dataclass(frozen=True)(cls)


def config_source(config: Mapping[str, Any]) -> str:
    """The configuration's file name (``_path``, set by :func:`rosenblatt.studies.config.load_config`)."""
    return str(config.get("_path", "the configuration"))


def _read_fields(cls: type) -> list[dataclasses.Field[Any]]:
    return [f for f in dataclasses.fields(cls) if "check" in f.metadata]


def _key(f: dataclasses.Field[Any]) -> str:
    key = f.metadata["key"]
    return f.name if key is None else str(key)


def _inline(f: dataclasses.Field[Any]) -> bool:
    """Whether ``f`` is a group of keys of its parent's level (``key=""``)."""
    return f.metadata["key"] == "" and isinstance(f.metadata["check"], type)


def _all_keys(fields: Iterable[dataclasses.Field[Any]]) -> list[str]:
    """The keys of ``fields``, those of inline groups included."""
    keys: list[str] = []
    for f in fields:
        if _inline(f):
            only = f.metadata["only"]
            inner = _read_fields(f.metadata["check"])
            keys += _all_keys(inner if only is None else [g for g in inner if g.name in only])
        else:
            keys.append(_key(f))
    return keys


def _has_default(f: dataclasses.Field[Any]) -> bool:
    return f.default is not _MISSING or f.default_factory is not _MISSING


def _default(f: dataclasses.Field[Any]) -> Any:
    if f.default is not _MISSING:
        return f.default
    return f.default_factory()  # type: ignore[operator]


def _sections(keys: Iterable[str]) -> dict[str, set[str]]:
    """Every section of the dotted ``keys`` (``""``: the top level) -> the names it holds."""
    sections: dict[str, set[str]] = {"": set()}
    for key in keys:
        parts = key.split(".")
        for depth in range(len(parts)):
            section = ".".join(parts[:depth])
            sections.setdefault(section, set()).add(parts[depth])
    return sections


def _where(prefix: str, key: str) -> str:
    """``key`` dotted below ``prefix`` (either may be ``""``)."""
    return ".".join(part for part in (prefix, key) if part)


def parse_dataclass(
    cls: type[Any],
    config: Any,
    source: str,
    prefix: str = "",
    *,
    given: Mapping[str, Any] | None = None,
    defaults: Mapping[str, Any] | None = None,
    only: Iterable[str] | None = None,
    extra_keys: Iterable[str] = (),
    required: Iterable[str] = (),
    check_sections: bool = True,
) -> Any:
    """An instance of the dataclass ``cls`` read from the mapping ``config`` by its fields.

    Parameters
    ----------
    cls
        A dataclass whose fields are declared with :func:`option`.
    config
        The file's mapping (or the section's, below ``prefix``).
    source
        The file's name, first part of every message.
    prefix
        The section ``config`` is, dotted (``""``: the top level).
    given
        Values of the fields not read from the file (declared without ``check``).
    defaults
        Defaults that replace the fields' own (e.g. a section's values
        that default to the top level's).
    only
        The names of the fields read (the others keep their defaults and their
        keys are unknown); all by default.
    extra_keys
        Top-level keys accepted beside the fields' (read by someone else);
        ``_path`` is always accepted.
    required
        Keys that must be given even though their fields have defaults
        (e.g. a section whose every key has a default).
    check_sections
        Refuse unknown keys (off for an inline group, whose parent does it).

    Raises
    ------
    ConfigError
        ``<source>: <key>: <what>`` for an unknown or missing key, a section
        that is not a mapping, or a value its check refuses.
    """
    read = _read_fields(cls)
    if only is not None:
        chosen = set(only)
        read = [f for f in read if f.name in chosen]
    sections = _sections(_all_keys(read))
    sections[""] |= set(extra_keys)
    root = mapping(config, source, prefix or "top level")
    if not prefix:
        root = {k: v for k, v in root.items() if k != "_path"}
    values: dict[str, Any] = dict(given or {})
    for section, names in sections.items() if check_sections else ():
        entry = _section(root, section, source, prefix)
        if entry is not None:
            check_keys(entry, names, source, _where(prefix, section) or "top level")
    for key in required:
        if key not in root:
            raise fail(source, _where(prefix, key), "missing")
    for f in read:
        if _inline(f):
            values[f.name] = parse_dataclass(
                f.metadata["check"],
                root,
                source,
                prefix,
                only=f.metadata["only"],
                check_sections=False,
            )
        else:
            values[f.name] = _value(f, root, source, prefix, defaults or {})
    return cls(**values)


def _section(root: Mapping[str, Any], section: str, source: str, prefix: str) -> Any:
    """The mapping of ``section`` below ``root`` (``None`` when left out or ``null``)."""
    entry: Any = root
    walked = ""
    for part in section.split(".") if section else []:
        walked = _where(walked, part)
        entry = entry.get(part)
        if entry is None:
            return None
        entry = mapping(entry, source, _where(prefix, walked))
    return entry


def _value(
    f: dataclasses.Field[Any],
    root: Mapping[str, Any],
    source: str,
    prefix: str,
    defaults: Mapping[str, Any],
) -> Any:
    """The value of the field ``f``: its check of the file's value, or its default."""
    key = _key(f)
    *path, last = key.split(".")
    entry: Any = root
    walked = ""
    for part in path:
        walked = _where(walked, part)
        entry = entry.get(part)
        if entry is None:
            break
    check = f.metadata["check"]
    if entry is None or last not in entry:
        if f.name in defaults:
            return defaults[f.name]
        if _has_default(f):
            return _default(f)
        missing = walked if entry is None else key
        raise fail(source, _where(prefix, missing), "missing")
    value = entry[last]
    if isinstance(check, type):
        section = {} if value is None else value
        return parse_dataclass(check, section, source, _where(prefix, key), only=f.metadata["only"])
    return check(value, source, _where(prefix, key))


def _text(value: Any, source: str, key: str) -> str:
    return str(value)


@config_dataclass
class StudyConfig:
    """The keys every study's configuration holds: its name, and the file it was read from.

    A study's configuration dataclass derives from it and reads the file's
    mapping with :meth:`read`.
    """

    name: str = option(
        doc="the study's name (of its results folder)",
        check=_text,
        default_doc="the configuration file's name without its suffix",
    )
    source: str = dataclasses.field(metadata={"doc": "the configuration file read"})

    @classmethod
    def read(
        cls,
        config: Mapping[str, Any],
        *,
        given: Mapping[str, Any] | None = None,
        required: Iterable[str] = (),
    ) -> Self:
        """The configuration read from the file's mapping by its fields (:func:`parse_dataclass`).

        ``source`` is the file's name (:func:`config_source`), ``name``
        defaults to the file's name without its suffix, and the key
        ``study`` is accepted beside the fields' keys. ``given`` holds the
        values of the other fields not read from the file, ``required`` the
        keys that must be given although their fields have defaults.
        """
        source = config_source(config)
        parsed: Self = parse_dataclass(
            cls,
            config,
            source,
            given={"source": source, **(given or {})},
            defaults={"name": Path(source).stem},
            extra_keys=("study",),
            required=required,
        )
        return parsed


def data_folder_option(doc: str) -> Any:
    """The field of ``data.folder``: the folder a study keeps its events in for later runs.

    Left out (``None``), it is :func:`default_data_folder`.
    """
    return option(
        default=None,
        key="data.folder",
        doc=doc,
        check=folder,
        default_doc="data/<name>",
        type="path",
    )


def default_data_folder(name: str, source: str) -> Path:
    """The folder of ``data.folder`` left out: ``data/<name>``, checked as a folder."""
    return folder(str(Path("data") / name), source, "data.folder")


def config_keys(
    cls: type[Any], prefix: str = "", only: Iterable[str] | None = None
) -> list[ConfigKey]:
    """Every key the configuration dataclass ``cls`` reads, with its type, default and doc.

    Sections (fields whose check is a dataclass) are listed key by key, dotted.

    Examples
    --------
    >>> from rosenblatt.studies.blobs.config import BlobsConfig
    >>> [k.key for k in config_keys(BlobsConfig)][:3]
    ['name', 'background.n_defining', 'background.n_testing']
    """
    hints = typing.get_type_hints(cls)
    keys: list[ConfigKey] = []
    chosen = None if only is None else set(only)
    for f in _read_fields(cls):
        if chosen is not None and f.name not in chosen:
            continue
        key = _where(prefix, _key(f))
        check = f.metadata["check"]
        if isinstance(check, type):
            keys += config_keys(check, key, f.metadata["only"])
            continue
        described = f.metadata["type"] or _type_words(hints.get(f.name, Any))
        if f.metadata["default_doc"] is not None:
            default = str(f.metadata["default_doc"])
        else:
            default = _default_words(_default(f)) if _has_default(f) else "required"
        keys.append(ConfigKey(key, described, default, str(f.metadata["doc"])))
        if f.metadata["each"] is not None:
            hint = hints.get(f.name, Any)
            listed = typing.get_origin(hint) in (tuple, list)
            keys += config_keys(f.metadata["each"], key + ("[]" if listed else ".NAME"))
    return keys


def _default_words(value: Any) -> str:
    """A default as the file would give it (JSON, which YAML reads): ``[0.0, 0.0]``, ``false``."""
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return repr(value)


#: Python types as a configuration file gives them
_WORDS = {int: "integer", float: "number", bool: "true or false", str: "text"}


def _type_words(hint: Any) -> str:
    """A field's type as the file gives it: ``list of integer``, ``mapping``, ``number or null``."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint in _WORDS:
        return _WORDS[hint]
    if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
        return f"list of {_type_words(args[0])}"
    if origin is tuple:
        return f"list of {len(args)} {' and '.join(dict.fromkeys(_type_words(a) for a in args))}"
    if origin in (typing.Union, types.UnionType):
        return " or ".join("null" if a is type(None) else _type_words(a) for a in args)
    if origin is not None and issubclass(origin, Mapping):
        return "mapping"
    return getattr(hint, "__name__", str(hint))


def study_keys(study: str) -> list[ConfigKey]:
    """Every key a configuration of ``study`` (its ``study:`` value) accepts, for its reference.

    Raises
    ------
    KeyError
        For a study that :data:`rosenblatt.studies.STUDIES` does not hold.
    """
    from rosenblatt.studies import STUDIES

    if study not in STUDIES:
        msg = f"no field-by-field configuration of the study {study!r}; known: {sorted(STUDIES)}"
        raise KeyError(msg)
    keys = config_keys(STUDIES[study].config_class())
    return [ConfigKey("study", "text", "required", f"the study: {study}"), *keys]
