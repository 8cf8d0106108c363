"""Study configurations: one YAML file per study.

A configuration is given as a file path or by name (``"blobs"``). A name is
looked up, in this order, in ``configs/`` of the current folder and in the
configurations shipped inside the package (``rosenblatt/configs/``, a copy of
the ``configs/`` folder at the top of the source tree), so that every study
runs after a plain ``pip install`` as well as from a checkout.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Any

__all__ = [
    "DEFAULT_CONFIG",
    "MAX_BYTES",
    "MAX_VALUES",
    "config_dirs",
    "config_label",
    "find_config",
    "known_configs",
    "load_config",
    "study_configs",
]

#: configuration run by ``rosenblatt run`` without argument
DEFAULT_CONFIG = "lhco-quick"

_SUFFIXES = (".yaml", ".yml")
_NEWLINE = "\n"
#: bytes a configuration file may hold
MAX_BYTES = 16 * 2**20


def _packaged_dir() -> Path | None:
    """Folder of the configurations shipped with the package, if on the file system."""
    folder = resources.files("rosenblatt").joinpath("configs")
    return folder if isinstance(folder, Path) and folder.is_dir() else None


def config_dirs() -> list[Path]:
    """Folders searched for a configuration given by name, in order.

    Returns
    -------
    list of Path
        ``./configs`` of the current folder, then the packaged configurations.
    """
    folders = [Path.cwd() / "configs"]
    packaged = _packaged_dir()
    if packaged is not None:
        folders.append(packaged)
    return folders


def known_configs() -> list[str]:
    """Names of the configurations found in :func:`config_dirs`, sorted."""
    return sorted(
        {
            path.stem
            for folder in config_dirs()
            if folder.is_dir()
            for path in folder.iterdir()
            if path.suffix in _SUFFIXES and path.is_file()
        }
    )


def study_configs() -> list[str]:
    """Names of the configurations of :func:`known_configs` that ``rosenblatt run`` runs.

    A study configuration has a top-level ``study:`` key; the others
    (``train-example``, read by ``rosenblatt train``) are left out. The files are
    scanned for that line, not parsed, so that the list needs no YAML parser (it is
    shown by ``run --help`` on the core install).

    Returns
    -------
    list of str
        The names, sorted.
    """
    import re

    study_key = re.compile(r"^study\s*:", flags=re.MULTILINE)
    names = []
    for name in known_configs():
        try:
            text = find_config(name).read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        if study_key.search(text):
            names.append(name)
    return names


def config_label(path: str | Path) -> str:
    """How a summary names the configuration file ``path``, the same on every machine.

    A shipped configuration is named by its place in the package
    (``rosenblatt/configs/lhco-paper.yaml``), a file under the current folder by
    its path from there; any other file by its absolute path.
    """
    resolved = Path(path).resolve()
    packaged = _packaged_dir()
    for root, prefix in ((packaged, Path("rosenblatt/configs")), (Path.cwd(), Path())):
        if root is not None and resolved.is_relative_to(root.resolve()):
            return (prefix / resolved.relative_to(root.resolve())).as_posix()
    return resolved.as_posix()


def find_config(name_or_path: str | Path) -> Path:
    """Return the path of a configuration given as a file or by name.

    Parameters
    ----------
    name_or_path : str or Path
        An existing file, or a name (``"blobs"``, ``"blobs.yaml"``) looked up in
        :func:`config_dirs`: ``./configs/`` first, then the packaged configurations.

    Returns
    -------
    Path
        The configuration file.

    Raises
    ------
    FileNotFoundError
        If nothing matches; the message lists the known configuration names.
    """
    path = Path(name_or_path)
    if path.is_file():
        return path
    folders = config_dirs()
    if path.suffix not in _SUFFIXES:
        for folder in folders:
            candidate = folder / f"{path.name}.yaml"
            if candidate.is_file():
                return candidate
    for folder in folders:
        candidate = folder / path.name
        if candidate.is_file():
            return candidate
    if path.is_dir():
        msg = f"{name_or_path}: is a folder, not a configuration file"
        raise IsADirectoryError(msg)
    if path.exists():
        msg = f"{name_or_path}: not a regular file (a device, pipe or socket), not a configuration"
        raise FileNotFoundError(msg)
    known = ", ".join(known_configs()) or "none"
    if path.suffix in _SUFFIXES or len(path.parts) > 1:
        msg = f"{name_or_path}: no such file; known configurations: {known}"
    else:
        msg = f"no configuration {str(name_or_path)!r}; known configurations: {known}"
    raise FileNotFoundError(msg)


def load_config(name_or_path: str | Path) -> dict[str, Any]:
    """Read a YAML configuration; its ``name`` defaults to the file's stem.

    Parameters
    ----------
    name_or_path : str or Path
        A file or a configuration name, as for :func:`find_config`.

    Returns
    -------
    dict
        The configuration, with ``name`` set and ``_path`` the file read.

    Raises
    ------
    FileNotFoundError
        If no configuration matches, or the path is a folder or not a regular file.
    ValueError
        If the file is not UTF-8 text, not valid YAML (a key given twice
        included), not a mapping with a known ``study``, or its ``name`` is not
        a folder name: one line ``<file>: <key or line>: <what is wrong>``.
    """
    from rosenblatt.studies import STUDIES
    from rosenblatt.studies.config_checks import ConfigError

    path = find_config(name_or_path)
    source = str(path)
    config = _read_yaml(path)
    if config is None:
        msg = f"{source}: top level: the file is empty; a configuration is a mapping with a 'study' key"
        raise ConfigError(msg)
    if not isinstance(config, dict):
        msg = (
            f"{source}: top level: a configuration is a mapping with a 'study' key, "
            f"got {type(config).__name__}"
        )
        raise ConfigError(msg)
    _check_size(config, source)
    if "study" not in config:
        msg = (
            f"{source}: study: missing; a configuration is a mapping with a 'study' key, "
            f"one of {sorted(STUDIES)}"
        )
        raise ConfigError(msg)
    study = config["study"]
    if not isinstance(study, str):
        msg = f"{source}: study: must name a study, one of {sorted(STUDIES)}, got {study!r}"
        raise ConfigError(msg)
    if study not in STUDIES:
        msg = f"{source}: study: unknown study {study!r}; known: {sorted(STUDIES)}"
        raise ConfigError(msg)
    config["name"] = _name(config.get("name", path.stem), source)
    config["_path"] = source
    return config


#: values a configuration may expand to (YAML aliases repeat what an anchor holds)
MAX_VALUES = 1_000_000


def _read_yaml(path: Path) -> Any:
    """The YAML document of ``path``; an unreadable, non-UTF-8 or invalid file is one line."""
    import yaml

    from rosenblatt.studies.config_checks import ConfigError

    source = str(path)
    try:
        with path.open("rb") as stream:
            raw = stream.read(MAX_BYTES + 1)
    except OSError as err:
        msg = f"{source}: top level: the file cannot be read ({err.strerror or err})"
        raise ConfigError(msg) from None
    if len(raw) > MAX_BYTES:
        msg = f"{source}: top level: larger than {MAX_BYTES} bytes: not a configuration"
        raise ConfigError(msg)
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        offset = err.start + (3 if raw.startswith(b"\xef\xbb\xbf") else 0)
        line = raw.count(b"\n", 0, offset) + 1
        column = offset - (raw.rfind(b"\n", 0, offset) + 1) + 1
        msg = (
            f"{source}: line {line}, column {column}: not UTF-8 text (byte "
            f"0x{raw[offset]:02x}); save the configuration as UTF-8"
        )
        raise ConfigError(msg) from None
    try:
        return yaml.load(text, Loader=_loader())  # a safe loader
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        where = "top level" if mark is None else f"line {mark.line + 1}, column {mark.column + 1}"
        what = "; ".join(str(part) for part in (err.context, err.problem) if part)
        msg = f"{source}: {where}: not valid YAML: {what or err}"
        raise ConfigError(msg) from None
    except yaml.YAMLError as err:
        position = getattr(err, "position", None)
        where = "top level"
        if isinstance(position, int):
            before = text[:position]
            where = f"line {before.count(_NEWLINE) + 1}, column {position - before.rfind(_NEWLINE)}"
        reason = getattr(err, "reason", None) or str(err).splitlines()[0]
        character = getattr(err, "character", None)
        if isinstance(character, str) and len(character) == 1:
            character = ord(character)
        if isinstance(character, int):
            reason = f"unacceptable character #x{character:04x}: {reason}"
        msg = f"{source}: {where}: not valid YAML: {reason}"
        raise ConfigError(msg) from None
    except RecursionError:
        msg = f"{source}: top level: nested too deeply to be a configuration"
        raise ConfigError(msg) from None


_LOADER: Any = None


def _loader() -> Any:
    """A YAML safe loader that refuses a key given twice in one mapping."""
    global _LOADER  # noqa: PLW0603 - one class, made on first use (yaml is imported late)
    if _LOADER is not None:
        return _LOADER
    import yaml

    base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

    class UniqueKeyLoader(base):  # type: ignore[misc, valid-type]
        def construct_mapping(self, node: Any, deep: bool = False) -> Any:
            if isinstance(node, yaml.MappingNode):
                seen: set[Any] = set()
                for key_node, _ in node.value:
                    if key_node.tag == "tag:yaml.org,2002:merge":
                        continue
                    key = self.construct_object(key_node, deep=False)
                    try:
                        repeated = key in seen
                        seen.add(key)
                    except TypeError:
                        continue  # an unhashable key: the base class names it
                    if repeated:
                        raise yaml.constructor.ConstructorError(
                            None,
                            None,
                            f"the key {key!r} is given twice in one mapping",
                            key_node.start_mark,
                        )
            return super().construct_mapping(node, deep=deep)

    _LOADER = UniqueKeyLoader
    return _LOADER


def _check_size(config: dict[str, Any], source: str) -> None:
    """Refuse a configuration that refers to itself or expands to too many values."""
    from rosenblatt.studies.config_checks import ConfigError

    sizes: dict[int, int] = {}
    active: set[int] = set()

    def size(value: Any) -> int:
        if not isinstance(value, (dict, list)):
            return 1
        key = id(value)
        if key in sizes:
            return sizes[key]
        if key in active:
            msg = f"{source}: top level: a value contains itself (a YAML alias inside its anchor)"
            raise ConfigError(msg)
        active.add(key)
        total = 1
        for item in value.values() if isinstance(value, dict) else value:
            total += size(item)
            if total > MAX_VALUES:
                msg = (
                    f"{source}: top level: expands to more than {MAX_VALUES} values "
                    "(YAML aliases repeating large anchors)"
                )
                raise ConfigError(msg)
        active.discard(key)
        sizes[key] = total
        return total

    try:
        size(config)
    except RecursionError:
        msg = f"{source}: top level: nested too deeply to be a configuration"
        raise ConfigError(msg) from None


def _name(value: Any, source: str) -> str:
    """The study's name: a folder name (results/<name>, data/<name>)."""
    from rosenblatt.studies.config_checks import plain_name

    return plain_name(value, source, "name")
