"""A scikit-learn meta-estimator whose score is independent of protected columns.

:class:`DecorrelatedClassifier` wraps any binary scikit-learn classifier. After
fitting it, it fits a conditional-CDF transform (:class:`rosenblatt.GridKDE`
by default) of the classifier's score ``s`` against the protected column ``x``
on a defining sample, and replaces the score by
``gamma(x, s) = P(S <= s | X = x)``. On the defining sample ``gamma`` is
uniform on [0, 1] whatever ``x`` is, so every threshold on it selects the same
fraction of every ``x``: independence at all working points at once, for a
continuous protected attribute (age, income, jet mass).

>>> from sklearn.linear_model import LogisticRegression
>>> from rosenblatt.sklearn import DecorrelatedClassifier
>>> model = DecorrelatedClassifier(LogisticRegression(), protected="age", defining="all")
>>> model.fit(X, y).predict_proba(X_test)[:, 1]   # doctest: +SKIP

Needs scikit-learn 1.6 or later (the ``fairness`` extra).
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

from rosenblatt._extras import optional_imports
from rosenblatt._validation import check_bool, check_real, is_int
from rosenblatt.transforms import KDE, ConditionalCDFTransform, GridKDE
from rosenblatt.typing import ArrayLike, FloatArray, IntArray

with optional_imports(__name__):
    from sklearn.base import BaseEstimator, ClassifierMixin, MetaEstimatorMixin, clone
    from sklearn.model_selection import check_cv, cross_val_predict
    from sklearn.utils import Tags, assert_all_finite
    from sklearn.utils.multiclass import check_classification_targets
    from sklearn.utils.validation import (
        _check_sample_weight,
        check_array,
        check_is_fitted,
        column_or_1d,
        validate_data,
    )

__all__ = ["DecorrelatedClassifier", "expected_failed_checks"]

Defining = Literal["negative", "all"]


def _is_dataframe(X: Any) -> bool:
    """Whether ``X`` is a pandas DataFrame (columns addressed by name and by position)."""
    return hasattr(X, "columns") and hasattr(X, "iloc")


def _binary_labels(y: Any, n_rows: int) -> tuple[NDArray[Any], NDArray[Any], IntArray]:
    """``y`` as a checked column of two classes: the labels, the classes and each label's index.

    Raises
    ------
    ValueError
        If ``y`` is not finite, has fewer or more than two classes, or not one
        label per row of ``X``.
    """
    y = column_or_1d(y, warn=True)
    if y.dtype.kind in "fc":
        assert_all_finite(y, input_name="y")
    check_classification_targets(y)
    classes, y_index = np.unique(y, return_inverse=True)
    if len(classes) != 2:
        kind = (
            "Only binary classification is supported" if len(classes) > 2 else "Needs two classes"
        )
        msg = (
            f"{kind}: y has {len(classes)} class(es) ({classes.tolist()[:5]}); "
            "DecorrelatedClassifier needs exactly 2"
        )
        raise ValueError(msg)
    if len(y) != n_rows:
        msg = f"X has {n_rows} rows but y has {len(y)} labels"
        raise ValueError(msg)
    return y, classes, y_index


# scikit-learn has no type hints: its bases are Any to mypy
class DecorrelatedClassifier(ClassifierMixin, MetaEstimatorMixin, BaseEstimator):  # type: ignore[misc]
    """Binary classifier whose score is made independent of protected columns.

    ``fit`` fits a clone of ``estimator``, then a copy of ``cdf``, the transform of the
    estimator's score against the protected column on the defining sample.
    ``predict_proba(X)[:, 1]`` is the transformed score ``gamma`` in [0, 1]:
    its distribution on the defining sample is uniform at every value of the
    protected column, so ``P(gamma > t | x) = 1 - t`` for every threshold
    ``t`` and every ``x`` there.

    Parameters
    ----------
    estimator
        A binary scikit-learn classifier with ``predict_proba`` or
        ``decision_function``; cloned at every ``fit``.
    protected
        The protected column: a column name of a DataFrame, or an integer
        position (negative counts from the end); a sequence of them for
        several columns, which needs a transform that accepts a vector
        ``x`` (IRGI, KDE and GridKDE do; a transform of a scalar ``x``
        raises a ``ValueError``). Its values must be numeric and finite, at
        ``fit`` and at prediction.
    cdf
        The estimator of ``gamma``, a rosenblatt conditional-CDF transform (:class:`rosenblatt.IRGI`,
        :class:`rosenblatt.KDE`, :class:`rosenblatt.GridKDE` or any
        :class:`rosenblatt.transforms.ConditionalCDFTransform`); deep-copied at
        every ``fit``. Default: ``rosenblatt.GridKDE(sigma_r="auto")``. (Not
        named ``transform``: scikit-learn takes any object with a ``transform``
        attribute for a transformer.)
    defining
        The sample ``gamma`` is uniform on: ``"negative"`` (default), the
        events of the negative class (``classes_[0]``), as the background of
        a physics analysis: the false-positive rate is then the same for
        every value of the protected column at every threshold; ``"all"``,
        every event: the positive rate is the same for every value of the
        protected column at every threshold (demographic parity).
    cv
        ``None`` (default): the transform is fitted on the scores of the
        events the estimator was trained on. Otherwise any ``cv`` accepted by
        :func:`sklearn.model_selection.check_cv` (an integer is a stratified
        k-fold): the transform is fitted on out-of-fold scores
        (:func:`sklearn.model_selection.cross_val_predict`), so that a
        classifier that over-fits its training events does not bias it, and
        ``estimator_`` is then fitted on all events. Out-of-fold scores come
        from k slightly different models, whose spread widens the fitted
        conditional distribution most where the models disagree most (at
        extreme values of the protected column): use it for classifiers that
        over-fit (boosting, forests), not for low-variance ones (a logistic
        regression on many events), whose training scores are already fair
        samples of their scores on new events.
    use_protected
        Whether the estimator sees the protected columns (default ``True``);
        ``False`` drops them from its input.
    threshold
        The cut on ``gamma`` above which :meth:`predict` says the positive
        class. With ``defining="negative"`` the negative events pass it with
        probability ``1 - threshold`` at every value of the protected column.

    Attributes
    ----------
    estimator_
        The fitted clone of ``estimator`` (fitted on every event).
    cdf_
        The fitted transform of the score against the protected column.
    classes_
        The two class labels; ``classes_[1]`` is the positive class.
    protected_indices_
        Positions of the protected columns in ``X``.
    n_features_in_, feature_names_in_
        Number and names (DataFrame input) of the columns seen in ``fit``.
    """

    def __init__(
        self,
        estimator: Any,
        protected: str | int | Sequence[str | int],
        cdf: ConditionalCDFTransform | None = None,
        defining: Defining = "negative",
        cv: Any = None,
        use_protected: bool = True,
        threshold: float = 0.5,
    ) -> None:
        self.estimator = estimator
        self.protected = protected
        self.cdf = cdf
        self.defining = defining
        self.cv = cv
        self.use_protected = use_protected
        self.threshold = threshold

    # ------------------------------------------------------------------ tags
    def __sklearn_tags__(self) -> Tags:
        """Binary only; the accuracy at ``threshold`` is not the estimator's (see the class)."""
        tags = super().__sklearn_tags__()
        if tags.classifier_tags is not None:
            tags.classifier_tags.multi_class = False
            tags.classifier_tags.poor_score = True
        return tags

    # -------------------------------------------------------------- columns
    def _protected_list(self) -> list[str | int]:
        protected = self.protected
        if isinstance(protected, str) or is_int(protected):
            return [protected]
        if (
            isinstance(protected, Sequence)
            and not isinstance(protected, str)
            and len(protected) > 0
        ):
            items = list(protected)
            for item in items:
                if not (isinstance(item, str) or is_int(item)):
                    msg = f"protected must hold column names or integer positions, got {item!r} in {protected!r}"
                    raise TypeError(msg)
            return items
        msg = f"protected must be a column name, an integer position or a non-empty sequence of them, got {protected!r}"
        raise ValueError(msg)

    def _resolve_protected(self, X: Any) -> list[int]:
        """Positions of the protected columns in ``X`` (checked against its width)."""
        n_columns = X.shape[1]
        columns = list(X.columns) if _is_dataframe(X) else None
        positions: list[int] = []
        for item in self._protected_list():
            if isinstance(item, str):
                if columns is None:
                    msg = (
                        f"protected column {item!r} is a name, but X has no column names "
                        f"({type(X).__name__}): pass a DataFrame or an integer position"
                    )
                    raise ValueError(msg)
                if item not in columns:
                    msg = (
                        f"protected column {item!r} is not a column of X; its columns are {columns}"
                    )
                    raise ValueError(msg)
                position = columns.index(item)
            else:
                position = int(item)
                if not -n_columns <= position < n_columns:
                    msg = f"protected column position {position} is out of range for X with {n_columns} column(s)"
                    raise ValueError(msg)
                position %= n_columns
            if position in positions:
                msg = f"protected column {item!r} is given twice in protected={self.protected!r}"
                raise ValueError(msg)
            positions.append(position)
        if not self.use_protected and len(positions) == n_columns:
            msg = (
                f"use_protected=False leaves the estimator no column: X has {n_columns} "
                "feature(s), all of them protected"
            )
            raise ValueError(msg)
        return positions

    def _protected_values(self, X: Any) -> FloatArray:
        """The protected column(s) as float: shape ``(n,)`` for one, ``(n, k)`` for several."""
        idx = self.protected_indices_
        block = X.iloc[:, idx].to_numpy() if _is_dataframe(X) else np.asarray(X)[:, idx]
        try:
            values = np.asarray(block, dtype=np.float64)
        except (TypeError, ValueError) as err:
            names = [self._column_name(i) for i in idx]
            msg = f"protected column(s) {names} must be numeric: {err}"
            raise TypeError(msg) from err
        if not np.isfinite(values).all():
            bad = ~np.isfinite(values)
            rows = np.flatnonzero(bad.any(axis=1))
            names = [self._column_name(i) for i in idx]
            msg = (
                f"protected column(s) {names} hold {int(bad.sum())} NaN or infinite value(s) "
                f"(first in row {int(rows[0])}); the transform needs finite values"
            )
            raise ValueError(msg)
        return values[:, 0] if values.shape[1] == 1 else values

    def _column_name(self, position: int) -> str | int:
        names = getattr(self, "feature_names_in_", None)
        return str(names[position]) if names is not None else position

    def _estimator_input(self, X: Any) -> Any:
        """``X`` without the protected columns when ``use_protected=False``."""
        if self.use_protected:
            return X
        if _is_dataframe(X):
            return X.drop(columns=X.columns[self.protected_indices_])
        return np.delete(np.asarray(X), self.protected_indices_, axis=1)

    # ------------------------------------------------------------------ data
    def _check_X(self, X: Any, *, reset: bool) -> Any:
        if not _is_dataframe(X):
            X = check_array(X, dtype=None, ensure_all_finite=False, estimator=self)
        validate_data(self, X, reset=reset, skip_check_array=True)
        return X

    def _score(self, estimator: Any, X: Any) -> FloatArray:
        """The fitted estimator's score of the positive class."""
        if hasattr(estimator, "predict_proba"):
            return np.asarray(estimator.predict_proba(X), dtype=np.float64)[:, 1]
        return np.asarray(estimator.decision_function(X), dtype=np.float64).reshape(-1)

    def _check_params(self) -> None:
        if self.defining not in ("negative", "all"):
            msg = f"defining must be 'negative' or 'all', got {self.defining!r}"
            raise ValueError(msg)
        check_real(self.threshold, "threshold", low=0.0, high=1.0)
        check_bool(self.use_protected, "use_protected", error=TypeError)
        transform: object = self.cdf  # whatever the user set
        if transform is not None and not isinstance(transform, ConditionalCDFTransform):
            msg = (
                "cdf must be a rosenblatt transform (IRGI, KDE, GridKDE or another "
                f"ConditionalCDFTransform), got {type(transform).__name__}"
            )
            raise TypeError(msg)
        if not (
            hasattr(self.estimator, "predict_proba") or hasattr(self.estimator, "decision_function")
        ):
            msg = f"estimator {type(self.estimator).__name__} has neither predict_proba nor decision_function"
            raise ValueError(msg)

    # ------------------------------------------------------------------- fit
    def fit(
        self, X: ArrayLike, y: ArrayLike, sample_weight: ArrayLike | None = None
    ) -> DecorrelatedClassifier:
        """Fit the estimator, then the transform of its score on the defining sample.

        Parameters
        ----------
        X
            Array-like or DataFrame of shape ``(n_samples, n_features)``,
            holding the protected column(s).
        y
            Binary class labels.
        sample_weight
            Optional per-event weights, passed to the estimator's ``fit`` and
            to the transform.

        Returns
        -------
        self

        Raises
        ------
        ValueError
            On invalid parameters, a protected column that is missing, not
            numeric or not finite, labels that are not binary, several
            protected columns with a transform of a scalar ``x``, or a defining
            sample the transform cannot be fitted on.
        """
        self._check_params()
        data = self._check_X(X, reset=True)
        labels, classes, y_index = _binary_labels(y, data.shape[0])
        self.protected_indices_ = self._resolve_protected(data)
        x = self._protected_values(data)
        weight = None if sample_weight is None else _check_sample_weight(sample_weight, data)
        fit_params = {} if weight is None else {"sample_weight": weight}

        estimator, score = self._fit_estimator(self._estimator_input(data), labels, fit_params)
        defining = y_index == 0 if self.defining == "negative" else np.ones(len(labels), dtype=bool)
        transform = GridKDE(sigma_r="auto") if self.cdf is None else copy.deepcopy(self.cdf)
        try:
            transform.fit(
                x[defining], score[defining], None if weight is None else weight[defining]
            )
        except ValueError as err:
            which = "negative-class" if self.defining == "negative" else "whole"
            names = [self._column_name(i) for i in self.protected_indices_]
            msg = (
                f"{type(transform).__name__} could not be fitted on the {which} defining "
                f"sample ({int(defining.sum())} events, protected {names}): {err}"
            )
            raise ValueError(msg) from err
        self.estimator_ = estimator
        self.cdf_ = transform
        self.classes_ = classes
        return self

    def _fit_estimator(
        self, X_est: Any, y: NDArray[Any], fit_params: dict[str, Any]
    ) -> tuple[Any, FloatArray]:
        """The fitted estimator and the score that defines the transform.

        Without ``cv`` the score is the fitted estimator's on its own training
        events; with ``cv`` it is the out-of-fold score of :func:`cross_val_predict`,
        and the estimator is then fitted on every event.
        """
        if self.cv is None:
            estimator = clone(self.estimator).fit(X_est, y, **fit_params)
            return estimator, self._score(estimator, X_est)
        splitter = check_cv(self.cv, y, classifier=True)
        method = (
            "predict_proba" if hasattr(self.estimator, "predict_proba") else "decision_function"
        )
        out_of_fold = np.asarray(
            cross_val_predict(
                clone(self.estimator), X_est, y, cv=splitter, method=method, params=fit_params
            ),
            dtype=np.float64,
        )
        score = out_of_fold[:, 1] if out_of_fold.ndim == 2 else out_of_fold
        return clone(self.estimator).fit(X_est, y, **fit_params), score

    # --------------------------------------------------------------- predict
    def predict_proba(self, X: ArrayLike) -> FloatArray:
        """Return ``[1 - gamma, gamma]`` per event; ``gamma`` is the decorrelated score.

        Parameters
        ----------
        X
            Array-like or DataFrame with the columns seen in ``fit``.

        Returns
        -------
        ndarray of shape (n_samples, 2)
            Column 1 is ``gamma(x, s)`` in [0, 1], column 0 its complement.
        """
        gamma = self._gamma(X)
        return np.column_stack([1.0 - gamma, gamma])

    def decision_function(self, X: ArrayLike) -> FloatArray:
        """Return ``gamma - threshold``: positive where :meth:`predict` says ``classes_[1]``.

        Parameters
        ----------
        X
            Array-like or DataFrame with the columns seen in ``fit``.

        Returns
        -------
        ndarray of shape (n_samples,)
        """
        return self._gamma(X) - float(self.threshold)

    def predict(self, X: ArrayLike) -> NDArray[Any]:
        """Return ``classes_[1]`` where ``gamma > threshold``, else ``classes_[0]``.

        Parameters
        ----------
        X
            Array-like or DataFrame with the columns seen in ``fit``.

        Returns
        -------
        ndarray of shape (n_samples,)
        """
        positive = self._gamma(X) > float(self.threshold)
        return self.classes_[positive.astype(np.intp)]

    def _gamma(self, X: Any) -> FloatArray:
        check_is_fitted(self, "cdf_")
        X = self._check_X(X, reset=False)
        x = self._protected_values(X)
        score = self._score(self.estimator_, self._estimator_input(X))
        return np.asarray(self.cdf_.transform(x, score), dtype=np.float64)


def expected_failed_checks(estimator: DecorrelatedClassifier) -> dict[str, str]:
    """The scikit-learn estimator checks that cannot hold for a decorrelated score, with why.

    Pass it as ``expected_failed_checks`` of
    :func:`sklearn.utils.estimator_checks.parametrize_with_checks` or
    :func:`~sklearn.utils.estimator_checks.check_estimator`.

    Parameters
    ----------
    estimator
        The :class:`DecorrelatedClassifier` under test.

    Returns
    -------
    dict
        ``{check name: reason}``.
    """
    failed = {
        "check_sample_weight_equivalence_on_dense_data": (
            "the transforms place their y levels and set their kernel width from the defining "
            "events as well as their weights (quantile levels, the pairwise spread sigma_a), "
            "so integer weights reproduce repeated events only approximately"
        ),
    }
    if isinstance(estimator.cdf, KDE):
        failed["check_methods_subset_invariance"] = (
            "KDE's gamma steps at every defining score; the estimator's score of a training "
            "event computed alone can differ from its batch value in the last bit, which "
            "moves it across its own step (by 1/n of the defining sample)"
        )
    return failed
