"""The ABCD analysis study's data: a pass's merged output and ``summary.json``."""

from __future__ import annotations

from typing import TYPE_CHECKING, TypedDict

from rosenblatt.studies._common import StepSeconds, SummaryHeader

if TYPE_CHECKING:
    from hist import Hist
    from hist.storage import Weight

    from rosenblatt.studies.abcd.estimate import EstimateJson
    from rosenblatt.studies.abcd.passfail import PassFailNumbers
    from rosenblatt.studies.abcd.preflight import SkippedFile

__all__ = [
    "AbcdSummary",
    "AbcdSummaryCore",
    "ClosureJson",
    "ClosureNumbers",
    "CutflowJson",
    "DatasetJson",
    "LikelihoodJson",
    "PassOutput",
]


class PassOutput(TypedDict, total=False):
    """The merged output of a pass of the study's processor over datasets.

    Attributes
    ----------
    abcd, plane : dict
        Per variant, its ABCD histogram and its ``(x, score)`` plane, over
        ``dataset``, ``x``, ``y`` and ``process``.
    passfail : dict
        With ``passfail:``, per variant, its ABCD histogram on the pass/fail
        fit's bins of ``x``.
    replicas : dict
        Per bootstrap replica of a transform (``<variant>#<k>``), its ABCD histogram.
    resampled : dict
        Per keyed replica, its ABCD histogram of the events weighted by the
        replica's keyed Poisson counts.
    cutflow : dict
        Per dataset, the events through each step.
    cutflow_weighted : dict
        Per simulated dataset, the sums of its weights through each step.
    skim : list of str
        The skim files written.
    entries : dict
        Per file read, its events.
    skipped : dict
        The files left out as unreadable.
    unreadable : dict
        Per file, the ``(start, stop, reason)`` of each chunk that could not be read.
    """

    abcd: dict[str, Hist[Weight]]
    plane: dict[str, Hist[Weight]]
    passfail: dict[str, Hist[Weight]]
    replicas: dict[str, Hist[Weight]]
    resampled: dict[str, Hist[Weight]]
    cutflow: dict[str, dict[str, int]]
    cutflow_weighted: dict[str, dict[str, float]]
    skim: list[str]
    entries: dict[str, int]
    skipped: dict[str, SkippedFile]
    unreadable: dict[str, list[tuple[int, int, str]]]


#: the numbers of one variant's closure over the cut grid, as ``summary.json`` holds them
ClosureNumbers = TypedDict(
    "ClosureNumbers",
    {
        "best": dict[str, float] | None,
        "frac_eta_below_1e-2": float,
        "frac_eta_below_1e-3": float,
        "pull_mean": float | None,
        "pull_std": float | None,
        "valid_cuts": int,
    },
)


class ClosureJson(ClosureNumbers):
    """One variant's closure over the cut grid, as ``closure.json`` holds it.

    The numbers of :data:`ClosureNumbers` with the grid and ``eta`` over it
    (``NaN`` where a cut leaves a region empty).
    """

    x0: list[float]
    y0: list[float]
    eta: list[list[float]]
    eta_error: list[list[float]]


class LikelihoodJson(TypedDict, total=False):
    """One variant's ABCD likelihood at its cut (the ``likelihood`` of ``summary.json``).

    With data, the cut and workspace of the estimate; without, the cut of
    smallest ``|eta_A|`` with the expected results of :func:`write_likelihoods`,
    or a ``likelihood_note`` saying why there are none.
    """

    x0: float
    y0: float
    significance: float
    upper_limit: float
    nonclosure: float
    workspace: str
    likelihood_note: str


class CutflowJson(TypedDict):
    """The events through each step per dataset, and what was left out (``cutflow.json``).

    Blinded, a data set's events in ABCD are counted per variant in B, C and D
    only (``"in B (<variant>)"``, ...): no stage but ``read`` counts its
    events in region A. ``weighted`` holds the same steps in sums of weights
    for the simulation (``{"fileset": ..., "defining": ...}``, per dataset);
    data has none.
    """

    fileset: dict[str, dict[str, int]]
    defining: dict[str, dict[str, int]]
    weighted: dict[str, dict[str, dict[str, float]]]
    skipped_files: dict[str, SkippedFile]
    unreadable_chunks: dict[str, list[tuple[int, int, str]]]


class DatasetJson(TypedDict):
    """One dataset of the run: its role, files, events and normalisation."""

    role: str
    files: list[str]
    events: int
    xsec: float | None
    sum_weights: float | None
    scale: float


class AbcdSummaryCore(SummaryHeader):
    """The keys of the ABCD study's ``summary.json`` that every run writes.

    ``blind`` is the configuration's ``blind:``, the one key that unblinds the data.
    """

    blind: bool
    histograms: list[str]
    transforms: dict[str, str]
    closure: dict[str, ClosureNumbers]
    ensembles: dict[str, str]
    likelihood: dict[str, LikelihoodJson]
    cutflow: CutflowJson
    step_seconds: StepSeconds


class AbcdSummary(AbcdSummaryCore, total=False):
    """The ABCD study's ``summary.json``.

    ``datasets``, ``lumi`` and ``schema`` come with the checks of the files;
    ``estimate`` with data; ``passfail`` with the configuration's ``passfail:``
    (per variant, the numbers of its ``passfail/<variant>/passfail.json``).
    """

    datasets: dict[str, DatasetJson]
    lumi: float | None
    schema: str
    estimate: dict[str, EstimateJson]
    passfail: dict[str, PassFailNumbers]
