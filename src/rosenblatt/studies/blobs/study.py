"""The Gaussian-blob study of the method paper.

A tilted bivariate normal background (correlation ``rho``) defines IRGI and
KDE transforms; on an independent testing sample cut into sub-samples, the
residual dCor^2(x, gamma) is scanned over each method's parameter, put beside
its permutation floor and p-value, and ``gamma`` is compared with the exact
conditional CDF, which is known in closed form here.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

import numpy as np
from scipy.stats import norm

import rosenblatt as rb
from rosenblatt._atomic import write_text
from rosenblatt._extras import optional_imports
from rosenblatt.metrics import PermutationTestResult
from rosenblatt.studies._common import Claim, ClaimJson, Steps, summary_header, write_summary
from rosenblatt.studies.blobs.config import BlobsConfig
from rosenblatt.studies.blobs.report import Events, Fitted, draw_figures, report_text
from rosenblatt.studies.blobs.summary import (
    BlobsSummary,
    ScanJson,
    SummaryExtras,
    SummaryHead,
    VariantJson,
)
from rosenblatt.transforms import ConditionalCDFTransform
from rosenblatt.typing import FloatArray, IntArray

with optional_imports(__name__):
    from tqdm.auto import tqdm

__all__ = ["exact_gamma", "run", "sample_background", "sample_signal"]

log = logging.getLogger("rosenblatt.blobs")

#: the study's steps, in order; each one's wall time goes to ``timings.json``
STEPS = ("sample", "scan", "extras", "report")


def sample_background(
    n: int, rho: float, rng: np.random.Generator
) -> tuple[FloatArray, FloatArray]:
    """Standard bivariate normal with correlation ``rho``."""
    x = rng.standard_normal(n)
    y = rho * x + np.sqrt(1.0 - rho * rho) * rng.standard_normal(n)
    return x, y


def sample_signal(
    n: int, mean: list[float], cov: list[list[float]], rng: np.random.Generator
) -> tuple[FloatArray, FloatArray]:
    """The signal blob: a bivariate normal of given mean and covariance."""
    xy = rng.multivariate_normal(mean, cov, size=n)
    return xy[:, 0], xy[:, 1]


def exact_gamma(x: FloatArray, y: FloatArray, rho: float) -> FloatArray:
    """Exact conditional CDF ``P(Y <= y | X = x)`` of the background."""
    return np.asarray(norm.cdf((y - rho * x) / np.sqrt(1.0 - rho * rho)))


@dataclass(frozen=True)
class _Samples:
    """The defining and testing samples of both populations, and the background's exact CDF."""

    x_def: FloatArray
    y_def: FloatArray
    x_test: FloatArray
    y_test: FloatArray
    xs_def: FloatArray
    ys_def: FloatArray
    xs_test: FloatArray
    ys_test: FloatArray
    exact: FloatArray

    @classmethod
    def draw(cls, cfg: BlobsConfig) -> _Samples:
        """Draw every sample from the configuration's seed (in the order the study always used)."""
        rng = np.random.default_rng(cfg.seed)
        bkg, sig = cfg.background, cfg.signal
        x_def, y_def = sample_background(bkg.n_defining, bkg.rho, rng)
        x_test, y_test = sample_background(bkg.n_testing, bkg.rho, rng)
        mean, cov = list(sig.mean), [list(row) for row in sig.cov]
        xs_def, ys_def = sample_signal(sig.n_defining, mean, cov, rng)
        xs_test, ys_test = sample_signal(sig.n_testing, mean, cov, rng)
        exact = exact_gamma(x_test, y_test, bkg.rho)
        return cls(x_def, y_def, x_test, y_test, xs_def, ys_def, xs_test, ys_test, exact)

    def labelled_testing(
        self,
    ) -> tuple[FloatArray, FloatArray, FloatArray]:
        """Background then signal testing events: ``x``, ``y`` and the label."""
        label = np.r_[np.zeros(len(self.x_test)), np.ones(len(self.xs_test))]
        return np.r_[self.x_test, self.xs_test], np.r_[self.y_test, self.ys_test], label


