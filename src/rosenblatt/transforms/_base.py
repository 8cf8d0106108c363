"""The interface shared by the conditional-CDF transforms.

The transforms know no file format. Two registries connect them to the
readers and writers without importing them:

- every concrete subclass of :class:`ConditionalCDFTransform` with its own
  ``kind`` is recorded when it is defined (:func:`transform_classes`), which is
  how :func:`rosenblatt.load` finds the class of a saved ``kind``;
- :meth:`ConditionalCDFTransform.save` and
  :meth:`ConditionalCDFTransform.to_correctionlib` call the writer registered
  for their format with :func:`register_writer`. :mod:`rosenblatt.serialization`,
  imported with :mod:`rosenblatt`, registers ``"json"``
  (:func:`rosenblatt.serialization.save`) and the correctionlib formats
  (:mod:`rosenblatt.correctionlib`); :func:`register_reader` connects a
  reader the same way.

A transform says what an exported table needs to know of it through methods
that have defaults here: :meth:`~ConditionalCDFTransform.describe`,
:meth:`~ConditionalCDFTransform.fitted_params` and
:meth:`~ConditionalCDFTransform.kinks`. How its ``gamma`` is tabulated follows
from what it provides: a grid of columns
(:class:`rosenblatt.transforms._column_grid.ColumnGridTransform`), a staircase
in ``y`` (a ``staircase()`` method) or bootstrap members.
"""

from __future__ import annotations

import dataclasses
import inspect
import warnings
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal, NamedTuple, overload

import numpy as np
from numpy.typing import NDArray

from rosenblatt._awkward import apply_flat
from rosenblatt._validation import as_1d_float, as_weight, check_finite, check_same_length
from rosenblatt.exceptions import NaNInputWarning, NotFittedError
from rosenblatt.transforms import _observables
from rosenblatt.typing import ArrayLike, BoolArray, FloatArray

if TYPE_CHECKING:
    from typing_extensions import Self

#: numpy input of :meth:`ConditionalCDFTransform.transform` (awkward input gives awkward output)
NumpyInput = NDArray[Any] | float

__all__ = [
    "ConditionalCDFTransform",
    "Kinks",
    "NaNInputWarning",
    "NotFittedError",
    "OutsideCounts",
    "register_reader",
    "register_writer",
    "transform_classes",
]

NaNPolicy = Literal["raise", "propagate"]
WriterFormat = Literal["json", "correctionlib", "correctionlib-file", "correctionlib-document"]
ReaderFormat = Literal["correctionlib"]

_KINDS: dict[str, type[ConditionalCDFTransform]] = {}
_WRITERS: dict[str, Callable[..., Any]] = {}
_READERS: dict[str, Callable[..., Any]] = {}


def transform_classes() -> dict[str, type[ConditionalCDFTransform]]:
    """Return the concrete transform classes defined so far, by ``kind``.

    A subclass of :class:`ConditionalCDFTransform` is recorded when it is
    defined, unless it is abstract, inherits its ``kind`` or is defined with
    ``register=False`` (``class T(ConditionalCDFTransform, register=False)``).

    Returns
    -------
    dict
        ``{kind: class}``, a copy.
    """
    return dict(_KINDS)


def register_writer(fmt: WriterFormat, writer: Callable[..., Any]) -> None:
    """Register the function behind a writing method of every transform.

    Parameters
    ----------
    fmt
        ``"json"``: ``writer(transform, path)`` serves
        :meth:`ConditionalCDFTransform.save`; ``"correctionlib"``:
        ``writer(transform, name, **options)`` serves
        :meth:`ConditionalCDFTransform.to_correctionlib`;
        ``"correctionlib-file"``: ``writer(transform, path, name, **options)``
        and ``"correctionlib-document"``: ``writer(transform, name, **options)``
        write a correctionlib file and return its document as plain data.
    writer
        The function; a later registration replaces an earlier one.
    """
    known = ("json", "correctionlib", "correctionlib-file", "correctionlib-document")
    if fmt not in known:
        msg = f"unknown writer format {fmt!r}; known: {', '.join(map(repr, known))}"
        raise ValueError(msg)
    _WRITERS[fmt] = writer


