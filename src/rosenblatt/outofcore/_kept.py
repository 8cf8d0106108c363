"""The passes of a mergeable fit over its skims kept as pieces, so that a stopped fit resumes them.

With a work folder (:class:`~rosenblatt.MergeableFit`'s ``work_dir``) and a
first pass kept as pieces, each task of a later pass keeps its result, in the
worker that ran it, as a piece (:mod:`rosenblatt.processors.pieces`) in the
folder ``<work_dir>/passes/<key>``. The key hashes what the passes compute
from: the first pass's pieces (their keys hold the fit's configuration, each
input file's content hash and the entries), the first pass's partial, the
estimator's parameters, the bootstrap replicas, the fit's limits and the groups
of the order. The passes are then a deterministic function of the key and of
the results of the passes before, so a piece is named by its pass's number and
its task's key. A fit run again with the same key reads the results kept and
runs only the tasks left: its result is that of an uninterrupted fit bit for
bit.

The sorted group tables go to a folder named after the key (not after the fit's
token), and a sort task's piece records their size and hash: a damaged table is
named and its group sorted again. Results are stored as data, never pickled:
arrays as ``.npy`` members, the rest as JSON, the dataclasses of
:mod:`rosenblatt.outofcore._tasks` by name. A fit that ends removes its passes'
pieces and group tables; a fit that starts removes those of other keys.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from rosenblatt.outofcore._skims import SkimStore
from rosenblatt.outofcore._tasks import Failure, GroupReport, Windows
from rosenblatt.processors.pieces import ARRAYS, DAMAGED, Chunk, PieceStore, fingerprint

__all__ = ["PASSES", "KeptPasses", "KeptTask", "decoded", "encoded"]

#: the folder of the passes' pieces in the work folder, and their name in the stop hook
PASSES = "passes"
#: the result types of the tasks, by name: the only objects read back besides plain data
_TYPES: dict[str, Any] = {cls.__name__: cls for cls in (GroupReport, Windows, Failure)}
#: what a task without a kept result gets from :meth:`KeptPasses._kept`
_MISSING = object()


def _token(key: str) -> str:
    """The token of the folder of the sorted group tables of the passes of ``key``."""
    return key[:12]


@dataclass(frozen=True)
class KeptTask:
    """A task of a later pass whose result the worker keeps as a piece (picklable).

    Attributes
    ----------
    task : object
        The task (``key``, ``run()``, and ``writes``: the files it writes, if any).
    chunk : Chunk
        Its piece's chunk: the pass's number and the task's key.
    store : PieceStore
        The passes' pieces.
    """

    task: Any
    chunk: Chunk
    store: PieceStore

    @property
    def key(self) -> str:
        """The task's key."""
        return str(self.task.key)

    def run(self) -> Any:
        """The task's result, kept as its piece (with the files it wrote) on the way."""
        result = self.task.run()
        self.store.save(self.chunk, encoded(result, getattr(self.task, "writes", ())))
        return result


