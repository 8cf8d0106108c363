"""Quantities of the user's own TTrees or RNTuples, checked first and then read in chunks with uproot.

``rosenblatt fit`` and ``rosenblatt apply`` read ``x``, the score and the
weight of ROOT files written by any framework, with the grammar of
:mod:`rosenblatt.processors.quantities` (a branch, a collection element, a
built-in jet feature or the user's function). :func:`check_tree` opens a file
and checks its tree and the branches the quantities read before any work;
:func:`iter_chunks` then reads only those branches, ``step_size`` entries at a
time, so memory stays flat on big files. A user's function is given the
chunk's events as coffea NanoEvents (``BaseSchema``, every branch a field,
read lazily: only the branches it touches are read).

An event lacking a value (too few objects for an element, fewer than two jets
for a jet feature) is reported as such by :class:`Chunk`, never filled with a
made-up value; a NaN or infinite value of an event that has one is an error
naming the file and the entry.

The events may be an RNTuple rather than a TTree (``TreeSource.kind``): its
fields are checked and read as a tree's branches, by uproot and coffea alike.
"""

from __future__ import annotations

import os
import traceback
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import awkward as ak
import numpy as np
from numpy.typing import NDArray

from rosenblatt.exceptions import QuantityError, TreeFileError
from rosenblatt.processors.quantities import (
    JET_FEATURES,
    Quantity,
    closest,
    parse_quantity,
    passes_selection,
)
from rosenblatt.typing import BoolArray, FloatArray

__all__ = [
    "DEFAULT_STEP",
    "EVENT_IDS",
    "Chunk",
    "TreeFileError",
    "TreeSource",
    "check_tree",
    "iter_chunks",
    "missing_reason",
    "option_quantity",
    "require",
    "require_for",
    "temporary_beside",
]

#: entries read at a time
DEFAULT_STEP = 100_000

#: the event identifiers of CMS NanoAOD, copied to the output when the input has all three
EVENT_IDS = ("run", "luminosityBlock", "event")

#: branches listed in a message about a missing one, at most
_LISTED = 40

#: uproot's class names of what holds the events, and their names in messages
_EVENT_CLASSES = {"TTree": "tree", "ROOT::RNTuple": "RNTuple"}


def require(module: str, extra: str, command: str) -> None:
    """Import ``module`` or raise :class:`~rosenblatt._extras.MissingExtraError` naming the extra."""
    import importlib

    from rosenblatt._extras import MissingExtraError, needs_message

    try:
        importlib.import_module(module)
    except ImportError:
        message = needs_message(command, [extra], module)
        raise MissingExtraError(message, name=module, extras=[extra]) from None


def require_for(quantities: Mapping[str, Quantity], sources: Sequence[TreeSource]) -> None:
    """Check that what the quantities use is installed: coffea for a function, vector for jets.

    Raises
    ------
    rosenblatt._extras.MissingExtraError
        Naming the extra to install.
    """
    if any(q.kind == "function" for q in quantities.values()):
        require("coffea", "hep", "a function quantity")
    for option, quantity in quantities.items():
        computed = quantity.kind == "name" and quantity.name in JET_FEATURES
        if computed and any(quantity.name not in source.branches for source in sources):
            require("vector", "hep", f"the built-in jet feature {quantity.name!r} ({option})")


def option_quantity(text: str, option: str, jets: str) -> Quantity:
    """A quantity written on the command line.

    ``module:name`` or ``file.py:name`` (a colon) is the user's function;
    anything else a branch, a collection element (``FatJet.msoftdrop[0]``) or
    a built-in jet feature of the collection ``jets``.

    Raises
    ------
    QuantityError
        If ``text`` is none of these, naming ``option``.
    """
    value: Any = {"function": text} if ":" in text else text
    return parse_quantity(value, key=option, base=Path.cwd(), jets=jets)


def temporary_beside(path: Path) -> Path:
    """A new hidden name in the folder of ``path``, to write to and then :func:`os.replace`."""
    import uuid

    return path.with_name(f".{path.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp")


@dataclass(frozen=True)
class TreeSource:
    """A file whose tree holds what the quantities read (from :func:`check_tree`).

    Attributes
    ----------
    path : str
        The file.
    treename : str
        The tree in it.
    entries : int
        Its number of entries.
    branches : tuple of str
        Its branches.
    needed : tuple of str
        The branches the quantities read (empty with a user's function,
        which reads what it touches).
    lazy : bool
        Whether a user's function is among the quantities (the events are then
        read as coffea NanoEvents).
    kind : str
        ``"tree"`` (a TTree) or ``"RNTuple"``; an RNTuple's fields are its branches.
    """

    path: str
    treename: str
    entries: int
    branches: tuple[str, ...]
    needed: tuple[str, ...]
    lazy: bool
    kind: str = "tree"

    @property
    def has_event_ids(self) -> bool:
        """Whether the tree has all of ``run``, ``luminosityBlock`` and ``event``."""
        return all(name in self.branches for name in EVENT_IDS)


def _listed(names: Sequence[str]) -> str:
    shown = sorted(names)[:_LISTED]
    more = f" and {len(names) - _LISTED} more" if len(names) > _LISTED else ""
    return f"{shown}{more}"


