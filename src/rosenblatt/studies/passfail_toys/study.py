"""The pass/fail pseudo-experiment study (``study: passfail-toys``).

For each score of the configuration (the exact conditional CDF, fitted transforms, the
raw score) ``n_toys`` pseudo-experiments of the pass/fail fit in bins of ``x``
(:mod:`~rosenblatt.studies.passfail_toys.spectra`): for each injected mass and strength
a data set is drawn and the signal strength fitted at that mass with its 68%
profile-likelihood interval (:func:`~rosenblatt.abcd.bumphunt.signal_strength`); the
background-only data set is also scanned over the mass grid (unless ``global_toys`` is 0),
giving its largest local significance and its upcrossings of ``u0``. The global p-value each data set claims is
the fraction of ``global_toys`` pseudo-experiments of a background-only fit (that of
pseudo-experiment 0, :func:`~rosenblatt.abcd.look_elsewhere.global_significance`) whose
largest local significance reaches its own.

With keyed bootstrap replicas (``n_boot``), each fitted transform's fits hold the
per-bin non-closure measured on its defining sample with the keyed bootstrap's error
(:data:`~rosenblatt.studies.passfail_toys.spectra.KEYED`); the same data sets are also
fitted with the statistical error alone and with no non-closure, kept beside them
(``compare``) to show what the transform's fit term changes.

Steps:

1. ``toys``: the pseudo-experiments of each score, kept in ``<data folder>/<score>.json``
   with the configuration they came from and the version and source digest of the code
   that computed them (:data:`PASSFAIL_TOY_SOURCES`), every ``SAVE_EVERY`` toys, so that a
   rerun of the same configuration and code (after a stop, too) reads them and runs only
   the rest, while a changed transform or fit computes them again;
2. ``report``: ``summary.json``, ``report.md``, ``table.md`` and the figure of bias and
   coverage.
"""

from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np

from rosenblatt._atomic import write_text
from rosenblatt._extras import progress_bar
from rosenblatt._records import source_digest
from rosenblatt._version import __version__
from rosenblatt.abcd.bumphunt import local_significance_scan, signal_strength
from rosenblatt.abcd.look_elsewhere import global_significance, upcrossings
from rosenblatt.studies._common import Steps, write_summary
from rosenblatt.studies.abcd.config import TransformConfig
from rosenblatt.studies.passfail_toys.config import PassfailToysConfig
from rosenblatt.studies.passfail_toys.report import draw_figure, report_text, result_table
from rosenblatt.studies.passfail_toys.spectra import KEYED, STATISTICAL, Spectra, expected_spectra
from rosenblatt.studies.passfail_toys.summary import (
    NO_NONCLOSURE,
    PassfailToysSummary,
    ScoreRows,
    ToyRow,
    summarise,
)
from rosenblatt.typing import FloatArray, Int64Array

__all__ = [
    "COMPARED",
    "NO_NONCLOSURE",
    "PASSFAIL_TOY_SOURCES",
    "STEPS",
    "code_digest",
    "fingerprint",
    "pseudo_experiments",
    "reference_maxima",
    "run",
]

log = logging.getLogger("rosenblatt.passfail_toys")

#: the steps of the study, in order
STEPS = ("toys", "report")
#: pseudo-experiments between two writes of a score's file
SAVE_EVERY = 50
#: the non-closures of the fits kept beside the keyed bootstrap's, in order
COMPARED = (STATISTICAL, NO_NONCLOSURE)
#: the package's modules and folders whose code computes a pseudo-experiment's result: the
#: kept toys are keyed with their digest (:func:`code_digest`)
PASSFAIL_TOY_SOURCES = (
    "transforms",
    "abcd",
    "_jit.py",
    "studies/abcd/config.py",
    "studies/toys/config.py",
    "studies/toys/population.py",
    "studies/passfail_toys/config.py",
    "studies/passfail_toys/spectra.py",
    "studies/passfail_toys/study.py",
)


def run(config: dict[str, Any], folder: Path) -> PassfailToysSummary:
    """Run the pseudo-experiments of ``config``; write the report and summary to ``folder``."""
    cfg = PassfailToysConfig.parse(config)
    steps = Steps(STEPS, log, digits=1)
    cache = Path(cfg.data_folder or Path("data") / cfg.name)
    results = steps.run("toys", _all_scores, cfg, cache)
    summary = steps.run("report", _report, cfg, folder, results, steps.seconds)
    steps.write(folder)
    return summary


def _report(
    cfg: PassfailToysConfig,
    folder: Path,
    results: list[ScoreRows],
    seconds: dict[str, float],
) -> PassfailToysSummary:
    summary = summarise(cfg, results, seconds)
    write_summary(folder, summary, strict=False)
    figure = draw_figure(folder, summary)
    write_text(folder / "table.md", result_table(summary))
    write_text(folder / "report.md", report_text(summary, figure))
    return summary


