"""Flat ntuples and NanoAOD-layout files from Pythia events (``rosenblatt generate --format``)."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import awkward as ak
import numpy as np
import pytest

pytest.importorskip("pythia8mc")
pytest.importorskip("fastjet")
uproot = pytest.importorskip("uproot")

from rosenblatt.cli import main
from rosenblatt.hep.analysis_files import (
    JET_PT_MIN,
    AnalysisFileSummary,
    _derived_seed,
    fat_jets,
    generate_analysis_file,
    softdrop_mass,
    tagger_score,
)
from rosenblatt.hep.generation import generate_events
from rosenblatt.hep.jets import cluster_jets_with_constituents

QCD_EVENTS = 120
DATA_QCD_EVENTS = 60
DATA_SIGNAL_EVENTS = 30
SIGNAL_EVENTS = 20
CHUNK_SIZE = 40
NEGATIVE_FRACTION = 0.3
SEED = 5

NTUPLE_DTYPES = {
    "event_number": np.int64,
    "dijet_mass": np.float64,
    **{f"jet{i}_{f}": np.float64 for i in (1, 2) for f in ("pt", "eta", "phi", "mass")},
    "jet1_tau21": np.float64,
    "jet2_tau21": np.float64,
    "tagger_score": np.float64,
    "mc_weight": np.float64,
}
FATJET_FIELDS = ("pt", "eta", "phi", "mass", "msoftdrop", "tau1", "tau2", "tau3", "tagger")

ignore_cross_references = pytest.mark.filterwarnings("ignore:Missing cross-reference")


def _write(
    folder: Path, name: str, process: str, events: int, file_format: str, **options: Any
) -> tuple[Path, AnalysisFileSummary]:
    path = folder / name
    summary = generate_analysis_file(
        path,
        process,
        events,
        SEED,
        file_format=file_format,
        chunk_size=CHUNK_SIZE,
        progress=False,
        **options,
    )
    return path, summary


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("analysis_files")


@pytest.fixture(scope="module")
def qcd_ntuple(folder: Path) -> tuple[Path, AnalysisFileSummary]:
    return _write(
        folder,
        "qcd_ntuple.root",
        "qcd",
        QCD_EVENTS,
        "ntuple",
        negative_weight_fraction=NEGATIVE_FRACTION,
    )


@pytest.fixture(scope="module")
def qcd_nanoaod(folder: Path) -> tuple[Path, AnalysisFileSummary]:
    return _write(
        folder,
        "qcd_nanoaod.root",
        "qcd",
        QCD_EVENTS,
        "nanoaod",
        negative_weight_fraction=NEGATIVE_FRACTION,
    )


@pytest.fixture(scope="module", params=["ntuple", "nanoaod"])
def pseudo_data(request: pytest.FixtureRequest, folder: Path) -> tuple[Path, AnalysisFileSummary]:
    file_format = request.param
    return _write(
        folder,
        f"data_{file_format}.root",
        "data",
        DATA_QCD_EVENTS,
        file_format,
        signal_events=DATA_SIGNAL_EVENTS,
    )


@pytest.fixture(scope="module")
def injected_signal() -> ak.Array:
    """The particles of the W' events injected into the pseudo-data."""
    seed = _derived_seed(SEED, "wprime")
    return generate_events("wprime", DATA_SIGNAL_EVENTS, seed=seed, chunk_size=CHUNK_SIZE)


@pytest.fixture(scope="module")
def signal_ntuple(folder: Path) -> tuple[Path, AnalysisFileSummary]:
    return _write(folder, "wprime.root", "wprime", SIGNAL_EVENTS, "ntuple")


@pytest.fixture(scope="module")
def signal_particles() -> ak.Array:
    """The particles of the events in ``signal_ntuple`` (same process, seed and chunks)."""
    return generate_events("wprime", SIGNAL_EVENTS, seed=SEED, chunk_size=CHUNK_SIZE)


# --- the flat ntuple -------------------------------------------------------------------


@pytest.mark.slow
def test_ntuple_branches_and_dtypes(qcd_ntuple: tuple[Path, AnalysisFileSummary]) -> None:
    path, summary = qcd_ntuple
    with uproot.open(path) as handle:
        assert handle.classname_of("nominal") == "TTree"
        tree = handle["nominal"]
        assert list(tree.keys()) == list(NTUPLE_DTYPES)
        arrays = tree.arrays(library="np")
    for name, dtype in NTUPLE_DTYPES.items():
        assert arrays[name].dtype == dtype, name
        assert arrays[name].shape == (summary.n_written,)
    assert summary.n_written + summary.n_fewer_than_two_jets == QCD_EVENTS
    assert np.unique(arrays["event_number"]).size == summary.n_written