def _open(path: str) -> Any:
    import uproot

    file_path = Path(path)
    if not file_path.exists():
        raise TreeFileError(f"{path}: no such file")
    if file_path.is_dir():
        raise TreeFileError(f"{path}: is a directory, expected a ROOT file")
    with file_path.open("rb") as raw:
        magic = raw.read(4)
    if magic != b"root":
        raise TreeFileError(f"{path}: not a ROOT file (it does not begin with 'root')")
    try:
        return uproot.open(path)
    except Exception as err:
        detail = " ".join(str(err).split())
        raise TreeFileError(
            f"{path}: a damaged ROOT file, uproot cannot open it ({type(err).__name__}: {detail})"
        ) from err


def check_tree(path: str | Path, treename: str, quantities: Mapping[str, Quantity]) -> TreeSource:
    """Open ``path`` (metadata only) and check its tree and the branches the quantities read.

    Parameters
    ----------
    path : path-like
        ROOT file.
    treename : str
        The TTree holding the events.
    quantities : mapping of str to Quantity
        ``{option: quantity}``, the option naming the quantity in messages
        (``"--x"``).

    Returns
    -------
    TreeSource

    Raises
    ------
    TreeFileError
        If the file does not exist or is not a ROOT file, if it has no TTree or
        RNTuple ``treename`` (the message lists its trees) or if the tree lacks a
        branch (the RNTuple a field) that a quantity reads (the message suggests
        the closest name and lists the tree's).
    """
    path = str(path)
    with _open(path) as handle:
        try:
            classes = {key.split(";")[0]: cls for key, cls in handle.classnames().items()}
        except Exception as err:
            raise TreeFileError(f"{path}: the file's keys cannot be read ({err})") from err
        trees = sorted(name for name, cls in classes.items() if cls in _EVENT_CLASSES)
        if classes.get(treename) not in _EVENT_CLASSES:
            held = (
                f"the file has the trees {trees}" if trees else "the file has no TTree nor RNTuple"
            )
            raise TreeFileError(
                f"{path}: no tree {treename!r}{closest(treename, trees)}; {held} "
                "(choose one with --treename)"
            )
        kind = _EVENT_CLASSES[classes[treename]]
        tree = handle[treename]
        branches = tuple(tree.keys(recursive=True))
        entries = int(tree.num_entries)
    noun = "field" if kind == "RNTuple" else "branch"
    needed: list[str] = []
    for option, quantity in quantities.items():
        wanted, missing = quantity.branches(branches)
        for branch in missing:
            raise TreeFileError(
                f"{path}: no {noun} {branch!r} for {option}{_hint(quantity, branch, branches)}; "
                f"the {kind} has {_listed(branches)}"
            )
        needed += [b for b in wanted if b not in needed]
    lazy = any(q.kind == "function" for q in quantities.values())
    return TreeSource(path, treename, entries, branches, tuple(needed), lazy, kind)


def _hint(quantity: Quantity, branch: str, branches: Sequence[str]) -> str:
    """The closest branch; for a jet feature, also what the feature is and ``--jets``."""
    suggestion = closest(branch, branches)
    if quantity.kind == "name" and quantity.name in JET_FEATURES:
        return (
            f"{suggestion} (the built-in feature {quantity.name!r} is the "
            f"{JET_FEATURES[quantity.name]} of the collection {quantity.jets!r}; "
            "name another with --jets)"
        )
    return suggestion


def missing_reason(quantity: Quantity) -> str:
    """Why an event can lack a value of ``quantity``, in words."""
    if quantity.kind == "name" and quantity.name in JET_FEATURES:
        return f"fewer than two {quantity.jets}"
    if quantity.kind == "element":
        collection, _ = quantity.name.split(".")
        return f"fewer than {quantity.index + 1} {collection}"
    return "no value"


@dataclass(frozen=True)
class Chunk:
    """Entries ``start`` to ``start + len(chunk)`` of a tree, evaluated.

    Attributes
    ----------
    start : int
        The first entry.
    values : dict of str to numpy.ndarray
        Per option, float64 values (NaN where the event lacks one).
    present : dict of str to numpy.ndarray
        Per option, whether each event has a value.
    branches : dict of str to numpy.ndarray
        The extra branches asked for, as read.
    selected : numpy.ndarray of bool, optional
        Whether each event passes the selection (``None``: no selection).
    """

    start: int
    values: dict[str, FloatArray]
    present: dict[str, BoolArray]
    branches: dict[str, NDArray[Any]]
    selected: BoolArray | None = None

    def __len__(self) -> int:
        for array in (*self.values.values(), *self.branches.values()):
            return len(array)
        return 0

    def complete(self) -> BoolArray:
        """Whether each event has a value of every quantity."""
        ok = np.ones(len(self), dtype=bool)
        for present in self.present.values():
            ok &= present
        return ok


