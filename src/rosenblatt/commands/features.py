"""``rosenblatt features``: the per-event feature table of event files, with coffea."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from rosenblatt._interrupt import interrupted_status, interruption
from rosenblatt.commands._errors import print_error
from rosenblatt.commands._locking import add_lock_argument, holding_locks

__all__ = ["EXECUTOR_CHOICES", "add_parser", "format_cutflow", "main"]

DESCRIPTION = """\
Run the dijet coffea processor over event files and write the per-event feature table
(mjj, pt_j1, deta_jj, mj1, mj2, tau21_1, tau21_2, the 36x36 track image, label, weight,
dataset, file, entry). The workers write one parquet file per chunk; with --output
TABLE.parquet they are then streamed into one table ordered by (file, entry) (every
executor gives the same table), with --output FOLDER/ they stay there, one file per chunk.
Inputs are ROOT files with a TTree Events (as written by `rosenblatt generate`) or LHC
Olympics HDF5 files; each file's dataset is its name without the extension. Events with
fewer than two anti-kT R=1.0 jets leave the table and are counted in the cut flow printed
at the end.
"""

EXECUTOR_CHOICES = ("iterative", "futures", "dask")


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``features`` sub-command to ``subparsers``."""
    parser = subparsers.add_parser(
        "features",
        help="compute the per-event feature table (mjj, track images) with coffea",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "inputs", nargs="+", metavar="INPUT", help="event files (.root, .h5 or .hdf5)"
    )
    parser.add_argument(
        "--output",
        required=True,
        metavar="TABLE",
        help="output table (.parquet), or a folder for one parquet file per chunk",
    )
    parser.add_argument(
        "--executor",
        choices=EXECUTOR_CHOICES,
        default="iterative",
        help="coffea executor (default: %(default)s)",
    )
    parser.add_argument(
        "--workers",
        type=int,
        default=None,
        metavar="N",
        help="worker processes of the futures and dask executors "
        f"(default: one per core, {os.cpu_count() or 1} here)",
    )
    parser.add_argument(
        "--chunksize",
        type=int,
        default=10_000,
        metavar="N",
        help="target number of events per chunk (default: %(default)s)",
    )
    parser.add_argument(
        "--scheduler",
        default=None,
        metavar="ADDRESS",
        help="join the dask scheduler at ADDRESS (e.g. tcp://host:8786) instead of "
        "starting a local cluster (dask executor only)",
    )
    parser.add_argument(
        "--skip-bad-files",
        action="store_true",
        help="leave out unreadable files and chunks (listed at the end) instead of stopping",
    )
    parser.add_argument("--quiet", action="store_true", help="no progress bars")
    add_lock_argument(parser)
    parser.set_defaults(func=main)


def format_cutflow(cutflow: dict[str, dict[str, int]]) -> str:
    """Return the cut flow as a text table, one column per dataset."""
    from rosenblatt.hep.features import CUTFLOW_STEPS

    datasets = sorted(cutflow)
    width = max(len(step) for step in CUTFLOW_STEPS)
    columns = [max(len(dataset), 10) for dataset in datasets]
    lines = [
        f"{'cut flow':<{width}}  "
        + "  ".join(f"{dataset:>{size}}" for dataset, size in zip(datasets, columns, strict=True))
    ]
    for step in CUTFLOW_STEPS:
        counts = (cutflow[dataset][step] for dataset in datasets)
        lines.append(
            f"{step:<{width}}  "
            + "  ".join(f"{count:>{size}}" for count, size in zip(counts, columns, strict=True))
        )
    return "\n".join(lines)


def main(args: argparse.Namespace) -> int:
    """Run ``rosenblatt features``; return the exit status."""
    output = Path(args.output)
    single = output.suffix.lower() == ".parquet"
    if output.suffix and not single:
        print(
            f"rosenblatt features: error: --output {output}: the table is written as parquet; "
            "give a .parquet file or a folder",
            file=sys.stderr,
        )
        return 2
    if args.scheduler is not None and args.executor != "dask":
        print(
            f"rosenblatt features: error: --scheduler needs --executor dask, not {args.executor}",
            file=sys.stderr,
        )
        return 2
    workers = args.workers if args.workers is not None else (os.cpu_count() or 1)
    chunk_dir = output.with_name(f".{output.name}.chunks") if single else output
    with holding_locks(args, [output]):
        return _features(args, output, chunk_dir, workers)


def _features(args: argparse.Namespace, output: Path, chunk_dir: Path, workers: int) -> int:
    """Compute and write the table while holding the output's lock; return the exit status."""
    import shutil

    from rosenblatt._atomic import is_disk_full
    from rosenblatt.io import EventFileError
    from rosenblatt.processors.dijet import write_joined_table
    from rosenblatt.processors.runner import run_dijet

    single = output.suffix.lower() == ".parquet"
    try:
        result = run_dijet(
            args.inputs,
            executor=args.executor,
            workers=1 if args.executor == "iterative" else workers,
            chunksize=args.chunksize,
            scheduler=args.scheduler,
            progress=not args.quiet,
            output_dir=chunk_dir,
            skip_bad_files=args.skip_bad_files,
        )
        rows = write_joined_table(result["files"], output) if single else None
    except (ValueError, FileNotFoundError, EventFileError, OSError) as err:
        if is_disk_full(err):
            raise  # said in one line by the command line, with its own status
        print_error("rosenblatt features", err)
        return 2
    except KeyboardInterrupt as err:
        print(f"rosenblatt features: {interruption(err)}; no table written", file=sys.stderr)
        return interrupted_status(err)
    finally:
        if single:
            shutil.rmtree(chunk_dir, ignore_errors=True)
    print(format_cutflow(result["cutflow"]))
    for path, info in sorted(result["skipped"].items()):
        print(f"skipped {path}: {info['reason']}")
    for path, chunks in sorted(result["unreadable"].items()):
        for start, stop, reason in chunks:
            print(f"skipped {path} entries {start}-{stop}: {reason}")
    if single:
        print(f"{output}: {rows} events")
    else:
        print(f"{output}: {len(result['files'])} parquet files, one per chunk")
    return 0
