"""Open an HDF5 file in a child process first, so that a damaged file cannot crash the caller.

On some damaged files the HDF5 C library crashes the process (a segmentation
fault) instead of reporting an error. Before the LHCO reader opens a file, a
child process opens it, walks every node, reads every attribute and the first
and last row of every array. If the child dies, the file is refused with an
:class:`~rosenblatt.io.EventFileError` that names it; if it reports an
ordinary error, the reader meets the same error and reports it itself.

The check runs once per file (path, size and modification time) and process.
This module is also the child's script: it imports nothing from the package.
"""

from __future__ import annotations

import functools
import signal
import subprocess
import sys
from pathlib import Path

__all__ = ["check_hdf5_opens"]

#: seconds the child may take to open and walk a file
PROBE_TIMEOUT = 120


def check_hdf5_opens(path: Path) -> None:
    """Raise :class:`~rosenblatt.io.EventFileError` if opening ``path`` crashes HDF5."""
    stat = path.stat()
    _probe(str(path.resolve()), stat.st_size, stat.st_mtime_ns)


@functools.lru_cache(maxsize=1024)
def _probe(path: str, size: int, mtime_ns: int) -> None:
    from rosenblatt.io import EventFileError

    try:
        result = subprocess.run(
            [sys.executable, __file__, path],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=PROBE_TIMEOUT,
            check=False,
        )
    except subprocess.TimeoutExpired as err:
        msg = f"{path}: opening the HDF5 file did not finish in {PROBE_TIMEOUT} s (damaged file?)"
        raise EventFileError(msg) from err
    if result.returncode < 0:
        try:
            name = signal.Signals(-result.returncode).name
        except ValueError:
            name = f"signal {-result.returncode}"
        msg = (
            f"{path}: damaged HDF5 file: opening it crashed the HDF5 library ({name}) in a "
            "test process; the file was not read"
        )
        raise EventFileError(msg)


def _walk(path: str) -> None:
    """Open ``path`` and touch all of its metadata and the ends of every array."""
    import tables

    with tables.open_file(path, mode="r") as handle:
        for node in handle.walk_nodes("/"):
            attributes = node._v_attrs
            for name in attributes._v_attrnames:
                attributes[name]
            if isinstance(node, tables.Leaf) and node.nrows > 0:
                node.read(0, 1)
                node.read(node.nrows - 1, node.nrows)


if __name__ == "__main__":
    try:
        _walk(sys.argv[1])
    except Exception:  # noqa: BLE001 - an ordinary error is the reader's to report
        sys.exit(1)
