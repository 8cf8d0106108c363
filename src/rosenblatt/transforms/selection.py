"""Automatic choice of a transform's free parameter from the defining sample alone.

The parameter (IRGI's depth, a kernel width ``sigma_r``) is chosen by k-fold
cross-validation of a proper score of the conditional CDF, the Brier score
integrated over thresholds ``t`` of the score,

``S = (1 / W) sum_i w_i sum_k omega_ik (gamma(x_i, t_k) - [y_i < t_k])**2``,

of the held-out events ``(x_i, y_i, w_i)``, ``gamma`` fitted on the other
folds. For thresholds and weights ``omega`` that do not depend on the
held-out ``y_i`` nor on the parameter, the expectation of ``S`` is the mean
squared distance of ``gamma`` to the true conditional CDF, averaged over the
events' ``x`` and over ``t`` with the weights ``omega``, plus a constant: the
parameter with the lowest score is the one whose ``gamma`` is closest to the
truth. The thresholds are spread like the conditional distribution of ``y``
at ``x_i``, so that the score weighs the errors as the root mean square of
``gamma`` over the events does. The folds are drawn from a seeded generator:
the choice is reproducible.

Two implementations:

- :func:`cross_validate` fits the transform on each training fold and
  evaluates it at held-out events, with the scores of their nearest
  held-out neighbours in ``x`` as thresholds (any transform; used for IRGI);
- :func:`select_bandwidth` bins the sample once per candidate width and
  computes the kernel estimates of all folds from the binned weights without
  refitting (:class:`~rosenblatt.KDE` and
  :class:`~rosenblatt.transforms.grid_kde.GridKDE`), at quantiles of ``y``
  weighted by a pilot estimate of each event's conditional distribution;
  it searches the width from coarse to fine and places the choice at the
  minimum of a parabola through the three best scores (in ``log sigma_r``).
  A width at which negative weights leave some fold's estimate undefined
  (a kernel-weighted sum of the weights that is not positive) is skipped.

Given the levels of ``gamma`` an analysis cuts at, :func:`cross_validate`
also tests each value's fit for the property an ABCD estimate needs: on the
held-out events, the fraction passing each level must not depend on ``x``
(:mod:`rosenblatt.transforms._cut_dependence`, which gives the test and the
rates measured in toys). The choice is then the best-scoring value that
passes, or the best-scoring with a note (:meth:`Selection.cut_note`) where
none does; :attr:`Selection.cut_pvalues` records the test.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from rosenblatt._validation import check_int, is_int
from rosenblatt.exceptions import NegativeWeightError
from rosenblatt.transforms import _cut_dependence as cd
from rosenblatt.transforms import _local_polynomial as lp
from rosenblatt.transforms._brier import weighted_brier
from rosenblatt.typing import FloatArray, IntArray

if TYPE_CHECKING:
    from rosenblatt.transforms._base import ConditionalCDFTransform

__all__ = [
    "DEFAULT_FOLDS",
    "DEFAULT_THRESHOLDS",
    "Selection",
    "brier_thresholds",
    "cross_validate",
    "fold_labels",
    "select_bandwidth",
    "smallest_training_fold",
]


#: number of cross-validation folds
DEFAULT_FOLDS = 10
#: number of score thresholds (inner quantiles of the defining scores)
DEFAULT_THRESHOLDS = 64
#: held-out events scored at most by :func:`cross_validate` (summed over the folds)
MAX_HELD_OUT = 20_000
#: width of the pilot estimate that weighs the score thresholds, for 10**5 events
PILOT_SIGMA_R = 0.1
#: first, coarse grid of ``sigma_r`` of :func:`select_bandwidth`
COARSE_SIGMA_R = (0.04, 0.08, 0.16, 0.32, 0.64, 1.28)
#: factors of the refinements around the best after the coarse grid
REFINEMENT_STEPS = (2.0**0.5,)
#: the coarse grid is extended by factors of 2 up to these ends while the best is on its edge
SIGMA_R_LIMITS = (0.0025, 20.48)
#: ``y`` edges per unit of probability of the held-out test at the cut levels of
#: :func:`select_bandwidth` (more in the tails)
CUT_EDGES = 128


@dataclasses.dataclass(frozen=True)
class Selection:
    """The outcome of an automatic parameter choice.

    Attributes
    ----------
    parameter
        Name of the chosen parameter: ``"depth"``, ``"sigma_r"`` or
        ``"splits"`` (IRGI's levels per observable, a tuple of integers).
    values
        The values tried, increasing.
    scores
        Their cross-validated integrated Brier scores (lower is better).
    chosen
        The value used: the best tried value, or for a continuous parameter
        the minimum of the parabola through the best score and its neighbours;
        for IRGI's depth with cut levels, possibly a depth larger than every
        value tried, which no training fold could fit but the whole sample
        does (:func:`~rosenblatt.transforms._irgi_depth.select_depth`).
    folds, seed
        Number of folds and seed of their random assignment.
    n_thresholds
        Number of score thresholds.
    cut_levels
        The levels of ``gamma`` at which the held-out pass fraction of each
        value was tested for a dependence on ``x`` (empty where none was).
    cut_pvalues
        Per value, the p-value of that test at each level
        (:func:`~rosenblatt.transforms._cut_dependence.homogeneity_pvalue`);
        a value passes when every p-value is at least :attr:`cut_threshold`.
    """

    parameter: str
    values: tuple[Any, ...]
    scores: tuple[float, ...]
    chosen: Any
    folds: int
    seed: int
    n_thresholds: int
    cut_levels: tuple[float, ...] = ()
    cut_pvalues: tuple[tuple[float, ...], ...] = ()

    @property
    def cut_threshold(self) -> float:
        """The least p-value of a passing value at each level: :data:`ALPHA` over the levels."""
        return cd.ALPHA / max(len(self.cut_levels), 1)

    @property
    def cut_passes(self) -> tuple[bool, ...]:
        """Per value, whether its held-out pass fraction is independent of ``x`` at every level."""
        return tuple(min(p, default=1.0) >= self.cut_threshold for p in self.cut_pvalues)

    def failing_levels(self, value: Any) -> tuple[float, ...]:
        """The cut levels at which ``value``'s held-out pass fraction depends on ``x``."""
        if not self.cut_pvalues or value not in self.values:
            return ()
        pvalues = self.cut_pvalues[self.values.index(value)]
        return tuple(
            level
            for level, p in zip(self.cut_levels, pvalues, strict=True)
            if p < self.cut_threshold
        )

    def cut_note(self) -> str | None:
        """Why the choice does not close at the cut levels, or ``None`` where it may.

        A note where no value tried passes the test of the held-out pass
        fraction (:attr:`cut_pvalues`): the best-scoring one is then kept.
        """
        if not self.cut_pvalues or any(self.cut_passes):
            return None
        failing = self.failing_levels(self.chosen) or self.cut_levels
        levels = ", ".join(f"{level:g}" for level in failing)
        tried = ", ".join(f"{v:g}" if isinstance(v, float) else str(v) for v in self.values)
        return (
            f"{self.parameter}='auto': the held-out pass fraction of every {self.parameter} "
            f"tried ({tried}) depends on x at the cut level(s) {levels} "
            f"(p < {self.cut_threshold:.3g} in {cd.X_BINS} bins of x), where an ABCD estimate "
            f"is biased; the best-scoring, {self.chosen}, is kept"
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-compatible data, read back by :meth:`from_dict`."""
        data = self._to_dict()
        if self.cut_levels:
            data["cut_levels"] = [float(level) for level in self.cut_levels]
            data["cut_pvalues"] = [[float(p) for p in row] for row in self.cut_pvalues]
        return data

    def _to_dict(self) -> dict[str, Any]:
        if self.parameter == "splits":
            return {
                "parameter": self.parameter,
                "values": [[int(s) for s in v] for v in self.values],
                "scores": [float(v) for v in self.scores],
                "chosen": [int(s) for s in self.chosen],
                "folds": int(self.folds),
                "seed": int(self.seed),
                "n_thresholds": int(self.n_thresholds),
            }
        kind = int if self.parameter == "depth" else float
        return {
            "parameter": self.parameter,
            "values": [kind(v) for v in self.values],
            "scores": [float(v) for v in self.scores],
            "chosen": kind(self.chosen),
            "folds": int(self.folds),
            "seed": int(self.seed),
            "n_thresholds": int(self.n_thresholds),
        }

    @classmethod
    def from_dict(cls, data: Any) -> Selection:
        """Rebuild from :meth:`to_dict` output, checking it (:class:`~rosenblatt.SchemaError`)."""
        from rosenblatt._schema import SchemaError, check_array

        if not isinstance(data, dict):
            msg = f"selection must be an object, got {type(data).__name__}"
            raise SchemaError(msg)
        selection = (
            cls._splits_from_dict(data)
            if data.get("parameter") == "splits"
            else cls._number_from_dict(data)
        )
        if "cut_levels" not in data:
            return selection
        try:
            n_levels = len(data["cut_levels"])
            levels = check_array(data["cut_levels"], "selection cut_levels", (n_levels,), unit=True)
            pvalues = check_array(
                data["cut_pvalues"],
                "selection cut_pvalues",
                (len(selection.values), n_levels),
                unit=True,
            )
        except (KeyError, TypeError) as err:
            msg = f"malformed selection ({type(err).__name__}: {err})"
            raise SchemaError(msg) from err
        return dataclasses.replace(
            selection,
            cut_levels=tuple(levels.tolist()),
            cut_pvalues=tuple(tuple(row) for row in pvalues.tolist()),
        )

    @classmethod
    def _number_from_dict(cls, data: dict[str, Any]) -> Selection:
        """Rebuild a selection of a depth or a width, checking it."""
        from rosenblatt._schema import SchemaError, check_array

        try:
            n = len(data["values"])
            values = check_array(data["values"], "selection values", (n,), increasing=True)
            scores = check_array(data["scores"], "selection scores", (n,))
            chosen = check_array(data["chosen"], "selection chosen", ())
            parameter, folds, seed, n_thresholds = (
                data["parameter"],
                data["folds"],
                data["seed"],
                data["n_thresholds"],
            )
        except (KeyError, TypeError) as err:
            msg = f"malformed selection ({type(err).__name__}: {err})"
            raise SchemaError(msg) from err
        if parameter not in ("depth", "sigma_r"):
            msg = f"selection parameter must be 'depth', 'sigma_r' or 'splits', got {parameter!r}"
            raise SchemaError(msg)
        for name, value in (("folds", folds), ("seed", seed), ("n_thresholds", n_thresholds)):
            check_int(value, f"selection {name}", low=0, error=SchemaError)
        if n == 0:
            msg = "selection must hold the values tried"
            raise SchemaError(msg)
        if parameter == "depth":
            # a depth above every one tried resolves the cut levels on the whole sample alone
            if (
                np.any(values != np.round(values))
                or float(chosen) != round(float(chosen))
                or not (float(chosen) in values or float(chosen) > values[-1])
            ):
                msg = (
                    "selection of a depth must hold integers and choose one of them, or a "
                    "larger one"
                )
                raise SchemaError(msg)
            return cls(
                parameter,
                tuple(int(v) for v in values),
                tuple(scores.tolist()),
                int(chosen),
                folds,
                seed,
                n_thresholds,
            )
        if not values[0] <= float(chosen) <= values[-1]:
            msg = "selection chosen must lie within the values tried"
            raise SchemaError(msg)
        return cls(
            parameter,
            tuple(values.tolist()),
            tuple(scores.tolist()),
            float(chosen),
            folds,
            seed,
            n_thresholds,
        )

    @classmethod
    def _splits_from_dict(cls, data: dict[str, Any]) -> Selection:
        """Rebuild a selection of IRGI's levels per observable, checking it."""
        from rosenblatt._schema import SchemaError, check_array

        try:
            values = [tuple(v) for v in data["values"]]
            scores = check_array(data["scores"], "selection scores", (len(values),))
            chosen = tuple(data["chosen"])
            folds, seed, n_thresholds = data["folds"], data["seed"], data["n_thresholds"]
        except (KeyError, TypeError) as err:
            msg = f"malformed selection ({type(err).__name__}: {err})"
            raise SchemaError(msg) from err
        entries = [*values, chosen]
        k = len(chosen)
        if not 2 <= k <= 3 or any(
            len(v) != k or not all(is_int(s) and s >= 0 for s in v) for v in entries
        ):
            msg = "selection of splits must hold lists of 2 or 3 non-negative integers"
            raise SchemaError(msg)
        if values != sorted(set(values)) or chosen not in values:
            msg = "selection of splits must list distinct splits in order and choose one of them"
            raise SchemaError(msg)
        for name, value in (("folds", folds), ("seed", seed), ("n_thresholds", n_thresholds)):
            check_int(value, f"selection {name}", low=0, error=SchemaError)
        return cls(
            "splits",
            tuple(values),
            tuple(scores.tolist()),
            chosen,
            folds,
            seed,
            n_thresholds,
        )

    @property
    def best_index(self) -> int:
        """Index of the lowest score among :attr:`values`."""
        return int(np.argmin(self.scores))


def fold_labels(n_events: int, folds: int, seed: int) -> IntArray:
    """Fold of each event: a seeded random permutation, equal-sized folds (to one event)."""
    check_folds(folds, n_events)
    return np.asarray(np.random.default_rng(seed).permutation(n_events) % folds, dtype=np.intp)


def smallest_training_fold(n_events: int, folds: int) -> int:
    """Events in the smallest training fold of :func:`fold_labels` (the largest fold held out)."""
    return n_events - -(-n_events // folds)


def check_folds(folds: Any, n_events: int) -> int:
    """Validate a number of folds for a sample of ``n_events`` events."""
    folds = check_int(folds, "folds", low=2)
    if n_events < 2 * folds:
        msg = (
            f"too few events for {folds}-fold cross-validation: {n_events} defining events, "
            f"at least {2 * folds} are needed; give the parameter a value instead of 'auto'"
        )
        raise ValueError(msg)
    return int(folds)


def check_seed(seed: Any) -> int:
    """Validate a seed: a non-negative integer."""
    return check_int(seed, "seed", low=0)


def brier_thresholds(
    y: FloatArray,
    weight: FloatArray | None,
    n_thresholds: int = DEFAULT_THRESHOLDS,
    order: IntArray | None = None,
) -> FloatArray:
    """The inner weighted quantiles ``k / (n_thresholds + 1)`` of the scores, ties merged.

    ``order`` is ``numpy.argsort(y, kind="stable")`` when already known.
    """
    if order is None:
        order = np.argsort(y, kind="stable")
    cumulative = _cumulative(None if weight is None else weight[order], len(y))
    edges = lp.y_edges(y[order], cumulative, n_thresholds + 1)
    return edges[1:-1]


def cross_validate(
    make: Callable[[Any], ConditionalCDFTransform],
    values: Sequence[Any],
    x: FloatArray,
    y: FloatArray,
    weight: FloatArray | None,
    *,
    parameter: str,
    folds: int = DEFAULT_FOLDS,
    seed: int = 0,
    n_thresholds: int = DEFAULT_THRESHOLDS,
    skip_failures: bool = False,
    cut_levels: Sequence[float] | None = None,
) -> Selection:
    """Cross-validated integrated Brier score of ``make(value)`` for each value.

    Each fold is held out in turn; the transform is fitted on the others and
    scored on at most ``MAX_HELD_OUT / folds`` of the held-out events (a
    seeded random subset). The thresholds of an event are the scores of the
    ``n_thresholds`` held-out events nearest to it in ``x`` (itself left
    out): a sample of its conditional distribution, so that the score weighs
    ``y`` as the events do, and independent of both the event and the fit.
    The value with the lowest mean score is chosen; with ``cut_levels``, the
    best-scoring value whose held-out pass fraction at every level does not
    depend on ``x`` (:mod:`rosenblatt.transforms._cut_dependence`, tested on
    every held-out event with the fits the scores use), or the best-scoring
    where none passes (:meth:`Selection.cut_note` says so).

    Parameters
    ----------
    make
        Returns an unfitted transform for a parameter value.
    values
        Parameter values to try (numbers, increasing).
    x, y, weight
        The defining sample (validated, flat float64).
    parameter
        Name of the parameter, stored in the result.
    folds, seed, n_thresholds
        Number of folds, seed of their assignment, number of score thresholds.
    skip_failures
        Leave out the values for which a fit raises :class:`ValueError` on
        some training fold (for example an IRGI depth that too many tied
        ``x`` values forbid); the error is raised if every value fails.
    cut_levels
        Levels of ``gamma`` an analysis cuts at, or ``None``.
    """
    n = len(x)
    check_folds(folds, n)
    check_seed(seed)
    label = fold_labels(n, folds, seed)
    levels = np.asarray([] if cut_levels is None else cut_levels, dtype=np.float64)
    x_bin = cd.x_bins(x, weight) if len(levels) else np.zeros(n, dtype=np.intp)
    passing = np.zeros((len(values), len(levels), int(x_bin.max()) + 1))
    rng = np.random.default_rng([seed, 1])
    totals = np.zeros(len(values))
    failed: dict[int, ValueError] = {}
    held_weight = 0.0
    n_used = n_thresholds
    for fold in range(folds):
        train = label != fold
        held = np.flatnonzero(~train)
        held = held[np.argsort(x[held], kind="stable")]
        n_held = len(held)
        n_used = min(n_thresholds, n_held - 1)
        position = np.arange(n_held)
        n_scored = -(-MAX_HELD_OUT // folds)
        if n_held > n_scored:
            position = np.sort(rng.choice(n_held, n_scored, replace=False))
        start = np.clip(position - n_used // 2, 0, n_held - n_used - 1)
        window = start[:, None] + np.arange(n_used + 1)[None, :]
        window = window[window != position[:, None]].reshape(len(position), n_used)
        thresholds = y[held[window]]
        scored = held[position]
        wh = np.ones(len(scored)) if weight is None else weight[scored]
        held_weight += float(wh.sum())
        xq = np.repeat(x[scored], n_used)
        below = (y[scored][:, None] <= thresholds).astype(np.float64)
        for i, value in enumerate(values):
            if i in failed:
                continue
            try:
                transform = make(value).fit(
                    x[train], y[train], None if weight is None else weight[train]
                )
            except ValueError as err:
                if not skip_failures:
                    raise
                failed[i] = err
                continue
            gamma = transform.transform(xq, thresholds.ravel()).reshape(len(scored), n_used)
            totals[i] += float(np.dot(wh, ((gamma - below) ** 2).mean(axis=1)))
            if len(levels):
                passing[i] += _held_out_passing(transform, x, y, weight, held, x_bin, levels)
    kept = [i for i in range(len(values)) if i not in failed]
    if not kept:
        raise failed[0]
    scores = totals[kept] / held_weight
    selection = Selection(
        parameter,
        tuple(values[i] for i in kept),
        tuple(scores.tolist()),
        values[kept[int(np.argmin(scores))]],
        folds,
        seed,
        n_used,
    )
    if not len(levels):
        return selection
    return _with_cut_test(selection, passing[kept], levels, x_bin, weight)


def _with_cut_test(
    selection: Selection,
    passing: FloatArray,
    levels: FloatArray,
    x_bin: IntArray,
    weight: FloatArray | None,
) -> Selection:
    """``selection`` with the p-values of its values' held-out pass fractions, and its choice.

    ``passing`` is, per value, level and bin of ``x``, the summed weight of
    the held-out events with ``gamma >= level``. Where the best-scoring value
    fails and another passes, the choice is the best-scoring that passes;
    otherwise the selection's own choice stands (the best-scoring value, or
    the minimum of a parabola next to it).
    """
    w = np.ones(len(x_bin)) if weight is None else weight
    n_bins = passing.shape[2]
    total = np.bincount(x_bin, weights=w, minlength=n_bins).astype(np.float64)
    squares = np.bincount(x_bin, weights=w * w, minlength=n_bins).astype(np.float64)
    pvalues = tuple(
        tuple(cd.homogeneity_pvalue(row, total, squares) for row in value) for value in passing
    )
    selection = dataclasses.replace(
        selection, cut_levels=tuple(levels.tolist()), cut_pvalues=pvalues
    )
    order = np.argsort(selection.scores, kind="stable")
    passes = [i for i in order if selection.cut_passes[i]]
    if not passes or passes[0] == order[0]:
        return selection  # the best-scoring passes (or none does): its choice stands
    return dataclasses.replace(selection, chosen=selection.values[int(passes[0])])


def _held_out_passing(
    transform: ConditionalCDFTransform,
    x: FloatArray,
    y: FloatArray,
    weight: FloatArray | None,
    held: IntArray,
    x_bin: IntArray,
    levels: FloatArray,
) -> FloatArray:
    """Per level and bin of ``x``, the summed weight of the held-out events with ``gamma >= level``."""
    gamma = transform.transform(x[held], y[held])
    w = np.ones(len(held)) if weight is None else weight[held]
    n_bins = int(x_bin.max()) + 1
    return np.stack(
        [
            np.bincount(x_bin[held], weights=w * (gamma >= level), minlength=n_bins)
            for level in levels
        ]
    )


class _BinnedFolds:
    """Folds of a sample whose kernel estimates are computed from binned weight.

    The training estimate of each fold is the local-polynomial estimate from
    the binned weight of the other folds, on the shared thresholds; it is
    interpolated linearly in ``x`` to the held-out events as a fitted
    estimate is. The thresholds of a held-out event are weighted by a pilot
    estimate of its conditional distribution (see :meth:`_pilot_weights`).
    """

    def __init__(
        self,
        x: FloatArray,
        y: FloatArray,
        weight: FloatArray | None,
        *,
        degree: int,
        sigma_a: float,
        folds: int,
        seed: int,
        nodes_per_bandwidth: float,
        max_nodes: int,
        n_thresholds: int,
        y_order: IntArray | None,
    ) -> None:
        self.x, self.y, self.weight = x, y, weight
        self.degree, self.sigma_a, self.folds = degree, sigma_a, folds
        self.nodes_per_bandwidth, self.max_nodes = nodes_per_bandwidth, max_nodes
        self.label = fold_labels(len(x), folds, seed)
        self.thresholds = brier_thresholds(y, weight, n_thresholds, y_order)
        self.column = np.searchsorted(self.thresholds, y, side="right")
        self.event_weight = np.ones(len(x)) if weight is None else weight
        self.total_weight = float(self.event_weight.sum())
        # the bias of a width-h estimate falls as h**2 (degree 0, 1) or h**4 (2, 3):
        # its best width for the training size is larger by this factor
        exponent = 1.0 / 5.0 if degree < 2 else 1.0 / 9.0
        self.train_scale = (folds / (folds - 1)) ** exponent
        self.pilot, self.pilot_binning = self._pilot_weights()
        self.scores: dict[float, float] = {}
        self.skipped: dict[float, NegativeWeightError] = {}
        self._cut: tuple[FloatArray, IntArray] | None = None

    def _nodes(self, bandwidth: float) -> FloatArray:
        x_lo, x_hi = float(self.x.min()), float(self.x.max())
        spacing = max(bandwidth / self.nodes_per_bandwidth, (x_hi - x_lo) / (self.max_nodes - 1))
        return lp.node_grid(x_lo, x_hi, spacing, self.max_nodes)

    def _training_cdfs(
        self,
        binning: tuple[IntArray, FloatArray],
        n_nodes: int,
        matrices: list[Any],
        column: IntArray,
        n_edges: int,
        degree: int,
    ) -> FloatArray:
        """Each fold's training estimate, ``(folds, n_nodes, n_edges)``, monotone, not pinned."""
        mass, below = lp.fold_histograms(
            binning, column, self.weight, n_nodes, n_edges, self.label, self.folds
        )
        return lp.rearrange(
            lp.local_polynomial_folds(matrices, mass, below, degree), pin_ends=False
        )

    def _pilot_weights(self) -> tuple[FloatArray, tuple[IntArray, FloatArray]]:
        """Per fold and pilot node, the weight of each threshold; and the events' pilot binning.

        The pilot of a fold is the Gaussian-kernel estimate from the other
        folds, of width :data:`PILOT_SIGMA_R` (scaled to the sample size as
        ``N**(-1/5)``), of the probability that ``y`` falls between the
        midpoints around each threshold. The same for every candidate and
        independent of the held-out scores, it keeps the score proper while
        weighing ``y`` as the held-out events do.
        """
        t = self.thresholds
        middle = 0.5 * (t[1:] + t[:-1])
        bandwidth = PILOT_SIGMA_R * (len(self.x) / 1e5) ** (-0.2) * self.sigma_a
        column = np.searchsorted(middle, self.y, side="right")
        while True:
            nodes = self._nodes(bandwidth)
            binning = lp.linear_binning(self.x, nodes)
            matrices = lp.kernel_matrices(nodes, np.full(len(nodes), bandwidth), 1)
            try:
                cdf = self._training_cdfs(binning, len(nodes), matrices, column, len(middle), 0)
            except NegativeWeightError:
                # negative weights dominate some node of a fold: a wider pilot
                if not bandwidth < SIGMA_R_LIMITS[1] * self.sigma_a:
                    raise
                bandwidth *= 2.0
                continue
            return np.diff(cdf, axis=2, prepend=0.0, append=1.0), binning

    def cut_passing(self, sigma_r: float, levels: FloatArray, x_bin: IntArray) -> FloatArray:
        """Per level and bin of ``x``, the summed weight of the held-out events with ``gamma >= level``.

        ``gamma`` of a held-out event is its fold's training estimate of width
        ``sigma_r`` (as scored) at its ``x``, interpolated linearly in ``y``
        between :meth:`_cut_edges`, which are dense enough (every 1/128 of
        the events, and tails of ``2**-k``) that an event's edges are close
        to it at every level.
        """
        bandwidth = sigma_r * self.sigma_a * self.train_scale
        nodes = self._nodes(bandwidth)
        left, share = lp.linear_binning(self.x, nodes)
        matrices = lp.kernel_matrices(nodes, np.full(len(nodes), bandwidth), 2 * self.degree + 1)
        edges, column = self._cut_edges()
        cdf = self._training_cdfs(
            (left, share), len(nodes), matrices, column, len(edges), self.degree
        )
        last = len(edges) - 1

        def at(k: IntArray) -> FloatArray:
            k = np.clip(k, 0, last)
            return np.asarray(
                (1.0 - share) * cdf[self.label, left, k] + share * cdf[self.label, left + 1, k]
            )

        low_y = np.where(column > 0, edges[np.clip(column - 1, 0, last)], self.y.min())
        high_y = np.where(column <= last, edges[np.clip(column, 0, last)], self.y.max())
        low = np.where(column > 0, at(column - 1), 0.0)
        high = np.where(column <= last, at(column), 1.0)
        gap = high_y - low_y
        fraction = np.divide(self.y - low_y, gap, out=np.zeros_like(gap), where=gap > 0)
        gamma = low + np.clip(fraction, 0.0, 1.0) * (high - low)
        n_bins = int(x_bin.max()) + 1
        return np.stack(
            [
                np.bincount(x_bin, weights=self.event_weight * (gamma >= level), minlength=n_bins)
                for level in levels
            ]
        )

    def _cut_edges(self) -> tuple[FloatArray, IntArray]:
        """The ``y`` edges of :meth:`cut_passing` and each event's column among them."""
        if self._cut is None:
            n = len(self.y)
            ordered = np.sort(self.y)
            tails = 2.0 ** -np.arange(8, max(9, int(math.log2(n))))
            quantiles = np.concatenate((np.arange(1, CUT_EDGES) / CUT_EDGES, tails, 1.0 - tails))
            ranks = np.clip(np.round(quantiles * n).astype(np.intp), 0, n - 1)
            edges = np.unique(ordered[ranks])
            self._cut = (edges, np.searchsorted(edges, self.y, side="right"))
        return self._cut

    def score(self, sigma_r: float) -> float:
        """Cross-validated integrated Brier score of the estimate of width ``sigma_r``.

        Infinite where negative weights leave some fold's estimate undefined
        (the error is kept in :attr:`skipped`).
        """
        if sigma_r in self.scores:
            return self.scores[sigma_r]
        bandwidth = sigma_r * self.sigma_a * self.train_scale
        nodes = self._nodes(bandwidth)
        binning = lp.linear_binning(self.x, nodes)
        matrices = lp.kernel_matrices(nodes, np.full(len(nodes), bandwidth), 2 * self.degree + 1)
        try:
            cdf = self._training_cdfs(
                binning, len(nodes), matrices, self.column, len(self.thresholds), self.degree
            )
        except NegativeWeightError as err:
            self.skipped[sigma_r] = err
            self.scores[sigma_r] = math.inf
            return math.inf
        total = weighted_brier(
            cdf,
            self.pilot,
            self.label,
            binning[0],
            binning[1],
            self.pilot_binning[0],
            self.pilot_binning[1],
            self.column,
            self.event_weight,
        )
        result = total / self.total_weight
        self.scores[sigma_r] = result
        return result


def select_bandwidth(  # noqa: PLR0913 - the estimate's options and the search's
    x: FloatArray,
    y: FloatArray,
    weight: FloatArray | None,
    *,
    degree: int,
    sigma_a: float,
    folds: int = DEFAULT_FOLDS,
    seed: int = 0,
    nodes_per_bandwidth: float = 4.0,
    max_nodes: int = 20_000,
    n_thresholds: int = DEFAULT_THRESHOLDS,
    candidates: Sequence[float] | None = None,
    y_order: IntArray | None = None,
    cut_levels: Sequence[float] | None = None,
) -> Selection:
    """Choose the kernel width ``sigma_r`` of a binned local-polynomial estimate of degree ``degree``.

    Each fold's estimate is computed from the binned weight of the other folds
    (the weight of all folds minus its own), on a grid of
    ``nodes_per_bandwidth`` ``x`` nodes per kernel width, and scored at the
    held-out events with their exact ``x`` (linear interpolation between
    nodes, as the fitted estimate is evaluated). Each training fold holds
    ``(folds - 1) / folds`` of the sample, for which the best width is larger:
    the widths are scaled up accordingly while scoring.

    Without ``candidates``, ``sigma_r`` is searched on factors of 2 from
    :data:`COARSE_SIGMA_R` (extended while the best is on an edge), refined
    by factors of :data:`REFINEMENT_STEPS` around the best, and the choice
    is the minimum of the parabola in ``log sigma_r`` through the best score
    and its two neighbours. With ``candidates``, the best of those is chosen.
    ``y_order`` is ``numpy.argsort(y, kind="stable")`` when already known.

    A width at which negative weights make some fold's kernel-weighted sum
    of the weights not positive at a node is skipped: it is left out of the
    result, and the search goes on among wider ones.

    With ``cut_levels``, each width tried is tested, on the held-out events,
    for a pass fraction at the levels that depends on ``x``
    (:mod:`rosenblatt.transforms._cut_dependence`; the held-out ``gamma``
    from the binned estimates, ``_BinnedFolds.cut_passing``). Where the
    best-scoring width fails, the choice is the best-scoring width that
    passes; where none passes, the choice stands and
    :meth:`Selection.cut_note` says so.

    Raises
    ------
    NegativeWeightError
        If no width tried could be fitted on every fold.
    """
    n = len(x)
    check_folds(folds, n)
    check_seed(seed)
    binned = _BinnedFolds(
        x,
        y,
        weight,
        degree=degree,
        sigma_a=sigma_a,
        folds=folds,
        seed=seed,
        nodes_per_bandwidth=nodes_per_bandwidth,
        max_nodes=max_nodes,
        n_thresholds=n_thresholds,
        y_order=y_order,
    )
    span = float(x.max() - x.min()) * nodes_per_bandwidth / sigma_a
    smallest = span / (max_nodes - 1)  # finer widths need more nodes than allowed

    def feasible(value: float) -> bool:
        return value >= smallest

    if candidates is not None:
        values = sorted({float(v) for v in candidates})
        if not values or not all(math.isfinite(v) and v > 0 for v in values):
            msg = f"sigma_r candidates must be positive finite numbers, got {candidates!r}"
            raise ValueError(msg)
        for value in values:
            binned.score(value)
        chosen = min(values, key=binned.scores.__getitem__)
    else:
        chosen = _coarse_to_fine(binned, feasible)
    values = sorted(v for v in binned.scores if v not in binned.skipped)
    if not values:
        tried = ", ".join(f"{v:g}" for v in sorted(binned.skipped))
        msg = (
            f"no sigma_r could be fitted on every cross-validation fold (tried {tried}): "
            f"{binned.skipped[max(binned.skipped)]}"
        )
        raise NegativeWeightError(msg)
    selection = Selection(
        "sigma_r",
        tuple(values),
        tuple(binned.scores[v] for v in values),
        chosen,
        folds,
        seed,
        len(binned.thresholds),
    )
    levels = np.asarray([] if cut_levels is None else cut_levels, dtype=np.float64)
    if not len(levels):
        return selection
    x_bin = cd.x_bins(x, weight)
    passing = np.stack([binned.cut_passing(v, levels, x_bin) for v in values])
    return _with_cut_test(selection, passing, levels, x_bin, weight)


def _coarse_to_fine(binned: _BinnedFolds, feasible: Callable[[float], bool]) -> float:
    """Search ``sigma_r`` by factors of 2, then :data:`REFINEMENT_STEPS`, and a parabola through the best three."""
    grid = [v for v in COARSE_SIGMA_R if feasible(v)]
    if not grid:
        grid = [COARSE_SIGMA_R[-1]]
    for value in grid:
        binned.score(value)
    lo_limit, hi_limit = SIGMA_R_LIMITS
    while True:
        values = sorted(binned.scores)
        best = min(values, key=binned.scores.__getitem__)
        if math.isinf(binned.scores[best]):  # every width so far skipped: wider ones
            best = values[-1]
        if best == values[0] and best / 2 >= lo_limit and feasible(best / 2):
            binned.score(best / 2)
        elif best == values[-1] and best * 2 <= hi_limit:
            binned.score(best * 2)
        else:
            break
    for step in REFINEMENT_STEPS:
        best = min(binned.scores, key=binned.scores.__getitem__)
        for value in (best / step, best * step):
            if lo_limit <= value <= hi_limit and feasible(value):
                binned.score(value)
    values = sorted(binned.scores)
    scores = [binned.scores[v] for v in values]
    i = int(np.argmin(scores))
    if i == 0 or i == len(values) - 1 or not np.all(np.isfinite(scores[i - 1 : i + 2])):
        return values[i]
    u = np.log(values[i - 1 : i + 2])
    s = np.asarray(scores[i - 1 : i + 2])
    # vertex of the parabola through three points
    denominator = (u[0] - u[1]) * (u[0] - u[2]) * (u[1] - u[2])
    a = (u[2] * (s[1] - s[0]) + u[1] * (s[0] - s[2]) + u[0] * (s[2] - s[1])) / denominator
    b = (
        u[2] ** 2 * (s[0] - s[1]) + u[1] ** 2 * (s[2] - s[0]) + u[0] ** 2 * (s[1] - s[2])
    ) / denominator
    if not a > 0:
        return values[i]
    vertex = float(np.clip(-b / (2.0 * a), u[0], u[2]))
    return float(math.exp(vertex))


def _cumulative(weight: FloatArray | None, n: int) -> FloatArray:
    if weight is None:
        return np.arange(n + 1, dtype=np.float64)
    return np.concatenate(([0.0], np.cumsum(weight)))
