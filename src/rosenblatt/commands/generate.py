"""``rosenblatt generate``: Pythia 8 events into particle files, flat ntuples or NanoAOD."""

from __future__ import annotations

import argparse
import os
import sys

from rosenblatt._interrupt import interrupted_status, interruption
from rosenblatt.commands._errors import print_error
from rosenblatt.commands._locking import add_lock_argument, holding_locks
from rosenblatt.hep.pythia_settings import DEFAULT_CHUNK_SIZE, DEFAULT_PTHAT_MIN, PROCESS_LABELS

__all__ = ["EXECUTOR_CHOICES", "FORMAT_CHOICES", "PROCESS_CHOICES", "add_parser", "main"]

#: where the chunks run (:data:`rosenblatt.hep.generation.EXECUTORS`)
EXECUTOR_CHOICES = ("local", "dask")

#: output layouts: particles (LHCO HDF5 or ROOT), flat ntuple, NanoAOD
FORMAT_CHOICES = ("particles", "ntuple", "nanoaod")

#: processes: simulation of one, or pseudo-data (ntuple and nanoaod only)
PROCESS_CHOICES = (*sorted(PROCESS_LABELS), "data")

#: the layouts of :func:`rosenblatt.hep.analysis_files.generate_analysis_file`
_ANALYSIS_FORMATS = ("ntuple", "nanoaod")

#: passing events per chunk of those layouts (the default of ``generate_analysis_file``, so
#: that the command writes the same file as a study's ``generate:`` block of the same seed)
_ANALYSIS_CHUNK_SIZE = 500

