"""Generated events in the layouts analysts use: flat ntuples and NanoAOD.

Each chunk of events from :mod:`rosenblatt.hep.generation` (Pythia 8, visible
particles, the LHC Olympics trigger) becomes the columns of an analysis file:

Jets
    Anti-kT R = 1.0 jets clustered by FastJet from the visible particles
    (:mod:`rosenblatt.hep.jets`, E-scheme, massless particles), kept above
    ``pT > 200 GeV`` (:data:`JET_PT_MIN`, the threshold of NanoAOD's
    ``FatJet``) and sorted by decreasing pT. An event is written only if it has
    two such jets; the others are counted in the summary. The same jets, and so
    the same events, make both layouts.
Jet mass and soft-drop mass
    ``mass`` is the mass of the jet's four-momentum (the sum of its
    constituents). ``msoftdrop`` is the mass after FastJet's own soft-drop
    grooming (the FastJet contrib ``SoftDrop`` behind the scikit-hep bindings'
    ``ClusterSequence.exclusive_jets_softdrop_grooming``): the jet's
    constituents are reclustered with Cambridge/Aachen into one jet, which is
    declustered, the softer branch dropped, until
    ``min(pT1, pT2) / (pT1 + pT2) > z_cut``; ``beta = 0`` and ``z_cut = 0.1``
    (:data:`SOFTDROP_BETA`, :data:`SOFTDROP_Z_CUT`), as CMS NanoAOD's
    ``FatJet_msoftdrop`` (with ``beta = 0`` the angular scale ``R0`` plays no
    part).
N-subjettiness
    ``tau1``, ``tau2``, ``tau3`` with exclusive-kT axes, ``beta = 1`` and
    ``R0 = 1.0`` (:mod:`rosenblatt.hep.nsubjettiness`); ``tau21 = tau2/tau1``
    (1 where ``tau1 = 0``).
Tagger
    A simple two-prong substructure tagger of one jet (:func:`tagger_score`),

    .. math::

        t = \\bigl(1 - \\min(\\max(\\tau_{21}, 0), 1)\\bigr)\\,
            \\frac{m}{m + m_0}, \\qquad m_0 = 200\\ \\mathrm{GeV}
            \\ (:data:`TAGGER_MASS_SCALE`),

    with ``m`` the (ungroomed) jet mass. It lies in [0, 1); it is large for
    the heavy two-prong jets of the W' signal (median about 0.6 for the X(500)
    jet, 0.26 for the heavier QCD jet) and, through the jet mass, which grows
    with the jet pT, it is correlated with the dijet mass on QCD: the sculpting
    that the Rosenblatt transform removes. The ntuple's ``tagger_score`` is
    ``t`` of the heavier of the two leading jets (the leading one on a tie);
    NanoAOD's ``FatJet_tagger`` is ``t`` of every jet.

Weights and pseudo-data
    Simulation (``qcd``, ``wprime``) has a weight of magnitude 1 whose sign is
    -1 for a seeded random fraction ``negative_weight_fraction`` of the events,
    as NLO generators' negative weights (drawn per chunk, so they depend on the
    seed only). Pseudo-data (``data``) is ``events`` QCD events plus
    ``signal_events`` W' events, from seeds derived from the run seed (so
    never the events of a ``qcd`` or ``wprime`` file of the same seed), in a
    seeded random order, with unit weight and no weight branch.
Event numbers
    ``1 + i`` for the ``i``-th event passing the trigger (in generation order,
    or in the shuffled order of pseudo-data), so the events without two jets
    leave gaps; a ntuple and a NanoAOD file of the same settings hold the same
    events under the same numbers.

The layouts are written by :mod:`rosenblatt.io.ntuple` and
:mod:`rosenblatt.io.nanoaod`; :func:`generate_analysis_file` drives the whole.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping, Sequence
from contextlib import closing
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, TypedDict

import awkward as ak
import numpy as np

from rosenblatt._validation import is_int
from rosenblatt.hep._analysis_jets import (
    FAT_JET_FIELDS,
    JET_PT_MIN,
    SOFTDROP_BETA,
    SOFTDROP_Z_CUT,
    TAGGER_FORMULA,
    TAGGER_MASS_SCALE,
    fat_jets,
    ntuple_columns,
    softdrop_mass,
    tagger_score,
)
from rosenblatt.hep.features import JET_RADIUS
from rosenblatt.hep.generation import (
    CHUNK_FIELDS,
    GenerationSettings,
    GenerationSummary,
    iter_chunks,
)
from rosenblatt.hep.pythia_settings import DEFAULT_PTHAT_MIN, PROCESS_LABELS
from rosenblatt.typing import FloatArray

__all__ = [
    "ANALYSIS_PROCESSES",
    "FAT_JET_FIELDS",
    "FILE_FORMATS",
    "JET_PT_MIN",
    "SOFTDROP_BETA",
    "SOFTDROP_Z_CUT",
    "TAGGER_FORMULA",
    "TAGGER_MASS_SCALE",
    "AnalysisFileSummary",
    "fat_jets",
    "generate_analysis_file",
    "ntuple_columns",
    "softdrop_mass",
    "tagger_score",
]

#: processes of :func:`generate_analysis_file`: simulation and pseudo-data
ANALYSIS_PROCESSES = ("qcd", "wprime", "data")

#: layouts of :func:`generate_analysis_file`
FILE_FORMATS = ("ntuple", "nanoaod")

#: version of the layouts, stored in the settings (a new version rewrites old files)
_LAYOUT_VERSION = 1

#: SeedSequence spawn keys of the streams derived from the run seed
_WEIGHT_STREAM = 7001
_DATA_STREAM = 7002
_SHUFFLE_KEY = 2


@dataclass(frozen=True)
class AnalysisFileSummary:
    """What an analysis file holds.

    Attributes
    ----------
    path : str
        The file.
    file_format : {"ntuple", "nanoaod"}
        Its layout.
    process : {"qcd", "wprime", "data"}
        Simulation of one process, or pseudo-data.
    n_triggered : int
        Events passing the trigger that were generated (``events`` plus
        ``signal_events``).
    n_written : int
        Events in the file: those with two jets above :data:`JET_PT_MIN`.
    n_fewer_than_two_jets : int
        Events left out for having fewer than two such jets.
    n_signal_written : int
        W' events among those written.
    n_negative_weights : int
        Written events with weight -1 (0 for pseudo-data).
    sum_weights : float or None
        Sum of the written events' weights (None for pseudo-data).
    n_generated : int
        Events Pythia generated to find the triggered ones.
    sigma_pb : float or None
        Pythia's cross section of the generated process in pb (simulation).
    written_sigma_pb : float or None
        Cross section of the events written, ``sigma_pb * n_written / n_generated``
        in pb (simulation): the ``xsec`` that normalises the file.
    reused : bool
        Whether an existing complete file with the same settings was kept.
    """

    path: str
    file_format: str
    process: str
    n_triggered: int
    n_written: int
    n_fewer_than_two_jets: int
    n_signal_written: int
    n_negative_weights: int
    sum_weights: float | None
    n_generated: int
    sigma_pb: float | None
    written_sigma_pb: float | None
    reused: bool = False

    def to_dict(self) -> dict[str, Any]:
        """Return the summary as a JSON-ready dict (without ``path`` and ``reused``)."""
        values = asdict(self)
        values.pop("path")
        values.pop("reused")
        return values

    @classmethod
    def from_dict(
        cls, values: Mapping[str, Any], path: str | os.PathLike[str], *, reused: bool
    ) -> AnalysisFileSummary:
        """Rebuild a summary stored with :meth:`to_dict`."""
        return cls(path=str(path), reused=reused, **dict(values))


def generate_analysis_file(  # noqa: PLR0913 - one argument per option of `generate`
    path: str | os.PathLike[str],
    process: str,
    events: int,
    seed: int,
    *,
    file_format: str,
    signal_events: int = 0,
    negative_weight_fraction: float = 0.0,
    workers: int = 1,
    chunk_size: int = 500,
    progress: bool = True,
    pthat_min: float = DEFAULT_PTHAT_MIN,
    overwrite: bool = False,
    rntuple: bool = False,
) -> AnalysisFileSummary:
    """Generate Pythia events into a flat ntuple or a NanoAOD-layout ROOT file.

    Parameters
    ----------
    path : path-like
        Output ``.root`` file; its folder must exist.
    process : {"qcd", "wprime", "data"}
        Simulation of QCD dijets or of the W' signal, or pseudo-data (QCD with
        ``signal_events`` W' events injected).
    events : int
        Events passing the trigger to generate (QCD events for ``data``).
    seed : int
        Run seed: the same seed (and chunk size) gives the same file.
    file_format : {"ntuple", "nanoaod"}
        The layout (:mod:`rosenblatt.io.ntuple`, :mod:`rosenblatt.io.nanoaod`).
    signal_events : int, default 0
        W' events injected into pseudo-data (``data`` only).
    negative_weight_fraction : float, default 0
        Fraction of simulated events with weight -1, in [0, 1) (simulation only).
    workers : int, default 1
        Worker processes generating the chunks (a script using more than one
        needs the ``if __name__ == "__main__":`` guard of :mod:`multiprocessing`).
    chunk_size : int, default 500
        Passing events per chunk of the generation.
    progress : bool, default True
        Show a progress bar.
    pthat_min : float, default 1000
        ``PhaseSpace:pTHatMin`` of the QCD process in GeV.
    overwrite : bool, default False
        Generate again even if ``path`` is a complete file of the same settings.
    rntuple : bool, default False
        Write the events (and NanoAOD's ``Runs``) as RNTuples instead of TTrees,
        with the same names and fields (recorded in the settings as
        ``"container": "rntuple"``).

    Returns
    -------
    AnalysisFileSummary
        Counts, weights and cross sections of the file.

    Raises
    ------
    ValueError
        If an argument is out of range or does not go with ``process``.
    TypeError
        If a count or the seed is not an integer.

    Notes
    -----
    The settings are stored in the file (TObjString ``settings``, JSON). An
    existing complete file with the same settings is kept and its stored
    summary returned; otherwise the file is written to a temporary file beside
    ``path`` and moved to ``path`` once complete, so that ``path`` never holds
    a half-written file. The record ``<name>.record.json`` written after it
    holds the settings and the file's size and content hash: a file truncated
    or altered later is named in one line and generated again
    (:mod:`rosenblatt._records`).

    Examples
    --------
    >>> summary = generate_analysis_file(  # doctest: +SKIP
    ...     "data.root", "data", 3000, seed=1, file_format="ntuple", signal_events=300
    ... )
    >>> summary.n_written, summary.n_fewer_than_two_jets  # doctest: +SKIP
    """
    from rosenblatt._records import check_files, read_record, write_record
    from rosenblatt.hep.generation import record_name
    from rosenblatt.io import EventFileError
    from rosenblatt.io._root_output import replaced_when_complete

    output = Path(path)
    _check_arguments(output, process, file_format, signal_events, negative_weight_fraction, workers)
    sources = _sources(process, events, seed, signal_events, chunk_size, pthat_min)
    settings = _file_settings(
        process, file_format, events, signal_events, seed, negative_weight_fraction, sources
    )
    if rntuple:
        # absent for TTrees: the settings of the files written before RNTuples stay valid
        settings["container"] = "rntuple"
    writer_class, info_of = _format_tools(file_format)
    record = record_name(output)
    if output.exists() and not overwrite:
        document = read_record(record)  # a damaged record is named, its file not trusted
        if (document is None and not record.exists()) or (
            document is not None and check_files(output.parent, document["files"])
        ):
            try:
                info = info_of(output)
            except EventFileError:
                info = {"complete": False}
            if info["complete"] and info["settings"] == settings:
                if document is None:
                    write_record(record, [output], settings)
                return AnalysisFileSummary.from_dict(info["summary"], output, reused=True)
    record.unlink(missing_ok=True)
    records: list[dict[str, Any]] = []
    with (
        replaced_when_complete(output) as temporary,
        writer_class.create(
            temporary, weighted=process != "data", settings=settings, rntuple=rntuple
        ) as writer,
    ):
        tables = _event_tables(
            sources, float(negative_weight_fraction), workers, progress, output, records
        )
        if process == "data":
            tables = _shuffled(tables, seed, chunk_size)
        counts = _write_tables(writer, file_format, tables)
        summary = _summary(output, file_format, process, counts, records)
        writer.write_summary(summary.to_dict())
    write_record(record, [output], settings)
    return summary


def _check_arguments(
    output: Path,
    process: str,
    file_format: str,
    signal_events: int,
    negative_weight_fraction: float,
    workers: int,
) -> None:
    """Check the arguments that :class:`GenerationSettings` does not."""
    if process not in ANALYSIS_PROCESSES:
        raise ValueError(
            f"process: unknown process {process!r}; choose one of {list(ANALYSIS_PROCESSES)}"
        )
    if file_format not in FILE_FORMATS:
        raise ValueError(
            f"file_format: unknown format {file_format!r}; choose one of {list(FILE_FORMATS)}"
        )
    if output.suffix.lower() != ".root":
        raise ValueError(f"{output}: {file_format} files are ROOT files; name it *.root")
    if not output.parent.is_dir():
        raise ValueError(f"{output}: the folder {output.parent} does not exist")
    _check_count("signal_events", signal_events, 0)
    _check_count("workers", workers, 1)
    if signal_events and process != "data":
        raise ValueError(
            "signal_events: W' events are injected into pseudo-data only (process 'data'), "
            f"not into {process!r}"
        )
    fraction = float(negative_weight_fraction)
    if not 0.0 <= fraction < 1.0:
        raise ValueError(
            f"negative_weight_fraction: must be in [0, 1), got {negative_weight_fraction!r}"
        )
    if fraction and process == "data":
        raise ValueError("negative_weight_fraction: pseudo-data (process 'data') has no weights")


def _check_count(name: str, value: Any, minimum: int) -> None:
    if not is_int(value):
        raise TypeError(f"{name}: must be an integer, got {value!r}")
    if value < minimum:
        raise ValueError(f"{name}: must be at least {minimum}, got {value}")


def _file_settings(
    process: str,
    file_format: str,
    events: int,
    signal_events: int,
    seed: int,
    negative_weight_fraction: float,
    sources: Sequence[GenerationSettings],
) -> dict[str, Any]:
    """Return the settings stored in the file, as JSON reads them back."""
    settings = {
        "file_format": file_format,
        "layout_version": _LAYOUT_VERSION,
        "process": process,
        "events": int(events),
        "signal_events": int(signal_events),
        "seed": int(seed),
        "negative_weight_fraction": float(negative_weight_fraction),
        "jets": {"algorithm": "antikt", "radius": JET_RADIUS, "pt_min": JET_PT_MIN},
        "softdrop": {"beta": SOFTDROP_BETA, "z_cut": SOFTDROP_Z_CUT},
        "tagger": TAGGER_FORMULA,
        "generation": [source.to_dict() for source in sources],
    }
    normalised: dict[str, Any] = json.loads(json.dumps(settings, sort_keys=True))
    return normalised


def _sources(
    process: str, events: int, seed: int, signal_events: int, chunk_size: int, pthat_min: float
) -> list[GenerationSettings]:
    """Return the generation runs of the file: one process, or the two of pseudo-data."""
    if process != "data":
        return [
            GenerationSettings(
                process=process,
                n_events=events,
                seed=seed,
                chunk_size=chunk_size,
                pthat_min=pthat_min,
            )
        ]
    _check_count("seed", seed, 0)
    runs = [("qcd", events)] + ([("wprime", signal_events)] if signal_events else [])
    return [
        GenerationSettings(
            process=name,
            n_events=n_events,
            seed=_derived_seed(seed, name),
            chunk_size=chunk_size,
            pthat_min=pthat_min,
        )
        for name, n_events in runs
    ]


def _derived_seed(seed: int, process: str) -> int:
    """Return the run seed of one process of pseudo-data, independent of ``seed`` itself."""
    sequence = np.random.SeedSequence(
        entropy=int(seed), spawn_key=(_DATA_STREAM, PROCESS_LABELS[process])
    )
    return int(sequence.generate_state(1, dtype=np.uint32)[0])


def _weight_signs(
    source: GenerationSettings, index: int, n_events: int, fraction: float
) -> FloatArray:
    """Return the weights (+-1) of chunk ``index``: -1 with probability ``fraction``."""
    sequence = np.random.SeedSequence(
        entropy=source.seed, spawn_key=(_WEIGHT_STREAM, source.label, index)
    )
    draws = np.random.default_rng(sequence).random(n_events)
    return np.where(draws < fraction, -1.0, 1.0)


def _event_tables(
    sources: Sequence[GenerationSettings],
    fraction: float,
    workers: int,
    progress: bool,
    output: Path,
    records: list[dict[str, Any]],
) -> Iterator[ak.Array]:
    """Generate the chunks of every run and yield their event tables.

    A table has one record per event passing the trigger: ``jets``
    (:func:`fat_jets`), ``label``, ``weight`` and ``event``, which counts the
    events of all runs in order from 1. The chunks' generation records are
    appended to ``records``.
    """
    from tqdm import tqdm

    total = sum(source.n_events for source in sources)
    n_before = 0
    with tqdm(total=total, unit="event", desc=output.name, disable=not progress) as bar:
        for source in sources:
            indices = range(len(source.chunk_sizes()))
            with closing(iter_chunks(source, indices, workers)) as generated:
                for chunk in generated:
                    n_events = len(chunk.events)
                    yield ak.zip(
                        {
                            "jets": fat_jets(chunk.events),
                            "label": np.full(n_events, source.label, dtype=np.int64),
                            "weight": _weight_signs(source, chunk.index, n_events, fraction),
                            "event": np.arange(n_before + 1, n_before + n_events + 1),
                        },
                        depth_limit=1,
                    )
                    records.append(chunk.record)
                    n_before += n_events
                    bar.update(n_events)


def _shuffled(tables: Iterator[ak.Array], seed: int, chunk_size: int) -> Iterator[ak.Array]:
    """Gather the tables, put their events in a seeded random order and renumber them from 1."""
    table = ak.concatenate(list(tables))
    sequence = np.random.SeedSequence(entropy=int(seed), spawn_key=(_DATA_STREAM, _SHUFFLE_KEY))
    table = table[np.random.default_rng(sequence).permutation(len(table))]
    table = ak.with_field(table, np.arange(1, len(table) + 1), "event")
    for first in range(0, len(table), chunk_size):
        yield table[first : first + chunk_size]


class _Counts(TypedDict):
    """A written file's events: triggered, written (two jets), signal, of negative weight; their weight."""

    n_triggered: int
    n_written: int
    n_signal_written: int
    n_negative_weights: int
    sum_weights: float


def _write_tables(writer: Any, file_format: str, tables: Iterator[ak.Array]) -> _Counts:
    """Write the events with two jets; return the counts."""
    counts: _Counts = {
        "n_triggered": 0,
        "n_written": 0,
        "n_signal_written": 0,
        "n_negative_weights": 0,
        "sum_weights": 0.0,
    }
    for table in tables:
        kept = table[ak.to_numpy(ak.num(table.jets, axis=1) >= 2)]
        weights = ak.to_numpy(kept.weight) if writer.weighted else None
        if file_format == "ntuple":
            writer.append(ntuple_columns(kept.jets, ak.to_numpy(kept.event), weights))
        else:
            writer.append(ak.to_numpy(kept.event), kept.jets, weights)
        counts["n_triggered"] += len(table)
        counts["n_written"] += len(kept)
        counts["n_signal_written"] += int(np.sum(ak.to_numpy(kept.label) == 1))
        if weights is not None:
            counts["n_negative_weights"] += int(np.sum(weights < 0))
            counts["sum_weights"] += float(np.sum(weights))
    return counts


def _summary(
    output: Path,
    file_format: str,
    process: str,
    counts: _Counts,
    records: Sequence[Mapping[str, Any]],
) -> AnalysisFileSummary:
    """Return the summary of a written file."""
    generation = GenerationSummary.from_records(
        {name: np.asarray([record[name] for record in records]) for name in CHUNK_FIELDS}
    )
    sigma = generation.sigma_pb if process != "data" else None
    return AnalysisFileSummary(
        path=str(output),
        file_format=file_format,
        process=process,
        n_triggered=counts["n_triggered"],
        n_written=counts["n_written"],
        n_fewer_than_two_jets=counts["n_triggered"] - counts["n_written"],
        n_signal_written=counts["n_signal_written"],
        n_negative_weights=counts["n_negative_weights"],
        sum_weights=None if sigma is None else counts["sum_weights"],
        n_generated=generation.n_generated,
        sigma_pb=sigma,
        written_sigma_pb=None
        if sigma is None
        else sigma * counts["n_written"] / generation.n_generated,
    )


def _format_tools(file_format: str) -> tuple[Any, Any]:
    """Return the writer class and the metadata reader of a layout."""
    if file_format == "ntuple":
        from rosenblatt.io.ntuple import NtupleWriter, ntuple_info

        return NtupleWriter, ntuple_info
    from rosenblatt.io.nanoaod import NanoAODWriter, nanoaod_info

    return NanoAODWriter, nanoaod_info
