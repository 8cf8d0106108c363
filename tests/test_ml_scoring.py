"""Scores of awkward records for coffea processors: columns, TorchScript, saved models."""

from __future__ import annotations

import json
import multiprocessing
import pickle
import shutil
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import awkward as ak
import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("coffea")

from rosenblatt.ml import (
    GBDTOptions,
    TrackImageCNN,
    TrainedModel,
    TreeEnsemble,
    export_torchscript,
    make_scorer,
)
from rosenblatt.ml.cache import cached_model
from rosenblatt.ml.gbdt import fit_gbdt
from rosenblatt.ml.scoring import ImageCNNScorer

N_EVENTS = 300


def random_images(n: int, seed: int) -> np.ndarray:
    """Sparse track images: a few pixels per event carrying pT (GeV)."""
    rng = np.random.default_rng(seed)
    images = np.zeros((n, 36, 36), dtype=np.float32)
    hit = rng.random((n, 36, 36)) < 0.05
    images[hit] = rng.exponential(30.0, int(hit.sum())).astype(np.float32)
    return images


def make_records(n: int, seed: int, *, regular: bool = False) -> ak.Array:
    """Feature-table records with the real fields; images as parquet gives them (var * float32)."""
    rng = np.random.default_rng(seed)
    label = np.arange(n) % 2
    image = ak.from_numpy(random_images(n, seed).reshape(n, -1))
    return ak.zip(
        {
            "mjj": 2500.0 + rng.exponential(500.0, n),
            "mj1": rng.exponential(150.0, n) + 300.0 * label,
            "mj2": rng.exponential(80.0, n),
            "tau21_1": rng.uniform(0.1, 1.0, n),
            "tau21_2": rng.uniform(0.1, 1.0, n),
            "image": image if regular else ak.from_regular(image, axis=1),
            "label": label,
            "weight": np.ones(n),
        },
        depth_limit=1,
    )


@pytest.fixture(scope="module")
def records() -> ak.Array:
    return make_records(N_EVENTS, seed=5)


@pytest.fixture(scope="module")
def cnn_path(tmp_path_factory) -> Path:
    """A CNN with fixed random weights (sharpened so scores spread over [0, 1]), saved."""
    torch.manual_seed(7)
    network = TrackImageCNN()
    network.fit_input_scale(random_images(200, seed=1))
    with torch.no_grad():
        network.dense.weight.mul_(30.0)
    stem = tmp_path_factory.mktemp("models") / "disco_a2.5_s0"
    TrainedModel("cnn", network.eval(), {"kind": "cnn"}).save(stem)
    return stem.with_name("disco_a2.5_s0.pt")


@pytest.fixture(scope="module")
def gbdt_path(tmp_path_factory) -> Path:
    rng = np.random.default_rng(3)
    n = 400
    label = np.arange(n) % 2
    features = np.column_stack(
        [
            rng.exponential(150.0, n) + 200.0 * label,
            rng.exponential(80.0, n),
            rng.uniform(0.1, 1.0, n) - 0.2 * label,
            rng.uniform(0.1, 1.0, n),
        ]
    )
    weight = np.ones(n)
    ensemble, _ = fit_gbdt(
        features[:300],
        label[:300],
        weight[:300],
        features[300:],
        label[300:],
        weight[300:],
        seed=0,
        options=GBDTOptions(max_iter=20, n_threads=1),
    )
    path = tmp_path_factory.mktemp("gbdt") / "gbdt_s0.npz"
    ensemble.save(path)
    return path


def test_saving_a_cnn_writes_its_torchscript_file_and_records_it(cnn_path) -> None:
    scripted = cnn_path.with_name("disco_a2.5_s0.torchscript.pt")
    assert scripted.is_file()
    metadata = json.loads(cnn_path.with_name("disco_a2.5_s0.json").read_text())
    assert metadata["torchscript"] == scripted.name


@pytest.mark.slow
@pytest.mark.parametrize("regular", [False, True])
def test_torchscript_and_weights_agree_with_the_project_prediction(cnn_path, regular) -> None:
    records = make_records(N_EVENTS, seed=11, regular=regular)
    expected = TrainedModel.load(cnn_path).predict(records)
    assert np.ptp(expected) > 0.5
    torchscript = make_scorer({"torchscript": cnn_path.with_name("disco_a2.5_s0.torchscript.pt")})
    through_model = make_scorer({"model": cnn_path})
    weights = ImageCNNScorer(cnn_path)
    for scorer in (torchscript, through_model, weights):
        scores = scorer(records)
        assert scores.dtype == np.float64
        assert scores.shape == (N_EVENTS,)
        np.testing.assert_allclose(scores, expected, rtol=0, atol=1e-6)
    assert through_model.description.startswith("torchscript ")
    assert through_model.description.endswith("disco_a2.5_s0.torchscript.pt")
    assert weights.description == f"cnn {cnn_path}"


