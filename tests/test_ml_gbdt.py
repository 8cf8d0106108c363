"""The gradient-boosting classifier and its exported trees."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest
from sklearn.ensemble import HistGradientBoostingClassifier
from threadpoolctl import threadpool_limits

from rosenblatt.ml.gbdt import GBDTOptions, TreeEnsemble, fit_gbdt


@pytest.fixture(autouse=True)
def one_openmp_thread():
    """The boosting's OpenMP threads slow it down badly on shared cores."""
    with threadpool_limits(limits=1, user_api="openmp"):
        yield


def substructure(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(mj1, mj2, tau21_1, tau21_2)-like features, signal with a heavy jet and low tau21."""
    rng = np.random.default_rng(seed)
    label = np.arange(n) % 2
    features = np.column_stack(
        [
            np.where(label == 1, rng.normal(500, 50, n), rng.exponential(150, n)),
            rng.exponential(80, n),
            np.where(label == 1, rng.uniform(0.1, 0.7, n), rng.uniform(0.3, 1.0, n)),
            rng.uniform(0.2, 1.0, n),
        ]
    )
    return features, label


def test_exported_trees_reproduce_sklearn_exactly() -> None:
    features, label = substructure(600, seed=0)
    classifier = HistGradientBoostingClassifier(max_iter=30, random_state=0).fit(features, label)
    ensemble = TreeEnsemble.from_sklearn(classifier)
    test_features, _ = substructure(300, seed=1)
    test_features[::17, 2] = np.nan  # missing values follow the learnt direction
    np.testing.assert_allclose(
        ensemble.predict(test_features),
        classifier.predict_proba(test_features)[:, 1],
        rtol=1e-12,
        atol=1e-15,
    )
    assert len(ensemble.roots) == classifier.n_iter_


def test_truncated_export_equals_staged_prediction() -> None:
    features, label = substructure(400, seed=2)
    classifier = HistGradientBoostingClassifier(max_iter=20, random_state=0).fit(features, label)
    staged = list(classifier.staged_predict_proba(features))
    ensemble = TreeEnsemble.from_sklearn(classifier, n_trees=7)
    np.testing.assert_allclose(ensemble.predict(features), staged[6][:, 1], rtol=1e-12)


def test_fit_keeps_the_iteration_of_lowest_validation_loss() -> None:
    features, label = substructure(800, seed=3)
    val_features, val_label = substructure(400, seed=4)
    ensemble, summary = fit_gbdt(
        features,
        label,
        np.ones(len(label)),
        val_features,
        val_label,
        np.ones(len(val_label)),
        seed=0,
        options=GBDTOptions(max_iter=60, n_threads=1),
    )
    losses = [row["val_loss"] for row in summary["history"]]
    assert summary["trees_kept"] == int(np.argmin(losses)) + 1
    assert len(ensemble.roots) == summary["trees_kept"]


def test_save_and_load_round_trip(tmp_path) -> None:
    features, label = substructure(300, seed=5)
    classifier = HistGradientBoostingClassifier(max_iter=10, random_state=0).fit(features, label)
    ensemble = TreeEnsemble.from_sklearn(classifier)
    ensemble.save(tmp_path / "trees.npz")
    loaded = TreeEnsemble.load(tmp_path / "trees.npz")
    np.testing.assert_array_equal(loaded.predict(features), ensemble.predict(features))


@pytest.mark.slow
def test_gbdt_scan_runs_without_torch(tmp_path) -> None:
    """The light classifier needs no torch: train, score and save with torch unimportable."""
    script = textwrap.dedent(
        f"""
        import importlib.abc, sys
        class NoTorch(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path, target=None):
                if name == "torch" or name.startswith("torch."):
                    raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        sys.meta_path.insert(0, NoTorch())  # any "import torch" now fails
        import numpy as np, pandas as pd
        from rosenblatt.ml import run_scan
        rng = np.random.default_rng(0)
        def table(n):
            label = np.arange(n) % 2
            return pd.DataFrame({{
                "mjj": rng.uniform(2000, 4000, n), "label": label, "weight": np.ones(n),
                "mj1": 100 + 400 * label + rng.normal(0, 30, n), "mj2": rng.exponential(80, n),
                "tau21_1": rng.uniform(0, 1, n), "tau21_2": rng.uniform(0, 1, n)}})
        samples = {{"train": table(200), "validation": table(100)}}
        result = run_scan(samples, {str(tmp_path)!r}, kind="gbdt", seeds=[0], alphas=[],
                          options={{"max_iter": 20, "n_threads": 1}}, progress=False)
        assert "torch" not in sys.modules
        print(result.models[0]["val_auc"], samples["validation"]["score_gbdt_s0"].between(0, 1).all())
        """
    )
    completed = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=False, timeout=300
    )
    assert completed.returncode == 0, completed.stderr
    auc, in_range = completed.stdout.split()
    assert float(auc) > 0.9
    assert in_range == "True"