def code_digest() -> str:
    """The digest of the source of :data:`PASSFAIL_TOY_SOURCES` (:func:`~rosenblatt._records.source_digest`)."""
    return source_digest(*PASSFAIL_TOY_SOURCES)


def fingerprint(cfg: PassfailToysConfig, score: str, transform: TransformConfig | None) -> str:
    """What a score's pseudo-experiments depend on, hashed: a kept result is reused only on a match.

    Besides the configuration, the package's version and :func:`code_digest`:
    toys computed by other code are computed again.
    """
    keys: dict[str, Any] = {
        "version": __version__,
        "code": code_digest(),
        "seed": cfg.seed,
        "population": asdict(cfg.population),
        "spectrum": asdict(cfg.spectrum),
        "score": score,
    }
    if transform is not None:
        keys["transform"] = {"kind": transform.kind, **dict(transform.parameters)}
        keys["n_defining"] = cfg.n_defining
        if cfg.replicas:
            keys["n_boot"] = cfg.replicas
    text = json.dumps(keys, sort_keys=True, default=str)
    return hashlib.blake2b(text.encode(), digest_size=16).hexdigest()


def pseudo_experiments(
    cfg: PassfailToysConfig, spectra: list[Spectra], toys: list[int]
) -> list[ToyRow]:
    """Pseudo-experiments ``toys`` on their expected spectra, fitted together.

    Parameters
    ----------
    cfg
        The configuration.
    spectra
        The expected spectra of each pseudo-experiment (one object for all where
        they are the same: its background-only scans are then fitted together).
    toys
        The pseudo-experiments' numbers: each seeds its own data sets.

    Returns
    -------
    list of ToyRow
        Per pseudo-experiment ``mu_hat``, ``low`` and ``high`` per
        ``"<mass>/<strength>"``, and of its background-only data set the
        largest local significance ``max_z`` over the scan and its upcrossings
        of ``u0`` (without them where ``global_toys`` is 0). With a non-closure
        per bin in ``spectra`` the fits hold the keyed bootstrap's, and
        ``compare`` the same fits with each non-closure of :data:`COMPARED`.
    """
    spectrum = cfg.spectrum
    rngs = [np.random.default_rng((cfg.seed, toy, 1)) for toy in toys]
    b_pass = np.stack([s.background_pass for s in spectra])
    b_fail = np.stack([s.background_fail for s in spectra])
    s_pass_all = np.stack([s.templates.passing for s in spectra])
    s_fail_all = np.stack([s.templates.failing for s in spectra])
    null_pass = np.stack([rng.poisson(row) for rng, row in zip(rngs, b_pass, strict=True)])
    null_fail = np.stack([rng.poisson(row) for rng, row in zip(rngs, b_fail, strict=True)])
    masses = [float(m) for m in np.round(spectra[0].templates.masses, 10)]
    rows: list[ToyRow] = [{"toy": toy, "fits": {}} for toy in toys]
    nonclosure = _nonclosures(spectra)
    keyed = nonclosure.pop(KEYED, None)
    for row in rows:
        if nonclosure:
            row["compare"] = {mode: {} for mode in nonclosure}
    for mass in spectrum.masses:
        index = masses.index(round(mass, 10))
        s_pass, s_fail = s_pass_all[:, index], s_fail_all[:, index]
        for strength in spectrum.strengths:
            if strength == 0:
                passing, failing = null_pass, null_fail
            else:
                passing = np.stack(
                    [
                        rng.poisson(m)
                        for rng, m in zip(rngs, b_pass + strength * s_pass, strict=True)
                    ]
                )
                failing = np.stack(
                    [
                        rng.poisson(m)
                        for rng, m in zip(rngs, b_fail + strength * s_fail, strict=True)
                    ]
                )
            key = f"{mass:g}/{strength:g}"
            data = (passing.astype(np.float64), failing.astype(np.float64), s_pass, s_fail)
            fits = signal_strength(*data, nonclosure=keyed)
            for row, values in zip(rows, np.stack(fits, axis=1), strict=True):
                row["fits"][key] = [float(v) for v in values]
            for mode, relative in nonclosure.items():
                compared = signal_strength(*data, nonclosure=relative)
                for row, values in zip(rows, np.stack(compared, axis=1), strict=True):
                    row["compare"][mode][key] = [float(v) for v in values]
    if spectrum.global_toys > 0:
        _scan_nulls(cfg, spectra, rows, (null_pass, null_fail), keyed)
    return rows


