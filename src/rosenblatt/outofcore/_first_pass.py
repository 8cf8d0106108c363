"""The one pass of a mergeable fit over the user's events: what each chunk computes.

Each chunk turns the first pass's :class:`Request` into a :class:`Partial`
(sums, extremes, a histogram of the column the fit orders first, and the name
of the skim it wrote); partials add up with ``+`` in any order and grouping.
:class:`Facts` is what the driver learns from their sum.

The histogram (:class:`Sketch`) needs no range given in advance: an event
falls in the bin of the leading bits of its value's order-preserving integer
key, and a histogram with more than its limit of bins drops one bit at a time
until it fits. Its bins are fine where the events are dense and always hold
whole runs of equal values.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from rosenblatt._awkward import is_awkward
from rosenblatt._validation import as_1d_float, check_finite, check_same_length
from rosenblatt.outofcore._skims import SkimStore, chunk_name, event_keys
from rosenblatt.transforms import _observables
from rosenblatt.typing import FloatArray, Int64Array

__all__ = ["Facts", "Partial", "Request", "Sketch", "order_keys"]

Domain = tuple[tuple[float, float], tuple[float, float]]

#: bits of an event's key a histogram starts from (the rest are dropped at once)
START_BITS = 40


def order_keys(values: FloatArray) -> NDArray[np.uint64]:
    """Unsigned integers in the order of the (finite) ``values``; ``-0.0`` and ``0.0`` share one."""
    bits = np.ascontiguousarray(values + 0.0).view(np.uint64)
    negative = (bits >> np.uint64(63)) == 1
    keys: NDArray[np.uint64] = np.where(negative, ~bits, bits | np.uint64(1 << 63))
    return keys


@dataclass(eq=False)
class Sketch:
    """A histogram of values on the leading ``64 - shift`` bits of their keys, at most ``limit`` bins.

    Attributes
    ----------
    shift : int
        Bits dropped from the keys.
    keys : numpy.ndarray
        The filled bins, increasing.
    count, weight : numpy.ndarray
        Events and summed weight per bin.
    vmin, vmax : numpy.ndarray
        The smallest and largest value per bin.
    """

    shift: int
    keys: NDArray[np.uint64]
    count: Int64Array
    weight: FloatArray
    vmin: FloatArray
    vmax: FloatArray
    limit: int

    @classmethod
    def of(cls, values: FloatArray, weights: FloatArray, limit: int) -> Sketch:
        """The histogram of increasing ``values`` with ``weights``."""
        shift = 64 - START_BITS
        keys = order_keys(values) >> np.uint64(shift)
        ones = np.ones(len(values), np.int64)
        return cls._reduced(shift, keys, ones, weights, values, values, limit, ordered=True)

    @classmethod
    def _reduced(
        cls,
        shift: int,
        keys: NDArray[np.uint64],
        count: Int64Array,
        weight: FloatArray,
        vmin: FloatArray,
        vmax: FloatArray,
        limit: int,
        *,
        ordered: bool = False,
    ) -> Sketch:
        """Entries of equal keys added, bits dropped until at most ``limit`` bins are left.

        ``ordered``: the keys are already increasing.
        """
        order = np.arange(len(keys)) if ordered else np.argsort(keys, kind="stable")
        keys = keys[order]
        extra = _extra_shift(keys, limit, 64 - shift)
        keys = keys >> np.uint64(extra)
        starts = np.flatnonzero(np.concatenate(([True], keys[1:] != keys[:-1])))
        if len(keys) == 0:
            starts = np.zeros(0, dtype=np.int64)
        return cls(
            shift + extra,
            keys[starts],
            np.add.reduceat(count[order], starts) if len(starts) else count[:0],
            np.add.reduceat(weight[order], starts) if len(starts) else weight[:0],
            np.minimum.reduceat(vmin[order], starts) if len(starts) else vmin[:0],
            np.maximum.reduceat(vmax[order], starts) if len(starts) else vmax[:0],
            limit,
        )

    def __add__(self, other: Sketch) -> Sketch:
        shift = max(self.shift, other.shift)
        keys = np.concatenate(
            (
                self.keys >> np.uint64(shift - self.shift),
                other.keys >> np.uint64(shift - other.shift),
            )
        )
        return Sketch._reduced(
            shift,
            keys,
            np.concatenate((self.count, other.count)),
            np.concatenate((self.weight, other.weight)),
            np.concatenate((self.vmin, other.vmin)),
            np.concatenate((self.vmax, other.vmax)),
            min(self.limit, other.limit),
        )


def _extra_shift(keys: NDArray[np.uint64], limit: int, bits: int) -> int:
    """The fewest bits to drop from the sorted ``keys`` so that at most ``limit`` distinct ones remain."""

    def distinct(extra: int) -> int:
        shifted = keys >> np.uint64(extra)
        return 1 + int(np.count_nonzero(shifted[1:] != shifted[:-1])) if len(keys) else 0

    if distinct(0) <= limit:
        return 0
    lo, hi = 0, bits
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if distinct(mid) <= limit:
            hi = mid
        else:
            lo = mid
    return hi


@dataclass(eq=False)
class Partial:
    """What chunks of events contributed to the first pass of a :class:`~rosenblatt.MergeableFit`.

    Partials of the same request add up with ``+`` (and ``sum``, coffea's
    ``accumulate``) in any order and grouping; they pickle and stay small
    (a few hundred kilobytes) whatever the number of events.

    Attributes
    ----------
    tag : str
        Identifies the request that made the partial.
    k : int
        The number of protected observables (0 before any chunk).
    sums, minima, maxima : dict of numpy.ndarray
        Arrays that add, that combine by minimum and by maximum.
    sketch : Sketch or None
        The histogram of the column the fit orders first.
    chunks : tuple of (tuple, str, int)
        Per chunk with events: its place in the sample's order, the skim it
        wrote and its number of events.
    """

    tag: str
    k: int = 0
    sums: dict[str, NDArray[Any]] = field(default_factory=dict)
    minima: dict[str, FloatArray] = field(default_factory=dict)
    maxima: dict[str, FloatArray] = field(default_factory=dict)
    sketch: Sketch | None = None
    chunks: tuple[tuple[tuple[Any, ...], str, int], ...] = ()

    def __add__(self, other: object) -> Partial:
        if not isinstance(other, Partial):
            return NotImplemented
        if other.tag != self.tag:
            msg = (
                f"cannot add partials of different requests ({self.tag!r} and {other.tag!r}): "
                "add only the partials that the current request returned"
            )
            raise ValueError(msg)
        if not self.sums or not other.sums:
            return other if not self.sums else self
        if self.k != other.k:
            msg = f"chunks hold {self.k} and {other.k} protected observables: give the same in each"
            raise ValueError(msg)
        sketch = other.sketch if self.sketch is None else self.sketch
        if self.sketch is not None and other.sketch is not None:
            sketch = self.sketch + other.sketch
        return Partial(
            self.tag,
            self.k,
            {name: value + other.sums[name] for name, value in self.sums.items()},
            {name: np.minimum(value, other.minima[name]) for name, value in self.minima.items()},
            {name: np.maximum(value, other.maxima[name]) for name, value in self.maxima.items()},
            sketch,
            tuple(sorted(self.chunks + other.chunks)),
        )

    def __radd__(self, other: object) -> Partial:
        if isinstance(other, int) and other == 0:
            return self
        return NotImplemented

    @property
    def nbytes(self) -> int:
        """Bytes held by the partial's arrays."""
        groups = (self.sums, self.minima, self.maxima)
        total = sum(a.nbytes for group in groups for a in group.values())
        if self.sketch is not None:
            total += sum(
                a.nbytes
                for a in (self.sketch.keys, self.sketch.count, self.sketch.weight, self.sketch.vmin)
            )
        return int(total)

    def to_document(self) -> dict[str, Any]:
        """The partial as JSON data, read back exactly by :meth:`from_document` (but its tag)."""

        def arrays(group: Mapping[str, NDArray[Any]]) -> dict[str, Any]:
            return {name: _array_document(value) for name, value in group.items()}

        sketch = self.sketch
        return {
            "k": self.k,
            "sums": arrays(self.sums),
            "minima": arrays(self.minima),
            "maxima": arrays(self.maxima),
            "sketch": None
            if sketch is None
            else {
                "shift": sketch.shift,
                "limit": sketch.limit,
                **arrays(
                    {
                        "keys": sketch.keys,
                        "count": sketch.count,
                        "weight": sketch.weight,
                        "vmin": sketch.vmin,
                        "vmax": sketch.vmax,
                    }
                ),
            },
            "chunks": [[list(place), name, count] for place, name, count in self.chunks],
        }

    @classmethod
    def from_document(cls, document: Mapping[str, Any], tag: str) -> Partial:
        """The partial of :meth:`to_document`'s ``document``, as one of the request ``tag``."""

        def arrays(group: Mapping[str, Any]) -> dict[str, NDArray[Any]]:
            return {name: _document_array(value) for name, value in group.items()}

        sketch = document["sketch"]
        return cls(
            tag,
            int(document["k"]),
            arrays(document["sums"]),
            arrays(document["minima"]),
            arrays(document["maxima"]),
            None
            if sketch is None
            else Sketch(
                int(sketch["shift"]),
                _document_array(sketch["keys"]),
                _document_array(sketch["count"]),
                _document_array(sketch["weight"]),
                _document_array(sketch["vmin"]),
                _document_array(sketch["vmax"]),
                int(sketch["limit"]),
            ),
            tuple(
                (tuple(place), str(name), int(count)) for place, name, count in document["chunks"]
            ),
        )

    def __repr__(self) -> str:
        events = int(self.sums["n"]) if "n" in self.sums else 0
        return (
            f"Partial(tag={self.tag!r}, {events} events in {len(self.chunks)} chunks, "
            f"{self.nbytes} bytes)"
        )


