"""A light classifier without torch: gradient-boosted trees on jet substructure.

scikit-learn's :class:`~sklearn.ensemble.HistGradientBoostingClassifier` on
``(mj1, mj2, tau21_1, tau21_2)``, trained with class-balanced event weights.
The number of trees is chosen on the validation table (the iteration with the
lowest balanced log-loss, the analogue of the CNN's early stopping). The
fitted trees are exported to plain arrays (:class:`TreeEnsemble`), which
evaluate without scikit-learn and are saved as ``.npz`` (no pickle), so a saved
model is a file users can exchange.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from rosenblatt.typing import BoolArray, FloatArray, Int64Array

__all__ = ["GBDTOptions", "TreeEnsemble", "fit_gbdt"]

_NODE_ARRAYS = ("feature", "threshold", "missing_go_to_left", "left", "right", "is_leaf", "value")


@dataclass(frozen=True)
class GBDTOptions:
    """Hyper-parameters of the gradient boosting.

    Attributes
    ----------
    max_iter
        Trees fitted; the validation table chooses how many are kept.
    learning_rate, max_leaf_nodes, min_samples_leaf, l2_regularization
        As in :class:`~sklearn.ensemble.HistGradientBoostingClassifier`.
    max_features
        Fraction of features considered per split; below 1 the seed changes
        the model (at 1, fewer than 2x10^5 training events give the same
        model for every seed).
    n_threads
        OpenMP threads of the fit (``None``: scikit-learn's default, all
        cores); 1 avoids oversubscription when other work shares the cores.
    """

    max_iter: int = 200
    learning_rate: float = 0.1
    max_leaf_nodes: int = 31
    min_samples_leaf: int = 20
    l2_regularization: float = 0.0
    max_features: float = 1.0
    n_threads: int | None = None


@dataclass(frozen=True)
class TreeEnsemble:
    """Boosted regression trees as flat node arrays; ``predict`` gives P(signal).

    Node ``i`` sends an event left when ``x[feature[i]] <= threshold[i]``
    (a NaN goes left when ``missing_go_to_left[i]``), ``left``/``right`` are
    global node indices and ``roots`` the first node of each tree. The score
    is ``sigmoid(baseline + sum of the leaf values reached)``, exactly as
    :meth:`~sklearn.ensemble.HistGradientBoostingClassifier.predict_proba`.
    """

    baseline: float
    roots: Int64Array
    feature: Int64Array
    threshold: FloatArray
    missing_go_to_left: BoolArray
    left: Int64Array
    right: Int64Array
    is_leaf: BoolArray
    value: FloatArray

    @classmethod
    def from_sklearn(cls, classifier: Any, n_trees: int | None = None) -> TreeEnsemble:
        """Export the first ``n_trees`` trees (default all) of a fitted binary classifier."""
        predictors = classifier._predictors  # the trees have no public accessor
        if len(classifier.classes_) != 2:
            msg = f"only binary classifiers are exported, got {len(classifier.classes_)} classes"
            raise ValueError(msg)
        kept = predictors[: len(predictors) if n_trees is None else n_trees]
        nodes = [tree[0].nodes for tree in kept]
        if any(node["is_categorical"].any() for node in nodes):
            msg = "categorical splits are not supported by the exported trees"
            raise ValueError(msg)
        sizes = np.array([len(node) for node in nodes], dtype=np.int64)
        offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
        stacked = (
            np.concatenate(nodes) if nodes else np.empty(0, dtype=predictors[0][0].nodes.dtype)
        )
        shift = np.repeat(offsets, sizes)
        return cls(
            baseline=float(np.asarray(classifier._baseline_prediction).ravel()[0]),
            roots=offsets,
            feature=stacked["feature_idx"].astype(np.int64),
            threshold=stacked["num_threshold"].astype(np.float64),
            missing_go_to_left=stacked["missing_go_to_left"].astype(bool),
            left=stacked["left"].astype(np.int64) + shift,
            right=stacked["right"].astype(np.int64) + shift,
            is_leaf=stacked["is_leaf"].astype(bool),
            value=stacked["value"].astype(np.float64),
        )

    def raw_predict(self, features: FloatArray) -> FloatArray:
        """Return the log-odds ``(n,)`` of features ``(n, n_features)``."""
        features = np.asarray(features, dtype=np.float64)
        rows = np.arange(len(features))
        raw = np.full(len(features), self.baseline)
        for root in self.roots:
            node = np.full(len(features), root, dtype=np.int64)
            active = ~self.is_leaf[node]
            while active.any():
                at = node[active]
                values = features[rows[active], self.feature[at]]
                go_left = np.where(
                    np.isnan(values), self.missing_go_to_left[at], values <= self.threshold[at]
                )
                node[active] = np.where(go_left, self.left[at], self.right[at])
                active = ~self.is_leaf[node]
            raw += self.value[node]
        return raw

    def predict(self, features: FloatArray) -> FloatArray:
        """Return the signal probability ``(n,)`` in [0, 1]."""
        raw = self.raw_predict(features)
        return np.asarray(1.0 / (1.0 + np.exp(-raw)), dtype=np.float64)

    def save(self, path: str | Path) -> None:
        """Write the node arrays to an ``.npz`` file."""
        np.savez(
            path,
            baseline=np.array(self.baseline),
            roots=self.roots,
            **{name: getattr(self, name) for name in _NODE_ARRAYS},
        )

    @classmethod
    def load(cls, path: str | Path | BinaryIO) -> TreeEnsemble:
        """Read an ensemble written by :meth:`save` (its file, or a file object of its bytes)."""
        with np.load(path, allow_pickle=False) as stored:
            return cls(
                baseline=float(stored["baseline"]),
                roots=stored["roots"],
                **{name: stored[name] for name in _NODE_ARRAYS},
            )


def _balanced_log_loss(label: Int64Array, probability: FloatArray, weight: FloatArray) -> float:
    clipped = np.clip(probability, 1e-15, 1 - 1e-15)
    losses = -np.where(label == 1, np.log(clipped), np.log1p(-clipped))
    return float(np.sum(weight * losses) / np.sum(weight))


def fit_gbdt(
    train_features: FloatArray,
    train_label: Int64Array,
    train_weight: FloatArray,
    val_features: FloatArray,
    val_label: Int64Array,
    val_weight: FloatArray,
    *,
    seed: int,
    options: GBDTOptions,
) -> tuple[TreeEnsemble, dict[str, Any]]:
    """Fit the boosting and keep the trees that minimise the validation log-loss.

    Weights are the class-balanced event weights. Returns the ensemble and a
    summary (trees fitted and kept, validation loss per iteration).
    """
    from sklearn.ensemble import HistGradientBoostingClassifier
    from threadpoolctl import threadpool_limits

    classifier = HistGradientBoostingClassifier(
        max_iter=options.max_iter,
        learning_rate=options.learning_rate,
        max_leaf_nodes=options.max_leaf_nodes,
        min_samples_leaf=options.min_samples_leaf,
        l2_regularization=options.l2_regularization,
        max_features=options.max_features,
        early_stopping=False,
        random_state=seed,
    )
    with threadpool_limits(limits=options.n_threads, user_api="openmp"):
        classifier.fit(train_features, train_label, sample_weight=train_weight)
        val_losses = [
            _balanced_log_loss(val_label, staged[:, 1], val_weight)
            for staged in classifier.staged_predict_proba(val_features)
        ]
    n_trees = int(np.argmin(val_losses)) + 1
    summary = {
        "trees_fitted": int(classifier.n_iter_),
        "trees_kept": n_trees,
        "history": [{"iteration": i + 1, "val_loss": loss} for i, loss in enumerate(val_losses)],
    }
    return TreeEnsemble.from_sklearn(classifier, n_trees), summary
