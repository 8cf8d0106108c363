"""``rosenblatt apply``: the transformed score of every event of ROOT files, as friend trees."""

from __future__ import annotations

import argparse
import os
import re
from collections.abc import Iterator, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from rosenblatt._interrupt import step
from rosenblatt.commands._errors import print_error
from rosenblatt.commands.fit import (
    DEFAULT_TREENAME,
    add_common_arguments,
    by_value,
    executor_from_args,
    quantities_from_args,
)

__all__ = [
    "DEFAULT_MAX_OUTSIDE",
    "MISSING_GAMMA",
    "add_parser",
    "check_outside",
    "main",
    "output_paths",
    "recorded_inputs",
]

#: gamma of an event that lacks a value of --x or --score (outside [0, 1], so no cut keeps it)
MISSING_GAMMA = -1.0

#: the largest fraction of the events with a value that may lie outside the fitted domain
DEFAULT_MAX_OUTSIDE = 0.05

DESCRIPTION = f"""\
Evaluate a transform saved by `rosenblatt fit` (or rosenblatt's save) on every event of TTrees
in ROOT files and write, for each FILE, DIR/<stem>_gamma.root (or --output for a single file):
one TTree of the input tree's name with the same entries in the same order, the branch
gamma_<name> (float64; the name defaults to the transform file's stem) and the event
identifiers run, luminosityBlock and event if the input has all three, else entry (int64, the
entry number). An input RNTuple (instead of a TTree) gets an RNTuple of the same name and
fields, entry for entry. Use a tree as a friend tree, e.g. in ROOT's RDataFrame:

  TChain events("nominal"); events.Add("sample.root");
  TChain gamma("nominal"); gamma.Add("out/sample_gamma.root");
  events.AddFriend(&gamma, "g");
  ROOT::RDataFrame df(events);  // columns g.gamma_<name>, ...

--x and --score take the forms of `rosenblatt fit` (see its help). A transform saved by
`rosenblatt fit` records what it was fitted on (the JSON's fitted_on block): --x, --score,
--treename and --jets default to the recorded ones, and a --x or --score that differs from the
recorded one is refused in one line naming both, unless --allow-other-quantities. A transform
saved otherwise records nothing: give --x and --score. When more than --max-outside (default
{DEFAULT_MAX_OUTSIDE:g}) of the events with a value lie outside the domain the transform was
fitted on (x or y beyond the fitted range: the wrong branch, or another selection), nothing is
written and the run stops with one line (status 2). An event lacking a value (fewer objects
than an element needs, fewer than two jets for a jet feature) gets gamma = {MISSING_GAMMA:g},
so that the entries stay aligned; the summary counts them. A NaN or infinite value is an error
naming the file and the entry. Every file, tree and branch is checked before any event is read;
the files are written in chunks under temporary names and moved into place only when every one
is complete.

--executor futures or dask computes the chunks in worker processes (--scheduler joins a running
dask scheduler) and writes them here, in order: the same files as in this process. The
transform travels to the workers by value; with --no-shared-disk, so do the model files and the
module files of --x and --score, and the workers open only the input files.
"""

