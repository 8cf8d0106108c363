"""The ``generate:`` entries of the ABCD study's configuration: event files written when missing.

Each entry names what ``rosenblatt generate`` writes (its format, process, size
and output), checked before any event is generated.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rosenblatt.studies.config_checks import (
    check_keys,
    file_problem,
    folder,
    seed,
)
from rosenblatt.studies.config_checks import count as _count
from rosenblatt.studies.config_checks import fail as _fail
from rosenblatt.studies.config_checks import mapping as _mapping
from rosenblatt.studies.config_checks import number as _number

__all__ = ["GENERATE_KEYS", "MAX_WORKERS", "GenerateEntry", "parse_generate"]

#: the most worker processes
MAX_WORKERS = 4096

GENERATE_KEYS = (
    "process",
    "events",
    "seed",
    "output",
    "format",
    "signal_events",
    "negative_weight_fraction",
    "workers",
    "chunk_size",
)


@dataclass(frozen=True, slots=True)
class GenerateEntry:
    """One checked entry of ``generate:``: an event file written when it is missing.

    Attributes
    ----------
    process : str
        The process generated (``qcd``, ``wprime``, ... or ``data``).
    events : int
        Events written.
    output : str
        The file written.
    file_format : str
        ``particles``, ``ntuple`` or ``nanoaod`` (the key ``format``).
    seed : int
        Seed of the generation.
    signal_events : int
        W' events injected into pseudo-data.
    negative_weight_fraction : float
        Fraction of the events of negative weight.
    workers : int or None
        Worker processes; ``None``: those of the executor.
    chunk_size : int
        Events per chunk of the generation.
    """

    process: str
    events: int
    output: str
    file_format: str = "particles"
    seed: int = 0
    signal_events: int = 0
    negative_weight_fraction: float = 0.0
    workers: int | None = None
    chunk_size: int = 500


def parse_generate(value: Any, source: str) -> tuple[GenerateEntry, ...]:
    """``generate:``: the event files written when missing, each entry checked."""
    if value is None:
        return ()
    if not isinstance(value, list):
        raise _fail(source, "generate", f"must be a list of files to generate, got {value!r}")
    entries = tuple(_generate_entry(item, source, f"generate[{i}]") for i, item in enumerate(value))
    outputs = [entry.output for entry in entries]
    for i, output in enumerate(outputs):
        if output in outputs[:i]:
            raise _fail(source, f"generate[{i}].output", f"{output} is written by an earlier entry")
    return entries


def _generate_entry(item: Any, source: str, key: str) -> GenerateEntry:
    """One entry of ``generate:``, checked as the generation would check it."""
    from rosenblatt.hep.pythia_settings import PROCESS_LABELS

    processes = {"particles": tuple(PROCESS_LABELS), "ntuple": (*PROCESS_LABELS, "data")}
    processes["nanoaod"] = processes["ntuple"]
    entry = dict(_mapping(item, source, key))
    check_keys(entry, GENERATE_KEYS, source, key)
    for required in ("process", "events", "output"):
        if required not in entry:
            raise _fail(source, f"{key}.{required}", "missing")
    file_format = entry.get("format", "particles")
    if not isinstance(file_format, str) or file_format not in processes:
        raise _fail(
            source, f"{key}.format", f"must be one of {list(processes)}, got {file_format!r}"
        )
    process = entry["process"]
    if not isinstance(process, str) or process not in processes[file_format]:
        raise _fail(
            source,
            f"{key}.process",
            f"must be one of {list(processes[file_format])} for {file_format}, got {process!r}",
        )
    events = _count(entry["events"], source, f"{key}.events")
    generation_seed = seed(entry.get("seed", 0), source, f"{key}.seed")
    workers = _count(entry.get("workers", 1), source, f"{key}.workers", 1, MAX_WORKERS)
    chunk_size = _count(entry.get("chunk_size", 500), source, f"{key}.chunk_size")
    injected = _count(entry.get("signal_events", 0), source, f"{key}.signal_events", 0)
    fraction = _number(
        entry.get("negative_weight_fraction", 0.0), source, f"{key}.negative_weight_fraction"
    )
    if not 0.0 <= fraction < 1.0:
        raise _fail(
            source, f"{key}.negative_weight_fraction", f"must be in [0, 1), got {fraction!r}"
        )
    if file_format == "particles" and {"signal_events", "negative_weight_fraction"} & set(entry):
        raise _fail(
            source, key, "signal_events and negative_weight_fraction are for ntuple and nanoaod"
        )
    if injected and process != "data":
        raise _fail(source, f"{key}.signal_events", "W' events are injected into data only")
    if fraction and process == "data":
        raise _fail(source, f"{key}.negative_weight_fraction", "pseudo-data have no weights")
    _generate_output(entry["output"], file_format, source, f"{key}.output")
    return GenerateEntry(
        process=process,
        events=events,
        output=str(entry["output"]),
        file_format=file_format,
        seed=generation_seed,
        signal_events=injected,
        negative_weight_fraction=fraction,
        workers=workers if "workers" in entry else None,
        chunk_size=chunk_size,
    )


def _generate_output(output: Any, file_format: str, source: str, key: str) -> None:
    """The file a ``generate:`` entry writes: a name of its format, not a folder."""
    if not isinstance(output, str) or not output.strip() or "\0" in output:
        raise _fail(source, key, f"must be the path of a file, got {output!r}")
    suffixes = (".root",) if file_format != "particles" else (".root", ".h5", ".hdf5")
    if not output.lower().endswith(suffixes):
        raise _fail(source, key, f"{file_format} files end in {'/'.join(suffixes)}, got {output!r}")
    path = Path(output)
    problem = file_problem(path)
    if path.exists() and problem:
        raise _fail(source, key, f"{output} {problem}")
    folder(str(path.parent), source, key)