def register_reader(fmt: ReaderFormat, reader: Callable[..., Any]) -> None:
    """Register the function that rebuilds a transform from a document of a format.

    Parameters
    ----------
    fmt
        ``"correctionlib"``: ``reader(document)`` returns the transform of a
        correctionlib document (a :class:`rosenblatt.transforms.tabulated.TabulatedTransform`).
    reader
        The function; a later registration replaces an earlier one.
    """
    known = ("correctionlib",)
    if fmt not in known:
        msg = f"unknown reader format {fmt!r}; known: {', '.join(map(repr, known))}"
        raise ValueError(msg)
    _READERS[fmt] = reader


def _writer(fmt: WriterFormat) -> Callable[..., Any]:
    try:
        return _WRITERS[fmt]
    except KeyError:
        msg = f"no {fmt} writer is registered: import rosenblatt.serialization first"
        raise RuntimeError(msg) from None


def _reader(fmt: ReaderFormat) -> Callable[..., Any]:
    try:
        return _READERS[fmt]
    except KeyError:
        msg = f"no {fmt} reader is registered: import rosenblatt.serialization first"
        raise RuntimeError(msg) from None


class Kinks(NamedTuple):
    """Where a transform's ``gamma`` jumps or bends.

    Attributes
    ----------
    x
        ``x`` near which it changes fastest (column centres, defining events).
    y
        ``y`` at which it jumps or bends (edges, defining scores).
    spread
        Scatter in ``x`` about ``x`` over which it changes (0 for a grid).
    """

    x: FloatArray
    y: FloatArray
    spread: float


@dataclasses.dataclass(frozen=True)
class OutsideCounts:
    """How many events lie outside the fitted domain.

    Events outside are never dropped: ``y`` below the domain maps to 0, above
    to 1, and ``x`` beyond the domain is evaluated at the nearest edge.

    Attributes
    ----------
    x_below, x_above
        Events with ``x`` below (above) the fitted ``x`` domain.
    y_below, y_above
        Events with ``y`` below (above) the fitted ``y`` domain.
    total
        Events outside in ``x`` or ``y`` (or both).
    """

    x_below: int
    x_above: int
    y_below: int
    y_above: int
    total: int


