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
from rosenblatt.studies.abcd.config import AbcdConfig, ConfigError
from rosenblatt.studies.keys import keys_text

#: the signal simulation's expected events (xsec * lumi) and the signal events put in the data
SIGNAL_EXPECTED, SIGNAL_INJECTED = 60.0, 120
LUMI = 1.0
#: the cut of every variant, given so that the runs do not depend on the choice
CUT = {"x0": 2600.0, "y0": 0.8}
#: the bump hunt's mass hypotheses (the injected resonance is at SIGNAL_MASS) and toys
MASS_RANGE, N_MASSES, N_TOYS = (2400.0, 4200.0), 10, 30
#: the blinded run's mass hypotheses: its expected limits, one band per mass
N_BLINDED_MASSES = 4
SIGNAL_MASS = 3400.0


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
        "passfail": {
            "bins": 10,
            "range": [2000.0, 4400.0],
            "masses": {"range": list(MASS_RANGE), "n": N_MASSES},
            "global_toys": N_TOYS,
        },
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
    passfail = _config(ntuples, "blinded")["passfail"]
    masses = {"range": list(MASS_RANGE), "n": N_BLINDED_MASSES}
    return _run(ntuples, "blinded", passfail={**passfail, "masses": masses})


#: passfail.cuts of the categories' run: 0.7 <= gamma < 0.9 and gamma >= 0.9 (CUT's y0 between)
CATEGORY_CUTS = [0.7, 0.9]


@pytest.fixture(scope="module")
def categories(ntuples: Path) -> Path:
    """A blinded run with two cuts as categories of one model."""
    passfail = {**_config(ntuples, "categories")["passfail"], "cuts": CATEGORY_CUTS}
    return _run(ntuples, "categories", passfail=passfail)


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


@pytest.mark.slow
def test_the_nonclosure_holds_the_transform_fit(unblinded: Path, categories: Path) -> None:
    """With keyed replicas the per-bin non-closure takes the bootstrap's error, parts named."""
    for category in _passfail(categories)["categories"]:
        part = category["simulation"]
        assert part["nonclosure_replicas"] == 10
        np.testing.assert_allclose(
            part["nonclosure_in_fit"],
            np.minimum(
                np.hypot(
                    np.subtract(part["nonclosure_relative"], part["nonclosure_bootstrap_bias"]),
                    part["nonclosure_bootstrap_error"],
                ),
                1.0,
            ),
        )
    result = _passfail(unblinded)
    simulation = result["simulation"]
    assert simulation["nonclosure_replicas"] == 10
    relative = np.array(simulation["nonclosure_relative"], dtype=float)
    bias = np.array(simulation["nonclosure_bootstrap_bias"], dtype=float)
    error = np.array(simulation["nonclosure_bootstrap_error"], dtype=float)
    fit = np.array(simulation["nonclosure_transform_fit"], dtype=float)
    statistical = np.array(simulation["nonclosure_statistical"], dtype=float)
    in_fit = np.array(simulation["nonclosure_in_fit"], dtype=float)
    assert np.all(error > 0)
    assert np.all(fit > 0)
    np.testing.assert_allclose(statistical, simulation["nonclosure_relative_error"])
    np.testing.assert_allclose(in_fit, np.minimum(np.hypot(relative - bias, error), 1.0))
    # the workspace's shapesys is that total times the passing background's nominal
    workspace = json.loads((unblinded / result["workspace"]).read_text())
    channels = {c["name"]: c for c in workspace["channels"]}
    background = channels["pass"]["samples"][0]
    (shapesys,) = [m for m in background["modifiers"] if m["type"] == "shapesys"]
    np.testing.assert_allclose(
        np.array(shapesys["data"]), in_fit * np.array(background["data"]), rtol=1e-9
    )


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
    for key in (
        "masses",
        "resolution",
        "relative_resolution",
        "global_toys",
        "signal_template",
        "cuts",
    ):
        assert f"passfail.{key}" in text
    config = {**_config(tmp_path, "keys"), "_path": str(tmp_path / "keys.yaml")}
    for name in ("qcd_def", "qcd", "sig", "data"):
        (tmp_path / f"{name}.root").write_bytes(b"")
    config["passfail"] = {"transfer": "quadratic"}
    with pytest.raises(ConfigError, match=r"passfail\.transfer"):
        AbcdConfig.parse(config)
    config["passfail"] = {"edges": [3.0, 2.0]}
    with pytest.raises(ConfigError, match=r"passfail\.edges"):
        AbcdConfig.parse(config)
    for masses in ([3000.0, 2500.0], {"range": [3000.0, 2500.0], "n": 3}, {"n": 3}, "3000"):
        config["passfail"] = {"masses": masses}
        with pytest.raises(ConfigError, match=r"passfail\.masses"):
            AbcdConfig.parse(config)
    for key, value in (("resolution", 0.0), ("global_toys", -1), ("relative_resolution", "yes")):
        config["passfail"] = {"masses": [3000.0], key: value}
        with pytest.raises(ConfigError, match=rf"passfail\.{key}"):
            AbcdConfig.parse(config)
    for cuts in ([0.9, 0.8], [], "0.8", [0.8, "high"]):
        config["passfail"] = {"cuts": cuts}
        with pytest.raises(ConfigError, match=r"passfail\.cuts"):
            AbcdConfig.parse(config)
    config["passfail"] = {"cuts": [0.8, 0.9]}
    parsed = AbcdConfig.parse(config).passfail
    assert parsed is not None
    assert parsed.cuts == (0.8, 0.9)
    config["passfail"] = {"masses": {"range": [2000.0, 3000.0], "n": 3}, "global_toys": 0}
    parsed = AbcdConfig.parse(config).passfail
    assert parsed is not None
    assert parsed.masses == (2000.0, 2500.0, 3000.0)
    assert parsed.global_toys == 0
    del config["passfail"]
    assert AbcdConfig.parse(config).passfail is None


