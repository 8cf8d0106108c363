"""The defining events of ``rosenblatt fit``, read chunk by chunk in pieces that resume.

:class:`Input` is one dataset's files and the quantities read from them (the
FILEs given, or a defining dataset of an analysis configuration).
:func:`read_in_pieces` reads each chunk that has no sound piece in the fit's
work folder, in this process or in a coffea executor's workers, keeps it as a
piece and joins the pieces in the order of the chunks into a :class:`Sample`,
which counts the events read, not selected and lacking a value;
:func:`below_x_max` leaves out the events the analysis leaves out.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from rosenblatt.typing import FloatArray

__all__ = ["Input", "Sample", "below_x_max", "joined", "read_in_pieces"]


@dataclass
class Sample:
    """The defining events read so far, and those left out."""

    x: list[FloatArray] = field(default_factory=list)
    y: list[FloatArray] = field(default_factory=list)
    w: list[FloatArray] = field(default_factory=list)
    read: int = 0
    lacking: dict[str, int] = field(default_factory=dict)
    left_out: int = 0
    not_selected: int = 0
    #: events at or above the configuration's ``abcd.x_max``, left out as the analysis leaves them
    above_x_max: int = 0


@dataclass(frozen=True)
class Input:
    """The files of one dataset, the quantities read from them, the factor of its weights
    and the selection of its events (``None``: every event)."""

    sources: list[Any]
    quantities: dict[str, Any]
    scale: float = 1.0
    selection: Any = None
    name: str = "files"

    @property
    def checked(self) -> dict[str, Any]:
        """The quantities read, the selection among them (as ``defining.selection``)."""
        if self.selection is None:
            return dict(self.quantities)
        return {**self.quantities, "defining.selection": self.selection}


def _weighted(inputs: list[Input]) -> bool:
    return any("--weight" in i.quantities or i.scale != 1.0 for i in inputs)


def _chunk_values(chunk: Any, part: Input, weighted: bool) -> dict[str, Any]:
    """What a chunk adds to the sample: the values of its selected events with every quantity
    (their weights times the dataset's factor) under ``"arrays"``, and its counts.

    An event outside the selection is counted as such, not as lacking a value.
    """
    chosen = np.ones(len(chunk), dtype=bool) if chunk.selected is None else chunk.selected
    keep = chosen & chunk.complete()
    arrays = {"x": chunk.values["--x"][keep], "y": chunk.values["--score"][keep]}
    if weighted:
        w = chunk.values["--weight"][keep] if "--weight" in chunk.values else 1.0
        arrays["w"] = np.broadcast_to(w * part.scale, (int(keep.sum()),))
    return {
        "arrays": arrays,
        "read": len(chunk),
        "not_selected": int((~chosen).sum()),
        "left_out": int((chosen & ~keep).sum()),
        "lacking": {
            option: int((chosen & ~present).sum()) for option, present in chunk.present.items()
        },
    }


def _add_chunk(sample: Sample, values: dict[str, Any]) -> None:
    """Add one chunk's values (or the merge of several, in order) to ``sample``."""
    sample.read += values["read"]
    sample.not_selected += values["not_selected"]
    sample.left_out += values["left_out"]
    for option, lacking in values["lacking"].items():
        sample.lacking[option] = sample.lacking.get(option, 0) + lacking
    arrays = values["arrays"]
    for name, parts in (("x", sample.x), ("y", sample.y), ("w", sample.w)):
        if name in arrays:
            # a merge of pieces gives the list of its chunks' arrays, joined once by the fit
            value = arrays[name]
            if isinstance(value, list):
                parts.extend(value)
            else:
                parts.append(value)


def _fit_document(args: argparse.Namespace, inputs: list[Input]) -> dict[str, Any]:
    """What the values kept per chunk depend on besides the input files' content.

    The options that choose and compute the values (each dataset's tree,
    quantities, selection and weight factor, the jets' collection), the
    content of the user's module or model files, and the version of rosenblatt.
    """
    import rosenblatt
    from rosenblatt._records import file_digest

    def quantity(q: Any) -> dict[str, Any]:
        path = q.file
        digest = file_digest(path) if path is not None and Path(path).is_file() else None
        return {"text": q.text, "kind": q.kind, "jets": q.jets, "file": digest}

    return {
        "version": rosenblatt.__version__,
        "jets": args.jets,
        "weighted": _weighted(inputs),
        "inputs": [
            {
                "name": part.name,
                "trees": sorted({source.treename for source in part.sources}),
                "quantities": {o: quantity(q) for o, q in sorted(part.quantities.items())},
                "selection": None if part.selection is None else quantity(part.selection),
                "scale": part.scale,
            }
            for part in inputs
        ],
    }


class _ReadChunk:
    """The values of one chunk of one file (a task of a worker): ``(start, stop) -> values``.

    It holds the file's source and the dataset's quantities (with their model
    and module files' bytes where the disk is not shared); the worker opens
    only the input file.
    """

    def __init__(self, part: Input, source: Any, step: int, weighted: bool) -> None:
        self.part, self.source, self.step, self.weighted = part, source, step, weighted

    def __call__(self, entries: tuple[int, int]) -> list[tuple[int, dict[str, Any]]]:
        """Each chunk's first entry and values, of the entries ``[start, stop)``."""
        from rosenblatt.processors.branches import iter_chunks

        read = iter_chunks(
            self.source,
            self.part.quantities,
            step_size=self.step,
            selection=self.part.selection,
            entry_start=entries[0],
            entry_stop=entries[1],
        )
        return [(chunk.start, _chunk_values(chunk, self.part, self.weighted)) for chunk in read]


def read_in_pieces(
    args: argparse.Namespace,
    inputs: list[Input],
    digests: dict[str, str],
    folder: Path,
    pool: Any = None,
) -> Sample:
    """The defining events of ``inputs``, each chunk's values kept as a piece in ``folder``.

    Only the chunks without a sound piece are read; the pieces are merged in
    the order of the chunks (datasets, then their files as given, then
    entries), so that a resumed fit's sample is the same bit for bit. With a
    ``pool`` (a coffea executor), each chunk is read by a worker, which
    returns its values to this process, where its piece is kept.
    """
    import sys
    import uuid

    from rosenblatt.processors.branches import iter_chunks
    from rosenblatt.processors.pieces import Chunk, PieceStore, run_in_pieces

    step = args.chunk_size
    weighted = _weighted(inputs)
    # named so that the chunks sort as the datasets and their files were given
    where: dict[tuple[str, str], tuple[Input, Any]] = {}
    for k, part in enumerate(inputs):
        for position, source in enumerate(part.sources):
            where[f"{k:04d}-{part.name}", f"{position:06d}/{source.path}"] = (part, source)
    chunks = [
        Chunk(dataset, file, start, min(start + step, source.entries))
        for (dataset, file), (_, source) in where.items()
        for start in range(0, source.entries, step)
    ]
    # a file not hashed (not a local file) is read again by every run: its pieces are this run's
    unhashed = f"not-kept-{uuid.uuid4().hex}"
    keyed = {file: digests.get(source.path, unhashed) for (_, file), (_, source) in where.items()}
    store = PieceStore.create(folder / "pieces", "fit", _fit_document(args, inputs), keyed)

    ran: list[int] = []

    def run_missing(missing: list[Chunk]) -> None:
        ran.append(len(missing))
        if len(missing) < len(chunks):
            print(
                f"rosenblatt fit: {len(chunks) - len(missing)} of {len(chunks)} chunks kept from "
                f"an earlier run in {folder}; reading the {len(missing)} left",
                file=sys.stderr,
            )
        if pool is not None:
            from rosenblatt.processors.runner import iter_results

            tasks = {
                (dataset, file): _ReadChunk(part, source, step, weighted)
                for (dataset, file), (part, source) in where.items()
            }
            ordered = sorted(missing)
            # one task per chunk: each reads its own entries, as the runs below read them
            calls = [_Call(tasks[c.dataset, c.file], (c.start, c.stop)) for c in ordered]
            for task, values in zip(ordered, iter_results(pool, calls, _call), strict=True):
                for start, kept in values:
                    store.save(Chunk(task.dataset, task.file, start, start + kept["read"]), kept)
            return
        for first, stop in _runs(missing):
            part, source = where[first.dataset, first.file]
            read = iter_chunks(
                source,
                part.quantities,
                step_size=step,
                selection=part.selection,
                entry_start=first.start,
                entry_stop=stop,
            )
            for chunk in read:
                piece = Chunk(first.dataset, first.file, chunk.start, chunk.start + len(chunk))
                store.save(piece, _chunk_values(chunk, part, weighted))

    merged = run_in_pieces(store, chunks, run_missing, join=False) if chunks else {}
    if chunks and not ran:
        print(
            f"rosenblatt fit: all {len(chunks)} chunks kept from an earlier run in {folder}",
            file=sys.stderr,
        )
    sample = Sample(lacking=dict.fromkeys(inputs[0].quantities, 0))
    if merged:
        _add_chunk(sample, merged)
    return sample


@dataclass(frozen=True)
class _Call:
    """A task of :func:`_call`: ``function(argument)``."""

    function: Any
    argument: Any


def _call(call: _Call) -> Any:
    """Run a task in a worker."""
    return call.function(call.argument)


def joined(parts: list[FloatArray]) -> FloatArray:
    """The parts end to end, in an array of its own (one writable part as it is)."""
    return parts[0] if len(parts) == 1 and parts[0].flags.writeable else np.concatenate(parts)


def _runs(chunks: list[Any]) -> list[tuple[Any, int]]:
    """The sorted ``chunks`` as runs of consecutive entries of one file: (first chunk, stop)."""
    runs: list[tuple[Any, int]] = []
    for chunk in sorted(chunks):
        if runs:
            first, stop = runs[-1]
            if (first.dataset, first.file) == (chunk.dataset, chunk.file) and stop == chunk.start:
                runs[-1] = (first, chunk.stop)
                continue
        runs.append((chunk, chunk.stop))
    return runs


def below_x_max(
    x: FloatArray,
    y: FloatArray,
    weights: FloatArray | None,
    x_max: float | None,
    sample: Sample,
    config: str | None,
) -> tuple[FloatArray, FloatArray, FloatArray | None]:
    """The events below the configuration's ``abcd.x_max`` (all, without one), which alone
    the analysis fills and fits; the others are counted in ``sample``.

    Raises
    ------
    ValueError
        If no event lies below it.
    """
    if x_max is None:
        return x, y, weights
    inside = x < x_max
    sample.above_x_max = int(np.count_nonzero(~inside))
    if not inside.any():
        raise ValueError(
            f"no event to fit on: every one of the {len(x):,} with a value lies at or above "
            f"abcd.x_max {x_max:g} of {config}"
        )
    return x[inside], y[inside], None if weights is None else weights[inside]