_NAME = re.compile(r"^\w+$")


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``apply`` sub-command to ``subparsers``."""
    parser = subparsers.add_parser(
        "apply",
        help="write the transformed score of ROOT files' events as friend trees",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "transform", metavar="TRANSFORM.json", help="transform saved by rosenblatt fit"
    )
    add_common_arguments(parser, recorded="the one the transform was fitted on")
    parser.add_argument(
        "--x",
        default=None,
        metavar="X",
        help="the protected observable (default: the one the transform was fitted on)",
    )
    parser.add_argument(
        "--score",
        default=None,
        metavar="Y",
        help="the classifier score (default: the one the transform was fitted on)",
    )
    parser.add_argument(
        "--allow-other-quantities",
        action="store_true",
        help="apply the transform to a --x or --score other than those it was fitted on",
    )
    parser.add_argument(
        "--max-outside",
        type=_fraction,
        default=DEFAULT_MAX_OUTSIDE,
        metavar="FRACTION",
        help="stop, writing nothing, when more than this fraction of the events lies outside "
        "the fitted domain; 1 never stops (default: %(default)s)",
    )
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument(
        "--output-dir", metavar="DIR", help="folder of the <stem>_gamma.root files (made if absent)"
    )
    where.add_argument("--output", metavar="OUT.root", help="the output file, for a single FILE")
    parser.add_argument(
        "--name",
        default=None,
        help="the branch is gamma_NAME (default: the transform file's stem)",
    )
    parser.set_defaults(func=main)


def _fraction(text: str) -> float:
    """An argparse type: a number in [0, 1]."""
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"expected a fraction in [0, 1], got {text!r}")
    return value


def recorded_inputs(args: argparse.Namespace, record: dict[str, Any] | None) -> None:
    """Fill ``--x``, ``--score``, ``--treename`` and ``--jets`` not given from ``record``.

    ``record`` is the transform's ``fitted_on`` block
    (:func:`rosenblatt.serialization.fitted_on`), or ``None``: then ``--x``
    and ``--score`` must be given and the others take their usual defaults.

    Raises
    ------
    ValueError
        If ``--x`` or ``--score`` is missing and not recorded.
    """
    from rosenblatt.processors.quantities import DEFAULT_JETS

    if record is None:
        absent = [option for option in ("--x", "--score") if getattr(args, option[2:]) is None]
        if absent:
            raise ValueError(
                f"{args.transform} does not record what it was fitted on (it was not saved by "
                f"rosenblatt fit): give {' and '.join(absent)}"
            )
        record = {"treename": DEFAULT_TREENAME, "jets": DEFAULT_JETS}
    else:
        args.x = _as_option(record["x"], "--x", args.transform) if args.x is None else args.x
        args.score = (
            _as_option(record["y"], "--score", args.transform) if args.score is None else args.score
        )
    args.treename = record["treename"] if args.treename is None else args.treename
    args.jets = record["jets"] if args.jets is None else args.jets


def _as_option(recorded: str, option: str, transform: str) -> str:
    """The command-line form of a recorded quantity (``function f.py:y`` is ``f.py:y``).

    Raises
    ------
    ValueError
        For a quantity the command line cannot give (a model's score, from a
        configuration), naming the option to give.
    """
    kind, _, rest = recorded.partition(" ")
    if not rest:
        return recorded
    if kind == "function":
        return rest
    raise ValueError(
        f"{transform} was fitted on {option[2:].replace('score', 'y')} = {recorded}, which "
        f"{option} cannot give: give {option} as a branch or a function (module:name, "
        "file.py:name) of the same values, with --allow-other-quantities"
    )


def check_quantities(
    args: argparse.Namespace, record: dict[str, Any] | None, quantities: dict[str, Any]
) -> None:
    """Refuse a ``--x`` or ``--score`` other than the recorded one, unless allowed.

    A built-in jet feature read from another ``--jets`` collection is another
    quantity too.

    Raises
    ------
    ValueError
        Naming the quantity given and the one recorded.
    """
    from rosenblatt.processors.quantities import JET_FEATURES

    if record is None or args.allow_other_quantities:
        return
    for option, key in (("--x", "x"), ("--score", "y")):
        given = quantities[option]
        jet_feature = given.kind == "name" and given.name in JET_FEATURES
        if given.text != record[key] or (jet_feature and args.jets != record["jets"]):
            on = f" of --jets {args.jets}" if jet_feature else ""
            was = f" of --jets {record['jets']}" if jet_feature else ""
            raise ValueError(
                f"{option} {given.text}{on} is not the quantity {args.transform} was fitted on "
                f"({key} = {record[key]}{was}); leave {option} out to use the recorded one, or "
                "give --allow-other-quantities"
            )


def branch_name(transform_path: str, name: str | None) -> str:
    """``gamma_<name>``; the default name is the transform file's stem, made a C++ identifier.

    Raises
    ------
    ValueError
        If a ``name`` given is not made of letters, digits and underscores.
    """
    if name is None:
        return "gamma_" + re.sub(r"\W", "_", Path(transform_path).stem)
    if not _NAME.match(name):
        raise ValueError(
            f"--name {name!r}: use letters, digits and underscores only (the branch gamma_NAME "
            "must be a column name in RDataFrame)"
        )
    return f"gamma_{name}"


def output_paths(files: Sequence[str], output_dir: str | None, output: str | None) -> list[Path]:
    """The output file of each input: ``DIR/<stem>_gamma.root``, or ``output`` for one file.

    Raises
    ------
    ValueError
        If ``output`` is given for several files, two inputs would share an
        output, or an output would replace an input.
    """
    if output is not None:
        if len(files) != 1:
            raise ValueError(
                f"--output names one file, but {len(files)} inputs were given; use --output-dir"
            )
        paths = [Path(output)]
    else:
        assert output_dir is not None
        folder = Path(output_dir)
        if folder.exists() and not folder.is_dir():
            raise ValueError(f"--output-dir {output_dir}: exists and is not a folder")
        paths = [folder / f"{Path(f).stem}_gamma.root" for f in files]
    seen: dict[Path, str] = {}
    inputs = {Path(f).resolve(): f for f in files}
    for source, path in zip(files, paths, strict=True):
        resolved = path.resolve()
        if resolved in seen:
            raise ValueError(
                f"{seen[resolved]} and {source} would both be written to {path}; "
                "apply them in separate runs with different --output-dir"
            )
        if resolved in inputs:
            raise ValueError(f"{path}: the output would replace the input {inputs[resolved]}")
        if output is not None and not path.parent.is_dir():
            raise ValueError(f"--output {output}: the folder {path.parent} does not exist")
        seen[resolved] = source
    return paths


@dataclass
class _Written:
    """What one output file holds."""

    entries: int = 0
    lacking: dict[str, int] = field(default_factory=dict)
    missing: int = 0
    outside: int = 0
    sides: dict[str, int] = field(default_factory=dict)
    branches: list[str] = field(default_factory=list)


def _id_types(source: Any, ids: Sequence[str]) -> dict[str, Any]:
    """numpy dtypes of the identifier branches (fields) of the input tree (RNTuple)."""
    import uproot

    with uproot.open(source.path) as handle:
        tree = handle[source.treename]
        if source.kind == "RNTuple":
            # an RNTuple's field has no interpretation: read none of its entries
            return {name: tree[name].array(entry_stop=0, library="np").dtype for name in ids}
        return {name: tree[name].interpretation.to_dtype for name in ids}


@dataclass(frozen=True)
class _Gamma:
    """A chunk's friend columns and counts (what a worker returns to the writer)."""

    columns: dict[str, Any]
    entries: int
    missing: int
    outside: dict[str, int]
    lacking: dict[str, int]


