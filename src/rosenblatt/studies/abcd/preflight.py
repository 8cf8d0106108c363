"""Checks of the ABCD study's files before any chunk runs: trees, branches, roles, normalisation.

Every file of every dataset is opened with uproot (metadata only, plus the
weight branch where a dataset is normalised to its cross section), a URL as
written (``root://``, ``https://``: uproot reads the byte ranges it needs). The
events may be a TTree or an RNTuple of the name ``treename``: an RNTuple's fields
are checked as a tree's branches (coffea reads either). A missing file, tree or
branch (field) is a :class:`PreflightError` that names the file, lists what it
holds and suggests the closest name; so is a run whose roles cannot give a
result (no background to fit the transforms on, or a role it needs without
events).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any, TypedDict

import numpy as np

from rosenblatt.exceptions import PreflightError, UnreadableFileError
from rosenblatt.processors.quantities import Quantity, closest
from rosenblatt.studies.abcd.datasets import DatasetConfig, is_url

if TYPE_CHECKING:
    from rosenblatt.processors.runner import CheckedFiles

__all__ = [
    "NANOAOD_EVENT_IDS",
    "Preflight",
    "PreflightError",
    "SkippedFile",
    "dataset_scales",
    "preflight",
]

#: the branches coffea's NanoAODSchema needs in every file
NANOAOD_EVENT_IDS = ("run", "luminosityBlock", "event")

#: branches listed in a message about a missing one, at most
_LISTED = 40

#: uproot's class names of the objects that hold events: a TTree, or an RNTuple
EVENT_CLASSES = {"TTree": "tree", "ROOT::RNTuple": "RNTuple"}


def _one_line(err: BaseException) -> str:
    """An exception's message on one line."""
    return " ".join(str(err).split()) or type(err).__name__


def _error(
    source: str, key: str, reason: str, kind: type[PreflightError] = PreflightError
) -> PreflightError:
    """The error for ``key`` of the configuration ``source``."""
    return kind(f"{source}: {key}: {reason}", reason)


class SkippedFile(TypedDict):
    """A file that cannot be read, left out with ``skip_bad_files`` (as ``cutflow.json`` holds it).

    Attributes
    ----------
    dataset : str
        The dataset of the file.
    reason : str
        Why it cannot be read.
    entries : int or None
        Its events, where known.
    """

    dataset: str
    reason: str
    entries: int | None


@dataclass(frozen=True)
class Preflight:
    """What the checks found.

    Attributes
    ----------
    schema : str
        ``"base"``, ``"nanoaod"`` or ``"particles"`` (resolved from ``auto``).
    entries : dict
        ``{dataset: {file: events}}``.
    sum_weights : dict
        Per dataset normalised to its cross section, the ``sum(w)`` used.
    scales : dict
        Per dataset, the factor of its weights (``xsec * lumi / sum(w)``, or 1).
    skipped : dict
        With ``skip_bad_files``, ``{file: {"dataset", "reason", "entries"}}`` of
        the files that cannot be read, left out.
    uuids : dict
        ``{file: UUID}`` of the ROOT files read.
    """

    schema: str
    entries: dict[str, dict[str, int]]
    sum_weights: dict[str, float]
    scales: dict[str, float]
    skipped: dict[str, SkippedFile]
    uuids: dict[str, bytes]

    @property
    def files(self) -> CheckedFiles:
        """What the runner needs of the files checked, so that it opens none of them again."""
        from rosenblatt.processors.runner import CheckedFiles

        return CheckedFiles(self.entries, self.uuids)

    def readable(self, files: dict[str, list[str]]) -> dict[str, list[str]]:
        """``files`` without those left out as unreadable."""
        return {
            name: [p for p in paths if p in self.entries.get(name, {})]
            for name, paths in files.items()
        }

    def events(self, dataset: str) -> int:
        """Events in the dataset's files."""
        return sum(self.entries.get(dataset, {}).values())


def _open_tree(path: str, dataset: DatasetConfig, source: str) -> Any:
    import uproot

    where = f"{path} (dataset {dataset.name})"
    url = is_url(path)
    if not url and not Path(path).is_file():
        raise _error(source, dataset.files_key, f"{where}: the file does not exist")
    try:
        handle = uproot.open(path)
        classes = {key.split(";")[0]: cls for key, cls in handle.classnames().items()}
    except Exception as err:  # noqa: BLE001 - uproot raises many kinds for a damaged file
        what = "cannot be opened as a ROOT file" if url else "not a readable ROOT file"
        raise _error(
            source, dataset.files_key, f"{where}: {what} ({_one_line(err)})", UnreadableFileError
        ) from None
    trees = sorted({name for name, cls in classes.items() if cls in EVENT_CLASSES})
    if dataset.treename not in trees:
        held = ", ".join(f"{name} ({cls})" for name, cls in sorted(classes.items())) or "nothing"
        raise _error(
            source,
            "treename",
            f"{where}: no tree or RNTuple {dataset.treename!r}"
            f"{closest(dataset.treename, trees)}; the file holds {held} (set treename:)",
        )
    return handle


