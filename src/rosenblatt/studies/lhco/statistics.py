"""The statistics stage of the LHCO study: uncertainties, the closure test, the likelihood, contamination.

Everything here works on the in-memory arrays of the study's samples:

* **Bootstrap of the figures of merit.** ``n_boot`` replicas, each with
  independent Poisson(1) weights on the testing events and, for IRGI and KDE,
  the matching replica of :func:`rosenblatt.bootstrap` refitted on the
  defining sample with the chosen parameter. AUC, dCor², R50 and ``eta_A``
  (over the whole cut grid) are recomputed per replica; their standard
  deviation is the quoted uncertainty. The baseline and DisCo scores are not
  retrained: their uncertainty is the testing sample's alone.
* **The closure test** (:func:`rosenblatt.abcd.closure_test`) per classifier on
  the testing sample: chi² per degree of freedom and p-value of the
  background's non-closure (``closure_chi2``, ``closure_ndof``,
  ``closure_chi2_ndf``, ``closure_pvalue``: the chi² of the whole grid at the
  resolution ``closure_thin``, cuts evenly spaced over it); the fraction of the
  grid where that non-closure is within 2 standard deviations of zero, cut by
  cut (``frac_closure_consistent_2sd``); and the fraction where ``|eta_A|`` is
  below both 1e-2 and twice its bootstrap uncertainty. Every classifier's
  test has ``closure_n_boot`` replicas (Hotelling's p-value loses power when
  the replicas are few beside the cuts); for IRGI and KDE each also refits the
  transform (testing Poisson weights and a Poisson refit on the defining
  sample: the ``n_boot`` replicas of the figures of merit, then further
  refits).
* **The ABCD likelihood** (:func:`rosenblatt.abcd.likelihood_at_cut`) at each
  classifier's best cut, with the testing background's measured relative
  non-closure as a ``normsys``: Asimov significance and expected 95% CLs limit
  on ``mu``; the workspace is written as ``workspace_<classifier>.json``.
* **Signal contamination of the defining sample.** IRGI and KDE refitted with
  W' events of the validation sample injected into the defining background;
  the bias of the ABCD signal estimate at the nominal best cut, AUC and dCor²
  with the testing sample's bootstrap uncertainty.
* **Automatic parameters** (``depth="auto"``, ``sigma_r="auto"``) chosen on
  the defining sample alone, for comparison with the paper's rule.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

import rosenblatt as rb
from rosenblatt.abcd import (
    ClosureScan,
    ClosureTest,
    SensitivityMap,
    closure_test,
    expected_significance,
    expected_upper_limit,
    likelihood_at_cut,
    pyhf_workspace,
    quiet_pyhf,
)
from rosenblatt.abcd.closure import region_sums
from rosenblatt.abcd.closure_testing import thinned_indices
from rosenblatt.studies._common import Steps
from rosenblatt.studies.lhco.results import (
    CONTAMINATION_FRACTIONS,
    StatisticsInput,
    StatisticsResult,
    StatisticsSettings,
)
from rosenblatt.studies.lhco.summary import AutomaticChoice, ClassifierStatistics, ContaminationRow
from rosenblatt.typing import FloatArray, Int64Array

__all__ = [
    "CONTAMINATION_FRACTIONS",
    "StatisticsInput",
    "StatisticsResult",
    "StatisticsSettings",
    "statistics",
]

log = logging.getLogger("rosenblatt.lhco")


def statistics(
    settings: StatisticsSettings, folder: Path, data: StatisticsInput
) -> StatisticsResult:
    """Run the statistics stage; return per-classifier results, the contamination list and timings."""
    stage = _Stage(settings, data)
    timer = Steps()
    with timer.timed("bootstrap"):
        stage.bootstrap()
    with timer.timed("closure_test"):
        stage.closure_tests()
    with timer.timed("likelihood"):
        stage.likelihoods(folder)
    if settings.sensitivity_thin and not stage.pyhf_missing:
        with timer.timed("sensitivity_map"):
            stage.sensitivity_maps()
    with timer.timed("contamination"):
        contamination = _contamination(stage)
    automatic = None
    if settings.auto_parameters:
        with timer.timed("auto_parameters"):
            automatic = _automatic(stage)
    log.info("statistics stage: %s", ", ".join(f"{k} {v:.1f} s" for k, v in timer.seconds.items()))
    return StatisticsResult(
        classifiers=stage.results,
        contamination=contamination,
        automatic=automatic,
        maps=stage.maps,
        eta_error=stage.eta_error,
        ensembles=stage.ensembles,
        timings=timer.seconds,
    )


class _Stage:
    """The state the parts of the statistics stage share: settings, replicas' weights, results."""

    def __init__(self, settings: StatisticsSettings, data: StatisticsInput) -> None:
        self.settings = settings
        self.data = data
        self.n_boot = settings.n_boot
        self.seed = settings.seed
        self.keep = data.mjj < data.mjj_max
        self.bkg = data.label == 0
        rng = np.random.default_rng([self.seed, 1])
        self.test_weights = rng.poisson(1.0, (self.n_boot, len(data.mjj))).astype(np.float64)
        self.grid = _Grid(data.mjj[self.keep], data.label[self.keep], data.x0, data.y0)
        self.best_index = {name: _best_index(scan) for name, scan in data.closures.items()}
        self.makers: dict[str, Callable[[], Any]] = {
            "irgi": lambda: rb.IRGI(depth=int(data.chosen["irgi"])),
            "kde": lambda: rb.KDE(sigma_r=float(data.chosen["kde"])),
        }
        self.results: dict[str, ClassifierStatistics] = {}
        self.eta_error: dict[str, FloatArray] = {}
        self.replica_scores: dict[str, list[FloatArray]] = {}
        self.ensembles: dict[str, rb.TransformEnsemble] = {}
        self.tests: dict[str, ClosureTest | None] = {}
        self.background_regions: dict[str, tuple[FloatArray, ...]] = {}
        self.signal_regions: dict[str, tuple[FloatArray, ...]] = {}
        self.maps: dict[str, SensitivityMap] = {}
        self.pyhf_missing: str | None = None

    # ---- bootstrap of the figures of merit
    def bootstrap(self) -> None:
        """The figures of merit of every classifier over the bootstrap replicas."""
        data = self.data
        for name, nominal in data.scores.items():
            ensemble = (
                rb.bootstrap(
                    self.makers[name](), data.x_def, data.y_def, n=self.n_boot, seed=self.seed
                )
                if name in self.makers
                else None
            )
            foms, etas, refitted, unusable = self._replicas(name, nominal, ensemble)
            i, j = self.best_index[name]
            self.eta_error[name] = _std(etas)
            with np.errstate(invalid="ignore"):
                fractions = (np.abs(etas) < 1e-2).mean(axis=(1, 2))
            fractions[np.isnan(etas).all(axis=(1, 2))] = np.nan
            self._compare_with_processor(name, nominal)
            self.results[name] = {
                "auc_err": _sd(foms["auc"]),
                "dcc_err": _sd(foms["dcc"]),
                "r50_err": _sd(foms["r50"]),
                "eta_best_err": float(self.eta_error[name][i, j]),
                "frac_eta_below_1e-2_err": _sd(fractions),
                "n_boot": self.n_boot,
                "transform_refitted": ensemble is not None,
            }
            if ensemble is not None:
                self.results[name]["n_refits"] = ensemble.n_refits_
                self.results[name]["n_boot_unusable"] = unusable
                self.replica_scores[name] = refitted
                self.ensembles[name] = ensemble

    def _replicas(
        self, name: str, nominal: FloatArray, ensemble: rb.TransformEnsemble | None
    ) -> tuple[dict[str, FloatArray], FloatArray, list[FloatArray], int]:
        """AUC, dCor², R50 and the eta grid of each replica; the refitted scores; the unusable count."""
        data, keep, bkg = self.data, self.keep, self.bkg
        foms = {key: np.full(self.n_boot, np.nan) for key in ("auc", "dcc", "r50")}
        etas = np.full((self.n_boot, len(data.x0), len(data.y0)), np.nan)
        unusable = 0
        refitted: list[FloatArray] = []
        for k in range(self.n_boot):
            try:
                score = (
                    nominal
                    if ensemble is None
                    else ensemble.replicas_[k].transform(data.mjj, data.baseline)
                )
            except ValueError as err:
                log.info("replica %d of %s cannot evaluate every testing event: %s", k, name, err)
                unusable += 1
                continue
            if ensemble is not None:
                refitted.append(score[keep])
            w = self.test_weights[k]
            foms["auc"][k] = rb.roc_auc(data.label, score, w)
            foms["dcc"][k] = rb.distance_correlation_sqr(data.mjj[bkg], score[bkg], w[bkg])
            foms["r50"][k] = rb.background_rejection(data.label, score, weight=w)
            etas[k] = self.grid.eta(score[keep], w[keep])
        return foms, etas, refitted, unusable

    def _compare_with_processor(self, name: str, nominal: FloatArray) -> None:
        """Log how far the in-memory eta grid lies from the analysis processor's."""
        with np.errstate(invalid="ignore"):
            nominal_eta = self.grid.eta(nominal[self.keep], np.ones(int(self.keep.sum())))
            difference = np.nanmax(np.abs(nominal_eta - self.data.closures[name].eta))
        log.info(
            "%s: eta of the bootstrap's grid differs from the processor's by at most %g",
            name,
            difference,
        )

    # ---- closure test
    def closure_tests(self) -> None:
        """The closure test of every classifier, with the transform's refits for IRGI and KDE."""
        data, keep = self.data, self.keep
        n_closure = self.settings.closure_n_boot
        thin = self.settings.closure_thin
        for name, score in data.scores.items():
            replicas = (
                _closure_replicas(
                    self.replica_scores[name],
                    self.ensembles[name],
                    self.makers[name],
                    n_closure,
                    data.x_def,
                    data.y_def,
                    data.mjj[keep],
                    data.baseline[keep],
                )
                if name in self.ensembles
                else None
            )
            try:
                test = closure_test(
                    data.mjj[keep],
                    score[keep],
                    data.label[keep],
                    x0=data.x0,
                    y0=data.y0,
                    n_boot=None if replicas is not None else n_closure,
                    seed=self.seed,
                    thin=thin,
                    replica_scores=replicas,
                )
            except ValueError as err:  # too few events in the regions of every thinned cut
                log.warning("closure test of %s not possible: %s", name, err)
                test = None
            self.tests[name] = test
            self.results[name].update(self._closure_numbers(name, test))

    def _closure_numbers(self, name: str, test: ClosureTest | None) -> ClassifierStatistics:
        scan = self.data.closures[name]
        with np.errstate(invalid="ignore"):
            significant = (np.abs(scan.eta) < 1e-2) & (np.abs(scan.eta) < 2 * self.eta_error[name])
        return {
            "closure_chi2": None if test is None else test.chi2,
            "closure_ndof": None if test is None else test.ndof,
            "closure_chi2_ndf": None if test is None else test.chi2_per_dof,
            "closure_pvalue": None if test is None else test.p_value,
            "closure_n_boot": None if test is None else test.n_boot,
            "closure_transform_refitted": test is not None and test.transform_replicas,
            "frac_closure_consistent_2sd": None if test is None else test.consistent_fraction,
            "frac_eta_significant_below_1e-2": float((significant & scan.valid).mean()),
        }

    # ---- the ABCD likelihood at the best cut
    def likelihoods(self, folder: Path) -> None:
        """The ABCD likelihood of every classifier at its best cut; its workspace written to ``folder``."""
        try:
            import pyhf  # noqa: F401
        except ImportError:
            self.pyhf_missing = "pyhf is not installed (pip install 'rosenblatt[stats]')"
            log.warning("no ABCD likelihood: %s", self.pyhf_missing)
        keep = self.keep
        for name, score in self.data.scores.items():
            content = self.grid.content(score[keep], np.ones(int(keep.sum())))
            self.background_regions[name] = region_sums(content[0])
            self.signal_regions[name] = region_sums(content[1])
            i, j = self.best_index[name]
            test = self.tests[name]
            relative = float(test.relative_nonclosure[i, j]) if test is not None else float("nan")
            if self.pyhf_missing:
                self.results[name].update(
                    {
                        "significance": float("nan"),
                        "upper_limit": float("nan"),
                        "nonclosure": relative,
                        "likelihood_note": self.pyhf_missing,
                    }
                )
                continue
            likelihood = likelihood_at_cut(
                folder,
                name,
                [float(r[i, j]) for r in self.background_regions[name]],
                [float(r[i, j]) for r in self.signal_regions[name]],
                relative,
            )
            self.results[name] = {**self.results[name], **likelihood}

    def sensitivity_maps(self) -> None:
        """Expected significance and limit over a thinned grid of cuts, per classifier."""
        data = self.data
        for name in data.scores:
            test = self.tests[name]
            nonclosure = (
                test.relative_nonclosure
                if test is not None
                else np.zeros((len(data.x0), len(data.y0)))
            )
            self.maps[name] = _sensitivity_map(
                self.background_regions[name],
                self.signal_regions[name],
                nonclosure,
                data.x0,
                data.y0,
                self.settings.sensitivity_thin,
            )
            computed = np.isfinite(self.maps[name].significance).any()
            self.results[name]["sensitivity_best"] = self.maps[name].best() if computed else None


