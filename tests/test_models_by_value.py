"""Models and the user's modules carried by value, for workers that share no disk.

:meth:`Quantity.by_value` reads an XGBoost model (JSON or UBJSON), a TorchScript
file and the user's module file once; the quantity then scores events with
those bytes alone, the same numbers as loaded from the paths, after the files
are gone. A file the driver cannot read stops the run before any pass, in one
line naming its key and path.
"""

from __future__ import annotations

import pickle
import sys
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

pytest.importorskip("coffea")
ak = pytest.importorskip("awkward")
uproot = pytest.importorskip("uproot")
xgboost = pytest.importorskip("xgboost")

from rosenblatt.cli import main
from rosenblatt.config import load_config
from rosenblatt.exceptions import QuantityError
from rosenblatt.processors.quantities import Quantity, parse_quantity
from rosenblatt.studies.abcd.config import AbcdConfig, ConfigError

#: the user's module: a feature and a weight, with module-level state
MODULE = """\
import numpy as np

SCALE = 0.5


def ratio(events):
    return np.asarray(events["a"], dtype=np.float64) * SCALE + np.asarray(events["b"])


def fails(events):
    raise RuntimeError("the user's own error")
"""


def _events(n: int = 400) -> Any:
    rng = np.random.default_rng(7)
    return ak.Array({"a": rng.normal(size=n), "b": rng.uniform(size=n)})


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """A module of functions and an XGBoost model saved as JSON and as UBJSON."""
    (tmp_path / "functions.py").write_text(MODULE, encoding="utf-8")
    events = _events(2000)
    matrix = np.stack([np.asarray(events["a"]), np.asarray(events["b"])], axis=1)
    label = 1.0 / (1.0 + np.exp(-matrix[:, 0] + matrix[:, 1]))
    booster = xgboost.train(
        {"objective": "reg:logistic", "max_depth": 3},
        xgboost.DMatrix(matrix, label=label),
        15,
    )
    booster.save_model(str(tmp_path / "tagger.json"))
    booster.save_model(str(tmp_path / "tagger.ubj"))
    return tmp_path


def _removed(folder: Path) -> None:
    """Every file of ``folder`` gone: what is evaluated next cannot have opened one."""
    for path in folder.iterdir():
        if path.is_file():
            path.unlink()


@pytest.mark.parametrize("model", ["tagger.json", "tagger.ubj"])
def test_an_xgboost_model_and_a_module_score_the_same_from_their_bytes(
    folder: Path, model: str
) -> None:
    spec = {"xgboost": model, "features": ["a", {"function": "functions.py:ratio"}]}
    by_path = parse_quantity(spec, key="score", base=folder)
    carried = by_path.by_value("score")
    assert carried.content == (folder / model).read_bytes()
    assert carried.features[1].content == MODULE.encode()
    expected, present = by_path.evaluate(_events())
    _removed(folder)
    travelled: Quantity = pickle.loads(pickle.dumps(carried))
    values, also_present = travelled.evaluate(_events())
    assert present.all()
    assert also_present.all()
    np.testing.assert_array_equal(values, expected)


def test_a_torchscript_model_scores_the_same_from_its_bytes(folder: Path) -> None:
    torch = pytest.importorskip("torch")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        scripted = torch.jit.trace(
            torch.nn.Sequential(torch.nn.Linear(2, 1), torch.nn.Sigmoid()), torch.zeros(3, 2)
        )
        torch.jit.save(scripted, str(folder / "tagger.pt"))
    spec = {"torchscript": "tagger.pt", "features": ["a", "b"]}
    by_path = parse_quantity(spec, key="score", base=folder)
    carried = by_path.by_value("score")
    expected, _ = by_path.evaluate(_events())
    _removed(folder)
    values, _ = pickle.loads(pickle.dumps(carried)).evaluate(_events())
    np.testing.assert_array_equal(values, expected)
    assert np.ptp(values) > 0


