"""Flat ROOT ntuples: a TTree ``nominal`` with one entry per event and one number per branch.

This is the layout of many analysis frameworks' final ntuples: no collections,
only scalars per event. The tree (:data:`NTUPLE_TREE`) has the branches
:data:`NTUPLE_BRANCHES`:

==================  =======  ================================================
``event_number``    int64    unique event number
``dijet_mass``      float64  invariant mass of the two leading-pT jets (GeV)
``jet1_pt`` ...     float64  ``pt, eta, phi, mass`` of the leading jet (GeV)
``jet2_pt`` ...     float64  the same for the second jet
``jet1_tau21``      float64  tau2/tau1 of the leading jet
``jet2_tau21``      float64  tau2/tau1 of the second jet
``tagger_score``    float64  a substructure tagger score in [0, 1]
``mc_weight``       float64  event weight, simulation only (:data:`WEIGHT_BRANCH`)
==================  =======  ================================================

Pseudo-data has no weight branch. The tree is written with uproot's
``mktree``/``extend`` (a TTree), or with ``rntuple=True`` as an RNTuple of the
same name and fields (``mkrntuple``/``extend``). The file also holds the
TObjStrings ``settings`` and, once complete, ``summary``
(:mod:`rosenblatt.io._root_output`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

import numpy as np

from rosenblatt.io._root_output import SETTINGS_KEY, SUMMARY_KEY, read_metadata
from rosenblatt.typing import ArrayLike

if TYPE_CHECKING:
    import uproot
    from typing_extensions import Self

__all__ = ["NTUPLE_BRANCHES", "NTUPLE_TREE", "WEIGHT_BRANCH", "NtupleWriter", "ntuple_info"]

#: name of the tree
NTUPLE_TREE = "nominal"

#: name of the weight branch (simulation only)
WEIGHT_BRANCH = "mc_weight"

#: branch -> numpy dtype, in the order of the tree
NTUPLE_BRANCHES: dict[str, str] = {
    "event_number": "int64",
    "dijet_mass": "float64",
    **{f"jet{jet}_{field}": "float64" for jet in (1, 2) for field in ("pt", "eta", "phi", "mass")},
    "jet1_tau21": "float64",
    "jet2_tau21": "float64",
    "tagger_score": "float64",
    WEIGHT_BRANCH: "float64",
}


class NtupleWriter:
    """Append events to the ``nominal`` tree of a new ROOT file.

    Use :meth:`create` to open the file. The summary given to
    :meth:`write_summary` is stored when the writer closes without an error,
    so a file with a ``summary`` is complete.

    Parameters
    ----------
    handle : uproot.WritableDirectory
        The open file (use :meth:`create`).
    weighted : bool
        Whether the tree has the :data:`WEIGHT_BRANCH` (simulation).
    rntuple : bool, default False
        Write an RNTuple instead of a TTree (the same name and fields).
    """

    def __init__(
        self, handle: uproot.WritableDirectory, *, weighted: bool, rntuple: bool = False
    ) -> None:
        self._handle = handle
        self.weighted = weighted
        self.rntuple = rntuple
        self.branches = {
            name: np.dtype(dtype)
            for name, dtype in NTUPLE_BRANCHES.items()
            if weighted or name != WEIGHT_BRANCH
        }
        if rntuple:
            self._tree = handle.mkrntuple(NTUPLE_TREE, dict(self.branches), "flat ntuple")
        else:
            self._tree = handle.mktree(NTUPLE_TREE, dict(self.branches), title="flat ntuple")
        self._summary: dict[str, Any] = {}
        self.n_events = 0
        self.path = Path(handle.file_path)

    @classmethod
    def create(
        cls,
        path: str | os.PathLike[str],
        *,
        weighted: bool,
        settings: Mapping[str, Any] | None = None,
        rntuple: bool = False,
    ) -> NtupleWriter:
        """Create (or overwrite) ``path`` with an empty ``nominal`` tree.

        Parameters
        ----------
        path : path-like
            Output ``.root`` file.
        weighted : bool
            Whether the tree has the :data:`WEIGHT_BRANCH`.
        settings : mapping, optional
            JSON-serialisable settings stored as the TObjString ``settings``.
        rntuple : bool, default False
            Write the events as an RNTuple instead of a TTree.
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

    def append(self, columns: Mapping[str, ArrayLike]) -> None:
        """Append events: one array per branch of :attr:`branches`, all of one length.

        Raises
        ------
        ValueError
            If a branch is missing or unknown, or the arrays differ in length.
        """
        missing = sorted(set(self.branches) - set(columns))
        unknown = sorted(set(columns) - set(self.branches))
        if missing or unknown:
            raise ValueError(
                f"columns: branches {missing} missing and {unknown} unknown; "
                f"the tree has {list(self.branches)}"
            )
        arrays = {
            name: np.asarray(columns[name], dtype=dtype) for name, dtype in self.branches.items()
        }
        lengths = {len(values) for values in arrays.values()}
        if len(lengths) != 1:
            raise ValueError(f"columns: the branches differ in length ({sorted(lengths)})")
        self._tree.extend(arrays)
        self.n_events += lengths.pop()

    def write_summary(self, summary: Mapping[str, Any]) -> None:
        """Keep ``summary`` to store as the TObjString ``summary`` when the writer closes."""
        self._summary = dict(summary)

    def close(self, *, complete: bool = True) -> None:
        """Close the file, storing the summary (if any) when ``complete``."""
        if self._handle.closed:
            return
        if complete and self._summary:
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


def ntuple_info(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Return the stored ``settings`` and ``summary`` of an ntuple file and whether it is complete.

    Returns
    -------
    dict
        ``settings`` and ``summary`` (dicts, empty when absent) and
        ``complete`` (the file has its tree and its summary).

    Raises
    ------
    FileNotFoundError
        If ``path`` does not exist.
    rosenblatt.io.EventFileError
        If the file cannot be read.
    """
    metadata = read_metadata(path)
    complete = bool(metadata["summary"]) and NTUPLE_TREE in metadata["keys"]
    return {"settings": metadata["settings"], "summary": metadata["summary"], "complete": complete}