@pytest.mark.slow
def test_ntuple_dijet_mass_is_the_leading_pair_mass(
    qcd_ntuple: tuple[Path, AnalysisFileSummary],
) -> None:
    import vector

    arrays = uproot.open(qcd_ntuple[0])["nominal"].arrays(library="np")
    jets = [
        vector.array({name: arrays[f"jet{i}_{name}"] for name in ("pt", "eta", "phi", "mass")})
        for i in (1, 2)
    ]
    np.testing.assert_allclose(arrays["dijet_mass"], (jets[0] + jets[1]).mass, rtol=1e-9)
    assert np.all(arrays["jet1_pt"] >= arrays["jet2_pt"])
    assert np.all(arrays["jet2_pt"] > JET_PT_MIN)
    assert np.all(arrays["jet1_pt"] > 1000.0)  # the trigger: a jet above 1.2 TeV
    heavier = np.where(arrays["jet2_mass"] > arrays["jet1_mass"], 2, 1)
    rows = np.arange(len(heavier))
    mass = np.stack([arrays["jet1_mass"], arrays["jet2_mass"]], axis=1)[rows, heavier - 1]
    tau21 = np.stack([arrays["jet1_tau21"], arrays["jet2_tau21"]], axis=1)[rows, heavier - 1]
    expected = (1 - np.clip(tau21, 0, 1)) * mass / (mass + 200.0)
    np.testing.assert_allclose(arrays["tagger_score"], expected, rtol=1e-12)
    assert np.all((arrays["tagger_score"] >= 0) & (arrays["tagger_score"] < 1))


@pytest.mark.slow
def test_ntuple_negative_weights(qcd_ntuple: tuple[Path, AnalysisFileSummary]) -> None:
    path, summary = qcd_ntuple
    weights = uproot.open(path)["nominal"]["mc_weight"].array(library="np")
    assert set(np.unique(weights)) <= {-1.0, 1.0}
    n = len(weights)
    n_negative = int(np.sum(weights < 0))
    assert abs(n_negative - NEGATIVE_FRACTION * n) < 4 * np.sqrt(
        n * NEGATIVE_FRACTION * (1 - NEGATIVE_FRACTION)
    )
    assert summary.n_negative_weights == n_negative
    assert summary.sum_weights == pytest.approx(weights.sum())
    assert summary.sigma_pb is not None
    assert summary.written_sigma_pb == pytest.approx(
        summary.sigma_pb * summary.n_written / summary.n_generated
    )


@pytest.mark.slow
def test_stored_settings_and_summary(qcd_ntuple: tuple[Path, AnalysisFileSummary]) -> None:
    path, summary = qcd_ntuple
    with uproot.open(path) as handle:
        settings = json.loads(str(handle["settings"]))
        stored = json.loads(str(handle["summary"]))
    assert settings["process"] == "qcd"
    assert settings["file_format"] == "ntuple"
    assert settings["negative_weight_fraction"] == NEGATIVE_FRACTION
    assert settings["generation"][0]["generator"].startswith("pythia8mc")
    assert stored == summary.to_dict()


# --- the NanoAOD layout ---------------------------------------------------------------