def _closure_replicas(
    refitted: list[FloatArray],
    ensemble: rb.TransformEnsemble,
    make: Callable[[], Any],
    n_total: int,
    x_def: FloatArray,
    y_def: FloatArray,
    mjj: FloatArray,
    baseline: FloatArray,
) -> Iterator[FloatArray]:
    """The testing scores of ``n_total`` bootstrap replicas of a transform, one at a time.

    First the replicas of the figures of merit (``refitted``), then further
    Poisson(1) refits on the defining sample, with the draws that follow the
    ensemble's own (:func:`~rosenblatt.transforms.ensemble.poisson_weights`),
    each evaluated and dropped. A draw that cannot be fitted, or whose
    transform cannot evaluate every testing event, is replaced by the next.
    """
    from rosenblatt.transforms.ensemble import poisson_weights

    yield from refitted
    made, failed = len(refitted), 0
    draw = max([*ensemble.replica_draws_, *ensemble.failed_draws_]) + 1
    while made < n_total and failed < n_total:
        counts = poisson_weights(len(x_def), ensemble.seed, draw)
        draw += 1
        try:
            score = make().fit(x_def, y_def, counts).transform(mjj, baseline)
        except ValueError as err:
            log.info("closure replica of draw %d left out: %s", draw - 1, err)
            failed += 1
            continue
        made += 1
        yield score


