"""The fairness study's ``summary.json`` as typed mappings, and the scores its figures draw.

The keys are a public format (``tests/summary_keys.json`` records them); the study
(:mod:`rosenblatt.studies.fairness.study`) writes them and its report
(:mod:`rosenblatt.studies.fairness.report`) reads them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypedDict

from rosenblatt.studies._common import ClaimJson, StepSeconds, SummaryHeader
from rosenblatt.typing import FloatArray, Int64Array, IntArray

__all__ = [
    "ArrestsJson",
    "ArrestsScores",
    "DigitsJson",
    "DigitsRow",
    "DigitsScores",
    "FairnessSummary",
    "MethodRow",
]


class _MethodRowBase(TypedDict):
    """The entries of :class:`MethodRow` that every method has."""

    name: str
    label: str
    kind: str
    raw: str | None
    seconds: float
    auc: float
    auc_sd: float
    auc_folds: list[float]
    dcc: float
    dcc_sd: float
    dcc_floor: float
    dcc_floor_std: float
    p_value: float
    demographic_parity: list[float]
    demographic_parity_sd: list[float]
    equalised_odds: list[float]
    equalised_odds_sd: list[float]
    tpr: list[float]
    tpr_sd: list[float]
    fpr: list[float]
    fpr_sd: list[float]


class MethodRow(_MethodRowBase, total=False):
    """One method's row of the arrests: its figures of merit and their bootstrap sd.

    The spreads (``demographic_parity``, ``equalised_odds``, ``tpr``, ``fpr``)
    hold one value per working point. ``auc_cost`` and its sd, against the raw
    classifier the method starts from, are there when it has one.
    """

    auc_cost: float
    auc_cost_sd: float


class ArrestsJson(TypedDict):
    """The arrests section of ``summary.json``: the data, the settings and every method's row.

    ``group_rates`` holds, per method and working point (``"0.2"``), the
    positive rate of every age group.
    """

    n_people: int
    positive_fraction: float
    folds: int
    inner_cv: dict[str, int | None]
    bootstrap: int
    permutations: int
    age_edges: list[float]
    group_sizes: list[int]
    working_points: list[float]
    methods: list[MethodRow]
    group_rates: dict[str, dict[str, list[float]]]


class DigitsRow(TypedDict):
    """A digits score: its AUC (bootstrap sd) and dCor² with the ink beside its floor."""

    auc: float
    auc_sd: float
    dcc_negative: float
    dcc_negative_floor: float
    dcc_negative_floor_std: float
    p_value_negative: float
    dcc_all: float
    dcc_all_floor: float


class DigitsJson(TypedDict):
    """The digits section of ``summary.json``: the classes, and the raw and decorrelated scores."""

    classes: list[int]
    n_images: int
    n_negative: int
    auc_ink: float
    raw: DigitsRow
    decorrelated: DigitsRow


class FairnessSummary(SummaryHeader):
    """The fairness study's ``summary.json``; ``step_seconds`` is the wall time of each step."""

    seed: int
    arrests: ArrestsJson
    digits: DigitsJson
    claims: list[ClaimJson]
    step_seconds: StepSeconds


@dataclass(frozen=True, slots=True)
class ArrestsScores:
    """The arrests' out-of-fold score of every method, the age, the label and the age group."""

    scores: dict[str, FloatArray]
    x: FloatArray
    y: Int64Array
    groups: IntArray


@dataclass(frozen=True, slots=True)
class DigitsScores:
    """The digits' out-of-fold raw and decorrelated scores, the ink and the label."""

    scores: dict[str, FloatArray]
    ink: FloatArray
    y: Int64Array
