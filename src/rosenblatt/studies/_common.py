"""What every study shares: timed steps, claims with one verdict rule, numbers with their
uncertainty, Markdown tables built from rows given as data, and the files every run writes:
``summary.json``, which opens with the same header in every study (:func:`summary_header`),
and ``timings.json``, the wall time of each step (:meth:`Steps.write`).

The verdict rule
----------------
A claim is written as a *margin*, the amount by which it holds (positive: it holds on the
point estimate), with the bootstrap standard deviation of that margin. It **held** when the
margin is above two standard deviations, **did not hold** when it is below minus two, and is
**not decidable** in between, or when an uncertainty is expected but the run has none. A
claim that carries no statistical uncertainty by its nature (a chosen parameter, an exact
count, a bound on a number the study does not bootstrap) is decided by the sign of its margin.
A claim tested by a p-value uses the same level: a p-value below :data:`ALPHA`, the two-sided
tail beyond :data:`SIGNIFICANCE` standard deviations, is a significant difference.
"""

from __future__ import annotations

import json
import logging
import math
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypedDict, TypeVar

import numpy as np

from rosenblatt._atomic import write_text
from rosenblatt._interrupt import step as interrupt_step

__all__ = [
    "ALPHA",
    "SIGNIFICANCE",
    "Claim",
    "ClaimJson",
    "Row",
    "StepSeconds",
    "Steps",
    "SummaryHeader",
    "Verdict",
    "claim_lines",
    "decide",
    "markdown_table",
    "pm",
    "rows_table",
    "strict_json",
    "summary_header",
    "verdict_of",
    "verdict_reason",
    "write_summary",
]

_T = TypeVar("_T")

#: a difference counts beyond this many bootstrap standard deviations
SIGNIFICANCE = 2.0
#: the two-sided tail probability beyond :data:`SIGNIFICANCE` standard deviations (0.0455)
ALPHA = math.erfc(SIGNIFICANCE / math.sqrt(2.0))

Verdict = Literal["held", "did not hold", "not decidable"]

#: a verdict as ``summary.json`` writes it in a claim's ``held``
_HELD: dict[str, bool | None] = {"held": True, "did not hold": False, "not decidable": None}


def decide(margin: float, sd: float | None) -> Verdict:
    """The verdict on a claim that holds by ``margin``, of bootstrap standard deviation ``sd``.

    Parameters
    ----------
    margin
        How much the claim holds by (positive: it holds on the point estimate).
    sd
        The standard deviation of ``margin``; ``None`` for a claim without statistical
        uncertainty, decided by the sign of ``margin``. A missing (NaN) or zero
        standard deviation leaves the claim not decidable.

    Returns
    -------
    str
        ``"held"``, ``"did not hold"`` or ``"not decidable"``.
    """
    if sd is None:
        return "held" if margin >= 0 else "did not hold"
    if not math.isfinite(sd) or sd <= 0 or not math.isfinite(margin):
        return "not decidable"
    if margin > SIGNIFICANCE * sd:
        return "held"
    if margin < -SIGNIFICANCE * sd:
        return "did not hold"
    return "not decidable"


def verdict_reason(margin: float, sd: float | None, held: str, failed: str) -> str:
    """Why :func:`decide` gave its verdict: ``held`` or ``failed`` by so many sd, or within 2 sd."""
    if sd is None:
        return held if margin >= 0 else failed
    if not math.isfinite(sd) or sd <= 0:
        return "no bootstrap uncertainty for this difference"
    z = margin / sd
    if z > SIGNIFICANCE:
        return f"{held} by {z:.1f} sd"
    if z < -SIGNIFICANCE:
        return f"{failed} by {-z:.1f} sd"
    return f"difference {margin:+.3g} is {abs(z):.1f} sd, within {SIGNIFICANCE:g} sd"


class ClaimJson(TypedDict):
    """A claim as ``summary.json`` writes it: ``held`` is true, false, or null when not decidable.

    ``value`` holds the numbers behind the claim as the study gives them: text as its
    report prints them (lhco) or numbers (blobs, fairness).
    """

    claim: str
    held: bool | None
    value: Any


