"""An analysis processor that logs each chunk to marker files and holds one chunk until a flag.

The dask workers import this module to unpickle :class:`LoggingAnalysisProcessor`,
so it lives apart from the test module. Each chunk touches
``<log_dir>/<start>-<stop>-<pid>-<token>.start`` when it begins and the same
name with ``.done`` when its output is ready. The chunk that starts at
``hold_start`` waits, on its first execution, until ``<log_dir>/released``
exists: the process running it is surely in the middle of a chunk while it waits.
"""

from __future__ import annotations

import os
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from rosenblatt.processors.analysis import AnalysisProcessor
from rosenblatt.processors.events import ParticleBatch

__all__ = ["RELEASE_FLAG", "ChunkMarker", "LoggingAnalysisProcessor", "read_markers"]

#: name of the file that releases the held chunk
RELEASE_FLAG = "released"


class ChunkMarker(NamedTuple):
    """One execution of a chunk, from its marker files."""

    start: int
    stop: int
    pid: int
    token: str
    done: bool


def read_markers(log_dir: str | os.PathLike[str]) -> list[ChunkMarker]:
    """Every chunk execution logged in ``log_dir``, started or done."""
    names = {path.name for path in Path(log_dir).iterdir()}
    markers = []
    for name in names:
        stem, _, suffix = name.rpartition(".")
        if suffix != "start":
            continue
        start, stop, pid, token = stem.split("-")
        markers.append(ChunkMarker(int(start), int(stop), int(pid), token, f"{stem}.done" in names))
    return sorted(markers)


@dataclass
class LoggingAnalysisProcessor(AnalysisProcessor):
    """:class:`AnalysisProcessor` whose chunks are logged, one of them held until released.

    Parameters
    ----------
    log_dir : str
        Folder of the marker files.
    hold_start : int
        First entry of the chunk that waits for the release flag (``-1``: none).
    delay : float
        Seconds every chunk sleeps after its start marker.
    hold_timeout : float
        Seconds the held chunk waits at most for the release flag.
    """

    log_dir: str = ""
    hold_start: int = -1
    delay: float = 0.0
    hold_timeout: float = 60.0

    def process_batch(self, batch: ParticleBatch) -> dict[str, Any]:
        """Log the chunk, hold or delay it, and return the analysis output."""
        folder = Path(self.log_dir)
        stem = f"{batch.start}-{batch.stop}-{os.getpid()}-{uuid.uuid4().hex}"
        (folder / f"{stem}.start").touch()
        release = folder / RELEASE_FLAG
        if batch.start == self.hold_start:
            deadline = time.monotonic() + self.hold_timeout
            while not release.exists() and time.monotonic() < deadline:
                time.sleep(0.02)
        time.sleep(self.delay)
        output = super().process_batch(batch)
        (folder / f"{stem}.done").touch()
        return output
