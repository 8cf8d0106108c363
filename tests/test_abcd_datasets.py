"""A dataset's files as physicists write them: paths, globs, folders and URLs.

Globs and folders are expanded, sorted, when the configuration is read; a
pattern that matches nothing is refused in one line naming the dataset and
the pattern; URLs go to uproot as written. A run over files served by a
local HTTP server gives the results of the same run over the local files.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from rosenblatt.cli import main
from rosenblatt.exceptions import ConfigError
from rosenblatt.studies.abcd.datasets import is_url, parse_datasets


def _datasets(files: dict[str, Any], base: Path) -> dict[str, tuple[str, ...]]:
    config = {"datasets": {name: {"files": f, "role": "background"} for name, f in files.items()}}
    parsed = parse_datasets(config, "config.yaml", base, treename="nominal", jets="FatJet")
    return {name: dataset.files for name, dataset in parsed.items()}


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """``mc/`` with ``qcd_1``, ``qcd_2``, ``qcd_10`` and ``ttbar`` ROOT files, ``extra/`` with two."""
    for name in ("qcd_2.root", "qcd_10.root", "qcd_1.root", "ttbar.root", "notes.txt"):
        (tmp_path / "mc" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "mc" / name).touch()
    for name in ("b.root", "a.root"):
        (tmp_path / "mc" / "extra" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "mc" / "extra" / name).touch()
    return tmp_path


def test_globs_and_folders_give_their_files_sorted(
    folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(folder.parent)  # relative to the configuration's folder, not here
    mc = folder / "mc"
    found = _datasets(
        {
            "qcd": "mc/qcd_*.root",
            "all": ["mc/", "mc/extra"],
            "deep": [str(mc / "**" / "[ab].root")],
            "plain": ["mc/ttbar.root"],
        },
        folder,
    )
    assert found["qcd"] == tuple(str(mc / n) for n in ("qcd_1.root", "qcd_10.root", "qcd_2.root"))
    inside = ("qcd_1.root", "qcd_10.root", "qcd_2.root", "ttbar.root")
    assert found["all"] == (
        *(str(mc / n) for n in inside),
        str(mc / "extra" / "a.root"),
        str(mc / "extra" / "b.root"),
    )
    assert found["deep"] == (str(mc / "extra" / "a.root"), str(mc / "extra" / "b.root"))
    assert found["plain"] == (str(mc / "ttbar.root"),)


@pytest.mark.parametrize(
    "url",
    [
        "root://eosuser.cern.ch//eos/user/a/alice/qcd.root",
        "https://example.org/files/qcd_*.root",
        "http://127.0.0.1:8000/qcd.root",
        "file:///data/qcd.root",
    ],
)
def test_a_url_is_kept_as_written(url: str, folder: Path) -> None:
    assert is_url(url)
    assert _datasets({"qcd": [url]}, folder)["qcd"] == (url,)


@pytest.mark.parametrize(
    ("files", "reason"),
    [
        ("mc/wjets_*.root", "the pattern 'mc/wjets_*.root' of dataset qcd matches no file"),
        ("mc/extra/*.txt", "the pattern 'mc/extra/*.txt' of dataset qcd matches no file"),
        (["mc/qcd_1.root", "mc/qcd_*.root"], "dataset qcd names {mc}/qcd_1.root twice"),
    ],
)
def test_a_list_that_gives_no_file_or_one_twice_is_refused(
    files: Any, reason: str, folder: Path
) -> None:
    with pytest.raises(ConfigError) as caught:
        _datasets({"qcd": files}, folder)
    assert str(caught.value).startswith(
        "config.yaml: datasets.qcd.files: " + reason.format(mc=folder / "mc")
    )


def test_a_folder_without_root_files_is_refused(folder: Path) -> None:
    (folder / "empty").mkdir()
    with pytest.raises(ConfigError, match=r"the folder 'empty' of dataset qcd holds no \.root"):
        _datasets({"qcd": "empty"}, folder)


def test_the_command_line_refuses_a_pattern_that_matches_nothing_in_one_line(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = {
        "study": "abcd",
        "treename": "nominal",
        "lumi": 1.0,
        "datasets": {
            "qcd-defining": {"files": "mc/qcd_1.root", "role": "defining"},
            "qcd": {"files": "mc/qcd_2*.root", "role": "background"},
            "wjets": {"files": "mc/wjets_*.root", "role": "background"},
        },
        "score": "tagger",
        "transforms": [{"kind": "irgi", "depth": 2}],
        "abcd": {"x": "mass", "x0": [1.0, 2.0], "y0": [0.1, 0.9]},
    }
    path = folder / "analysis.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    output = folder / "results"
    assert main(["run", str(path), "--output", str(output)]) == 2
    err = capsys.readouterr().err
    line = (
        f"rosenblatt run: error: {path}: datasets.wjets.files: the pattern 'mc/wjets_*.root' "
        "of dataset wjets matches no file"
    )
    assert err.splitlines() == [line]
    assert not output.exists()


# remote reading -------------------------------------------------------------------------

#: a static file server that answers byte ranges, as web servers of files do (uproot reads a
#: ROOT file by ranges; python -m http.server sends whole files only)
RANGE_SERVER = textwrap.dedent(
    """
    import functools, http.server, io, os, re, sys

    class Ranges(http.server.SimpleHTTPRequestHandler):
        def send_head(self):
            found = re.fullmatch(r"bytes=(\\d+)-(\\d*)", self.headers.get("Range", ""))
            if found is None:
                return super().send_head()
            try:
                handle = open(self.translate_path(self.path), "rb")
            except OSError:
                self.send_error(404)
                return None
            with handle:
                size = os.fstat(handle.fileno()).st_size
                start = int(found[1])
                stop = min(int(found[2]) if found[2] else size - 1, size - 1)
                handle.seek(start)
                data = handle.read(stop - start + 1)
            self.send_response(206)
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Content-Range", f"bytes {start}-{stop}/{size}")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            return io.BytesIO(data)

        def log_message(self, *args):
            pass

    handler = functools.partial(Ranges, directory=sys.argv[1])
    with http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler) as server:
        print(server.server_address[1], flush=True)
        server.serve_forever()
    """
)


@pytest.fixture(scope="module")
def ntuples(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Defining and testing QCD and a signal as flat ntuples (tree ``nominal``)."""
    uproot = pytest.importorskip("uproot")
    pytest.importorskip("coffea")
    folder = tmp_path_factory.mktemp("remote-ntuples")
    rng = np.random.default_rng(5)
    for name, n, is_signal in (("qcd_def", 6000, False), ("qcd", 4000, False), ("sig", 600, True)):
        mass = rng.normal(3400.0, 150.0, n) if is_signal else 2000.0 + rng.exponential(600.0, n)
        score = rng.normal(0.8, 0.1, n) if is_signal else rng.beta(2.0, 5.0, n) + mass / 8e3
        columns = {
            "m_jj_reco": mass,
            "tagger_out": np.clip(score, 0.0, 1.0),
            "w_mc": rng.choice([-0.5, 1.0, 1.5], n, p=[0.1, 0.6, 0.3]),
        }
        with uproot.recreate(folder / f"{name}.root") as handle:
            handle.mktree("nominal", {key: value.dtype for key, value in columns.items()})
            handle["nominal"].extend(columns)
    return folder


