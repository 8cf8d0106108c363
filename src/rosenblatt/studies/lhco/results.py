"""What the LHCO study's steps hand to each other and to its report."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from rosenblatt.abcd import ClosureScan, SensitivityMap
from rosenblatt.studies.lhco.config import LhcoConfig
from rosenblatt.studies.lhco.summary import (
    AutomaticChoice,
    ClassifierJson,
    ClassifierStatistics,
    ContaminationRow,
    ModelFields,
    ProcessorPath,
    ScanPoint,
)
from rosenblatt.transforms import IRGI, ConditionalCDFTransform, TransformEnsemble
from rosenblatt.typing import FloatArray, Int64Array

__all__ = [
    "CONTAMINATION_FRACTIONS",
    "ChosenModels",
    "Closure",
    "Decorrelation",
    "Samples",
    "StatisticsInput",
    "StatisticsResult",
    "StatisticsSettings",
    "TrainedModel",
]


#: injected W' events as fractions of the defining background
CONTAMINATION_FRACTIONS = (0.0, 0.001, 0.01, 0.05, 0.1)


@dataclass(frozen=True, slots=True)
class Samples:
    """The paper's four samples of the feature table, each a table of rows.

    Attributes
    ----------
    train, validation, optimisation, testing : table
        The rows of each sample (an awkward array or a pandas frame, as the
        feature table), with one score column per model once trained.
    """

    train: Any
    validation: Any
    optimisation: Any
    testing: Any


@dataclass(frozen=True, slots=True)
class TrainedModel:
    """One model of the classifier scan, with its figures on the optimisation sample.

    Attributes
    ----------
    name : str
        Its name (``baseline_s0``, ``disco_a1_s0``, ``gbdt_s0``).
    column : str
        The samples' column of its score.
    alpha : float
        Its DisCo strength (0 for a baseline).
    fields : dict
        The scalar entries of its training record, its saved file (``path``)
        included, as ``summary.json`` lists them.
    opt_auc, opt_dcc : float
        AUC and the background's dCor²(m_jj, score) on the optimisation
        sample (NaN until measured).
    """

    name: str
    column: str
    alpha: float
    fields: ModelFields
    opt_auc: float = float("nan")
    opt_dcc: float = float("nan")

    @classmethod
    def from_record(cls, record: dict[str, Any], path: str) -> TrainedModel:
        """The model of a training record of :func:`rosenblatt.ml.run_scan`, saved at ``path``."""
        fields: ModelFields = {
            k: v for k, v in record.items() if isinstance(v, (int, float, str, type(None)))
        }
        fields["path"] = path
        return cls(str(record["name"]), str(record["column"]), float(record["alpha"]), fields)

    @property
    def is_baseline(self) -> bool:
        """Whether it is a baseline (a CNN without DisCo, or a GBDT)."""
        return self.name.startswith(("baseline", "gbdt"))

    @property
    def is_disco(self) -> bool:
        """Whether it was trained with DisCo."""
        return self.name.startswith("disco")

    @property
    def path(self) -> str:
        """Its saved file."""
        return str(self.fields["path"])

    def measured(self, auc: float, dcc: float) -> TrainedModel:
        """The model with its AUC and dCor² on the optimisation sample."""
        return replace(self, opt_auc=auc, opt_dcc=dcc)

    def to_json(self) -> ModelFields:
        """Its entry of ``summary.json``'s ``models``: the record's scalars, then ``opt_auc``, ``opt_dcc``."""
        return {**self.fields, "opt_auc": self.opt_auc, "opt_dcc": self.opt_dcc}


@dataclass(frozen=True, slots=True)
class ChosenModels:
    """The best baseline and DisCo's representative (``None`` without a DisCo model)."""

    best: TrainedModel
    disco: TrainedModel | None


@dataclass(frozen=True, slots=True)
class Decorrelation:
    """IRGI and KDE of the best baseline: the scans over their parameter and the chosen fits.

    Attributes
    ----------
    x_def, y_def : ndarray
        The defining background: m_jj and the best baseline's score.
    scans : dict of list of ScanPoint
        Per transform (``irgi``, ``kde``), each parameter's figures on the optimisation sample.
    fitted : dict
        Per transform, the fit of each parameter.
    chosen : dict of float
        Per transform, the parameter chosen (the IRGI depth, the KDE ``sigma_r``).
    """

    x_def: FloatArray
    y_def: FloatArray
    scans: dict[str, list[ScanPoint]]
    fitted: dict[str, dict[float, ConditionalCDFTransform]]
    chosen: dict[str, float]

    def transform(self, name: str) -> ConditionalCDFTransform:
        """The chosen fit of ``name`` (``"irgi"`` or ``"kde"``)."""
        return self.fitted[name][self.chosen[name]]

    def irgi(self) -> IRGI:
        """The chosen IRGI fit, with its grid."""
        fit = self.transform("irgi")
        if not isinstance(fit, IRGI):
            msg = f"the chosen irgi fit is a {type(fit).__name__}"
            raise TypeError(msg)
        return fit


