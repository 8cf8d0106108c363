"""ROOT files in CMS NanoAOD's layout: ``Events`` with a ``FatJet`` collection, and ``Runs``.

The TTree ``Events`` (:data:`EVENTS_TREE`) has one entry per event:

========================  ===========  ==========================================
``run``                   uint32       run number (:data:`RUN_NUMBER`)
``luminosityBlock``       uint32       ``1 + entry // 1000`` (:data:`EVENTS_PER_LUMI_BLOCK`)
``event``                 uint64       unique event number
``nFatJet``               int32        number of large-radius jets (the counter)
``FatJet_<field>``        float32[]    :data:`FATJET_FIELDS` of each jet
``genWeight``             float32      generator weight, simulation only
========================  ===========  ==========================================

The TTree ``Runs`` (:data:`RUNS_TREE`) has one entry: ``run`` (uint32) and, for
simulation, ``genEventSumw`` (float64, the sum of ``genWeight`` over every event
in ``Events``) and ``genEventCount`` (int64, their number). As in NanoAOD, the
jets of a collection share one counter branch: uproot writes ``nFatJet`` and
the ``FatJet_*`` branches from one jagged awkward record array (``mktree`` and
``extend``, so that the trees are TTrees; plain assignment in uproot 5.7 writes
an RNTuple). coffea's ``NanoAODSchema`` reads the file as NanoEvents with
``events.FatJet`` and ``events.genWeight``.

The file also holds the TObjStrings ``settings`` and, once complete,
``summary`` (:mod:`rosenblatt.io._root_output`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

import awkward as ak
import numpy as np

from rosenblatt.io._root_output import SETTINGS_KEY, SUMMARY_KEY, read_metadata
from rosenblatt.typing import ArrayLike

if TYPE_CHECKING:
    import uproot
    from typing_extensions import Self

__all__ = [
    "EVENTS_PER_LUMI_BLOCK",
    "EVENTS_TREE",
    "FATJET_COLLECTION",
    "FATJET_FIELDS",
    "RUNS_TREE",
    "RUN_NUMBER",
    "WEIGHT_BRANCH",
    "NanoAODWriter",
    "nanoaod_info",
]

#: name of the event tree
EVENTS_TREE = "Events"

#: name of the per-run tree
RUNS_TREE = "Runs"

#: name of the jet collection (branches ``nFatJet`` and ``FatJet_<field>``)
FATJET_COLLECTION = "FatJet"

#: fields of each jet, written as float32
FATJET_FIELDS = ("pt", "eta", "phi", "mass", "msoftdrop", "tau1", "tau2", "tau3", "tagger")

#: name of the weight branch (simulation only)
WEIGHT_BRANCH = "genWeight"

#: the one run number of the file
RUN_NUMBER = 1

#: entries per luminosity block
EVENTS_PER_LUMI_BLOCK = 1000

_FATJET_TYPE = ak.types.from_datashape(
    "var * {" + ", ".join(f"{name}: float32" for name in FATJET_FIELDS) + "}", highlevel=False
)
_FIELD_TYPE = ak.types.from_datashape("var * float32", highlevel=False)


class NanoAODWriter:
    """Append events to the ``Events`` tree of a new ROOT file; write ``Runs`` at the end.

    Use :meth:`create` to open the file. ``Runs`` and the summary given to
    :meth:`write_summary` are written when the writer closes without an error,
    so a file with a ``summary`` is complete.

    Parameters
    ----------
    handle : uproot.WritableDirectory
        The open file (use :meth:`create`).
    weighted : bool
        Whether the events have a ``genWeight`` and ``Runs`` the sums of it
        (simulation).
    rntuple : bool, default False
        Write ``Events`` and ``Runs`` as RNTuples instead of TTrees.
    """

    def __init__(
        self, handle: uproot.WritableDirectory, *, weighted: bool, rntuple: bool = False
    ) -> None:
        self._handle = handle
        self.weighted = weighted
        self.rntuple = rntuple
        branches: dict[str, Any] = {
            "run": np.uint32,
            "luminosityBlock": np.uint32,
            "event": np.uint64,
        }
        if rntuple:
            # NanoAOD's field names: the counter and one list per jet field
            branches[f"n{FATJET_COLLECTION}"] = np.int32
            branches.update({f"{FATJET_COLLECTION}_{name}": _FIELD_TYPE for name in FATJET_FIELDS})
        else:
            branches[FATJET_COLLECTION] = _FATJET_TYPE
        if weighted:
            branches[WEIGHT_BRANCH] = np.float32
        if rntuple:
            self._events = handle.mkrntuple(EVENTS_TREE, branches, "Events")
        else:
            self._events = handle.mktree(EVENTS_TREE, branches, title="Events")
        self._summary: dict[str, Any] = {}
        self.n_events = 0
        self.sum_weights = 0.0
        self.path = Path(handle.file_path)

    @classmethod
    def create(
        cls,
        path: str | os.PathLike[str],
        *,
        weighted: bool,
        settings: Mapping[str, Any] | None = None,
        rntuple: bool = False,
    ) -> NanoAODWriter:
        """Create (or overwrite) ``path`` with an empty ``Events`` tree.

        Parameters
        ----------
        path : path-like
            Output ``.root`` file.
        weighted : bool
            Whether the events have a ``genWeight`` (simulation).
        settings : mapping, optional
            JSON-serialisable settings stored as the TObjString ``settings``.
        rntuple : bool, default False
            Write ``Events`` and ``Runs`` as RNTuples instead of TTrees.
        """
        import uproot

        handle = uproot.recreate(str(path))
        try:
            if settings is not None:
                handle[SETTINGS_KEY] = json.dumps(dict(settings), sort_keys=True)
            return cls(handle, weighted=weighted, rntuple=rntuple)
        except BaseException:
            handle.close()
            raise

    def append(
        self, event: ArrayLike, fat_jets: ak.Array, gen_weight: ArrayLike | None = None
    ) -> None:
        """Append events.

        Parameters
        ----------
        event : array_like of int
            Event numbers.
        fat_jets : awkward.Array
            Records with the fields :data:`FATJET_FIELDS`, events x jets.
        gen_weight : array_like of float, optional
            Per-event weights; required exactly when the writer is ``weighted``.

        Raises
        ------
        ValueError
            If a field is missing, the lengths differ, or ``gen_weight`` is given
            to an unweighted writer or missing for a weighted one.
        """
        numbers = np.asarray(event, dtype=np.uint64)
        n_events = len(numbers)
        missing = [name for name in FATJET_FIELDS if name not in ak.fields(fat_jets)]
        if missing:
            raise ValueError(f"fat_jets: missing field(s) {missing}; expected {FATJET_FIELDS}")
        if len(fat_jets) != n_events:
            raise ValueError(f"fat_jets: {len(fat_jets)} events, expected {n_events}")
        if (gen_weight is not None) != self.weighted:
            raise ValueError(
                "gen_weight: required for simulation (a weighted writer)"
                if self.weighted
                else "gen_weight: pseudo-data (an unweighted writer) has no weights"
            )
        entries = np.arange(self.n_events, self.n_events + n_events)
        columns: dict[str, Any] = {
            "run": np.full(n_events, RUN_NUMBER, dtype=np.uint32),
            "luminosityBlock": (1 + entries // EVENTS_PER_LUMI_BLOCK).astype(np.uint32),
            "event": numbers,
        }
        jets = {name: ak.values_astype(fat_jets[name], np.float32) for name in FATJET_FIELDS}
        if self.rntuple:
            columns[f"n{FATJET_COLLECTION}"] = ak.to_numpy(ak.num(fat_jets, axis=1)).astype(
                np.int32
            )
            columns.update({f"{FATJET_COLLECTION}_{name}": jets[name] for name in FATJET_FIELDS})
        else:
            columns[FATJET_COLLECTION] = ak.zip(jets)
        if gen_weight is not None:
            weights = np.asarray(gen_weight, dtype=np.float32)
            if weights.shape != (n_events,):
                raise ValueError(f"gen_weight: shape {weights.shape}, expected ({n_events},)")
            columns[WEIGHT_BRANCH] = weights
            self.sum_weights += float(np.sum(weights, dtype=np.float64))
        self._events.extend(columns)
        self.n_events += n_events

    def write_summary(self, summary: Mapping[str, Any]) -> None:
        """Keep ``summary`` to store as the TObjString ``summary`` when the writer closes."""
        self._summary = dict(summary)

    def close(self, *, complete: bool = True) -> None:
        """Close the file; when ``complete``, write ``Runs`` and the summary (if any) first."""
        if self._handle.closed:
            return
        if complete:
            runs: dict[str, Any] = {"run": np.array([RUN_NUMBER], dtype=np.uint32)}
            if self.weighted:
                runs["genEventSumw"] = np.array([self.sum_weights], dtype=np.float64)
                runs["genEventCount"] = np.array([self.n_events], dtype=np.int64)
            if self.rntuple:
                self._handle.mkrntuple(RUNS_TREE, runs, "Runs")
            else:
                self._handle.mktree(RUNS_TREE, runs, title="Runs")
            if self._summary:
                self._handle[SUMMARY_KEY] = json.dumps(self._summary, sort_keys=True)
        self._handle.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close(complete=exc_type is None)


def nanoaod_info(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Return the stored ``settings`` and ``summary`` of a NanoAOD-layout file and whether it is complete.

    Returns
    -------
    dict
        ``settings`` and ``summary`` (dicts, empty when absent) and
        ``complete`` (the file has both trees and its summary).

    Raises
    ------
    FileNotFoundError
        If ``path`` does not exist.
    rosenblatt.io.EventFileError
        If the file cannot be read.
    """
    metadata = read_metadata(path)
    complete = bool(metadata["summary"]) and {EVENTS_TREE, RUNS_TREE} <= set(metadata["keys"])
    return {"settings": metadata["settings"], "summary": metadata["summary"], "complete": complete}
