"""The shape of the LHCO study's ``summary.json``, section by section.

:class:`LhcoSummary` is the whole file as :func:`rosenblatt.studies.lhco.study.run`
writes it and :func:`~rosenblatt.studies.lhco.study.render_again` reads it back;
each classifier's entry is a :class:`ClassifierJson`. Keys that are not Python
names (``frac_eta_below_1e-2``) are declared in the functional form of
:class:`typing.TypedDict`.
"""

from __future__ import annotations

from typing import TypedDict

from rosenblatt.studies._common import ClaimJson, StepSeconds, SummaryHeader
from rosenblatt.studies.peers import PeerResult

__all__ = [
    "AutomaticChoice",
    "ClassifierEntries",
    "ClassifierJson",
    "ClassifierStatistics",
    "ContaminationRow",
    "FiguresOfMerit",
    "JsonValue",
    "LhcoSummary",
    "ModelFields",
    "PaperRow",
    "PassFailComparison",
    "PassFailEntries",
    "PassFailSide",
    "ProcessorPath",
    "Provenance",
    "ScanPoint",
    "StrengthEntries",
    "StrengthPoint",
    "StrengthScan",
    "TaggerPoint",
    "Verdicts",
    "classifier_entries",
]

#: a value of a JSON document (the configuration as read, a training record's entries)
JsonValue = None | bool | int | float | str | list["JsonValue"] | dict[str, "JsonValue"]

#: one trained model's scalar entries: its training record, file and optimisation-sample figures
ModelFields = dict[str, float | str | None]

#: one row of the table beside the paper: claim, paper, ours, verdict, reason
PaperRow = dict[str, str]


class ScanPoint(TypedDict):
    """One value of a transform's parameter scan on the optimisation sample.

    Attributes
    ----------
    value : float
        The IRGI depth or the KDE ``sigma_r``.
    auc, dcc : float
        AUC and the background's dCor²(m_jj, score).
    """

    value: float
    auc: float
    dcc: float


#: one classifier's point estimates on the testing sample: AUC, dCor² with its permutation
#: floor, R50, 1/JSD, the best ABCD cut (``closure_at_best``: its row of the closure table)
#: and the grid's closure
FiguresOfMerit = TypedDict(
    "FiguresOfMerit",
    {
        "auc": float,
        "dcc": float,
        "dcc_floor": float,
        "dcc_floor_std": float,
        "dcc_p_value": float,
        "r50": float,
        "inverse_jsd": float,
        "eta_best": float,
        "x0": float,
        "y0": float,
        "closure_at_best": dict[str, float],
        "frac_eta_below_1e-2": float,
        "frac_eta_below_1e-3": float,
        "pull_mean": float,
        "pull_std": float,
    },
)

#: what the statistics stage adds to a classifier's entry: bootstrap standard deviations,
#: the closure test, the likelihood at the best cut (``significance``, ``upper_limit``,
#: ``nonclosure``, ``likelihood_note``, ``workspace``) and the best cut of the sensitivity map;
#: ``n_refits`` and ``n_boot_unusable`` only where the transform is refitted
ClassifierStatistics = TypedDict(
    "ClassifierStatistics",
    {
        "auc_err": float,
        "dcc_err": float,
        "r50_err": float,
        "eta_best_err": float,
        "frac_eta_below_1e-2_err": float,
        "n_boot": int,
        "transform_refitted": bool,
        "n_refits": int,
        "n_boot_unusable": int,
        "closure_chi2": float | None,
        "closure_ndof": int | None,
        "closure_chi2_ndf": float | None,
        "closure_pvalue": float | None,
        "closure_n_boot": int | None,
        "closure_transform_refitted": bool,
        "frac_closure_consistent_2sd": float | None,
        "frac_eta_significant_below_1e-2": float,
        "significance": float,
        "upper_limit": float,
        "nonclosure": float,
        "likelihood_note": str,
        "workspace": str,
        "sensitivity_best": dict[str, float] | None,
    },
    total=False,
)


class ClassifierJson(FiguresOfMerit, ClassifierStatistics, total=False):
    """One classifier's entry (``baseline``, ``disco``, ``irgi``, ``kde``).

    Its :data:`FiguresOfMerit` and :data:`ClassifierStatistics`, then what it is:
    the IRGI ``depth``, the KDE ``sigma_r``, the trained ``model`` of the
    baseline and DisCo, and DisCo's strength ``alpha``.
    """

    depth: int
    sigma_r: float
    model: str
    alpha: float | None