@pytest.mark.slow
def test_nanoaod_branches_and_dtypes(qcd_nanoaod: tuple[Path, AnalysisFileSummary]) -> None:
    path, summary = qcd_nanoaod
    with uproot.open(path) as handle:
        assert handle.classname_of("Events") == "TTree"
        assert handle.classname_of("Runs") == "TTree"
        events = handle["Events"]
        expected = [
            "run",
            "luminosityBlock",
            "event",
            "nFatJet",
            *(f"FatJet_{name}" for name in FATJET_FIELDS),
            "genWeight",
        ]
        assert list(events.keys()) == expected
        arrays = events.arrays(library="ak")
        runs = handle["Runs"].arrays(library="np")
    assert ak.to_numpy(arrays.run).dtype == np.uint32
    assert ak.to_numpy(arrays.luminosityBlock).dtype == np.uint32
    assert ak.to_numpy(arrays.event).dtype == np.uint64
    assert ak.to_numpy(arrays.genWeight).dtype == np.float32
    for name in FATJET_FIELDS:
        assert ak.to_numpy(ak.flatten(arrays[f"FatJet_{name}"])).dtype == np.float32, name
    assert np.all(ak.to_numpy(arrays.run) == 1)
    entries = np.arange(len(arrays))
    np.testing.assert_array_equal(ak.to_numpy(arrays.luminosityBlock), 1 + entries // 1000)
    assert np.unique(ak.to_numpy(arrays.event)).size == len(arrays) == summary.n_written
    assert set(runs) == {"run", "genEventSumw", "genEventCount"}
    assert runs["run"].dtype == np.uint32
    assert runs["genEventSumw"].dtype == np.float64
    assert runs["genEventCount"].dtype == np.int64


@pytest.mark.slow
def test_nanoaod_jets_counts_and_order(qcd_nanoaod: tuple[Path, AnalysisFileSummary]) -> None:
    arrays = uproot.open(qcd_nanoaod[0])["Events"].arrays(library="ak")
    n_jets = ak.to_numpy(arrays.nFatJet)
    assert np.all(n_jets >= 2)
    np.testing.assert_array_equal(n_jets, ak.to_numpy(ak.num(arrays.FatJet_pt)))
    pt = arrays.FatJet_pt
    assert ak.all(pt > JET_PT_MIN)
    assert ak.all(pt[:, :-1] >= pt[:, 1:])
    assert ak.all(arrays.FatJet_msoftdrop <= arrays.FatJet_mass * (1 + 1e-6) + 1e-3)
    assert ak.all((arrays.FatJet_tagger >= 0) & (arrays.FatJet_tagger < 1))


@pytest.mark.slow
def test_nanoaod_runs_sum_of_weights(qcd_nanoaod: tuple[Path, AnalysisFileSummary]) -> None:
    path, summary = qcd_nanoaod
    with uproot.open(path) as handle:
        weights = handle["Events"]["genWeight"].array(library="np")
        runs = handle["Runs"].arrays(library="np")
    assert set(np.unique(weights)) <= {-1.0, 1.0}
    assert runs["genEventSumw"][0] == pytest.approx(np.sum(weights, dtype=np.float64))
    assert runs["genEventCount"][0] == len(weights)
    assert summary.sum_weights == pytest.approx(runs["genEventSumw"][0])


@pytest.mark.slow
def test_ntuple_and_nanoaod_of_one_seed_hold_the_same_events(
    qcd_ntuple: tuple[Path, AnalysisFileSummary], qcd_nanoaod: tuple[Path, AnalysisFileSummary]
) -> None:
    flat = uproot.open(qcd_ntuple[0])["nominal"].arrays(library="np")
    nano = uproot.open(qcd_nanoaod[0])["Events"].arrays(library="ak")
    np.testing.assert_array_equal(flat["event_number"], ak.to_numpy(nano.event).astype(np.int64))
    np.testing.assert_array_equal(flat["mc_weight"], ak.to_numpy(nano.genWeight))
    for i in (0, 1):
        for name in ("pt", "eta", "mass"):
            np.testing.assert_allclose(
                flat[f"jet{i + 1}_{name}"], ak.to_numpy(nano[f"FatJet_{name}"][:, i]), rtol=1e-6
            )


@ignore_cross_references
@pytest.mark.slow
def test_nanoaod_schema_reads_the_file(qcd_nanoaod: tuple[Path, AnalysisFileSummary]) -> None:
    pytest.importorskip("coffea")
    import vector
    from coffea.nanoevents import NanoAODSchema, NanoEventsFactory

    path, summary = qcd_nanoaod
    events = NanoEventsFactory.from_root(
        {str(path): "Events"}, schemaclass=NanoAODSchema, mode="eager"
    ).events()
    assert len(events) == summary.n_written
    assert ak.all(ak.num(events.FatJet.msoftdrop) >= 2)
    assert set(np.unique(ak.to_numpy(events.genWeight))) <= {-1.0, 1.0}
    for name in ("run", "luminosityBlock", "event"):
        assert name in events.fields
    first, second = events.FatJet[:, 0], events.FatJet[:, 1]
    pair = [
        vector.array({name: ak.to_numpy(jet[name]) for name in ("pt", "eta", "phi", "mass")})
        for jet in (first, second)
    ]
    mjj = ak.to_numpy((first + second).mass)
    np.testing.assert_allclose(mjj, (pair[0] + pair[1]).mass, rtol=1e-5)


# --- pseudo-data ------------------------------------------------------------------------


@pytest.mark.slow
def test_pseudo_data_has_no_weights_and_all_events(
    pseudo_data: tuple[Path, AnalysisFileSummary],
) -> None:
    path, summary = pseudo_data
    n_generated = DATA_QCD_EVENTS + DATA_SIGNAL_EVENTS
    assert summary.n_triggered == n_generated
    assert summary.n_written == n_generated - summary.n_fewer_than_two_jets
    assert summary.sum_weights is None
    assert summary.sigma_pb is None
    assert 0 < summary.n_signal_written <= DATA_SIGNAL_EVENTS
    with uproot.open(path) as handle:
        if summary.file_format == "ntuple":
            tree = handle["nominal"]
            assert list(tree.keys()) == [name for name in NTUPLE_DTYPES if name != "mc_weight"]
            numbers = tree["event_number"].array(library="np")
        else:
            tree = handle["Events"]
            branches = list(tree.keys())
            assert "genWeight" not in branches
            assert "run" in branches
            assert list(handle["Runs"].keys()) == ["run"]
            numbers = tree["event"].array(library="np")
        assert tree.num_entries == summary.n_written
    assert np.unique(numbers).size == len(numbers)
    assert numbers.min() >= 1
    assert numbers.max() <= n_generated


@pytest.mark.slow
def test_pseudo_data_mixes_signal_in(
    pseudo_data: tuple[Path, AnalysisFileSummary], injected_signal: ak.Array
) -> None:
    """The W' events of their own derived seed are all there, spread over the file."""
    path, summary = pseudo_data
    with uproot.open(path) as handle:
        if summary.file_format == "ntuple":
            leading_pt = handle["nominal"]["jet1_pt"].array(library="np")
        else:
            leading_pt = ak.to_numpy(handle["Events"]["FatJet_pt"].array()[:, 0])
    jets = fat_jets(injected_signal)
    signal_pt = ak.to_numpy(jets[ak.num(jets) >= 2][:, 0].pt)
    positions = np.flatnonzero(np.isin(leading_pt.astype(np.float32), signal_pt.astype(np.float32)))
    assert len(positions) == len(signal_pt) == summary.n_signal_written
    assert positions.max() - positions.min() > len(leading_pt) // 2


# --- real jets, reproducibility, reuse ---------------------------------------------------


@pytest.mark.slow
def test_file_holds_the_clustered_jets_of_the_generated_events(
    signal_ntuple: tuple[Path, AnalysisFileSummary], signal_particles: ak.Array
) -> None:
    arrays = uproot.open(signal_ntuple[0])["nominal"].arrays(library="np")
    jets = fat_jets(signal_particles)
    two = ak.to_numpy(ak.num(jets) >= 2)
    np.testing.assert_array_equal(arrays["event_number"], np.flatnonzero(two) + 1)
    np.testing.assert_allclose(arrays["jet1_pt"], ak.to_numpy(jets[two][:, 0].pt))
    np.testing.assert_allclose(arrays["jet2_mass"], ak.to_numpy(jets[two][:, 1].mass))
    # the signal's heavy jet: X(500) in most events
    heavier = np.maximum(arrays["jet1_mass"], arrays["jet2_mass"])
    assert 350.0 < np.median(heavier) < 650.0
    assert np.median(arrays["tagger_score"]) > 0.4


def _reference_softdrop_mass(momenta: np.ndarray, z_cut: float = 0.1) -> float:
    """Cambridge/Aachen clustering and beta=0 soft-drop declustering, written out with numpy."""
    nodes = list(momenta)
    parents: dict[int, tuple[int, int]] = {}
    active = list(range(len(nodes)))
    while len(active) > 1:
        p = np.array([nodes[i] for i in active])
        rapidity = 0.5 * np.log((p[:, 3] + p[:, 2]) / (p[:, 3] - p[:, 2]))
        phi = np.arctan2(p[:, 1], p[:, 0])
        dphi = np.abs(phi[:, None] - phi[None, :])
        dphi = np.minimum(dphi, 2 * np.pi - dphi)
        distance = (rapidity[:, None] - rapidity[None, :]) ** 2 + dphi**2
        np.fill_diagonal(distance, np.inf)
        a, b = np.unravel_index(np.argmin(distance), distance.shape)
        i, j = active[a], active[b]
        nodes.append(nodes[i] + nodes[j])
        parents[len(nodes) - 1] = (i, j)
        active = [k for k in active if k not in (i, j)] + [len(nodes) - 1]
    node = active[0]
    while node in parents:
        i, j = parents[node]
        pt_i, pt_j = np.hypot(*nodes[i][:2]), np.hypot(*nodes[j][:2])
        if min(pt_i, pt_j) / (pt_i + pt_j) > z_cut:
            break
        node = i if pt_i > pt_j else j
    px, py, pz, energy = nodes[node]
    return float(np.sqrt(max(energy**2 - px**2 - py**2 - pz**2, 0.0)))


@pytest.mark.slow
def test_softdrop_mass_matches_a_reference_implementation(signal_particles: ak.Array) -> None:
    clustered = cluster_jets_with_constituents(signal_particles[:3], radius=1.0)
    constituents = ak.flatten(clustered.constituents[:, :2], axis=1)
    groomed = softdrop_mass(constituents)
    for jet, value in zip(constituents, groomed, strict=True):
        momenta = np.stack([ak.to_numpy(jet[name]) for name in ("px", "py", "pz", "E")], axis=1)
        assert value == pytest.approx(_reference_softdrop_mass(momenta), rel=1e-6, abs=1e-6)
    mass = ak.to_numpy(ak.flatten(clustered.jets[:, :2]).mass)
    assert np.all(groomed <= mass + 1e-6)


def test_tagger_score_formula() -> None:
    np.testing.assert_allclose(
        tagger_score([500.0, 100.0, 0.0, 50.0], [0.2, 0.6, 0.1, 1.3]),
        [0.8 * 500 / 700, 0.4 * 100 / 300, 0.0, 0.0],
    )


@pytest.mark.slow
def test_same_seed_same_contents_and_reuse(
    folder: Path, signal_ntuple: tuple[Path, AnalysisFileSummary]
) -> None:
    path, summary = signal_ntuple
    again_path, again = _write(folder, "wprime_again.root", "wprime", SIGNAL_EVENTS, "ntuple")
    assert again.to_dict() == summary.to_dict()
    first = uproot.open(path)["nominal"].arrays(library="np")
    second = uproot.open(again_path)["nominal"].arrays(library="np")
    assert first.keys() == second.keys()
    for name in first:
        np.testing.assert_array_equal(first[name], second[name])
    # a complete file of the same settings is kept as it is
    modified = again_path.stat().st_mtime_ns
    kept = _write(folder, "wprime_again.root", "wprime", SIGNAL_EVENTS, "ntuple")[1]
    assert kept.reused
    assert kept.to_dict() == summary.to_dict()
    assert again_path.stat().st_mtime_ns == modified
    # other settings rewrite it, through a temporary file that does not stay behind
    changed = _write(
        folder, "wprime_again.root", "wprime", SIGNAL_EVENTS, "ntuple", negative_weight_fraction=0.5
    )[1]
    assert not changed.reused
    with uproot.open(again_path) as handle:
        assert json.loads(str(handle["settings"]))["negative_weight_fraction"] == 0.5
        np.testing.assert_array_equal(
            handle["nominal"]["jet1_pt"].array(library="np"), first["jet1_pt"]
        )
    assert sorted(p.name for p in folder.iterdir() if p.name.startswith(".")) == []


@pytest.mark.slow
def test_damaged_file_is_rewritten(folder: Path) -> None:
    path = folder / "damaged.root"
    path.write_bytes(b"not a ROOT file")
    summary = _write(folder, "damaged.root", "wprime", 5, "nanoaod")[1]
    assert not summary.reused
    assert uproot.open(path)["Events"].num_entries == summary.n_written


@pytest.mark.slow
def test_a_file_altered_after_it_was_written_is_named_and_rewritten(
    folder: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path, summary = _write(folder, "altered.root", "wprime", 5, "ntuple")
    record = json.loads((folder / "altered.root.record.json").read_text())
    assert record["files"]["altered.root"]["size"] == path.stat().st_size
    assert _write(folder, "altered.root", "wprime", 5, "ntuple")[1].reused
    data = bytearray(path.read_bytes())
    data[len(data) // 3] ^= 0x04  # still a readable ROOT file, with other bytes
    path.write_bytes(bytes(data))
    with caplog.at_level(logging.INFO):
        again = _write(folder, "altered.root", "wprime", 5, "ntuple")[1]
    assert not again.reused
    assert again.to_dict() == summary.to_dict()
    named = [r.getMessage() for r in caplog.records if str(path) in r.getMessage()]
    assert len(named) == 1
    assert "altered" in named[0]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"process": "zprime"}, "process: unknown process"),
        ({"file_format": "hdf5"}, "file_format: unknown format"),
        ({"signal_events": 5}, "pseudo-data only"),
        ({"negative_weight_fraction": 1.0}, r"in \[0, 1\)"),
        ({"negative_weight_fraction": -0.1}, r"in \[0, 1\)"),
        ({"process": "data", "negative_weight_fraction": 0.2}, "has no weights"),
        ({"events": 0}, "n_events: must be at least 1"),
        ({"path": "out.h5"}, "name it \\*.root"),
    ],
)
def test_bad_arguments(tmp_path: Path, options: dict[str, Any], message: str) -> None:
    arguments: dict[str, Any] = {
        "path": "out.root",
        "process": "qcd",
        "events": 10,
        "file_format": "ntuple",
        **options,
    }
    path = tmp_path / arguments.pop("path")
    with pytest.raises(ValueError, match=message):
        generate_analysis_file(
            path,
            arguments.pop("process"),
            arguments.pop("events"),
            1,
            progress=False,
            **arguments,
        )
    assert list(tmp_path.iterdir()) == []


