"""Study configurations: one YAML file per study in ``configs/``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["DEFAULT_CONFIG", "find_config", "load_config"]

#: configuration run by ``rosenblatt run`` without argument
DEFAULT_CONFIG = "lhco-quick"


def _config_dirs() -> list[Path]:
    """Folders searched for a configuration given by name."""
    package_root = Path(__file__).resolve().parents[2]
    return [Path.cwd() / "configs", package_root / "configs"]


def find_config(name_or_path: str | Path) -> Path:
    """Return the path of a configuration given as a file or as a name (``"blobs"``)."""
    path = Path(name_or_path)
    if path.is_file():
        return path
    if path.suffix not in {".yaml", ".yml"}:
        for folder in _config_dirs():
            candidate = folder / f"{path.name}.yaml"
            if candidate.is_file():
                return candidate
    for folder in _config_dirs():
        candidate = folder / path.name
        if candidate.is_file():
            return candidate
    known = sorted({p.stem for d in _config_dirs() if d.is_dir() for p in d.glob("*.yaml")})
    msg = f"no configuration {str(name_or_path)!r}; known configurations: {', '.join(known) or 'none'}"
    raise FileNotFoundError(msg)


def load_config(name_or_path: str | Path) -> dict[str, Any]:
    """Read a YAML configuration; ``name`` defaults to the file's stem."""
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
