"""The passes of a mergeable fit after the first: which tasks each pass runs, and what follows.

:func:`skim_passes` is a generator: it yields a :class:`Pass` (a description
and the tasks to run, on any executor), receives the merged results
``{task key: result}`` and returns the fitted transforms. Every member of a
fit (the sample's weights, and each bootstrap replica's) moves through the
same stages, in step with the others:

1. *order*: the events are gathered by group of the ordering column,
   sorted and written once (shared by every member); each group reports
   its totals, the sums the plan asked for, and the windows of the members
   whose group offsets the histogram already gives (unit weights, the
   sample's own weights);
2. *windows*: only where a member's windows are missing (a replica, whose
   offsets follow from the totals of stage 1, or an interval that was too
   narrow), from the sorted groups;
3. *last*: the plan's tasks (IRGI's columns or slabs, GridKDE's bins).

IRGI and GridKDE take two passes here, a bootstrap ensemble three; a missing
window adds one. A replica that cannot be fitted is replaced by the next
draw, which starts with a pass of totals.
"""

from __future__ import annotations

import copy
from collections.abc import Generator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from rosenblatt.exceptions import NotCovered
from rosenblatt.outofcore._first_pass import Facts
from rosenblatt.outofcore._order import Cumulative, Group
from rosenblatt.outofcore._plans import Plan, Sample
from rosenblatt.outofcore._tasks import (
    GroupReport,
    Layout,
    Member,
    MemberAsk,
    SortTask,
    WindowTask,
)
from rosenblatt.transforms._base import ConditionalCDFTransform
from rosenblatt.typing import FloatArray

__all__ = ["Fitted", "Pass", "Replicas", "skim_passes"]


#: most passes of windows a member may need after the first
MAX_WINDOW_PASSES = 4


@dataclass(frozen=True)
class Pass:
    """One pass: what it computes, and its tasks."""

    description: str
    tasks: list[Any]


@dataclass(frozen=True)
class Replicas:
    """The bootstrap replicas of an ensemble fit: how many, their seed, how many draws may fail."""

    n: int
    seed: int
    most_failures: int


@dataclass(frozen=True)
class Fitted:
    """What the passes fitted: the nominal transform, the replicas with their draws, the failed draws."""

    nominal: ConditionalCDFTransform
    replicas: list[ConditionalCDFTransform]
    draws: list[int]
    failed: list[int]
    spec: Any


@dataclass
class _Member:
    """One member's way through the stages."""

    member: Member
    sample: Sample | None = None
    offsets: FloatArray | None = None
    cumulative: Cumulative | None = None
    moments: FloatArray | None = None
    asked: FloatArray | None = None
    stage: str = "order"
    window_passes: int = 0
    spec: Any = None
    keys: list[str] = field(default_factory=list)
    result: ConditionalCDFTransform | None = None


def nominal_sample(facts: Facts) -> Sample:
    """The sample under its own weights, from the first pass."""
    weights = facts.weights
    return Sample(
        facts.n,
        weights.weighted,
        weights.total,
        weights.total2,
        weights.total_abs,
        weights.carrying,
        weights.largest,
        float(weights.weight_x[0]),
        weights.lowest < 0,
    )


def _replica_sample(n: int, stats: FloatArray) -> Sample:
    """A replica's sample from the groups' statistics (one row per group, in order)."""
    return Sample(
        n,
        True,
        float(np.cumsum(stats[:, 0])[-1]),
        float(stats[:, 1].sum()),
        float(stats[:, 2].sum()),
        int(stats[:, 3].sum()),
        float(max(abs(stats[:, 4].min()), abs(stats[:, 5].max()))),
        float(stats[:, 6].sum()),
        bool(stats[:, 4].min() < 0),
    )


