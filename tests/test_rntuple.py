"""RNTuple input: the same events as a TTree and as an RNTuple give the same results.

The abcd study (``rosenblatt run``), ``rosenblatt fit`` and ``rosenblatt apply``
read a flat ntuple and a NanoAOD-layout file written both ways with uproot;
their histograms, estimates, transforms and friend values must be identical.
``rosenblatt generate --rntuple`` writes the same events as without it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import awkward as ak
import numpy as np
import pytest
import yaml

pytest.importorskip("coffea")
pytest.importorskip("pyhf")
uproot = pytest.importorskip("uproot")
pytest.importorskip("vector")

from dijet_ntuple import dijet_columns

import rosenblatt as rb
from rosenblatt.cli import main
from rosenblatt.io.nanoaod import FATJET_FIELDS, NanoAODWriter

KINDS = ("ttree", "rntuple")
LUMI = 2.0

ignore_cross_references = pytest.mark.filterwarnings("ignore:Missing cross-reference")


def _write_flat(path: Path, columns: dict[str, np.ndarray], rntuple: bool) -> None:
    """The tree ``nominal``: a TTree (``mktree`` + ``extend``) or an RNTuple (``mkrntuple``)."""
    with uproot.recreate(path) as handle:
        if rntuple:
            handle.mkrntuple("nominal", columns)
        else:
            handle.mktree("nominal", {key: value.dtype for key, value in columns.items()})
            handle["nominal"].extend(columns)


def _flat_events(rng: np.random.Generator, n: int, signal: bool) -> dict[str, np.ndarray]:
    columns = dijet_columns(rng, n, signal)
    return {
        "m_jj_reco": columns["m_jj_reco"],
        "tagger_out": columns["tagger_out"].astype(np.float32),
        "w_mc": rng.choice([-0.5, 1.0, 1.5], n, p=[0.1, 0.6, 0.3]),
    }


def _fat_jets(rng: np.random.Generator, n: int) -> ak.Array:
    counts = rng.integers(1, 5, n)
    total = int(counts.sum())
    fields = {
        "pt": rng.uniform(300.0, 1500.0, total),
        "eta": rng.uniform(-2.0, 2.0, total),
        "phi": rng.uniform(-np.pi, np.pi, total),
        "mass": rng.uniform(20.0, 200.0, total),
        "tagger": rng.uniform(0.0, 1.0, total),
    }
    fields.update({name: rng.uniform(0.0, 1.0, total) for name in FATJET_FIELDS[4:-1]})
    jets = ak.zip({name: ak.unflatten(fields[name], counts) for name in FATJET_FIELDS})
    return jets[ak.argsort(jets.pt, axis=1, ascending=False)]


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Per kind, a folder with the same flat ntuples and NanoAOD files, written that way."""
    root = tmp_path_factory.mktemp("rntuple")
    rng = np.random.default_rng(11)
    flat = {
        "qcd_def": _flat_events(rng, 4000, False),
        "qcd": _flat_events(rng, 3000, False),
        "sig": _flat_events(rng, 600, True),
    }
    background, signal = _flat_events(rng, 3000, False), _flat_events(rng, 40, True)
    flat["data"] = {
        key: np.concatenate([background[key], signal[key]]) for key in ("m_jj_reco", "tagger_out")
    }
    nano = {
        name: (_fat_jets(rng, 2500), rng.choice([-1.0, 1.0], 2500, p=[0.2, 0.8]))
        for name in ("nano_def", "nano_qcd")
    }
    folders = {}
    for kind in KINDS:
        folder = root / kind
        folder.mkdir()
        for name, columns in flat.items():
            _write_flat(folder / f"{name}.root", columns, kind == "rntuple")
        for name, (jets, weight) in nano.items():
            # the writer of `rosenblatt generate --format nanoaod [--rntuple]`
            with NanoAODWriter.create(
                folder / f"{name}.root", weighted=True, rntuple=kind == "rntuple"
            ) as writer:
                writer.append(np.arange(len(jets)), jets, weight)
        (folder / "user.py").write_text(
            "import numpy as np\n\n\ndef score(events):\n"
            "    return np.asarray(events['tagger_out'], dtype=np.float64)\n",
            encoding="utf-8",
        )
        folders[kind] = folder
    folder = root / "records"
    folder.mkdir()
    for name, (jets, weight) in nano.items():
        _write_records(folder / f"{name}.root", jets, weight)
    folders["records"] = folder
    return folders