class _ContaminationNote(TypedDict, total=False):
    note: str


class ContaminationRow(_ContaminationNote):
    """A transform refitted with a share of W' events injected into its defining sample.

    ``note`` says when fewer signal events were there than the share asks for.
    """

    classifier: str
    fraction: float
    n_injected: int
    signal_bias: float
    signal_bias_err: float
    auc: float
    auc_err: float
    dcc: float
    dcc_err: float


class AutomaticChoice(TypedDict):
    """A transform's parameter chosen by cross-validation on the defining sample, and its figures."""

    value: float
    auc: float
    dcc: float
    dcc_floor: float


class ProcessorPath(TypedDict):
    """The testing sample's ABCD closure through the analysis processor, beside the in-memory one.

    Attributes
    ----------
    events_in_abcd : int
        Events the processor filled into the ABCD histograms.
    max_count_difference : dict
        Per classifier, the largest difference of a count from the in-memory histogram's.
    cutflow : dict
        Per dataset, the events left after each selection step.
    """

    events_in_abcd: int
    max_count_difference: dict[str, float]
    cutflow: dict[str, dict[str, int]]


class _RequiredClassifiers(TypedDict):
    baseline: ClassifierJson
    irgi: ClassifierJson
    kde: ClassifierJson


class ClassifierEntries(_RequiredClassifiers, total=False):
    """The classifiers' entries of the summary: ``disco`` only where DisCo was trained."""

    disco: ClassifierJson


class Provenance(TypedDict):
    """Where a run's numbers come from.

    Attributes
    ----------
    configuration : dict
        The configuration as read.
    commit : str or None
        The source's git commit (``None`` outside a checkout).
    uncommitted_changes : bool or None
        Whether the checkout had changes beyond its commit.
    """

    configuration: dict[str, JsonValue]
    commit: str | None
    uncommitted_changes: bool | None


class _Head(SummaryHeader, Provenance):
    sizes: dict[str, dict[str, int]]
    n_testing_after_mjj_cut: int
    processor_path: ProcessorPath


class _Tail(TypedDict):
    depth: int
    sigma_r: float
    models: list[ModelFields]
    scans: dict[str, list[ScanPoint]]
    contamination: list[ContaminationRow]
    automatic_parameters: dict[str, AutomaticChoice] | None
    statistics_seconds: dict[str, float]


#: one decorrelation strength ``p`` of the score ``(1 - p) F(y) + p gamma(x, y)`` on the testing
#: sample: AUC, dCor², R50, 1/JSD, the grid's closure (the best cut's ``eta_best``, the fraction
#: with ``|eta| < 1e-2``) and the closure test of its background (``closure_*``: chi² per degree
#: of freedom, p-value, fraction of cuts within 2 sd; ``None`` where too few events);
#: ``closes``: whether that p-value is at least 0.05
StrengthPoint = TypedDict(
    "StrengthPoint",
    {
        "strength": float,
        "auc": float,
        "dcc": float,
        "r50": float,
        "inverse_jsd": float,
        "eta_best": float,
        "frac_eta_below_1e-2": float,
        "closure_chi2_ndf": float | None,
        "closure_pvalue": float | None,
        "frac_closure_consistent_2sd": float | None,
        "closes": bool | None,
    },
)


class TaggerPoint(TypedDict):
    """One trained model of the classifier scan on the testing sample (DisCo's R50 against 1/JSD).

    Attributes
    ----------
    model : str
        The model's name.
    alpha : float
        Its DisCo strength (0: a baseline).
    auc, r50, inverse_jsd : float
        AUC, background rejection at 50% signal efficiency and 1/JSD of the
        passing and failing background mass spectra at that efficiency.
    """

    model: str
    alpha: float
    auc: float
    r50: float
    inverse_jsd: float


class StrengthScan(TypedDict):
    """The decorrelation strength as a knob, beside the DisCo scan, on the testing sample.

    Attributes
    ----------
    strengths : list of float
        The strengths ``p`` scanned.
    transforms : dict
        Per transform (``irgi``, ``kde``, at their chosen parameter), one
        :data:`StrengthPoint` per strength.
    models : list of TaggerPoint
        Every trained model of the classifier scan (baselines and DisCo).
    closure_n_boot : int
        Replicas of the testing sample in each closure test.
    refits : dict of int
        Per transform, the bootstrap refits of ``s_p`` on the defining sample
        whose spread each closure test holds.
    """

    strengths: list[float]
    transforms: dict[str, list[StrengthPoint]]
    models: list[TaggerPoint]
    closure_n_boot: int
    refits: dict[str, int]


