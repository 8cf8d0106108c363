"""A results folder holds one run: its files in ``manifest.json``, an earlier run's removed."""

from __future__ import annotations

import json
import logging
import sys
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from rosenblatt import studies
from rosenblatt._records import file_digest
from rosenblatt.studies._results import MANIFEST, earlier_list, report_links


def _write(folder: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text, encoding="utf-8")


@pytest.fixture
def fake_study(monkeypatch: pytest.MonkeyPatch) -> Callable[[dict[str, str]], None]:
    """Make study ``fake`` write the files given next (``"stop"``: then raise KeyboardInterrupt)."""
    module = types.ModuleType("rosenblatt.studies.fake")
    outputs: dict[str, str] = {}

    def run(config: dict[str, Any], folder: Path) -> None:
        _write(folder, {n: t for n, t in outputs.items() if n != "stop"})
        if "stop" in outputs:
            raise KeyboardInterrupt

    module.run = run  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "rosenblatt.studies.fake", module)
    monkeypatch.setitem(studies.STUDIES, "fake", studies.Study("fake", module.__name__, "", ()))

    def will_write(files: dict[str, str]) -> None:
        outputs.clear()
        outputs.update(files)

    return will_write


def _manifest(folder: Path) -> dict[str, Any]:
    return dict(json.loads((folder / MANIFEST).read_text(encoding="utf-8")))


def _run(folder: Path) -> None:
    studies.run_study({"study": "fake", "name": "fake"}, folder)