def _write_records(path: Path, jets: ak.Array, weight: np.ndarray) -> None:
    """NanoAOD as CMSSW's RNTuple output writes it: ``FatJet`` one field of records, no ``nFatJet``."""
    n = len(jets)
    with uproot.recreate(path) as handle:
        handle.mkrntuple(
            "Events",
            {
                "run": np.ones(n, dtype=np.uint32),
                "luminosityBlock": (1 + np.arange(n) // 1000).astype(np.uint32),
                "event": np.arange(n, dtype=np.uint64),
                "FatJet": ak.zip({f: ak.values_astype(jets[f], np.float32) for f in FATJET_FIELDS}),
                "genWeight": weight.astype(np.float32),
            },
        )
        handle.mkrntuple(
            "Runs",
            {
                "run": np.ones(1, dtype=np.uint32),
                "genEventSumw": np.array([weight.astype(np.float32).sum(dtype=np.float64)]),
                "genEventCount": np.array([n], dtype=np.int64),
            },
        )


def test_the_files_are_what_they_say(files: dict[str, Path]) -> None:
    for kind, cls in (("ttree", "TTree"), ("rntuple", "ROOT::RNTuple")):
        with uproot.open(files[kind] / "qcd.root") as handle:
            assert handle.classnames()["nominal;1"] == cls
        with uproot.open(files[kind] / "nano_qcd.root") as handle:
            classes = handle.classnames()
            assert (classes["Events;1"], classes["Runs;1"]) == (cls, cls)
            keys = set(handle["Events"].keys())
            assert {"nFatJet", "FatJet_pt", "FatJet_tagger", "genWeight", "event"} <= keys
    with (
        uproot.open(files["ttree"] / "nano_qcd.root") as a,
        uproot.open(files["rntuple"] / "nano_qcd.root") as b,
    ):
        for name in ("nFatJet", "FatJet_pt", "FatJet_tagger", "genWeight", "event", "run"):
            assert ak.all(a["Events"][name].array() == b["Events"][name].array())
        assert a["Runs"]["genEventSumw"].array()[0] == b["Runs"]["genEventSumw"].array()[0]


def _flat_config(folder: Path, name: str, **extra: Any) -> Path:
    config: dict[str, Any] = {
        "study": "abcd",
        "name": name,
        "treename": "nominal",
        "lumi": LUMI,
        "blind": False,
        "datasets": {
            "qcd-defining": {
                "files": ["qcd_def.root"],
                "role": "defining",
                "weight": "w_mc",
                "xsec": 2000.0,
            },
            "qcd": {"files": ["qcd.root"], "role": "background", "weight": "w_mc", "xsec": 2000.0},
            "sig": {"files": ["sig.root"], "role": "signal", "weight": "w_mc", "xsec": 10.0},
            "data": {"files": ["data.root"], "role": "data"},
        },
        "score": "tagger_out",
        "transforms": [{"kind": "irgi", "depth": 4}],
        "abcd": {"x": "m_jj_reco", "x0": [2200.0, 3800.0], "n_x0": 5, "y0": [0.1, 0.9], "n_y0": 5},
        "executor": {"kind": "iterative", "chunksize": 1500},
        "statistics": {"n_boot": 4, "seed": 3},
        "data": {"folder": str(folder / f"cache-{name}")},
        **extra,
    }
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return path


def _nano_config(folder: Path, name: str) -> Path:
    config: dict[str, Any] = {
        "study": "abcd",
        "name": name,
        "lumi": 1.0,
        "datasets": {
            "defining": {"files": ["nano_def.root"], "role": "defining", "weight": "genWeight"},
            "qcd": {
                "files": ["nano_qcd.root"],
                "role": "background",
                "weight": "genWeight",
                "xsec": 500.0,
            },
        },
        "score": "FatJet.tagger[0]",
        "transforms": [{"kind": "irgi", "depth": 3}],
        "abcd": {"x": "mjj", "x0": [500.0, 2500.0], "n_x0": 5, "y0": [0.2, 0.8], "n_y0": 4},
        "executor": {"kind": "iterative", "chunksize": 1000},
        "statistics": {"n_boot": 0},
        "data": {"folder": str(folder / f"cache-{name}")},
    }
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return path


def _histograms(out: Path) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    with uproot.open(out / "abcd.root") as handle:
        return {
            key: (handle[key].values(flow=True), handle[key].variances(flow=True))
            for key in handle.keys(cycle=False)
            if handle[key].classname.startswith("TH")
        }


def _same_outputs(tree: Path, ntuple: Path, names: tuple[str, ...]) -> None:
    a, b = _histograms(tree), _histograms(ntuple)
    assert a
    assert sorted(a) == sorted(b)
    for key, (values, variances) in a.items():
        np.testing.assert_array_equal(values, b[key][0], err_msg=key)
        np.testing.assert_array_equal(variances, b[key][1], err_msg=key)
    for name in names:
        assert json.loads((tree / name).read_text()) == json.loads((ntuple / name).read_text()), (
            name
        )
    assert rb.load(tree / "irgi.json").get_state() == rb.load(ntuple / "irgi.json").get_state()


@pytest.mark.slow
def test_flat_ntuple_study_identical_from_ttree_and_rntuple(files: dict[str, Path]) -> None:
    outs = {}
    for kind in KINDS:
        outs[kind] = files[kind] / "results-flat"
        config = _flat_config(files[kind], "flat")
        assert main(["run", str(config), "--output", str(outs[kind])]) == 0
    _same_outputs(outs["ttree"], outs["rntuple"], ("estimate.json", "closure.json", "cutflow.json"))
    estimate = json.loads((outs["rntuple"] / "estimate.json").read_text())
    assert estimate["irgi"]["observed_A"] > 0


@pytest.mark.slow
@ignore_cross_references
def test_nanoaod_study_identical_from_ttree_and_rntuple(files: dict[str, Path]) -> None:
    outs = {}
    for kind in KINDS:
        outs[kind] = files[kind] / "results-nano"
        assert (
            main(["run", str(_nano_config(files[kind], "nano")), "--output", str(outs[kind])]) == 0
        )
    _same_outputs(outs["ttree"], outs["rntuple"], ("closure.json", "cutflow.json"))
    # normalised to Runs.genEventSumw of the RNTuple Runs
    cutflow = json.loads((outs["rntuple"] / "cutflow.json").read_text())
    assert cutflow["fileset"]["qcd"]["read"] == 2500


def test_missing_field_refused_in_one_line(
    files: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    folder = files["rntuple"]
    path = _flat_config(folder, "typo", score="tagger_ot")
    out = folder / "results-typo"
    assert main(["run", str(path), "--output", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert "RNTuple nominal" in err[0]
    assert "no field 'tagger_ot'" in err[0]
    assert "did you mean 'tagger_out'" in err[0]
    assert "the RNTuple has ['m_jj_reco', 'tagger_out'" in err[0]
    assert not out.exists()
    assert not (folder / "cache-typo").exists()


def test_missing_field_refused_by_fit(
    files: dict[str, Path], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    args = ["fit", str(files["rntuple"] / "qcd.root"), "--treename", "nominal"]
    args += ["--x", "m_jj_reco", "--score", "taggr_out", "--output", str(tmp_path / "t.json")]
    assert main(args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert "no field 'taggr_out'" in err[0]
    assert "did you mean 'tagger_out'" in err[0]
    assert not (tmp_path / "t.json").exists()


def _fit_apply(folder: Path, tmp: Path, treename: str, x: str, score: str, weight: str) -> Any:
    """``rosenblatt fit`` on the background, ``rosenblatt apply`` to it; the friend's arrays."""
    sample = folder / ("nano_qcd.root" if treename == "Events" else "qcd.root")
    transform = tmp / f"{folder.name}-{treename}.json"
    common = ["--treename", treename, "--x", x, "--score", score]
    fit = ["fit", str(sample), *common, "--weight", weight, "--depth", "3", "--chunk-size", "700"]
    assert main([*fit, "--output", str(transform)]) == 0
    friend = tmp / f"{folder.name}-{treename}-friend.root"
    apply = ["apply", str(transform), str(sample), *common, "--chunk-size", "900"]
    assert main([*apply, "--output", str(friend), "--name", "g"]) == 0
    with uproot.open(friend) as handle:
        kind = handle.classnames()[f"{treename};1"]
        arrays = handle[treename].arrays(library="np")
    return rb.load(transform).get_state(), kind, arrays


@pytest.mark.parametrize(
    ("treename", "x", "score", "weight"),
    [
        ("nominal", "m_jj_reco", "tagger_out", "w_mc"),
        ("nominal", "m_jj_reco", "user.py:score", "w_mc"),
        ("Events", "mjj", "FatJet.tagger[0]", "genWeight"),
    ],
)
@ignore_cross_references
def test_fit_and_apply_identical_from_ttree_and_rntuple(
    files: dict[str, Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    treename: str,
    x: str,
    score: str,
    weight: str,
) -> None:
    results = {}
    for kind in KINDS:
        monkeypatch.chdir(files[kind])
        results[kind] = _fit_apply(files[kind], tmp_path, treename, x, score, weight)
    (state_t, class_t, friend_t), (state_r, class_r, friend_r) = results.values()
    assert state_t == state_r
    # an RNTuple's friend is an RNTuple, with the same fields and values
    assert (class_t, class_r) == ("TTree", "ROOT::RNTuple")
    assert sorted(friend_t) == sorted(friend_r)
    for name, values in friend_t.items():
        assert values.dtype == friend_r[name].dtype, name
        np.testing.assert_array_equal(values, friend_r[name], err_msg=name)
    if treename == "Events":
        assert sorted(friend_r) == ["event", "gamma_g", "luminosityBlock", "run"]
        assert np.count_nonzero(friend_r["gamma_g"] == -1.0) > 0  # events with one jet


def test_generate_rntuple_needs_an_analysis_format(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["generate", "--process", "qcd", "--events", "10", "--seed", "1", "--rntuple"]
    assert main([*args, "--output", str(tmp_path / "p.h5")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert "--rntuple needs --format ntuple or --format nanoaod" in err[0]


@pytest.mark.slow
@pytest.mark.parametrize("file_format", ["ntuple", "nanoaod"])
def test_generate_rntuple_writes_the_same_events(
    file_format: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("pythia8mc")
    pytest.importorskip("fastjet")
    tree = "nominal" if file_format == "ntuple" else "Events"
    arrays = {}
    for kind in KINDS:
        path = tmp_path / f"{kind}.root"
        args = ["generate", "--process", "qcd", "--events", "30", "--seed", "4"]
        args += ["--format", file_format, "--output", str(path), "--chunk-size", "15"]
        args += ["--workers", "1", "--quiet", "--negative-weight-fraction", "0.2"]
        assert main([*args, *(["--rntuple"] if kind == "rntuple" else [])]) == 0
        out = capsys.readouterr().out
        assert ("(RNTuple)" in out) == (kind == "rntuple")
        with uproot.open(path) as handle:
            classes = handle.classnames()
            assert classes[f"{tree};1"] == ("ROOT::RNTuple" if kind == "rntuple" else "TTree")
            arrays[kind] = {
                key: handle[tree][key].array() for key in handle[tree].keys(recursive=False)
            }
            settings = json.loads(str(handle["settings"]))
            assert settings.get("container") == ("rntuple" if kind == "rntuple" else None)
            if file_format == "nanoaod":
                arrays[kind]["Runs"] = handle["Runs"]["genEventSumw"].array()
    assert sorted(arrays["ttree"]) == sorted(arrays["rntuple"])
    for key, values in arrays["ttree"].items():
        assert ak.all(values == arrays["rntuple"][key]), key
    # the same command again keeps the complete RNTuple file
    path = tmp_path / "rntuple.root"
    args = ["generate", "--process", "qcd", "--events", "30", "--seed", "4", "--rntuple"]
    args += ["--format", file_format, "--output", str(path), "--chunk-size", "15"]
    assert main([*args, "--workers", "1", "--quiet", "--negative-weight-fraction", "0.2"]) == 0
    assert "(kept: the file already had these settings)" in capsys.readouterr().out


@pytest.mark.slow
def test_particle_level_rntuple_gives_the_same_feature_table(tmp_path: Path) -> None:
    from rosenblatt.processors.runner import run_dijet

    rng = np.random.default_rng(2)
    counts = rng.integers(20, 60, 300)
    total = int(counts.sum())
    particles = ak.zip(
        {
            "pt": ak.unflatten(rng.uniform(1.0, 500.0, total), counts),
            "eta": ak.unflatten(rng.uniform(-2.0, 2.0, total), counts),
            "phi": ak.unflatten(rng.uniform(-np.pi, np.pi, total), counts),
        }
    )
    with uproot.recreate(tmp_path / "ttree.root") as handle:
        handle.mktree("Events", {"Part": particles.type})
        handle["Events"].extend({"Part": particles})
    with uproot.recreate(tmp_path / "rntuple.root") as handle:
        handle["Events"] = {
            "nPart": counts.astype(np.int32),
            **{f"Part_{name}": particles[name] for name in ("pt", "eta", "phi")},
        }
    tables = {
        kind: run_dijet({"d": [str(tmp_path / f"{kind}.root")]}, chunksize=120, progress=False)
        for kind in KINDS
    }
    assert tables["ttree"]["cutflow"] == tables["rntuple"]["cutflow"]
    a, b = tables["ttree"]["table"], tables["rntuple"]["table"]
    for name in a.fields:
        if name != "file":
            assert ak.all(a[name] == b[name]), name


def test_generate_entries_of_a_configuration_take_rntuple() -> None:
    from rosenblatt.exceptions import ConfigError
    from rosenblatt.studies.abcd.generate import parse_generate

    entry = {"process": "qcd", "events": 10, "output": "qcd.root", "format": "nanoaod"}
    (parsed,) = parse_generate([{**entry, "rntuple": True}], "c.yaml")
    assert parsed.rntuple
    (parsed,) = parse_generate([entry], "c.yaml")
    assert not parsed.rntuple
    with pytest.raises(ConfigError, match=r"generate\[0\]\.rntuple: .*ntuple and nanoaod"):
        parse_generate([{**entry, "format": "particles", "rntuple": True}], "c.yaml")
    with pytest.raises(ConfigError, match=r"generate\[0\]\.rntuple"):
        parse_generate([{**entry, "rntuple": "yes"}], "c.yaml")


@pytest.mark.system
@pytest.mark.parametrize(
    "executor",
    [
        pytest.param({"kind": "futures", "workers": 2, "chunksize": 1500}, id="futures"),
        pytest.param({"kind": "dask", "workers": 2, "chunksize": 1500}, id="dask"),
    ],
)
def test_rntuple_on_a_pool_of_workers_equals_the_ttree_read_in_process(
    files: dict[str, Path], executor: dict[str, Any]
) -> None:
    """Worker processes (a futures pool, a local dask cluster) read RNTuple as one process reads TTree."""
    if executor["kind"] == "dask":
        pytest.importorskip("dask.distributed")
    tree = files["ttree"] / f"results-flat-in-process-{executor['kind']}"
    ntuple = files["rntuple"] / f"results-flat-{executor['kind']}"
    config = _flat_config(files["ttree"], f"flat-in-process-{executor['kind']}")
    assert main(["run", str(config), "--output", str(tree)]) == 0
    config = _flat_config(files["rntuple"], f"flat-{executor['kind']}", executor=executor)
    assert main(["run", str(config), "--output", str(ntuple)]) == 0
    _same_outputs(tree, ntuple, ("estimate.json", "closure.json", "cutflow.json"))


@pytest.mark.slow
@ignore_cross_references
def test_nanoaod_with_record_collections_reads_as_its_ttree(
    files: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A collection held as one RNTuple field of records (``FatJet.pt``) reads as ``FatJet_pt``."""
    with uproot.open(files["records"] / "nano_qcd.root") as handle:
        keys = set(handle["Events"].keys())
    assert {"FatJet", "FatJet.pt", "FatJet.tagger"} <= keys
    assert not any(key.startswith(("nFatJet", "FatJet_")) for key in keys)
    outs = {}
    for kind in ("ttree", "records"):
        outs[kind] = tmp_path / f"results-{kind}"
        config = _nano_config(files[kind], "nano-records")
        assert main(["run", str(config), "--output", str(outs[kind])]) == 0
    _same_outputs(outs["ttree"], outs["records"], ("closure.json", "cutflow.json"))
    results = {}
    for kind in ("ttree", "records"):
        monkeypatch.chdir(files[kind])
        results[kind] = _fit_apply(
            files[kind], tmp_path, "Events", "mjj", "FatJet.tagger[0]", "genWeight"
        )
    (state_t, _, friend_t), (state_r, class_r, friend_r) = results.values()
    assert state_t == state_r
    assert class_r == "ROOT::RNTuple"
    for name, values in friend_t.items():
        np.testing.assert_array_equal(values, friend_r[name], err_msg=name)
