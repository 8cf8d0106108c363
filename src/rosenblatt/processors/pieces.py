"""A pass's finished chunks kept on disk, so that a stopped pass resumes where it was.

Each chunk of a pass (``dataset``, file, entries ``[start, stop)``) writes its
output, in the worker that computed it, to one *piece*: a zip file named by a
key that hashes what the output was computed from, the pass's
:attr:`PieceStore.fingerprint` (its configuration: cuts, weights, scores, the
states of the transforms applied, the blinding), the file's content hash
(BLAKE2b, as the records of :mod:`rosenblatt._records`; for a remote file, its
ROOT UUID) and the entry range; a local file is named by its name and content, not
its folder, so that a data folder moved with its input files keeps its pieces. The piece is written atomically
(:mod:`rosenblatt._atomic`): it is whole or absent. It holds a sealed manifest
(the chunk, its cut flow, the skim files it wrote with their size and hash),
each histogram as UHI arrays (``uhi.io.zip``, read without pickle) and each
array of the output's ``"arrays"`` (``{name: numpy array}``, per-event values
such as a fit's ``x``, ``y`` and weights) as a ``.npy`` member.

A pass then (:func:`run_in_pieces`) runs only the chunks without a sound
piece, and merges every piece read back from disk in the order of the chunks,
sorted by dataset, file and entry: its output is the same bit for bit however
the pass was split over runs, workers and completion orders (the ``"arrays"``
are joined end to end in that order). The merge
goes on while the chunks run, the pieces kept from an earlier run first, and
every :data:`CHECKPOINT_EVERY` chunks its state is written as a *checkpoint*
(the merge of the first chunks, in a piece's layout, in the folder beside the
pieces' named by :attr:`PieceStore.checkpoints`, keyed by the keys of the pieces
it holds): a resumed pass reads the latest checkpoint of its chunks, then
only the pieces after it, so that it costs little more than its chunks left.
A pass whose outputs name skim files or hold arrays, or a merge holding a chunk
that could not be read, writes no checkpoint (their pieces are checked one by one). Pieces of another
key (another configuration, a changed input file, another chunking) are never
read, and are removed once the pass is done. A kept piece is read once: its
manifest, histograms and skim files are checked before the chunks left run, its
arrays (the bulk of a fit's piece) as the merge reads them, straight into
arrays of their own (each member's CRC checked on the way). A damaged piece, or one whose skim
file is damaged, is named in one line and computed again, also when the merge
finds it (:func:`rosenblatt._records.corrupt`; refused under ``--refuse-corrupt-cache``);
a chunk that could not be read is kept for the merge but computed again by the
next run.

Where the workers share no disk with the driver (a store made with
``shared=False``), a worker writes nothing of the driver's: the chunk's skims go
to a temporary folder of its own, and its piece and skims travel back to the
driver as bytes in the task's result (``"files"``: ``{path on the driver:
bytes}``), which :func:`write_returned` writes, the skims before their piece.
"""

from __future__ import annotations

import contextvars
import copy
import hashlib
import io
import json
import logging
import os
import signal
import struct
import tempfile
import threading
import uuid
import zipfile
import zlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, fields, is_dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from rosenblatt._atomic import atomic_write
from rosenblatt._jit import one_thread_in_a_dask_worker
from rosenblatt._records import check_files, corrupt, file_entries, is_sealed, seal

try:  # the pieces of a pass that runs without coffea (``rosenblatt fit``) need none
    from coffea.processor import ProcessorABC as _ProcessorBase
    from coffea.processor import accumulate as _coffea_accumulate
except ImportError:  # pragma: no cover - coffea comes with the hep extra
    _ProcessorBase = object
    _coffea_accumulate = None

__all__ = [
    "ARRAYS",
    "DAMAGED",
    "PIECE_FORMAT",
    "Chunk",
    "PieceProcessor",
    "PieceStore",
    "PieceTask",
    "fingerprint",
    "run_in_pieces",
    "write_returned",
]

log = logging.getLogger("rosenblatt.pieces")