def test_the_folder_holds_the_last_run_alone(
    fake_study: Callable[[dict[str, str]], None], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    folder = tmp_path / "results"
    _write(folder, {"notes.txt": "my own notes"})
    fake_study(
        {"report.md": "![a](a.png) [b](b.json)", "a.png": "1", "b.json": "{}", "sub/c.txt": "c"}
    )
    with caplog.at_level(logging.INFO, logger="rosenblatt"):
        _run(folder)
    manifest = _manifest(folder)
    assert manifest["format"] == "rosenblatt-results-manifest"
    assert manifest["study"] == "fake"
    assert manifest["files"] == {
        name: {"size": (folder / name).stat().st_size, "blake2b": file_digest(folder / name)}
        for name in ("a.png", "b.json", "report.md", "sub/c.txt")
    }
    assert "notes.txt" in caplog.text  # not the run's: left in place, and said so
    caplog.clear()

    fake_study({"report.md": "![a](a.png)", "a.png": "2"})
    with caplog.at_level(logging.INFO, logger="rosenblatt"):
        _run(folder)
    assert sorted(p.name for p in folder.iterdir()) == ["a.png", MANIFEST, "notes.txt", "report.md"]
    assert sorted(_manifest(folder)["files"]) == ["a.png", "report.md"]
    assert "removed 2 file(s) of an earlier run that this run did not write: b.json, sub/c.txt" in (
        caplog.text
    )


def test_a_stopped_run_leaves_no_manifest_and_the_next_removes_its_files(
    fake_study: Callable[[dict[str, str]], None], tmp_path: Path
) -> None:
    folder = tmp_path / "results"
    fake_study({"report.md": "1", "a.png": "1"})
    _run(folder)
    fake_study({"report.md": "2", "d.json": "{}", "stop": ""})
    with pytest.raises(KeyboardInterrupt):
        _run(folder)
    assert not (folder / MANIFEST).exists()  # no list of a run that the folder does not hold
    assert not [p.name for p in folder.iterdir() if p.name.startswith(".")]
    earlier = json.loads(earlier_list(folder).read_text(encoding="utf-8"))["files"]
    assert earlier == ["a.png", "d.json", "report.md"]
    fake_study({"report.md": "3"})
    _run(folder)
    assert sorted(p.name for p in folder.iterdir()) == [MANIFEST, "report.md"]
    assert list(_manifest(folder)["files"]) == ["report.md"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results"]


def test_a_report_link_to_a_file_not_of_the_run_is_named(
    fake_study: Callable[[dict[str, str]], None], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    fake_study({"report.md": "![x](figures/x.png) [y](y.json#top) [w](https://x.org/a.png)"})
    with caplog.at_level(logging.WARNING, logger="rosenblatt"):
        _run(tmp_path / "results")
    assert "report.md links file(s) this run did not write: figures/x.png, y.json" in caplog.text


def test_report_links_are_the_relative_files() -> None:
    text = '![a](a.png)\n[t](./sub/t.json#x "title") <img src="b.svg"> [u](http://a/b) [#](#anchor)'
    assert report_links(text) == ["a.png", "sub/t.json", "b.svg"]


# a real study run twice ----------------------------------------------------------------


@pytest.fixture(scope="module")
def ntuples(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Defining and testing QCD and a signal as flat ntuples (tree ``nominal``)."""
    uproot = pytest.importorskip("uproot")
    pytest.importorskip("coffea")
    folder = tmp_path_factory.mktemp("results-ntuples")
    rng = np.random.default_rng(9)
    for name, n, is_signal in (("qcd_def", 5000, False), ("qcd", 3000, False), ("sig", 500, True)):
        mass = rng.normal(3400.0, 150.0, n) if is_signal else 2000.0 + rng.exponential(600.0, n)
        score = rng.normal(0.8, 0.1, n) if is_signal else rng.beta(2.0, 5.0, n) + mass / 8e3
        columns = {"m_jj_reco": mass, "tagger_out": np.clip(score, 0.0, 1.0)}
        with uproot.recreate(folder / f"{name}.root") as handle:
            handle.mktree("nominal", {key: value.dtype for key, value in columns.items()})
            handle["nominal"].extend(columns)
    return folder


def _abcd(ntuples: Path, folder: Path, transforms: list[dict[str, Any]]) -> None:
    from rosenblatt.cli import main

    config = {
        "study": "abcd",
        "name": "one-run",
        "treename": "nominal",
        "datasets": {
            "qcd-defining": {"files": str(ntuples / "qcd_def.root"), "role": "defining"},
            "qcd": {"files": str(ntuples / "qcd.root"), "role": "background"},
            "sig": {"files": str(ntuples / "sig.root"), "role": "signal"},
        },
        "score": "tagger_out",
        "transforms": transforms,
        "abcd": {"x": "m_jj_reco", "x0": [2200.0, 3800.0], "n_x0": 5, "y0": [0.1, 0.9], "n_y0": 5},
        "executor": {"kind": "iterative", "chunksize": 5000},
        "statistics": {"n_boot": 0},
        "data": {"folder": str(folder / "cache")},
    }
    path = folder / "config.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    assert main(["run", str(path), "--output", str(folder / "results")]) == 0


@pytest.mark.slow
def test_a_rerun_with_fewer_transforms_leaves_no_file_of_the_dropped_one(
    ntuples: Path, tmp_path: Path
) -> None:
    results = tmp_path / "results"
    _abcd(ntuples, tmp_path, [{"kind": "irgi", "depth": 3}, {"kind": "gridkde", "sigma_r": 0.3}])
    assert any("gridkde" in p.name for p in results.iterdir())
    _abcd(ntuples, tmp_path, [{"kind": "irgi", "depth": 3}])
    on_disk = sorted(p.relative_to(results).as_posix() for p in results.rglob("*") if p.is_file())
    manifest = _manifest(results)
    assert not [name for name in on_disk if "gridkde" in name]
    assert sorted([*manifest["files"], MANIFEST]) == on_disk
    for name, entry in manifest["files"].items():
        assert entry == {
            "size": (results / name).stat().st_size,
            "blake2b": file_digest(results / name),
        }
    links = report_links((results / "report.md").read_text(encoding="utf-8"))
    assert links
    assert set(links) <= set(manifest["files"])