#: the transform a scanned method fits
TransformT = TypeVar("TransformT", bound=ConditionalCDFTransform)


@dataclass(frozen=True, slots=True)
class _Method(Generic[TransformT]):
    """A scanned method: its name, its parameter, the values scanned and its transform at a value."""

    name: str
    parameter: str
    values: tuple[float, ...]
    make: Callable[[float], TransformT]


@dataclass(frozen=True, slots=True)
class _Best:
    """The parameter value of lowest dCor² on some testing events, and its permutation test there."""

    parameter: str
    value: float
    dcc_best: float
    test: PermutationTestResult

    def to_json(self) -> dict[str, float]:
        """``best_<parameter>``, ``dcc_best``, the permutation floor, its spread and the p-value."""
        return {
            "best_" + self.parameter: self.value,
            "dcc_best": self.dcc_best,
            **_floor(self.test),
        }


@dataclass(frozen=True, slots=True)
class _Scan(Generic[TransformT]):
    """A method fitted at every value of its parameter and measured on the testing sample.

    Attributes
    ----------
    method
        The method scanned.
    fitted
        Its transform at each value.
    dcc
        dCor² per sub-sample (rows) and value (columns).
    rms_exact
        RMS against the exact conditional CDF at each value.
    """

    method: _Method[TransformT]
    fitted: dict[float, TransformT]
    dcc: FloatArray
    rms_exact: list[float]

    def best_of_mean(self) -> float:
        """The value of lowest mean dCor² over the sub-samples."""
        return self.method.values[int(np.argmin(np.mean(self.dcc, axis=0)))]


@dataclass(frozen=True, slots=True)
class _Scans:
    """The scans of both methods."""

    irgi: _Scan[rb.IRGI]
    kde: _Scan[rb.KDE]


def run(config: dict[str, Any], folder: Path) -> BlobsSummary:
    """Run the blob study of ``config`` and write ``report.md``, ``summary.json`` and figures."""
    cfg = BlobsConfig.parse(config)
    steps = Steps(STEPS, log, digits=2)
    data = steps.run("sample", _Samples.draw, cfg)
    subsamples = np.array_split(np.arange(len(data.x_test)), cfg.n_subsamples)
    with steps.timed("scan"):
        dcc_xy = np.array(
            [rb.distance_correlation_sqr(data.x_test[i], data.y_test[i]) for i in subsamples]
        )
        irgi = _Method("irgi", "depth", cfg.depths, lambda d: rb.IRGI(depth=int(d)))
        kde = _Method("kde", "sigma_r", cfg.sigma_r, lambda s: rb.KDE(sigma_r=s))
        irgi_scan, irgi_json = _scan(irgi, data, subsamples, cfg)
        kde_scan, kde_json = _scan(kde, data, subsamples, cfg)
    scans = _Scans(irgi_scan, kde_scan)
    head: SummaryHead = {
        **summary_header("blobs", cfg.name, cfg.source),
        "rho": cfg.background.rho,
        "n_defining": len(data.x_def),
        "n_testing": len(data.x_test),
        "n_subsamples": cfg.n_subsamples,
        "subsample_size": len(subsamples[0]),
        "permutations": cfg.permutations,
        "dcc_xy": dcc_xy.tolist(),
        "auc": _aucs(data, scans),
        "irgi": irgi_json,
        "kde": kde_json,
    }
    extras = steps.run("extras", _extras, cfg, data, len(subsamples[0]))
    summary: BlobsSummary = {
        **head,
        **extras,
        "claims": _claims(head, cfg.dcc_best_max),
        "step_seconds": dict(steps.seconds),
    }
    fitted: Fitted = {"irgi": scans.irgi.fitted, "kde": scans.kde.fitted}
    defining = Events(data.x_def, data.y_def, data.xs_def, data.ys_def)
    testing = Events(data.x_test, data.y_test, data.xs_test, data.ys_test)
    with steps.timed("report"):
        figures = draw_figures(folder, summary, fitted, defining, testing, cfg.figures)
        write_text(folder / "report.md", report_text(summary, figures, folder))
    summary["step_seconds"] = dict(steps.seconds)
    write_summary(folder, summary)
    steps.write(folder)
    return summary


