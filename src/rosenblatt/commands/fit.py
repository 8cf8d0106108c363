"""``rosenblatt fit``: a transform fitted on branches of the user's own ROOT files."""

from __future__ import annotations

import argparse
import dataclasses
import os
import shutil
import warnings
from pathlib import Path
from typing import Any

from rosenblatt._interrupt import step
from rosenblatt.commands._errors import print_error
from rosenblatt.commands._fit_inputs import (
    Input,
    Sample,
    below_x_max,
    joined,
    read_in_pieces,
)
from rosenblatt.typing import FloatArray

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

With --config, the events are those of the defining datasets of an analysis configuration
(those of role defining, else every background dataset, as the analysis fits them; of
`study: abcd`, its datasets:, defining:, lumi:, treename:, jets:, abcd.x, score: and the cut
levels abcd.y0 are read, the rest is not), selected by its defining.selection and mixed at
their physical proportions as the analysis selects and mixes them: each dataset's weight (its
weight: quantity, or 1) times xsec * lumi / sum(w), sum(w) over every event of its files
(NanoAOD: Runs.genEventSumw); a dataset without xsec keeps its weights. --x and --score default
to the configuration's abcd.x and score:, --treename and --jets given replace its treename:
and jets:, and the transform is given its cut levels, so that it is the one the analysis
fits with the same parameters. The transform saved
records what it was fitted on (the quantities as written, tree, files with their BLAKE2b
hashes, number and weighted sum of events), which `rosenblatt apply` uses.