def _bumphunt(out: Path, variant: str = "gridkde") -> dict[str, Any]:
    return json.loads((out / "passfail" / variant / "bumphunt.json").read_text())


@pytest.mark.slow
def test_the_bump_hunt_finds_the_injected_resonance(unblinded: Path) -> None:
    hunt = _bumphunt(unblinded)
    assert hunt["masses"] == pytest.approx(np.linspace(*MASS_RANGE, N_MASSES).tolist())
    assert hunt["template"] == "gaussian"
    assert hunt["efficiency_from"] == "signal simulation"
    assert 0.0 < hunt["efficiency"] < 1.0
    assert hunt["leakage"] == pytest.approx(1.0 - hunt["efficiency"])
    z = np.asarray(hunt["local_z"])
    assert abs(hunt["masses"][int(np.argmax(z))] - SIGNAL_MASS) <= 200.0
    # the small simulation's non-closure per bin (mostly its statistics) is in the hunt
    assert max(hunt["nonclosure"]) > 0.0
    assert z.max() > 2.0
    assert np.all(np.asarray(hunt["observed_limit"]) > 0)
    band = np.array([hunt["expected_limits"][k] for k in ("-2", "-1", "median", "+1", "+2")])
    assert np.all(band > 0)
    assert np.all(np.diff(band, axis=0) > 0)
    found = hunt["global"]
    assert found["n_toys"] == N_TOYS
    assert found["local_z"] == pytest.approx(z.max())
    assert 0.0 <= found["p_toys"] <= 1.0
    assert found["p_gross_vitells"] > 0.0
    # the global p-value is at least the local one
    assert found["p_gross_vitells"] >= found["local_p"]
    for figure in hunt["figures"].values():
        assert (unblinded / figure).is_file()
    summary = json.loads((unblinded / "summary.json").read_text())
    headline = summary["passfail"]["gridkde"]["bumphunt"]
    assert headline["max_local_z"] == pytest.approx(z.max())
    assert headline["max_local_z_mass"] == hunt["masses"][int(np.argmax(z))]
    assert headline["p_toys"] == found["p_toys"]
    assert headline["file"] == "passfail/gridkde/bumphunt.json"
    manifest = json.dumps(json.loads((unblinded / "manifest.json").read_text()))
    for name in ("bumphunt.json", "brazil.png", "local_significance.png"):
        assert f"passfail/gridkde/{name}" in manifest
    report = (unblinded / "report.md").read_text()
    assert "### Bump hunt of `gridkde`" in report
    assert "| mass | local Z |" in report


