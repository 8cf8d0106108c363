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

__all__ = ["DEFAULT_CONFIG", "config_dirs", "find_config", "known_configs", "load_config"]

#: configuration run by ``rosenblatt run`` without argument
DEFAULT_CONFIG = "lhco-quick"

_SUFFIXES = (".yaml", ".yml")


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
    known = ", ".join(known_configs()) or "none"
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
        If no configuration matches.
    ValueError
        If the file is not a mapping with a ``study`` key.
    """
    import yaml

    path = find_config(name_or_path)
    with path.open(encoding="utf-8") as stream:
        config = yaml.safe_load(stream)
    if not isinstance(config, dict) or "study" not in config:
        msg = f"{path}: a configuration must be a mapping with a 'study' key"
        raise ValueError(msg)
    config.setdefault("name", path.stem)
    config["_path"] = str(path)
    return config
