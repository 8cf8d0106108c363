"""``rosenblatt generate``: LHC Olympics-like events from Pythia 8 into an HDF5 or ROOT file."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from rosenblatt.hep.pythia_settings import DEFAULT_CHUNK_SIZE, DEFAULT_PTHAT_MIN, PROCESS_LABELS

__all__ = ["EXECUTOR_CHOICES", "add_parser", "main"]

#: where the chunks run (:data:`rosenblatt.hep.generation.EXECUTORS`)
EXECUTOR_CHOICES = ("local", "dask")

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
"""


def add_parser(subparsers: Any) -> None:
    """Add the ``generate`` sub-command to ``subparsers``."""
    parser = subparsers.add_parser(
        "generate",
        help="generate LHC Olympics-like events with Pythia 8",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--process", required=True, choices=sorted(PROCESS_LABELS))
    parser.add_argument(
        "--events", required=True, type=int, metavar="N", help="events passing the trigger"
    )
    parser.add_argument("--seed", required=True, type=int, metavar="S", help="run seed (>= 0)")
    parser.add_argument(
        "--output", required=True, metavar="FILE", help="output file (.h5, .hdf5 or .root)"
    )
    parser.add_argument(
        "--workers",
        type=int,
        default=os.cpu_count() or 1,
        metavar="N",
        help="worker processes of the local pool or of the local dask cluster "
        "(default: one per core, %(default)s here)",
    )
    parser.add_argument(
        "--executor",
        choices=EXECUTOR_CHOICES,
        default=None,
        help="where the chunks run: a local pool of processes, or a dask cluster "
        "(default: local, or dask with --scheduler)",
    )
    parser.add_argument(
        "--scheduler",
        default=None,
        metavar="ADDRESS",
        help="join the dask scheduler at ADDRESS (e.g. tcp://host:8786) instead of "
        "starting a local cluster; implies --executor dask",
    )
    parser.add_argument(
        "--chunk-size",
        type=int,
        default=DEFAULT_CHUNK_SIZE,
        metavar="N",
        help="passing events per chunk: the unit of work, writing and resuming "
        "(default: %(default)s)",
    )
    parser.add_argument(
        "--pthat-min",
        type=float,
        default=DEFAULT_PTHAT_MIN,
        metavar="GEV",
        help="PhaseSpace:pTHatMin of the qcd process in GeV (default: %(default)g)",
    )
    parser.add_argument(
        "--overwrite", action="store_true", help="start over instead of resuming FILE"
    )
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    parser.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    """Run ``rosenblatt generate``; return the exit status."""
    from rosenblatt.hep.generation import generate_file
    from rosenblatt.io import EventFileError

    try:
        summary = generate_file(
            args.output,
            args.process,
            args.events,
            args.seed,
            chunk_size=args.chunk_size,
            pthat_min=args.pthat_min,
            workers=args.workers,
            overwrite=args.overwrite,
            progress=not args.quiet,
            executor=args.executor,
            scheduler=args.scheduler,
        )
    except (ValueError, TypeError, FileNotFoundError, EventFileError, RuntimeError) as err:
        print(f"rosenblatt generate: error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(
            f"rosenblatt generate: interrupted; {args.output} keeps its complete chunks, "
            "rerun the same command to resume",
            file=sys.stderr,
        )
        return 130
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