class StrengthEntries(TypedDict, total=False):
    """The strength scan (``strength_scan``); absent from summaries written before it existed."""

    strength_scan: StrengthScan


class PassFailSide(TypedDict):
    """One classifier's pass/fail fit in bins of m_jj at its ABCD cut's ``y0``, on the testing sample.

    Attributes
    ----------
    y0 : float
        The cut on the score (that of the classifier's best ABCD cut).
    significance, upper_limit : float or None
        The pass/fail fit's expected (Asimov) significance of the W' signal at
        ``mu = 1`` and its median expected 95% CLs upper limit on ``mu``, with
        the per-bin non-closure (``None`` where not computed: ``note``).
    significance_stat_only, upper_limit_stat_only : float or None
        The same without the non-closure (a constant transfer ratio taken as exact).
    transfer_ratio : float
        The testing background's passing over failing events.
    transfer_chi2_ndf, transfer_p_value : float or None
        The chi-square per degree of freedom of its per-bin ratios against the
        constant, and its p-value.
    transfer_slope, transfer_slope_error, transfer_slope_p_value : float or None
        A straight line's relative slope per TeV of m_jj through them, its
        error and the p-value of zero slope.
    linear_transfer_needed : bool or None
        Whether that p-value is below 0.05 (the ratio is not constant in m_jj).
    background_pass, signal_pass : float
        The testing background and signal passing the cut, all bins together.
    workspace : str or None
        The pyhf workspace written (observations: the testing background).
    note : str or None
        Why a number is missing.
    """

    y0: float
    significance: float | None
    upper_limit: float | None
    significance_stat_only: float | None
    upper_limit_stat_only: float | None
    transfer_ratio: float
    transfer_chi2_ndf: float | None
    transfer_p_value: float | None
    transfer_slope: float | None
    transfer_slope_error: float | None
    transfer_slope_p_value: float | None
    linear_transfer_needed: bool | None
    background_pass: float
    signal_pass: float
    workspace: str | None
    note: str | None


class PassFailComparison(TypedDict):
    """The cut-and-count ABCD estimate's pass/fail counterpart: the fit over bins of m_jj.

    Attributes
    ----------
    edges : list of float
        The bin edges of m_jj (GeV) of every classifier's fit.
    level : float
        The CLs level of the limits (0.05: 95%).
    classifiers : dict of PassFailSide
        Per classifier whose ABCD likelihood the study computes, its fit.
    """

    edges: list[float]
    level: float
    classifiers: dict[str, PassFailSide]


class PassFailEntries(TypedDict, total=False):
    """The pass/fail fit beside the ABCD estimate (``passfail``); absent from older summaries."""

    passfail: PassFailComparison


class Verdicts(TypedDict, total=False):
    """The summary's entries written after its figures: they read them, or the run adds them."""

    claims: list[ClaimJson]
    paper_comparison: list[PaperRow]
    peers: dict[str, PeerResult]
    step_seconds: StepSeconds


class LhcoSummary(_Head, ClassifierEntries, _Tail, StrengthEntries, PassFailEntries, Verdicts):
    """The LHCO study's ``summary.json``.

    The run's sizes and provenance, the analysis processor's closure
    (``processor_path``), one :class:`ClassifierJson` per classifier (``disco``
    where DisCo was trained), the chosen IRGI ``depth`` and KDE ``sigma_r``,
    the trained models, the parameter scans, the contamination rows, the
    automatic parameters and the statistics stage's timings; the scan of the
    decorrelation strength beside the classifier scan (``strength_scan``);
    the pass/fail fit in bins of m_jj beside the ABCD likelihood (``passfail``);
    then the paper's claims, the table beside the paper, the peers and the
    wall time of each step.
    """


def classifier_entries(summary: LhcoSummary) -> dict[str, ClassifierJson]:
    """The classifiers' entries of ``summary`` in the report's order (baseline, DisCo, IRGI, KDE).

    Parameters
    ----------
    summary
        An LHCO summary.

    Returns
    -------
    dict of ClassifierJson
        ``{name: entry}``; DisCo only where the summary has it.
    """
    entries = {"baseline": summary["baseline"]}
    if "disco" in summary:
        entries["disco"] = summary["disco"]
    entries.update(irgi=summary["irgi"], kde=summary["kde"])
    return entries