#: the ``format`` of a piece's manifest
PIECE_FORMAT = "rosenblatt-pass-piece"
#: version of the pieces' layout: a piece of another version is not read
PIECE_VERSION = 1
#: the manifest's member in a piece
_MANIFEST = "piece.json"
#: keys of an output whose value is a mapping of names to histograms
_HISTOGRAMS = ("abcd", "plane", "passfail", "replicas", "resampled")
#: key of an output whose value is a mapping of names to numpy arrays, joined in chunk order
ARRAYS = "arrays"
#: most pieces read ahead of the merge while the chunks left run (bounds the memory held)
READ_AHEAD = 64
#: chunks merged between two checkpoints of the merge
CHECKPOINT_EVERY = 16
#: seconds between two looks for the pieces the workers write
_POLL_SECONDS = 0.1
#: bytes of a zip member's local header before its name
_LOCAL_HEADER = 30
#: bytes first read of a stored ``.npy`` member: its header (at most this) and the start of its data
_NPY_HEAD = 4096
#: what reading a damaged piece or checkpoint raises
DAMAGED = (OSError, EOFError, ValueError, KeyError, zipfile.BadZipFile, zlib.error)
#: test hook: ``<pass>:<n>`` sends SIGTERM to the run once the pass's folder holds n pieces
STOP_AFTER_PIECES = "ROSENBLATT_STOP_AFTER_PIECES"


