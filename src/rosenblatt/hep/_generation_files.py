"""The generated file: its hidden partial file, its record, and what a rerun resumes from.

See :mod:`rosenblatt.hep.generation`.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rosenblatt.hep._generation_chunk import GenerationSettings

__all__ = [
    "complete_file",
    "finish",
    "format_tools",
    "partial_name",
    "record_name",
    "resumed_writer",
    "reusable_chunks",
]

log = logging.getLogger("rosenblatt.generation")


def partial_name(path: str | os.PathLike[str]) -> Path:
    """The hidden file beside ``path`` that :func:`generate_file` writes chunk by chunk."""
    output = Path(path)
    return output.with_name(f".{output.stem}.partial{output.suffix}")


def record_name(path: str | os.PathLike[str]) -> Path:
    """The record of a generated file: settings, size and hash (:mod:`rosenblatt._records`)."""
    output = Path(path)
    return output.with_name(f"{output.name}.record.json")


def finish(work: Path, output: Path, record: Path, settings: GenerationSettings) -> None:
    """Give the complete file its name, then record the run (last)."""
    from rosenblatt._atomic import fsync_folder, fsync_tree
    from rosenblatt._records import write_record

    fsync_tree(work)
    os.replace(work, output)
    fsync_folder(output.parent)
    write_record(record, [output], record_inputs(settings))


def record_inputs(settings: GenerationSettings) -> dict[str, Any]:
    """What a generated file was computed from (its chunk sizes follow from these)."""
    return settings.to_dict()


def complete_file(
    output: Path, record: Path, settings: GenerationSettings, info_of: Any
) -> dict[str, Any] | None:
    """The metadata of the complete file ``output``; ``None`` when it cannot be trusted.

    With a record, the file must have the recorded size and hash (else it is
    named in one line, :func:`rosenblatt._records.corrupt`; so is a damaged
    record, and the file is not trusted); without one (a
    file written before records, or a run killed between the rename and the
    record), its stored summary must say it is complete, and the record is
    written now.
    """
    from rosenblatt._records import check_files, read_record, write_record
    from rosenblatt.io import EventFileError

    document = read_record(record)
    if document is None and record.exists():
        return None  # a damaged record, named by read_record: the file cannot be checked
    if document is not None and not check_files(output.parent, document["files"]):
        return None
    try:
        info: dict[str, Any] = info_of(output)
    except EventFileError as err:
        log.warning("%s cannot be read (%s): generating it again", output, err)
        return None
    if info["summary"].get("complete") is not True:
        log.warning("%s is not a complete generated file: generating it again", output)
        return None
    reusable_chunks(output, info, settings)  # other settings: an error naming them
    if document is None and info["n_events"] == settings.n_events:
        write_record(record, [output], record_inputs(settings))
    return info


def resumed_writer(
    work: Path,
    output: Path,
    leftovers: list[Path],
    settings: GenerationSettings,
    writer_class: Any,
    info_of: Any,
) -> Any:
    """A writer continuing the partial file ``work`` of an interrupted run, if it can.

    ``None`` when there is none, or when it was cut off in a way that cannot be
    resumed, or written with other settings: then it is removed, with one line
    saying so, and the run starts over.
    """
    from rosenblatt.io import EventFileError

    existing = next((path for path in reversed(leftovers) if path.exists()), None)
    if existing is None:
        return None
    try:
        info = info_of(existing)
        n_kept = reusable_chunks(output, info, settings)
        return writer_class.resume(work, max_chunks=n_kept, settings=settings.to_dict())
    except (EventFileError, ValueError) as err:
        log.warning("cannot resume %s from %s (%s): generating from the start", output, work, err)
    for stale in leftovers:
        stale.unlink(missing_ok=True)
    return None


def format_tools(file_format: str, output: Path) -> tuple[Any, Any, str | None]:
    """Return the writer class, the metadata reader and the suffix of a file being resumed."""
    if file_format == "root":
        from rosenblatt.io import root

        return root.RootWriter, root.root_info, root.RESUME_SUFFIX
    from rosenblatt.io import lhco

    return lhco.LHCOWriter, lhco.lhco_info, None


def reusable_chunks(output: Path, info: Mapping[str, Any], settings: GenerationSettings) -> int:
    """Return how many leading chunks of an existing file belong to the run ``settings``.

    The settings must agree except for ``n_events``, which may grow: since a
    chunk with fewer events is the beginning of the same chunk with more, the
    chunks whose size still matches are kept and the rest is generated.
    """
    stored = dict(info["settings"])
    wanted = settings.to_dict()
    differences = [
        f"{name}: {stored.get(name)!r} in the file, {wanted.get(name)!r} requested"
        for name in sorted(set(stored) | set(wanted))
        if name != "n_events" and stored.get(name) != wanted.get(name)
    ]
    if differences:
        raise ValueError(
            f"{output}: exists with other settings ({'; '.join(differences)}); "
            "choose another output file or overwrite it"
        )
    if int(stored["n_events"]) > settings.n_events:
        raise ValueError(
            f"{output}: holds a run of {stored['n_events']} events, {settings.n_events} "
            "requested; fewer events would drop some, so choose another output file or "
            "overwrite it"
        )
    kept = 0
    for stored_size, size in zip(
        info["chunks"].get("n_events", []), settings.chunk_sizes(), strict=False
    ):
        if int(stored_size) != size:
            break
        kept += 1
    return kept
