"""``rosenblatt fit`` stopped at 80% of its read and started again: the resumed read against a fresh one.

The read of ``rosenblatt fit`` (the pass over the user's files, before the
transform is fitted in memory) keeps each chunk's values as a piece in the work
folder. Each pair of runs times, in this process:

- *fresh*: the read with an empty work folder (every chunk read and kept);
- *resumed*: the read after a run stopped by a real SIGTERM (the test hook
  ``ROSENBLATT_STOP_AFTER_PIECES``) once 80% of its chunks had pieces: the pieces
  kept read back and the chunks left read.

Both first hash the input files (the pieces' keys; the saved transform records
the hashes too), timed apart: the fresh read every file, the resumed one only
the files changed since, as ``rosenblatt fit`` does with the hashes its work
folder keeps. The figure is the median over ``--pairs`` pairs of
resumed / fresh (target <= 0.30), without and with the hashing. The read without
pieces (as before) is timed too, for the cost of keeping the pieces. Two inputs, written here with
uproot as TTrees: a flat ntuple (``--x m_jj`` a branch: the cheapest read,
where the pieces gain least) and NanoAOD-like jets (``--x mjj`` from the
four-vectors of the two leading ``FatJet``).

``--inputs mergeable`` times the same for the library: the first pass (through
the Runner, the kept partials added) of ``rb.MergeableFit(rb.IRGI(depth=5),
work_dir=...).run(runner, fileset, observables)`` over the flat ntuple, on
coffea's ``IterativeExecutor``, fresh and resumed after a SIGTERM at 80% of its
chunks (the later passes, over the skims, are the same in both and not timed).

Wall seconds by default; ``--cpu`` times the CPU seconds of this process (every
thread), which the other work of a loaded machine disturbs less.

Usage::

    python benchmarks/bench_fit_resume.py [--events 2000000] [--files 4] [--chunk-size 100000]
                                          [--pairs 5] [--inputs flat nanoaod mergeable]
                                          [--workdir DIR]
                                          [--cpu]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import awkward as ak
import numpy as np
import uproot
from _summary import record

from rosenblatt._interrupt import Stopped, stop_on_signals
from rosenblatt._records import file_digests
from rosenblatt.cli import build_parser
from rosenblatt.commands import fit
from rosenblatt.processors.pieces import STOP_AFTER_PIECES

TARGET = 0.30
#: time CPU seconds rather than wall seconds (``--cpu``)
CPU = False


def _write_flat(path: Path, n: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    mass = rng.uniform(1000.0, 4000.0, n)
    columns = {
        "m_jj": mass,
        "tagger_out": rng.normal(mass / 4000.0, 0.2).astype(np.float32),
        "evt_w": rng.choice([-1.0, 1.0, 1.0, 1.0], n) * rng.uniform(0.5, 1.5, n),
    }
    with uproot.recreate(str(path)) as handle:
        handle.mktree("Events", {k: v.dtype for k, v in columns.items()})
        handle["Events"].extend(columns)


def _write_nanoaod(path: Path, n: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    counts = rng.integers(1, 5, n)
    total = int(counts.sum())

    def jagged(values: np.ndarray) -> ak.Array:
        return ak.unflatten(values.astype(np.float32), counts)

    jets = ak.zip(
        {
            "pt": jagged(rng.exponential(400.0, total) + 200.0),
            "eta": jagged(rng.normal(0.0, 1.5, total)),
            "phi": jagged(rng.uniform(-np.pi, np.pi, total)),
            "mass": jagged(rng.exponential(60.0, total) + 10.0),
        }
    )
    columns = {
        "FatJet": jets,
        "tagger_out": rng.uniform(0.0, 1.0, n).astype(np.float32),
        "genWeight": rng.choice([-1.0, 1.0, 1.0, 1.0], n).astype(np.float32),
    }
    with uproot.recreate(str(path)) as handle:
        handle.mktree(
            "Events",
            {k: v.type if isinstance(v, ak.Array) else v.dtype for k, v in columns.items()},
        )
        handle["Events"].extend(columns)


def _options(kind: str, files: list[Path], chunk_size: int, work: Path) -> argparse.Namespace:
    x, weight = ("m_jj", "evt_w") if kind == "flat" else ("mjj", "genWeight")
    argv = ["fit", *map(str, files), "--x", x, "--score", "tagger_out", "--weight", weight]
    argv += ["--depth", "5", "--chunk-size", str(chunk_size), "--output", str(work / "t.json")]
    return build_parser().parse_args(argv)


def _read_pass(args: argparse.Namespace, work: Path | None) -> tuple[float, float, fit._Sample]:
    """Seconds of the files' hashing and of the read (every chunk read, or kept), and the sample.

    Wall seconds, or with ``--cpu`` this process's CPU seconds (every thread).
    """
    clock = time.process_time if CPU else time.perf_counter
    inputs, _ = fit._file_inputs(args)
    started = clock()
    paths = [s.path for part in inputs for s in part.sources]
    # as rosenblatt fit does: a resumed read hashes only the files changed since
    digests = file_digests(paths, None if work is None else work / fit.DIGESTS)
    hashed = clock()
    if work is None:
        sample = fit._read(inputs, args.chunk_size)
    else:
        sample = fit._read_in_pieces(args, inputs, digests, work)
    return hashed - started, clock() - hashed, sample


def _stopped(args: argparse.Namespace, work: Path, after: int) -> int:
    """Read until a real SIGTERM stops the read once ``after`` chunks have pieces; pieces kept."""
    os.environ[STOP_AFTER_PIECES] = f"fit:{after}"
    try:
        with stop_on_signals():
            _read_pass(args, work)
    except Stopped:
        pass
    else:
        raise RuntimeError("the read was not stopped")
    finally:
        del os.environ[STOP_AFTER_PIECES]
    return len([p for p in (work / "pieces").glob("*.zip") if not p.name.startswith(".")])


def _same(a: fit._Sample, b: fit._Sample) -> bool:
    return all(
        np.array_equal(np.concatenate(getattr(a, k)), np.concatenate(getattr(b, k)))
        for k in ("x", "y", "w")
    )


def flat_observables(events: Any) -> tuple[Any, Any, Any]:
    """The flat ntuple's mass, score and weight, for the mergeable fit."""
    return events.m_jj, events.tagger_out, events.evt_w


