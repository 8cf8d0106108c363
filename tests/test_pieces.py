"""A pass's chunks kept as pieces: read back exactly, keyed, checked, merged in a fixed order.

The end-to-end tests stop a real ``rosenblatt run`` of the abcd study (SIGTERM, through
the test hook :data:`~rosenblatt.processors.pieces.STOP_AFTER_PIECES`, once some
chunks of its analysis pass are done), run it again, and check that the second run
computed only the chunks left and gave the results of an uninterrupted run; and that a
changed input file or configuration is never served from the pieces.
"""

from __future__ import annotations

import functools
import logging
import os
import re
import shutil
import subprocess
import sys
import time
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("coffea")
pytest.importorskip("uhi")
uproot = pytest.importorskip("uproot")

from dijet_ntuple import dijet_columns

from rosenblatt._records import refusing_corrupt_cache
from rosenblatt.exceptions import CorruptCacheError
from rosenblatt.processors import pieces as pieces_module
from rosenblatt.processors.analysis import PlaneBinning, Variant, empty_output, fill_variants
from rosenblatt.processors.pieces import (
    STOP_AFTER_PIECES,
    Chunk,
    PieceStore,
    PieceTask,
    fingerprint,
    run_in_pieces,
    write_returned,
)

VARIANTS = [Variant("score", "score", (0.2, 0.5, 0.8))]


def _output(seed: int, dataset: str = "qcd", skim: list[str] | None = None) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    n = 500
    output = empty_output(VARIANTS, (1.0, 2.0), PlaneBinning(x_range=(0.0, 3.0)), "x", dataset)
    fill_variants(
        output,
        VARIANTS,
        dataset=dataset,
        x=rng.uniform(0.0, 3.0, n),
        scores={"score": rng.uniform(0.0, 1.0, n)},
        process=rng.integers(0, 2, n),
        weight=rng.normal(1.0, 0.7, n) * 1e3 ** rng.uniform(-1, 1, n),
    )
    output["cutflow"] = {dataset: {"read": n, "in ABCD": n}}
    output["skim"] = skim or []
    return output


def _store(folder: Path, document: Any = "config", digest: str = "d0") -> PieceStore:
    return PieceStore.create(folder, "analyse", document, {"in.root": digest})


def _counted_loads(monkeypatch: pytest.MonkeyPatch) -> list[Chunk]:
    """The chunks whose pieces :meth:`PieceStore.load` reads from now on, in order."""
    loaded: list[Chunk] = []
    load = PieceStore.load

    def counted(self: PieceStore, chunk: Chunk) -> dict[str, Any]:
        loaded.append(chunk)
        return load(self, chunk)

    monkeypatch.setattr(PieceStore, "load", counted)
    return loaded


def _same(a: dict[str, Any], b: dict[str, Any]) -> bool:
    for key in ("abcd", "plane"):
        for name, h in a[key].items():
            if list(h.axes) != list(b[key][name].axes):
                return False
            for part in ("value", "variance"):
                got, want = b[key][name].view(flow=True)[part], h.view(flow=True)[part]
                if got.tobytes() != want.tobytes():
                    return False
    return a["cutflow"] == b["cutflow"] and a["skim"] == b["skim"]


def test_a_piece_reads_back_bit_for_bit(tmp_path: Path) -> None:
    store = _store(tmp_path / "pieces")
    chunk = Chunk("qcd", "in.root", 0, 500)
    skim = tmp_path / "skim.parquet"
    skim.write_bytes(b"skim")
    output = _output(1, skim=[str(skim.resolve())])
    assert not store.sound(chunk)
    store.save(chunk, output)
    assert store.sound(chunk)
    assert _same(output, store.load(chunk))


def test_the_key_holds_configuration_content_and_entries(tmp_path: Path) -> None:
    chunk = Chunk("qcd", "in.root", 0, 500)
    base = _store(tmp_path)
    keys = {
        base.key(chunk),
        _store(tmp_path, document="other").key(chunk),
        _store(tmp_path, digest="d1").key(chunk),
        base.key(Chunk("qcd", "in.root", 0, 499)),
        base.key(Chunk("sig", "in.root", 0, 500)),
    }
    assert len(keys) == 5
    assert fingerprint({"a": 1, "b": 2}) == fingerprint({"b": 2, "a": 1})


