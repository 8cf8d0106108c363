"""The scikit-learn meta-estimator rosenblatt.sklearn.DecorrelatedClassifier."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV, StratifiedKFold, cross_val_predict
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils.estimator_checks import parametrize_with_checks
from toy_transform import ShiftedUniform

import rosenblatt as rb
from rosenblatt.sklearn import DecorrelatedClassifier, expected_failed_checks


def _population(n: int, seed: int = 0) -> tuple[pd.DataFrame, np.ndarray]:
    """Two features; the label depends on both, the protected ``age`` shifts ``f1`` and the rate."""
    rng = np.random.default_rng(seed)
    age = rng.uniform(18, 70, n)
    f1 = 0.05 * (age - 40) + rng.normal(size=n)
    f2 = rng.normal(size=n)
    logit = 1.2 * f1 + 0.8 * f2 + 0.03 * (age - 40)
    y = (rng.uniform(size=n) < 1 / (1 + np.exp(-logit))).astype(int)
    return pd.DataFrame({"f1": f1, "age": age, "f2": f2}), y


def _spread(score: np.ndarray, x: np.ndarray, threshold: float, groups: int = 5) -> float:
    """Largest minus smallest fraction above ``threshold`` over the quantile groups of ``x``."""
    edges = np.quantile(x, np.linspace(0, 1, groups + 1)[1:-1])
    group = np.searchsorted(edges, x)
    rates = [np.mean(score[group == g] > threshold) for g in range(groups)]
    return float(max(rates) - min(rates))


@pytest.mark.slow
@parametrize_with_checks(
    [
        DecorrelatedClassifier(LogisticRegression(), protected=0, cdf=rb.GridKDE(sigma_r=0.5)),
        DecorrelatedClassifier(
            LogisticRegression(), protected=-1, cdf=rb.KDE(sigma_r=0.3), defining="all"
        ),
        DecorrelatedClassifier(
            LogisticRegression(),
            protected=0,
            cdf=rb.GridKDE(sigma_r=0.5),
            defining="all",
            use_protected=False,
            cv=2,
        ),
    ],
    expected_failed_checks=expected_failed_checks,
)
def test_estimator_checks(estimator, check):
    check(estimator)


@pytest.mark.parametrize("cdf", [None, rb.IRGI(depth="auto"), rb.KDE(sigma_r="auto")])
def test_negative_class_score_is_independent_of_age(cdf):
    X, y = _population(6000)
    X_test, y_test = _population(6000, seed=1)
    raw = LogisticRegression().fit(X, y)
    model = DecorrelatedClassifier(LogisticRegression(), protected="age", cdf=cdf).fit(X, y)
    neg = y_test == 0
    age = X_test["age"].to_numpy()[neg]
    gamma = model.predict_proba(X_test)[neg, 1]
    raw_score = raw.predict_proba(X_test)[neg, 1]
    test = rb.permutation_test(age, gamma, n_permutations=30, seed=0)
    assert rb.distance_correlation_sqr(age, raw_score) > 20 * test.floor
    assert test.statistic < 2 * test.floor
    # uniform on the defining class at every age: 1 - t of the negatives pass every cut t
    for t in (0.1, 0.5, 0.9):
        assert np.mean(gamma > t) == pytest.approx(1 - t, abs=0.03)
        assert _spread(gamma, age, t) < 0.06
        assert _spread(gamma, age, t) < _spread(raw_score, age, np.quantile(raw_score, t))


@pytest.mark.slow
def test_two_protected_columns_with_a_vector_transform():
    X, y = _population(6000)
    X_test, y_test = _population(6000, seed=1)
    X = X.assign(f2=X["f2"] + 0.02 * X["age"])
    X_test = X_test.assign(f2=X_test["f2"] + 0.02 * X_test["age"])
    model = DecorrelatedClassifier(
        LogisticRegression(), protected=["age", "f2"], cdf=rb.GridKDE(sigma_r="auto")
    ).fit(X, y)
    neg = y_test == 0
    gamma = model.predict_proba(X_test)[neg, 1]
    raw = model.estimator_.predict_proba(X_test)[neg, 1]
    np.testing.assert_allclose(
        gamma, model.cdf_.transform(X_test[["age", "f2"]].to_numpy()[neg], raw)
    )
    for column in ("age", "f2"):
        x = X_test[column].to_numpy()[neg]
        for t in (0.2, 0.5, 0.8):
            # the raw score depends strongly on both; the 2-d estimate leaves a quarter at most
            assert _spread(gamma, x, t) < 0.25 * _spread(raw, x, np.quantile(raw, t))


def test_defining_all_gives_demographic_parity_at_every_threshold():
    X, y = _population(6000)
    X_test, _ = _population(6000, seed=1)
    age = X_test["age"].to_numpy()
    raw = LogisticRegression().fit(X, y).predict_proba(X_test)[:, 1]
    gamma = DecorrelatedClassifier(LogisticRegression(), protected="age", defining="all").fit(X, y)
    score = gamma.predict_proba(X_test)[:, 1]
    for t in np.linspace(0.1, 0.9, 9):
        assert _spread(score, age, t) < 0.06
        assert _spread(raw, age, np.quantile(raw, t)) > 0.15


def test_outputs_are_the_transform_of_the_estimator_score():
    X, y = _population(2000)
    model = DecorrelatedClassifier(LogisticRegression(), protected="age", threshold=0.7).fit(X, y)
    gamma = model.cdf_.transform(X["age"], model.estimator_.predict_proba(X)[:, 1])
    np.testing.assert_array_equal(model.predict_proba(X), np.column_stack([1 - gamma, gamma]))
    np.testing.assert_array_equal(model.decision_function(X), gamma - 0.7)
    np.testing.assert_array_equal(model.predict(X), model.classes_[(gamma > 0.7).astype(int)])
    # the estimator is the one scikit-learn fits on the same data
    np.testing.assert_allclose(model.estimator_.coef_, LogisticRegression().fit(X, y).coef_)
    assert model.n_features_in_ == 3
    assert list(model.feature_names_in_) == ["f1", "age", "f2"]


def test_string_labels_and_the_negative_class():
    X, y = _population(2000)
    labels = np.where(y == 1, "yes", "no")
    model = DecorrelatedClassifier(LogisticRegression(), protected="age").fit(X, labels)
    assert list(model.classes_) == ["no", "yes"]
    assert set(model.predict(X)) <= {"no", "yes"}
    neg_gamma = model.predict_proba(X)[labels == "no", 1]
    # fitted on the negatives ("no"): uniform there
    assert np.mean(neg_gamma > 0.5) == pytest.approx(0.5, abs=0.05)


def test_use_protected_false_hides_the_column_from_the_estimator():
    X, y = _population(2000)
    model = DecorrelatedClassifier(LogisticRegression(), protected="age", use_protected=False).fit(
        X, y
    )
    assert list(model.estimator_.feature_names_in_) == ["f1", "f2"]
    numpy_model = DecorrelatedClassifier(LogisticRegression(), protected=1, use_protected=False)
    numpy_model.fit(X.to_numpy(), y)
    assert numpy_model.estimator_.n_features_in_ == 2
    np.testing.assert_allclose(numpy_model.predict_proba(X.to_numpy()), model.predict_proba(X))


def test_cv_fits_the_transform_on_out_of_fold_scores():
    X, y = _population(3000)
    cv = StratifiedKFold(3, shuffle=True, random_state=0)
    model = DecorrelatedClassifier(
        LogisticRegression(), protected="age", cdf=rb.GridKDE(sigma_r=0.3), cv=cv
    ).fit(X, y)
    oof = cross_val_predict(LogisticRegression(), X, y, cv=cv, method="predict_proba")[:, 1]
    neg = y == 0
    expected = rb.GridKDE(sigma_r=0.3).fit(X["age"][neg], oof[neg])
    probe_x, probe_s = X["age"].to_numpy()[:200], oof[:200]
    np.testing.assert_allclose(
        model.cdf_.transform(probe_x, probe_s), expected.transform(probe_x, probe_s)
    )
    np.testing.assert_allclose(model.estimator_.coef_, LogisticRegression().fit(X, y).coef_)


def test_sample_weight_reaches_the_estimator_and_the_transform():
    X, y = _population(2000)
    w = np.random.default_rng(3).uniform(0.5, 2.0, len(y))
    model = DecorrelatedClassifier(
        LogisticRegression(), protected="age", cdf=rb.GridKDE(sigma_r=0.3)
    )
    model.fit(X, y, sample_weight=w)
    np.testing.assert_allclose(
        model.estimator_.coef_, LogisticRegression().fit(X, y, sample_weight=w).coef_
    )
    neg = y == 0
    score = model.estimator_.predict_proba(X)[:, 1]
    expected = rb.GridKDE(sigma_r=0.3).fit(X["age"][neg], score[neg], w[neg])
    np.testing.assert_allclose(
        model.cdf_.transform(X["age"], score), expected.transform(X["age"], score)
    )


def test_the_given_transform_is_copied_not_fitted():
    cdf = rb.IRGI(depth=3)
    X, y = _population(1000)
    model = DecorrelatedClassifier(LogisticRegression(), protected="age", cdf=cdf).fit(X, y)
    assert not cdf.is_fitted()
    assert model.cdf_ is not cdf
    assert model.cdf_.is_fitted()


@pytest.mark.slow
def test_clone_pipeline_and_grid_search_round_trip():
    X, y = _population(1500)
    model = DecorrelatedClassifier(
        LogisticRegression(), protected="age", cdf=rb.GridKDE(sigma_r=0.3)
    )
    copy = clone(model)
    assert copy.get_params()["estimator__C"] == 1.0
    assert copy.cdf is not model.cdf
    assert repr(copy.cdf) == repr(model.cdf)

    search = GridSearchCV(
        model,
        {"estimator__C": [0.01, 1.0], "cdf": [rb.GridKDE(sigma_r=0.3), rb.IRGI(depth=3)]},
        scoring="roc_auc",
        cv=3,
    ).fit(X, y)
    best = search.best_estimator_
    assert set(search.best_params_) == {"estimator__C", "cdf"}
    assert search.best_params_["estimator__C"] == best.estimator_.C
    assert type(best.cdf_) is type(search.best_params_["cdf"])
    assert search.predict_proba(X).shape == (len(y), 2)
    assert 0.6 < search.best_score_ < 1.0

    pipe = make_pipeline(
        StandardScaler().set_output(transform="pandas"),
        DecorrelatedClassifier(LogisticRegression(), protected="age", cdf=rb.GridKDE(sigma_r=0.3)),
    ).fit(X, y)
    gamma = pipe.predict_proba(X)[:, 1]
    assert gamma.min() >= 0.0
    assert gamma.max() <= 1.0
    assert not hasattr(pipe, "transform")


def _fit_error(X, y, **params):
    model = DecorrelatedClassifier(LogisticRegression(), **params)
    with pytest.raises((ValueError, TypeError)) as info:
        model.fit(X, y)
    return str(info.value)


def test_bad_input_is_named():
    X, y = _population(300)
    assert "no column names" in _fit_error(X.to_numpy(), y, protected="age")
    assert "'income' is not a column" in _fit_error(X, y, protected="income")
    assert "position 5 is out of range" in _fit_error(X.to_numpy(), y, protected=5)
    assert "given twice" in _fit_error(X, y, protected=["age", 1])
    scalar = _fit_error(X, y, protected=["age", "f2"], cdf=ShiftedUniform())
    assert "ShiftedUniform could not be fitted on the negative-class defining sample" in scalar
    assert "protected ['age', 'f2']" in scalar
    assert "one-dimensional" in scalar
    assert "defining must be" in _fit_error(X, y, protected="age", defining="positive")
    assert "threshold must be" in _fit_error(X, y, protected="age", threshold=1.5)
    assert "rosenblatt transform" in _fit_error(X, y, protected="age", cdf=StandardScaler())
    assert "Only binary classification" in _fit_error(X, y % 3 + (X["f2"] > 1), protected="age")
    text = X.assign(age=X["age"].astype(str).where(X["age"] > 30, "young"))
    assert "protected column(s) ['age'] must be numeric" in _fit_error(text, y, protected="age")
    few = _fit_error(X.iloc[:30], np.r_[np.zeros(10), np.ones(20)], protected="age")
    assert (
        "could not be fitted on the negative-class defining sample (10 events, protected ['age'])"
        in few
    )


def test_nan_in_the_protected_column_at_prediction():
    X, y = _population(500)
    model = DecorrelatedClassifier(LogisticRegression(), protected="age").fit(X, y)
    bad = X.copy()
    bad.loc[7, "age"] = np.nan
    with pytest.raises(
        ValueError, match=r"\['age'\] hold 1 NaN or infinite value\(s\) \(first in row 7\)"
    ):
        model.predict_proba(bad)