class _GammaChunks:
    """The friend columns of ``source``'s chunks (a task of a worker): ``(start, stop) -> list``.

    It holds the transform and the quantities by value (their model and module
    files' bytes where the disk is not shared); the worker opens only the
    input file.
    """

    def __init__(
        self, source: Any, quantities: dict[str, Any], transform: Any, branch: str, step: int
    ) -> None:
        from rosenblatt.processors.branches import EVENT_IDS

        self.source, self.quantities, self.transform = source, quantities, transform
        self.branch, self.step = branch, step
        self.ids = list(EVENT_IDS) if source.has_event_ids else []

    def __call__(self, entries: tuple[int, int | None] = (0, None)) -> list[_Gamma]:
        """The chunks of the entries ``[start, stop)`` (default: every entry)."""
        return list(self.chunks(*entries))

    def chunks(self, start: int = 0, stop: int | None = None) -> Iterator[_Gamma]:
        """The chunks of the entries ``[start, stop)``, one at a time."""
        from rosenblatt.processors.branches import iter_chunks

        read = iter_chunks(
            self.source,
            self.quantities,
            extra=self.ids,
            step_size=self.step,
            entry_start=start,
            entry_stop=stop,
        )
        transform = self.transform
        for chunk in read:
            keep = chunk.complete()
            gamma = np.full(len(chunk), MISSING_GAMMA)
            x, y = chunk.values["--x"][keep], chunk.values["--score"][keep]
            sides = dict.fromkeys(_SIDES, 0)
            if keep.any():
                gamma[keep] = transform.transform(x, y)
                outside = transform.outside(x, y)
                sides = {side: int(getattr(outside, side)) for side in _SIDES}
                sides["total"] = int(outside.total)
            columns: dict[str, Any] = {self.branch: gamma}
            if self.ids:
                columns.update({name: chunk.branches[name] for name in self.ids})
            else:
                columns["entry"] = np.arange(chunk.start, chunk.start + len(chunk), dtype=np.int64)
            yield _Gamma(
                columns,
                len(chunk),
                int((~keep).sum()),
                sides,
                {option: int((~present).sum()) for option, present in chunk.present.items()},
            )


