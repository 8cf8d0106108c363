"""Event generation with Pythia 8: settings, reproducibility, trigger, files and resuming."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import awkward as ak
import numpy as np
import pytest

pytest.importorskip("pythia8mc")
pytest.importorskip("fastjet")

from rosenblatt._records import refusing_corrupt_cache
from rosenblatt.exceptions import CorruptCacheError
from rosenblatt.hep.generation import (
    GenerationSettings,
    GenerationSummary,
    generate_events,
    generate_file,
    partial_name,
    record_name,
)
from rosenblatt.hep.pythia_settings import PYTHIA_SEED_MAX, pythia_settings
from rosenblatt.io import read_events
from rosenblatt.io.lhco import LHCOWriter, lhco_info
from rosenblatt.io.root import RESUME_SUFFIX, RootWriter, root_info

SIGNAL_EVENTS = 30
BACKGROUND_EVENTS = 20


def antikt_jets(events: ak.Array, radius: float = 1.0) -> ak.Array:
    """Anti-kT jets from FastJet directly (px, py, pz, E of massless particles)."""
    import fastjet

    px = events.pt * np.cos(events.phi)
    py = events.pt * np.sin(events.phi)
    pz = events.pt * np.sinh(events.eta)
    energy = events.pt * np.cosh(events.eta)
    momenta = ak.zip({"px": px, "py": py, "pz": pz, "E": energy})
    sequence = fastjet.ClusterSequence(
        momenta, fastjet.JetDefinition(fastjet.antikt_algorithm, radius)
    )
    jets = sequence.inclusive_jets()
    jets = ak.zip({"px": jets.px, "py": jets.py, "pz": jets.pz, "E": jets.E})
    pt = np.hypot(jets.px, jets.py)
    return jets[ak.argsort(pt, axis=1, ascending=False)]


def jet_pt(jets: ak.Array) -> ak.Array:
    return np.hypot(jets.px, jets.py)


def jet_mass(jets: ak.Array) -> ak.Array:
    squared = jets.E**2 - jets.px**2 - jets.py**2 - jets.pz**2
    return np.sqrt(np.maximum(squared, 0.0))


@pytest.fixture(scope="session")
def signal_events() -> ak.Array:
    return generate_events("wprime", SIGNAL_EVENTS, seed=11, chunk_size=10)


@pytest.fixture(scope="session")
def background_events() -> ak.Array:
    return generate_events("qcd", BACKGROUND_EVENTS, seed=12, chunk_size=20)


def assert_same_events(actual: ak.Array, expected: ak.Array) -> None:
    for name in ("pt", "eta", "phi", "label", "weight"):
        assert ak.to_list(actual[name]) == ak.to_list(expected[name]), name


# settings ------------------------------------------------------------------------------


def test_chunk_sizes_cover_the_events_once() -> None:
    settings = GenerationSettings("qcd", n_events=2501, seed=0, chunk_size=1000)
    assert settings.chunk_sizes() == [1000, 1000, 501]
    assert GenerationSettings("qcd", 2000, 0, chunk_size=1000).chunk_sizes() == [1000, 1000]


def test_chunk_seeds_are_distinct_valid_and_depend_on_seed_process_and_chunk() -> None:
    settings = GenerationSettings("qcd", n_events=10**6, seed=5, chunk_size=1000)
    seeds = [settings.chunk_seed(i) for i in range(len(settings.chunk_sizes()))]
    assert len(set(seeds)) == len(seeds)
    assert all(1 <= seed <= PYTHIA_SEED_MAX for seed in seeds)
    smaller_run = GenerationSettings("qcd", n_events=3000, seed=5, chunk_size=1000)
    assert [smaller_run.chunk_seed(i) for i in range(3)] == seeds[:3]
    assert GenerationSettings("qcd", 10, seed=6).chunk_seed(0) != seeds[0]
    assert GenerationSettings("wprime", 10, seed=5).chunk_seed(0) != seeds[0]


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"process": "ttbar"}, "process"),
        ({"n_events": 0}, "n_events"),
        ({"seed": -1}, "seed"),
        ({"chunk_size": 0}, "chunk_size"),
        ({"pthat_min": -5.0}, "pthat_min"),
    ],
)
def test_bad_settings_name_the_argument(changes: dict[str, object], message: str) -> None:
    arguments: dict[str, object] = {"process": "qcd", "n_events": 10, "seed": 1, **changes}
    with pytest.raises(ValueError, match=message):
        GenerationSettings(**arguments)  # type: ignore[arg-type]


def test_non_integer_event_count_is_refused() -> None:
    with pytest.raises(TypeError, match="n_events"):
        GenerationSettings("qcd", n_events=10.5, seed=1)  # type: ignore[arg-type]


def test_pythia_settings_match_the_lhco_processes() -> None:
    signal = pythia_settings("wprime", 7)
    for line in (
        "NewGaugeBoson:ffbar2Wprime = on",
        "34:m0 = 3500",
        "34:onIfMatch = 24 23",
        "Wprime:coup2WZ = 1",
        "24:m0 = 500",
        "23:m0 = 100",
    ):
        assert line in signal
    assert "Beams:eCM = 13000" in signal
    assert "Random:seed = 7" in signal
    assert "PhaseSpace:pTHatMin = 800" in pythia_settings("qcd", 7, pthat_min=800)
    with pytest.raises(ValueError, match="seed"):
        pythia_settings("qcd", PYTHIA_SEED_MAX + 1)


def test_summary_combines_chunks_weighted_by_generated_events() -> None:
    records = {
        "n_events": np.array([10, 10]),
        "n_generated": np.array([20, 60]),
        "sigma_pb": np.array([2.0, 4.0]),
        "sigma_err_pb": np.array([0.4, 0.2]),
        "n_truncated_events": np.array([1, 0]),
        "n_dropped_particles": np.array([3, 0]),
    }
    summary = GenerationSummary.from_records(records)
    assert summary.n_events == 20
    assert summary.n_generated == 80
    assert summary.efficiency == pytest.approx(0.25)
    assert summary.sigma_pb == pytest.approx((20 * 2.0 + 60 * 4.0) / 80)
    assert summary.sigma_err_pb == pytest.approx(np.hypot(20 * 0.4, 60 * 0.2) / 80)
    assert (summary.n_truncated_events, summary.n_dropped_particles) == (1, 3)


# events --------------------------------------------------------------------------------


@pytest.mark.slow
def test_events_have_the_requested_count_fields_and_labels(
    signal_events: ak.Array, background_events: ak.Array
) -> None:
    assert len(signal_events) == SIGNAL_EVENTS
    assert len(background_events) == BACKGROUND_EVENTS
    assert set(ak.fields(signal_events)) == {"pt", "eta", "phi", "label", "weight"}
    assert np.all(ak.to_numpy(signal_events.label) == 1)
    assert np.all(ak.to_numpy(background_events.label) == 0)
    for events in (signal_events, background_events):
        assert np.all(ak.to_numpy(events.weight) == 1.0)


@pytest.mark.slow
def test_particles_are_visible_accepted_and_ordered(
    signal_events: ak.Array, background_events: ak.Array
) -> None:
    for events in (signal_events, background_events):
        counts = ak.to_numpy(ak.num(events.pt))
        assert np.all(counts > 50)
        assert np.all(counts <= 700)
        pt = ak.flatten(events.pt)
        assert ak.all(pt > 0.5)
        assert ak.all(abs(ak.flatten(events.eta)) < 2.5)
        assert ak.all(abs(ak.flatten(events.phi)) <= np.pi)
        assert ak.all(events.pt[:, 1:] <= events.pt[:, :-1])


@pytest.mark.slow
def test_every_event_passes_the_trigger_on_reclustering(
    signal_events: ak.Array, background_events: ak.Array
) -> None:
    for events in (signal_events, background_events):
        leading = ak.to_numpy(jet_pt(antikt_jets(events))[:, 0])
        assert np.all(leading > 1200.0)


@pytest.mark.slow
def test_signal_dijet_mass_and_jet_masses_match_the_resonances(signal_events: ak.Array) -> None:
    jets = antikt_jets(signal_events)[:, :2]
    px, py, pz, energy = (ak.sum(jets[name], axis=1) for name in ("px", "py", "pz", "E"))
    mjj = ak.to_numpy(np.sqrt(energy**2 - px**2 - py**2 - pz**2))
    masses = ak.to_numpy(jet_mass(jets))
    heavier, lighter = masses.max(axis=1), masses.min(axis=1)
    assert 3000.0 < np.median(mjj) < 3800.0
    assert abs(np.median(heavier) / 500.0 - 1) < 0.25
    assert abs(np.median(lighter) / 100.0 - 1) < 0.25


@pytest.mark.slow
def test_background_has_no_resonance_in_the_jet_mass(background_events: ak.Array) -> None:
    jets = antikt_jets(background_events)[:, :2]
    heavier = ak.to_numpy(jet_mass(jets)).max(axis=1)
    assert np.median(heavier) < 400.0


@pytest.mark.slow
def test_same_seed_same_events_and_a_shorter_run_is_a_prefix(signal_events: ak.Array) -> None:
    shorter = generate_events("wprime", 13, seed=11, chunk_size=10)
    assert_same_events(shorter, signal_events[:13])


@pytest.mark.slow
def test_other_seed_other_events(signal_events: ak.Array) -> None:
    other = generate_events("wprime", 2, seed=12, chunk_size=10)
    assert ak.to_list(other.pt[0]) != ak.to_list(signal_events.pt[0])


@pytest.mark.slow
def test_events_do_not_depend_on_the_number_of_workers(signal_events: ak.Array) -> None:
    parallel = generate_events("wprime", 20, seed=11, chunk_size=10, workers=2)
    assert_same_events(parallel, signal_events[:20])


# files ---------------------------------------------------------------------------------


@pytest.mark.parametrize("suffix", [".h5", ".root"])
@pytest.mark.slow
def test_an_interrupted_run_resumes_without_losing_or_duplicating(
    tmp_path: Path, suffix: str, monkeypatch: pytest.MonkeyPatch, signal_events: ak.Array
) -> None:
    path = tmp_path / f"run{suffix}"
    settings = {"chunk_size": 10, "progress": False, "workers": 1}
    writer_class = RootWriter if suffix == ".root" else LHCOWriter
    original_append = writer_class.append
    calls = {"n": 0}

    def append_then_crash(self: object, events: ak.Array, record: dict[str, object]) -> None:
        calls["n"] += 1
        if calls["n"] == 3:
            # the events of chunk 2 reach the file, its record never does
            original_append(self, events, {"chunk": record["chunk"]})
        original_append(self, events, record)

    monkeypatch.setattr(writer_class, "append", append_then_crash)
    with pytest.raises(ValueError, match="missing"):
        generate_file(path, "wprime", 25, seed=11, **settings)  # type: ignore[arg-type]
    monkeypatch.setattr(writer_class, "append", original_append)
    # the final name appears only once the file is complete
    assert not path.exists()
    assert not record_name(path).exists()
    interrupted = read_events(partial_name(path))
    assert len(interrupted) == 25  # two complete chunks and the unrecorded third

    generate_file(path, "wprime", 25, seed=11, **settings)  # type: ignore[arg-type]
    resumed = read_events(path)
    info = lhco_info(path) if suffix == ".h5" else root_info(path)
    assert list(info["chunks"]["chunk"]) == [0, 1, 2]
    assert list(info["chunks"]["n_events"]) == [10, 10, 5]
    assert ak.to_list(resumed.entry) == list(range(25))
    assert_same_events(resumed, signal_events[:25])
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        f"run{suffix}",
        f"run{suffix}.record.json",
    ]
    assert RESUME_SUFFIX not in str(list(tmp_path.iterdir()))


@pytest.mark.parametrize("damage", ["flip", "truncate"])
@pytest.mark.slow
def test_a_damaged_generated_file_is_named_and_generated_again(
    tmp_path: Path, damage: str, caplog: pytest.LogCaptureFixture, signal_events: ak.Array
) -> None:
    path = tmp_path / "run.root"
    options = {"seed": 11, "chunk_size": 10, "workers": 1, "progress": False}
    generate_file(path, "wprime", 12, **options)  # type: ignore[arg-type]
    record = json.loads(record_name(path).read_text())
    assert record["inputs"]["seed"] == 11
    assert record["files"]["run.root"]["size"] == path.stat().st_size
    data = bytearray(path.read_bytes())
    if damage == "flip":
        data[len(data) // 2] ^= 0x10
    else:
        del data[len(data) // 2 :]
    path.write_bytes(bytes(data))
    with caplog.at_level(logging.INFO):
        generate_file(path, "wprime", 12, **options)  # type: ignore[arg-type]
    named = [r.getMessage() for r in caplog.records if str(path) in r.getMessage()]
    assert len(named) == 1
    assert "computing it again" in named[0]
    assert_same_events(read_events(path), signal_events[:12])
    # refused under the flag: one error naming the file
    path.write_bytes(bytes(data))
    with refusing_corrupt_cache(), pytest.raises(CorruptCacheError, match=r"run\.root"):
        generate_file(path, "wprime", 12, **options)  # type: ignore[arg-type]


@pytest.mark.parametrize("suffix", [".h5", ".root"])
@pytest.mark.slow
def test_file_holds_the_events_and_counts_and_grows_on_request(
    tmp_path: Path, suffix: str, signal_events: ak.Array
) -> None:
    path = tmp_path / f"wprime{suffix}"
    options = {"seed": 11, "chunk_size": 10, "workers": 1, "progress": False}
    info_of = lhco_info if suffix == ".h5" else root_info

    summary = generate_file(path, "wprime", 12, **options)  # type: ignore[arg-type]
    assert_same_events(read_events(path), signal_events[:12])
    info = info_of(path)
    chunks = info["chunks"]
    assert list(chunks["chunk"]) == [0, 1]
    assert list(chunks["n_events"]) == [10, 2]
    assert np.all(chunks["n_generated"] >= chunks["n_events"])
    assert np.all(chunks["sigma_pb"] > 0)
    assert np.all(chunks["sigma_err_pb"] > 0)
    assert info["settings"]["process"] == "wprime"
    assert info["settings"]["seed"] == 11
    assert info["summary"]["n_passed"] == summary.n_events == 12
    assert info["summary"]["n_generated"] == summary.n_generated == chunks["n_generated"].sum()
    assert info["summary"]["complete"]
    assert summary.sigma_pb == pytest.approx(
        np.average(chunks["sigma_pb"], weights=chunks["n_generated"])
    )

    # more events: the full first chunk stays, the rest is generated
    grown = generate_file(path, "wprime", 25, **options)  # type: ignore[arg-type]
    info = info_of(path)
    assert list(info["chunks"]["n_events"]) == [10, 10, 5]
    assert list(info["chunks"]["n_generated"][:1]) == list(chunks["n_generated"][:1])
    assert info["settings"]["n_events"] == grown.n_events == 25
    assert_same_events(read_events(path), signal_events[:25])

    # a complete file is left as it is; fewer events are refused
    assert generate_file(path, "wprime", 25, **options) == grown  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="holds a run of 25 events, 20 requested"):
        generate_file(path, "wprime", 20, **options)  # type: ignore[arg-type]


@pytest.mark.slow
def test_resuming_with_other_settings_is_refused_unless_overwriting(tmp_path: Path) -> None:
    path = tmp_path / "run.h5"
    generate_file(path, "wprime", 5, seed=3, chunk_size=5, progress=False)
    with pytest.raises(ValueError, match=r"seed: 3 in the file, 4 requested"):
        generate_file(path, "wprime", 5, seed=4, chunk_size=5, progress=False)
    generate_file(path, "wprime", 5, seed=4, chunk_size=5, progress=False, overwrite=True)
    assert lhco_info(path)["settings"]["seed"] == 4


def test_unsupported_output_extension_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="extension"):
        generate_file(tmp_path / "events.csv", "qcd", 5, seed=1)
    with pytest.raises(ValueError, match="generation writes"):
        generate_file(tmp_path / "events.parquet", "qcd", 5, seed=1)


def test_command_line_writes_the_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from rosenblatt.cli import main

    path = tmp_path / "cli.h5"
    argv = ["generate", "--process", "wprime", "--events", "6", "--seed", "11"]
    options = ["--output", str(path), "--workers", "1", "--chunk-size", "20", "--quiet"]
    assert main([*argv, *options]) == 0
    assert "6 wprime events passing the trigger" in capsys.readouterr().out
    assert lhco_info(path)["n_events"] == 6

    bad = ["--output", str(tmp_path / "cli.txt"), "--quiet"]
    assert main([*argv, *bad]) == 2
    assert "extension" in capsys.readouterr().err