# --- the command line -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--process", "data"], "--process data (pseudo-data) needs --format ntuple"),
        (
            ["--format", "ntuple", "--negative-weight-fraction", "1"],
            "--negative-weight-fraction must be in [0, 1)",
        ),
        (
            ["--format", "nanoaod", "--negative-weight-fraction", "-0.5"],
            "--negative-weight-fraction must be in [0, 1)",
        ),
        (["--negative-weight-fraction", "0.2"], "needs --format ntuple or --format nanoaod"),
        (["--format", "ntuple", "--signal-events", "5"], "--signal-events injects W' events"),
        (
            ["--format", "ntuple", "--process", "data", "--negative-weight-fraction", "0.1"],
            "pseudo-data (--process data) has no weights",
        ),
        (["--format", "nanoaod", "--executor", "dask"], "local pool only"),
        (["--format", "ntuple", "--events", "0"], "n_events: must be at least 1"),
    ],
)
def test_cli_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], arguments: list[str], message: str
) -> None:
    base = {"--process": "qcd", "--events": "10", "--seed": "1"}
    for flag, value in zip(arguments[::2], arguments[1::2], strict=True):
        base[flag] = value
    command = ["generate", "--output", str(tmp_path / "out.root"), "--quiet"]
    for flag, value in base.items():
        command += [flag, value]
    assert main(command) == 2
    err = capsys.readouterr().err
    assert message in err
    assert err.count("\n") == 1
    assert "Traceback" not in err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
def test_cli_writes_pseudo_data(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    output = tmp_path / "data.root"
    command = [
        "generate",
        "--process",
        "data",
        "--events",
        "10",
        "--signal-events",
        "5",
        "--seed",
        "3",
        "--format",
        "nanoaod",
        "--output",
        str(output),
        "--workers",
        "1",
        "--chunk-size",
        "10",
        "--quiet",
    ]
    assert main(command) == 0
    out = capsys.readouterr().out
    assert "data events in the nanoaod layout" in out
    assert "had fewer than two jets above 200 GeV and were dropped" in out
    with uproot.open(output) as handle:
        assert "genWeight" not in list(handle["Events"].keys())
        n_written = handle["Events"].num_entries
    assert f"{n_written} data events" in out
    assert main(command) == 0
    assert "kept: the file already had these settings" in capsys.readouterr().out


def test_cli_default_chunk_size_is_the_api_default() -> None:
    """The command and a study's ``generate:`` block write the same file for the same seed."""
    import inspect

    from rosenblatt.commands import generate

    default = inspect.signature(generate_analysis_file).parameters["chunk_size"].default
    assert default == generate._ANALYSIS_CHUNK_SIZE