class Request:
    """What every chunk computes in the first pass of a :class:`~rosenblatt.MergeableFit`.

    Call it once per chunk on ``(x, y, weight)`` (numpy or awkward arrays, one
    value per event; ``x`` may hold several observables as ``(n, k)`` or a
    list of ``k`` arrays; ``weight`` may be ``None``) and add the returned
    :class:`Partial` objects. The call also writes the chunk's skim. Give
    ``chunk=events.metadata`` inside a coffea processor to name the skim
    after the chunk (a retried chunk then replaces its file); without it the
    skim is named after its content. The chunks' events are taken in the
    order of ``ordinal`` if given, else of their dataset, file, tree and
    first entry (the order of a file set's events), else of their names:
    the in-memory fit that the result equals sees the events in that order
    (it matters only where values tie). A request is small and pickles.

    Attributes
    ----------
    description : str
        What the pass computes, for progress reports.
    tag : str
        Identifies the pass; its partials carry it.
    """

    def __init__(
        self,
        tag: str,
        description: str,
        store: SkimStore,
        order: int,
        domain: Domain | None,
        sketch_bins: int,
    ) -> None:
        self.tag = tag
        self.description = description
        self.store = store
        self.order = order
        self.domain = domain
        self.sketch_bins = sketch_bins

    def __call__(
        self,
        x: Any,
        y: Any,
        weight: Any = None,
        *,
        chunk: Mapping[str, Any] | None = None,
        ordinal: int | None = None,
    ) -> Partial:
        """The partial result of one chunk of events (its skim is written on the way)."""
        xs, ys, ws = _validated(x, y, weight)
        k = xs.shape[1]
        out = Partial(self.tag, k)
        if len(ys) == 0:
            return out
        w = np.ones(len(ys)) if ws is None else ws
        name = chunk_name(chunk, (xs, ys, w if ws is not None else np.zeros(0)))
        keys = event_keys(name, len(ys))
        values = ys if self.order < 0 else xs[:, self.order]
        order = np.argsort(values)  # ties are put in order of event number by the next pass
        columns = [*xs.T, ys, w, order.astype(np.float64), keys.view(np.float64)]
        table = np.empty((len(ys), len(columns)), order="F")
        for j, column in enumerate(columns):
            table[:, j] = column if j == k + 2 else column[order]
        self.store.write(self.store.skim_path(name), table)
        _fill_sums(out, xs, ys, w, ws is not None, self.domain)
        out.sketch = Sketch.of(
            table[:, self.order if self.order >= 0 else k], table[:, k + 1], self.sketch_bins
        )
        out.chunks = ((_place(chunk, ordinal, name), name, len(ys)),)
        return out

    def __repr__(self) -> str:
        return f"Request({self.description!r})"


