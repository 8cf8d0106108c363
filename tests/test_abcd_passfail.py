"""The pass/fail fit in bins of x within the abcd study (``passfail:``), on small own ntuples."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

pytest.importorskip("coffea")
pyhf = pytest.importorskip("pyhf")
uproot = pytest.importorskip("uproot")

from dijet_ntuple import dijet_columns

from rosenblatt.abcd.likelihood import quiet_pyhf
from rosenblatt.cli import main
from rosenblatt.studies.abcd_config import AbcdConfig, ConfigError
from rosenblatt.studies.keys import keys_text

#: the signal simulation's expected events (xsec * lumi) and the signal events put in the data
SIGNAL_EXPECTED, SIGNAL_INJECTED = 60.0, 120
LUMI = 1.0
#: the cut of every variant, given so that the runs do not depend on the choice
CUT = {"x0": 2600.0, "y0": 0.8}


def _write_tree(path: Path, columns: dict[str, np.ndarray]) -> None:
    with uproot.recreate(path) as handle:
        handle.mktree("nominal", {key: value.dtype for key, value in columns.items()})
        handle["nominal"].extend(columns)


@pytest.fixture(scope="module")
def ntuples(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Defining and testing background, signal and pseudo-data with a known signal."""
    folder = tmp_path_factory.mktemp("passfail")
    rng = np.random.default_rng(11)
    for name, n, signal in (("qcd_def", 20000, False), ("qcd", 10000, False), ("sig", 2000, True)):
        _write_tree(folder / f"{name}.root", dijet_columns(rng, n, signal))
    background, signal = dijet_columns(rng, 10000, False), dijet_columns(rng, SIGNAL_INJECTED, True)
    _write_tree(
        folder / "data.root", {k: np.concatenate([background[k], signal[k]]) for k in background}
    )
    return folder


def _config(folder: Path, name: str, **extra: Any) -> dict[str, Any]:
    return {
        "study": "abcd",
        "name": name,
        "treename": "nominal",
        "lumi": LUMI,
        "datasets": {
            "qcd-defining": {"files": ["qcd_def.root"], "role": "defining"},
            "qcd": {"files": ["qcd.root"], "role": "background"},
            "sig": {"files": ["sig.root"], "role": "signal", "xsec": SIGNAL_EXPECTED / LUMI},
            "data": {"files": ["data.root"], "role": "data"},
        },
        "score": "tagger_out",
        # GridKDE closes here to about 1% (IRGI depth 5 to about 4%, which the closure
        # test of 10,000 simulated events sees in some samples)
        "transforms": [{"kind": "gridkde"}],
        "abcd": {
            "x": "m_jj_reco",
            "x0": [2300.0, 2900.0],
            "n_x0": 3,
            "y0": [0.5, 0.9],
            "n_y0": 5,
            "cut": CUT,
        },
        "executor": {"kind": "iterative", "chunksize": 20000},
        # with bootstrap replicas: the closure test holds the transform's statistics too
        "statistics": {"n_boot": 10, "seed": 1},
        "passfail": {"bins": 10, "range": [2000.0, 4400.0]},
        "data": {"folder": str(folder / f"cache-{name}")},
        **extra,
    }


def _run(folder: Path, name: str, **extra: Any) -> Path:
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(_config(folder, name, **extra)), encoding="utf-8")
    out = folder / f"results-{name}"
    assert main(["run", str(path), "--output", str(out)]) == 0
    return out


@pytest.fixture(scope="module")
def unblinded(ntuples: Path) -> Path:
    return _run(ntuples, "unblinded", blind=False)


@pytest.fixture(scope="module")
def blinded(ntuples: Path) -> Path:
    return _run(ntuples, "blinded")


def _passfail(out: Path, variant: str = "gridkde") -> dict[str, Any]:
    return json.loads((out / "passfail" / variant / "passfail.json").read_text())


def _data(ntuples: Path) -> tuple[np.ndarray, np.ndarray]:
    tree = uproot.open(ntuples / "data.root")["nominal"]
    return tree["m_jj_reco"].array(library="np"), tree["tagger_out"].array(library="np")


@pytest.mark.slow
def test_the_study_writes_a_workspace_pyhf_refits(unblinded: Path) -> None:
    fit = _passfail(unblinded)
    assert fit["x0"] == CUT["x0"]
    assert fit["y0"] == CUT["y0"]
    spec = json.loads((unblinded / fit["workspace"]).read_text())
    with quiet_pyhf():
        workspace = pyhf.Workspace(spec)
        model = workspace.model()
        best = pyhf.infer.mle.fit(workspace.data(model), model)
    assert sorted(workspace.channels) == ["fail", "pass"]
    assert float(best[model.config.poi_index]) == pytest.approx(fit["mu"], abs=0.05)
    assert (unblinded / fit["figure"]).is_file()
    summary = json.loads((unblinded / "summary.json").read_text())
    assert summary["passfail"]["gridkde"]["mu"] == fit["mu"]
    assert summary["passfail"]["gridkde"]["file"] == "passfail/gridkde/passfail.json"
    manifest = json.loads((unblinded / "manifest.json").read_text())
    assert "passfail/gridkde/workspace.json" in json.dumps(manifest)
    assert "## Pass/fail fit in bins of x" in (unblinded / "report.md").read_text()