class _Passes:
    """The state of the passes over the skims (see :func:`skim_passes`)."""

    def __init__(
        self,
        plan: Plan,
        facts: Facts,
        layout: Layout,
        groups: list[Group],
        replicas: Replicas | None,
        into: ConditionalCDFTransform | None,
    ) -> None:
        self.plan, self.facts, self.layout, self.groups = plan, facts, layout, groups
        self.into = into
        self.replicas = replicas
        self.members = [_Member(Member(), nominal_sample(facts))]
        self.failed: list[int] = []
        self.next_draw = 0
        for _ in range(0 if replicas is None else replicas.n):
            self._add_replica("order")

    def _add_replica(self, stage: str) -> None:
        assert self.replicas is not None
        self.members.append(_Member(Member(self.next_draw, self.replicas.seed), stage=stage))
        self.next_draw += 1

    # ------------------------------------------------------------- passes
    def first(self) -> Pass:
        """Sort every group; the sample's own windows come along."""
        nominal = self.members[0]
        assert nominal.sample is not None
        nominal.asked = self.plan.intervals(nominal.sample)
        tasks = [
            SortTask(
                f"group:{g.index}", self.layout, g, tuple(self._ask(m, g) for m in self.members)
            )
            for g in self.groups
        ]
        return Pass(f"{self.plan.name}: events ordered by {self._axis()}", tasks)

    def next(self) -> Pass | None:
        """The next pass: windows and totals where members need them, and last tasks."""
        asking = [m for m in self.members if m.stage in ("stats", "windows")]
        tasks: list[Any] = []
        labels = []
        if asking:
            for g in self.groups:
                asks = tuple(self._ask(m, g) for m in asking)
                tasks.append(WindowTask(f"group:{g.index}", self.layout, g, asks))
            labels.append(f"order statistics of {self._axis()}")
        for m in self.members:
            if m.stage == "last" and m.sample is not None:
                made = self.plan.tasks(m.spec, self.layout, self.groups, m.member, m.sample)
                m.keys = [t.key for t in made]
                tasks += made
                labels.append(self.plan.last)
        if not tasks:
            return None
        return Pass(f"{self.plan.name}: {', '.join(dict.fromkeys(labels))}", tasks)

    def _axis(self) -> str:
        order = self.plan.order
        return "y" if order < 0 else ("x" if self.facts.k == 1 else f"x[{order}]")

    def _ask(self, m: _Member, group: Group) -> MemberAsk:
        """What ``group`` reports for ``m``: totals, moments if missing, windows if asked."""
        moments = None
        if m.moments is None:
            moments = self.plan.moments(m.sample or nominal_sample(self.facts))
        if m.asked is None or m.sample is None:
            return MemberAsk(m.member, moments)
        if m.offsets is None:
            offset = group.weight_before if m.sample.weighted else float(group.start)
        else:
            offset = float(m.offsets[group.index])
        widen = (m.sample.largest if m.sample.weighted else 1.0) + m.sample.margin
        return MemberAsk(m.member, moments, m.asked, offset, widen)

    # ----------------------------------------------------------- results
    def absorb(self, results: dict[str, Any]) -> None:
        """Take in a pass's results and move every member on."""
        keys = [f"group:{g.index}" for g in self.groups]
        if all(key in results for key in keys):
            reports: list[GroupReport] = [results[key] for key in keys]
            for m in self.members:
                if m.member.name in reports[0].stats:
                    self._absorb_reports(m, reports)
        for m in self.members:
            if m.stage == "last" and m.keys and all(key in results for key in m.keys):
                self._finish(m, [results[key] for key in m.keys])
        for m in self.members:
            if m.stage == "resolve":
                self._resolve(m)

    def _absorb_reports(self, m: _Member, reports: list[GroupReport]) -> None:
        name = m.member.name
        stats = np.stack([r.stats[name] for r in reports])
        if m.offsets is None:
            self._set_offsets(m, stats)
        if m.moments is None and name in reports[0].moments:
            m.moments = np.sum([r.moments[name] for r in reports], axis=0)
        assert m.cumulative is not None
        assert m.offsets is not None
        found = [
            (g, r.windows[name])
            for g, r in zip(self.groups, reports, strict=True)
            if name in r.windows
        ]
        for g, w in found:
            offset = m.offsets[g.index]
            m.cumulative.add(w.position, offset + w.before, offset + w.after, w.value)
        if found and m.asked is not None:
            m.cumulative.cover(m.asked)
        m.stage = "resolve"

    def _set_offsets(self, m: _Member, stats: FloatArray) -> None:
        """Exact offsets from the groups' totals; windows chosen on estimates must agree with them."""
        if m.member.draw >= 0:
            m.sample = _replica_sample(self.facts.n, stats)
        assert m.sample is not None
        ends = np.cumsum(stats[:, 0])
        m.offsets = np.concatenate(([0.0], ends[:-1]))
        largest = m.sample.largest if m.sample.weighted else 1.0
        m.cumulative = Cumulative(self.facts.n, float(ends[-1]), largest)
        if m.asked is not None:
            guessed = np.array(
                [g.weight_before if m.sample.weighted else float(g.start) for g in self.groups]
            )
            if np.abs(guessed - m.offsets).max() > m.sample.margin:
                m.asked = None

    def _resolve(self, m: _Member) -> None:
        assert m.sample is not None
        assert m.cumulative is not None
        if m.asked is None and not len(m.cumulative.covered):
            m.asked, m.stage = self.plan.intervals(m.sample), "windows"
            return
        try:
            m.spec = self.plan.resolve(m.sample, m.cumulative, m.moments)
        except NotCovered as missing:
            m.window_passes += 1
            if m.window_passes > MAX_WINDOW_PASSES:
                msg = (
                    f"the order statistics of {self._axis()} were not found after "
                    f"{MAX_WINDOW_PASSES} passes of windows"
                )
                raise RuntimeError(msg) from missing
            m.asked, m.stage = missing.intervals, "windows"
            return
        except ValueError as err:
            self._fail(m, err)
            return
        m.stage = "last"

    def _finish(self, m: _Member, results: list[Any]) -> None:
        assert m.sample is not None
        into = self.into if m.member.draw < 0 and self.into is not None else None
        if into is None:
            into = copy.deepcopy(self.plan.template)
        try:
            m.result = self.plan.finish(m.spec, results, m.sample, into)
        except ValueError as err:
            self._fail(m, err)
            return
        m.stage = "done"

    def _fail(self, m: _Member, err: ValueError) -> None:
        """The sample's own fit fails the whole fit; a replica's is replaced by the next draw."""
        if m.member.draw < 0 or self.replicas is None:
            raise err
        m.stage = "failed"
        self.failed.append(m.member.draw)
        if len(self.failed) > self.replicas.most_failures:
            done = sum(r.stage == "done" for r in self.members[1:])
            msg = (
                f"{len(self.failed)} bootstrap draws of {type(self.plan.template).__name__} could "
                f"not be fitted (more than max_refits = {self.replicas.most_failures}; {done} of "
                f"{self.replicas.n} replicas fitted); the last error: {err}"
            )
            raise ValueError(msg) from err
        self._add_replica("stats")

    def fitted(self) -> Fitted:
        """The fitted members."""
        nominal = self.members[0].result
        assert nominal is not None
        done = sorted(
            (m for m in self.members[1:] if m.result is not None), key=lambda m: m.member.draw
        )
        return Fitted(
            nominal,
            [m.result for m in done if m.result is not None],
            [m.member.draw for m in done],
            sorted(self.failed),
            self.members[0].spec,
        )


def skim_passes(
    plan: Plan,
    facts: Facts,
    layout: Layout,
    groups: list[Group],
    replicas: Replicas | None = None,
    into: ConditionalCDFTransform | None = None,
) -> Generator[Pass, dict[str, Any], Fitted]:
    """The passes over the skims (see the module notes): yield each, receive its results.

    The sample's own fit is stored in ``into`` if given (else in a copy of
    the plan's estimator), every replica's in a copy.
    """
    state = _Passes(plan, facts, layout, groups, replicas, into)
    results = yield state.first()
    state.absorb(results)
    while (following := state.next()) is not None:
        results = yield following
        state.absorb(results)
    return state.fitted()
