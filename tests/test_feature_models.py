"""Classifiers of the user's own features inside the ABCD study: XGBoost and TorchScript models.

Both are evaluated through coffea's ``ml_tools`` wrappers on the quantities
listed under ``features:``; each score is compared with the model's own
prediction on the same numbers, and a whole ABCD run scored by a TorchScript
module fills its data histogram with exactly the events an independent count
puts there.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pytest
import yaml

pytest.importorskip("coffea")
uproot = pytest.importorskip("uproot")
torch = pytest.importorskip("torch")

from coffea.nanoevents import BaseSchema, NanoEventsFactory

from rosenblatt.cli import main
from rosenblatt.exceptions import QuantityError
from rosenblatt.processors.quantities import parse_quantity

N_EVENTS = 3000


class _Logistic(torch.nn.Module):  # type: ignore[misc]
    """A fixed logistic score of two inputs."""

    def __init__(self) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(2, 1)
        with torch.no_grad():
            self.linear.weight.copy_(torch.tensor([[3.0, -2.0]]))
            self.linear.bias.fill_(0.25)

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        return torch.sigmoid(self.linear(features))


def _columns(rng: np.random.Generator, n: int) -> dict[str, np.ndarray]:
    mass = 2000.0 + rng.exponential(600.0, n)
    return {
        "mjj_reco": mass,
        "tau21": rng.uniform(0.1, 0.9, n) + (mass - 2000.0) / 20000.0,
        "d2": rng.gamma(2.0, 0.5, n),
    }


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A flat ntuple per dataset (tree ``nominal``), a TorchScript module, an XGBoost model."""
    folder = tmp_path_factory.mktemp("feature-models")
    rng = np.random.default_rng(3)
    for name in ("qcd", "data"):
        columns = _columns(rng, N_EVENTS)
        with uproot.recreate(folder / f"{name}.root") as handle:
            handle.mktree("nominal", {k: v.dtype for k, v in columns.items()})
            handle["nominal"].extend(columns)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        torch.jit.save(torch.jit.script(_Logistic()), str(folder / "tagger.pt"))
    return folder


def _load(path: Path) -> object:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return torch.jit.load(str(path))


def _events(path: Path) -> object:
    return NanoEventsFactory.from_root(
        {str(path): "nominal"}, schemaclass=BaseSchema, mode="eager"
    ).events()


def _inputs(path: Path) -> np.ndarray:
    tree = uproot.open(path)["nominal"]
    return np.stack([tree[b].array(library="np") for b in ("tau21", "d2")], axis=1)


def test_torchscript_features_equal_the_module_on_the_same_inputs(files: Path) -> None:
    quantity = parse_quantity(
        {"torchscript": "tagger.pt", "features": ["tau21", "d2"]}, key="score", base=files
    )
    values, present = quantity.evaluate(_events(files / "qcd.root"))
    module = _load(files / "tagger.pt")
    inputs = torch.from_numpy(_inputs(files / "qcd.root").astype(np.float32))
    expected = module(inputs).detach().numpy()[:, 0].astype(np.float64)
    assert present.all()
    np.testing.assert_array_equal(values, expected)
    assert np.ptp(values) > 0.5


def test_xgboost_features_equal_the_booster_on_the_same_inputs(files: Path) -> None:
    xgboost = pytest.importorskip("xgboost")
    matrix = _inputs(files / "qcd.root")
    label = (matrix[:, 0] > 0.5).astype(float)
    booster = xgboost.train(
        {"objective": "binary:logistic", "max_depth": 2}, xgboost.DMatrix(matrix, label=label), 5
    )
    booster.save_model(str(files / "tagger.json"))
    quantity = parse_quantity(
        {"xgboost": "tagger.json", "features": ["tau21", "d2"]}, key="score", base=files
    )
    values, present = quantity.evaluate(_events(files / "qcd.root"))
    expected = xgboost.Booster(model_file=str(files / "tagger.json")).predict(
        xgboost.DMatrix(matrix)
    )
    assert present.all()
    np.testing.assert_allclose(values, expected, rtol=1e-6)


def test_a_model_given_the_wrong_number_of_features_says_so(files: Path) -> None:
    quantity = parse_quantity(
        {"torchscript": "tagger.pt", "features": ["tau21"]}, key="score", base=files
    )
    with pytest.raises(QuantityError, match=r"tagger\.pt: the model cannot score the 1 features"):
        quantity.evaluate(_events(files / "qcd.root"))
    with pytest.raises(QuantityError, match=r"score.features: list the model's inputs"):
        parse_quantity({"torchscript": "tagger.pt", "features": []}, key="score", base=files)
    with pytest.raises(QuantityError, match=r"unknown key\(s\) \['inputs'\]"):
        parse_quantity({"torchscript": "tagger.pt", "inputs": ["d2"]}, key="score", base=files)


def _config(files: Path, name: str, score: object) -> Path:
    config = {
        "study": "abcd",
        "name": name,
        "treename": "nominal",
        "blind": False,
        "datasets": {
            "qcd": {"files": ["qcd.root"], "role": "background"},
            "data": {"files": ["data.root"], "role": "data"},
        },
        "score": score,
        "transforms": [{"kind": "irgi", "depth": 3}],
        "abcd": {
            "x": "mjj_reco",
            "x0": [2300.0, 3500.0],
            "n_x0": 4,
            "y0": [0.2, 0.8],
            "n_y0": 4,
            "cut": {"x0": 2600.0, "y0": 0.6},
        },
        "executor": {"kind": "iterative", "chunksize": 1000},
        "statistics": {"n_boot": 0},
        "data": {"folder": str(files / f"cache-{name}")},
    }
    path = files / f"{name}.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return path


@pytest.mark.slow
def test_abcd_run_scored_by_a_torchscript_module(files: Path) -> None:
    score = {"torchscript": "tagger.pt", "features": ["tau21", "d2"]}
    out = files / "results-torch"
    assert main(["run", str(_config(files, "torch", score)), "--output", str(out)]) == 0
    module = _load(files / "tagger.pt")
    inputs = torch.from_numpy(_inputs(files / "data.root").astype(np.float32))
    y = module(inputs).detach().numpy()[:, 0].astype(np.float64)
    x = uproot.open(files / "data.root")["nominal"]["mjj_reco"].array(library="np")
    closure = json.loads((out / "closure.json").read_text())["score"]
    i = np.searchsorted(closure["x0"], x, side="right")
    j = np.searchsorted(closure["y0"], y, side="right")
    counts = np.zeros((len(closure["x0"]) + 1, len(closure["y0"]) + 1))
    np.add.at(counts, (i, j), 1.0)
    stored = uproot.open(out / "abcd.root")["data_score"].values(flow=True)
    np.testing.assert_array_equal(stored, counts)
    estimate = json.loads((out / "estimate.json").read_text())["score"]
    in_a = (x >= estimate["x0"]) & (y >= estimate["y0"])
    assert estimate["observed_A"] == int(np.count_nonzero(in_a)) > 0


def test_a_particle_scorer_on_a_flat_tree_is_refused_before_any_chunk(
    files: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = files / "results-nofeatures"
    path = _config(files, "nofeatures", {"torchscript": "tagger.pt"})
    assert main(["run", str(path), "--output", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert ": score: " in err[0]
    assert ".root (dataset " in err[0]
    assert "features:" in err[0]
    assert not out.exists()
    assert not (files / "cache-nofeatures").exists()