@pytest.mark.slow
def test_the_bump_hunt_is_reproducible(ntuples: Path, unblinded: Path) -> None:
    """The pseudo-experiments are drawn with statistics.seed: the same toys from the same spectra.

    The hunt takes the simulation's non-closure per bin, that of the fit's workspace.
    """
    from rosenblatt.abcd.look_elsewhere import global_significance
    from rosenblatt.abcd.templates import gaussian_templates

    hunt, fit = _bumphunt(unblinded), _passfail(unblinded)
    edges = np.asarray(fit["edges"])
    templates = gaussian_templates(
        edges,
        hunt["masses"],
        hunt["resolution"],
        relative=True,
        signal_yield=hunt["signal_yield"],
        efficiency=hunt["efficiency"],
        leakage=hunt["leakage"],
    )
    again = global_significance(
        fit["data_pass"],
        fit["data_fail"],
        edges,
        templates,
        n_toys=N_TOYS,
        seed=1,
        ratio=fit["transfer_expected"],
        nonclosure=hunt["nonclosure"],
    )
    assert hunt["nonclosure"] == fit["simulation"]["nonclosure_in_fit"]
    assert max(hunt["nonclosure"]) > 0.0
    np.testing.assert_allclose(again.toys_max_z, hunt["global"]["toys_max_z"], rtol=1e-9)


@pytest.mark.slow
def test_a_blinded_bump_hunt_has_expected_limits_only(blinded: Path) -> None:
    hunt = _bumphunt(blinded)
    assert hunt["blind"] is True
    assert hunt["masses"] == pytest.approx(np.linspace(*MASS_RANGE, N_BLINDED_MASSES).tolist())
    for key in ("q0", "local_p", "local_z", "mu_hat", "observed_limit"):
        assert key not in hunt
    assert hunt["global"] is None
    assert "blinded" in hunt["note"]
    band = np.array([hunt["expected_limits"][k] for k in ("-2", "-1", "median", "+1", "+2")])
    assert np.all(band > 0)
    assert np.all(np.diff(band, axis=0) > 0)
    assert (blinded / "passfail" / "gridkde" / "brazil.png").is_file()
    assert not (blinded / "passfail" / "gridkde" / "local_significance.png").exists()
    summary = json.loads((blinded / "summary.json").read_text())
    headline = summary["passfail"]["gridkde"]["bumphunt"]
    assert "max_local_z" not in headline
    assert "observed_limit" not in headline
    assert "p_toys" not in headline
    report = (blinded / "report.md").read_text()
    assert "| mass | expected 95% CLs limit on μ |" in report
    assert "| mass | local Z |" not in report


def _spectra() -> tuple[np.ndarray, ...]:
    """A falling background with a resonance at 0.6 in 20 bins of [0, 1], and its simulation."""
    edges = np.linspace(0.0, 1.0, 21)
    centres = 0.5 * (edges[1:] + edges[:-1])
    background = 2000.0 * np.exp(-3.0 * centres)
    shape = np.exp(-0.5 * ((centres - 0.6) / 0.04) ** 2)
    signal_pass, signal_fail = 30.0 * shape / shape.sum(), 10.0 * shape / shape.sum()
    failing = np.round(background + 2.0 * signal_fail)
    passing = np.round(0.1 * background + 2.0 * signal_pass)
    return edges, failing, passing, signal_fail, signal_pass


def test_the_hunt_takes_the_signal_simulation_as_template_of_one_mass(tmp_path: Path) -> None:
    from rosenblatt.studies.abcd.bumphunt import HuntSettings, summary_numbers, write_bumphunt

    edges, failing, passing, signal_fail, signal_pass = _spectra()
    settings = HuntSettings((0.6,), 0.05, True, 0, 3, signal_template=True)
    where = tmp_path / "passfail" / "v"
    result = write_bumphunt(
        where,
        settings,
        edges,
        failing,
        passing,
        signal_fail,
        signal_pass,
        ratio=0.1,
        blind=False,
        x_label="x",
    )
    assert result["template"] == "signal simulation"
    assert result["signal_yield"] == pytest.approx(40.0)
    assert result["global"]["n_toys"] == 0
    assert result["global"]["p_gross_vitells_observed"] >= result["global"]["local_p"]
    assert json.loads((where / "bumphunt.json").read_text())["masses"] == [0.6]
    numbers = summary_numbers(result)
    assert numbers["max_local_z_mass"] == 0.6
    assert "p_toys" not in numbers
    settings = HuntSettings((0.4, 0.6), 0.05, True, 0, 3, signal_template=True)
    args = (edges, failing, passing, signal_fail, signal_pass)
    note = write_bumphunt(where, settings, *args, ratio=0.1, blind=False, x_label="x")
    assert note == {"note": "no bump hunt: signal_template needs one mass, got 2"}
    settings = HuntSettings((2.0, 3.0), 0.05, True, 0, 3, signal_template=False)
    note = write_bumphunt(where, settings, *args, ratio=0.1, blind=False, x_label="x")
    assert "no mass hypothesis lies inside" in note["note"]
    assert summary_numbers(note) == note


