"""What the LHCO study's steps hand to each other and to its report."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from rosenblatt.abcd import ClosureScan
from rosenblatt.studies.lhco.summary import (
    ClassifierJson,
    ModelFields,
    ProcessorPath,
    ScanPoint,
)
from rosenblatt.transforms import IRGI, ConditionalCDFTransform

if TYPE_CHECKING:
    from rosenblatt.studies.lhco.statistics import StatisticsResult

__all__ = ["ChosenModels", "Closure", "Decorrelation", "Samples", "TrainedModel"]


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

    x_def: NDArray[np.float64]
    y_def: NDArray[np.float64]
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

    scores: dict[str, NDArray[np.float64]]
    closures: dict[str, ClosureScan]
    agreement: ProcessorPath
    n_after_mjj_cut: int
    classifiers: dict[str, ClassifierJson]
    statistics: StatisticsResult = field(repr=False)
