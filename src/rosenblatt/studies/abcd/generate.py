"""The ``generate:`` entries of the ABCD study's configuration: event files written when missing.

Each entry names what ``rosenblatt generate`` writes (its format, process, size
and output), checked before any event is generated.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rosenblatt.studies.config_checks import count as _count
from rosenblatt.studies.config_checks import fail as _fail
from rosenblatt.studies.config_checks import (
    file_problem,
    folder,
    seed,
)
from rosenblatt.studies.config_checks import flag as _flag
from rosenblatt.studies.config_checks import mapping as _mapping
from rosenblatt.studies.config_checks import number as _number
from rosenblatt.studies.config_fields import (
    config_dataclass,
    config_keys,
    option,
    parse_dataclass,
)

__all__ = ["GENERATE_KEYS", "MAX_WORKERS", "GenerateEntry", "parse_generate"]

#: the most worker processes
MAX_WORKERS = 4096


#: the formats ``rosenblatt generate`` writes
FORMATS = ("particles", "ntuple", "nanoaod")


def _text(value: Any, source: str, key: str) -> str:
    if not isinstance(value, str) or not value.strip() or "\0" in value:
        raise _fail(source, key, f"must be a non-empty text, got {value!r}")
    return value


def _output(value: Any, source: str, key: str) -> str:
    if not isinstance(value, str) or not value.strip() or "\0" in value:
        raise _fail(source, key, f"must be the path of a file, got {value!r}")
    return value


def _file_format(value: Any, source: str, key: str) -> str:
    if not isinstance(value, str) or value not in FORMATS:
        raise _fail(source, key, f"must be one of {list(FORMATS)}, got {value!r}")
    return value


def _workers(value: Any, source: str, key: str) -> int:
    return _count(value, source, key, 1, MAX_WORKERS)


def _injected(value: Any, source: str, key: str) -> int:
    return _count(value, source, key, 0)


def _fraction(value: Any, source: str, key: str) -> float:
    fraction = _number(value, source, key)
    if not 0.0 <= fraction < 1.0:
        raise _fail(source, key, f"must be in [0, 1), got {fraction!r}")
    return fraction


@config_dataclass
class GenerateEntry:
    """One checked entry of ``generate:``: an event file written when it is missing.

    Each field is one key of the entry, read by
    :func:`~rosenblatt.studies.config_fields.parse_dataclass`.
    """

    process: str = option(
        doc="the process generated: qcd or wprime, or data (QCD with W' events injected; "
        "ntuple and nanoaod)",
        check=_text,
    )
    events: int = option(doc="events written", check=_count)
    output: str = option(doc="the file written (.root; .h5 or .hdf5 for particles)", check=_output)
    file_format: str = option(
        key="format",
        default="particles",
        doc="particles, ntuple (a flat tree nominal) or nanoaod",
        check=_file_format,
    )
    seed: int = option(default=0, doc="seed of the generation", check=seed)
    signal_events: int = option(
        default=0, doc="W' events injected into pseudo-data (process data)", check=_injected
    )
    negative_weight_fraction: float = option(
        default=0.0,
        doc="fraction of simulated events of weight -1, in [0, 1) (ntuple and nanoaod)",
        check=_fraction,
    )
    workers: int | None = option(
        default=None,
        doc="worker processes of the generation",
        check=_workers,
        default_doc="those of executor",
    )
    chunk_size: int = option(default=500, doc="events per chunk of the generation", check=_count)
    rntuple: bool = option(
        default=False,
        doc="write the events as RNTuples, not TTrees (ntuple and nanoaod)",
        check=_flag,
    )


#: the keys of one entry of ``generate:``
GENERATE_KEYS = tuple(k.key for k in config_keys(GenerateEntry))


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

    entry: GenerateEntry = parse_dataclass(GenerateEntry, _mapping(item, source, key), source, key)
    processes = (*PROCESS_LABELS, "data") if entry.file_format != "particles" else PROCESS_LABELS
    if entry.process not in processes:
        raise _fail(
            source,
            f"{key}.process",
            f"must be one of {list(processes)} for {entry.file_format}, got {entry.process!r}",
        )
    given = set(_mapping(item, source, key))
    if entry.file_format == "particles" and {"signal_events", "negative_weight_fraction"} & given:
        raise _fail(
            source, key, "signal_events and negative_weight_fraction are for ntuple and nanoaod"
        )
    if entry.rntuple and entry.file_format == "particles":
        raise _fail(source, f"{key}.rntuple", "RNTuples are written for ntuple and nanoaod")
    if entry.signal_events and entry.process != "data":
        raise _fail(source, f"{key}.signal_events", "W' events are injected into data only")
    if entry.negative_weight_fraction and entry.process == "data":
        raise _fail(source, f"{key}.negative_weight_fraction", "pseudo-data have no weights")
    _generate_output(entry.output, entry.file_format, source, f"{key}.output")
    return entry


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