A fit keeps the values it has read, chunk by chunk, in a work folder (--work-dir; by default
TRANSFORM.json.work beside --output, removed once the transform is saved): a fit stopped
while it reads (Ctrl-C, a batch system's SIGTERM) and started again with the same command
reads only the chunks left, and saves the transform an uninterrupted fit saves. A chunk is
kept under a key of the fit's options, the file's content hash and its entries: a changed
file or option is read again.

--executor futures or dask (or, with --config, its executor: block) reads the chunks in worker
processes, which return their values to this one: the transform is the one this process would
fit, bit for bit. --scheduler joins a running dask scheduler (a dask-jobqueue cluster's); with
--no-shared-disk (executor.shared_disk: false) the model files and the module files of the
user's functions are read here once and travel with the tasks by value, and the workers open
only the input files.
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


#: the file of the work folder that keeps the input files' hashes for a resumed fit
DIGESTS = "digests.json"
#: ``--treename`` when neither given nor recorded
DEFAULT_TREENAME = "Events"


def add_common_arguments(
    parser: argparse.ArgumentParser, *, recorded: str | None = None, files: str = "+"
) -> None:
    """The input options shared with ``rosenblatt apply``: files, tree, jets, chunk size.

    With ``recorded`` (where else they come from, in words: ``"the one the
    transform was fitted on"``), ``--treename`` and ``--jets`` default to
    ``None``: that value where there is one, else the usual defaults.
    """
    from rosenblatt.processors.branches import DEFAULT_STEP
    from rosenblatt.processors.quantities import DEFAULT_JETS

    recorded_default = "" if recorded is None else f"{recorded}, else "
    parser.add_argument("files", nargs=files, metavar="FILE", help="ROOT files with the tree")
    parser.add_argument(
        "--treename",
        default=None if recorded else DEFAULT_TREENAME,
        metavar="TREE",
        help=f"the TTree or RNTuple holding the events (default: {recorded_default}"
        f"{DEFAULT_TREENAME})",
    )
    parser.add_argument(
        "--jets",
        default=None if recorded else DEFAULT_JETS,
        metavar="COLLECTION",
        help=f"collection of the built-in jet features (default: {recorded_default}{DEFAULT_JETS})",
    )
    parser.add_argument(
        "--chunk-size",
        type=positive_int,
        default=DEFAULT_STEP,
        metavar="N",
        help="entries read at a time (default: %(default)s)",
    )
    configured = "with --config, its executor:'s, else " if "--config" in (recorded or "") else ""
    parser.add_argument(
        "--executor",
        choices=("iterative", "futures", "dask"),
        default=None,
        help="where the chunks are read: this process, local worker processes, or a dask "
        f"cluster (default: {configured}iterative)",
    )
    parser.add_argument(
        "--workers",
        type=positive_int,
        default=None,
        metavar="N",
        help="worker processes of futures and of a local dask cluster (default: "
        f"{configured}one per core)",
    )
    parser.add_argument(
        "--scheduler",
        default=None,
        metavar="ADDRESS",
        help="the address of a running dask scheduler to join (tcp://host:port; implies "
        "--executor dask)",
    )
    parser.add_argument(
        "--shared-disk",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="whether the workers see the files named by path; --no-shared-disk: the model "
        "files and module files of the quantities travel to them by value, and they open "
        f"only the input files (default: {configured}shared)",
    )


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``fit`` sub-command to ``subparsers``."""
    parser = subparsers.add_parser(
        "fit",
        help="fit a transform on branches of ROOT files",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_common_arguments(parser, files="*", recorded="with --config, the configuration's")
    parser.add_argument(
        "--config",
        default=None,
        metavar="CONFIG.yaml",
        help="fit on the defining datasets of an analysis configuration (of role defining, "
        "else every background dataset, as the analysis fits; its datasets:, "
        "defining: with its selection, lumi:, treename:, jets:, abcd.x and score:), each "
        "normalised to xsec * lumi * w / sum(w), instead of FILEs",
    )
    parser.add_argument(
        "--x",
        default=None,
        metavar="X",
        help="the protected observable (default: with --config, its abcd.x)",
    )
    parser.add_argument(
        "--score",
        default=None,
        metavar="Y",
        help="the classifier score (default: with --config, its score:)",
    )
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
        "--occupancy",
        choices=("events", "weight"),
        default=None,
        help="what IRGI's columns in x hold equal shares of: events (simulation generated in "
        "slices keeps its columns where its events are, as the abcd study fits) or the summed "
        "weight (default: events)",
    )
    parser.add_argument(
        "--sigma-r",
        type=auto_or(float),
        default=None,
        metavar="S|auto",
        help="KDE's and GridKDE's kernel width relative to the spread of x, or auto: chosen by "
        "cross-validation (default: as the abcd study's {kind: kde} and {kind: gridkde}, "
        "0.05 for kde and auto for gridkde)",
    )
    parser.add_argument(
        "--output", required=True, metavar="TRANSFORM.json", help="file to save the transform to"
    )
    parser.add_argument(
        "--work-dir",
        default=None,
        metavar="DIR",
        help="folder where the values read are kept per chunk, so that a stopped fit resumes; "
        "kept after the fit (default: TRANSFORM.json.work beside --output, removed once the "
        "transform is saved)",
    )
    parser.set_defaults(func=main)


def executor_from_args(args: argparse.Namespace, configured: Any = None) -> Any:
    """The executor of ``--executor``, ``--workers``, ``--scheduler`` and ``--shared-disk``.

    Parameters
    ----------
    configured : rosenblatt.studies.abcd.config.ExecutorConfig, optional
        A configuration's ``executor:`` block, whose keys the options not
        given keep.

    Returns
    -------
    rosenblatt.studies.abcd.config.ExecutorConfig

    Raises
    ------
    ValueError
        If the options contradict each other (``--scheduler`` with another executor).
    """
    from rosenblatt.studies.abcd.config import ExecutorConfig

    given = {
        "kind": args.executor,
        "workers": args.workers,
        "scheduler": args.scheduler,
        "shared_disk": args.shared_disk,
    }
    if args.scheduler is not None and args.executor is None:
        given["kind"] = "dask"
    block = {} if configured is None else dataclasses.asdict(configured)
    if configured is not None and given["kind"] is not None and given["kind"] != "dask":
        block["scheduler"] = None
    block.update({key: value for key, value in given.items() if value is not None})
    return ExecutorConfig.parse(block, "the command line" if configured is None else "--config")


def by_value(quantities: dict[str, Any], executor: Any) -> dict[str, Any]:
    """The quantities, with their model and module files read in where the disk is not shared."""
    if executor.shared_disk:
        return quantities
    return {option: quantity.by_value(option) for option, quantity in quantities.items()}


def quantities_from_args(
    args: argparse.Namespace, options: dict[str, str | None]
) -> dict[str, Any]:
    """``{"--x": Quantity, ...}`` of the options given (``None`` values left out).

    Raises
    ------
    QuantityError
        If one is none of the forms.
    """
    from rosenblatt.exceptions import QuantityError
    from rosenblatt.processors.branches import option_quantity

    quantities = {}
    for option, text in options.items():
        if text is None:
            continue
        try:
            quantities[option] = option_quantity(text, option, args.jets)
        except QuantityError as err:
            raise QuantityError(str(err).replace(f"{option}.function", option)) from None
    return quantities


def _make_transform(args: argparse.Namespace, cut_levels: tuple[float, ...] | None = None) -> Any:
    """The unfitted transform of the options, given the levels of ``gamma`` cut at.

    Options not given take the abcd study's defaults for ``{kind: ...}``, so that
    ``--config`` saves the transform that the analysis fits.
    """
    from rosenblatt.studies.abcd.config import TransformConfig

    given = {"depth": args.depth, "occupancy": args.occupancy, "sigma_r": args.sigma_r}
    allowed = {"irgi": ("depth", "occupancy")}.get(args.transform, ("sigma_r",))
    for name, value in given.items():
        if value is not None and name not in allowed:
            option = "--" + name.replace("_", "-")
            owners = "irgi" if name != "sigma_r" else "kde and gridkde"
            raise ValueError(f"{option} is a parameter of {owners}, not of {args.transform}")
    parameters = {name: given[name] for name in allowed if given[name] is not None}
    spec = TransformConfig(
        name=args.transform, kind=args.transform, parameters=parameters, cut_levels=cut_levels
    )
    return spec.build()


def _work_dir(args: argparse.Namespace, output: Path) -> tuple[Path, bool]:
    """The fit's work folder, and whether it is the default one (removed after the fit)."""
    if args.work_dir is not None:
        return Path(args.work_dir), False
    return output.with_name(f"{output.name}.work"), True


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
    sample: Sample,
    quantities: dict[str, Any],
    weights: FloatArray | None,
    selection: Any = None,
) -> str:
    from rosenblatt.processors.branches import missing_reason

    n_used = sample.read - sample.not_selected - sample.left_out - sample.above_x_max
    files = f"{len(args.files)} file{'s' if len(args.files) > 1 else ''}"
    if args.config is not None:
        names = ", ".join(transform.fitted_on_["datasets"])
        files += f" (the defining datasets of {args.config}: {names}, mixed at xsec * lumi)"
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
        chosen = f"; depth {transform.depth_}" if transform.depth == "auto" else ""
    else:
        chosen = f"; sigma_r {transform.sigma_r_:.4g}" if transform.sigma_r == "auto" else ""
    chosen += " chosen by cross-validation" if chosen else ""
    selected = sample.read - sample.not_selected
    if selection is not None:
        passing = (
            f"{selected:,} of the {sample.read:,} events read passed defining.selection "
            f"{selection.text}; "
        )
        of = f"the {selected:,} selected"
    else:
        passing, of = "", f"the {sample.read:,} events read"
    if sample.left_out:
        reasons = "; ".join(
            f"{n:,} with {missing_reason(quantities[option])} for {option} "
            f"{quantities[option].text}"
            for option, n in sample.lacking.items()
            if n and option in quantities
        )
        lacking = f"{sample.left_out:,} of {of} were left out, lacking a value ({reasons})"
    else:
        lacking = f"every one of {of} had a value"
    if sample.above_x_max:
        lacking += (
            f"; {sample.above_x_max:,} at or above abcd.x_max were left out, as the analysis "
            "leaves them"
        )
    coarse = getattr(transform, "coarse_cut_note", None)
    note = coarse() if callable(coarse) else None
    warning = "" if note is None else f" Warning: {note}."
    return (
        f"rosenblatt fit: {transform.describe()}{chosen}, fitted on {n_used:,} events of "
        f"tree {args.treename!r} in {files} ({given}) with {weighted}; {passing}{lacking}. "
        f"Saved to {args.output}.{warning}"
    )


def fitted_on(
    args: argparse.Namespace,
    sources: list[Any],
    quantities: dict[str, Any],
    n_events: int,
    sum_weight: float,
    digests: dict[str, str] | None = None,
) -> dict[str, Any]:
    """The ``fitted_on`` block saved with the transform (see :func:`rosenblatt.serialization.fitted_on`).

    The quantities as written, the tree, how its events were read (coffea's
    ``BaseSchema``: every branch a field), and each file's name as given,
    size, BLAKE2b hash, kind (``tree`` or ``RNTuple``) and entries.
    ``digests``: the files' hashes where already computed.
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
                HASH: (digests or {}).get(source.path) or file_digest(source.path),
                "kind": source.kind,
                "entries": source.entries,
            }
            for source in sources
        ],
        "n_events": n_events,
        "sum_weight": sum_weight,
    }


def _file_inputs(args: argparse.Namespace) -> tuple[list[Input], dict[str, Any]]:
    """The FILEs given, their weights as they are; and the quantities read."""
    from rosenblatt.processors.branches import check_tree
    from rosenblatt.processors.quantities import DEFAULT_JETS

    if not args.files:
        raise ValueError("give the ROOT files to fit on, or --config with their datasets")
    absent = [option for option in ("--x", "--score") if getattr(args, option[2:]) is None]
    if absent:
        raise ValueError(f"give {' and '.join(absent)}, or --config with its abcd.x and score:")
    args.treename = DEFAULT_TREENAME if args.treename is None else args.treename
    args.jets = DEFAULT_JETS if args.jets is None else args.jets
    quantities = quantities_from_args(
        args, {"--x": args.x, "--score": args.score, "--weight": args.weight}
    )
    sources = [check_tree(path, args.treename, quantities) for path in args.files]
    return [Input(sources, quantities)], quantities


def _analysis_config(args: argparse.Namespace) -> Any:
    """The analysis configuration of ``--config``, ``--treename`` and ``--jets`` given in it.

    An option given stands for the configuration's key of the same name
    (``treename:``, ``jets:``), as if written there.
    """
    from rosenblatt.studies.abcd.config import AbcdConfig
    from rosenblatt.studies.config import load_config

    if args.files or args.weight is not None:
        given = "FILEs" if args.files else "--weight"
        raise ValueError(
            f"--config {args.config} names the files and weights of its datasets: leave {given} out"
        )
    config = dict(load_config(args.config))
    if config["study"] != "abcd":
        raise ValueError(f"--config {args.config}: study {config['study']!r} has no datasets:")
    for key in ("treename", "jets"):
        if getattr(args, key) is not None:
            config[key] = getattr(args, key)
    cfg = AbcdConfig.parse(config)
    if cfg.schema == "particles":
        raise ValueError(
            f"{cfg.source}: schema: particles: rosenblatt fit reads branches of flat ntuples "
            "and NanoAOD, not particle-level files; run the analysis"
        )
    return cfg


def _config_inputs(
    args: argparse.Namespace, cfg: Any
) -> tuple[list[Input], dict[str, Any], dict[str, Any]]:
    """The defining datasets of ``cfg``, each with its weight, normalisation and selection.

    ``--x`` and ``--score`` not given are the configuration's ``abcd.x`` and
    ``score:``; the events are those its ``defining.selection`` keeps, as the
    analysis selects them. Returns the inputs, the quantities read and what
    the record adds: ``config``, ``lumi``, ``selection``, ``x_max`` (the events at or
    above it are left out of the fit) and, per dataset,
    its files, tree, weight, cross section and factor.
    """
    from rosenblatt.processors.branches import check_tree
    from rosenblatt.studies.abcd.preflight import dataset_scales

    args.treename, args.jets = cfg.treename, cfg.jets
    given = quantities_from_args(args, {"--x": args.x, "--score": args.score})
    quantities = {"--x": given.get("--x", cfg.x), "--score": given.get("--score", cfg.score)}
    if quantities["--score"].reads_particles:
        raise ValueError(
            f"{cfg.source}: score: {cfg.score.text} scores particle-level files; give --score"
        )
    selection = cfg.defining_selection
    defining = {name: cfg.datasets[name] for name in cfg.defining_names}
    scales = dataset_scales(defining, cfg.lumi, cfg.source, cfg.schema)
    inputs, datasets = [], {}
    for name, dataset in defining.items():
        wanted = dict(quantities)
        if dataset.weight is not None:
            wanted["--weight"] = dataset.weight
        part = Input([], wanted, scales[name], selection, name)
        part.sources.extend(
            check_tree(path, dataset.treename, part.checked) for path in dataset.files
        )
        inputs.append(part)
        datasets[name] = {
            "files": list(dataset.files),
            "treename": dataset.treename,
            "weight": None if dataset.weight is None else dataset.weight.text,
            "xsec": dataset.xsec,
            "scale": scales[name],
        }
    args.files = [path for dataset in defining.values() for path in dataset.files]
    record = {
        "config": cfg.source,
        "lumi": cfg.lumi,
        "selection": None if selection is None else selection.text,
        "x_max": cfg.cuts.x_max,
        "datasets": datasets,
    }
    return inputs, quantities, record


def main(args: argparse.Namespace) -> int:
    """Run ``rosenblatt fit``; return the exit status."""
    from rosenblatt._records import file_digests
    from rosenblatt.processors.branches import require, require_for

    try:
        require("uproot", "io", "rosenblatt fit")
        transform = _make_transform(args)
        output = _check_output(args.output)
        mixed: dict[str, Any] = {}
        if args.config is None:
            executor = executor_from_args(args)
            inputs, quantities = _file_inputs(args)
        else:
            cfg = _analysis_config(args)
            executor = executor_from_args(args, cfg.executor)
            # as the analysis fits it: IRGI's depths resolve the configuration's cut levels
            transform = _make_transform(args, cfg.cuts.y0)
            inputs, quantities, mixed = _config_inputs(args, cfg)
        sources = [source for part in inputs for source in part.sources]
        for part in inputs:
            require_for(part.checked, part.sources)
        work, temporary = _work_dir(args, output)
        # a resumed fit reads again only the files changed since its first run
        local = [s.path for s in sources if Path(s.path).is_file()]
        digests = file_digests(local, work / DIGESTS)
        if executor.kind == "iterative":
            with step("read"):
                sample = read_in_pieces(args, inputs, digests, work)
        else:
            from rosenblatt.processors.runner import make_executor

            require("coffea", "hep", f"rosenblatt fit --executor {executor.kind}")
            carried = [
                dataclasses.replace(
                    part,
                    quantities=by_value(part.quantities, executor),
                    selection=None
                    if part.selection is None
                    else by_value({"selection": part.selection}, executor)["selection"],
                )
                for part in inputs
            ]
            with (
                step("read"),
                make_executor(
                    executor.kind, executor.workers, scheduler=executor.scheduler, progress=False
                ) as pool,
            ):
                sample = read_in_pieces(args, carried, digests, work, pool)
        if not sample.x or sum(len(v) for v in sample.x) == 0:
            selection = inputs[0].selection
            outside = "" if selection is None else f"{sample.not_selected:,} not selected, "
            raise ValueError(
                f"no event to fit on: {sample.read:,} events read, {outside}"
                f"{sample.left_out:,} lacking a value"
            )
        x, y = joined(sample.x), joined(sample.y)
        weights = joined(sample.w) if sample.w else None
        x, y, weights = below_x_max(x, y, weights, mixed.get("x_max"), sample, args.config)
        with step("fit"), warnings.catch_warnings():
            # a grid too coarse for the configuration's cuts is said in the summary
            warnings.filterwarnings("ignore", "IRGI .* bins beyond the cut", UserWarning)
            transform.fit(x, y, weights)
        transform.fitted_on_ = fitted_on(
            args, sources, quantities, transform.n_events_, transform.sum_weight_, digests
        )
        transform.fitted_on_.update(mixed)
        with step("save"):
            _save(transform, output)
        if temporary:
            shutil.rmtree(work, ignore_errors=True)
    except (OSError, ValueError, TypeError) as err:
        print_error("rosenblatt fit", err)
        return 2
    print(_summary(args, transform, sample, quantities, weights, inputs[0].selection))
    return 0