@pytest.mark.slow
def test_mu_is_compatible_with_the_injected_signal(unblinded: Path) -> None:
    fit = _passfail(unblinded)
    injected = SIGNAL_INJECTED / SIGNAL_EXPECTED
    assert fit["mu_low"] < fit["mu"] < fit["mu_high"]
    width = 0.5 * (fit["mu_high"] - fit["mu_low"])
    assert abs(fit["mu"] - injected) < 3.0 * width
    assert fit["mu_low"] > 0.0
    # a transform's transfer ratio is close to that of a uniform gamma, (1 - y0) / y0
    assert fit["transfer_uniform"] == pytest.approx(0.25)
    assert fit["transfer_fitted"] == pytest.approx(fit["transfer_expected"], rel=0.2)
    assert fit["transfer_expected"] == pytest.approx(fit["transfer_uniform"], rel=0.2)


@pytest.mark.slow
def test_the_data_spectra_equal_an_independent_count(ntuples: Path, unblinded: Path) -> None:
    fit = _passfail(unblinded)
    x, score = _data(ntuples)
    import rosenblatt as rb

    gamma = rb.load(unblinded / "gridkde.json").transform(x, score)
    edges = np.asarray(fit["edges"])
    passing = np.histogram(x[gamma >= CUT["y0"]], edges)[0]
    failing = np.histogram(x[gamma < CUT["y0"]], edges)[0]
    np.testing.assert_array_equal(fit["data_pass"], passing)
    np.testing.assert_array_equal(fit["data_fail"], failing)


@pytest.mark.slow
def test_a_blinded_run_holds_no_passing_data_count_of_the_signal_window(
    ntuples: Path, blinded: Path
) -> None:
    fit = _passfail(blinded)
    x, score = _data(ntuples)
    import rosenblatt as rb

    gamma = rb.load(blinded / "gridkde.json").transform(x, score)
    edges = np.asarray(fit["edges"])
    window = fit["signal_window"]
    assert window == np.flatnonzero(edges[1:] > CUT["x0"]).tolist()
    assert all(fit["data_pass"][i] is None for i in window)
    passing = np.histogram(x[gamma >= CUT["y0"]], edges)[0]
    failing = np.histogram(x[gamma < CUT["y0"]], edges)[0]
    np.testing.assert_array_equal(fit["data_fail"], failing)
    sideband = [i for i in range(len(passing)) if i not in window]
    np.testing.assert_array_equal(np.asarray(fit["data_pass"])[sideband], passing[sideband])
    # the workspace's passing observation of the window is the sidebands' prediction
    spec = json.loads((blinded / fit["workspace"]).read_text())
    observed = next(o["data"] for o in spec["observations"] if o["name"] == "pass")
    ratio = passing[sideband].sum() / failing[sideband].sum()
    np.testing.assert_allclose(np.asarray(observed)[window], failing[window] * ratio, rtol=1e-12)
    # no passing data count of the window, nor any sum or difference of them, is written
    hidden = {int(passing[i]) for i in window} | {int(passing[window].sum())}
    hidden |= {int(passing[window[i:]].sum()) for i in range(len(window))}
    hidden -= {0}
    for path in (blinded / "passfail" / "gridkde").glob("*.json"):
        numbers = _numbers(json.loads(path.read_text()))
        assert not (hidden & numbers), path
    assert "mu_note" in fit


def _numbers(document: Any) -> set[int]:
    """Every integral number in a JSON document."""
    if isinstance(document, dict):
        return set().union(*(_numbers(v) for v in document.values())) if document else set()
    if isinstance(document, list):
        return set().union(*(_numbers(v) for v in document)) if document else set()
    if isinstance(document, (int, float)) and not isinstance(document, bool):
        return {int(document)} if float(document).is_integer() else set()
    return set()


def test_passfail_keys_are_listed_and_checked(tmp_path: Path) -> None:
    text = keys_text("abcd", width=120)
    for key in ("passfail.bins", "passfail.range", "passfail.edges", "passfail.transfer"):
        assert key in text
    config = {**_config(tmp_path, "keys"), "_path": str(tmp_path / "keys.yaml")}
    for name in ("qcd_def", "qcd", "sig", "data"):
        (tmp_path / f"{name}.root").write_bytes(b"")
    config["passfail"] = {"transfer": "quadratic"}
    with pytest.raises(ConfigError, match=r"passfail\.transfer"):
        AbcdConfig.parse(config)
    config["passfail"] = {"edges": [3.0, 2.0]}
    with pytest.raises(ConfigError, match=r"passfail\.edges"):
        AbcdConfig.parse(config)
    del config["passfail"]
    assert AbcdConfig.parse(config).passfail is None
