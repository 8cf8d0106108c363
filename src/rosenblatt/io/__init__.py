"""Event files: LHC Olympics HDF5, ROOT TTrees and parquet.

The readers return *event arrays*: awkward records with the jagged particle
fields ``pt``, ``eta``, ``phi`` (GeV, massless, by decreasing ``pt``), the
scalar fields ``label`` (1 signal, 0 background, -1 when the file has no
labels), ``weight`` (1 when the file has no weights) and ``entry`` (the event's
entry number in its file). :func:`rosenblatt.hep.particles.event_particles`
turns them into the particle records the jet clustering takes.

The format follows the file extension (:data:`EVENT_FORMATS`):

- ``.h5``, ``.hdf5``: the LHC Olympics 2020 R&D layout (:mod:`rosenblatt.io.lhco`);
- ``.root``: a TTree ``Events`` with NanoAOD-like branches (:mod:`rosenblatt.io.root`);
- ``.parquet``: awkward's parquet (:mod:`rosenblatt.io.parquet`).

The readers and writers are imported on first use, so that ``import
rosenblatt.io`` needs none of uproot, PyTables or pyarrow.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rosenblatt.exceptions import EventFileError

if TYPE_CHECKING:
    import os

    import awkward as ak

__all__ = [
    "EVENT_FORMATS",
    "EventFileError",
    "check_input_file",
    "event_format",
    "iter_events",
    "read_events",
]

#: file extension -> format (module of :mod:`rosenblatt.io` that reads it)
EVENT_FORMATS = {".h5": "lhco", ".hdf5": "lhco", ".root": "root", ".parquet": "parquet"}

#: public names of the format modules, imported on first access
_LAZY_NAMES = {
    "LHCOWriter": "lhco",
    "iter_lhco": "lhco",
    "lhco_info": "lhco",
    "read_lhco": "lhco",
    "write_lhco": "lhco",
    "RootWriter": "root",
    "iter_root": "root",
    "read_root": "root",
    "read_root_nanoevents": "root",
    "root_info": "root",
    "write_root": "root",
    "iter_parquet": "parquet",
    "read_parquet": "parquet",
    "write_parquet": "parquet",
}


def event_format(path: str | os.PathLike[str]) -> str:
    """Return the format of ``path`` from its extension: ``"lhco"``, ``"root"`` or ``"parquet"``.

    Raises
    ------
    ValueError
        If the extension is not one of :data:`EVENT_FORMATS`.
    """
    suffix = Path(path).suffix.lower()
    if suffix not in EVENT_FORMATS:
        raise ValueError(
            f"{path}: unknown event file extension {suffix!r}; use one of {sorted(EVENT_FORMATS)}"
        )
    return EVENT_FORMATS[suffix]


def check_input_file(path: str | os.PathLike[str], *, allow_directory: bool = False) -> Path:
    """Return ``path`` as a :class:`~pathlib.Path` after checking that it can be read.

    Parameters
    ----------
    path : path-like
        File to read.
    allow_directory : bool, default False
        Accept a directory (a parquet dataset).

    Raises
    ------
    FileNotFoundError
        If nothing exists at ``path``.
    EventFileError
        If ``path`` is a directory (unless allowed) or an empty (0-byte) file.
    """
    file_path = Path(path)
    if not file_path.exists():
        raise FileNotFoundError(f"{file_path}: no such file")
    if file_path.is_dir():
        if allow_directory:
            return file_path
        raise EventFileError(f"{file_path}: is a directory, expected an event file")
    if file_path.stat().st_size == 0:
        raise EventFileError(f"{file_path}: the file is empty (0 bytes)")
    return file_path


def read_events(path: str | os.PathLike[str], **options: Any) -> ak.Array:
    """Read every event of ``path`` into an event array, the format from the extension.

    Parameters
    ----------
    path : path-like
        ``.h5``/``.hdf5``, ``.root`` or ``.parquet`` file.
    **options
        Passed on to :func:`~rosenblatt.io.lhco.read_lhco`,
        :func:`~rosenblatt.io.root.read_root` or
        :func:`~rosenblatt.io.parquet.read_parquet`.
    """
    fmt = event_format(path)
    module = importlib.import_module(f"{__name__}.{fmt}")
    return getattr(module, f"read_{fmt}")(path, **options)


def iter_events(
    path: str | os.PathLike[str], chunk_size: int = 10_000, **options: Any
) -> Iterator[ak.Array]:
    """Iterate over the events of ``path`` in event arrays of at most ``chunk_size`` events.

    Parameters
    ----------
    path : path-like
        ``.h5``/``.hdf5``, ``.root`` or ``.parquet`` file.
    chunk_size : int, default 10000
        Events per chunk.
    **options
        Passed on to the format's ``iter_*`` function.
    """
    fmt = event_format(path)
    module = importlib.import_module(f"{__name__}.{fmt}")
    reader: Callable[..., Iterator[Any]] = getattr(module, f"iter_{fmt}")
    return reader(path, chunk_size=chunk_size, **options)


def __getattr__(name: str) -> Any:
    if name in _LAZY_NAMES:
        module = importlib.import_module(f"{__name__}.{_LAZY_NAMES[name]}")
        return getattr(module, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__, *_LAZY_NAMES})