def test_the_wrapper_returns_awkward_scores_as_coffea_does(cnn_path, records) -> None:
    scorer = make_scorer({"model": cnn_path})
    scores = scorer.wrapper(records)
    assert isinstance(scores, ak.Array)
    np.testing.assert_array_equal(ak.to_numpy(scores), scorer(records))


@pytest.mark.slow
def test_a_model_without_torchscript_is_scored_and_exported(cnn_path, tmp_path, records) -> None:
    weights = tmp_path / "baseline_s0.pt"
    shutil.copy(cnn_path, weights)
    old = make_scorer({"model": weights})
    assert old.description == f"cnn {weights}"
    written = export_torchscript(weights)
    assert written == tmp_path / "baseline_s0.torchscript.pt"
    new = make_scorer({"model": weights})
    assert new.description == f"torchscript {written}"
    np.testing.assert_allclose(new(records), old(records), rtol=0, atol=1e-6)
    elsewhere = export_torchscript(weights, tmp_path / "other.pt")
    np.testing.assert_allclose(
        make_scorer({"torchscript": elsewhere})(records), old(records), rtol=0, atol=1e-6
    )


def test_gbdt_model_scores_as_its_tree_ensemble(gbdt_path, records) -> None:
    scorer = make_scorer({"model": gbdt_path})
    features = np.column_stack(
        [ak.to_numpy(records[name]) for name in ("mj1", "mj2", "tau21_1", "tau21_2")]
    )
    np.testing.assert_array_equal(scorer(records), TreeEnsemble.load(gbdt_path).predict(features))
    assert scorer.description == f"gbdt {gbdt_path}"


def test_column_scores_are_the_column(records) -> None:
    plain = make_scorer({"column": "tau21_1"})
    np.testing.assert_array_equal(plain(records), ak.to_numpy(records["tau21_1"]))
    negated = make_scorer({"column": "tau21_1", "negate": True})
    np.testing.assert_array_equal(negated(records), -ak.to_numpy(records["tau21_1"]))
    assert negated.description == "column -tau21_1"
    assert make_scorer({"column": "label"})(records).dtype == np.float64


def test_no_records_give_no_scores(cnn_path, gbdt_path, records) -> None:
    for spec in ({"model": cnn_path}, {"model": gbdt_path}, {"column": "mjj"}):
        scores = make_scorer(spec)(records[:0])
        assert scores.shape == (0,)
        assert scores.dtype == np.float64
    assert ImageCNNScorer(cnn_path)(records[:0]).shape == (0,)


def _score_in_worker(payload: bytes, records: ak.Array) -> list[np.ndarray]:
    return [scorer(records) for scorer in pickle.loads(payload)]


@pytest.mark.slow
def test_scorers_are_pickled_without_their_models_and_score_in_a_fresh_process(
    cnn_path, gbdt_path, records
) -> None:
    scorers = [
        make_scorer({"model": cnn_path}),
        ImageCNNScorer(cnn_path),
        make_scorer({"model": gbdt_path}),
        make_scorer({"column": "mj1", "negate": True}),
    ]
    expected = [scorer(records) for scorer in scorers]
    payload = pickle.dumps(scorers)
    assert len(payload) < 10_000
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=1, mp_context=context) as pool:
        first = pool.submit(_score_in_worker, payload, records).result()
        again = pool.submit(_score_in_worker, payload, records[:17]).result()
    # the CNN's logits are float32: a process that splits a batch between another number of
    # threads sums some of them in another order (1e-7 apart on CPUs with AVX-512)
    for scores, reference in zip(first, expected, strict=True):
        np.testing.assert_allclose(scores, reference, rtol=0, atol=1e-6)
    for scores, reference in zip(again, expected, strict=True):
        np.testing.assert_allclose(scores, reference[:17], rtol=0, atol=1e-6)