def _extras(cfg: BlobsConfig, data: _Samples, dcc_events: int) -> SummaryExtras:
    """The parts of the summary the configuration asks for: variants, peers, whole-sample dCor²."""
    extras: SummaryExtras = {}
    if cfg.variants:
        extras["variants"] = _variants(data.x_def, data.y_def, data.x_test, data.y_test, data.exact)
    if cfg.peers is not None:
        from rosenblatt.studies import peers

        rho = cfg.background.rho
        extras["peers"] = peers.evaluate(
            peers.default_peers(flow=cfg.peers.get("flow")),
            defining=(data.x_def, data.y_def),
            testing=data.labelled_testing(),
            exact=lambda x, y: exact_gamma(x, y, rho),
            permutations=cfg.permutations,
            dcc_events=dcc_events,
        )
    if cfg.whole_sample:
        extras["dcc_xy_whole_sample"] = rb.distance_correlation_sqr(data.x_test, data.y_test)
    return extras


def _scan(
    method: _Method[TransformT],
    data: _Samples,
    subsamples: list[IntArray],
    cfg: BlobsConfig,
) -> tuple[_Scan[TransformT], ScanJson]:
    """Fit a transform at every value of its parameter; dCor² per sub-sample, RMS, floors."""
    x_test, y_test = data.x_test, data.y_test
    values = method.values
    dcc = np.empty((len(subsamples), len(values)))
    rms = []
    gammas = {}
    fitted = {}
    for j, value in enumerate(tqdm(values, desc=f"{method.name} {method.parameter}", leave=False)):
        transform = method.make(value).fit(data.x_def, data.y_def)
        gamma = transform.transform(x_test, y_test)
        gammas[value] = gamma
        fitted[value] = transform
        rms.append(float(np.sqrt(np.mean((gamma - data.exact) ** 2))))
        dcc[:, j] = [rb.distance_correlation_sqr(x_test[i], gamma[i]) for i in subsamples]
    scan = _Scan(method, fitted, dcc, rms)
    return scan, _scan_json(scan, gammas, x_test, subsamples, cfg)


def _scan_json(
    scan: _Scan[TransformT],
    gammas: Mapping[float, FloatArray],
    x_test: FloatArray,
    subsamples: list[IntArray],
    cfg: BlobsConfig,
) -> ScanJson:
    """A method's scan in the summary, with the permutation floors of its best values."""
    per_sub = _best_per_subsample(scan, gammas, x_test, subsamples, cfg.permutations)
    result: ScanJson = {
        "parameter": scan.method.parameter,
        "values": list(scan.method.values),
        "dcc": scan.dcc.tolist(),
        "rms_exact": scan.rms_exact,
        "subsamples": [best.to_json() for best in per_sub],
    }
    if cfg.whole_sample:
        result["whole_sample"] = _whole_sample(
            scan.method, gammas, x_test, cfg.whole_sample_permutations
        )
    log.info(
        "%s: best dCor^2 per sub-sample %s",
        scan.method.name,
        ", ".join(f"{best.dcc_best:.2e}" for best in per_sub),
    )
    return result


def _best_per_subsample(
    scan: _Scan[TransformT],
    gammas: Mapping[float, FloatArray],
    x_test: FloatArray,
    subsamples: list[IntArray],
    permutations: int,
) -> list[_Best]:
    """Each sub-sample's value of lowest dCor², with its permutation test (seeded by its index)."""
    parameter, values = scan.method.parameter, scan.method.values
    bests = []
    progress = tqdm(subsamples, desc=f"{scan.method.name} permutation floors", leave=False)
    for s, idx in enumerate(progress):
        best = int(np.argmin(scan.dcc[s]))
        test = rb.permutation_test(
            x_test[idx], gammas[values[best]][idx], n_permutations=permutations, seed=s
        )
        bests.append(_Best(parameter, values[best], float(scan.dcc[s, best]), test))
    return bests


