"""Fitting transforms on a file set's skims: negative weights, and the errors that name their events."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import rosenblatt as rb
from rosenblatt.exceptions import NegativeWeightError
from rosenblatt.testing import exact_gamma, negative_weight_sample

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
processor = pytest.importorskip("coffea.processor")

from rosenblatt.processors.events import chunk_file_name
from rosenblatt.processors.fitting import (
    fit_on_skims,
    negative_weight_sources,
    skim_origin,
)
from rosenblatt.processors.runner import map_items

DATASET = "qcd-defining"
CHUNK = 5000


def _write_skims(
    folder: Path, source: str, x: np.ndarray, y: np.ndarray, w: np.ndarray
) -> list[str]:
    """The skims a first pass writes of ``source``, one per chunk of ``CHUNK`` entries."""
    paths = []
    for start in range(0, len(y), CHUNK):
        stop = min(start + CHUNK, len(y))
        path = folder / chunk_file_name(DATASET, source, start, stop)
        table = {
            "x": x[start:stop],
            "score_score": y[start:stop],
            "weight": w[start:stop],
            "label": np.zeros(stop - start, dtype=np.int64),
            "entry": np.arange(start, stop),
        }
        pq.write_table(pa.table(table), path)
        paths.append(str(path))
    return paths


def _run_pass(items, function, description):  # type: ignore[no-untyped-def]
    return map_items(processor.IterativeExecutor(), items, function, description)


@pytest.mark.parametrize("make", [lambda: rb.KDE(0.1), lambda: rb.GridKDE(0.3)])
def test_kernel_estimators_fit_skims_with_negative_weights(make, tmp_path: Path) -> None:
    """GridKDE with a fixed width in the workers, KDE on the gathered events: the same fit."""
    x, y, w = negative_weight_sample(20_000, 0.25, seed=3)
    paths = _write_skims(tmp_path, str(tmp_path / "defining.root"), x, y, w)
    fitted = fit_on_skims(make(), paths, "score", _run_pass)
    xq, yq = negative_weight_sample(3000, 0.0, seed=4)[:2]
    np.testing.assert_allclose(fitted.transform(xq, yq), make().fit(x, y, w).transform(xq, yq))
    assert np.sqrt(np.mean((fitted.transform(xq, yq) - exact_gamma(xq, yq)) ** 2)) < 0.025


@pytest.mark.parametrize("sigma_r", [0.1, "auto"])
def test_an_error_that_remains_names_the_dataset_file_and_entries(
    sigma_r: float | str, tmp_path: Path
) -> None:
    """Negative weights bunched at low x cancel the positive ones: x has no weighted spread."""
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.uniform(0.5, 1.0, 20_000), rng.uniform(0.0, 0.05, 19_000)])
    w = np.concatenate([np.ones(20_000), np.full(19_000, -1.0)])
    order = rng.permutation(len(x))
    x, w = x[order], w[order]
    y = rng.normal(size=len(x))
    source = str(tmp_path / "defining.root")
    paths = _write_skims(tmp_path, source, x, y, w)
    with pytest.raises(NegativeWeightError) as error:
        fit_on_skims(rb.GridKDE(sigma_r), paths, "score", _run_pass, sources={DATASET: [source]})
    message = str(error.value)
    assert "the weighted variance of x is not positive" in message
    # the chunk of the most negative weight is named first, with its first negative entries
    start = CHUNK * int(
        np.argmin([w[s : s + CHUNK][w[s : s + CHUNK] < 0].sum() for s in range(0, len(w), CHUNK)])
    )
    entries = start + np.flatnonzero(w[start : start + CHUNK] < 0)
    listed = ", ".join(str(e) for e in entries[:5])
    first = f"dataset {DATASET}, file {source} (chunk of entries {start}-{start + CHUNK}): "
    assert f"come from {first}entries {listed} and {len(entries) - 5} more" in message
    assert message.endswith("; and 5 more skim(s)")


def test_the_entries_named_are_those_where_the_fit_failed(tmp_path: Path) -> None:
    x = np.linspace(0.0, 10.0, 12_000)
    w = np.ones(len(x))
    w[[10, 20, 7000, 7001, 11_000]] = -1.0
    source = str(tmp_path / "defining.root")
    paths = _write_skims(tmp_path, source, x, np.zeros(len(x)), w)
    where = negative_weight_sources(paths, (5.0, 6.0), {DATASET: [source]})
    assert where == (
        f"negative weights at x in [5, 6] come from dataset {DATASET}, file {source} "
        "(chunk of entries 5000-10000): entries 7000, 7001 (weight -2)"
    )
    everywhere = negative_weight_sources(paths, None, {DATASET: [source]})
    assert everywhere.startswith(f"negative weights come from dataset {DATASET}, file {source}")
    assert everywhere.count("dataset") == 3  # the three chunks, most negative first
    assert "entries 10, 20 (weight -2)" in everywhere.split(";")[0]
    assert negative_weight_sources(paths, (1.0, 2.0), {}) == (
        "no event of the defining skims has a negative weight at x in [1, 2]"
    )


def test_a_skim_is_named_by_its_dataset_file_and_chunk(tmp_path: Path) -> None:
    one, two = str(tmp_path / "a" / "f.root"), str(tmp_path / "b" / "f.root")
    name = chunk_file_name(DATASET, two, 200, 400)
    sources = {DATASET: [one, two], "other": [one]}
    assert skim_origin(str(tmp_path / name), sources) == (
        f"dataset {DATASET}, file {two} (chunk of entries 200-400)"
    )
    assert skim_origin(str(tmp_path / name), {}) == (
        f"skim {tmp_path / name} (chunk of entries 200-400)"
    )
    assert skim_origin("elsewhere.parquet", sources) == "skim elsewhere.parquet"


def test_a_fit_stopped_in_its_first_pass_reads_only_the_skims_left(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rosenblatt._interrupt import Stopped, stop_on_signals
    from rosenblatt.processors.pieces import STOP_AFTER_PIECES

    rng = np.random.default_rng(8)
    x = rng.uniform(0.0, 1.0, 40_000)
    y = rng.normal(x, 0.2)
    w = rng.choice([-0.5, 1.0, 1.5], len(y))
    paths = _write_skims(tmp_path, "events.root", x, y, w)  # 8 files
    read: list[str] = []

    def run_pass(items, function, description):  # type: ignore[no-untyped-def]
        read.extend(str(item) for item in items if isinstance(item, str))
        return _run_pass(items, function, description)

    def fit(work: Path) -> str:
        kept = fit_on_skims(rb.IRGI(depth=4), paths, "score", run_pass, work_dir=work)
        return rb.serialization.dumps(kept)

    reference = fit(tmp_path / "reference")
    assert rb.serialization.dumps(rb.IRGI(depth=4).fit(x, y, w)) == reference
    monkeypatch.setenv(STOP_AFTER_PIECES, "fit:6")
    with pytest.raises(Stopped), stop_on_signals():
        fit(tmp_path / "work")
    monkeypatch.delenv(STOP_AFTER_PIECES)
    read.clear()
    assert fit(tmp_path / "work") == reference
    assert sorted(read) == sorted(paths)[6:]  # the first pass read the two files left
    read.clear()
    assert fit(tmp_path / "work") == reference
    assert read == []
    # a skim file written again with other weights is read again, alone
    changed = pq.read_table(paths[3]).to_pydict()
    changed["weight"] = [2.0 * v for v in changed["weight"]]
    pq.write_table(pa.table(changed), paths[3])
    assert fit(tmp_path / "work") != reference
    assert read == [paths[3]]


def test_a_fit_stopped_in_a_later_pass_runs_only_its_tasks_left(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rosenblatt._interrupt import Stopped, stop_on_signals
    from rosenblatt.outofcore import mergeable as mergeable_module
    from rosenblatt.processors.pieces import STOP_AFTER_PIECES

    rng = np.random.default_rng(9)
    x = rng.uniform(0.0, 1.0, 40_000)
    y = rng.normal(x, 0.2)
    paths = _write_skims(tmp_path, "events.root", x, y, rng.uniform(0.5, 1.5, len(y)))
    # groups of about 8000 events: 5 sort tasks, then the columns' tasks
    monkeypatch.setattr(mergeable_module, "GROUPS_PER_WORKER", 5)
    monkeypatch.setattr(mergeable_module, "MIN_GROUP", 8_000)
    ran: list[str] = []

    def run_pass(items, function, description):  # type: ignore[no-untyped-def]
        ran.extend(type(getattr(item, "task", item)).__name__ for item in items)
        return _run_pass(items, function, description)

    def fit(work: Path) -> str:
        kept = fit_on_skims(rb.IRGI(depth=5), paths, "score", run_pass, work_dir=work)
        return rb.serialization.dumps(kept)

    reference = fit(tmp_path / "reference")
    everything = list(ran)
    sorts = everything.count("SortTask")
    assert sorts >= 4
    assert len(everything) - len(paths) >= sorts + 3
    monkeypatch.setenv(STOP_AFTER_PIECES, f"passes:{sorts + 2}")
    with pytest.raises(Stopped), stop_on_signals():
        fit(tmp_path / "work")
    monkeypatch.delenv(STOP_AFTER_PIECES)
    ran.clear()
    assert fit(tmp_path / "work") == reference
    assert "str" not in ran  # no skim file read again
    assert "SortTask" not in ran
    assert len(ran) == len(everything) - len(paths) - sorts - 2