def test_without_signal_simulation_the_template_is_one_passing_event(tmp_path: Path) -> None:
    from rosenblatt.studies.abcd.bumphunt import HuntSettings, write_bumphunt

    edges, failing, passing, _, _ = _spectra()
    zeros = np.zeros(len(failing))
    settings = HuntSettings((0.4, 0.5, 0.6, 0.7), 0.03, False, 20, 5, signal_template=False)
    result = write_bumphunt(
        tmp_path / "passfail" / "v",
        settings,
        edges,
        failing,
        passing,
        zeros,
        zeros,
        ratio=0.1,
        blind=False,
        x_label="x",
    )
    assert result["efficiency_from"] == "default (no signal simulation)"
    assert (result["efficiency"], result["leakage"], result["signal_yield"]) == (1.0, 0.0, 1.0)
    assert result["relative_resolution"] is False
    assert result["masses"][int(np.argmax(result["local_z"]))] == 0.6
    assert result["global"]["n_toys"] == 20
    assert result["global"]["seed"] == 5


def test_the_hunt_takes_the_nonclosure_per_bin(tmp_path: Path) -> None:
    """A non-closure per bin lowers the local significance and raises the expected limits."""
    from rosenblatt.studies.abcd.bumphunt import HuntSettings, write_bumphunt

    edges, failing, passing, signal_fail, signal_pass = _spectra()
    settings = HuntSettings((0.5, 0.6), 0.05, True, 0, 3, signal_template=False)
    args = (edges, failing, passing, signal_fail, signal_pass)
    results = [
        write_bumphunt(
            tmp_path / name, settings, *args, ratio=0.1, blind=False, x_label="x", nonclosure=nc
        )
        for name, nc in (("none", None), ("some", np.full(len(failing), 0.1)))
    ]
    plain, wide = results
    assert plain["nonclosure"] is None
    assert wide["nonclosure"] == pytest.approx([0.1] * len(failing))
    assert wide["local_z"][1] < plain["local_z"][1]
    assert np.all(
        np.asarray(wide["expected_limits"]["median"])
        > np.asarray(plain["expected_limits"]["median"])
    )


def test_the_hunt_runs_over_the_categories_of_several_cuts(tmp_path: Path) -> None:
    """Spectra per category: one mu, the simulation's share of the signal in each category."""
    from rosenblatt.abcd.bumphunt import bump_hunt
    from rosenblatt.abcd.templates import gaussian_templates
    from rosenblatt.studies.abcd.bumphunt import HuntSettings, summary_numbers, write_bumphunt

    edges, failing, passing, signal_fail, signal_pass = _spectra()
    loose = np.round(0.7 * passing)
    passes = np.stack([loose, passing - loose])
    signals = np.stack([0.25 * signal_pass, 0.75 * signal_pass])
    nonclosure = np.full(passes.shape, 0.05)
    settings = HuntSettings((0.5, 0.6), 0.05, True, 10, 3, signal_template=False)
    args = (edges, failing, passes, signal_fail, signals)
    options = {"ratio": [0.07, 0.03], "x_label": "x", "nonclosure": nonclosure, "cuts": (0.7, 0.9)}
    result = write_bumphunt(tmp_path / "open", settings, *args, blind=False, **options)
    assert result["categories"] == [[0.7, 0.9], [0.9, None]]
    assert result["efficiency"] == pytest.approx([7.5 / 40.0, 22.5 / 40.0])
    assert result["leakage"] == pytest.approx(0.25)
    templates = gaussian_templates(
        edges, [0.5, 0.6], 0.05, relative=True, signal_yield=40.0, efficiency=[0.1875, 0.5625]
    )
    direct = bump_hunt(passes, failing, edges, templates, ratio=[0.07, 0.03], nonclosure=nonclosure)
    np.testing.assert_allclose(result["local_z"], direct.local_z, rtol=1e-12)
    assert result["masses"][int(np.argmax(result["local_z"]))] == 0.6
    assert result["global"]["n_toys"] == 10
    assert summary_numbers(result)["categories"] == result["categories"]
    blinded = write_bumphunt(tmp_path / "blind", settings, *args, blind=True, **options)
    assert "local_z" not in blinded
    assert "observed_limit" not in blinded
    assert blinded["global"] is None
    assert blinded["expected_limits"]["median"] == pytest.approx(
        direct.expected_limits[:, 2].tolist()
    )
    assert (tmp_path / "blind" / "brazil.png").is_file()
    zeros = np.zeros_like(signals)
    empty = write_bumphunt(
        tmp_path / "none", settings, edges, failing, passes, zeros[0], zeros, blind=True, **options
    )
    assert "signal simulation" in empty["note"]


