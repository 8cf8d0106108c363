"""The ABCD study on files whose layout the project did not choose: flat ntuples and NanoAOD.

The files are written here with uproot, with their own tree and branch names
and negative weights; every count of the study is checked against an
independent numpy count of the same events.
"""

from __future__ import annotations

import contextlib
import io
import itertools
import json
import logging
import math
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import awkward as ak
import numpy as np
import pytest
import yaml

pytest.importorskip("coffea")
pytest.importorskip("pyhf")
uproot = pytest.importorskip("uproot")
vector = pytest.importorskip("vector")

from dijet_ntuple import dijet_columns

import rosenblatt as rb
from rosenblatt.cli import main
from rosenblatt.processors.analysis import region_stage
from rosenblatt.studies.abcd.config import NEGATIVE_WEIGHT_REPLICAS

pytestmark = pytest.mark.slow

XSEC = {"qcd": 2000.0, "sig": 10.0}
#: a wall time, a clock time or a rate (events/s, a progress bar's chunk/s) in a log or report line
TIMING = re.compile(
    r"\d+:\d\d:\d\d|[-+]?\d[\d,]*(?:\.\d+)?(?:[eE][-+]?\d+)?\s*(?:\w+/s\b|s\b|ms\b|min\b)"
)
#: a path in a log or report line (a word with a slash)
PATHS = re.compile(r"\S*/\S*")
LUMI = 3.0


def _write_tree(path: Path, name: str, columns: dict[str, np.ndarray]) -> None:
    with uproot.recreate(path) as handle:
        handle.mktree(name, {key: value.dtype for key, value in columns.items()})
        handle[name].extend(columns)