class _FirstPass:
    """Seconds of a mergeable fit's first pass: its read through the Runner and its sum."""

    def __init__(self) -> None:
        from rosenblatt.outofcore import mergeable

        self.seconds = 0.0
        self.module = mergeable
        self.read = mergeable.read_with_runner
        self.kept = mergeable.MergeableFit.kept_partial

    def _timed(self, function: Any) -> Any:
        def timed(*args: Any, **kwargs: Any) -> Any:
            clock = time.process_time if CPU else time.perf_counter
            started = clock()
            try:
                return function(*args, **kwargs)
            finally:
                self.seconds += clock() - started

        return timed

    def __enter__(self) -> _FirstPass:  # noqa: PYI034
        self.module.read_with_runner = self._timed(self.read)
        self.module.MergeableFit.kept_partial = self._timed(self.kept)  # type: ignore[method-assign]
        return self

    def __exit__(self, *exc: object) -> None:
        self.module.read_with_runner = self.read
        self.module.MergeableFit.kept_partial = self.kept  # type: ignore[method-assign]


def _mergeable_fit(
    fileset: dict[str, Any], chunk_size: int, work: Path | None
) -> tuple[float, str]:
    """Seconds of the first pass of a mergeable fit over ``fileset``, and the transform's JSON."""
    from coffea import processor
    from coffea.nanoevents import BaseSchema

    import rosenblatt as rb

    runner = processor.Runner(
        processor.IterativeExecutor(status=False), schema=BaseSchema, chunksize=chunk_size
    )
    fit = rb.MergeableFit(rb.IRGI(depth=5), work_dir=work)
    with _FirstPass() as first:
        fitted = fit.run(runner, fileset, flat_observables, treename="Events")
    return first.seconds, rb.serialization.dumps(fitted)