def test_a_module_from_its_source_keeps_its_name_and_its_traceback(folder: Path) -> None:
    carried = parse_quantity({"function": "functions.py:fails"}, key="w", base=folder)
    carried = carried.by_value("w")
    path = str(folder / "functions.py")
    _removed(folder)
    with pytest.raises(RuntimeError, match="the user's own error") as raised:
        carried.evaluate(_events())
    # the module's lines come from its source, as its file would show them
    assert 'raise RuntimeError("the user\'s own error")' in str(raised.getrepr())
    module = raised.traceback[-1].frame.f_globals["__name__"]
    assert module.startswith("_rosenblatt_user_functions_")
    assert module in sys.modules
    assert sys.modules[module].__file__ == path


def test_a_file_that_cannot_be_read_names_the_key_and_the_path(folder: Path) -> None:
    spec = {"xgboost": "tagger.json", "features": ["a", {"function": "functions.py:ratio"}]}
    quantity = parse_quantity(spec, key="score", base=folder)
    (folder / "functions.py").unlink()
    with pytest.raises(QuantityError) as raised:
        quantity.by_value("score")
    assert str(raised.value) == (
        f"score.features[1].function: cannot read {folder / 'functions.py'}: "
        "No such file or directory"
    )
    # a function of an installed module and a branch carry nothing
    plain = parse_quantity({"function": "numpy:asarray"}, key="x", base=folder).by_value("x")
    assert plain.content is None
    assert parse_quantity("a", key="x").by_value("x").content is None


def _config(folder: Path, shared_disk: bool) -> Path:
    rng = np.random.default_rng(3)
    for name in ("qcd", "data"):
        columns = {"mjj": 2000.0 + rng.exponential(600.0, 500), "a": rng.normal(size=500)}
        columns["b"] = rng.uniform(size=500)
        with uproot.recreate(folder / f"{name}.root") as handle:
            handle.mktree("nominal", {k: v.dtype for k, v in columns.items()})
            handle["nominal"].extend(columns)
    config = {
        "study": "abcd",
        "name": "by-value",
        "treename": "nominal",
        "datasets": {
            "qcd": {"files": ["qcd.root"], "role": "background"},
            "data": {"files": ["data.root"], "role": "data"},
        },
        "score": {"xgboost": "tagger.json", "features": ["a", "b"]},
        "transforms": [{"kind": "irgi", "depth": 3}],
        "abcd": {
            "x": {"function": "functions.py:ratio"},
            "x0": [0.2, 0.8],
            "n_x0": 3,
            "y0": [0.2, 0.8],
            "n_y0": 3,
        },
        "executor": {"kind": "iterative", "shared_disk": shared_disk},
        "statistics": {"n_boot": 0},
        "data": {"folder": str(folder / "data")},
    }
    path = folder / "by-value.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return path


def test_the_configuration_carries_its_files_without_a_shared_disk(folder: Path) -> None:
    cfg = AbcdConfig.parse(load_config(_config(folder, shared_disk=False)))
    carried = cfg.by_value()
    assert carried.score.content == (folder / "tagger.json").read_bytes()
    assert carried.x.content == MODULE.encode()
    assert cfg.score.content is None  # the parsed configuration itself is left as it was
    (folder / "tagger.json").unlink()
    with pytest.raises(ConfigError) as raised:
        cfg.by_value()
    message = str(raised.value)
    assert "\n" not in message
    assert message.endswith(
        f": score.xgboost: cannot read {folder / 'tagger.json'}: No such file or directory"
    )


def test_a_model_the_driver_cannot_read_stops_the_run_before_any_pass(
    folder: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _config(folder, shared_disk=False)
    parse = AbcdConfig.parse

    def parse_then_lose_the_model(cls: type[AbcdConfig], config: Any) -> AbcdConfig:
        parsed = parse(config)
        (folder / "tagger.json").unlink()
        return parsed

    monkeypatch.setattr(AbcdConfig, "parse", classmethod(parse_then_lose_the_model))
    out = folder / "results"
    assert main(["run", str(path), "--output", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert f"score.xgboost: cannot read {folder / 'tagger.json'}" in err[0]
    assert not (folder / "data").exists()