def test_a_damaged_piece_or_skim_is_named_and_computed_again(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = _store(tmp_path / "pieces")
    chunk = Chunk("qcd", "in.root", 0, 500)
    skim = tmp_path / "skim.parquet"
    skim.write_bytes(b"skim")
    store.save(chunk, _output(1, skim=[str(skim.resolve())]))
    skim.write_bytes(b"SKIM")
    with caplog.at_level(logging.WARNING, "rosenblatt.cache"):
        assert not store.sound(chunk)
    assert "skim.parquet" in caplog.text
    store.save(chunk, _output(1, skim=[str(skim.resolve())]))
    path = store.path(chunk)
    data = bytearray(path.read_bytes())
    data[len(data) // 3] ^= 0xFF
    path.write_bytes(bytes(data))
    with refusing_corrupt_cache(), pytest.raises(CorruptCacheError, match=path.name):
        store.sound(chunk)
    assert not store.sound(chunk)
    assert not path.exists()


@dataclass
class _Skimmer:
    """A processor of one item that writes a skim into ``skim_dir`` (as the analysis does)."""

    skim_dir: str

    def process_item(self, chunk: Chunk) -> dict[str, Any]:
        path = Path(self.skim_dir) / f"{chunk.dataset}-{chunk.start}.parquet"
        path.write_bytes(f"skim of {chunk}".encode())
        return _output(chunk.start, skim=[str(path)])


def test_without_a_shared_disk_the_piece_and_skims_come_back_as_bytes(tmp_path: Path) -> None:
    chunk = Chunk("qcd", "in.root", 0, 500)
    results = {}
    for shared in (True, False):
        data = tmp_path / f"shared-{shared}"
        (data / "skim").mkdir(parents=True)
        store = PieceStore.create(data / "pieces", "score", "config", {}, shared=shared)
        task = PieceTask(_Skimmer(str(data / "skim")).process_item, lambda item: item, store)
        returned = task(chunk)
        if not shared:
            # the worker wrote nothing of the driver's: the driver writes what came back
            assert not list((data / "skim").iterdir())
            assert not store.path(chunk).exists()
            assert set(returned["files"]) == {
                str(data / "skim" / "qcd-0.parquet"),
                str(store.path(chunk)),
            }
            write_returned(returned)
        assert store.sound(chunk)
        results[shared] = store.load(chunk), (data / "skim" / "qcd-0.parquet").read_bytes()
    (shared_output, shared_skim), (output, skim) = results[True], results[False]
    assert skim == shared_skim
    assert _same(shared_output, {**output, "skim": shared_output["skim"]})
    assert [Path(path).name for path in output["skim"]] == ["qcd-0.parquet"]
    # a plain function, no processor's method, that writes no skim: the piece alone
    store = PieceStore.create(tmp_path / "plain", "analyse", "config", {}, shared=False)
    returned = PieceTask(lambda item: _output(3), lambda item: item, store)(chunk)
    assert list(returned["files"]) == [str(store.path(chunk))]


def test_the_merge_is_the_same_whatever_ran_when(tmp_path: Path) -> None:
    chunks = [Chunk("qcd", "in.root", start, start + 500) for start in range(0, 3000, 500)]
    outputs = {chunk: _output(k) for k, chunk in enumerate(chunks)}

    def runner(store: PieceStore, order: list[int], ran: list[Chunk]) -> Any:
        def run_missing(missing: list[Chunk]) -> None:
            ran.extend(missing)
            for k in order:
                if chunks[k] in missing:
                    store.save(chunks[k], outputs[chunks[k]])

        return run_missing

    whole = _store(tmp_path / "whole")
    first = run_in_pieces(whole, chunks[::-1], runner(whole, [0, 1, 2, 3, 4, 5], []))
    split = _store(tmp_path / "split")
    for k in (4, 1):
        split.save(chunks[k], outputs[chunks[k]])
    stale = Chunk("qcd", "in.root", 0, 10)
    _store(tmp_path / "split", document="other").save(stale, outputs[chunks[0]])
    ran: list[Chunk] = []
    second = run_in_pieces(split, chunks, runner(split, [5, 3, 2, 0], ran))
    assert ran == [chunks[k] for k in (0, 2, 3, 5)]
    assert _same(first, second)
    assert sorted(p.name for p in (tmp_path / "split").iterdir()) == sorted(
        split.path(c).name for c in chunks
    )


@pytest.mark.parametrize("read_ahead", [64, 1])
def test_the_kept_pieces_are_read_while_the_chunks_left_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, read_ahead: int
) -> None:
    chunks = [Chunk("qcd", "in.root", start, start + 500) for start in range(0, 4000, 500)]
    outputs = {chunk: _output(k) for k, chunk in enumerate(chunks)}
    whole = _store(tmp_path / "whole")
    for chunk in chunks:
        whole.save(chunk, outputs[chunk])
    uninterrupted = run_in_pieces(whole, chunks, lambda missing: pytest.fail("nothing is left"))

    monkeypatch.setattr(pieces_module, "READ_AHEAD", read_ahead)
    loaded = _counted_loads(monkeypatch)
    split = _store(tmp_path / "split")
    left = {chunks[k] for k in (2, 6)}
    for chunk in chunks:
        if chunk not in left:
            split.save(chunk, outputs[chunk])
    # read while the chunks left run: the first two merged, up to READ_AHEAD others held
    read_first = {chunks[k] for k in (0, 1, 3, 4, 5, 7)[: 2 + read_ahead]}

    def run_missing(missing: list[Chunk]) -> None:
        assert set(missing) == left
        deadline = time.monotonic() + 30.0
        while not read_first <= set(loaded) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert set(loaded) == read_first
        for chunk in missing:
            split.save(chunk, outputs[chunk])

    resumed = run_in_pieces(split, chunks, run_missing)
    assert _same(uninterrupted, resumed)
    assert sorted(loaded) == chunks  # every piece read once


class _Stopped(Exception):
    """A run stopped within its pass."""


def test_a_pass_stopped_midway_resumes_from_its_checkpoint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(pieces_module, "CHECKPOINT_EVERY", 8)
    chunks = [Chunk("qcd", "in.root", start, start + 100) for start in range(0, 4000, 100)]
    outputs = {chunk: _output(k) for k, chunk in enumerate(chunks)}
    whole = _store(tmp_path / "whole")
    uninterrupted = run_in_pieces(
        whole, chunks, lambda missing: [whole.save(c, outputs[c]) for c in missing]
    )
    store = _store(tmp_path / "pieces")

    def stopped(missing: list[Chunk]) -> None:
        for chunk in missing[:32]:
            store.save(chunk, outputs[chunk])
        deadline = time.monotonic() + 30.0
        while time.monotonic() < deadline:  # until the merge's checkpoint holds 32 chunks
            if list(store.checkpoints.glob("32-*.zip")):
                raise _Stopped
            time.sleep(0.01)
        pytest.fail("no checkpoint of the 32 chunks written")

    with pytest.raises(_Stopped):
        run_in_pieces(store, chunks, stopped)
    loaded = _counted_loads(monkeypatch)
    ran: list[Chunk] = []

    def saving(target: PieceStore) -> Callable[[list[Chunk]], None]:
        def run_missing(missing: list[Chunk]) -> None:
            ran.extend(missing)
            for chunk in missing:
                target.save(chunk, outputs[chunk])

        return run_missing

    resumed = run_in_pieces(store, chunks, saving(store))
    assert ran == chunks[32:]
    assert sorted(loaded) == chunks[32:]  # the first 32 from the checkpoint alone
    assert _same(uninterrupted, resumed)
    # a pass with every piece kept reads its final checkpoint alone
    (final,) = store.checkpoints.iterdir()
    assert final.name.startswith("40-")
    loaded.clear()
    assert _same(uninterrupted, run_in_pieces(store, chunks, lambda _: pytest.fail("ran")))
    assert loaded == []
    # a damaged checkpoint is named and passed over; one of another configuration is not read
    data = bytearray(final.read_bytes())
    data[len(data) // 2] ^= 0xFF
    final.write_bytes(bytes(data))
    with caplog.at_level(logging.WARNING, "rosenblatt.cache"):
        again = run_in_pieces(store, chunks, lambda _: pytest.fail("ran"))
    assert final.name in caplog.text
    assert _same(uninterrupted, again)
    assert sorted(loaded) == chunks
    other = _store(tmp_path / "pieces", document="other")
    ran.clear()
    run_in_pieces(other, chunks, saving(other))
    assert len(ran) == len(chunks)
    assert [p.name[:3] for p in other.checkpoints.iterdir()] == ["40-"]


def _arrays(chunk: Chunk) -> dict[str, Any]:
    """A chunk's output of per-event values, as the fit's pass keeps it."""
    rng = np.random.default_rng(chunk.start)
    n = chunk.stop - chunk.start
    return {"arrays": {"x": rng.normal(size=n), "w": rng.uniform(size=n)}, "read": n}


def _flip_in_array(path: Path, values: Any) -> None:
    """Flip one bit inside the stored bytes of ``values`` in the piece ``path``."""
    data = bytearray(path.read_bytes())
    data[data.index(np.asarray(values).tobytes()) + 41] ^= 0x04
    path.write_bytes(bytes(data))


def test_a_damaged_piece_of_arrays_is_found_as_it_is_read_and_computed_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    chunks = [Chunk("fit", "in.root", start, start + 400) for start in range(0, 3200, 400)]
    whole = _store(tmp_path / "whole")
    uninterrupted = run_in_pieces(
        whole, chunks, lambda missing: [whole.save(c, _arrays(c)) for c in missing]
    )
    store = _store(tmp_path / "pieces")
    for chunk in chunks[:6]:
        store.save(chunk, _arrays(chunk))
    flipped, cut = store.path(chunks[2]), store.path(chunks[4])
    _flip_in_array(flipped, _arrays(chunks[2])["arrays"]["w"])
    cut.write_bytes(cut.read_bytes()[: cut.stat().st_size // 2])
    loaded = _counted_loads(monkeypatch)
    ran: list[list[Chunk]] = []

    def run_missing(missing: list[Chunk]) -> None:
        ran.append(missing)
        for chunk in missing:
            store.save(chunk, _arrays(chunk))

    with caplog.at_level(logging.WARNING, "rosenblatt.cache"):
        resumed = run_in_pieces(store, chunks, run_missing)
    # the piece cut short is refused before the chunks left run, the flipped bit as it is read
    assert ran == [[chunks[4], chunks[6], chunks[7]], [chunks[2]]]
    assert flipped.name in caplog.text
    assert cut.name in caplog.text
    for name in ("x", "w"):
        assert resumed["arrays"][name].tobytes() == uninterrupted["arrays"][name].tobytes()
    # every piece read once, the damaged one again once computed
    assert sorted(loaded) == sorted([*chunks, chunks[2]])

    # refused where damaged pieces are refused, also when the merge finds it
    _flip_in_array(store.path(chunks[5]), _arrays(chunks[5])["arrays"]["x"])
    with (
        refusing_corrupt_cache(),
        pytest.raises(CorruptCacheError, match=store.path(chunks[5]).name),
    ):
        run_in_pieces(store, chunks, run_missing)


def test_the_workers_warm_up_while_this_process_works() -> None:
    from rosenblatt.processors.binned_sums import warm_up
    from rosenblatt.processors.runner import make_executor, warm_workers

    with make_executor("futures", 2, progress=False) as pool:
        started = time.monotonic()
        warm_workers(pool, functools.partial(time.sleep, 3.0))
        assert time.monotonic() - started < 2.0  # not waited for
    assert time.monotonic() - started >= 3.0  # done by the workers before the pool closed
    with make_executor("iterative", progress=False) as pool:
        warm_workers(pool, functools.partial(pytest.fail, "no worker to warm"))
    warm_up()


# a real run, stopped and run again -----------------------------------------------------

CONFIG = """
study: abcd
name: pieces
treename: nominal
lumi: 3.0
datasets:
  qcd-defining: {files: [qcd_def.root], role: defining, weight: w_mc, xsec: 2000.0}
  qcd: {files: [qcd.root], role: background, weight: w_mc, xsec: 2000.0}
  sig: {files: [sig.root], role: signal, weight: w_mc, xsec: 10.0}
  data: {files: [data.root], role: data}
score: tagger_out
transforms:
  - {kind: irgi, depth: 4}
  - {kind: gridkde, sigma_r: 0.3, degree: 1}
abcd: {x: m_jj_reco, x0: [2200.0, 3800.0], n_x0: 6, y0: [0.1, 0.9], n_y0: 6}
executor: {kind: futures, workers: 2, chunksize: 500}
statistics: {n_boot: 3, seed: 1}
data: {folder: cache}
"""

PASS_LINE = re.compile(r"pass (?P<name>[a-z ]+): (?P<n>\d+) chunks, (?P<kept>\d+) kept")


def _write(path: Path, columns: dict[str, np.ndarray]) -> None:
    with uproot.recreate(path) as handle:
        handle.mktree("nominal", {key: value.dtype for key, value in columns.items()})
        handle["nominal"].extend(columns)


def _files(folder: Path, data_seed: int = 9) -> None:
    rng = np.random.default_rng(7)
    for name, n, signal in (("qcd_def", 4000, False), ("qcd", 6000, False), ("sig", 600, True)):
        columns = dijet_columns(rng, n, signal)
        columns["w_mc"] = rng.choice([-0.5, 1.0, 1.5], n, p=[0.1, 0.6, 0.3])
        _write(folder / f"{name}.root", columns)
    _write(folder / "data.root", dijet_columns(np.random.default_rng(data_seed), 3000, False))


def _rosenblatt(folder: Path, env: dict[str, str] | None = None) -> tuple[int, str]:
    script = Path(sys.executable).with_name("rosenblatt")
    command = (
        [str(script)]
        if script.is_file()
        else [sys.executable, "-c", "import sys; from rosenblatt.cli import main; sys.exit(main())"]
    )
    done = subprocess.run(
        [*command, "run", "config.yaml", "--output", "results"],
        cwd=folder,
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=600,
        check=False,
    )
    return done.returncode, done.stdout + done.stderr


def _passes(log: str) -> dict[str, tuple[int, int]]:
    return {m["name"]: (int(m["n"]), int(m["kept"])) for m in PASS_LINE.finditer(log)}


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    sys.path.insert(0, str(Path(__file__).parent))
    from test_resume import results_of

    folder = tmp_path_factory.mktemp("pieces") / "reference"
    folder.mkdir()
    _files(folder)
    (folder / "config.yaml").write_text(CONFIG, encoding="utf-8")
    code, log = _rosenblatt(folder)
    assert code == 0, log[-3000:]
    assert all(kept == 0 for _, kept in _passes(log).values())
    return folder, results_of(folder)


def _copy(source: Path, target: Path, *, cache: bool) -> Path:
    shutil.copytree(
        source, target, ignore=shutil.ignore_patterns("results", *(() if cache else ("cache",)))
    )
    return target


@pytest.mark.slow
@pytest.mark.system
def test_stopped_in_the_analysis_pass_runs_only_the_chunks_left(
    reference: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    from test_resume import assert_same_results

    base, results = reference
    folder = _copy(base, tmp_path / "stopped", cache=False)
    code, log = _rosenblatt(folder, {STOP_AFTER_PIECES: "analyse:5"})
    assert code == 143, log[-3000:]
    assert "stopped by SIGTERM during step 'analyse'" in log
    pieces = [
        path
        for path in sorted((folder / "cache" / "pieces" / "analyse").glob("*.zip"))
        if not path.name.startswith(".")  # a temporary name: a piece being written
    ]
    total = _passes(log)["analyse"][0]
    assert 5 <= len(pieces) < total
    for path in pieces:  # every file under a final name is whole
        with zipfile.ZipFile(path) as zf:
            assert zf.testzip() is None
    code, log = _rosenblatt(folder)
    assert code == 0, log[-3000:]
    passes = _passes(log)
    assert passes["score"][0] == passes["score"][1]
    assert passes["analyse"] == (total, len(pieces))
    assert passes["analyse data"][1] == 0
    assert_same_results(folder, results)


@pytest.mark.slow
@pytest.mark.system
def test_a_changed_input_file_or_configuration_is_computed_again(
    reference: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    base, _ = reference
    folder = _copy(base, tmp_path / "changed", cache=True)
    _write(folder / "data.root", dijet_columns(np.random.default_rng(10), 3000, False))
    code, log = _rosenblatt(folder)
    assert code == 0, log[-3000:]
    passes = _passes(log)
    assert passes["analyse"][0] == passes["analyse"][1]  # the simulation did not change
    assert passes["analyse data"][1] == 0
    config = (folder / "config.yaml").read_text(encoding="utf-8")
    (folder / "config.yaml").write_text(config.replace("n_y0: 6", "n_y0: 5"), encoding="utf-8")
    code, log = _rosenblatt(folder)
    assert code == 0, log[-3000:]
    passes = _passes(log)
    assert passes["score"][1] == 0
    assert passes["analyse"][1] == 0
    assert "pieces of other runs removed" in log