class _Grid:
    """The ABCD regions of the testing events over the cut grid, refilled with other weights or scores."""

    def __init__(self, x: FloatArray, label: Int64Array, x0: FloatArray, y0: FloatArray) -> None:
        self.x_bin = np.searchsorted(x0, x, side="right")
        self.label = np.asarray(label).astype(np.intp)
        self.y0 = y0
        self.shape = (2, len(x0) + 1, len(y0) + 1)

    def content(self, score: FloatArray, weight: FloatArray) -> FloatArray:
        """``(process, x bin, y bin)`` weighted counts, flow bins included (as :func:`abcd_histogram`)."""
        y_bin = np.searchsorted(self.y0, score, side="right")
        index = (self.label * self.shape[1] + self.x_bin) * self.shape[2] + y_bin
        counts = np.bincount(index, weights=weight, minlength=int(np.prod(self.shape)))
        return np.asarray(counts, dtype=np.float64).reshape(self.shape)

    def eta(self, score: FloatArray, weight: FloatArray) -> FloatArray:
        """``eta_A`` of all events over the grid (as :attr:`ClosureScan.eta`)."""
        content = self.content(score, weight)
        a, b, c, d = region_sums(content.sum(axis=0))
        signal_a = region_sums(content[1])[0]
        with np.errstate(divide="ignore", invalid="ignore"):
            return (signal_a - (a - b * c / d)) / a

    def signal_bias(self, score: FloatArray, weight: FloatArray, i: int, j: int) -> float:
        """``(N_A - N_B N_C / N_D - S_A) / S_A`` at the cut ``(i, j)``."""
        content = self.content(score, weight)
        a, b, c, d = (r[i, j] for r in region_sums(content.sum(axis=0)))
        signal_a = region_sums(content[1])[0][i, j]
        if d <= 0 or signal_a <= 0:
            return float("nan")
        return float((a - b * c / d - signal_a) / signal_a)