@dataclass(frozen=True)
class KeptPasses:
    """The kept passes of one fit: their pieces, and the skims with the key's group tables.

    Attributes
    ----------
    store : PieceStore
        The passes' pieces (in ``<work_dir>/passes/<key>``).
    skims : SkimStore
        The fit's skims, with the group tables in the key's folder.
    """

    store: PieceStore
    skims: SkimStore

    @classmethod
    def create(
        cls, work_dir: str | os.PathLike[str], document: Any, skims: SkimStore
    ) -> KeptPasses:
        """The passes of the fit that ``document`` describes (see the module notes).

        The pieces and group tables of other keys are removed.
        """
        key = fingerprint(document)
        folder = Path(work_dir) / PASSES
        if folder.is_dir():
            for other in folder.iterdir():
                if other.name != key:
                    shutil.rmtree(other, ignore_errors=True)
                    dataclasses.replace(skims, token=_token(other.name)).remove_groups()
        store = PieceStore.create(folder / key, PASSES, document, {})
        return cls(store, dataclasses.replace(skims, token=_token(key)))

    def run(
        self,
        number: int,
        tasks: Iterable[Any],
        mapper: Callable[[list[Any], Callable[[int], None]], dict[str, Any]],
        tick: Callable[[int], None],
    ) -> dict[str, Any]:
        """The results of pass ``number``'s tasks: those kept read back, the others run by ``mapper``.

        ``mapper(tasks, tick)`` runs the tasks left (each keeps its result) and
        returns their results by key; ``tick(n)`` counts the tasks done.
        """
        results: dict[str, Any] = {}
        left = []
        for task in tasks:
            chunk = Chunk(f"pass-{number}", str(task.key), 0, 0)
            result = self._kept(chunk)
            if result is _MISSING:
                left.append(KeptTask(task, chunk, self.store))
            else:
                results[task.key] = result
                tick(1)
        if left:
            results.update(mapper(left, tick))
        return results

    def _kept(self, chunk: Chunk) -> Any:
        """The result kept for ``chunk``, or :data:`_MISSING` (a damaged piece named and removed)."""
        if not self.store.sound(chunk):
            return _MISSING
        try:
            return decoded(self.store.load(chunk))
        except DAMAGED:
            self.store.discard(chunk)
            return _MISSING

    def remove(self) -> None:
        """Remove the passes' pieces and group tables (the fit is done)."""
        shutil.rmtree(self.store.folder, ignore_errors=True)
        self.skims.remove_groups()


def encoded(result: Any, files: Iterable[str] = ()) -> dict[str, Any]:
    """A task's result as a piece's output: its arrays, the rest as JSON, the ``files`` it wrote.

    Raises
    ------
    TypeError
        For a value that is not plain data, a numpy array or scalar, or a result type
        of :mod:`rosenblatt.outofcore._tasks`.
    """
    arrays: dict[str, Any] = {}
    output: dict[str, Any] = {"result": _encode(result, arrays), ARRAYS: arrays}
    written = list(files)
    if written:
        output["skim"] = written
    return output


def decoded(output: dict[str, Any]) -> Any:
    """The result of a piece's output (:func:`encoded`), its arrays copies of their own."""
    return _decode(output["result"], output.get(ARRAYS, {}))


def _encode(value: Any, arrays: dict[str, Any]) -> Any:
    if isinstance(value, (np.ndarray, np.generic)):
        if np.asarray(value).dtype.hasobject:
            raise TypeError("an array of Python objects is not kept")
        name = f"a{len(arrays)}"
        arrays[name] = np.asarray(value)
        return {"@array" if isinstance(value, np.ndarray) else "@scalar": name}
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, tuple):
        return {"@tuple": [_encode(item, arrays) for item in value]}
    if isinstance(value, list):
        return [_encode(item, arrays) for item in value]
    if isinstance(value, dict) and all(isinstance(key, str) for key in value):
        return {"@dict": [[key, _encode(item, arrays)] for key, item in value.items()]}
    name = type(value).__name__
    kind = _TYPES.get(name)
    if kind is not None and kind is type(value):
        fields = {f.name: _encode(getattr(value, f.name), arrays) for f in dataclasses.fields(kind)}
        return {"@data": [name, fields]}
    raise TypeError(f"a task's result of type {name} is not kept")


def _decode(value: Any, arrays: dict[str, Any]) -> Any:
    if isinstance(value, list):
        return [_decode(item, arrays) for item in value]
    if not isinstance(value, dict):
        return value
    ((tag, item),) = value.items()
    return _DECODERS[tag](item, arrays)


def _decoded_data(item: list[Any], arrays: dict[str, Any]) -> Any:
    name, fields = item
    return _TYPES[name](**{field: _decode(value, arrays) for field, value in fields.items()})


#: how each tagged value of :func:`_encode` reads back
_DECODERS: dict[str, Callable[[Any, dict[str, Any]], Any]] = {
    "@array": lambda name, arrays: np.array(arrays[name]),
    "@scalar": lambda name, arrays: np.array(arrays[name])[()],
    "@tuple": lambda items, arrays: tuple(_decode(item, arrays) for item in items),
    "@dict": lambda pairs, arrays: {key: _decode(item, arrays) for key, item in pairs},
    "@data": _decoded_data,
}