def iter_chunks(
    source: TreeSource,
    quantities: Mapping[str, Quantity],
    *,
    extra: Sequence[str] = (),
    step_size: int = DEFAULT_STEP,
    selection: Quantity | None = None,
    entry_start: int = 0,
    entry_stop: int | None = None,
) -> Iterator[Chunk]:
    """Evaluate the quantities on ``step_size`` entries of the tree at a time, in order.

    Parameters
    ----------
    source : TreeSource
        From :func:`check_tree`.
    quantities : mapping of str to Quantity
        ``{option: quantity}`` as given to :func:`check_tree`.
    extra : sequence of str
        Branches to read as they are (event identifiers).
    step_size : int
        Entries per chunk.
    selection : Quantity, optional
        The events kept (:func:`~rosenblatt.processors.quantities.passes_selection`:
        those with a non-zero value), as the analysis's ``defining.selection``
        keeps them; its branches must be among those :func:`check_tree` checked.
        Only the selected events' values must be finite.
    entry_start, entry_stop : int
        The entries read, ``[entry_start, entry_stop)`` (default: every
        entry); the chunks start at ``entry_start`` and every ``step_size``
        entries after it.

    Yields
    ------
    Chunk

    Raises
    ------
    TreeFileError
        If an event that has a value of a quantity has a NaN or infinite one
        (naming the file and the entry), or if the user's function fails.
    """
    if step_size < 1:
        raise TreeFileError(f"the chunk size must be at least 1, got {step_size}")
    reader = _lazy_chunks if source.lazy else _branch_chunks
    stop = source.entries if entry_stop is None else min(entry_stop, source.entries)
    for start, events in reader(source, extra, step_size, max(entry_start, 0), stop):
        selected = None
        if selection is not None:
            evaluated = _evaluate(selection, events, source, start, "selection")
            selected = passes_selection(*evaluated)
        values: dict[str, FloatArray] = {}
        present: dict[str, BoolArray] = {}
        for option, quantity in quantities.items():
            values[option], present[option] = _evaluate(quantity, events, source, start, option)
            checked = present[option] if selected is None else present[option] & selected
            _check_finite(values[option], checked, source, start, option, quantity)
        branches = {name: np.asarray(ak.to_numpy(events[name])) for name in extra}
        yield Chunk(start, values, present, branches, selected)


def _branch_chunks(
    source: TreeSource, extra: Sequence[str], step_size: int, entry_start: int, entry_stop: int
) -> Iterator[tuple[int, Any]]:
    """Only the branches needed, through ``tree.iterate``."""
    import uproot

    wanted = set(source.needed) | set(extra)
    with uproot.open(source.path) as handle:
        tree = handle[source.treename]
        if entry_stop <= entry_start:
            return
        chunks = tree.iterate(
            filter_name=lambda name: name in wanted,
            step_size=step_size,
            library="ak",
            report=True,
            entry_start=entry_start,
            entry_stop=entry_stop,
        )
        while True:
            try:
                events, report = next(chunks)
            except StopIteration:
                return
            except Exception as err:
                detail = " ".join(str(err).split())
                raise TreeFileError(
                    f"{source.path}: tree {source.treename!r} cannot be read (a damaged file?): "
                    f"{type(err).__name__}: {detail}"
                ) from err
            yield int(report.tree_entry_start), events


def _lazy_chunks(
    source: TreeSource, extra: Sequence[str], step_size: int, entry_start: int, entry_stop: int
) -> Iterator[tuple[int, Any]]:
    """coffea NanoEvents (``BaseSchema``, virtual: a branch is read when touched)."""
    from coffea.nanoevents import BaseSchema, NanoEventsFactory

    for start in range(entry_start, entry_stop, step_size):
        stop = min(start + step_size, entry_stop)
        factory = NanoEventsFactory.from_root(
            {source.path: source.treename},
            schemaclass=BaseSchema,
            mode="virtual",
            entry_start=start,
            entry_stop=stop,
        )
        yield start, factory.events()


def _evaluate(
    quantity: Quantity, events: Any, source: TreeSource, start: int, option: str
) -> tuple[FloatArray, BoolArray]:
    where = f"{source.path}: entries {start} to {start + len(events) - 1}"
    try:
        return quantity.evaluate(events)
    except QuantityError as err:
        raise TreeFileError(f"{where}: {option}: {err}") from None
    except Exception as err:
        if quantity.kind != "function":
            raise
        frames = traceback.extract_tb(err.__traceback__)
        at = f" (at {frames[-1].filename}, line {frames[-1].lineno})" if frames else ""
        raise TreeFileError(
            f"{where}: {option}: the function {quantity.path} raised "
            f"{type(err).__name__}: {err}{at}"
        ) from None


def _check_finite(
    values: FloatArray,
    present: BoolArray,
    source: TreeSource,
    start: int,
    option: str,
    quantity: Quantity,
) -> None:
    bad = present & ~np.isfinite(values)
    if bad.any():
        first = int(np.flatnonzero(bad)[0])
        raise TreeFileError(
            f"{source.path}: entry {start + first} of tree {source.treename!r}: {option} "
            f"{quantity.text!r} is {values[first]} ({int(bad.sum())} non-finite value(s) in "
            f"entries {start} to {start + len(values) - 1}); select or fix these events first"
        )