@dataclass(frozen=True)
class Claim:
    """A claim of a study checked on its sample, its verdict by :func:`decide`.

    Parameters
    ----------
    claim
        What is claimed, in words.
    value
        The numbers behind it (text as the report prints them, or numbers).
    margin
        How much the claim holds by (positive: it holds on the point estimate).
    uncertainty
        The bootstrap standard deviation of ``margin`` (``None``: none by nature).
    """

    claim: str
    value: Any
    margin: float
    uncertainty: float | None = None

    @property
    def verdict(self) -> Verdict:
        """``held``, ``did not hold`` or ``not decidable``."""
        return decide(self.margin, self.uncertainty)

    def to_json(self) -> ClaimJson:
        """``{claim, held, value}``: ``held`` is true, false, or null when not decidable."""
        return {"claim": self.claim, "held": _HELD[self.verdict], "value": self.value}


def verdict_of(entry: Mapping[str, Any]) -> Verdict:
    """The verdict of a claim as ``summary.json`` writes it (``held``: true, false or null)."""
    held = entry.get("held")
    return "not decidable" if held is None else ("held" if held else "did not hold")


def claim_lines(claims: Iterable[Mapping[str, Any]], with_value: bool = True) -> str:
    """The claims of a summary as a Markdown list, each with its verdict in bold."""
    return "\n".join(
        f"- **{verdict_of(c)}**: {c['claim']}" + (f" ({c['value']})" if with_value else "")
        for c in claims
    )


def pm(value: float | None, err: float | None, fmt: str = ".4f") -> str:
    """``value ± err`` formatted with ``fmt`` (``–`` for no value, the value alone without error).

    A sign in ``fmt`` (``+.3f``) applies to the value only.
    """
    if value is None:
        return "–"
    if err is None or not math.isfinite(err):
        return format(value, fmt)
    return f"{format(value, fmt)} ± {format(err, fmt.lstrip('+'))}"


@dataclass(frozen=True)
class Row:
    """A row of a report's table: ``label`` and, per column, ``pm(entry[key], entry[err_key])``.

    ``err_key`` may be ``None`` (the value alone); ``fmt`` is the format of both.
    """

    label: str
    key: str
    err_key: str | None = None
    fmt: str = ".3g"

    def cell(self, entry: Mapping[str, Any]) -> str:
        """This row's cell for one column's ``entry`` (a dotted key reaches into nested entries)."""
        err = _lookup(entry, self.err_key, required=False) if self.err_key is not None else None
        return pm(_lookup(entry, self.key), err, self.fmt)


def _lookup(entry: Mapping[str, Any], key: str, required: bool = True) -> Any:
    """``entry[a][b]`` for ``key = "a.b"``; a missing part is a ``KeyError``, or ``None``."""
    value: Any = entry
    for part in key.split("."):
        if not isinstance(value, Mapping) or part not in value:
            if required:
                raise KeyError(key)
            return None
        value = value[part]
    return value


def markdown_table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    """A Markdown table of ``header`` and ``rows`` (each a sequence of cell texts)."""

    def line(cells: Sequence[str]) -> str:
        return "|" + "|".join(f" {c} " if c else " " for c in cells) + "|"

    return "\n".join([line(header), "|---" * len(header) + "|", *(line(row) for row in rows)])


def rows_table(
    header: Sequence[str], rows: Iterable[Row | Sequence[str]], entries: Sequence[Mapping[str, Any]]
) -> str:
    """A table with one column per entry: each :class:`Row` rendered on every entry.

    A row given as a sequence of texts is taken as it is (label first).
    """
    cells = [
        [row.label, *(row.cell(e) for e in entries)] if isinstance(row, Row) else list(row)
        for row in rows
    ]
    return markdown_table(header, cells)