def run_mergeable(folder: Path, options: Any) -> None:
    files = [folder / f"mergeable-{i}.root" for i in range(options.files)]
    per_file = options.events // options.files
    for i, path in enumerate(files):
        _write_flat(path, per_file, seed=i)
    fileset = {"flat": {"files": {str(path): "Events" for path in files}}}
    n_chunks = options.files * -(-per_file // options.chunk_size)
    after = round(0.8 * n_chunks)
    fresh, resumed, plain = [], [], []
    for pair in range(options.pairs):
        work = folder / f"work-mergeable-{pair}"
        seconds, reference = _mergeable_fit(fileset, options.chunk_size, None)
        plain.append(seconds)
        seconds, text = _mergeable_fit(fileset, options.chunk_size, work)
        fresh.append(seconds)
        assert text == reference
        shutil.rmtree(work)
        os.environ[STOP_AFTER_PIECES] = f"fit:{after}"
        try:
            with stop_on_signals():
                _mergeable_fit(fileset, options.chunk_size, work)
        except Stopped:
            pass
        finally:
            del os.environ[STOP_AFTER_PIECES]
        kept = len([p for p in (work / "pieces").glob("*.zip") if not p.name.startswith(".")])
        seconds, text = _mergeable_fit(fileset, options.chunk_size, work)
        resumed.append(seconds)
        assert text == reference, "the resumed fit differs from the fresh one"
        shutil.rmtree(work)
        print(
            f"  mergeable pair {pair + 1}: first pass without work_dir {plain[-1]:.3f} s, fresh "
            f"{fresh[-1]:.3f} s, resumed ({kept} of {n_chunks} chunks kept) {seconds:.3f} s, "
            f"ratio {seconds / fresh[-1]:.3f}"
        )
    ratios = [r / f for r, f in zip(resumed, fresh, strict=True)]
    ratio = statistics.median(ratios)
    print(
        f"mergeable fit, flat ntuple ({'CPU' if CPU else 'wall'} seconds): {options.events:,} "
        f"events, {n_chunks} chunks; medians of the first pass: without work_dir "
        f"{statistics.median(plain):.3f} s, fresh {statistics.median(fresh):.3f} s, resumed "
        f"after 80% {statistics.median(resumed):.3f} s; resumed / fresh {ratio:.3f} (range "
        f"{min(ratios):.3f}-{max(ratios):.3f}; target <= {TARGET})"
    )
    clock = "CPU" if CPU else "wall"
    record(
        f"MergeableFit first pass resumed at 80% (flat, {options.events:.0e} events, {clock})",
        "1",
        f"{ratio:.2f} of a fresh pass (median of {options.pairs})",
        f"<= {TARGET}",
        ratio <= TARGET,
    )


def run(kind: str, folder: Path, options: Any) -> None:
    files = [folder / f"{kind}-{i}.root" for i in range(options.files)]
    per_file = options.events // options.files
    for i, path in enumerate(files):
        (_write_flat if kind == "flat" else _write_nanoaod)(path, per_file, seed=i)
    n_chunks = options.files * -(-per_file // options.chunk_size)
    after = round(0.8 * n_chunks)
    fresh, resumed, plain, hashing = [], [], [], []
    for pair in range(options.pairs):
        work = folder / f"work-{kind}-{pair}"
        args = _options(kind, files, options.chunk_size, work)
        _, seconds, reference = _read_pass(args, None)
        plain.append(seconds)
        hashed, seconds, sample = _read_pass(args, work)
        fresh.append((hashed, seconds))
        assert _same(sample, reference)
        shutil.rmtree(work)
        kept = _stopped(args, work, after)
        hashed, seconds, sample = _read_pass(args, work)
        resumed.append((hashed, seconds))
        hashing += [fresh[-1][0], hashed]
        assert _same(sample, reference), "the resumed read differs from the fresh one"
        shutil.rmtree(work)
        print(
            f"  {kind} pair {pair + 1}: hashing {fresh[-1][0]:.3f} / {hashed:.3f} s; read: plain "
            f"{plain[-1]:.3f} s, fresh {fresh[-1][1]:.3f} s, resumed ({kept} of {n_chunks} "
            f"chunks kept) {seconds:.3f} s, ratio {seconds / fresh[-1][1]:.3f} "
            f"({sum(resumed[-1]) / sum(fresh[-1]):.3f} with the hashing)"
        )
    ratios = [r[1] / f[1] for r, f in zip(resumed, fresh, strict=True)]
    hashed_ratios = [sum(r) / sum(f) for r, f in zip(resumed, fresh, strict=True)]
    ratio = statistics.median(ratios)
    print(
        f"{kind} ({'CPU' if CPU else 'wall'} seconds): {options.events:,} events in {options.files} files, {n_chunks} chunks of "
        f"{options.chunk_size:,}; medians: hashing the files {statistics.median(hashing):.3f} s; "
        f"read without pieces {statistics.median(plain):.3f} s, fresh (pieces kept) "
        f"{statistics.median(f[1] for f in fresh):.3f} s, resumed after 80% "
        f"{statistics.median(r[1] for r in resumed):.3f} s; resumed / fresh {ratio:.3f} (range "
        f"{min(ratios):.3f}-{max(ratios):.3f}; target <= {TARGET}); with the hashing "
        f"{statistics.median(hashed_ratios):.3f} (range {min(hashed_ratios):.3f}-"
        f"{max(hashed_ratios):.3f})"
    )
    clock = "CPU" if CPU else "wall"
    record(
        f"rosenblatt fit resumed at 80% of its read ({kind}, {options.events:.0e} events, {clock})",
        "1",
        f"{ratio:.2f} of a fresh read (median of {options.pairs})",
        f"<= {TARGET}",
        ratio <= TARGET,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=2_000_000)
    parser.add_argument("--files", type=int, default=4)
    parser.add_argument("--chunk-size", type=int, default=100_000)
    parser.add_argument("--pairs", type=int, default=5)
    parser.add_argument(
        "--inputs",
        nargs="+",
        choices=("flat", "nanoaod", "mergeable"),
        default=["flat", "nanoaod", "mergeable"],
    )
    parser.add_argument("--workdir", default=None)
    parser.add_argument(
        "--cpu", action="store_true", help="time this process's CPU seconds, not wall seconds"
    )
    options = parser.parse_args()
    global CPU  # noqa: PLW0603 - read by _read_pass
    CPU = options.cpu
    with tempfile.TemporaryDirectory(dir=options.workdir) as temporary:
        for kind in options.inputs:
            if kind == "mergeable":
                run_mergeable(Path(temporary), options)
            else:
                run(kind, Path(temporary), options)


if __name__ == "__main__":
    main()