@pytest.fixture(scope="module")
def server(ntuples: Path) -> Iterator[str]:
    """``http://127.0.0.1:PORT/``, serving the ntuples' folder, stopped at the end."""
    process = subprocess.Popen(
        [sys.executable, "-c", RANGE_SERVER, str(ntuples)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert process.stdout is not None
        port = int(process.stdout.readline())
        yield f"http://127.0.0.1:{port}/"
    finally:
        process.terminate()
        process.communicate(timeout=30)


#: keys of summary.json that are wall times or say where and with what the code ran
VOLATILE = re.compile(
    r"seconds|timings?$|^time|^commit$|^uncommitted_changes$|^configuration(_file)?$|^_path$"
)


def _stable(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _stable(v) for k, v in value.items() if not VOLATILE.search(str(k))}
    if isinstance(value, list):
        return [_stable(v) for v in value]
    return value


def _configure(folder: Path, files: dict[str, str]) -> Path:
    """A small abcd configuration in ``folder`` with these files per dataset."""
    dataset = {"role": "background", "weight": "w_mc", "xsec": 2000.0}
    config = {
        "study": "abcd",
        "name": "remote",
        "treename": "nominal",
        "lumi": 3.0,
        "datasets": {
            "qcd-defining": {**dataset, "files": files["qcd_def"], "role": "defining"},
            "qcd": {**dataset, "files": files["qcd"]},
            "sig": {**dataset, "files": files["sig"], "role": "signal", "xsec": 10.0},
        },
        "score": "tagger_out",
        "transforms": [{"kind": "irgi", "depth": 4}],
        "abcd": {"x": "m_jj_reco", "x0": [2200.0, 3800.0], "n_x0": 5, "y0": [0.1, 0.9], "n_y0": 5},
        "executor": {"kind": "iterative", "chunksize": 1500},
        "statistics": {"n_boot": 0},
        "data": {"folder": str(folder / "cache")},
    }
    folder.mkdir()
    (folder / "config.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    return folder / "config.yaml"


def _run(folder: Path, files: dict[str, str]) -> dict[str, Any]:
    """Run the study with these files per dataset; its JSON results and histograms."""
    import uproot

    config = _configure(folder, files)
    assert main(["run", str(config), "--output", str(folder / "results")]) == 0
    found: dict[str, Any] = {}
    for path in sorted((folder / "results").glob("*.json")):
        if path.name not in ("timings.json", "manifest.json"):  # hashes of wall times
            found[path.name] = _stable(json.loads(path.read_text(encoding="utf-8")))
    with uproot.open(folder / "results" / "abcd.root") as handle:
        for name in handle.keys(cycle=False):
            found[name] = handle[name].values(flow=True).tolist()
    return found


def _named_as(results: dict[str, Any], names: dict[str, str]) -> dict[str, Any]:
    """``results`` with each file's name written as ``names`` says (its local path)."""
    text = json.dumps(results, sort_keys=True)
    for written, local in names.items():
        text = text.replace(json.dumps(written)[1:-1], json.dumps(local)[1:-1])
    return dict(json.loads(text))


@pytest.mark.slow
def test_files_over_http_and_file_urls_give_the_results_of_local_files(
    ntuples: Path, server: str, tmp_path: Path
) -> None:
    names = ("qcd_def", "qcd", "sig")
    local = _run(tmp_path / "local", {n: str(ntuples / f"{n}.root") for n in names})
    urls = {"qcd_def": f"file://{ntuples}/qcd_def.root", "qcd": f"{server}qcd.root"}
    urls["sig"] = f"{server}sig.root"
    remote = _run(tmp_path / "remote", urls)
    assert server in json.dumps(remote)  # read from the server, named by their URLs
    assert _named_as(remote, {urls[n]: str(ntuples / f"{n}.root") for n in names}) == local


@pytest.mark.slow
def test_globs_and_folders_give_the_results_of_the_files_listed(
    ntuples: Path, tmp_path: Path
) -> None:
    names = ("qcd_def", "qcd", "sig")
    local = _run(tmp_path / "listed", {n: str(ntuples / f"{n}.root") for n in names})
    (tmp_path / "signal").mkdir()
    os.link(ntuples / "sig.root", tmp_path / "signal" / "sig.root")
    patterns = {"qcd_def": str(ntuples / "qcd_d*.root"), "qcd": str(ntuples / "qcd.roo?")}
    patterns["sig"] = str(tmp_path / "signal")
    globbed = _run(tmp_path / "globbed", patterns)
    moved = {str(tmp_path / "signal" / "sig.root"): str(ntuples / "sig.root")}
    assert _named_as(globbed, moved) == local


@pytest.mark.slow
def test_a_url_that_cannot_be_opened_is_said_in_one_line(
    ntuples: Path, server: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    files = {"qcd_def": str(ntuples / "qcd_def.root"), "qcd": f"{server}qcd.root"}
    files["sig"] = f"{server}no-such-file.root"
    config = _configure(tmp_path / "missing", files)
    assert main(["run", str(config), "--output", str(tmp_path / "missing" / "results")]) == 2
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1
    assert lines[0].startswith(
        f"rosenblatt run: error: {tmp_path / 'missing' / 'config.yaml'}: datasets.sig.files: "
        f"{server}no-such-file.root (dataset sig): cannot be opened as a ROOT file ("
    )
    assert not (tmp_path / "missing" / "results").exists()