def _write(
    source: Any,
    quantities: dict[str, Any],
    transform: Any,
    branch: str,
    temporary: Path,
    step: int,
    pool: Any = None,
) -> _Written:
    """Write the friend tree of ``source`` to ``temporary``, one chunk at a time.

    An RNTuple's friend is an RNTuple of the same name and fields as a tree's
    friend. With a ``pool`` (a coffea executor), the workers compute the
    chunks' columns, which are written here in the order of the entries.
    """
    import uproot

    computed = _GammaChunks(source, quantities, transform, branch, step)
    types: dict[str, Any] = {branch: np.float64}
    types.update(_id_types(source, computed.ids) if computed.ids else {"entry": np.int64})
    written = _Written(
        lacking=dict.fromkeys(quantities, 0), sides=dict.fromkeys(_SIDES, 0), branches=list(types)
    )
    if pool is None:
        chunks: Iterator[_Gamma] = computed.chunks()
    else:
        from rosenblatt.processors.runner import iter_results

        ranges = [(a, min(a + step, source.entries)) for a in range(0, source.entries, step)]
        chunks = (c for part in iter_results(pool, ranges, computed) for c in part)
    with uproot.recreate(str(temporary)) as handle:
        if source.kind == "RNTuple":
            tree = handle.mkrntuple(source.treename, types, source.treename)
        else:
            tree = handle.mktree(source.treename, types, title=source.treename)
        for chunk in chunks:
            tree.extend(chunk.columns)
            written.entries += chunk.entries
            written.missing += chunk.missing
            written.outside += chunk.outside.get("total", 0)
            for side in _SIDES:
                written.sides[side] += chunk.outside[side]
            for option, lacking in chunk.lacking.items():
                written.lacking[option] += lacking
    if written.entries != source.entries:
        raise ValueError(
            f"{source.path}: {written.entries} entries written, the tree has {source.entries}"
        )
    return written


#: the sides of the domain an event may lie beyond (:class:`rosenblatt.transforms.OutsideCounts`)
_SIDES = ("x_below", "x_above", "y_below", "y_above")


def check_outside(args: argparse.Namespace, transform: Any, written: Sequence[_Written]) -> None:
    """Refuse a run where more than ``--max-outside`` of the events with a value lie outside.

    Raises
    ------
    ValueError
        Saying how many events lie beyond which side of the fitted domain.
    """
    with_value = sum(w.entries - w.missing for w in written)
    outside = sum(w.outside for w in written)
    if with_value == 0 or outside <= args.max_outside * with_value:
        return
    (x_low, x_high), (y_low, y_high) = transform.domain_
    edges = {"x_below": x_low, "x_above": x_high, "y_below": y_low, "y_above": y_high}
    names = {"x": f"--x {args.x}", "y": f"--score {args.score}"}
    sides = []
    for side, edge in edges.items():
        count = sum(w.sides[side] for w in written)
        if count:
            axis, where = side.split("_")
            sides.append(f"{count:,} with {names[axis]} {where} {edge:g}")
    raise ValueError(
        f"{outside:,} of the {with_value:,} events ({outside / with_value:.1%}) lie outside the "
        f"domain {args.transform} was fitted on ({'; '.join(sides)}), more than --max-outside "
        f"{args.max_outside:g}: is --x or --score the wrong branch? Nothing was written "
        "(raise --max-outside to apply it anyway)"
    )


