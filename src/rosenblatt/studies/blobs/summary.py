"""The Gaussian-blob study's ``summary.json``: its sections as typed mappings.

The keys are a public format (``tests/summary_keys.json`` records them); the study
(:mod:`rosenblatt.studies.blobs.study`) writes them and its report
(:mod:`rosenblatt.studies.blobs.report`) reads them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypedDict

from rosenblatt.studies._common import ClaimJson, StepSeconds, SummaryHeader

if TYPE_CHECKING:
    from rosenblatt.studies.peers import PeerResult

__all__ = [
    "BlobsSummary",
    "ScanJson",
    "SelectionJson",
    "SummaryExtras",
    "SummaryHead",
    "VariantJson",
]


class SelectionJson(TypedDict):
    """An automatic parameter choice: the values tried and their cross-validated Brier scores."""

    values: list[float]
    scores: list[float]


class VariantJson(TypedDict):
    """One estimator of the variants table: its accuracy, time, residual dCor² and choice."""

    estimator: str
    rms_exact: float
    seconds: float
    dcc: float
    chosen: float | None
    selection: SelectionJson | None


class _ScanJsonBase(TypedDict):
    """The entries of :class:`ScanJson` that every scan has."""

    parameter: str
    values: list[float]
    dcc: list[list[float]]
    rms_exact: list[float]
    subsamples: list[dict[str, float]]


class ScanJson(_ScanJsonBase, total=False):
    """One method's scan over its parameter, as ``summary.json`` writes it.

    ``dcc`` holds dCor² per sub-sample (rows) and parameter value (columns);
    each entry of ``subsamples`` holds ``best_<parameter>``, ``dcc_best``, the
    permutation floor, its spread and the p-value; ``whole_sample`` (when
    measured) holds the same on the whole testing sample, with ``dcc`` per value.
    """

    whole_sample: dict[str, float | list[float]]


class SummaryHead(SummaryHeader):
    """The entries of :class:`BlobsSummary` that every run writes, the claims left out."""

    rho: float
    n_defining: int
    n_testing: int
    n_subsamples: int
    subsample_size: int
    permutations: int
    dcc_xy: list[float]
    auc: dict[str, float]
    irgi: ScanJson
    kde: ScanJson


class SummaryExtras(TypedDict, total=False):
    """The entries of :class:`BlobsSummary` that the configuration asks for."""

    variants: list[VariantJson]
    peers: dict[str, PeerResult]
    dcc_xy_whole_sample: float


class BlobsSummary(SummaryHead, SummaryExtras):
    """The blob study's ``summary.json``: the sample, each method's scan, AUCs and the claims.

    ``variants``, ``peers`` and ``dcc_xy_whole_sample`` are there when the
    configuration asks for them; ``step_seconds`` is the wall time of each step.
    """

    claims: list[ClaimJson]
    step_seconds: StepSeconds