def event_kind(handle: Any, name: str) -> str:
    """``"tree"`` or ``"RNTuple"``: what holds the events ``name`` of an open file."""
    classes = {key.split(";")[0]: cls for key, cls in handle.classnames().items()}
    return EVENT_CLASSES.get(classes.get(name, ""), "tree")


def _detect(keys: list[str]) -> str:
    if "Part_pt" in keys:
        return "particles"
    if set(NANOAOD_EVENT_IDS) <= set(keys) and any(
        (k.startswith("n") and k[1:2].isupper()) or "." in k for k in keys
    ):
        return "nanoaod"
    return "base"


def _check_branches(
    keys: list[str],
    needs: dict[str, Quantity | None],
    where: str,
    source: str,
    kind: str = "tree",
) -> None:
    for key, quantity in needs.items():
        if quantity is None:
            continue
        if quantity.reads_particles:
            advice = (
                f"give the branch itself ({key}: {quantity.name})"
                if quantity.kind == "column"
                else "list the model's inputs under features: (branches or built-in jet "
                "features, in the order the model takes them)"
            )
            raise _error(
                source,
                key,
                f"{where}: {{{quantity.kind}: ...}} reads the feature table of particle-level "
                f"files; for this tree {advice}",
            )
        _, missing = quantity.branches(keys)
        noun = "field" if kind == "RNTuple" else "branch"
        for branch in missing:
            listed = sorted(keys)[:_LISTED]
            more = f" and {len(keys) - _LISTED} more" if len(keys) > _LISTED else ""
            raise _error(
                source,
                key,
                f"{where}: no {noun} {branch!r} for {key}{closest(branch, keys)}; "
                f"the {kind} has {listed}{more}",
            )


def _sum_weights(handle: Any, path: str, dataset: DatasetConfig, schema: str) -> float:
    """``sum(w)`` of a file: ``Runs.genEventSumw`` for NanoAOD, else the weight branch's sum."""
    if schema == "nanoaod" and "Runs" in handle and "genEventSumw" in handle["Runs"]:
        return float(np.sum(handle["Runs"]["genEventSumw"].array(library="np")))
    tree = handle[dataset.treename]
    if dataset.weight is None:
        return float(tree.num_entries)
    # the branch the preflight found: Coll_field, or Coll.field of an RNTuple's records
    (branch,), _ = dataset.weight.branches(list(tree.keys()))
    values = tree[branch].array(library="ak")
    if dataset.weight.kind == "element":
        import awkward as ak

        # events without the object weigh 0; nothing is padded to the index
        values = values[ak.num(values, axis=1) > dataset.weight.index][:, dataset.weight.index]
    return float(np.sum(np.asarray(values, dtype=np.float64)))


def _check_layout(
    keys: list[str],
    schema: str,
    needs: dict[str, Quantity | None],
    where: str,
    source: str,
    kind: str = "tree",
) -> None:
    """Refuse a tree (RNTuple) that lacks what its layout or the configuration's quantities need."""
    if schema == "particles":
        from rosenblatt.io.root import PARTICLE_BRANCHES

        missing = [b for b in PARTICLE_BRANCHES.values() if b not in keys]
        if missing:
            raise _error(
                source, "schema", f"{where}: particle-level files need the branches {missing}"
            )
        return
    if schema == "nanoaod":
        absent = [b for b in NANOAOD_EVENT_IDS if b not in keys]
        if absent:
            noun = "fields" if kind == "RNTuple" else "branches"
            raise _error(
                source,
                "schema",
                f"{where}: NanoAOD files need the {noun} {absent}; "
                f"for a flat {kind} set schema: base",
            )
    _check_branches(keys, needs, where, source, kind)


