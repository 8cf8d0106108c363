"""The files of a mergeable fit: per-chunk skims and per-group sorted tables.

The first pass of a :class:`~rosenblatt.MergeableFit` writes every chunk's
events once, as a *skim*: a float64 table of the protected observables, the
score, the weight, the event's index in its chunk and a 64-bit key that
identifies the event for bootstrap draws. The table is sorted by the column
the fit orders first and stored column by column (Fortran order), so that a
later pass reads the events of a value range of any chunk by two binary
searches and contiguous slices, without reading the rest of the file.

A skim is named after its chunk (the chunk's coffea metadata, or else its
content), so a chunk processed twice writes the same file; files are written
under a temporary name and renamed into place, so a reader never sees half a
file. Later passes write *sorted group tables* of the same layout into a
folder of the fit's own (named by the fit's token) that is removed when the
fit ends.

Bootstrap replicas draw their Poisson(1) counts from the event key with a
counter-based generator (SplitMix64), so an event's count is the same
wherever and whenever the event is read.
"""

from __future__ import annotations

import hashlib
import math
import os
import shutil
import tempfile
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from rosenblatt.typing import FloatArray

__all__ = [
    "GROUPS_FOLDER",
    "SkimStore",
    "bootstrap_counts",
    "chunk_name",
    "event_keys",
    "table_columns",
]


#: prefix of the folder that holds one fit's sorted group tables
GROUPS_FOLDER = ".rosenblatt-groups-"
_SUFFIX = ".npy"
_MASK = (1 << 64) - 1


def table_columns(k: int) -> dict[str, int]:
    """Column index of each quantity in a skim or group table of ``k`` observables.

    ``x0 .. x{k-1}``, then ``y``, ``w``, ``index`` (the event's position in
    its chunk, or its global number in a group table) and ``key`` (the event
    key's bits).
    """
    names = [f"x{d}" for d in range(k)] + ["y", "w", "index", "key"]
    return {name: position for position, name in enumerate(names)}


def chunk_name(identity: Mapping[str, Any] | None, arrays: Iterable[NDArray[Any]]) -> str:
    """The skim name of a chunk: from its coffea metadata if given, else from its content.

    Metadata names the chunk by dataset, file, tree and entry range (a chunk
    processed again gets the same name); content names it by the bytes of its
    arrays.
    """
    digest = hashlib.blake2b(digest_size=12)
    if identity is not None:
        fields = ("dataset", "filename", "treename", "entrystart", "entrystop")
        for name in fields:
            digest.update(f"{name}={identity.get(name)!r};".encode())
    else:
        for array in arrays:
            digest.update(repr(array.shape).encode())
            digest.update(np.ascontiguousarray(array).tobytes())
    return f"skim-{digest.hexdigest()}"


def _splitmix64(values: NDArray[np.uint64]) -> NDArray[np.uint64]:
    """The SplitMix64 finaliser: a bijection of 64-bit integers that mixes every bit."""
    with np.errstate(over="ignore"):
        z = values + np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        mixed: NDArray[np.uint64] = z ^ (z >> np.uint64(31))
        return mixed


def event_keys(name: str, n_events: int) -> NDArray[np.uint64]:
    """A 64-bit key per event of the chunk ``name``: the chunk's hash mixed with the event's index."""
    base = int.from_bytes(hashlib.blake2b(name.encode(), digest_size=8).digest(), "little")
    index = np.arange(n_events, dtype=np.uint64)
    return _splitmix64(index ^ np.uint64(base))


#: P(K <= k) of a Poisson(1) count, k = 0, 1, ... (to double precision)
_POISSON_CDF = np.cumsum([math.exp(-1.0) / math.factorial(k) for k in range(20)])


def bootstrap_counts(seed: int, draw: int, keys: NDArray[np.uint64]) -> FloatArray:
    """Poisson(1) counts of bootstrap draw ``draw`` for the events of ``keys``.

    The count of an event depends on ``(seed, draw, key)`` only, so a
    replica's weights are the same in every pass and on every worker.
    """
    stream = int.from_bytes(
        hashlib.blake2b(f"{seed}:{draw}".encode(), digest_size=8).digest(), "little"
    )
    bits = _splitmix64(np.asarray(keys, dtype=np.uint64) ^ np.uint64(stream & _MASK))
    uniform = (bits >> np.uint64(11)).astype(np.float64) * 2.0**-53
    counts: FloatArray = np.searchsorted(_POISSON_CDF, uniform, side="right").astype(np.float64)
    return counts


@dataclass(frozen=True)
class SkimStore:
    """The folder of a fit's skims (picklable: workers write and read through it).

    Attributes
    ----------
    directory : str
        An absolute path that every worker can reach.
    token : str
        Names the fit's folder of sorted group tables.
    """

    directory: str
    token: str

    @classmethod
    def create(cls, directory: str | os.PathLike[str] | None) -> tuple[SkimStore, bool]:
        """A store in ``directory`` (created if missing), or in a new temporary folder.

        Returns the store and whether its folder is temporary.
        """
        token = uuid.uuid4().hex[:12]
        if directory is None:
            return cls(tempfile.mkdtemp(prefix="rosenblatt-skims-"), token), True
        path = Path(directory).resolve()
        path.mkdir(parents=True, exist_ok=True)
        return cls(str(path), token), False

    def skim_path(self, name: str) -> str:
        """The file of the skim ``name``."""
        return os.path.join(self.directory, name + _SUFFIX)

    def group_path(self, index: int) -> str:
        """The file of the sorted group table ``index``."""
        return os.path.join(self.directory, GROUPS_FOLDER + self.token, f"group-{index}{_SUFFIX}")

    def write(self, path: str, table: FloatArray) -> None:
        """Write ``table`` column by column to ``path`` atomically (temporary name, then rename)."""
        folder = os.path.dirname(path)
        os.makedirs(folder, exist_ok=True)
        temporary = os.path.join(folder, f".{uuid.uuid4().hex}.tmp{_SUFFIX}")
        try:
            np.save(temporary, np.asfortranarray(table), allow_pickle=False)
            os.replace(temporary, path)
        finally:
            if os.path.exists(temporary):
                os.unlink(temporary)

    @staticmethod
    def read(path: str) -> FloatArray:
        """The table at ``path``, memory-mapped (columns are contiguous)."""
        try:
            table: FloatArray = np.load(path, mmap_mode="r", allow_pickle=False)
        except FileNotFoundError as err:
            msg = (
                f"the skim file {path} is missing: the skims of a fit must stay in place until "
                "it ends (and be reachable from every worker)"
            )
            raise FileNotFoundError(msg) from err
        return table

    def remove_groups(self) -> None:
        """Remove the fit's sorted group tables."""
        shutil.rmtree(os.path.join(self.directory, GROUPS_FOLDER + self.token), ignore_errors=True)

    def remove_skims(self, names: Iterable[str], *, temporary: bool) -> None:
        """Remove the skims ``names`` (and the whole folder if it is temporary)."""
        self.remove_groups()
        if temporary:
            shutil.rmtree(self.directory, ignore_errors=True)
            return
        for name in set(names):
            path = self.skim_path(name)
            if os.path.exists(path):
                os.unlink(path)
