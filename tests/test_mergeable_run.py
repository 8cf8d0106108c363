"""MergeableFit.run over a ROOT file set: each chunk read once, the in-memory fit, skims cleaned up."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from merge_observables import CountingObservables, read_columns, write_files

import rosenblatt as rb

processor = pytest.importorskip("coffea.processor")
BaseSchema = pytest.importorskip("coffea.nanoevents").BaseSchema

CHUNKSIZE = 12_000
SIZES = (40_000, 30_000)


@pytest.fixture(scope="module")
def fileset(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return write_files(tmp_path_factory.mktemp("events"), SIZES, seed=21)


@pytest.fixture(scope="module")
def columns(fileset: dict[str, Any]) -> dict[str, np.ndarray]:
    return read_columns(fileset)


def iterative_runner() -> Any:
    executor = processor.IterativeExecutor(status=False)
    return processor.Runner(executor, schema=BaseSchema, chunksize=CHUNKSIZE)


def calls(log: Path) -> Counter[str]:
    return Counter(log.read_text(encoding="utf-8").splitlines())


def assert_read_once(log: Path) -> None:
    """Every chunk was read once, and the chunks hold every event of the file set."""
    counted = calls(log)
    assert set(counted.values()) == {1}
    entries = Counter()
    for line in counted:
        name, start, stop = line.split(":")
        entries[name] += int(stop) - int(start)
    assert dict(entries) == {f"events-{k}.root": n for k, n in enumerate(SIZES)}


@pytest.mark.slow
def test_irgi_unit_weights_reads_once_and_equals_the_in_memory_fit(
    fileset: dict[str, Any], columns: dict[str, np.ndarray], tmp_path: Path
) -> None:
    x, y = columns["mjj"], columns["score"]
    assert len(np.unique(x)) < len(x)  # float32 values tie
    log = tmp_path / "calls.txt"
    fit = rb.MergeableFit(rb.IRGI(depth=7))
    fitted = fit.run(iterative_runner(), fileset, CountingObservables(str(log)), treename="Events")
    assert_read_once(log)
    assert fit.passes == 3
    reference = rb.IRGI(depth=7).fit(x, y)
    for name in ("x_centres_", "x_boundaries_", "y_edges_", "cdf_", "column_weight_"):
        np.testing.assert_array_equal(getattr(fitted, name), getattr(reference, name))
    assert fit.skim_dir_ is not None
    assert not Path(fit.skim_dir_).exists()


@pytest.mark.slow
def test_irgi_float_weights(
    fileset: dict[str, Any], columns: dict[str, np.ndarray], tmp_path: Path
) -> None:
    x, y, w = columns["mjj"], columns["score"], columns["weight"]
    log = tmp_path / "calls.txt"
    fit = rb.MergeableFit(rb.IRGI(depth=7), skim_dir=tmp_path / "skims")
    observables = CountingObservables(str(log), weighted=True)
    fitted = fit.run(iterative_runner(), fileset, observables, treename="Events")
    assert_read_once(log)
    reference = rb.IRGI(depth=7).fit(x, y, w)
    np.testing.assert_array_equal(fitted.x_centres_, reference.x_centres_)
    np.testing.assert_array_equal(fitted.y_edges_, reference.y_edges_)
    np.testing.assert_allclose(fitted.cdf_, reference.cdf_, rtol=0, atol=1e-12)
    assert not list((tmp_path / "skims").iterdir())


@pytest.mark.slow
def test_grid_kde_and_two_observables(
    fileset: dict[str, Any], columns: dict[str, np.ndarray], tmp_path: Path
) -> None:
    x, pt, y, w = columns["mjj"], columns["pt"], columns["score"], columns["weight"]
    rng = np.random.default_rng(3)
    test_x, test_pt = rng.uniform(1500, 6000, 2000), rng.uniform(400, 2500, 2000)
    test_y = rng.uniform(0, 1, 2000)
    log = tmp_path / "calls.txt"
    grid = rb.MergeableFit(rb.GridKDE(sigma_r=0.1)).run(
        iterative_runner(), fileset, CountingObservables(str(log), weighted=True), treename="Events"
    )
    reference = rb.GridKDE(sigma_r=0.1).fit(x, y, w)
    difference = grid.transform(test_x, test_y) - reference.transform(test_x, test_y)
    assert np.abs(difference).max() <= 1e-12
    log.unlink()
    two = rb.MergeableFit(rb.IRGI(depth=(2, 3))).run(
        iterative_runner(), fileset, CountingObservables(str(log), two=True), treename="Events"
    )
    assert_read_once(log)
    reference = rb.IRGI(depth=(2, 3)).fit([x, pt], y)
    np.testing.assert_array_equal(two.boxes_, reference.boxes_)
    difference = two.transform([test_x, test_pt], test_y) - reference.transform(
        [test_x, test_pt], test_y
    )
    assert np.abs(difference).max() <= 1e-12


@pytest.mark.slow
def test_kept_skims_and_an_interrupted_fit_rerun(
    fileset: dict[str, Any], columns: dict[str, np.ndarray], tmp_path: Path
) -> None:
    skims = tmp_path / "skims"
    interrupted = CountingObservables(str(tmp_path / "first.txt"), weighted=True, fail_at=CHUNKSIZE)
    with pytest.raises(KeyboardInterrupt):
        rb.MergeableFit(rb.IRGI(depth=6), skim_dir=skims).run(
            iterative_runner(), fileset, interrupted, treename="Events"
        )
    rerun = rb.MergeableFit(rb.IRGI(depth=6), skim_dir=skims, keep_skims=True)
    observables = CountingObservables(str(tmp_path / "second.txt"), weighted=True)
    fitted = rerun.run(iterative_runner(), fileset, observables, treename="Events")
    clean = rb.MergeableFit(rb.IRGI(depth=6)).fit_chunks(
        lambda: iter([(columns["mjj"], columns["score"], columns["weight"])])
    )
    assert fitted.get_state() == clean.get_state()
    kept = sorted(skims.glob("skim-*.npy"))
    assert len(kept) == len(calls(tmp_path / "second.txt"))
    assert not list(skims.glob(".rosenblatt-groups-*"))


@pytest.mark.slow
def test_futures_executor_reuses_one_pool(
    fileset: dict[str, Any], columns: dict[str, np.ndarray], tmp_path: Path
) -> None:
    import concurrent.futures

    log = tmp_path / "calls.txt"
    with concurrent.futures.ProcessPoolExecutor(2) as pool:
        executor = processor.FuturesExecutor(pool=pool, workers=2, status=False)
        runner = processor.Runner(executor, schema=BaseSchema, chunksize=CHUNKSIZE)
        list(pool.map(abs, range(4)))  # the workers start
        before = set(pool._processes)
        observables = CountingObservables(str(log), weighted=True)
        fitted = rb.MergeableFit(rb.IRGI(depth=5)).run(
            runner, fileset, observables, treename="Events"
        )
        assert set(pool._processes) == before  # the same workers for every pass
    assert_read_once(log)
    reference = rb.IRGI(depth=5).fit(columns["mjj"], columns["score"], columns["weight"])
    np.testing.assert_array_equal(fitted.y_edges_, reference.y_edges_)


@pytest.mark.slow
def test_bootstrap_ensemble(
    fileset: dict[str, Any], columns: dict[str, np.ndarray], tmp_path: Path
) -> None:
    from rosenblatt.outofcore._skims import bootstrap_counts, event_keys

    ensemble = rb.TransformEnsemble(rb.IRGI(depth=4), n=3, seed=7)
    fit = rb.MergeableFit(ensemble)
    log = tmp_path / "calls.txt"
    fitted = fit.run(iterative_runner(), fileset, CountingObservables(str(log)), treename="Events")
    assert_read_once(log)
    assert fit.passes == 4
    assert fitted is ensemble
    x, y = columns["mjj"], columns["score"]
    keys_all = np.concatenate([event_keys(name, n) for name, n in fit.chunks_])
    np.testing.assert_array_equal(
        fitted.transform(x[:500], y[:500]), rb.IRGI(depth=4).fit(x, y).transform(x[:500], y[:500])
    )
    for k, draw in enumerate(fitted.replica_draws_):
        weight = bootstrap_counts(7, draw, keys_all)
        replica = rb.IRGI(depth=4).fit(x, y, weight)
        np.testing.assert_array_equal(fitted.replicas_[k].y_edges_, replica.y_edges_)


def test_a_fit_with_its_bar_keeps_coffeas_bars_out_of_the_notebook(
    fileset: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In a notebook, two live bars at once write into each other's output widget."""
    from coffea.util import coffea_console
    from rich.live import Live

    monkeypatch.setattr(coffea_console, "is_jupyter", True)
    seen = []
    start = Live.start

    def recording_start(self: Live, refresh: bool = False) -> None:
        if self.console is coffea_console:
            seen.append((self.console.is_jupyter, self.console.quiet))
        start(self, refresh)

    monkeypatch.setattr(Live, "start", recording_start)
    observables = CountingObservables(str(tmp_path / "calls.txt"))
    rb.MergeableFit(rb.IRGI(depth=5), progress=True).run(
        iterative_runner(), fileset, observables, treename="Events"
    )
    assert seen  # the first pass (and the file set's preprocessing unless cached)
    assert set(seen) == {(False, True)}
    assert coffea_console.is_jupyter
    assert not coffea_console.quiet
