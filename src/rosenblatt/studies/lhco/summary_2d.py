"""The shape of the ``summary.json`` of the study with several protected observables (``lhco-2d``)."""

from __future__ import annotations

from typing import TypedDict

from rosenblatt.studies._common import StepSeconds, SummaryHeader
from rosenblatt.studies.lhco.summary import JsonValue

__all__ = [
    "Dependence",
    "FittedParams",
    "Lhco2dSummary",
    "MethodJson",
    "MethodMeasurement",
    "Profiles",
    "SliceProfile",
]

#: the parameters a fitted transform evaluates with (``fitted_params()``)
FittedParams = dict[str, JsonValue]


class Dependence(TypedDict):
    """dCor² of a score with one observable (or several jointly), beside its permutation floor.

    Attributes
    ----------
    value : float
        dCor² on the testing background.
    floor, floor_std : float
        Mean and standard deviation of dCor² over permutations of the score.
    p_value : float
        The permutation p-value.
    """

    value: float
    floor: float
    floor_std: float
    p_value: float


class MethodMeasurement(TypedDict):
    """One method on the testing sample, before its AUC is compared with the baseline's.

    Attributes
    ----------
    label : str
        Its name in the report.
    mode : str
        ``baseline``, ``1d``, ``sequential`` or ``joint``.
    auc : float
        AUC of its score.
    dcc : dict of Dependence
        Per protected observable, and ``joint`` for all of them.
    fit_seconds : float
        Wall time of its fit.
    params : dict, list of dict or None
        What the fit chose (per step for a sequence; ``None`` for the baseline).
    """

    label: str
    mode: str
    auc: float
    dcc: dict[str, Dependence]
    fit_seconds: float
    params: FittedParams | list[FittedParams] | None


class MethodJson(MethodMeasurement):
    """One method's entry of ``methods``: its :class:`MethodMeasurement` and ``auc_cost``.

    ``auc_cost`` is the baseline's AUC minus the method's.
    """

    auc_cost: float


class SliceProfile(TypedDict):
    """Mean score and its standard error in equal-occupancy bins of the second observable.

    Attributes
    ----------
    x : list of float
        Each bin's mean of the second observable.
    mean, error : list of float
        Each bin's mean score and its standard error.
    """

    x: list[float]
    mean: list[float]
    error: list[float]


class Profiles(TypedDict):
    """The testing background's profiles in three slices of the first observable.

    Attributes
    ----------
    slice_edges : list of float
        The four edges of the slices.
    profiles : dict of list of SliceProfile
        Per method, one profile per slice.
    """

    slice_edges: list[float]
    profiles: dict[str, list[SliceProfile]]


class Lhco2dSummary(SummaryHeader):
    """The ``summary.json`` of ``study: lhco-2d``.

    The header of every study (:class:`~rosenblatt.studies._common.SummaryHeader`), the protected observables,
    the sample sizes, the classifier scan and its best baseline, the sizes of
    the defining and testing background, the permutations of the floors, one
    :class:`MethodJson` per method, the :class:`Profiles` and the wall time of
    each step.
    """

    protected: list[str]
    sizes: dict[str, dict[str, int]]
    scan: str
    best_model: str
    n_defining: int
    n_testing_background: int
    permutations: int
    methods: dict[str, MethodJson]
    profiles: Profiles
    step_seconds: StepSeconds