@pytest.fixture(scope="module")
def ntuples(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Defining and testing QCD, signal and pseudo-data, tree ``nominal``, weights ``w_mc``.

    The background simulation's size differs from the data's, so that its counts are not
    the data's totals by construction (a difference of two published numbers is tried).
    """
    folder = tmp_path_factory.mktemp("ntuples")
    rng = np.random.default_rng(7)
    for name, n, signal in (("qcd_def", 12000, False), ("qcd", 8600, False), ("sig", 1500, True)):
        columns = dijet_columns(rng, n, signal)
        columns["w_mc"] = rng.choice([-0.5, 1.0, 1.5], n, p=[0.1, 0.6, 0.3])
        _write_tree(folder / f"{name}.root", "nominal", columns)
    data = {
        key: np.concatenate([a, b])
        for (key, a), b in zip(
            dijet_columns(rng, 8000, False).items(),
            dijet_columns(rng, 80, True).values(),
            strict=True,
        )
    }
    _write_tree(folder / "data.root", "nominal", data)
    (folder / "sel.py").write_text(
        "import numpy as np\n\n\ndef low_mass(events):\n"
        "    return np.asarray(events['m_jj_reco']) < 4000.0\n",
        encoding="utf-8",
    )
    return folder


def _config(folder: Path, name: str, **extra: Any) -> Path:
    config: dict[str, Any] = {
        "study": "abcd",
        "name": name,
        "treename": "nominal",
        "lumi": LUMI,
        "datasets": {
            "qcd-defining": {
                "files": ["qcd_def.root"],
                "role": "defining",
                "weight": "w_mc",
                "xsec": XSEC["qcd"],
            },
            "qcd": {
                "files": ["qcd.root"],
                "role": "background",
                "weight": "w_mc",
                "xsec": XSEC["qcd"],
            },
            "sig": {"files": ["sig.root"], "role": "signal", "weight": "w_mc", "xsec": XSEC["sig"]},
            "data": {"files": ["data.root"], "role": "data"},
        },
        "score": "tagger_out",
        "transforms": [{"kind": "irgi", "depth": 5}],
        "abcd": {"x": "m_jj_reco", "x0": [2200.0, 3800.0], "n_x0": 9, "y0": [0.1, 0.9], "n_y0": 9},
        "executor": {"kind": "iterative", "chunksize": 5000},
        "statistics": {"n_boot": 0},
        "data": {"folder": str(folder / f"cache-{name}")},
        **extra,
    }
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return path


def _run(folder: Path, name: str, **extra: Any) -> Path:
    out = folder / f"results-{name}"
    assert main(["run", str(_config(folder, name, **extra)), "--output", str(out)]) == 0
    return out


@pytest.fixture(scope="module")
def blinded(ntuples: Path) -> Path:
    return _run(ntuples, "blinded")


@pytest.fixture(scope="module")
def unblinded(ntuples: Path) -> Path:
    # with bootstrap replicas (statistics.n_boot: auto, 50 for these negative weights): the
    # closure tests hold the transform's statistics too
    return _run(ntuples, "unblinded", blind=False, statistics={"seed": 1})


def _read(path: Path, *branches: str) -> list[np.ndarray]:
    tree = uproot.open(path)["nominal"]
    return [tree[b].array(library="np") for b in branches]


def _count(x: np.ndarray, y: np.ndarray, x0: list[float], y0: list[float]) -> np.ndarray:
    """Events per bin, flow bins included, lower edges inclusive (as boost-histogram)."""
    i = np.searchsorted(x0, x, side="right")
    j = np.searchsorted(y0, y, side="right")
    counts = np.zeros((len(x0) + 1, len(y0) + 1))
    np.add.at(counts, (i, j), 1.0)
    return counts


def _histogram(out: Path, name: str) -> np.ndarray:
    return uproot.open(out / "abcd.root")[name].values(flow=True)


def test_simulation_is_normalised_to_xsec_times_lumi(blinded: Path) -> None:
    for dataset, xsec in XSEC.items():
        total = _histogram(blinded, f"{dataset}_score").sum()
        assert total == pytest.approx(xsec * LUMI, rel=1e-12)
    summary = json.loads((blinded / "summary.json").read_text())
    assert summary["datasets"]["qcd"]["scale"] == pytest.approx(
        XSEC["qcd"] * LUMI / summary["datasets"]["qcd"]["sum_weights"]
    )


def _data_counts(ntuples: Path, out: Path, variant: str) -> np.ndarray:
    x, score = _read(ntuples / "data.root", "m_jj_reco", "tagger_out")
    closure = json.loads((out / "closure.json").read_text())[variant]
    y = score if variant == "score" else rb.load(out / f"{variant}.json").transform(x, score)
    return _count(x, y, closure["x0"], closure["y0"]), x, y


def test_an_irgi_without_depth_takes_one_its_defining_sample_supports(ntuples: Path) -> None:
    """``{kind: irgi}`` is fitted at the cross-validated depth, not the paper's 7, which needs
    32,768 defining events where these files hold 12,000."""
    out = _run(ntuples, "irgi-default", transforms=[{"kind": "irgi"}])
    fitted = rb.load(out / "irgi.json")
    assert fitted.depth == "auto"
    assert 1 <= fitted.depth_ <= rb.IRGI.max_depth(12000) < 7
    assert json.loads((out / "estimate.json").read_text())["irgi"]["predicted_A"] > 0


def test_a_rerun_reads_the_bootstrap_replicas_back(
    ntuples: Path, unblinded: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The same run again keeps its ensembles; a damaged one is named and fitted again."""
    kept = ntuples / "cache-unblinded" / "ensembles" / "irgi_ensemble.json"
    with caplog.at_level(logging.INFO):
        again = _run(ntuples, "unblinded", blind=False, statistics={"seed": 1})
    assert "transform irgi: bootstrap replicas kept from an earlier run" in caplog.text
    assert (again / "irgi_ensemble.json").read_bytes() == kept.read_bytes()
    data = bytearray(kept.read_bytes())
    data[len(data) // 2] ^= 0x01
    kept.write_bytes(bytes(data))
    caplog.clear()
    with caplog.at_level(logging.INFO):
        _run(ntuples, "unblinded", blind=False, statistics={"seed": 1})
    assert "irgi_ensemble.json" in caplog.text
    assert "transform irgi: bootstrap replicas kept" not in caplog.text
    assert (again / "irgi_ensemble.json").read_bytes() == kept.read_bytes()


def test_unblinded_data_equal_an_independent_count(ntuples: Path, unblinded: Path) -> None:
    estimates = json.loads((unblinded / "estimate.json").read_text())
    for variant in ("score", "irgi"):
        counts, x, y = _data_counts(ntuples, unblinded, variant)
        np.testing.assert_array_equal(_histogram(unblinded, f"data_{variant}"), counts)
        e = estimates[variant]
        if e.get("x0") is None:
            continue
        in_a = np.count_nonzero((x >= e["x0"]) & (y >= e["y0"]))
        assert e["observed_A"] == in_a
        b = np.count_nonzero((x >= e["x0"]) & (y < e["y0"]))
        c = np.count_nonzero((x < e["x0"]) & (y >= e["y0"]))
        d = np.count_nonzero((x < e["x0"]) & (y < e["y0"]))
        assert (e["B"], e["C"], e["D"]) == (b, c, d)
        assert e["predicted_A_uncorrected"] == pytest.approx(b * c / d, rel=1e-12)
        closure = e["closure_correction"]
        assert e["predicted_A"] == pytest.approx(b * c / d * closure["factor"], rel=1e-12)
        assert e["predicted_A_syst"] == pytest.approx(b * c / d * closure["error"], rel=1e-12)
        assert e["predicted_A_error"] == pytest.approx(
            np.hypot(e["predicted_A_stat"], e["predicted_A_syst"]), rel=1e-12
        )
        assert e["observed_significance"] is not None
        # the signal simulation's share of the data's control regions, and the shift of B C / D
        # it makes over that of the data's background alone
        signal, shares = e["signal_expected"], e["signal_contamination"]
        assert [shares[r] for r in "BCD"] == pytest.approx(
            [signal["B"] / b, signal["C"] / c, signal["D"] / d], rel=1e-12
        )
        alone = (b - signal["B"]) * (c - signal["C"]) / (d - signal["D"])
        assert shares["predicted_A_shift"] == pytest.approx(b * c / d / alone - 1.0, rel=1e-9)
        assert signal["B"] > 0
    irgi_shares = estimates["irgi"]["signal_contamination"]
    report = (unblinded / "report.md").read_text()
    assert f"| irgi | {100 * irgi_shares['B']:.3g}%" in report
    assert f"{100 * irgi_shares['predicted_A_shift']:.3g}% |" in report
    assert estimates["irgi"]["closure_includes_transform_statistics"] is True
    assert estimates["score"]["closure_includes_transform_statistics"] is False
    # the transform's keyed replicas give its closure factor's uncertainty; the raw score has
    # the simulation's statistics alone
    irgi = estimates["irgi"]["closure_correction"]
    assert irgi["replicas"] == NEGATIVE_WEIGHT_REPLICAS  # n_boot: auto, negative weights
    assert irgi["factor"] == pytest.approx(irgi["measured"] - irgi["bootstrap_bias"])
    assert irgi["error"] > 0
    assert irgi["transform_fit"] > 0
    if estimates["score"].get("x0") is not None:
        score = estimates["score"]["closure_correction"]
        assert score["replicas"] == 0
        assert score["error"] == pytest.approx(score["simulation_statistics"])
        assert score["factor"] == pytest.approx(score["measured"])


def test_effective_simulation_events_equal_an_independent_sum(
    ntuples: Path, unblinded: Path
) -> None:
    """``(sum w)**2 / sum w**2`` of the simulation per region, and the caution below 50."""
    from rosenblatt.studies.abcd.estimate import MIN_EFFECTIVE_EVENTS

    estimates = json.loads((unblinded / "estimate.json").read_text())
    x, score, w = _read(ntuples / "qcd.root", "m_jj_reco", "tagger_out", "w_mc")
    for variant in ("score", "irgi"):
        e = estimates[variant]
        if e.get("x0") is None:
            continue
        y = (
            score
            if variant == "score"
            else rb.load(unblinded / f"{variant}.json").transform(x, score)
        )
        high, up = x >= e["x0"], y >= e["y0"]
        masks = {"A": high & up, "B": high & ~up, "C": ~high & up, "D": ~high & ~up}
        expected = {r: w[m].sum() ** 2 / np.sum(w[m] ** 2) for r, m in masks.items()}
        found = e["background_simulation_effective"]
        assert found == pytest.approx(expected, rel=1e-9)
        few = min(expected.values()) < MIN_EFFECTIVE_EVENTS
        assert ("effective events in region" in e.get("note", "")) == few


def test_too_few_effective_simulation_events_are_named() -> None:
    from rosenblatt.studies.abcd.estimate import _few_effective_events

    assert _few_effective_events({"A": 83.0, "B": 780.0, "C": 536.0, "D": 4845.0}, 20) is None
    few = {"A": 240.0, "B": 780.0, "C": 12.4, "D": 4845.0}
    note = _few_effective_events(few, 0)
    assert note is not None
    assert "12 effective events in region C" in note
    assert "n_boot" not in note  # no replicas: the raw score's statistical error
    assert "its error from 20 replicas is itself noisy" in (_few_effective_events(few, 20) or "")
    assert "n_boot" not in (_few_effective_events(few, 50) or "")


def test_blinded_outputs_hold_no_data_count_of_region_a(ntuples: Path, blinded: Path) -> None:
    estimates = json.loads((blinded / "estimate.json").read_text())
    cut = estimates["irgi"]
    assert cut["x0"] is not None, cut
    assert cut["observed_A"] is None
    assert cut["observed_significance"] is None
    counts, x, y = _data_counts(ntuples, blinded, "irgi")
    closure = json.loads((blinded / "closure.json").read_text())["irgi"]
    i = closure["x0"].index(cut["x0"]) + 1
    j = closure["y0"].index(cut["y0"]) + 1
    stored = _histogram(blinded, "data_irgi")
    assert stored[i:, j:].sum() == 0
    expected = counts.copy()
    expected[i:, j:] = 0
    np.testing.assert_array_equal(stored, expected)
    in_a = int(np.count_nonzero((x >= cut["x0"]) & (y >= cut["y0"])))
    assert in_a > 0
    workspace = json.loads((blinded / "workspace_irgi.json").read_text())
    observed = {o["name"]: o["data"][0] for o in workspace["observations"]}
    assert observed["A"] == pytest.approx(cut["predicted_A"])
    for name in ("summary.json", "estimate.json", "report.md"):
        text = (blinded / name).read_text()
        assert "NaN" not in text
    assert cut["predicted_A_uncorrected"] == pytest.approx(cut["B"] * cut["C"] / cut["D"])
    assert cut["predicted_A"] == pytest.approx(
        cut["predicted_A_uncorrected"] * cut["closure_correction"]["factor"]
    )


def test_report_flags_variants_whose_closure_fails(blinded: Path) -> None:
    estimates = json.loads((blinded / "estimate.json").read_text())
    report = (blinded / "report.md").read_text()
    # the raw score is correlated with the mass: its background does not close
    assert estimates["score"]["valid"] is False
    assert "estimate not valid here" in report


#: a cut given for every variant, and an upper limit on x that data events pass beyond
GIVEN_CUT = {"x0": 3000.0, "y0": 0.7}
X_MAX = 5000.0


@pytest.fixture(scope="module")
def blinded_given(ntuples: Path) -> tuple[Path, str]:
    """A blinded run with ``abcd.cut`` given and ``x_max``; its folder and console output."""
    abcd = {
        "x": "m_jj_reco",
        "x0": [2200.0, 3800.0],
        "n_x0": 9,
        "y0": [0.1, 0.9],
        "n_y0": 9,
        "cut": GIVEN_CUT,
        "x_max": X_MAX,
    }
    console = io.StringIO()
    handler = logging.StreamHandler(console)
    logging.getLogger().addHandler(handler)
    try:
        with contextlib.redirect_stdout(console), contextlib.redirect_stderr(console):
            out = _run(ntuples, "blinded-given", abcd=abcd)
    finally:
        logging.getLogger().removeHandler(handler)
    return out, console.getvalue()


def _variant_values(ntuples: Path, out: Path, variant: str) -> tuple[np.ndarray, np.ndarray]:
    """The data's ``x`` and the variant's score, computed here from the files."""
    x, score = _read(ntuples / "data.root", "m_jj_reco", "tagger_out")
    if variant == "score":
        return x, score
    return x, rb.load(out / f"{variant}.json").transform(x, score)


def _uhi_histograms(out: Path) -> dict[str, dict[str, Any]]:
    import uhi.io.json
    from hist import serialization

    document = json.loads(
        (out / "histograms.json").read_text(), object_hook=uhi.io.json.object_hook
    )
    return {
        kind: {variant: serialization.from_uhi(h) for variant, h in found.items()}
        for kind, found in document.items()
    }


def _loc(value: Any) -> Any:
    import hist

    return hist.loc(value)


def _numbers(value: Any) -> Iterator[float]:
    """Every number of a JSON document."""
    if isinstance(value, dict):
        for item in value.values():
            yield from _numbers(item)
    elif isinstance(value, list):
        for item in value:
            yield from _numbers(item)
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        yield float(value)


def _published(out: Path, console: str) -> set[float]:
    """The numbers a blinded run publishes, with every histogram's totals.

    Every number of the JSON files, of ``report.md`` and of the console; of each
    histogram (``abcd.root``, ``histograms.json``) the total of each dataset and
    process, with and without flow bins, and the statistics ROOT stores with it.
    Wall times and rates (``timings.json``, "12.3 s", "513 events/s", "40.8 chunk/s") are left out:
    they change from run to run, and a difference of two of them can equal any count; so
    are the paths of files and folders.
    """
    found: list[float] = []
    for path in sorted(out.glob("*.json")):
        if path.name not in ("histograms.json", "manifest.json", "timings.json"):
            found += _numbers(json.loads(path.read_text()))
    for histograms in _uhi_histograms(out).values():
        for h in histograms.values():
            for dataset in h.axes["dataset"]:
                for process in [sum, *(_loc(p) for p in h.axes["process"])]:
                    part = h[{"dataset": _loc(dataset), "process": process}]
                    found += [part.values(flow=True).sum(), part.values().sum()]
    with uproot.open(out / "abcd.root") as handle:
        for name in handle.keys(cycle=False):
            h = handle[name]
            found += [h.values(flow=True).sum(), h.values().sum()]
            found += [h.member(m) for m in ("fEntries", "fTsumw", "fTsumw2")]
    for text in ((out / "report.md").read_text(), console):
        # paths are no numbers: a temporary folder's "pytest-167" is not -167
        untimed = PATHS.sub(" ", TIMING.sub(" ", text))
        found += [float(n) for n in re.findall(r"[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?", untimed)]
    return {round(float(v), 6) for v in found if math.isfinite(v)}


def test_blinded_count_is_no_published_number_nor_a_difference_of_two(
    ntuples: Path, blinded_given: tuple[Path, str]
) -> None:
    """Each variant's data in A, counted here, is no number of the run, nor a difference of two."""
    out, console = blinded_given
    estimates = json.loads((out / "estimate.json").read_text())
    published = _published(out, console)
    in_a = {}
    for variant in ("score", "irgi"):
        e = estimates[variant]
        assert e["cut"].startswith("given")
        assert e["observed_A"] is None
        x, y = _variant_values(ntuples, out, variant)
        inside = x < X_MAX
        in_a[variant] = int(np.count_nonzero(inside & (x >= e["x0"]) & (y >= e["y0"])))
        n_b = np.count_nonzero(inside & (x >= e["x0"]) & (y < e["y0"]))
        assert e["B"] == n_b
    cutflows = json.loads((out / "cutflow.json").read_text())
    assert "data" not in cutflows["weighted"]["fileset"]  # the simulation's alone
    cutflow = cutflows["fileset"]["data"]
    # the files' own count is published; the losses before the split are not (data pass x_max)
    x, _ = _variant_values(ntuples, out, "score")
    assert np.count_nonzero(x >= X_MAX) > 0
    assert cutflow["read"] == 8080
    assert set(cutflow) == {"read"} | {
        region_stage(r, v) for r in ("B", "C", "D") for v in ("score", "irgi")
    }
    stages = [events for stage, events in cutflow.items() if stage != "read"]
    # read less any of the other stages
    subtractions = {
        cutflow["read"] - sum(chosen)
        for k in range(len(stages) + 1)
        for chosen in itertools.combinations(stages, k)
    }
    for variant, count in in_a.items():
        assert count > 0
        assert round(count, 6) not in published, variant
        differences = sorted(a for a in published if round(a - count, 6) in published)
        assert differences == [], (variant, count, differences[:5])
        assert count not in subtractions, variant


def test_blinded_histograms_hold_no_data_event_of_region_a(
    ntuples: Path, blinded: Path, blinded_given: tuple[Path, str]
) -> None:
    """Every data histogram (ABCD and plane) is the data counted here without A's events.

    A variant without a cut (the raw score, chosen on simulation, finds none) holds
    no data event at all.
    """
    for out, x_max in ((blinded, math.inf), (blinded_given[0], X_MAX)):
        estimates = json.loads((out / "estimate.json").read_text())
        closure = json.loads((out / "closure.json").read_text())
        planes = _uhi_histograms(out)["plane"]
        for variant in ("score", "irgi"):
            x, y = _variant_values(ntuples, out, variant)
            e = estimates[variant]
            kept = x < x_max
            if e.get("x0") is None:
                kept &= False
            else:
                kept &= ~((x >= e["x0"]) & (y >= e["y0"]))
            expected = _count(x[kept], y[kept], closure[variant]["x0"], closure[variant]["y0"])
            np.testing.assert_array_equal(_histogram(out, f"data_{variant}"), expected)
            plane = planes[variant]
            data = plane[{"dataset": _loc("data"), "process": sum}].values(flow=True)
            x_axis, y_axis = plane.axes["x"], plane.axes["y"]
            counts = np.zeros_like(data)
            np.add.at(counts, (x_axis.index(x[kept]) + 1, y_axis.index(y[kept]) + 1), 1.0)
            np.testing.assert_array_equal(data, counts)
        assert estimates["score"].get("x0") is not None or not _histogram(out, "data_score").any()
        summary = json.loads((out / "summary.json").read_text())
        assert summary["blind"] is True
    report = (blinded / "report.md").read_text()
    assert "| data | 8080 | blinded | blinded | blinded | blinded |" in report


def _cached_histograms(cache: Path) -> Iterator[tuple[Path, str, str, Any]]:
    """Every histogram a run keeps in its data folder: its passes' pieces and merges."""
    import zipfile

    from hist import serialization
    from uhi.io import zip as uhi_zip

    for path in sorted(cache.rglob("*.zip")):
        with zipfile.ZipFile(path) as zf:
            manifest = json.loads(zf.read("piece.json"))
            for kind, variant, member in manifest["histograms"]:
                yield path, kind, variant, serialization.from_uhi(uhi_zip.read(zf, member))


def test_the_cache_of_a_blinded_run_holds_no_data_event_of_region_a(
    ntuples: Path, blinded_given: tuple[Path, str]
) -> None:
    """The data's histograms of every kept piece add up to the published ones, A left out.

    The published histograms hold no data event of A (the test above); a piece or a
    merge that held one would exceed them.
    """
    out, _ = blinded_given
    planes = _uhi_histograms(out)["plane"]
    pieces: dict[tuple[str, str], np.ndarray] = {}
    merges: list[tuple[str, str, np.ndarray]] = []
    for path, kind, variant, h in _cached_histograms(ntuples / "cache-blinded-given"):
        if "data" not in list(h.axes["dataset"]):
            continue
        data = h[{"dataset": _loc("data"), "process": sum}].values(flow=True)
        if path.parent.name.endswith(".merged"):
            merges.append((kind, variant, data))
        else:
            pieces[kind, variant] = pieces.get((kind, variant), 0) + data
    assert sorted(pieces) == [(k, v) for k in ("abcd", "plane") for v in ("irgi", "score")]
    assert merges
    for (kind, variant), data in pieces.items():
        if kind == "plane":
            whole = planes[variant][{"dataset": _loc("data"), "process": sum}].values(flow=True)
        else:
            whole = _histogram(out, f"data_{variant}")
        np.testing.assert_array_equal(data, whole)
    for kind, variant, data in merges:
        assert np.all(data <= pieces[kind, variant]), (kind, variant)


def test_the_runner_opens_no_file_again_that_the_checks_read(
    ntuples: Path, blinded: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from coffea.processor.executor import Runner

    opened: list[str] = []

    def fetch(*args: Any) -> Any:
        opened.append(args[-1].filename)
        raise AssertionError(f"{args[-1].filename} opened again before the pass")

    monkeypatch.setattr(Runner, "metadata_fetcher_root", staticmethod(fetch))
    out = _run(ntuples, "opened-once")
    assert not opened
    for name in ("estimate.json", "closure.json"):
        assert json.loads((out / name).read_text()) == json.loads((blinded / name).read_text())
    # without the checks' UUIDs coffea opens the file itself: the patch above is what it calls
    from coffea.processor import ProcessorABC

    from rosenblatt.processors.runner import CheckedFiles, make_executor, run_columnar

    class Count(ProcessorABC):  # type: ignore[misc]
        def process(self, events: Any) -> dict[str, int]:
            return {"events": len(events)}

        def postprocess(self, accumulator: Any) -> Any:
            return accumulator

    path = str(ntuples / "data.root")
    with (
        make_executor("iterative", 1, progress=False) as pool,
        pytest.raises(ValueError, match="opened again"),
    ):
        run_columnar(
            {"data": [path]},
            {"data": "nominal"},
            Count(),
            pool,
            schema="base",
            checked=CheckedFiles({"data": {path: 1}}),
        )
    assert opened == [path]


def test_misspelled_branch_is_refused_before_any_chunk(
    ntuples: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _config(ntuples, "typo", score="tagger_ot")
    out = ntuples / "results-typo"
    assert main(["run", str(path), "--output", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert ".root (dataset " in err[0]
    assert "'tagger_ot'" in err[0]
    assert "did you mean 'tagger_out'" in err[0]
    assert "Traceback" not in err[0]
    assert not out.exists()
    assert not (ntuples / "cache-typo").exists()


def test_run_without_background_is_refused(
    ntuples: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = yaml.safe_load(_config(ntuples, "nobkg").read_text())
    del config["datasets"]["qcd-defining"]
    del config["datasets"]["qcd"]
    path = ntuples / "nobkg.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    out = ntuples / "results-nobkg"
    assert main(["run", str(path), "--output", str(out)]) == 2
    err = capsys.readouterr().err
    assert "no background simulation" in err
    assert not out.exists()


def _nanoaod(path: Path, rng: np.random.Generator, n: int) -> dict[str, Any]:
    counts = rng.integers(1, 5, n)
    total = int(counts.sum())
    pt = ak.unflatten(np.sort(rng.uniform(300.0, 1500.0, total))[::-1].copy(), counts)
    pt = ak.sort(pt, axis=1, ascending=False)
    jets = ak.zip(
        {
            "pt": pt,
            "eta": ak.unflatten(rng.uniform(-2.0, 2.0, total), counts),
            "phi": ak.unflatten(rng.uniform(-np.pi, np.pi, total), counts),
            "mass": ak.unflatten(rng.uniform(20.0, 200.0, total), counts),
            "tagger": ak.unflatten(rng.uniform(0.0, 1.0, total), counts),
        }
    )
    weight = rng.choice([-1.0, 1.0], n, p=[0.2, 0.8]).astype(np.float32)
    with uproot.recreate(path) as handle:
        handle.mktree(
            "Events",
            {
                "run": np.uint32,
                "luminosityBlock": np.uint32,
                "event": np.uint64,
                "genWeight": np.float32,
                "FatJet": jets.type,
            },
        )
        handle["Events"].extend(
            {
                "run": np.ones(n, np.uint32),
                "luminosityBlock": np.ones(n, np.uint32),
                "event": np.arange(n, dtype=np.uint64),
                "genWeight": weight,
                "FatJet": jets,
            }
        )
        handle.mktree("Runs", {"run": np.uint32, "genEventSumw": np.float64})
        handle["Runs"].extend(
            {"run": np.ones(1, np.uint32), "genEventSumw": np.array([2.0 * weight.sum()])}
        )
    return {"jets": jets, "weight": weight}


def test_nanoaod_normalised_to_generated_sum_and_mjj_from_vector(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    files = {name: _nanoaod(tmp_path / f"{name}.root", rng, 3000) for name in ("qcd", "defining")}
    config = {
        "study": "abcd",
        "name": "nano",
        "schema": "nanoaod",
        "lumi": 1.0,
        "datasets": {
            "defining": {"files": ["defining.root"], "role": "defining", "weight": "genWeight"},
            "qcd": {
                "files": ["qcd.root"],
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
        "data": {"folder": str(tmp_path / "cache")},
    }
    path = tmp_path / "nano.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    out = tmp_path / "out"
    assert main(["run", str(path), "--output", str(out)]) == 0
    jets, weight = files["qcd"]["jets"], files["qcd"]["weight"]
    two = ak.to_numpy(ak.num(jets) >= 2)
    pair = jets[two][:, :2]
    p4 = vector.zip({f: pair[f] for f in ("pt", "eta", "phi", "mass")})
    mjj = ak.to_numpy((p4[:, 0] + p4[:, 1]).mass)
    h = _histogram(out, "qcd_score")
    # Runs.genEventSumw is twice the kept events' sum: the kept events carry half of xsec * lumi
    kept = weight[two].sum() / weight.sum()
    assert h.sum() == pytest.approx(0.5 * 500.0 * kept, rel=1e-6)
    score = ak.to_numpy(jets[two].tagger[:, 0])
    closure = json.loads((out / "closure.json").read_text())["score"]
    scale = 500.0 / (2.0 * weight.sum())
    i = np.searchsorted(closure["x0"], mjj, side="right")
    j = np.searchsorted(closure["y0"], score, side="right")
    expected = np.zeros_like(h)
    np.add.at(expected, (i, j), weight[two].astype(np.float64) * scale)
    np.testing.assert_allclose(h, expected, rtol=1e-6, atol=1e-9)
    cutflows = json.loads((out / "cutflow.json").read_text())
    cutflow = cutflows["fileset"]["qcd"]
    assert cutflow["missing objects"] == int(np.count_nonzero(~two))
    assert cutflow["read"] == 3000
    # the weighted cut flow: the same steps in sums of the normalised weights
    weighted = cutflows["weighted"]["fileset"]["qcd"]
    weight64 = weight.astype(np.float64)
    assert weighted["read"] == pytest.approx(0.5 * 500.0, rel=1e-6)
    assert weighted["missing objects"] == pytest.approx(scale * weight64[~two].sum(), rel=1e-6)
    assert weighted["in ABCD"] == pytest.approx(h.sum(), rel=1e-9)
    defining = cutflows["weighted"]["defining"]["defining"]
    assert defining["read"] == pytest.approx(
        files["defining"]["weight"].astype(np.float64).sum(), rel=1e-9
    )
    report = (out / "report.md").read_text(encoding="utf-8")
    assert f"| qcd | {weighted['read']:.6g} |" in report


def test_a_given_cut_and_a_defining_selection(
    ntuples: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """abcd.cut fixes every variant's cut; defining.selection fits on the selected events only,
    in the study and in ``rosenblatt fit --config``."""
    out = _run(
        ntuples,
        "given",
        abcd={
            "x": "m_jj_reco",
            "x0": [2200.0, 3800.0],
            "n_x0": 9,
            "y0": [0.1, 0.9],
            "n_y0": 9,
            "cut": {"x0": 3050.0, "y0": 0.77},
        },
        defining={
            "datasets": ["qcd-defining"],
            "selection": {"function": "sel.py:low_mass"},
        },
        blind=False,
    )
    estimates = json.loads((out / "estimate.json").read_text())
    assert (estimates["irgi"]["x0"], estimates["irgi"]["y0"]) == (3050.0, 0.77)
    assert estimates["irgi"]["cut"].startswith("given")
    x, score = _read(ntuples / "data.root", "m_jj_reco", "tagger_out")
    gamma = rb.load(out / "irgi.json").transform(x, score)
    assert estimates["irgi"]["observed_A"] == np.count_nonzero((x >= 3050.0) & (gamma >= 0.77))
    # the transform was fitted on the selected defining events only
    xd, sd, wd = _read(ntuples / "qcd_def.root", "m_jj_reco", "tagger_out", "w_mc")
    keep = xd < 4000.0
    scale = XSEC["qcd"] * LUMI / wd.sum()
    # the study's IRGI takes columns of equal events (occupancy: events) unless told otherwise
    expected = rb.IRGI(depth=5, occupancy="events").fit(xd[keep], sd[keep], wd[keep] * scale)
    probe_x, probe_y = np.linspace(2100.0, 3900.0, 50), np.linspace(0.05, 0.95, 50)
    np.testing.assert_allclose(
        rb.load(out / "irgi.json").transform(probe_x, probe_y),
        expected.transform(probe_x, probe_y),
        atol=1e-12,
    )
    capsys.readouterr()
    fitted = _fit_from_config(ntuples / "given.yaml", tmp_path / "irgi.json")
    n_selected = int(keep.sum())
    assert f"fitted on {n_selected:,} events" in capsys.readouterr().out
    _assert_same_state(fitted, json.loads((out / "irgi.json").read_text()))
    assert fitted["fitted_on"]["selection"] == "function sel.py:low_mass"


def test_the_transform_is_fitted_below_x_max_only(
    ntuples: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The defining events at or above abcd.x_max are neither filled nor fitted, in the study
    and in ``rosenblatt fit --config``: a long tail of x does not stretch the transform."""
    x_max = 4200.0
    abcd = {"x": "m_jj_reco", "x0": [2200.0, 3800.0], "n_x0": 9, "y0": [0.1, 0.9], "n_y0": 9}
    transforms = [
        {"kind": "irgi", "depth": 5},
        {"kind": "irgi", "name": "by_weight", "depth": 5, "occupancy": "weight"},
    ]
    out = _run(
        ntuples, "below-x-max", abcd={**abcd, "x_max": x_max}, transforms=transforms, blind=False
    )
    xd, sd, wd = _read(ntuples / "qcd_def.root", "m_jj_reco", "tagger_out", "w_mc")
    keep = xd < x_max
    assert 0 < np.count_nonzero(~keep) < len(xd)
    scale = XSEC["qcd"] * LUMI / wd.sum()
    probe_x, probe_y = np.linspace(1500.0, 4100.0, 60), np.linspace(0.05, 0.95, 60)
    for name, occupancy in (("irgi", "events"), ("by_weight", "weight")):
        study = rb.load(out / f"{name}.json")
        assert study.occupancy == occupancy
        assert study.domain_[0][1] < x_max
        expected = rb.IRGI(depth=5, occupancy=occupancy).fit(  # type: ignore[arg-type]
            xd[keep], sd[keep], wd[keep] * scale
        )
        np.testing.assert_allclose(
            study.transform(probe_x, probe_y), expected.transform(probe_x, probe_y), atol=1e-12
        )
    cutflow = json.loads((out / "cutflow.json").read_text())["defining"]["qcd-defining"]
    assert cutflow["x above x_max"] == np.count_nonzero(~keep)
    assert cutflow["in ABCD"] == np.count_nonzero(keep)
    capsys.readouterr()
    fitted = _fit_from_config(ntuples / "below-x-max.yaml", tmp_path / "irgi.json")
    said = capsys.readouterr().out
    assert f"fitted on {int(keep.sum()):,} events" in said
    assert f"{int((~keep).sum()):,} at or above abcd.x_max were left out" in said
    _assert_same_state(fitted, json.loads((out / "irgi.json").read_text()))
    assert fitted["fitted_on"]["x_max"] == x_max


def _fit_from_config(config: Path, output: Path) -> dict[str, Any]:
    """``rosenblatt fit --config`` with the study's transform: x, score and selection not given."""
    args = ["fit", "--config", str(config), "--transform", "irgi", "--depth", "5"]
    assert main([*args, "--output", str(output)]) == 0
    return json.loads(output.read_text())


#: IRGI's state entries that are sums of weights: the study adds them chunk by chunk in its
#: workers, ``rosenblatt fit`` in memory, so they agree to rounding
_SUMS = frozenset({"cdf", "column_weight"})


def _assert_same_state(fitted: dict[str, Any], study: dict[str, Any]) -> None:
    """The two saved transforms hold the same state: every entry equal, sums to rounding."""
    assert fitted["kind"] == study["kind"]
    assert sorted(fitted["state"]) == sorted(study["state"])
    for key, value in study["state"].items():
        if key in _SUMS:
            np.testing.assert_allclose(fitted["state"][key], value, rtol=1e-10, err_msg=key)
        else:
            assert fitted["state"][key] == value, key


def test_fit_with_the_analysis_configuration_equals_the_study_fit(
    ntuples: Path, blinded: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fitted = _fit_from_config(ntuples / "blinded.yaml", tmp_path / "irgi.json")
    out = capsys.readouterr().out
    assert "fitted on 12,000 events" in out
    assert "(--x m_jj_reco, --score tagger_out)" in out
    _assert_same_state(fitted, json.loads((blinded / "irgi.json").read_text()))
    assert fitted["fitted_on"]["x"] == "m_jj_reco"
    assert fitted["fitted_on"]["selection"] is None