def _array_document(value: NDArray[Any]) -> dict[str, Any]:
    """An array as JSON data: its dtype, shape and bytes (base64, so read back bit for bit)."""
    array = np.asarray(value)
    data = base64.b64encode(array.tobytes(order="C")).decode("ascii")
    return {"dtype": array.dtype.str, "shape": list(array.shape), "data": data}


def _document_array(document: Mapping[str, Any]) -> NDArray[Any]:
    """The array of :func:`_array_document`'s ``document``, bit for bit."""
    values = np.frombuffer(base64.b64decode(document["data"]), dtype=np.dtype(document["dtype"]))
    array: NDArray[Any] = values.reshape(tuple(document["shape"])).copy()
    return array


def _place(chunk: Mapping[str, Any] | None, ordinal: int | None, name: str) -> tuple[Any, ...]:
    """A chunk's place in the sample's order (see :class:`Request`)."""
    if ordinal is not None:
        return (0, int(ordinal))
    if chunk is not None:
        fields = ("dataset", "filename", "treename", "entrystart")
        return (
            1,
            *(
                str(chunk.get(f, "")) if f != "entrystart" else int(chunk.get(f) or 0)
                for f in fields
            ),
        )
    return (2, name)


def _flat(values: Any, name: str) -> Any:
    """A flat awkward array as numpy; anything else unchanged."""
    if not is_awkward(values):
        return values
    import awkward as ak

    if values.ndim != 1:
        msg = f"{name} must be a flat array (one value per event), got {values.ndim} dimensions"
        raise ValueError(msg)
    return ak.to_numpy(values)


