"""Bootstrap ensembles of a transform: the statistical uncertainty of ``gamma``.

A transform fitted on a finite defining sample is itself uncertain.
:func:`bootstrap` refits it ``n`` times with Poisson(1) event weights (which
multiply the given weights), giving a :class:`TransformEnsemble`: the nominal
transform, fitted on the sample as given, and ``n`` replicas. The spread of the
replicas at an event estimates the spread of ``gamma`` over independent
defining samples of the same size.

Poisson weights, rather than resampling ``N`` events with replacement, draw
every event's weight independently of the others, so that the replica weights
of an event can be drawn wherever the event is read (chunk by chunk) and
negative Monte Carlo weights are handled alike. With ``keyed=True`` an event's
count is a function of its own ``(x, y)`` values, the seed and the draw
(:func:`keyed_poisson_weights`): the same event gets the same count wherever it
is read, so a sample that shares events with the defining sample (the
background simulation the transform was fitted on) can be reweighted exactly as
each replica's fit was.
"""

from __future__ import annotations

import inspect
import re
import warnings
from collections.abc import Callable
from typing import Any, ClassVar, Literal

import numpy as np
from numpy.typing import NDArray

from rosenblatt._awkward import is_awkward
from rosenblatt._validation import check_bool, check_int, is_int
from rosenblatt.transforms._base import (
    ConditionalCDFTransform,
    NaNInputWarning,
    transform_classes,
)
from rosenblatt.typing import ArrayLike, FloatArray, Int64Array

__all__ = [
    "TransformEnsemble",
    "bootstrap",
    "fit_replica",
    "keyed_poisson_weights",
    "poisson_weights",
]

NaNPolicy = Literal["raise", "propagate"]

#: the variations every ensemble has besides its replicas ``"replica_<k>"``
ENVELOPE_VARIATIONS = ("nominal", "up", "down")
_REPLICA = re.compile(r"replica_(0|[1-9][0-9]*)")


def poisson_weights(n_events: int, seed: int, draw: int) -> Int64Array:
    """The Poisson(1) counts of draw ``draw``: ``default_rng([seed, draw]).poisson(1, n_events)``.

    Replica ``k`` of a :class:`TransformEnsemble` is fitted with the counts of
    draw ``replica_draws_[k]`` times the given weights.
    """
    return np.random.default_rng([seed, draw]).poisson(1.0, n_events)