def _describe(path: Path, source: Any, written: _Written, quantities: dict[str, Any]) -> str:
    from rosenblatt.processors.branches import missing_reason

    noun = "fields" if source.kind == "RNTuple" else "branches"
    text = (
        f"{path}: {source.kind} {source.treename!r} with {written.entries:,} entries "
        f"(as {source.path}), {noun} {', '.join(written.branches)}"
    )
    if written.missing:
        reasons = "; ".join(
            f"{n:,} with {missing_reason(quantities[option])} for {option} "
            f"{quantities[option].text}"
            for option, n in written.lacking.items()
            if n
        )
        text += f"; {written.missing:,} events lacking a value got gamma = -1 ({reasons})"
    if written.outside:
        text += (
            f"; {written.outside:,} events lie outside the transform's domain (gamma at the "
            "nearest edge in x, 0 or 1 in y)"
        )
    return text


def main(args: argparse.Namespace) -> int:
    """Run ``rosenblatt apply``; return the exit status."""
    import rosenblatt as rb
    from rosenblatt.processors.branches import check_tree, require, require_for, temporary_beside
    from rosenblatt.serialization import fitted_on

    temporaries: list[Path] = []
    created: Path | None = None
    try:
        require("uproot", "io", "rosenblatt apply")
        transform = rb.load(args.transform)
        if transform.x_dims != 1:
            raise ValueError(
                f"{args.transform}: fitted on {transform.x_dims} observables; "
                "rosenblatt apply takes one --x"
            )
        branch = branch_name(args.transform, args.name)
        record = fitted_on(transform)
        recorded_inputs(args, record)
        quantities = quantities_from_args(args, {"--x": args.x, "--score": args.score})
        executor = executor_from_args(args)
        sources = [check_tree(path, args.treename, quantities) for path in args.files]
        check_quantities(args, record, quantities)
        require_for(quantities, sources)
        outputs = output_paths(args.files, args.output_dir, args.output)
        if args.output_dir is not None and not Path(args.output_dir).exists():
            Path(args.output_dir).mkdir(parents=True)
            created = Path(args.output_dir)
        with ExitStack() as stack:
            stack.enter_context(step("apply"))
            pool = None
            if executor.kind != "iterative":
                from rosenblatt.processors.runner import make_executor

                require("coffea", "hep", f"rosenblatt apply --executor {executor.kind}")
                pool = stack.enter_context(
                    make_executor(
                        executor.kind,
                        executor.workers,
                        scheduler=executor.scheduler,
                        progress=False,
                    )
                )
            # the workers get the transform itself and, without a shared disk, the quantities'
            # model and module files by value
            carried = by_value(quantities, executor) if pool is not None else quantities
            lines, counts = [], []
            for source, output in zip(sources, outputs, strict=True):
                temporary = temporary_beside(output)
                temporaries.append(temporary)
                written = _write(
                    source, carried, transform, branch, temporary, args.chunk_size, pool
                )
                counts.append(written)
                lines.append(_describe(output, source, written, quantities))
        check_outside(args, transform, counts)
        with step("save"):
            for temporary, output in zip(temporaries, outputs, strict=True):
                os.replace(temporary, output)
            temporaries.clear()
    except (OSError, ValueError, TypeError) as err:
        print_error("rosenblatt apply", err)
        return 2
    finally:
        for temporary in temporaries:
            temporary.unlink(missing_ok=True)
        if temporaries and created is not None and not any(created.iterdir()):
            created.rmdir()
    print("\n".join(lines))
    print(
        f"rosenblatt apply: {branch} = gamma of {args.transform} ({transform.describe()}) "
        f"written for {len(outputs)} file{'s' if len(outputs) > 1 else ''}"
    )
    return 0