def fingerprint(document: Any) -> str:
    """A short BLAKE2b hash of a JSON-compatible document (keys sorted)."""
    text = json.dumps(document, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.blake2b(text.encode("utf-8"), digest_size=16).hexdigest()


@dataclass(frozen=True, order=True)
class Chunk:
    """One work item of a pass: entries ``[start, stop)`` of ``file`` in ``dataset``.

    ``uuid`` is the ROOT file's UUID where coffea read one (it identifies a
    remote file, whose content is not hashed).
    """

    dataset: str
    file: str
    start: int
    stop: int
    uuid: str = ""

    @classmethod
    def of_metadata(cls, metadata: Mapping[str, Any]) -> Chunk:
        """The chunk of a coffea chunk's ``events.metadata``."""
        return cls(
            str(metadata["dataset"]),
            str(metadata["filename"]),
            int(metadata.get("entrystart", 0)),
            int(metadata.get("entrystop", 0)),
            str(metadata.get("fileuuid") or ""),
        )

    @classmethod
    def of_work_item(cls, item: Any) -> Chunk:
        """The chunk of a coffea ``WorkItem`` (as :meth:`of_metadata` sees it in the worker)."""
        raw = item.fileuuid
        return cls(
            str(item.dataset),
            str(item.filename),
            int(item.entrystart),
            int(item.entrystop),
            str(uuid.UUID(bytes=raw)) if len(raw) > 0 else "",
        )


@dataclass(frozen=True)
class PieceStore:
    """The pieces of one pass: a folder, the pass's fingerprint, the input files' hashes.

    Picklable: the workers write the pieces.

    Attributes
    ----------
    folder : str
        Where the pieces are (created by :meth:`create`).
    name : str
        The pass's name, in the log and in the stop hook.
    fingerprint : str
        What the pass's outputs depend on besides the input (:func:`fingerprint`).
    digests : mapping of str to str
        Per local input file, its content hash (BLAKE2b).
    driver : int
        The process of the run (the stop hook's target).
    shared : bool
        Whether the workers see the driver's folders; if not, the pieces and
        skims come back in the tasks' results (see the module docstring).
    """

    folder: str
    name: str
    fingerprint: str
    digests: Mapping[str, str]
    driver: int
    shared: bool = True

    @classmethod
    def create(
        cls,
        folder: str | os.PathLike[str],
        name: str,
        document: Any,
        digests: Mapping[str, str],
        *,
        shared: bool = True,
    ) -> PieceStore:
        """The store of pass ``name`` in ``folder`` (made), for the configuration ``document``.

        ``digests``: per local input file, its content hash
        (:func:`rosenblatt._records.file_digest`); ``shared``: whether the
        workers see ``folder``.
        """
        Path(folder).mkdir(parents=True, exist_ok=True)
        path = str(Path(folder).resolve())
        return cls(path, name, fingerprint(document), dict(digests), os.getpid(), bool(shared))

    def key(self, chunk: Chunk) -> str:
        """The name of ``chunk``'s piece: what its output was computed from, hashed."""
        # a local file by its name and content (the folder may be moved), a remote one by its UUID
        digest = self.digests.get(chunk.file)
        content = [Path(chunk.file).name, digest] if digest else [chunk.file, chunk.uuid]
        where = [chunk.dataset, *content, chunk.start, chunk.stop]
        return fingerprint([PIECE_VERSION, self.fingerprint, *where])

    def identity(self, chunks: Iterable[Chunk]) -> str:
        """A short hash of the keys of the pieces of ``chunks``: what their pass computed from."""
        return fingerprint(sorted({self.key(chunk) for chunk in chunks}))

    def path(self, chunk: Chunk) -> Path:
        """Where ``chunk``'s piece is."""
        return Path(self.folder) / f"{self.key(chunk)}.zip"

    @property
    def checkpoints(self) -> Path:
        """The folder of the merge's checkpoints (beside the pieces' folder)."""
        return Path(f"{self.folder}.merged")

    def checkpoint_key(self, keys: Sequence[str]) -> str:
        """The key of the checkpoint of the pieces of ``keys`` (merged in that order)."""
        return fingerprint([PIECE_VERSION, self.fingerprint, "merged", list(keys)])

    def save_checkpoint(self, keys: Sequence[str], output: Mapping[str, Any]) -> Path:
        """Write the merge of the pieces of ``keys`` as a checkpoint (atomically); its path."""
        self.checkpoints.mkdir(parents=True, exist_ok=True)
        key = self.checkpoint_key(keys)
        path = self.checkpoints / f"{len(keys)}-{key}.zip"
        # only a merge that names no skim file and holds no array is kept (an empty list stays one)
        skim: dict[str, Any] | None = {} if "skim" in output else None
        with atomic_write(path) as tmp:
            self._write_zip(tmp, key, None, output, skim)
        return path

    def load_checkpoint(self, keys: Sequence[str]) -> tuple[int, dict[str, Any] | None]:
        """The latest checkpoint of the first of ``keys``: how many it holds, and their merge.

        ``(0, None)`` without one; a damaged checkpoint is reported
        (:func:`rosenblatt._records.corrupt`), removed and passed over.
        """
        found = []
        for path in self.checkpoints.glob("*-*.zip") if self.checkpoints.is_dir() else ():
            number, _, name = path.stem.partition("-")
            if number.isdigit() and 0 < int(number) <= len(keys):
                found.append((int(number), name, path))
        for count, key, path in sorted(found, reverse=True):
            if key != self.checkpoint_key(keys[:count]):
                continue
            try:
                return count, self._read(path, key)
            except DAMAGED:
                corrupt(path, "is not a readable checkpoint of this pass (truncated or altered)")
                path.unlink(missing_ok=True)
        return 0, None

    def save(self, chunk: Chunk, output: Mapping[str, Any]) -> None:
        """Write ``chunk``'s output as its piece (atomically), then apply the stop hook."""
        skim = file_entries(self.folder, output["skim"]) if "skim" in output else None
        with atomic_write(self.path(chunk)) as tmp:
            self._write_zip(tmp, self.key(chunk), chunk, output, skim)
        self._stop_hook()

    def returned(self, chunk: Chunk, output: Mapping[str, Any], skim_dir: str | None) -> bytes:
        """``chunk``'s piece as bytes, its skims (written here) recorded as in ``skim_dir``."""
        skim = None
        if "skim" in output:
            skim = {}
            for path in output["skim"]:
                if skim_dir is None:
                    raise ValueError("a pass that writes skims needs the driver's skim folder")
                (entry,) = file_entries(Path(path).parent, [path]).values()
                skim[os.path.relpath(Path(skim_dir) / Path(path).name, self.folder)] = entry
            skim = dict(sorted(skim.items()))
        buffer = io.BytesIO()
        self._write_zip(buffer, self.key(chunk), chunk, output, skim)
        return buffer.getvalue()

    def _write_zip(
        self,
        path: Path | io.BytesIO,
        name: str,
        chunk: Chunk | None,
        output: Mapping[str, Any],
        skim: Mapping[str, Any] | None,
    ) -> None:
        """Write the zip file of the piece (or checkpoint) of key ``name`` to ``path``.

        ``chunk``: the piece's chunk (``None`` for a checkpoint); ``skim``: its skims' entries.
        """
        histograms: list[list[str]] = []
        arrays: list[list[str]] = []
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as zf:
            for key in _HISTOGRAMS:
                for variant, h in output.get(key, {}).items():
                    from hist import serialization
                    from uhi.io import zip as uhi_zip

                    member = f"h{len(histograms)}"
                    uhi_zip.write(zf, member, serialization.to_uhi(h))  # type: ignore[arg-type]
                    histograms.append([key, variant, member])
            for array, values in output.get(ARRAYS, {}).items():
                member = f"a{len(arrays)}.npy"
                buffer = io.BytesIO()
                np.save(buffer, np.asarray(values), allow_pickle=False)
                # stored as they are: numbers compress little, and a resumed pass reads them fast
                zf.writestr(member, buffer.getvalue(), compress_type=zipfile.ZIP_STORED)
                arrays.append([array, member])
            rest = {k: v for k, v in output.items() if k not in (*_HISTOGRAMS, "skim", ARRAYS)}
            manifest = {
                "format": PIECE_FORMAT,
                "version": PIECE_VERSION,
                "key": name,
                "chunk": None
                if chunk is None
                else [chunk.dataset, chunk.file, chunk.start, chunk.stop],
                "histograms": histograms,
                "arrays": arrays,
                # skim files relative to the pieces, so that the data folder may be moved
                "skim": skim,
                # a checkpoint's as text: its mappings in the order the merge made them
                "rest": rest if chunk is not None else json.dumps(rest),
            }
            zf.writestr(_MANIFEST, json.dumps(seal(manifest), sort_keys=True))

    def _stop_hook(self) -> None:
        """For tests: SIGTERM to the run once :data:`STOP_AFTER_PIECES` pieces of this pass exist."""
        hook = os.environ.get(STOP_AFTER_PIECES, "")
        name, _, count = hook.partition(":")
        if not (name == self.name and count.isdigit()):
            return
        if len(_pieces_in(Path(self.folder))) >= int(count):
            os.kill(self.driver, signal.SIGTERM)

    def _manifest(self, zf: zipfile.ZipFile, key: str) -> dict[str, Any] | None:
        document = json.loads(zf.read(_MANIFEST))
        sound = (
            is_sealed(document)
            and document.get("format") == PIECE_FORMAT
            and document.get("version") == PIECE_VERSION
            and document.get("key") == key
        )
        return document if sound else None

    def sound(self, chunk: Chunk) -> bool:
        """Whether ``chunk`` has a piece that is whole, with its skim files intact.

        A damaged piece is reported (:func:`rosenblatt._records.corrupt`) and
        removed; a piece of a chunk that could not be read is not sound (it
        is computed again). The members that :meth:`load` reads whole (the
        arrays) are checked as it reads them, not here, so that a kept piece
        is read once: :meth:`load` raises for a damaged one.
        """
        path = self.path(chunk)
        if not path.is_file():
            return False
        try:
            with zipfile.ZipFile(path) as zf:
                document = self._manifest(zf, self.key(chunk))
                if document is not None:
                    arrays = {member for _, member in document.get("arrays", [])}
                    _check_members(zf, {_MANIFEST, *arrays})
        except DAMAGED:
            document = None
        if document is None:
            self.discard(chunk)
            return False
        if "unreadable" in document["rest"]:
            return False
        skim = document["skim"]
        return skim is None or check_files(self.folder, skim)

    def discard(self, chunk: Chunk) -> None:
        """Report ``chunk``'s piece as damaged (:func:`rosenblatt._records.corrupt`), then remove it."""
        path = self.path(chunk)
        corrupt(path, "is not a readable piece of this pass (truncated or altered)")
        path.unlink(missing_ok=True)

    def load(self, chunk: Chunk) -> dict[str, Any]:
        """The output of ``chunk``, read back from its piece (histograms exactly as written).

        Raises one of :data:`DAMAGED` for a piece that is damaged (each array's
        CRC is checked as it is read).
        """
        return self._read(self.path(chunk), self.key(chunk))

    def _read(self, path: Path, name: str) -> dict[str, Any]:
        """The output in the piece or checkpoint ``path`` of key ``name``."""
        with zipfile.ZipFile(path) as zf:
            document = self._manifest(zf, name)
            if document is None:
                raise ValueError(f"{path}: not a piece of this pass")
            rest = document["rest"]
            output: dict[str, Any] = dict(json.loads(rest) if isinstance(rest, str) else rest)
            for key, variant, member in document["histograms"]:
                from hist import serialization
                from uhi.io import zip as uhi_zip

                h = serialization.from_uhi(uhi_zip.read(zf, member))
                output.setdefault(key, {})[variant] = h
            arrays = document.get("arrays", [])
            if arrays:
                with open(path, "rb", buffering=0) as handle:
                    for array, member in arrays:
                        output.setdefault(ARRAYS, {})[array] = _member_array(zf, handle, member)
        if document["skim"] is not None:
            folder = self.folder
            output["skim"] = [os.path.normpath(os.path.join(folder, n)) for n in document["skim"]]
        return output

    def prune(self, kept: Iterable[Chunk], checkpoint: Path | None = None) -> int:
        """Remove every file of the folders but the pieces of ``kept`` and ``checkpoint``.

        Returns how many pieces were removed (checkpoints are not counted).
        """
        wanted = {self.path(chunk).name for chunk in kept}
        removed = 0
        for path in Path(self.folder).iterdir():
            if path.name not in wanted and path.is_file():
                path.unlink(missing_ok=True)
                removed += 1
        if self.checkpoints.is_dir():
            for path in self.checkpoints.iterdir():
                if path != checkpoint and path.is_file():
                    path.unlink(missing_ok=True)
        return removed


def _check_members(zf: zipfile.ZipFile, skip: set[str]) -> None:
    """Read every member of ``zf`` but ``skip`` to its end: zipfile checks each one's CRC.

    Raises :class:`zipfile.BadZipFile` for a damaged member.
    """
    for info in zf.infolist():
        if info.filename not in skip:
            with zf.open(info) as member:
                while member.read(1 << 20):
                    pass


def _member_array(zf: zipfile.ZipFile, handle: Any, member: str) -> Any:
    """The array of the ``.npy`` member ``member`` of ``zf``, its CRC checked.

    A stored member is read once, straight into an array of its own
    (``handle``: the zip file opened apart, unbuffered); another through
    :meth:`zipfile.ZipFile.read`. Raises :class:`zipfile.BadZipFile` for a
    damaged member.
    """
    info = zf.getinfo(member)
    if info.compress_type != zipfile.ZIP_STORED or info.flag_bits & 0x1:
        return _npy_array(zf.read(member))
    handle.seek(info.header_offset)
    local = handle.read(_LOCAL_HEADER)
    if len(local) < _LOCAL_HEADER or local[:4] != b"PK\x03\x04":
        raise zipfile.BadZipFile(f"{member}: bad local header")
    name_length, extra_length = struct.unpack("<HH", local[26:30])
    if handle.read(name_length).decode("utf-8", "replace") != info.orig_filename:
        raise zipfile.BadZipFile(f"{member}: its local header names another member")
    handle.seek(info.header_offset + _LOCAL_HEADER + name_length + extra_length)
    head = handle.read(min(info.file_size, _NPY_HEAD))
    stream = io.BytesIO(head)
    header = _npy_header(stream)
    if header is None:
        return _npy_array(zf.read(member))
    shape, fortran, dtype = header
    start = stream.tell()
    count = int(np.prod(shape, dtype=np.int64))
    if dtype.hasobject or start + count * dtype.itemsize != info.file_size:
        raise zipfile.BadZipFile(f"{member}: its header does not match its size")
    values = np.empty(count, dtype)
    raw = memoryview(values.view(np.uint8).data)
    have = len(head) - start
    raw[:have] = head[start:]
    left = raw[have:]
    while len(left):
        read = handle.readinto(left)
        if not read:
            raise zipfile.BadZipFile(f"{member}: truncated")
        left = left[read:]
    if zlib.crc32(raw, zlib.crc32(head[:start])) != info.CRC:
        raise zipfile.BadZipFile(f"Bad CRC-32 for file {member!r}")
    return values.reshape(shape, order="F" if fortran else "C")


def _npy_header(stream: io.BytesIO) -> tuple[tuple[int, ...], bool, np.dtype[Any]] | None:
    """The shape, Fortran order and dtype of the ``.npy`` header ``stream`` starts with.

    ``stream`` is left at the array's first byte; ``None`` for a format version
    other than 1.0 and 2.0.
    """
    from numpy.lib import format as npy

    version = npy.read_magic(stream)
    if version == (1, 0):
        return npy.read_array_header_1_0(stream)
    if version == (2, 0):
        return npy.read_array_header_2_0(stream)
    return None


def _npy_array(data: bytes) -> Any:
    """The array of the ``.npy`` bytes ``data``, a read-only view of them (no copy)."""
    stream = io.BytesIO(data)
    header = _npy_header(stream)
    if header is None:
        return np.load(io.BytesIO(data), allow_pickle=False)
    shape, fortran, dtype = header
    count = int(np.prod(shape, dtype=np.int64))
    values = np.frombuffer(data, dtype=dtype, count=count, offset=stream.tell())
    return values.reshape(shape, order="F" if fortran else "C")


def _pieces_in(folder: Path) -> list[Path]:
    """The pieces under their final names in ``folder`` (a hidden name is one being written)."""
    return [path for path in folder.glob("*.zip") if not path.name.startswith(".")]


class PieceProcessor(_ProcessorBase):  # type: ignore[misc]  # coffea: untyped
    """A coffea processor that writes each chunk's output of ``inner`` as a piece.

    It returns only a count to the driver, which reads the pieces back in
    order (:func:`run_in_pieces`).
    """

    def __init__(self, inner: Any, store: PieceStore) -> None:
        self.inner, self.store = inner, store

    def process(self, events: Any) -> dict[str, Any]:
        """Process the chunk with ``inner`` and write its piece (or return it)."""
        chunk = Chunk.of_metadata(events.metadata)
        if not self.store.shared:
            return _returned(self.store, chunk, self.inner, lambda inner: inner.process(events))
        self.store.save(chunk, self.inner.process(events))
        return {"pieces": 1}

    def postprocess(self, accumulator: Any) -> Any:
        """Return the accumulator unchanged."""
        return accumulator


@dataclass(frozen=True)
class PieceTask:
    """``function(item)`` with its output written as the piece of ``chunk(item)`` (picklable)."""

    function: Callable[[Any], Any]
    chunk: Callable[[Any], Chunk]
    store: PieceStore

    def __call__(self, item: Any) -> dict[str, Any]:
        """Compute the item and write its piece (or return it)."""
        one_thread_in_a_dask_worker()
        if not self.store.shared:
            # a processor's method: called on the copy of the processor that skims locally
            owner = getattr(self.function, "__self__", None)
            name = getattr(self.function, "__name__", "")

            def compute(inner: Any) -> Mapping[str, Any]:
                output: Mapping[str, Any] = (
                    self.function(item) if inner is None else getattr(inner, name)(item)
                )
                return output

            return _returned(self.store, self.chunk(item), owner, compute)
        self.store.save(self.chunk(item), self.function(item))
        return {"pieces": 1}


def _returned(
    store: PieceStore, chunk: Chunk, inner: Any, compute: Callable[[Any], Mapping[str, Any]]
) -> dict[str, Any]:
    """``compute(inner)`` with its skims in a folder of the worker, returned with its piece.

    ``inner`` is the processor; where it writes skims (a dataclass with a
    ``skim_dir``), a copy of it writes them to a temporary folder, and their bytes
    travel back under their paths in the driver's skim folder.
    """
    skim_dir = getattr(inner, "skim_dir", None)
    with tempfile.TemporaryDirectory(prefix="rosenblatt-skim-") as local:
        if skim_dir is not None:
            if not is_dataclass(inner) or "skim_dir" not in {f.name for f in fields(inner)}:
                raise TypeError(f"{type(inner).__name__}: its skim folder cannot be redirected")
            inner = replace(inner, skim_dir=local)  # type: ignore[type-var]
        output = compute(inner)
        piece = store.returned(chunk, output, skim_dir)
        files = {
            str(Path(str(skim_dir)) / Path(path).name): Path(path).read_bytes()
            for path in output.get("skim", [])
        }
        files[str(store.path(chunk))] = piece
    return {"pieces": 1, "files": files}


def write_returned(output: Mapping[str, Any]) -> None:
    """Write the files a pass's workers returned (``output["files"]``), each piece last.

    Each is written atomically; a chunk's piece after its skims, so that a run
    stopped in between finds the chunk without a piece and computes it again.
    """
    files = output.get("files", {})
    for path in sorted(files, key=lambda p: (p.endswith(".zip"), p)):
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        with atomic_write(Path(path)) as tmp:
            Path(tmp).write_bytes(files[path])


def run_in_pieces(
    store: PieceStore,
    chunks: Sequence[Chunk],
    run_missing: Callable[[list[Chunk]], Any],
    *,
    join: bool = True,
) -> dict[str, Any]:
    """Run the chunks without a sound piece, then merge every piece in the chunks' order.

    ``run_missing(chunks)`` computes the chunks given, writing their pieces
    (:class:`PieceProcessor`, :class:`PieceTask`). The merge starts from the
    latest checkpoint of the chunks and goes on while they run (see the module
    docstring). Returns the merged output (empty without chunks); pieces and
    checkpoints of other chunks or keys are removed. ``join``: each array of
    the outputs' ``"arrays"`` joined end to end; else the list of the chunks'
    arrays, in order, for a caller that joins them itself.
    """
    ordered = sorted(set(chunks))
    keys = [store.key(chunk) for chunk in ordered]
    covered, merged = store.load_checkpoint(keys)
    missing = [chunk for chunk in ordered[covered:] if not store.sound(chunk)]
    log.info(
        "pass %s: %d chunks, %d kept from an earlier run, %d to run",
        store.name,
        len(ordered),
        len(ordered) - len(missing),
        len(missing),
    )
    merge = _OrderedMerge(store, ordered, keys, covered, merged)
    todo = missing
    while True:
        if todo:
            for chunk in todo:
                # a chunk that could not be read: its piece is replaced by this run's
                store.path(chunk).unlink(missing_ok=True)
            merge.start(set(todo))
            try:
                run_missing(todo)
            finally:
                merge.stop()
        # kept pieces found damaged as they were read (named, removed) are computed again
        todo = merge.catch_up()
        if not todo:
            break
    output = merge.finish(join=join)
    removed = store.prune(ordered, merge.checkpoint)
    if removed:
        log.info("pass %s: %d pieces of other runs removed", store.name, removed)
    return output


class _OrderedMerge:
    """The pieces of ``ordered`` merged in that order, while the chunks left run.

    It starts from the merge of the first ``covered`` chunks (a checkpoint's).
    :meth:`start` merges, in a thread, each piece as soon as it and those
    before it are there (the kept ones at once, the others as the workers write
    them), holds up to :data:`READ_AHEAD` kept pieces beyond a chunk not yet
    written, and writes a checkpoint every :data:`CHECKPOINT_EVERY` chunks
    merged. :meth:`catch_up` merges what is there and names the kept pieces
    found damaged as they were read (reported and removed: they are computed
    again); :meth:`finish` merges the rest. The output is the same as one
    merge of every piece in that order (:func:`coffea.processor.accumulate`
    adds left to right, and a checkpoint reads back exactly as written).
    """

    def __init__(
        self,
        store: PieceStore,
        ordered: Sequence[Chunk],
        keys: Sequence[str],
        covered: int,
        merged: dict[str, Any] | None,
    ) -> None:
        self.store, self.ordered, self.keys = store, ordered, keys
        self.merged = merged
        #: the chunks merged: the first ``merged_count`` of ``ordered``
        self.merged_count = covered
        #: pieces read but not merged, by index in ``ordered``
        self.ahead: dict[int, dict[str, Any]] = {}
        #: the latest checkpoint written or read, if it is of these chunks
        self.checkpoint: Path | None = None
        if covered:
            key = store.checkpoint_key(keys[:covered])
            self.checkpoint = store.checkpoints / f"{covered}-{key}.zip"
        self._since_checkpoint = 0
        #: per name of the outputs' arrays, the arrays of the chunks merged, in order
        self.arrays: dict[str, list[Any]] = {}
        self._missing: set[Chunk] = set()
        #: kept pieces found damaged as they were read, not yet computed again
        self.damaged: set[Chunk] = set()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self, missing: set[Chunk]) -> None:
        """Merge in a thread, as the pieces come (until :meth:`stop`)."""
        self._missing |= missing
        self.damaged -= missing
        self._stop.clear()
        context = contextvars.copy_context()
        self._thread = threading.Thread(
            target=context.run, args=(self._follow,), name=f"merge of {self.store.name}"
        )
        self._thread.daemon = True
        self._thread.start()

    def stop(self) -> None:
        """Stop the thread after the piece it is reading, and wait for it."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    def _follow(self) -> None:
        try:
            while not self._stop.is_set():
                self._merge_ready()
                if self.merged_count == len(self.ordered):
                    return
                self._read_ahead()
                self._stop.wait(_POLL_SECONDS)
        except Exception:  # noqa: BLE001 - read again by finish(), which reports it
            return

    def _halted(self) -> bool:
        """Whether the thread is told to stop (never in this process's own calls)."""
        return self._thread is not None and self._stop.is_set()

    def _merge_ready(self, *, checkpoints: bool = True) -> None:
        """Merge the next pieces while they are there."""
        while self.merged_count < len(self.ordered) and not self._halted():
            index = self.merged_count
            output = self.ahead.pop(index, None)
            if output is None:
                chunk = self.ordered[index]
                if chunk in self.damaged:
                    return
                if chunk in self._missing and not self.store.path(chunk).is_file():
                    return
                output = self._load(index)
                if output is None:
                    return
            self._merge(output, checkpoints=checkpoints)

    def _read_ahead(self) -> None:
        """Read kept pieces beyond the first chunk not written yet."""
        for index in range(self.merged_count + 1, len(self.ordered)):
            if self._halted() or len(self.ahead) >= READ_AHEAD:
                return
            chunk = self.ordered[index]
            if index not in self.ahead and chunk not in self._missing and chunk not in self.damaged:
                output = self._load(index)
                if output is not None:
                    self.ahead[index] = output

    def _load(self, index: int) -> dict[str, Any] | None:
        """The piece of chunk ``index``; ``None`` for a kept piece found damaged (named, removed).

        A piece this run wrote is not passed over: its damage is raised.
        """
        chunk = self.ordered[index]
        try:
            return self.store.load(chunk)
        except DAMAGED:
            if chunk in self._missing:
                raise
        self.store.discard(chunk)
        self.damaged.add(chunk)
        return None

    def catch_up(self) -> list[Chunk]:
        """Merge, in this process (the thread stopped), every piece that is there in order.

        Returns the kept pieces found damaged (reported and removed), to be
        computed again; empty once every piece is merged.
        """
        self._merge_ready(checkpoints=False)
        if self.merged_count < len(self.ordered):
            self._read_ahead()
        return sorted(self.damaged)

    def _merge(self, output: dict[str, Any], *, checkpoints: bool) -> None:
        for name, values in output.pop(ARRAYS, {}).items():
            self.arrays.setdefault(name, []).append(values)
        self.merged = _accumulate(output, self.merged)
        self.merged_count += 1
        self._since_checkpoint += 1
        if checkpoints and self._since_checkpoint >= CHECKPOINT_EVERY:
            self._save_checkpoint()

    def _save_checkpoint(self) -> None:
        """Write the merge as a checkpoint, unless it names skims, holds arrays or unreadable chunks."""
        merged = self.merged
        if merged is None or merged.get("skim") or "unreadable" in merged or self.arrays:
            return
        previous = self.checkpoint
        self.checkpoint = self.store.save_checkpoint(self.keys[: self.merged_count], merged)
        self._since_checkpoint = 0
        if previous is not None and previous != self.checkpoint:
            previous.unlink(missing_ok=True)

    def finish(self, *, join: bool = True) -> dict[str, Any]:
        """Every piece merged in order (the thread stopped); a checkpoint of them written.

        ``join``: the outputs' arrays joined end to end (else, per name, the
        list of the chunks' arrays).
        """
        for index in range(self.merged_count, len(self.ordered)):
            output = self.ahead.pop(index, None)
            self._merge(
                self.store.load(self.ordered[index]) if output is None else output,
                checkpoints=False,
            )
        if self._since_checkpoint:
            self._save_checkpoint()
        output = dict(self.merged or {})
        if self.arrays:
            output[ARRAYS] = {
                name: np.concatenate(parts) if join else list(parts)
                for name, parts in self.arrays.items()
            }
        return output


def _accumulate(output: dict[str, Any], merged: dict[str, Any] | None) -> dict[str, Any]:
    """``merged`` with ``output`` added: coffea's ``accumulate``, or without coffea the same sum
    of mappings (key by key) and of numbers and lists (``+``)."""
    if _coffea_accumulate is not None:
        total: dict[str, Any] = _coffea_accumulate([output], merged)
        return total
    if merged is None:
        return copy.deepcopy(output)
    added: dict[str, Any] = _added(merged, output)
    return added


def _added(left: Any, right: Any) -> Any:
    if isinstance(left, Mapping) and isinstance(right, Mapping):
        out = dict(left)
        for key, value in right.items():
            out[key] = _added(out[key], value) if key in out else copy.deepcopy(value)
        return out
    return left + right