#: cumulative Poisson(1) probabilities of the counts 0 to 19 (the rest has mass below 1e-17)
_POISSON_CDF = np.cumsum(np.exp(-1.0) / np.cumprod(np.concatenate(([1.0], np.arange(1.0, 20.0)))))
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def _mix(h: NDArray[np.uint64]) -> NDArray[np.uint64]:
    """SplitMix64's finaliser: every bit of the result depends on every bit of ``h``."""
    h = (h ^ (h >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    h = (h ^ (h >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    mixed: NDArray[np.uint64] = h ^ (h >> np.uint64(31))
    return mixed


def keyed_poisson_weights(x: ArrayLike, y: ArrayLike, seed: int, draw: int) -> Int64Array:
    """Poisson(1) counts that are a function of each event's ``(x, y)``, the seed and the draw.

    The bits of ``x`` and ``y`` (as float64), ``seed`` and ``draw`` are
    hashed (SplitMix64) to a uniform number, turned into a count by the
    inverse Poisson(1) distribution function. Distinct events get independent
    counts; the same event gets the same count in every call, wherever it is
    read. An ensemble fitted with ``keyed=True`` draws replica ``k``'s counts
    so, with ``draw = replica_draws_[k]``.

    Parameters
    ----------
    x, y
        The events' values, equal lengths (flattened).
    seed, draw
        Non-negative integers.

    Returns
    -------
    numpy.ndarray
        One count per event.
    """
    seed = check_int(seed, "seed", low=0, what="an integer >= 0")
    draw = check_int(draw, "draw", low=0, what="an integer >= 0")
    x_bits = np.ascontiguousarray(x, dtype=np.float64).ravel().view(np.uint64)
    y_bits = np.ascontiguousarray(y, dtype=np.float64).ravel().view(np.uint64)
    if len(x_bits) != len(y_bits):
        msg = f"x and y must have the same length, got {len(x_bits)} and {len(y_bits)}"
        raise ValueError(msg)
    with np.errstate(over="ignore"):
        stream = _mix(np.uint64(seed) * _GOLDEN + np.uint64(draw) + np.uint64(1))
        h = _mix(_mix(x_bits ^ stream) + y_bits * _GOLDEN)
    uniform = (h >> np.uint64(11)).astype(np.float64) * 2.0**-53
    counts: Int64Array = np.searchsorted(_POISSON_CDF, uniform, side="right").astype(np.int64)
    return counts


def bootstrap(
    transform: ConditionalCDFTransform,
    x: ArrayLike,
    y: ArrayLike,
    weight: ArrayLike | None = None,
    n: int = 100,
    seed: int = 0,
    *,
    keyed: bool = False,
) -> TransformEnsemble:
    """Fit ``transform`` and ``n`` Poisson-bootstrap replicas of it on ``(x, y, weight)``.

    Parameters
    ----------
    transform
        The estimator whose hyper-parameters are used (``rb.IRGI(depth=5)``,
        ``rb.KDE(sigma_r=0.1)``, ``rb.GridKDE(...)``); it is not modified.
    x, y, weight
        The defining background sample, as for
        :meth:`~rosenblatt.transforms.ConditionalCDFTransform.fit`; weights may
        be negative.
    n
        Number of replicas.
    seed
        Seed of the Poisson draws (see :func:`poisson_weights`); the ensemble
        is deterministic given it.
    keyed
        Draw each event's counts from its own ``(x, y)``
        (:func:`keyed_poisson_weights`), so that another sample holding the
        same events can be reweighted as each replica was fitted.

    Returns
    -------
    TransformEnsemble
        The fitted ensemble (see there for what happens to a replica that
        cannot be fitted).
    """
    ensemble = TransformEnsemble(transform, n=n, seed=seed, keyed=keyed)
    ensemble.fit(x, y, weight)
    return ensemble


def fit_replica(
    nominal: ConditionalCDFTransform,
    x: ArrayLike,
    y: ArrayLike,
    weight: ArrayLike | None = None,
    *,
    seed: int = 0,
    draw: int = 0,
    keyed: bool = False,
) -> ConditionalCDFTransform:
    """The replica of draw ``draw`` that a bootstrap ensemble of the fitted ``nominal`` holds.

    Fitted as :class:`TransformEnsemble` fits its replicas: the nominal's
    hyper-parameters, the value its automatic choice fixed, the class's
    ``replica_parameters``, and the Poisson counts of the draw times
    ``weight``. One replica costs one fit: a check, before an ensemble, that
    the nominal's parameters leave its replicas fittable.

    Parameters
    ----------
    nominal
        A fitted transform (not an ensemble).
    x, y, weight
        The sample the nominal was fitted on.
    seed, draw, keyed
        As for :func:`bootstrap` and :meth:`TransformEnsemble.counts`.

    Raises
    ------
    ValueError
        Where the replica cannot be fitted.
    """
    ensemble = TransformEnsemble(nominal, n=2, seed=seed, keyed=keyed)
    ensemble._checked()
    nominal._check_fitted()
    counts = ensemble.counts(x, y, draw).astype(np.float64)
    weights = counts if weight is None else counts * np.asarray(weight, dtype=np.float64)
    return _clone(nominal, **_replica_parameters(nominal)).fit(x, y, weights)


class TransformEnsemble(ConditionalCDFTransform):
    """A transform with ``n`` Poisson-bootstrap replicas of it.

    Parameters
    ----------
    estimator
        The transform to replicate, fitted or not; its hyper-parameters are
        copied (it is not modified).
    n
        Number of replicas, at least 2.
    seed
        Seed of the Poisson draws.
    max_refits
        Most draws allowed to fail in total (default ``n``) before the fit
        gives up with a :class:`ValueError`.
    keyed
        Whether each event's Poisson count is a function of its ``(x, y)``
        (:func:`keyed_poisson_weights`) rather than of its position in the
        sample (:func:`poisson_weights`).

    Attributes
    ----------
    nominal_ : ConditionalCDFTransform
        The transform fitted on the sample as given: what :meth:`transform`
        evaluates.
    replicas_ : list of ConditionalCDFTransform
        The ``n`` replicas. A free parameter chosen automatically
        (``depth="auto"``, ``sigma_r="auto"``) is chosen once, by the nominal,
        and every replica uses that value, with the class's
        ``replica_parameters`` (IRGI: ``empty_bins=True``, so that Poisson
        weights never refuse the nominal's depth).
    replica_draws_ : list of int
        The draw of each replica's Poisson weights (:func:`poisson_weights`,
        or :func:`keyed_poisson_weights` when ``keyed``).
    failed_draws_ : list of int
        Draws whose fit failed (for example a column of an IRGI left without
        weight): each was replaced by the next draw, never dropped, so
        ``n_refits_ = len(failed_draws_)`` replicas were refitted.

    Notes
    -----
    :meth:`transform` gives the nominal ``gamma`` (or, with ``variation``, a
    replica or the envelope), :meth:`variations` every replica's and
    :meth:`std` their standard deviation per event. Saved as one JSON
    document (:meth:`save`, :func:`rosenblatt.load`) holding the nominal's and
    the replicas' states; a replica's entries equal to the nominal's (the
    defining events of a KDE) are stored once. :meth:`to_correctionlib`
    writes one correction with a string input ``variation`` (see
    :func:`rosenblatt.correctionlib.correctionlib_document`).
    """

    kind: ClassVar[str] = "ensemble"

    nominal_: ConditionalCDFTransform
    replicas_: list[ConditionalCDFTransform]
    replica_draws_: list[int]
    failed_draws_: list[int]

    def __init__(
        self,
        estimator: ConditionalCDFTransform,
        n: int = 100,
        seed: int = 0,
        *,
        max_refits: int | None = None,
        keyed: bool = False,
    ) -> None:
        self.estimator = estimator
        self.n = n
        self.seed = seed
        self.max_refits = max_refits
        self.keyed = keyed

    def __repr__(self) -> str:
        keyed = ", keyed=True" if self.keyed else ""
        return f"TransformEnsemble({self.estimator!r}, n={self.n!r}, seed={self.seed!r}{keyed})"

    def counts(self, x: ArrayLike, y: ArrayLike, draw: int) -> Int64Array:
        """The Poisson counts of draw ``draw`` for the events ``(x, y)``, as the fit draws them."""
        if self.keyed:
            return keyed_poisson_weights(x, y, self.seed, draw)
        return poisson_weights(np.asarray(x).size, self.seed, draw)

    @property
    def n_refits_(self) -> int:
        """Number of draws that failed to fit and were replaced by the next one."""
        self._check_fitted()
        return len(self.failed_draws_)

    @property
    def variation_names(self) -> list[str]:
        """``"nominal"``, ``"up"``, ``"down"`` and ``"replica_<k>"`` for each replica."""
        self._check_fitted()
        return [*ENVELOPE_VARIATIONS, *(f"replica_{k}" for k in range(len(self.replicas_)))]

    # ------------------------------------------------------------------- fit
    def _checked(self) -> tuple[int, int, int]:
        """``(n, seed, max_refits)``, validated."""
        template = self.estimator
        if not isinstance(template, ConditionalCDFTransform) or isinstance(
            template, TransformEnsemble
        ):
            msg = (
                "estimator must be a transform such as rb.IRGI(depth=5) (not an ensemble), "
                f"got {type(template).__name__}"
            )
            raise TypeError(msg)
        n = check_int(self.n, "n", low=2)
        seed = check_int(self.seed, "seed", low=0, what="an integer >= 0")
        most = self.n if self.max_refits is None else self.max_refits
        if not is_int(most) or most < 0:
            msg = f"max_refits must be a non-negative integer or None, got {self.max_refits!r}"
            raise ValueError(msg)
        check_bool(self.keyed, "keyed", error=TypeError)
        return n, seed, int(most)

    def _fit(self, x: FloatArray, y: FloatArray, w: FloatArray | None) -> None:
        n, _, most = self._checked()
        nominal = _clone(self.estimator).fit(x, y, w)
        fixed = _replica_parameters(nominal)
        replicas: list[ConditionalCDFTransform] = []
        draws: list[int] = []
        failed: list[int] = []
        draw = 0
        while len(replicas) < n:
            counts = self.counts(x, y, draw).astype(np.float64)
            try:
                replica = _clone(nominal, **fixed).fit(x, y, counts if w is None else counts * w)
            except ValueError as err:
                failed.append(draw)
                if len(failed) > most:
                    msg = (
                        f"{len(failed)} bootstrap draws of {type(nominal).__name__} could not be "
                        f"fitted (more than max_refits = {most}; {len(replicas)} of {n} replicas "
                        f"fitted); the last error: {err}"
                    )
                    raise ValueError(msg) from err
            else:
                replicas.append(replica)
                draws.append(draw)
            draw += 1
        self._set_members(nominal, replicas, draws, failed)

    def _set_members(
        self,
        nominal: ConditionalCDFTransform,
        replicas: list[ConditionalCDFTransform],
        draws: list[int],
        failed: list[int],
    ) -> None:
        self.nominal_ = nominal
        self.replicas_ = replicas
        self.replica_draws_ = draws
        self.failed_draws_ = failed
        self.domain_ = nominal.domain_

    def set_fitted_members(
        self,
        nominal: ConditionalCDFTransform,
        replicas: list[ConditionalCDFTransform],
        draws: list[int],
        failed: list[int],
    ) -> TransformEnsemble:
        """Store members fitted outside :meth:`fit` (the nominal first fitted); return ``self``.

        ``draws`` names each replica's draw of Poisson weights and ``failed``
        the draws that could not be fitted, as :attr:`replica_draws_` and
        :attr:`failed_draws_` do.
        """
        self._checked()
        self._set_members(nominal, replicas, draws, failed)
        self.n_events_ = int(nominal.n_events_)
        self.sum_weight_ = float(nominal.sum_weight_)
        return self

    # ------------------------------------------------------------- evaluate
    def _transform(self, x: FloatArray, y: FloatArray) -> FloatArray:
        return self.nominal_._transform(x, y)

    def transform(
        self, x: Any, y: Any, *, variation: str = "nominal", nan_policy: NaNPolicy = "raise"
    ) -> Any:
        """``gamma(x, y)`` of the nominal transform, or of one variation.

        Parameters
        ----------
        x, y
            As for :meth:`~rosenblatt.transforms.ConditionalCDFTransform.transform`
            (numpy or awkward; the result has the structure of the input).
        variation
            ``"nominal"`` (default); ``"up"`` or ``"down"``: the nominal plus or
            minus one standard deviation of the replicas at each event
            (:meth:`std`), clipped to ``[0, 1]``; ``"replica_<k>"``: replica ``k``.
            The names of the correctionlib export's ``variation`` input.
        nan_policy
            As for :meth:`~rosenblatt.transforms.ConditionalCDFTransform.transform`.
        """
        return self._member(variation).transform(x, y, nan_policy=nan_policy)

    def variations(self, x: Any, y: Any, *, nan_policy: NaNPolicy = "raise") -> Any:
        """``gamma`` of every replica.

        Returns
        -------
        numpy.ndarray or awkward.Array
            Shape ``(n, *shape)`` for numpy input of ``shape``; for awkward input
            the input's structure with an extra leading axis of length ``n``.
        """
        self._check_fitted()
        results = []
        for k, replica in enumerate(self.replicas_):
            with warnings.catch_warnings():
                if k > 0:  # the first replica reports NaN input, once
                    warnings.simplefilter("ignore", NaNInputWarning)
                results.append(replica.transform(x, y, nan_policy=nan_policy))
        if not results or not is_awkward(results[0]):
            return np.stack(results)
        import awkward as ak

        return ak.concatenate([r[np.newaxis] for r in results], axis=0)

    def std(self, x: Any, y: Any, *, nan_policy: NaNPolicy = "raise") -> Any:
        """Standard deviation of the replicas' ``gamma`` at each event (``ddof=1``).

        Computed replica by replica: memory does not grow with ``n``.
        """
        self._check_fitted()
        return _Derived(self, self._spread).transform(x, y, nan_policy=nan_policy)

    def _spread(self, x: FloatArray, y: FloatArray) -> FloatArray:
        """:meth:`std` on validated flat arrays, accumulated about the nominal for precision."""
        nominal = self.nominal_._transform(x, y)
        total = np.zeros_like(nominal)
        squares = np.zeros_like(nominal)
        for replica in self.replicas_:
            d = replica._transform(x, y) - nominal
            total += d
            squares += d * d
        n = len(self.replicas_)
        return np.sqrt(np.maximum(squares - total * total / n, 0.0) / (n - 1))

    def _member(self, variation: str) -> ConditionalCDFTransform:
        """The transform that evaluates ``variation``."""
        self._check_fitted()
        if variation == "nominal":
            return self.nominal_
        if variation in ("up", "down"):
            sign = 1.0 if variation == "up" else -1.0

            def envelope(x: FloatArray, y: FloatArray) -> FloatArray:
                return np.clip(self.nominal_._transform(x, y) + sign * self._spread(x, y), 0.0, 1.0)

            return _Derived(self, envelope)
        match = _REPLICA.fullmatch(variation) if isinstance(variation, str) else None
        if match is not None and int(match[1]) < len(self.replicas_):
            return self.replicas_[int(match[1])]
        msg = (
            f"unknown variation {variation!r}: expected 'nominal', 'up', 'down' or "
            f"'replica_<k>' with k in [0, {len(self.replicas_) - 1}]"
        )
        raise ValueError(msg)

    # --------------------------------------------------------- serialisation
    def get_state(self) -> dict[str, Any]:
        """The nominal's and the replicas' states; replica entries equal to the nominal's stored once."""
        self._check_fitted()
        nominal = self.nominal_.get_state()
        replicas = []
        for replica in self.replicas_:
            state = replica.get_state()
            shared = sorted(key for key, value in state.items() if nominal.get(key) == value)
            replicas.append(
                {
                    "shared": shared,
                    "state": {key: value for key, value in state.items() if key not in shared},
                }
            )
        return {
            "params": {
                "n": int(self.n),
                "seed": int(self.seed),
                "max_refits": self.max_refits,
                "keyed": bool(self.keyed),
            },
            "member_kind": self.nominal_.kind,
            "nominal": nominal,
            "replicas": replicas,
            "replica_draws": [int(d) for d in self.replica_draws_],
            "failed_draws": [int(d) for d in self.failed_draws_],
            "n_events": int(self.n_events_),
            "sum_weight": float(self.sum_weight_),
        }

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> TransformEnsemble:
        """Rebuild a fitted ensemble from :meth:`get_state` output, checking every member."""
        from rosenblatt._schema import SchemaError

        kind = state["member_kind"]
        registry = transform_classes()
        if not isinstance(kind, str) or kind == cls.kind or kind not in registry:
            msg = f"unknown member kind {kind!r}; known: {sorted(set(registry) - {cls.kind})}"
            raise SchemaError(msg)
        member = registry[kind]
        nominal_state = state["nominal"]
        if not isinstance(nominal_state, dict) or not isinstance(state["replicas"], list):
            msg = "'nominal' must be an object and 'replicas' a list"
            raise SchemaError(msg)
        nominal = member.from_state(nominal_state)
        replicas = []
        for k, stored in enumerate(state["replicas"]):
            shared = stored["shared"]
            if not isinstance(shared, list) or any(key not in nominal_state for key in shared):
                msg = f"replica {k}: 'shared' must list entries of the nominal state"
                raise SchemaError(msg)
            replica_state = {**{key: nominal_state[key] for key in shared}, **stored["state"]}
            try:
                replicas.append(member.from_state(replica_state))
            except SchemaError as err:
                msg = f"replica {k}: {err}"
                raise SchemaError(msg) from err
        draws, failed = _draws(state["replica_draws"], len(replicas)), _draws(state["failed_draws"])
        params = state["params"]
        obj = cls(
            _clone(nominal),
            n=params["n"],
            seed=params["seed"],
            max_refits=params["max_refits"],
            keyed=params.get("keyed", False),
        )
        try:
            n, _, _ = obj._checked()
        except (TypeError, ValueError) as err:
            raise SchemaError(str(err)) from err
        if len(replicas) != n:
            msg = f"the ensemble holds {len(replicas)} replicas, its params say n = {n}"
            raise SchemaError(msg)
        if any(replica.domain_ != nominal.domain_ for replica in replicas):
            msg = "every replica must have the domain of the nominal transform"
            raise SchemaError(msg)
        obj._set_members(nominal, replicas, draws, failed)
        obj.n_events_ = int(state["n_events"])
        obj.sum_weight_ = float(state["sum_weight"])
        return obj


class _Derived(ConditionalCDFTransform, register=False):
    """A function of an ensemble's members, evaluated like a transform (checks, awkward, NaN policy)."""

    kind: ClassVar[str] = "ensemble-derived"

    def __init__(
        self, ensemble: TransformEnsemble, function: Callable[[FloatArray, FloatArray], FloatArray]
    ) -> None:
        self.function = function
        self.domain_ = ensemble.domain_
        self.n_events_ = ensemble.n_events_
        self.sum_weight_ = ensemble.sum_weight_

    def _fit(self, x: FloatArray, y: FloatArray, w: FloatArray | None) -> None:
        msg = "a variation of an ensemble is not fitted on its own: fit the ensemble"
        raise TypeError(msg)

    def _transform(self, x: FloatArray, y: FloatArray) -> FloatArray:
        return self.function(x, y)

    def get_state(self) -> dict[str, Any]:
        msg = "a variation of an ensemble is saved with its ensemble"
        raise TypeError(msg)

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> _Derived:
        msg = "a variation of an ensemble is read with its ensemble"
        raise TypeError(msg)


def _clone(transform: ConditionalCDFTransform, **overrides: Any) -> ConditionalCDFTransform:
    """A new, unfitted transform with the hyper-parameters of ``transform`` (``overrides`` replacing some)."""
    cls = type(transform)
    names = [
        p.name
        for p in inspect.signature(cls.__init__).parameters.values()
        if p.name != "self" and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
    ]
    params = {name: getattr(transform, name) for name in names if hasattr(transform, name)}
    return cls(**{**params, **overrides})


def _chosen_parameters(transform: ConditionalCDFTransform) -> dict[str, Any]:
    """The free parameter an automatic choice fixed on ``transform``, as a hyper-parameter."""
    selection = getattr(transform, "selection_", None)
    if selection is None:
        return {}
    if selection.parameter == "splits":
        return {"depth": tuple(selection.chosen)}
    chosen = int(selection.chosen) if selection.parameter == "depth" else float(selection.chosen)
    return {selection.parameter: chosen}


def _replica_parameters(nominal: ConditionalCDFTransform) -> dict[str, Any]:
    """The hyper-parameters a replica of ``nominal`` replaces: its automatic choice, its class's."""
    return {**_chosen_parameters(nominal), **type(nominal).replica_parameters}


def _draws(values: Any, length: int | None = None) -> list[int]:
    """A list of distinct non-negative draw numbers (of ``length`` if given)."""
    from rosenblatt._schema import SchemaError

    if (
        not isinstance(values, list)
        or not all(is_int(v) and v >= 0 for v in values)
        or len(set(values)) != len(values)
        or (length is not None and len(values) != length)
    ):
        msg = f"draws must be a list of {length or 'some'} distinct non-negative integers"
        raise SchemaError(msg)
    return list(values)