def _validated(x: Any, y: Any, weight: Any) -> tuple[FloatArray, FloatArray, FloatArray | None]:
    """``x`` as ``(n, k)``, ``y`` and the weights (``None`` for unit weights), checked."""
    matrix, scalar = _observables.split_observables(x)
    if matrix is None:
        matrix = as_1d_float(_flat(scalar, "x"), "x", allow_empty=True)[:, None]
    y_arr = as_1d_float(_flat(y, "y"), "y", allow_empty=True)
    check_same_length(x=matrix, y=y_arr)
    check_finite(matrix, "x")
    check_finite(y_arr, "y")
    if weight is None:
        return matrix, y_arr, None
    w_arr = as_1d_float(_flat(weight, "weight"), "weight", allow_empty=True)
    if len(w_arr) != len(y_arr):
        msg = f"length mismatch: weight has {len(w_arr)} events, the data have {len(y_arr)}"
        raise ValueError(msg)
    check_finite(w_arr, "weight")
    return matrix, y_arr, w_arr


def _fill_sums(
    out: Partial, x: FloatArray, y: FloatArray, w: FloatArray, weighted: bool, domain: Domain | None
) -> None:
    """Counts, weight sums, first moments and extremes of one chunk."""
    out.sums["n"] = np.array(len(w), dtype=np.int64)
    out.sums["weighted"] = np.array(int(weighted), dtype=np.int64)
    out.sums["chunks"] = np.array(1, dtype=np.int64)
    out.sums["weight"] = np.array(w.sum())
    out.sums["weight2"] = np.array(np.dot(w, w))
    out.sums["weight_abs"] = np.array(np.abs(w).sum())
    counts = [np.count_nonzero(w), np.count_nonzero(w < 0), np.count_nonzero(w == 0)]
    out.sums["weight_counts"] = np.array(counts, dtype=np.int64)
    out.sums["weight_x"] = w @ x
    out.sums["weight_y"] = np.array(np.dot(w, y))
    out.minima["x"], out.maxima["x"] = x.min(axis=0), x.max(axis=0)
    out.minima["y"], out.maxima["y"] = np.array(y.min()), np.array(y.max())
    out.minima["w"], out.maxima["w"] = np.array(w.min()), np.array(w.max())
    if domain is not None:
        outside = [
            np.count_nonzero((values < lo) | (values > hi))
            for values, (lo, hi) in zip((x[:, 0], y), domain, strict=True)
        ]
        out.sums["outside"] = np.array(outside, dtype=np.int64)


