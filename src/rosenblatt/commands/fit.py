"""``rosenblatt fit``: a transform fitted on branches of the user's own ROOT files."""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from rosenblatt.commands._errors import print_error

__all__ = [
    "DEFAULT_TREENAME",
    "TRANSFORMS",
    "add_common_arguments",
    "add_parser",
    "auto_or",
    "main",
    "positive_int",
    "quantities_from_args",
]

#: ``--transform`` -> class name in :mod:`rosenblatt`
TRANSFORMS = {"irgi": "IRGI", "kde": "KDE", "gridkde": "GridKDE"}

DESCRIPTION = """\
Fit a transform gamma(x, y) = P(Y <= y | X = x) on the events of TTrees or RNTuples in ROOT
files (any framework's ntuples or NanoAOD; an RNTuple's fields are read as branches) and save it as JSON for `rosenblatt apply`, `rosenblatt export`
and rosenblatt.load. Only the branches that --x, --score and --weight read are read, in
chunks. Each of them is

  a branch                   dijet_mass
  a collection element       FatJet.msoftdrop[0]   (branch FatJet_msoftdrop, first object)
  a built-in jet feature     mjj, mj1, mj2, pt_j1, deta_jj of the two leading jets (by pT)
                             of the collection --jets (branches FatJet_pt/eta/phi/mass)
  your function              module:name or file.py:name, given the chunk's events as coffea
                             NanoEvents (BaseSchema: every branch a field) and returning one
                             number per event

An event lacking a value (fewer objects than an element needs, fewer than two jets for a jet
feature) is left out of the fit and counted in the summary; a NaN or infinite value is an
error naming the file and the entry. Weights may be negative; their sum must be positive.
Every file, tree and branch is checked before any event is read.
"""


def auto_or(kind: type) -> Any:
    """An argparse type: ``"auto"`` or a value of ``kind``."""

    def parse(text: str) -> Any:
        if text == "auto":
            return text
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"expected 'auto' or a{'n integer' if kind is int else ' number'}, got {text!r}"
            ) from None
        return value

    return parse