def test_scorers_by_value_score_from_their_bytes_after_the_files_are_gone(
    cnn_path, gbdt_path, tmp_path, records
) -> None:
    folder = tmp_path / "moved"
    folder.mkdir()
    for path in (cnn_path, cnn_path.with_name("disco_a2.5_s0.torchscript.pt"), gbdt_path):
        shutil.copy(path, folder / path.name)
    specs = [
        {"torchscript": folder / "disco_a2.5_s0.torchscript.pt"},
        {"model": folder / gbdt_path.name},
    ]
    scorers = [make_scorer(spec) for spec in specs] + [ImageCNNScorer(folder / cnn_path.name)]
    expected = [scorer(records) for scorer in scorers]
    carried = [pickle.dumps(scorer.by_value()) for scorer in scorers]
    column = make_scorer({"column": "mj1"})
    assert column.by_value() is column
    shutil.rmtree(folder)
    for scores, pickled in zip(expected, carried, strict=True):
        np.testing.assert_array_equal(pickle.loads(pickled)(records), scores)


def test_models_are_loaded_once_per_process_until_the_file_changes(tmp_path) -> None:
    path = tmp_path / "model.bin"
    path.write_bytes(b"one")
    loads: list[bytes] = []

    def load(p):
        loads.append(p.read_bytes())
        return loads[-1]

    assert cached_model("test", path, load) == b"one"
    assert cached_model("test", path, load) == b"one"
    path.write_bytes(b"three")
    assert cached_model("test", path, load) == b"three"
    assert loads == [b"one", b"three"]


def test_missing_files_are_named(tmp_path) -> None:
    for spec in (
        {"torchscript": tmp_path / "absent.torchscript.pt"},
        {"model": tmp_path / "absent.pt"},
        {"model": tmp_path / "absent.npz"},
    ):
        with pytest.raises(FileNotFoundError, match="absent"):
            make_scorer(spec)


def test_missing_fields_are_named(cnn_path, gbdt_path, records) -> None:
    with pytest.raises(KeyError, match=r"lack the field\(s\) image"):
        make_scorer({"model": cnn_path})(records[["mjj", "label"]])
    with pytest.raises(KeyError, match=r"lack the field\(s\) image"):
        ImageCNNScorer(cnn_path)(records[["mjj"]])
    with pytest.raises(KeyError, match=r"lack the field\(s\) tau21_2"):
        make_scorer({"model": gbdt_path})(records[["mj1", "mj2", "tau21_1"]])
    with pytest.raises(KeyError, match=r"column tau32_1: the records lack the field\(s\) tau32_1"):
        make_scorer({"column": "tau32_1"})(records)
    with pytest.raises(TypeError, match="awkward array of records"):
        make_scorer({"column": "mjj"})(np.ones(3))


def test_files_that_are_not_torchscript_are_named(cnn_path, tmp_path) -> None:
    with pytest.raises(ValueError, match=r"disco_a2.5_s0.pt is not a TorchScript file"):
        make_scorer({"torchscript": cnn_path})
    text = tmp_path / "notes.torchscript.pt"
    text.write_text("not a model")
    with pytest.raises(ValueError, match=r"notes\.torchscript\.pt is not a TorchScript file"):
        make_scorer({"model": text})
    np.savez(tmp_path / "arrays.npz", x=np.ones(3))
    with pytest.raises(ValueError, match=r"arrays\.npz is not a gradient-boosting model: it lacks"):
        make_scorer({"model": tmp_path / "arrays.npz"})
    (tmp_path / "text.npz").write_text("not a model")
    with pytest.raises(ValueError, match=r"text\.npz is not a gradient-boosting model"):
        make_scorer({"model": tmp_path / "text.npz"})


def test_bad_images_and_fields_are_named(cnn_path, records) -> None:
    short = ak.zip({"image": [[1.0] * 1296, [1.0] * 1295]}, depth_limit=1)
    for scorer in (make_scorer({"model": cnn_path}), ImageCNNScorer(cnn_path)):
        with pytest.raises(
            ValueError,
            match=r"image must hold 1296 pixels per event \(36x36\), 1 of 2 events differ",
        ):
            scorer(short)
    negative = ak.zip({"image": [[-1.0] * 1296]}, depth_limit=1)
    with pytest.raises(ValueError, match="negative pixels"):
        make_scorer({"model": cnn_path})(negative)
    with pytest.raises(ValueError, match="field image must hold one number per event"):
        make_scorer({"column": "image"})(records)


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({}, "exactly one of the keys column, torchscript, model"),
        ({"column": "mjj", "model": "m.pt"}, "exactly one of the keys"),
        ({"column": "mjj", "scale": 2}, r"unknown key\(s\) scale"),
        ({"column": "mjj", "negate": "yes"}, "'negate' must be true or false"),
        ({"model": "m.onnx"}, r"must be CNN weights \(.pt\) or a gradient-boosting model"),
    ],
)
def test_bad_specifications_are_named(spec, message) -> None:
    with pytest.raises(ValueError, match=message):
        make_scorer(spec)