class ConditionalCDFTransform(ABC):
    """Base class of the estimators of ``gamma(x, y) = P(Y <= y | X = x)``.

    Subclasses implement :meth:`_fit` and :meth:`_transform` on validated flat
    float64 arrays, and the (de)serialisation of their learned state.
    """

    #: name used in saved files
    kind: ClassVar[str]
    #: most protected observables ``k`` the transform is fitted on (``x`` of shape ``(n, k)``)
    max_x_dims: ClassVar[int] = 1
    #: whether :meth:`fit` learns from a sample (``False``: the transform is read, not fitted)
    fittable: ClassVar[bool] = True
    #: whether integer event weights give the transform fitted on the events each repeated
    #: as often (checked by :func:`rosenblatt.testing.check_transform`)
    weights_replicate: ClassVar[bool] = False
    #: whether :meth:`fit` takes defining samples with negative weights (NLO simulation) whose
    #: weighted distribution is a density, giving a valid ``gamma`` close to the true one
    #: (checked by :func:`rosenblatt.testing.check_transform`)
    negative_weights: ClassVar[bool] = False
    #: hyper-parameters a bootstrap replica (:func:`rosenblatt.bootstrap`) is fitted with,
    #: replacing the nominal transform's own
    replica_parameters: ClassVar[Mapping[str, Any]] = {}

    def __init_subclass__(cls, *, register: bool = True, **kwargs: Any) -> None:
        """Record a concrete subclass with its own ``kind`` in :func:`transform_classes`."""
        super().__init_subclass__(**kwargs)
        if not register or inspect.isabstract(cls) or "kind" not in cls.__dict__:
            return
        kind = cls.__dict__["kind"]
        if not isinstance(kind, str) or not kind:
            msg = f"{cls.__qualname__}.kind must be a non-empty string, got {kind!r}"
            raise TypeError(msg)
        known = _KINDS.get(kind)
        if known is not None and (known.__module__, known.__qualname__) != (
            cls.__module__,
            cls.__qualname__,
        ):
            msg = (
                f"transform kind {kind!r} of {cls.__module__}.{cls.__qualname__} is already "
                f"taken by {known.__module__}.{known.__qualname__}"
            )
            raise TypeError(msg)
        _KINDS[kind] = cls

    domain_: tuple[tuple[float, float], tuple[float, float]]
    n_events_: int
    sum_weight_: float
    #: what ``rosenblatt fit`` fitted the transform on, kept with it by save and load
    #: (:func:`rosenblatt.serialization.fitted_on`); dropped by a new fit
    fitted_on_: dict[str, Any]

    def fit(self, x: ArrayLike, y: ArrayLike, weight: ArrayLike | None = None) -> Self:
        """Learn ``gamma`` from the defining background sample.

        Parameters
        ----------
        x, y
            One-dimensional arrays of the protected observable and the score.
            Transforms with ``max_x_dims > 1`` also take ``k`` protected
            observables: ``x`` of shape ``(n, k)`` or a list of ``k`` arrays,
            one per observable (numpy, or awkward arrays that are flattened);
            ``(n, 1)`` is the scalar case.
        weight
            Optional per-event weights; may be negative (Monte Carlo weights),
            their sum must be positive.

        Returns
        -------
        self
        """
        self.__dict__.pop("fitted_on_", None)
        x_matrix, x = _observables.split_observables(x)
        if x_matrix is not None:
            return self._fit_observables(x_matrix, y, weight)
        self.__dict__.pop("x_dims_", None)
        x_arr = as_1d_float(x, "x")
        y_arr = as_1d_float(y, "y")
        check_same_length(x=x_arr, y=y_arr)
        check_finite(x_arr, "x")
        check_finite(y_arr, "y")
        w_arr = as_weight(weight, len(x_arr))
        self._fit(x_arr, y_arr, w_arr)
        self.n_events_ = len(x_arr)
        self.sum_weight_ = float(len(x_arr) if w_arr is None else w_arr.sum())
        return self

    @property
    def x_dims(self) -> int:
        """The number of protected observables the transform was fitted on (1 before fitting)."""
        return int(self.__dict__.get("x_dims_", 1))

    def _fit_observables(self, x: FloatArray, y: Any, weight: Any) -> Self:
        """:meth:`fit` on ``k >= 2`` observables ``x`` of shape ``(n, k)``."""
        _observables.check_dims(x.shape, self.max_x_dims, type(self).__name__)
        y_arr = _observables.flat_values(y, "y")
        check_same_length(x=x, y=y_arr)
        if len(y_arr) == 0:
            msg = "x is empty: at least one event is needed"
            raise ValueError(msg)
        check_finite(x, "x")
        check_finite(y_arr, "y")
        w_arr = as_weight(weight, len(y_arr))
        self._fit_vector(x, y_arr, w_arr)
        self.x_dims_ = x.shape[1]
        self.n_events_ = len(y_arr)
        self.sum_weight_ = float(len(y_arr) if w_arr is None else w_arr.sum())
        return self

    def _fit_vector(self, x: FloatArray, y: FloatArray, w: FloatArray | None) -> None:
        """Learn the state from ``(n, k)`` observables; transforms with ``max_x_dims > 1`` override it.

        Must set ``domain_ = ((x_lo, x_hi), (y_lo, y_hi))`` with ``x_lo`` and
        ``x_hi`` tuples of ``k`` floats.
        """
        msg = f"{type(self).__name__} does not take several protected observables"
        raise TypeError(msg)

    def _transform_vector(self, x: FloatArray, y: FloatArray) -> FloatArray:
        """Evaluate ``gamma`` on finite ``(m, k)`` observables (``x`` within the domain) and scores."""
        msg = f"{type(self).__name__} does not take several protected observables"
        raise TypeError(msg)

    def _transform_observables(self, x: Any, y: Any, nan_policy: NaNPolicy) -> Any:
        """:meth:`transform` of a transform fitted on several observables."""
        (x_lo, x_hi), _ = self.domain_
        lo, hi = np.asarray(x_lo), np.asarray(x_hi)

        def evaluate(x_flat: FloatArray, y_flat: FloatArray) -> FloatArray:
            if nan_policy == "raise":
                check_finite(x_flat, "x")
                check_finite(y_flat, "y")
                return self._transform_vector(np.clip(x_flat, lo, hi), y_flat)
            missing = np.isnan(x_flat).any(axis=1) | np.isnan(y_flat)
            out = np.full(len(y_flat), np.nan)
            finite = ~missing & np.isfinite(y_flat)
            out[finite] = self._transform_vector(np.clip(x_flat[finite], lo, hi), y_flat[finite])
            out[~missing & (y_flat == -np.inf)] = 0.0
            out[~missing & (y_flat == np.inf)] = 1.0
            _warn_missing(missing)
            return out

        return _observables.apply_observables(evaluate, x, y, self.x_dims)

    @overload
    def transform(
        self, x: NumpyInput, y: NumpyInput, *, nan_policy: NaNPolicy = ...
    ) -> FloatArray: ...

    @overload
    def transform(self, x: Any, y: Any, *, nan_policy: NaNPolicy = ...) -> Any: ...

    def transform(self, x: Any, y: Any, *, nan_policy: NaNPolicy = "raise") -> Any:
        """Return ``gamma(x, y)`` for every event, in ``[0, 1]``.

        Accepts numpy arrays (any shape, broadcast together) or awkward arrays
        of any jagged structure; the result has the structure of the input.

        Parameters
        ----------
        x, y
            The protected observable and the score of each event. After a fit
            on ``k`` observables, ``x`` is ``(..., k)`` (the last axis holds
            the observables) or a list of ``k`` arrays, numpy or awkward, one
            per observable, broadcast with ``y``.
        nan_policy
            ``"raise"`` (default): NaN or infinite input raises a
            :class:`ValueError` that names the argument and counts the events.
            ``"propagate"``: an event with a NaN ``x`` or ``y`` gets NaN, and a
            :class:`NaNInputWarning` says how many did; infinite values are
            events beyond the domain (``y = -inf`` gives 0, ``y = +inf`` gives 1,
            an infinite ``x`` is evaluated at the nearest edge of the domain).
        """
        self._check_fitted()
        if nan_policy not in ("raise", "propagate"):
            msg = f"nan_policy must be 'raise' or 'propagate', got {nan_policy!r}"
            raise ValueError(msg)
        if self.x_dims > 1:
            return self._transform_observables(x, y, nan_policy)

        def evaluate(x_flat: NDArray[Any], y_flat: NDArray[Any]) -> FloatArray:
            x_b, y_b = np.broadcast_arrays(x_flat, y_flat)
            x_arr = as_1d_float(x_b.ravel(), "x", allow_empty=True)
            y_arr = as_1d_float(y_b.ravel(), "y", allow_empty=True)
            if nan_policy == "raise":
                check_finite(x_arr, "x")
                check_finite(y_arr, "y")
                return self._transform(x_arr, y_arr).reshape(x_b.shape)
            return self._transform_propagating(x_arr, y_arr).reshape(x_b.shape)

        return apply_flat(evaluate, x, y)

    def _transform_propagating(self, x: FloatArray, y: FloatArray) -> FloatArray:
        """:meth:`_transform` where NaN gives NaN and infinities lie beyond the domain."""
        missing = np.isnan(x) | np.isnan(y)
        out = np.full(len(x), np.nan)
        (x_lo, x_hi), _ = self.domain_
        finite_y = ~missing & np.isfinite(y)
        out[finite_y] = self._transform(np.clip(x[finite_y], x_lo, x_hi), y[finite_y])
        out[~missing & (y == -np.inf)] = 0.0
        out[~missing & (y == np.inf)] = 1.0
        _warn_missing(missing)
        return out

    @overload
    def fit_transform(
        self, x: NDArray[Any], y: NDArray[Any], weight: ArrayLike | None = None
    ) -> FloatArray: ...

    @overload
    def fit_transform(self, x: Any, y: Any, weight: Any = None) -> Any: ...

    def fit_transform(self, x: Any, y: Any, weight: Any = None) -> Any:
        """Fit on ``(x, y, weight)`` and return ``gamma`` of the same events."""
        return self.fit(x, y, weight).transform(x, y)

    def outside(self, x: ArrayLike, y: ArrayLike) -> OutsideCounts:
        """Count the events outside the fitted domain (they are kept and clamped).

        Parameters
        ----------
        x, y
            The events, numpy or awkward (flattened), the same number of each.

        Returns
        -------
        OutsideCounts
            The counts below and above the domain in ``x`` and ``y``, and in all.

        Raises
        ------
        NotFittedError
            If the transform is not fitted.
        ValueError
            If ``x`` and ``y`` have different lengths (both are named).
        """
        self._check_fitted()
        if self.x_dims > 1:
            return self._outside_observables(x, y)

        def flat(values: Any, name: str) -> FloatArray:
            from rosenblatt._awkward import is_awkward

            if is_awkward(values):
                import awkward as ak

                values = ak.to_numpy(ak.flatten(values, axis=None))
            return as_1d_float(np.ravel(values), name, allow_empty=True)

        x_arr, y_arr = flat(x, "x"), flat(y, "y")
        check_same_length(x=x_arr, y=y_arr)
        (x_lo, x_hi), (y_lo, y_hi) = self.domain_
        x_out = (x_arr < x_lo) | (x_arr > x_hi)
        y_out = (y_arr < y_lo) | (y_arr > y_hi)
        return OutsideCounts(
            x_below=int((x_arr < x_lo).sum()),
            x_above=int((x_arr > x_hi).sum()),
            y_below=int((y_arr < y_lo).sum()),
            y_above=int((y_arr > y_hi).sum()),
            total=int((x_out | y_out).sum()),
        )

    def _outside_observables(self, x: Any, y: Any) -> OutsideCounts:
        """:meth:`outside` of a transform fitted on several observables (below or above in any)."""
        counts: list[Any] = []

        def flags(x_flat: FloatArray, y_flat: FloatArray) -> FloatArray:
            (x_lo, x_hi), (y_lo, y_hi) = self.domain_
            counts.extend(
                [
                    (x_flat < np.asarray(x_lo)).any(axis=1),
                    (x_flat > np.asarray(x_hi)).any(axis=1),
                    y_flat < y_lo,
                    y_flat > y_hi,
                ]
            )
            return np.zeros(len(y_flat))

        _observables.apply_observables(flags, x, y, self.x_dims)
        x_below, x_above, y_below, y_above = counts
        return OutsideCounts(
            x_below=int(x_below.sum()),
            x_above=int(x_above.sum()),
            y_below=int(y_below.sum()),
            y_above=int(y_above.sum()),
            total=int((x_below | x_above | y_below | y_above).sum()),
        )

    def save(self, path: str | Path) -> None:
        """Write the fitted transform to a versioned JSON file (no code, no pickle).

        Uses the ``"json"`` writer of :func:`register_writer`:
        :func:`rosenblatt.serialization.save`. Read it back with :func:`rosenblatt.load`.
        """
        _writer("json")(self, path)

    def to_correctionlib(self, name: str = "rosenblatt_gamma", **options: Any) -> Any:
        """Return the transform as a correctionlib ``CorrectionSet``.

        Uses the ``"correctionlib"`` writer of :func:`register_writer`: see
        :func:`rosenblatt.correctionlib.to_correctionlib` for the options.
        """
        return _writer("correctionlib")(self, name, **options)

    def describe(self) -> str:
        """Say in words what the fitted transform is (written in the files it is exported to).

        Subclasses name their free parameters and the shape of ``gamma``; the
        default names the class.
        """
        return type(self).__name__

    def fitted_params(self) -> dict[str, Any]:
        """Return the values of the parameters the fitted transform evaluates with, as JSON data.

        Written in the files it is exported to; empty by default.
        """
        return {}

    def kinks(self) -> Kinks | None:
        """Return where ``gamma`` jumps or bends, or ``None`` (the default) if nowhere in particular.

        An export measures its error on points placed there as well as on
        points spread over the domain.
        """
        return None

    def is_fitted(self) -> bool:
        """Return whether :meth:`fit` has been called."""
        return hasattr(self, "domain_")

    def _check_fitted(self) -> None:
        if not self.is_fitted():
            msg = (
                f"this {type(self).__name__} is not fitted yet: call fit(x, y) on the "
                "defining background sample first"
            )
            raise NotFittedError(msg)

    @abstractmethod
    def _fit(self, x: FloatArray, y: FloatArray, w: FloatArray | None) -> None:
        """Learn the state from validated flat arrays."""

    @abstractmethod
    def _transform(self, x: FloatArray, y: FloatArray) -> FloatArray:
        """Evaluate ``gamma`` on validated flat arrays."""

    @abstractmethod
    def get_state(self) -> dict[str, Any]:
        """Return hyper-parameters and learned state as JSON-compatible data."""

    @classmethod
    @abstractmethod
    def from_state(cls, state: dict[str, Any]) -> ConditionalCDFTransform:
        """Rebuild a fitted transform from :meth:`get_state` output (validated)."""


def _warn_missing(missing: BoolArray) -> None:
    """Issue a :class:`NaNInputWarning` counting the events with a NaN input, if any."""
    n_missing = int(missing.sum())
    if n_missing:
        first = int(np.flatnonzero(missing)[0])
        warnings.warn(
            f"{n_missing} of {len(missing)} event(s) have a NaN x or y (first at index {first}); "
            "their gamma is NaN",
            NaNInputWarning,
            stacklevel=6,
        )
