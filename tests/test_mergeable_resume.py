"""MergeableFit.run with a work folder: a stopped fit reads only the chunks left, runs only the tasks left.

The first pass is stopped by a real SIGTERM (the test hook
:data:`~rosenblatt.processors.pieces.STOP_AFTER_PIECES`) once some chunks have
pieces; the fit run again reads only the other chunks and saves the transform of
an uninterrupted fit, byte for byte. A changed input file or configuration is
read again. A fit stopped the same way in a later pass, over the skims, runs
again only that pass's tasks left.
"""

from __future__ import annotations

import logging
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from merge_observables import CountingObservables, read_columns, write_files

import rosenblatt as rb
from rosenblatt._interrupt import Stopped, stop_on_signals
from rosenblatt.processors.pieces import STOP_AFTER_PIECES

processor = pytest.importorskip("coffea.processor")
BaseSchema = pytest.importorskip("coffea.nanoevents").BaseSchema

#: 5 chunks in the first file, 4 in the second
CHUNKSIZE = 8_000
SIZES = (40_000, 30_000)


def _runner() -> Any:
    executor = processor.IterativeExecutor(status=False)
    return processor.Runner(executor, schema=BaseSchema, chunksize=CHUNKSIZE)


def _fit(
    work: Path, log: Path, fileset: dict[str, Any], transform: Any = None, **options: Any
) -> Any:
    fit = rb.MergeableFit(transform or rb.IRGI(depth=6), work_dir=work, **options)
    observables = CountingObservables(str(log), weighted=True)
    return fit.run(_runner(), fileset, observables, treename="Events")


def _read(log: Path) -> Counter[str]:
    """The chunks the function was called on (the log emptied)."""
    counted = Counter(log.read_text(encoding="utf-8").splitlines()) if log.exists() else Counter()
    log.write_text("", encoding="utf-8")
    return counted


def _pieces(work: Path) -> list[Path]:
    return [p for p in (work / "pieces").glob("*.zip") if not p.name.startswith(".")]