DESCRIPTION = """\
Generate 13 TeV events with Pythia 8 (QCD dijets or W'(3.5 TeV) -> X(500) Y(100) -> qqqq),
keep those passing the LHC Olympics trigger (an anti-kT R=1.0 jet with pT > 1.2 TeV) and
write their visible particles (|eta| < 2.5, pT > 0.5 GeV, massless, at most 700 per event)
to FILE: .h5 in the LHC Olympics R&D layout (pandas.read_hdf reads it as the public
events_anomalydetection.h5) or .root (TTree Events). The same seed gives the same events
whatever the number of workers and wherever they run: in a local pool of processes or on
a dask cluster (--executor dask starts a local one, --scheduler ADDRESS joins a running
one). An interrupted run resumes when rerun with the same arguments; rerunning with more
--events extends the file.

--format ntuple or nanoaod writes instead the jets of the events (anti-kT R=1.0 with FastJet,
pT > 200 GeV; events with fewer than two are dropped) to a .root file: a flat TTree `nominal`
(dijet_mass, jet1_*/jet2_*, tau21, tagger_score, mc_weight) or NanoAOD's layout (Events with
nFatJet, FatJet_pt/eta/phi/mass/msoftdrop/tau1/tau2/tau3/tagger, genWeight, run,
luminosityBlock, event; Runs with genEventSumw). Simulation gets weights +-1, -1 for a
fraction --negative-weight-fraction; --process data writes pseudo-data: --events QCD events and
--signal-events W' events in a random order, without weights. A complete file of the same
settings is kept; otherwise it is rewritten (never left half-written).
"""


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``generate`` sub-command to ``subparsers``."""
    parser = subparsers.add_parser(
        "generate",
        help="generate LHC Olympics-like events with Pythia 8",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _add_sample_arguments(parser.add_argument_group("the events"))
    _add_running_arguments(parser.add_argument_group("how they are made"))
    add_lock_argument(parser)
    parser.set_defaults(func=main)


def _add_sample_arguments(group: argparse._ArgumentGroup) -> None:
    """The options that say which events are made and where they are written."""
    group.add_argument(
        "--process",
        required=True,
        choices=PROCESS_CHOICES,
        help="data: pseudo-data, QCD with --signal-events W' events (ntuple and nanoaod only)",
    )
    group.add_argument(
        "--events",
        required=True,
        type=int,
        metavar="N",
        help="events passing the trigger (QCD events for --process data)",
    )
    group.add_argument("--seed", required=True, type=int, metavar="S", help="run seed (>= 0)")
    group.add_argument(
        "--output",
        required=True,
        metavar="FILE",
        help="output file (.h5, .hdf5 or .root; .root for ntuple and nanoaod)",
    )
    group.add_argument(
        "--format",
        dest="file_format",
        choices=FORMAT_CHOICES,
        default="particles",
        help="particles: the visible particles (default); ntuple: a flat TTree 'nominal'; "
        "nanoaod: NanoAOD's Events and Runs trees",
    )
    group.add_argument(
        "--rntuple",
        action="store_true",
        help="write the ntuple's or NanoAOD's events as RNTuples, not TTrees (same names and "
        "fields; NanoAOD's as nFatJet and FatJet_<field>)",
    )
    group.add_argument(
        "--signal-events",
        type=int,
        default=0,
        metavar="M",
        help="W' events injected into pseudo-data (--process data; default: %(default)s)",
    )
    group.add_argument(
        "--negative-weight-fraction",
        type=float,
        default=0.0,
        metavar="F",
        help="fraction of simulated events with weight -1, in [0, 1) (ntuple and nanoaod; "
        "default: %(default)g)",
    )
    group.add_argument(
        "--pthat-min",
        type=float,
        default=DEFAULT_PTHAT_MIN,
        metavar="GEV",
        help="PhaseSpace:pTHatMin of the qcd process in GeV (default: %(default)g)",
    )


def _add_running_arguments(group: argparse._ArgumentGroup) -> None:
    """The options that say where the chunks run and whether a file is resumed."""
    group.add_argument(
        "--workers",
        type=int,
        default=os.cpu_count() or 1,
        metavar="N",
        help="worker processes of the local pool or of the local dask cluster "
        "(default: one per core, %(default)s here)",
    )
    group.add_argument(
        "--executor",
        choices=EXECUTOR_CHOICES,
        default=None,
        help="where the chunks run: a local pool of processes, or a dask cluster "
        "(default: local, or dask with --scheduler)",
    )
    group.add_argument(
        "--scheduler",
        default=None,
        metavar="ADDRESS",
        help="join the dask scheduler at ADDRESS (e.g. tcp://host:8786) instead of "
        "starting a local cluster; implies --executor dask",
    )
    group.add_argument(
        "--chunk-size",
        type=int,
        default=None,
        metavar="N",
        help="passing events per chunk: the unit of work, writing and resuming; the events "
        f"depend on it (default: {DEFAULT_CHUNK_SIZE} for particles, "
        f"{_ANALYSIS_CHUNK_SIZE} for ntuple and nanoaod)",
    )
    group.add_argument(
        "--overwrite",
        action="store_true",
        help="start over instead of resuming FILE (or of keeping a complete ntuple/nanoaod FILE)",
    )
    group.add_argument("--quiet", action="store_true", help="no progress bar")


def main(args: argparse.Namespace) -> int:
    """Run ``rosenblatt generate``; return the exit status."""
    problem = _bad_combination(args)
    if problem is not None:
        print_error("rosenblatt generate", problem)
        return 2
    with holding_locks(args, [args.output]):
        if args.file_format in _ANALYSIS_FORMATS:
            return _main_analysis_file(args)
        return _main_particles(args)


def _main_particles(args: argparse.Namespace) -> int:
    """Write the visible particles of the events (LHCO HDF5 or ROOT); return the exit status."""
    from rosenblatt.hep.generation import generate_file
    from rosenblatt.io import EventFileError

    try:
        summary = generate_file(
            args.output,
            args.process,
            args.events,
            args.seed,
            chunk_size=DEFAULT_CHUNK_SIZE if args.chunk_size is None else args.chunk_size,
            pthat_min=args.pthat_min,
            workers=args.workers,
            overwrite=args.overwrite,
            progress=not args.quiet,
            executor=args.executor,
            scheduler=args.scheduler,
        )
    except (ValueError, TypeError, FileNotFoundError, EventFileError, RuntimeError) as err:
        print_error("rosenblatt generate", err)
        return 2
    except KeyboardInterrupt as err:
        print(
            f"rosenblatt generate: {interruption(err)}; {args.output} keeps its complete chunks, "
            "rerun the same command to resume",
            file=sys.stderr,
        )
        return interrupted_status(err)
    print(
        f"{args.output}: {summary.n_events} {args.process} events passing the trigger out of "
        f"{summary.n_generated} generated (efficiency {summary.efficiency:.3f}); "
        f"cross section {summary.sigma_pb:.4g} +- {summary.sigma_err_pb:.2g} pb"
    )
    if summary.n_truncated_events:
        print(
            f"{args.output}: {summary.n_truncated_events} event(s) had more particles than "
            f"the layout holds; {summary.n_dropped_particles} of their softest particles "
            "were left out (recorded in the file)"
        )
    return 0


def _bad_combination(args: argparse.Namespace) -> str | None:
    """Return what is wrong with the combination of options, or None."""
    analysis = args.file_format in _ANALYSIS_FORMATS
    fraction = args.negative_weight_fraction
    checks = (
        (
            args.process == "data" and not analysis,
            "--process data (pseudo-data) needs --format ntuple or --format nanoaod",
        ),
        (
            args.signal_events != 0 and args.process != "data",
            f"--signal-events injects W' events into --process data, not into {args.process}",
        ),
        (args.signal_events < 0, f"--signal-events must be at least 0, got {args.signal_events}"),
        (
            not 0.0 <= fraction < 1.0,
            f"--negative-weight-fraction must be in [0, 1), got {fraction:g}",
        ),
        (
            fraction != 0.0 and not analysis,
            "--negative-weight-fraction needs --format ntuple or --format nanoaod",
        ),
        (args.rntuple and not analysis, "--rntuple needs --format ntuple or --format nanoaod"),
        (
            fraction != 0.0 and args.process == "data",
            "--negative-weight-fraction: pseudo-data (--process data) has no weights",
        ),
        (
            analysis and (args.executor == "dask" or args.scheduler is not None),
            f"--format {args.file_format} runs in a local pool only (no dask executor or scheduler)",
        ),
    )
    return next((message for failed, message in checks if failed), None)


def _main_analysis_file(args: argparse.Namespace) -> int:
    """Write a flat ntuple or a NanoAOD-layout file; return the exit status."""
    from rosenblatt.hep.analysis_files import JET_PT_MIN, generate_analysis_file
    from rosenblatt.io import EventFileError

    try:
        summary = generate_analysis_file(
            args.output,
            args.process,
            args.events,
            args.seed,
            file_format=args.file_format,
            signal_events=args.signal_events,
            negative_weight_fraction=args.negative_weight_fraction,
            workers=args.workers,
            chunk_size=_ANALYSIS_CHUNK_SIZE if args.chunk_size is None else args.chunk_size,
            progress=not args.quiet,
            pthat_min=args.pthat_min,
            overwrite=args.overwrite,
            rntuple=args.rntuple,
        )
    except (ValueError, TypeError, FileNotFoundError, EventFileError, RuntimeError) as err:
        print_error("rosenblatt generate", err)
        return 2
    except KeyboardInterrupt as err:
        print(
            f"rosenblatt generate: {interruption(err)}; {args.output} was not written",
            file=sys.stderr,
        )
        return interrupted_status(err)
    kept = " (kept: the file already had these settings)" if summary.reused else ""
    print(
        f"{args.output}: {summary.n_written} {args.process} events in the {args.file_format} "
        f"layout{' (RNTuple)' if args.rntuple else ''}{kept}; {summary.n_fewer_than_two_jets} "
        f"of the {summary.n_triggered} events "
        f"passing the trigger had fewer than two jets above {JET_PT_MIN:g} GeV and were dropped"
    )
    if summary.process == "data":
        print(
            f"{args.output}: pseudo-data holds {summary.n_signal_written} W' events among "
            f"{summary.n_written}, without weights"
        )
    elif summary.sum_weights is not None and summary.written_sigma_pb is not None:
        print(
            f"{args.output}: sum of weights {summary.sum_weights:g} "
            f"({summary.n_negative_weights} negative); cross section of the events written "
            f"{summary.written_sigma_pb:.4g} pb (Pythia's {summary.sigma_pb:.4g} pb times "
            f"{summary.n_written}/{summary.n_generated} generated)"
        )
    return 0