def _best_index(scan: ClosureScan) -> tuple[int, int]:
    """Indices of :meth:`ClosureScan.best`'s cut."""
    abs_eta = np.where(scan.valid, np.abs(scan.eta), np.inf)
    i, j = np.unravel_index(int(np.argmin(abs_eta)), abs_eta.shape)
    return int(i), int(j)


def _sd(values: FloatArray) -> float:
    finite = values[np.isfinite(values)]
    return float(np.std(finite, ddof=1)) if len(finite) > 1 else float("nan")


def _std(replicas: FloatArray) -> FloatArray:
    """Standard deviation per cut over the replicas finite there (NaN where fewer than half are).

    A replica can empty a region of a cut that the nominal sample populates.
    """
    replicas = replicas[~np.isnan(replicas).all(axis=(1, 2))]
    finite = np.isfinite(replicas)
    count = finite.sum(axis=0)
    values = np.where(finite, replicas, 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        mean = values.sum(axis=0) / count
        variance = (np.where(finite, replicas - mean, 0.0) ** 2).sum(axis=0) / (count - 1)
    return np.where(2 * count >= max(len(replicas), 2), np.sqrt(variance), np.nan)


def _sensitivity_map(
    background: tuple[FloatArray, ...],
    signal: tuple[FloatArray, ...],
    nonclosure: FloatArray,
    x0: FloatArray,
    y0: FloatArray,
    thin: int,
) -> SensitivityMap:
    """Significance and limit on a thinned grid of cuts, as :func:`~rosenblatt.abcd.sensitivity_map`.

    A cut whose fit fails (few events) is left NaN instead of ending the map.
    """
    import pyhf

    start = time.perf_counter()
    significance = np.full((len(x0), len(y0)), np.nan)
    upper_limit = np.full((len(x0), len(y0)), np.nan)
    for i in thinned_indices(len(x0), thin):
        for j in thinned_indices(len(y0), thin):
            n_a, n_b, n_c, n_d = (float(r[i, j]) for r in background)
            s_a, s_b, s_c, s_d = (float(r[i, j]) for r in signal)
            r = float(nonclosure[i, j])
            if min(n_b, n_c, n_d, s_a) <= 0 or not 0 <= r < 1:
                continue
            with quiet_pyhf():
                workspace = pyhf_workspace(n_a, n_b, n_c, n_d, s_a, s_b, s_c, s_d, nonclosure=r)
                try:
                    significance[i, j] = expected_significance(workspace)
                    upper_limit[i, j] = expected_upper_limit(workspace)
                except (ValueError, pyhf.exceptions.FailedMinimization) as err:
                    log.info("no expected limit at the cut (%g, %g): %s", x0[i], y0[j], err)
    return SensitivityMap(
        x0=x0,
        y0=y0,
        significance=significance,
        upper_limit=upper_limit,
        seconds=time.perf_counter() - start,
    )


def _contamination(stage: _Stage) -> list[ContaminationRow]:
    """IRGI and KDE refitted on the defining background with W' events injected."""
    data, keep, bkg, grid = stage.data, stage.keep, stage.bkg, stage.grid
    mjj, label, x_def, y_def, x_sig, y_sig = (
        data.mjj,
        data.label,
        data.x_def,
        data.y_def,
        data.x_sig,
        data.y_sig,
    )
    fractions = stage.settings.contamination
    order = np.random.default_rng([stage.seed, 2]).permutation(len(x_sig))  # nested injected sets
    rows: list[ContaminationRow] = []
    for name, make in stage.makers.items():
        i, j = stage.best_index[name]
        for fraction in fractions:
            wanted = round(fraction * len(x_def))
            n_inject = min(wanted, len(x_sig))
            pick = order[:n_inject]
            transform = make().fit(
                np.concatenate([x_def, x_sig[pick]]), np.concatenate([y_def, y_sig[pick]])
            )
            score = transform.transform(mjj, data.baseline)
            replicas = {key: np.empty(stage.n_boot) for key in ("signal_bias", "auc", "dcc")}
            for k, w in enumerate(stage.test_weights):
                replicas["signal_bias"][k] = grid.signal_bias(score[keep], w[keep], i, j)
                replicas["auc"][k] = rb.roc_auc(label, score, w)
                replicas["dcc"][k] = rb.distance_correlation_sqr(mjj[bkg], score[bkg], w[bkg])
            rows.append(
                {
                    "classifier": name,
                    "fraction": fraction,
                    "n_injected": n_inject,
                    "signal_bias": grid.signal_bias(score[keep], np.ones(int(keep.sum())), i, j),
                    "signal_bias_err": _sd(replicas["signal_bias"]),
                    "auc": rb.roc_auc(label, score),
                    "auc_err": _sd(replicas["auc"]),
                    "dcc": rb.distance_correlation_sqr(mjj[bkg], score[bkg]),
                    "dcc_err": _sd(replicas["dcc"]),
                }
            )
            if n_inject < wanted:
                rows[-1]["note"] = (
                    f"only {len(x_sig)} validation signal events to inject ({wanted} wanted)"
                )
    return rows


def _automatic(stage: _Stage) -> dict[str, AutomaticChoice]:
    """IRGI and KDE with their parameter chosen by cross-validation on the defining sample alone."""
    data, bkg = stage.data, stage.bkg
    mjj, label, baseline, x_def, y_def = data.mjj, data.label, data.baseline, data.x_def, data.y_def
    n_perm = stage.settings.permutations
    out: dict[str, AutomaticChoice] = {}
    for name, transform, attribute in (
        ("irgi", rb.IRGI(depth="auto"), "depth_"),
        ("kde", rb.KDE(sigma_r="auto"), "sigma_r_"),
    ):
        transform.fit(x_def, y_def)
        score = transform.transform(mjj, baseline)
        perm = rb.permutation_test(mjj[bkg], score[bkg], n_permutations=n_perm, seed=1)
        value = getattr(transform, attribute)
        out[name] = {
            "value": int(value) if name == "irgi" else float(value),
            "auc": rb.roc_auc(label, score),
            "dcc": float(perm.statistic),
            "dcc_floor": float(perm.floor),
        }
    return out