def _scan_nulls(
    cfg: PassfailToysConfig,
    spectra: list[Spectra],
    rows: list[ToyRow],
    nulls: tuple[Int64Array, Int64Array],
    keyed: FloatArray | None,
) -> None:
    """Each background-only data set's largest local significance and upcrossings, into ``rows``.

    ``nulls`` are the passing and failing counts, one row per pseudo-experiment;
    ``keyed`` their non-closure per bin (``None``: none).
    """
    null_pass, null_fail = nulls
    if all(s is spectra[0] for s in spectra):
        groups = [(list(range(len(rows))), spectra[0].templates)]
    else:
        groups = [([i], s.templates) for i, s in enumerate(spectra)]
    for members, templates in groups:
        z = np.atleast_2d(
            local_significance_scan(
                null_pass[members].astype(np.float64),
                null_fail[members].astype(np.float64),
                templates,
                nonclosure=None if keyed is None else keyed[members],
            )
        )
        crossings = upcrossings(z**2, cfg.spectrum.reference_level)
        for i, scan, count in zip(members, z, crossings, strict=True):
            rows[i]["max_z"] = float(scan.max())
            rows[i]["upcrossings"] = int(count)


def _nonclosures(spectra: list[Spectra]) -> dict[str, FloatArray | None]:
    """Per non-closure of the spectra, one row per pseudo-experiment (none without them).

    :data:`KEYED` and those of :data:`COMPARED`, where every pseudo-experiment
    measured them; ``None`` for :data:`NO_NONCLOSURE`.
    """
    if not all(KEYED in s.nonclosure for s in spectra):
        return {}
    stacked: dict[str, FloatArray | None] = {
        mode: np.stack([s.nonclosure[mode] for s in spectra]) for mode in (KEYED, STATISTICAL)
    }
    stacked[NO_NONCLOSURE] = None
    return stacked


def reference_maxima(cfg: PassfailToysConfig, spectra: Spectra) -> list[float]:
    """The largest local significances of the pseudo-experiments of one background-only fit.

    Pseudo-experiment 0's background-only data set is fitted and
    ``global_toys`` pseudo-experiments drawn from the fit
    (:func:`~rosenblatt.abcd.look_elsewhere.global_significance`): the distribution
    from which a data set's global p-value is claimed.
    """
    rng = np.random.default_rng((cfg.seed, 0, 1))
    passing = rng.poisson(spectra.background_pass).astype(np.float64)
    failing = rng.poisson(spectra.background_fail).astype(np.float64)
    result = global_significance(
        passing,
        failing,
        spectra.edges,
        spectra.templates,
        n_toys=cfg.spectrum.global_toys,
        seed=cfg.seed,
        reference_level=cfg.spectrum.reference_level,
        nonclosure=spectra.nonclosure.get(KEYED),
    )
    return [float(z) for z in result.toys_max_z]


def _all_scores(cfg: PassfailToysConfig, cache: Path) -> list[ScoreRows]:
    cache.mkdir(parents=True, exist_ok=True)
    return [(name, *_score(cfg, name, transform, cache)) for name, transform in cfg.scores()]


def _score(
    cfg: PassfailToysConfig, name: str, transform: TransformConfig | None, cache: Path
) -> tuple[list[ToyRow], list[float]]:
    """A score's pseudo-experiments and reference maxima, those kept read, the rest run."""
    path = cache / f"{name}.json"
    key = fingerprint(cfg, name, transform)
    rows, reference = _read_cached(path, key)
    done = {row["toy"]: row for row in rows}
    missing = [toy for toy in range(cfg.n_toys) if toy not in done]
    scans = cfg.spectrum.global_toys > 0
    if not missing and (reference or not scans):
        log.info("%s: %d toys read from %s", name, cfg.n_toys, path)
        return [done[toy] for toy in range(cfg.n_toys)], reference

    def spectra_of(toy: int) -> Spectra:
        return fixed or expected_spectra(cfg, name, transform, toy)

    def keep() -> None:
        ordered = sorted(done.values(), key=lambda row: row["toy"])
        text = json.dumps({"fingerprint": key, "toys": ordered, "reference": reference})
        write_text(path, text)

    fixed = None if transform is not None else expected_spectra(cfg, name, None, 0)
    if scans and not reference:
        reference = reference_maxima(cfg, spectra_of(0))
        keep()
    bar = progress_bar(total=len(missing), desc=f"pass/fail toys {name}", unit="toy")
    try:
        for start in range(0, len(missing), SAVE_EVERY):
            toys = missing[start : start + SAVE_EVERY]
            for row in pseudo_experiments(cfg, [spectra_of(toy) for toy in toys], toys):
                done[row["toy"]] = row
            keep()
            bar.update(len(toys))
    finally:
        bar.close()
    return [done[toy] for toy in range(cfg.n_toys)], reference


def _read_cached(path: Path, key: str) -> tuple[list[ToyRow], list[float]]:
    """The toys and reference maxima a kept file holds for this fingerprint (none if absent,
    damaged or another's)."""
    try:
        stored = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return [], []
    if not isinstance(stored, dict) or stored.get("fingerprint") != key:
        return [], []
    rows, reference = stored.get("toys"), stored.get("reference")
    return (
        rows if isinstance(rows, list) else [],
        reference if isinstance(reference, list) else [],
    )
