"""Open an event file in a child process first, so that a damaged file cannot crash the caller.

On some damaged files a C library crashes the process instead of reporting an
error: HDF5 with a segmentation fault, Arrow's parquet reader by aborting on
an exception it does not catch. Before a reader opens such a file, a child
process opens it and reads all of its metadata (HDF5: every node, every
attribute and the first and last row of every array; parquet: the footer, the
schema and every row group's column-chunk descriptions). If the child dies,
the file is refused with an :class:`~rosenblatt.io.EventFileError` that names
it; if it reports an ordinary error, the reader meets the same error and
reports it itself.

The check runs once per file (path, kind, size and modification time) and
process. This module is also the child's script: it imports nothing from the
package.
"""

from __future__ import annotations

import functools
import signal
import subprocess
import sys
from pathlib import Path

__all__ = ["check_opens"]

#: seconds the child may take to open a file and read its metadata
PROBE_TIMEOUT = 120

#: the library each kind of file is read with, for the messages
LIBRARIES = {"hdf5": "HDF5", "parquet": "Arrow parquet"}


def check_opens(path: Path, kind: str) -> None:
    """Raise :class:`~rosenblatt.io.EventFileError` if opening ``path`` crashes its library.

    Parameters
    ----------
    path
        The file (for parquet also a directory of parquet files).
    kind
        ``"hdf5"`` or ``"parquet"``.
    """
    stat = path.stat()
    _probe(str(path.resolve()), kind, stat.st_size, stat.st_mtime_ns)


@functools.lru_cache(maxsize=1024)
def _probe(path: str, kind: str, size: int, mtime_ns: int) -> None:
    from rosenblatt.io import EventFileError

    library = LIBRARIES[kind]
    try:
        result = subprocess.run(
            [sys.executable, __file__, kind, path],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=PROBE_TIMEOUT,
            check=False,
        )
    except subprocess.TimeoutExpired as err:
        msg = f"{path}: opening the file with {library} did not finish in {PROBE_TIMEOUT} s (damaged file?)"
        raise EventFileError(msg) from err
    if result.returncode < 0:
        try:
            name = signal.Signals(-result.returncode).name
        except ValueError:
            name = f"signal {-result.returncode}"
        msg = (
            f"{path}: damaged file: opening it crashed the {library} library ({name}) in a "
            "test process; the file was not read"
        )
        raise EventFileError(msg)


def _walk_hdf5(path: str) -> None:
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


def _walk_parquet(path: str) -> None:
    """Read the footer, schema and row-group descriptions of a parquet file or directory."""
    import pyarrow.parquet as pq

    root = Path(path)
    files = sorted(root.rglob("*.parquet")) if root.is_dir() else [root]
    for file in files:
        metadata = pq.ParquetFile(file).metadata
        metadata.schema.to_arrow_schema()
        for group in range(metadata.num_row_groups):
            row_group = metadata.row_group(group)
            for column in range(row_group.num_columns):
                row_group.column(column).to_dict()


if __name__ == "__main__":
    walk = {"hdf5": _walk_hdf5, "parquet": _walk_parquet}[sys.argv[1]]
    try:
        walk(sys.argv[2])
    except Exception:  # noqa: BLE001 - an ordinary error is the reader's to report
        sys.exit(1)
