"""Reading the feature table into classifier inputs and writing score columns back."""

from __future__ import annotations

import awkward as ak
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from rosenblatt.ml.tables import event_arrays, with_columns


def feature_table(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    images = np.zeros((n, 36 * 36), dtype=np.float32)
    images[np.arange(n), rng.integers(0, 36 * 36, n)] = rng.exponential(100.0, n)
    return pd.DataFrame(
        {
            "mjj": rng.uniform(2000, 5000, n),
            "mj1": rng.uniform(50, 600, n),
            "mj2": rng.uniform(10, 200, n),
            "tau21_1": rng.uniform(0, 1, n),
            "tau21_2": rng.uniform(0, 1, n),
            "image": list(images),
            "label": np.arange(n) % 2,
            "weight": rng.uniform(0.5, 2.0, n),
            "dataset": "qcd",
            "file": "f.h5",
            "entry": np.arange(n),
        }
    )


@pytest.fixture
def frame() -> pd.DataFrame:
    return feature_table(20, seed=0)


def forms(frame: pd.DataFrame, tmp_path):
    path = tmp_path / "table.parquet"
    frame.to_parquet(path)
    return {
        "pandas": frame,
        "pyarrow": pa.Table.from_pandas(frame),
        "awkward": ak.from_parquet(path),
        "path": path,
        "str": str(path),
    }


def test_every_table_form_gives_the_same_arrays(frame, tmp_path) -> None:
    expected_images = np.stack(frame["image"].to_numpy()).reshape(-1, 36, 36)
    for name, table in forms(frame, tmp_path).items():
        arrays = event_arrays(table, images=True, substructure=True)
        np.testing.assert_array_equal(arrays.images, expected_images, err_msg=name)
        np.testing.assert_array_equal(arrays.mjj, frame["mjj"], err_msg=name)
        np.testing.assert_array_equal(arrays.label, frame["label"], err_msg=name)
        np.testing.assert_array_equal(arrays.weight, frame["weight"], err_msg=name)
        np.testing.assert_array_equal(
            arrays.substructure, frame[["mj1", "mj2", "tau21_1", "tau21_2"]], err_msg=name
        )
        assert arrays.images.dtype == np.float32
        assert arrays.label.dtype == np.int64


def test_columns_are_written_back_one_value_per_event(frame, tmp_path) -> None:
    scores = np.linspace(0, 1, len(frame))
    for name, table in forms(frame.copy(), tmp_path).items():
        updated = with_columns(table, {"score_a": scores})
        if name in ("path", "str"):
            assert updated == table
            updated = pq.read_table(table).to_pandas()
        elif name == "pandas":
            assert updated is table
        got = (
            ak.to_numpy(updated["score_a"]) if name == "awkward" else np.asarray(updated["score_a"])
        )
        np.testing.assert_array_equal(got, scores, err_msg=name)
        # writing again replaces the column rather than adding a second one
        again = with_columns(table if name in ("path", "str") else updated, {"score_a": 1 - scores})
        if name in ("path", "str"):
            again = pq.read_table(table)
            assert again.column_names.count("score_a") == 1
            np.testing.assert_array_equal(again.column("score_a").to_numpy(), 1 - scores)


def test_missing_column_is_named(frame) -> None:
    with pytest.raises(KeyError, match=r"sample 'train' lacks the column.*tau21_2"):
        event_arrays(frame.drop(columns="tau21_2"), substructure=True, name="sample 'train'")


def test_wrong_image_length_is_counted(frame) -> None:
    frame.at[3, "image"] = np.zeros(1295, dtype=np.float32)
    frame.at[5, "image"] = np.zeros(10, dtype=np.float32)
    with pytest.raises(ValueError, match=r"1296 pixels per event \(36x36\), 2 of 20 events differ"):
        event_arrays(frame, images=True)


def test_non_finite_values_are_counted(frame) -> None:
    frame.loc[[1, 4, 9], "mjj"] = np.nan
    with pytest.raises(ValueError, match=r"column mjj has 3 NaN or infinite value\(s\) out of 20"):
        event_arrays(frame)
    good = feature_table(20, seed=1)
    good.at[2, "image"] = np.full(1296, np.inf, dtype=np.float32)
    with pytest.raises(ValueError, match="NaN or infinite pixels in 1 of 20 events"):
        event_arrays(good, images=True)


def test_labels_must_be_binary(frame) -> None:
    frame.loc[[0, 1], "label"] = 2
    with pytest.raises(ValueError, match=r"label must be 0 .* 2 of 20 events are not"):
        event_arrays(frame)


def test_score_column_length_is_checked(frame, tmp_path) -> None:
    with pytest.raises(ValueError, match=r"score_a has 3 values but .* has 20 events"):
        with_columns(frame, {"score_a": np.zeros(3)})
    with pytest.raises(FileNotFoundError, match="does not exist"):
        event_arrays(tmp_path / "missing.parquet")