@pytest.mark.slow
def test_several_cuts_are_categories_of_one_blinded_model(ntuples: Path, categories: Path) -> None:
    import rosenblatt as rb

    fit = _passfail(categories)
    assert fit["cuts"] == CATEGORY_CUTS
    spec = json.loads((categories / fit["workspace"]).read_text())
    assert [channel["name"] for channel in spec["channels"]] == ["fail", "pass_0", "pass_1"]
    observed = {o["name"]: np.asarray(o["data"]) for o in spec["observations"]}
    x, score = _data(ntuples)
    gamma = rb.load(categories / "gridkde.json").transform(x, score)
    edges = np.asarray(fit["edges"])
    window = fit["signal_window"]
    assert window == np.flatnonzero(edges[1:] > CUT["x0"]).tolist()
    sideband = [i for i in range(len(edges) - 1) if i not in window]
    failing = np.histogram(x[gamma < CATEGORY_CUTS[0]], edges)[0]
    np.testing.assert_array_equal(fit["data_fail"], failing)
    spectra = []
    for k, (low, high) in enumerate(zip(CATEGORY_CUTS, [*CATEGORY_CUTS[1:], np.inf], strict=True)):
        category = fit["categories"][k]
        assert category["channel"] == f"pass_{k}"
        assert category["cuts"] == [low, None if high == np.inf else high]
        passing = np.histogram(x[(gamma >= low) & (gamma < high)], edges)[0]
        spectra.append(passing)
        assert all(category["data_pass"][i] is None for i in window)
        np.testing.assert_array_equal(
            np.asarray(category["data_pass"])[sideband], passing[sideband]
        )
        # each category's passing observation of the window is its own sidebands' prediction
        ratio = passing[sideband].sum() / failing[sideband].sum()
        np.testing.assert_allclose(
            observed[f"pass_{k}"][window], failing[window] * ratio, rtol=1e-12
        )
        # the transfer ratio against eps_k / (1 - eps) of a uniform score
        uniform = (min(high, 1.0) - low) / CATEGORY_CUTS[0]
        assert category["transfer_uniform"] == pytest.approx(uniform)
        assert category["transfer_expected"] == pytest.approx(uniform, rel=0.25)
        assert category["transfer_fitted"] > 0.0
        assert (categories / category["figure"]).is_file()
    assert fit["mu_low"] <= fit["mu"] <= fit["mu_high"]
    # the bump hunt over the same categories, blinded: expected limits only
    hunt = _bumphunt(categories)
    assert hunt["categories"] == [[CATEGORY_CUTS[0], CATEGORY_CUTS[1]], [CATEGORY_CUTS[1], None]]
    assert hunt["blind"] is True
    assert "local_z" not in hunt
    assert "observed_limit" not in hunt
    assert len(hunt["efficiency"]) == len(CATEGORY_CUTS)
    assert np.all(np.isfinite(hunt["expected_limits"]["median"]))
    assert fit["bumphunt"]["categories"] == hunt["categories"]
    assert (categories / hunt["figures"]["brazil"]).is_file()
    # no passing data count of the window in any category, nor any sum of them, is written
    hidden: set[int] = set()
    for passing in [*spectra, spectra[0] + spectra[1]]:
        hidden |= {int(passing[i]) for i in window} | {int(passing[window].sum())}
        hidden |= {int(passing[window[i:]].sum()) for i in range(len(window))}
    # the numbers the files hold for other reasons (the failing data, the sidebands' passing
    # data, the parameters' bounds, the window's bin indices) may equal one of them by chance
    hidden -= {0} | _numbers(
        [
            failing.tolist(),
            *(p[sideband].tolist() for p in spectra),
            spec["measurements"],
            window,
        ]
    )
    assert len(hidden) > 20
    for path in (categories / "passfail" / "gridkde").glob("*.json"):
        assert not (hidden & _numbers(json.loads(path.read_text()))), path
    summary = json.loads((categories / "summary.json").read_text())
    channels = [c["channel"] for c in summary["passfail"]["gridkde"]["categories"]]
    assert channels == ["pass_0", "pass_1"]
    assert "Categories of `gridkde`" in (categories / "report.md").read_text()
