"""The sequential Rosenblatt transform over several protected observables.

The method paper's suggestion for several observables applied one at a time:
transform ``y`` along ``x1``, then transform the result along ``x2``, and so on.

What it guarantees, on the defining population (to the accuracy of each
scalar step): the final score is uniform, and independent of the *last*
observable. What it does not: independence of the earlier observables, nor
of the vector ``x`` jointly. After the first step ``gamma1`` is independent
of ``x1`` but its distribution still depends on ``x2`` (through the part of
the dependence of ``y`` on ``x2`` that ``x1`` does not carry); the second
step removes the dependence on ``x2`` by a monotone map that varies with
``x2``, and since ``x2`` is correlated with ``x1`` this can re-introduce a
dependence on ``x1``. The result is not an estimate of ``P(Y <= y | x)``.
It equals the joint transform when ``y`` depends on ``x`` only through the
first observable and the others are independent of it; in general use a
joint estimator (:class:`~rosenblatt.GridKDE`, :class:`~rosenblatt.KDE` or
:class:`~rosenblatt.IRGI` with ``x`` of shape ``(n, k)``) and measure both
with the multivariate distance correlation.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

from rosenblatt.transforms._base import ConditionalCDFTransform, transform_classes
from rosenblatt.transforms._observables import MAX_OBSERVABLES
from rosenblatt.typing import FloatArray

__all__ = ["SequentialTransform"]


class SequentialTransform(ConditionalCDFTransform):
    """Scalar transforms applied one observable at a time: along ``x1``, then the result along ``x2``, ...

    Parameters
    ----------
    steps
        One unfitted scalar transform per observable, in order (for example
        ``[IRGI("auto"), IRGI("auto")]``); copies are fitted, the templates
        stay unfitted.

    Attributes
    ----------
    steps_ : list of ConditionalCDFTransform
        The fitted steps: step ``d`` maps ``(x[:, d], gamma_{d-1})`` to ``gamma_d``
        (``gamma_{-1} = y``).

    Notes
    -----
    See the module notes for what the sequence does and does not guarantee.
    ``gamma`` is in ``[0, 1]`` and monotone in ``y`` at fixed ``x`` (a
    composition of maps monotone in their score); outside the domain each
    step clamps as a scalar transform does.
    """

    kind: ClassVar[str] = "sequential"
    max_x_dims: ClassVar[int] = MAX_OBSERVABLES

    steps_: list[ConditionalCDFTransform]

    def __init__(self, steps: Sequence[ConditionalCDFTransform]) -> None:
        self.steps = steps

    def __repr__(self) -> str:
        return f"SequentialTransform({list(self.steps)!r})"

    def _templates(self, k: int) -> list[ConditionalCDFTransform]:
        steps = list(self.steps)
        if len(steps) != k or not all(isinstance(s, ConditionalCDFTransform) for s in steps):
            msg = f"steps must hold one transform per observable: {k} for x of {k} observables, got {steps!r}"
            raise ValueError(msg)
        return [copy.deepcopy(s) for s in steps]

    def _fit(self, x: FloatArray, y: FloatArray, w: FloatArray | None) -> None:
        msg = "a SequentialTransform needs x of shape (n, k) with k >= 2"
        raise ValueError(msg)

    def _transform(self, x: FloatArray, y: FloatArray) -> FloatArray:
        msg = "a SequentialTransform needs x of shape (n, k) with k >= 2"
        raise ValueError(msg)

    def _fit_vector(self, x: FloatArray, y: FloatArray, w: FloatArray | None) -> None:
        steps = self._templates(x.shape[1])
        score = y
        for d, step in enumerate(steps):
            score = np.asarray(
                step.fit(x[:, d], score, w).transform(x[:, d], score), dtype=np.float64
            )
        self.steps_ = steps
        lo, hi = x.min(axis=0), x.max(axis=0)
        self.domain_ = (  # type: ignore[assignment]
            (tuple(map(float, lo)), tuple(map(float, hi))),
            (float(y.min()), float(y.max())),
        )

    def _transform_vector(self, x: FloatArray, y: FloatArray) -> FloatArray:
        score = y
        for d, step in enumerate(self.steps_):
            score = np.asarray(step.transform(x[:, d], score), dtype=np.float64)
        return score

    def describe(self) -> str:
        """The steps, in order."""
        self._check_fitted()
        return "sequential transform: " + ", then ".join(
            f"{step.describe()} along x[{d}]" for d, step in enumerate(self.steps_)
        )

    def get_state(self) -> dict[str, Any]:
        """Every fitted step's kind and state, in order."""
        self._check_fitted()
        return {
            "x_dims": self.x_dims,
            "domain": _domain_list(self.domain_),
            "steps": [{"kind": s.kind, "state": s.get_state()} for s in self.steps_],
            "n_events": int(self.n_events_),
            "sum_weight": float(self.sum_weight_),
        }

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> SequentialTransform:
        """Rebuild from :meth:`get_state` output, each step by its own ``from_state``."""
        from rosenblatt._schema import SchemaError
        from rosenblatt.transforms._grid_kde_vector import _vector_domain

        classes = transform_classes()
        steps = []
        for entry in state["steps"]:
            if entry.get("kind") not in classes or entry["kind"] == cls.kind:
                msg = f"unknown or nested step kind {entry.get('kind')!r}"
                raise SchemaError(msg)
            steps.append(classes[entry["kind"]].from_state(entry["state"]))
        k = state["x_dims"]
        if len(steps) != k or not 2 <= k <= MAX_OBSERVABLES:
            msg = f"a sequential transform needs one step per observable (2 to {MAX_OBSERVABLES})"
            raise SchemaError(msg)
        obj = cls([copy.deepcopy(s) for s in steps])
        obj.steps_ = steps
        obj.domain_ = _vector_domain(state["domain"], k)  # type: ignore[assignment]
        obj.x_dims_ = k
        obj.n_events_ = int(state["n_events"])
        obj.sum_weight_ = float(state["sum_weight"])
        return obj


def _domain_list(domain: Any) -> list[Any]:
    """``((x_lo, x_hi), (y_lo, y_hi))`` of several observables as nested lists."""
    (x_lo, x_hi), y_range = domain
    return [[list(x_lo), list(x_hi)], list(y_range)]