class Steps:
    """A study's named steps, each logged and timed (wall time, seconds).

    A step that processes events says how many (:meth:`count`); it then logs its
    events per second when it ends, and :attr:`events` and :meth:`rate` keep them.

    Parameters
    ----------
    names
        The study's steps, in order (for the log's "step i of n").
    logger
        Where "step i of n" and each step's time are logged.
    digits
        Seconds rounded to this many decimals (``None``: not rounded).
    """

    def __init__(
        self,
        names: Sequence[str] = (),
        logger: logging.Logger | None = None,
        digits: int | None = None,
    ) -> None:
        self.names = tuple(names)
        self.log = logger or logging.getLogger("rosenblatt.studies")
        self.digits = digits
        self.seconds: dict[str, float] = {}
        self.events: dict[str, int] = {}
        # the wall times unrounded: a step shorter than the rounding still has a rate
        self._wall: dict[str, float] = {}

    def count(self, name: str, events: int) -> None:
        """Add ``events`` to the events step ``name`` processed (called within the step)."""
        self.events[name] = self.events.get(name, 0) + int(events)

    def rate(self, name: str) -> float | None:
        """Events per second of step ``name``; ``None`` without a count or a positive time.

        The time is the step's wall time before rounding to ``digits``.
        """
        seconds = self._wall.get(name, self.seconds.get(name))
        if name not in self.events or not seconds:
            return None
        return self.events[name] / seconds

    def _log_rate(self, name: str) -> None:
        rate = self.rate(name)
        if rate is not None:
            per_second = f"{rate:,.0f}" if rate >= 100 else f"{rate:.3g}"
            self.log.info(
                "step %s: %d events in %.1f s, %s events/s",
                name,
                self.events[name],
                self._wall.get(name, self.seconds[name]),
                per_second,
            )

    @contextmanager
    def timed(self, name: str) -> Iterator[None]:
        """Keep the wall time of the ``with`` block under ``name`` (when it ends normally).

        A Ctrl-C within the block is marked with ``name``: the command line names the step.
        """
        start = time.perf_counter()
        with interrupt_step(name):
            yield
        seconds = time.perf_counter() - start
        self._wall[name] = seconds
        self.seconds[name] = round(seconds, self.digits) if self.digits is not None else seconds
        self._log_rate(name)

    def run(
        self,
        name: str,
        function: Callable[..., _T],
        *args: Any,
        events: Callable[[_T], int] | None = None,
    ) -> _T:
        """Run step ``name`` as ``function(*args)``, logging and timing it.

        ``events``, given the step's result, says how many events the step
        read or processed: they are counted (:meth:`count`) within the step,
        so that its end logs them and its events per second.
        """
        self.log.info("step %d of %d: %s", len(self.seconds) + 1, len(self.names), name)
        with self.timed(name):
            result = function(*args)
            if events is not None:
                self.count(name, events(result))
        self.log.info("step %s done in %.1f s", name, self.seconds[name])
        return result

    def write(self, folder: Path) -> Path:
        """Write ``timings.json`` into ``folder``: each step's wall time so far; return its path.

        Every study writes this one record of its steps, ``{step: seconds}`` in the order
        the steps ran; its ``summary.json`` holds the same under ``step_seconds``.
        """
        path = folder / "timings.json"
        write_text(path, json.dumps(self.seconds, indent=2))
        return path


#: the wall time of each step of a run, in seconds, in the order the steps ran
StepSeconds = dict[str, float]


class SummaryHeader(TypedDict):
    """The keys every study's ``summary.json`` opens with.

    Attributes
    ----------
    study : str
        The configuration's ``study:``.
    name : str
        The run's name (the configuration's ``name``).
    rosenblatt_version : str
        The version of the package that ran it.
    configuration_file : str
        The configuration file, named the same on every machine
        (:func:`rosenblatt.studies.config.config_label`).
    """

    study: str
    name: str
    rosenblatt_version: str
    configuration_file: str


def summary_header(study: str, name: str, source: str | Path) -> SummaryHeader:
    """The opening keys of the ``summary.json`` of run ``name`` of ``study``, read from ``source``."""
    from rosenblatt import __version__
    from rosenblatt.studies.config import config_label

    return {
        "study": study,
        "name": name,
        "rosenblatt_version": __version__,
        "configuration_file": config_label(source),
    }


def strict_json(value: Any) -> Any:
    """``value`` with every non-finite float replaced by ``None`` (strict JSON)."""
    if isinstance(value, dict):
        return {str(k): strict_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [strict_json(v) for v in value]
    if isinstance(value, (float, np.floating)):
        return float(value) if math.isfinite(value) else None
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.bool_):
        return bool(value)
    return value


def write_summary(folder: Path, summary: Mapping[str, Any], strict: bool = False) -> Path:
    """Write ``summary.json`` into ``folder`` (numpy numbers as floats); return its path.

    ``strict`` refuses NaN and infinities (they are not JSON).
    """
    path = folder / "summary.json"
    text = json.dumps(summary, indent=2, default=float, allow_nan=not strict)
    write_text(path, text)
    return path