def _whole_sample(
    method: _Method[TransformT],
    gammas: Mapping[float, FloatArray],
    x_test: FloatArray,
    permutations: int,
) -> dict[str, float | list[float]]:
    """dCor² of every value on the whole testing sample, and its best value's permutation test."""
    values = method.values
    whole = [rb.distance_correlation_sqr(x_test, gammas[v]) for v in values]
    best = int(np.argmin(whole))
    test = rb.permutation_test(x_test, gammas[values[best]], n_permutations=permutations, seed=99)
    return {"dcc": whole, **_Best(method.parameter, values[best], whole[best], test).to_json()}


def _floor(test: PermutationTestResult) -> dict[str, float]:
    """The permutation floor, its spread and the p-value of a permutation test."""
    return {
        "dcc_floor": float(test.floor),
        "dcc_floor_std": float(test.floor_std),
        "p_value": float(test.p_value),
    }


def _aucs(data: _Samples, scans: _Scans) -> dict[str, float]:
    """AUC of the raw score and of each transform at its best parameter (mean dCor² over sub-samples)."""
    _, y_all, label = data.labelled_testing()
    return {
        "y": rb.roc_auc(label, y_all),
        "irgi": _auc(data, label, scans.irgi.fitted[scans.irgi.best_of_mean()]),
        "kde": _auc(data, label, scans.kde.fitted[scans.kde.best_of_mean()]),
    }


def _auc(data: _Samples, label: FloatArray, transform: ConditionalCDFTransform) -> float:
    """AUC of a fitted transform's gamma on the testing background and signal."""
    return rb.roc_auc(
        label,
        np.r_[
            transform.transform(data.x_test, data.y_test),
            transform.transform(data.xs_test, data.ys_test),
        ],
    )


def _variants(
    x_def: FloatArray,
    y_def: FloatArray,
    x_test: FloatArray,
    y_test: FloatArray,
    exact: FloatArray,
) -> list[VariantJson]:
    """Automatic parameters and the bias-corrected GridKDE beside the paper's algorithms."""
    import time

    candidates: dict[str, Callable[[], ConditionalCDFTransform]] = {
        "IRGI d=7 (paper)": lambda: rb.IRGI(depth=min(7, rb.IRGI.max_depth(len(x_def)))),
        "KDE sigma_r=0.05 (paper)": lambda: rb.KDE(sigma_r=0.05),
        "IRGI depth=auto": lambda: rb.IRGI(depth="auto"),
        "KDE sigma_r=auto": lambda: rb.KDE(sigma_r="auto"),
        "GridKDE degree 2, sigma_r=auto": lambda: rb.GridKDE(sigma_r="auto", degree=2),
    }
    rows: list[VariantJson] = []
    for name, make in tqdm(candidates.items(), desc="variants", leave=False):
        start = time.perf_counter()
        transform = make().fit(x_def, y_def)
        gamma = transform.transform(x_test, y_test)
        seconds = time.perf_counter() - start
        selection = getattr(transform, "selection_", None)
        rows.append(
            {
                "estimator": name,
                "rms_exact": float(np.sqrt(np.mean((gamma - exact) ** 2))),
                "seconds": seconds,
                "dcc": rb.distance_correlation_sqr(x_test[:20000], gamma[:20000]),
                "chosen": None if selection is None else float(selection.chosen),
                "selection": None
                if selection is None
                else {"values": list(selection.values), "scores": list(selection.scores)},
            }
        )
    return rows


def _claims(summary: SummaryHead, bound: float) -> list[ClaimJson]:
    """The paper's claims on the blobs; no bootstrap here, so each is decided by its value."""
    dcc_xy = np.asarray(summary["dcc_xy"])
    claims = [
        Claim(
            "dCor^2(x, y) is about 0.30 in every sub-sample",
            [round(v, 3) for v in dcc_xy.tolist()],
            float(np.min(0.03 - np.abs(dcc_xy - 0.30))),
        )
    ]
    for name, scan in (("irgi", summary["irgi"]), ("kde", summary["kde"])):
        best = [s["dcc_best"] for s in scan["subsamples"]]
        claims.append(
            Claim(
                f"best dCor^2(x, gamma) of {name.upper()} <= {bound:g} in every sub-sample",
                best,
                bound - max(best),
            )
        )
    return [claim.to_json() for claim in claims]