@dataclass(frozen=True)
class Weights:
    """What the first pass learned about one set of weights (the sample's or a replica's)."""

    weighted: bool
    total: float
    total2: float
    total_abs: float
    carrying: int
    lowest: float
    highest: float
    weight_x: FloatArray

    @property
    def largest(self) -> float:
        """The largest absolute weight of an event."""
        return max(abs(self.lowest), abs(self.highest))


@dataclass(frozen=True)
class Facts:
    """What the driver learns from the first pass: the sample, its skims and its histogram."""

    n: int
    k: int
    weights: Weights
    negative: int
    zero: int
    x_range: tuple[tuple[float, float], ...]
    y_range: tuple[float, float]
    weight_y: float
    outside: tuple[int, int]
    sketch: Sketch
    chunks: tuple[tuple[str, int], ...]

    @classmethod
    def of(cls, partial: Partial) -> Facts:
        """The facts of the sum of the first pass's partials (checked as the in-memory fit checks)."""
        s = partial.sums
        if not s or int(s["n"]) == 0 or partial.sketch is None:
            msg = "x is empty: at least one event is needed"
            raise ValueError(msg)
        if 0 < int(s["weighted"]) < int(s["chunks"]):
            msg = (
                f"weights were given for {int(s['weighted'])} of {int(s['chunks'])} chunks: give "
                "the weights of every chunk, or of none"
            )
            raise ValueError(msg)
        carrying, negative, zero = (int(v) for v in s["weight_counts"])
        lo, hi = partial.minima, partial.maxima
        weights = Weights(
            bool(s["weighted"] > 0),
            float(s["weight"]),
            float(s["weight2"]),
            float(s["weight_abs"]),
            carrying,
            float(lo["w"]),
            float(hi["w"]),
            np.asarray(s["weight_x"], dtype=np.float64),
        )
        outside = s.get("outside", np.zeros(2, np.int64))
        return cls(
            int(s["n"]),
            partial.k,
            weights,
            negative,
            zero,
            tuple((float(a), float(b)) for a, b in zip(lo["x"], hi["x"], strict=True)),
            (float(lo["y"]), float(hi["y"])),
            float(s["weight_y"]),
            (int(outside[0]), int(outside[1])),
            partial.sketch,
            tuple((name, count) for _, name, count in partial.chunks),
        )

    def check_weights(self) -> None:
        """The in-memory fit's check of the weights: a positive sum."""
        if self.weights.weighted and not self.weights.total > 0:
            msg = (
                f"weight must have a positive sum, got {self.weights.total:g} ({self.negative} "
                f"negative and {self.zero} zero weight(s) out of {self.n})"
            )
            raise ValueError(msg)

    def check_not_constant(self) -> None:
        """Refuse a constant observable or score."""
        ranges = [(f"x[{d}]" if self.k > 1 else "x", r) for d, r in enumerate(self.x_range)]
        for name, (lo, hi) in [*ranges, ("y", self.y_range)]:
            if lo == hi:
                msg = (
                    f"{name} is constant ({self.n} events all equal {lo:g}): "
                    "there is no conditional distribution to estimate"
                )
                raise ValueError(msg)