def test_a_stopped_fit_reads_only_the_chunks_left(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fileset = write_files(tmp_path, SIZES, seed=4)
    log = tmp_path / "calls.txt"
    fitted = _fit(tmp_path / "reference", log, fileset)
    reference = rb.serialization.dumps(fitted)
    assert len(_read(log)) == 9
    # the fit of the events in memory, as without a work folder
    columns = read_columns(fileset)
    in_memory = rb.IRGI(depth=6).fit(columns["mjj"], columns["score"], columns["weight"])
    np.testing.assert_array_equal(fitted.x_centres_, in_memory.x_centres_)
    np.testing.assert_allclose(fitted.cdf_, in_memory.cdf_, rtol=0, atol=1e-12)

    work = tmp_path / "work"
    monkeypatch.setenv(STOP_AFTER_PIECES, "fit:7")
    with pytest.raises(Stopped), stop_on_signals():
        _fit(work, log, fileset)
    monkeypatch.delenv(STOP_AFTER_PIECES)
    assert len(_pieces(work)) == 7
    assert len(_read(log)) == 7
    resumed = _fit(work, log, fileset)
    assert sum(_read(log).values()) == 2  # the two chunks left, once each
    assert rb.serialization.dumps(resumed) == reference
    # all kept: nothing read
    assert rb.serialization.dumps(_fit(work, log, fileset)) == reference
    assert not _read(log)


def test_a_changed_file_or_configuration_is_read_again(tmp_path: Path) -> None:
    fileset = write_files(tmp_path / "events", SIZES, seed=4)
    log, work = tmp_path / "calls.txt", tmp_path / "work"
    _fit(work, log, fileset)
    assert len(_read(log)) == 9
    skims = sorted((work / "skims").glob("skim-*.npy"))
    assert len(skims) == 9

    # the second file written again (other events): its 4 chunks are read again
    changed = write_files(tmp_path / "changed", SIZES, seed=5)
    second = sorted(changed["qcd"]["files"])[1]
    shutil.copy(second, sorted(fileset["qcd"]["files"])[1])
    fitted = rb.serialization.dumps(_fit(work, log, fileset))
    starts = (0, 7_500, 15_000, 22_500)
    assert set(_read(log)) == {f"events-1.root:{a}:{a + 7_500}" for a in starts}
    fresh = rb.serialization.dumps(_fit(tmp_path / "fresh", log, fileset))
    _read(log)
    assert fitted == fresh
    assert len(_pieces(work)) == 9  # the old file's pieces removed
    assert len(list((work / "skims").glob("skim-*.npy"))) == 9

    # another estimator's first pass (GridKDE orders y): nothing kept
    _fit(work, log, fileset, rb.GridKDE(sigma_r=0.2))
    assert len(_read(log)) == 9
    # a damaged skim is named and its chunk read again
    skim = sorted((work / "skims").glob("skim-*.npy"))[2]
    skim.write_bytes(skim.read_bytes()[:-8])
    _fit(work, log, fileset, rb.GridKDE(sigma_r=0.2))
    assert len(_read(log)) == 1


class _Tasks:
    """The tasks of the passes over the skims that this process runs, by type and key."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        from rosenblatt.outofcore import _running

        self.ran: list[tuple[str, str]] = []
        run_task = _running.run_task

        def counted(task: Any) -> dict[str, Any]:
            self.ran.append((type(getattr(task, "task", task)).__name__, str(task.key)))
            return run_task(task)

        monkeypatch.setattr(_running, "run_task", counted)

    def take(self) -> list[tuple[str, str]]:
        ran, self.ran = self.ran, []
        return ran


@pytest.mark.parametrize(
    "transform",
    [lambda: rb.IRGI(depth=6), lambda: rb.TransformEnsemble(rb.IRGI(depth=4), n=3, seed=2)],
    ids=["irgi", "ensemble"],
)
def test_a_fit_stopped_in_a_later_pass_runs_only_its_tasks_left(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, transform: Any
) -> None:
    fileset = write_files(tmp_path / "events", SIZES, seed=4)
    log = tmp_path / "calls.txt"
    tasks = _Tasks(monkeypatch)
    # small groups: several tasks in every pass
    options = {"gather_limit": 8_000}
    reference = rb.serialization.dumps(
        _fit(tmp_path / "reference", log, fileset, transform(), **options)
    )
    everything = tasks.take()
    sorts = [key for kind, key in everything if kind == "SortTask"]
    assert len(sorts) >= 4
    assert len(everything) >= len(sorts) + 4
    _read(log)

    work = tmp_path / "work"
    stop = len(sorts) + 3  # in the second pass over the skims
    monkeypatch.setenv(STOP_AFTER_PIECES, f"passes:{stop}")
    with pytest.raises(Stopped), stop_on_signals():
        _fit(work, log, fileset, transform(), **options)
    monkeypatch.delenv(STOP_AFTER_PIECES)
    (passes,) = (work / "passes").iterdir()
    assert len(list(passes.glob("*.zip"))) == stop
    assert len(tasks.take()) == stop
    _read(log)

    fitted = _fit(work, log, fileset, transform(), **options)
    assert not _read(log)  # the first pass all kept
    resumed = tasks.take()
    assert not [kind for kind, _ in resumed if kind == "SortTask"]
    assert len(resumed) == len(everything) - stop
    assert rb.serialization.dumps(fitted) == reference
    # the passes' pieces and group tables are removed once the fit is done
    assert not list((work / "passes").iterdir())
    assert not list((work / "skims").glob(".rosenblatt-groups-*"))


def test_a_damaged_group_table_is_sorted_again_and_other_groups_are_not_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    fileset = write_files(tmp_path / "events", SIZES, seed=4)
    log = tmp_path / "calls.txt"
    tasks = _Tasks(monkeypatch)
    options = {"gather_limit": 8_000}
    reference = rb.serialization.dumps(_fit(tmp_path / "reference", log, fileset, **options))
    sorts = [key for kind, key in tasks.take() if kind == "SortTask"]

    work = tmp_path / "work"
    monkeypatch.setenv(STOP_AFTER_PIECES, f"passes:{len(sorts) + 1}")
    with pytest.raises(Stopped), stop_on_signals():
        _fit(work, log, fileset, **options)
    monkeypatch.delenv(STOP_AFTER_PIECES)
    tasks.take()
    (groups,) = (work / "skims").glob(".rosenblatt-groups-*")
    table = sorted(groups.glob("group-*.npy"))[1]
    data = bytearray(table.read_bytes())
    data[len(data) // 2] ^= 0x01
    table.write_bytes(bytes(data))
    with caplog.at_level(logging.WARNING, "rosenblatt.cache"):
        fitted = _fit(work, log, fileset, **options)
    assert table.name in caplog.text
    assert [kind for kind, _ in tasks.take()].count("SortTask") == 1
    assert rb.serialization.dumps(fitted) == reference

    # other groups (another gather_limit): nothing kept, the stopped fit's pieces removed
    monkeypatch.setenv(STOP_AFTER_PIECES, f"passes:{len(sorts) + 1}")
    with pytest.raises(Stopped), stop_on_signals():
        _fit(work, log, fileset, **options)
    monkeypatch.delenv(STOP_AFTER_PIECES)
    tasks.take()
    _fit(work, log, fileset, gather_limit=12_000)
    assert "SortTask" in {kind for kind, _ in tasks.take()}
    assert not list((work / "passes").iterdir())
    assert not list((work / "skims").glob(".rosenblatt-groups-*"))