def preflight(cfg: Any) -> Preflight:
    """Check every file, tree, branch and role of an :class:`AbcdConfig`.

    Raises
    ------
    PreflightError
        For the first problem found, saying what and where.
    """
    entries: dict[str, dict[str, int]] = {}
    sum_weights: dict[str, float] = {}
    schemas: dict[str, str] = {}
    skipped: dict[str, SkippedFile] = {}
    uuids: dict[str, bytes] = {}
    for dataset in cfg.datasets.values():
        needs: dict[str, Quantity | None] = {
            "abcd.x": cfg.x,
            "score": cfg.score,
            f"datasets.{dataset.name}.weight": dataset.weight,
        }
        if dataset.name in cfg.defining_names:
            needs["defining.selection"] = cfg.defining_selection
        total = 0.0
        for path in dataset.files:
            if path.lower().endswith((".h5", ".hdf5")):
                entries.setdefault(dataset.name, {})[path] = _lhco_events(path, dataset, cfg.source)
                schemas[path] = "particles"
                continue
            try:
                handle = _open_tree(path, dataset, cfg.source)
            except UnreadableFileError as err:
                if not cfg.skip_bad_files:
                    raise
                skipped[path] = {"dataset": dataset.name, "reason": err.reason, "entries": None}
                continue
            tree = handle[dataset.treename]
            kind = event_kind(handle, dataset.treename)
            keys = list(tree.keys())
            schema = cfg.schema if cfg.schema != "auto" else _detect(keys)
            schemas[path] = schema
            _check_layout(
                keys,
                schema,
                needs,
                f"{path} (dataset {dataset.name}, {kind} {dataset.treename})",
                cfg.source,
                kind,
            )
            entries.setdefault(dataset.name, {})[path] = int(tree.num_entries)
            uuids[path] = handle.file.fUUID
            if dataset.xsec is not None:
                total += _sum_weights(handle, path, dataset, schema)
        if dataset.xsec is not None:
            sum_weights[dataset.name] = total
    resolved = sorted(set(schemas.values()))
    if len(resolved) > 1:
        raise PreflightError(
            f"{cfg.source}: schema: the files are of several layouts {resolved}; "
            "give one schema per configuration"
        )
    scales = _scales(cfg, sum_weights)
    result = Preflight(
        resolved[0] if resolved else "base", entries, sum_weights, scales, skipped, uuids
    )
    _check_roles(cfg, result)
    return result


def _lhco_events(path: str, dataset: DatasetConfig, source: str) -> int:
    from rosenblatt.io.lhco import lhco_info

    try:
        return int(lhco_info(path)["n_events"])
    except Exception as err:  # noqa: BLE001 - h5py and pandas raise many kinds for a damaged file
        raise _error(
            source,
            dataset.files_key,
            f"{path} (dataset {dataset.name}): not a readable LHCO file ({_one_line(err)})",
        ) from None


def _scales(cfg: Any, sum_weights: dict[str, float]) -> dict[str, float]:
    scales = {}
    for name, dataset in cfg.datasets.items():
        if dataset.xsec is None:
            scales[name] = 1.0
            continue
        total = sum_weights[name]
        if not total > 0:
            raise PreflightError(
                f"{cfg.source}: datasets.{name}: the weights sum to {total:g} over its files; "
                "it cannot be normalised to xsec * lumi"
            )
        scales[name] = dataset.xsec * cfg.lumi / total
    return scales


def dataset_scales(
    datasets: Mapping[str, DatasetConfig], lumi: float | None, source: str, schema: str = "auto"
) -> dict[str, float]:
    """Per dataset, the factor of its weights: ``xsec * lumi / sum(w)``, or 1 without ``xsec``.

    ``sum(w)`` is taken as :func:`preflight` takes it, over every event of the
    dataset's files (``Runs.genEventSumw`` of NanoAOD files; ``schema`` as
    ``schema:``, ``auto`` detected per file).

    Raises
    ------
    PreflightError
        If the weights of a dataset with ``xsec`` do not sum to a positive number.
    """
    import uproot

    sum_weights = {}
    for dataset in datasets.values():
        if dataset.xsec is None:
            continue
        total = 0.0
        for path in dataset.files:
            with uproot.open(path) as handle:
                keys = list(handle[dataset.treename].keys())
                found = schema if schema != "auto" else _detect(keys)
                total += _sum_weights(handle, path, dataset, found)
        sum_weights[dataset.name] = total
    return _scales(SimpleNamespace(datasets=datasets, lumi=lumi, source=source), sum_weights)


def _check_roles(cfg: Any, checked: Preflight) -> None:
    """Refuse a run whose roles cannot give a result."""
    if sum(checked.events(n) for n in cfg.defining_names) == 0:
        raise PreflightError(
            f"{cfg.source}: defining: the datasets {list(cfg.defining_names)} hold no event: "
            "no background to fit the transforms on"
        )
    roles = cfg.roles()
    filled = [n for n, d in cfg.datasets.items() if d.role != "defining"]
    if not filled:
        raise PreflightError(f"{cfg.source}: datasets: no dataset is analysed (all are defining)")
    for role in ("data", "background", "signal"):
        names = [n for n, d in cfg.datasets.items() if d.role == role]
        if names and sum(checked.events(n) for n in names) == 0:
            raise PreflightError(
                f"{cfg.source}: datasets: the {role} datasets {names} hold no event"
            )
    if "data" in roles and "background" not in roles:
        raise PreflightError(
            f"{cfg.source}: datasets: data without background simulation: the estimate's "
            "non-closure is measured on background simulation; add a dataset of role background"
        )
    if "data" in roles and cfg.cuts.cut is None and "signal" not in roles:
        raise PreflightError(
            f"{cfg.source}: abcd.cut: the cut is chosen on signal simulation; add a dataset of "
            "role signal or give abcd.cut: {x0: ..., y0: ...}"
        )