def positive_int(text: str) -> int:
    """An argparse type: an integer of at least 1."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


#: ``--treename`` when neither given nor recorded
DEFAULT_TREENAME = "Events"


def add_common_arguments(parser: argparse.ArgumentParser, *, recorded: bool = False) -> None:
    """The input options shared with ``rosenblatt apply``: files, tree, jets, chunk size.

    With ``recorded``, ``--treename`` and ``--jets`` default to ``None``: the
    values the transform records, else the usual defaults.
    """
    from rosenblatt.processors.branches import DEFAULT_STEP
    from rosenblatt.processors.quantities import DEFAULT_JETS

    recorded_default = "the one the transform was fitted on, else "
    parser.add_argument("files", nargs="+", metavar="FILE", help="ROOT files with the tree")
    parser.add_argument(
        "--treename",
        default=None if recorded else DEFAULT_TREENAME,
        metavar="TREE",
        help="the TTree or RNTuple holding the events (default: "
        f"{recorded_default if recorded else ''}{DEFAULT_TREENAME})",
    )
    parser.add_argument(
        "--jets",
        default=None if recorded else DEFAULT_JETS,
        metavar="COLLECTION",
        help="collection of the built-in jet features (default: "
        f"{recorded_default if recorded else ''}{DEFAULT_JETS})",
    )
    parser.add_argument(
        "--chunk-size",
        type=positive_int,
        default=DEFAULT_STEP,
        metavar="N",
        help="entries read at a time (default: %(default)s)",
    )


def add_parser(subparsers: Any) -> None:
    """Add the ``fit`` sub-command to ``subparsers``."""
    parser = subparsers.add_parser(
        "fit",
        help="fit a transform on branches of ROOT files",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_common_arguments(parser)
    parser.add_argument("--x", required=True, metavar="X", help="the protected observable")
    parser.add_argument("--score", required=True, metavar="Y", help="the classifier score")
    parser.add_argument(
        "--weight", default=None, metavar="W", help="the event weight (default: 1 per event)"
    )
    parser.add_argument(
        "--transform",
        choices=sorted(TRANSFORMS),
        default="irgi",
        help="IRGI (adaptive grid), KDE (Gaussian kernel in x) or GridKDE (kernel on a grid "
        "of x nodes) (default: %(default)s)",
    )
    parser.add_argument(
        "--depth",
        type=auto_or(int),
        default=None,
        metavar="N|auto",
        help="IRGI's bisection depth, or auto: chosen by cross-validation (default: auto)",
    )
    parser.add_argument(
        "--sigma-r",
        type=auto_or(float),
        default=None,
        metavar="S|auto",
        help="KDE's and GridKDE's kernel width relative to the spread of x, or auto: chosen by "
        "cross-validation (default: auto)",
    )
    parser.add_argument(
        "--output", required=True, metavar="TRANSFORM.json", help="file to save the transform to"
    )
    parser.set_defaults(func=main)


def quantities_from_args(
    args: argparse.Namespace, options: dict[str, str | None]
) -> dict[str, Any]:
    """``{"--x": Quantity, ...}`` of the options given (``None`` values left out).

    Raises
    ------
    QuantityError
        If one is none of the forms.
    """
    from rosenblatt.processors.branches import option_quantity
    from rosenblatt.processors.quantities import QuantityError

    quantities = {}
    for option, text in options.items():
        if text is None:
            continue
        try:
            quantities[option] = option_quantity(text, option, args.jets)
        except QuantityError as err:
            raise QuantityError(str(err).replace(f"{option}.function", option)) from None
    return quantities


def _make_transform(args: argparse.Namespace) -> Any:
    import rosenblatt as rb

    if args.transform == "irgi":
        if args.sigma_r is not None:
            raise ValueError("--sigma-r is a parameter of kde and gridkde, not of irgi")
        return rb.IRGI(depth="auto" if args.depth is None else args.depth)
    if args.depth is not None:
        raise ValueError(f"--depth is a parameter of irgi, not of {args.transform}")
    sigma_r = "auto" if args.sigma_r is None else args.sigma_r
    return getattr(rb, TRANSFORMS[args.transform])(sigma_r=sigma_r)


@dataclass
class _Sample:
    """The defining events read so far, and those left out."""

    x: list[NDArray[np.float64]] = field(default_factory=list)
    y: list[NDArray[np.float64]] = field(default_factory=list)
    w: list[NDArray[np.float64]] = field(default_factory=list)
    read: int = 0
    lacking: dict[str, int] = field(default_factory=dict)
    left_out: int = 0


def _read(sources: list[Any], quantities: dict[str, Any], step: int) -> _Sample:
    from rosenblatt.processors.branches import iter_chunks

    sample = _Sample(lacking=dict.fromkeys(quantities, 0))
    for source in sources:
        for chunk in iter_chunks(source, quantities, step_size=step):
            keep = chunk.complete()
            sample.read += len(chunk)
            sample.left_out += int((~keep).sum())
            for option, present in chunk.present.items():
                sample.lacking[option] += int((~present).sum())
            sample.x.append(chunk.values["--x"][keep])
            sample.y.append(chunk.values["--score"][keep])
            if "--weight" in chunk.values:
                sample.w.append(chunk.values["--weight"][keep])
    return sample


def _check_output(path: str) -> Path:
    output = Path(path)
    if output.is_dir():
        raise ValueError(f"--output {path}: is a directory; give the transform's file name")
    if not output.parent.is_dir():
        raise ValueError(f"--output {path}: the folder {output.parent} does not exist")
    return output


def _save(transform: Any, output: Path) -> None:
    """Save through a temporary file beside ``output``, moved into place when complete."""
    from rosenblatt.processors.branches import temporary_beside

    temporary = temporary_beside(output)
    try:
        transform.save(temporary)
        os.replace(temporary, output)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


def _summary(
    args: argparse.Namespace,
    transform: Any,
    sample: _Sample,
    quantities: dict[str, Any],
    weights: NDArray[np.float64] | None,
) -> str:
    from rosenblatt.processors.branches import missing_reason

    n_used = sample.read - sample.left_out
    files = f"{len(args.files)} file{'s' if len(args.files) > 1 else ''}"
    given = ", ".join(f"{option} {q.text}" for option, q in quantities.items())
    if weights is None:
        weighted = f"unit weights (sum {n_used:,})"
    else:
        negative = weights < 0
        weighted = f"sum of weights {weights.sum():.6g}"
        if negative.any():
            weighted += (
                f" ({int(negative.sum()):,} negative weights summing to "
                f"{weights[negative].sum():.6g})"
            )
    if args.transform == "irgi":
        chosen = f"; depth {transform.depth_}" if args.depth in (None, "auto") else ""
    else:
        chosen = f"; sigma_r {transform.sigma_r_:.4g}" if args.sigma_r in (None, "auto") else ""
    chosen += " chosen by cross-validation" if chosen else ""
    if sample.left_out:
        reasons = "; ".join(
            f"{n:,} with {missing_reason(quantities[option])} for {option} "
            f"{quantities[option].text}"
            for option, n in sample.lacking.items()
            if n
        )
        lacking = (
            f"{sample.left_out:,} of the {sample.read:,} events read were left out, lacking a "
            f"value ({reasons})"
        )
    else:
        lacking = f"every one of the {sample.read:,} events read had a value"
    return (
        f"rosenblatt fit: {transform.describe()}{chosen}, fitted on {n_used:,} events of "
        f"tree {args.treename!r} in {files} ({given}) with {weighted}; {lacking}. "
        f"Saved to {args.output}."
    )


def fitted_on(
    args: argparse.Namespace,
    sources: list[Any],
    quantities: dict[str, Any],
    n_events: int,
    sum_weight: float,
) -> dict[str, Any]:
    """The ``fitted_on`` block saved with the transform (see :func:`rosenblatt.serialization.fitted_on`).

    The quantities as written, the tree, how its events were read (coffea's
    ``BaseSchema``: every branch a field), and each file's name as given,
    size, BLAKE2b hash, kind (``tree`` or ``RNTuple``) and entries.
    """
    from rosenblatt._records import HASH, file_digest

    weight = quantities.get("--weight")
    return {
        "x": quantities["--x"].text,
        "y": quantities["--score"].text,
        "weight": None if weight is None else weight.text,
        "treename": args.treename,
        "schema": "base",
        "jets": args.jets,
        "files": [
            {
                "name": source.path,
                "size": Path(source.path).stat().st_size,
                HASH: file_digest(source.path),
                "kind": source.kind,
                "entries": source.entries,
            }
            for source in sources
        ],
        "n_events": n_events,
        "sum_weight": sum_weight,
    }


def main(args: argparse.Namespace) -> int:
    """Run ``rosenblatt fit``; return the exit status."""
    from rosenblatt.processors.branches import check_tree, require, require_for

    try:
        require("uproot", "io", "rosenblatt fit")
        transform = _make_transform(args)
        output = _check_output(args.output)
        quantities = quantities_from_args(
            args, {"--x": args.x, "--score": args.score, "--weight": args.weight}
        )
        sources = [check_tree(path, args.treename, quantities) for path in args.files]
        require_for(quantities, sources)
        sample = _read(sources, quantities, args.chunk_size)
        if not sample.x or sum(len(v) for v in sample.x) == 0:
            raise ValueError(
                f"no event to fit on: {sample.read:,} events read, "
                f"{sample.left_out:,} of them lacking a value"
            )
        x, y = np.concatenate(sample.x), np.concatenate(sample.y)
        weights = np.concatenate(sample.w) if sample.w else None
        transform.fit(x, y, weights)
        transform.fitted_on_ = fitted_on(
            args, sources, quantities, transform.n_events_, transform.sum_weight_
        )
        _save(transform, output)
    except (OSError, ValueError, TypeError) as err:
        print_error("rosenblatt fit", err)
        return 2
    print(_summary(args, transform, sample, quantities, weights))
    return 0