@dataclass
class StatisticsInput:
    """What the statistics stage works on.

    ``mjj``, ``label``, ``scores`` (per classifier) and ``baseline`` are the
    testing sample's; ``x_def``, ``y_def`` the defining background (m_jj,
    baseline score), ``x_sig``, ``y_sig`` the validation signal; ``closures``
    the testing sample's closure scans (from the analysis processor),
    ``chosen`` the IRGI depth and KDE sigma_r, ``x0``, ``y0`` the cut grid and
    ``mjj_max`` the upper limit of the dijet mass.
    """

    mjj: FloatArray
    label: Int64Array
    scores: dict[str, FloatArray]
    baseline: FloatArray
    chosen: dict[str, float]
    x_def: FloatArray
    y_def: FloatArray
    x_sig: FloatArray
    y_sig: FloatArray
    closures: dict[str, ClosureScan]
    x0: FloatArray
    y0: FloatArray
    mjj_max: float


@dataclass(frozen=True, slots=True)
class StatisticsSettings:
    """The statistics stage's settings (the ``statistics:`` section and ``permutations``).

    Attributes
    ----------
    n_boot : int
        Bootstrap replicas of the figures of merit.
    seed : int
        Seed of the replicas' weights.
    closure_n_boot : int
        Replicas of every classifier's closure test.
    closure_thin : int
        Resolution of the closure test's sub-grid of cuts.
    sensitivity_thin : int
        Resolution of the sensitivity map's sub-grid (0: no map).
    contamination : tuple of float
        Injected W' events as fractions of the defining background.
    auto_parameters : bool
        Whether IRGI and KDE are also fitted with their automatic parameter.
    permutations : int
        Permutations of the dCor² floor of the automatic parameters.
    """

    n_boot: int = 30
    seed: int = 0
    closure_n_boot: int = 200
    closure_thin: int = 5
    sensitivity_thin: int = 0
    contamination: tuple[float, ...] = CONTAMINATION_FRACTIONS
    auto_parameters: bool = True
    permutations: int = 100

    @classmethod
    def of(cls, cfg: LhcoConfig) -> StatisticsSettings:
        """The settings of a validated configuration (defaults where its section is silent)."""
        section = cfg.statistics
        return cls(
            n_boot=int(section.get("n_boot", 30)),
            seed=int(section.get("seed", 0)),
            closure_n_boot=int(section.get("closure_n_boot", 200)),
            closure_thin=int(section.get("closure_thin", 5)),
            sensitivity_thin=int(section.get("sensitivity_thin") or 0),
            contamination=tuple(
                float(f) for f in section.get("contamination", CONTAMINATION_FRACTIONS)
            ),
            auto_parameters=bool(section.get("auto_parameters", True)),
            permutations=cfg.permutations,
        )


@dataclass(frozen=True, slots=True)
class StatisticsResult:
    """What the statistics stage found.

    Attributes
    ----------
    classifiers : dict of ClassifierStatistics
        Per classifier, the entries it adds to the summary's.
    contamination : list of ContaminationRow
        IRGI and KDE refitted on a contaminated defining sample.
    automatic : dict of AutomaticChoice or None
        IRGI and KDE with their automatic parameter (``None`` when not asked for).
    maps : dict of SensitivityMap
        Per classifier, the expected significance over a thinned grid of cuts (when asked for).
    eta_error : dict of ndarray
        Per classifier, the bootstrap standard deviation of ``eta_A`` at each cut.
    ensembles : dict of TransformEnsemble
        IRGI's and KDE's bootstrap replicas, refitted on the defining sample.
    timings : dict of float
        Wall time of each part of the stage, in seconds.
    """

    classifiers: dict[str, ClassifierStatistics]
    contamination: list[ContaminationRow]
    automatic: dict[str, AutomaticChoice] | None
    maps: dict[str, SensitivityMap] = field(default_factory=dict)
    eta_error: dict[str, FloatArray] = field(default_factory=dict)
    ensembles: dict[str, TransformEnsemble] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Closure:
    """The testing sample's scores, its ABCD closure per classifier, and the statistics stage's output.

    Attributes
    ----------
    scores : dict of ndarray
        Per classifier, its score of every testing event.
    closures : dict of ClosureScan
        Per classifier, the closure over the cut grid (from the analysis processor).
    agreement : ProcessorPath
        The processor's closure beside the in-memory one.
    n_after_mjj_cut : int
        Testing events below the upper limit of m_jj.
    classifiers : dict of ClassifierJson
        Per classifier, its entry of ``summary.json``.
    statistics : StatisticsResult
        The statistics stage's output.
    """

    scores: dict[str, FloatArray]
    closures: dict[str, ClosureScan]
    agreement: ProcessorPath
    n_after_mjj_cut: int
    classifiers: dict[str, ClassifierJson]
    statistics: StatisticsResult = field(repr=False)
