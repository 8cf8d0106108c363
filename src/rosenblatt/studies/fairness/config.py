"""The configuration of the fairness study (``study: fairness``), validated when loaded.

An unknown key, a value of the wrong type or out of range is an error that
names the key and the configuration file (see ``configs/fairness.yaml``).
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import numpy as np

from rosenblatt.studies.config_checks import (
    check_keys,
    count,
    fail,
    mapping,
    numbers,
    positive,
    seed,
)
from rosenblatt.studies.config_fields import (
    StudyConfig,
    config_dataclass,
    option,
)

__all__ = ["METHODS", "ArrestsConfig", "DigitsConfig", "FairnessConfig"]

#: the methods compared on the arrests, each with the raw classifier it is compared with
METHODS: dict[str, str | None] = {
    "lr": None,
    "hgb": None,
    "lr_irgi": "lr",
    "lr_kde": "lr",
    "lr_gridkde": "lr",
    "hgb_gridkde": "hgb",
    "lr_gridkde_negative": "lr",
    "information_filter": "lr",
    "threshold_optimizer": "hgb",
}

#: the most folds (and age groups); the digits hold about 180 images of each class
MAX_FOLDS = 100

#: inner cross-validation of the decorrelating transform, per raw classifier
_INNER_CV: dict[str, int | None] = {"lr": None, "hgb": 5}

#: the digits' keys that default to the top level's
_SHARED = ("folds", "permutations", "bootstrap")


def _folds(value: Any, source: str, key: str) -> int:
    return count(value, source, key, 2, MAX_FOLDS)


def _at_least_two(value: Any, source: str, key: str) -> int:
    return count(value, source, key, 2)


def _inner_cv(value: Any, source: str, key: str) -> dict[str, int | None]:
    """``arrests.inner_cv``: folds (or ``null``) per raw classifier, the others as by default."""
    inner = mapping(value or {}, source, key)
    check_keys(inner, _INNER_CV, source, key)
    inner_cv = dict(_INNER_CV)
    for base, folds in inner.items():
        inner_cv[base] = None if folds is None else _folds(folds, source, f"{key}.{base}")
    return inner_cv


def _classes(value: Any, source: str, key: str) -> tuple[int, int]:
    """``digits.classes``: two distinct digits."""
    if not isinstance(value, (list, tuple)) or len(value) != 2:
        raise fail(source, "digits.classes", f"must be a list of two digits, got {value!r}")
    negative, positive = (count(c, source, "digits.classes", 0) for c in value)
    if negative > 9 or positive > 9 or negative == positive:
        raise fail(source, "digits.classes", f"must be two distinct digits 0 to 9, got {value!r}")
    return negative, positive


def _fractions(value: Any, source: str, key: str) -> tuple[float, ...]:
    """A non-empty list of fractions, each in (0, 1)."""
    values = numbers(value, source, key)
    if any(not 0 < v < 1 for v in values):
        raise fail(source, key, f"must be fractions in (0, 1), got {list(values)}")
    return values


def _methods(value: Any, source: str, key: str) -> tuple[str, ...] | None:
    """``arrests.methods``: known names, each with the raw classifier it is compared with."""
    if value is None:
        return None
    if (
        not isinstance(value, (list, tuple))
        or not value
        or not all(isinstance(v, str) for v in value)
    ):
        raise fail(source, "arrests.methods", f"must be a non-empty list of names, got {value!r}")
    unknown = sorted(set(value) - set(METHODS))
    if unknown:
        raise fail(
            source, "arrests.methods", f"unknown method(s) {unknown}; known: {list(METHODS)}"
        )
    missing_raw = sorted({raw for v in value if (raw := METHODS[v])} - set(value))
    if missing_raw:
        raise fail(
            source,
            "arrests.methods",
            f"needs the raw classifier(s) {missing_raw} its methods are compared with",
        )
    return tuple(name for name in METHODS if name in value)


def _hgb_options(value: Any, source: str, key: str) -> dict[str, Any]:
    """``arrests.hgb``: keyword arguments of ``HistGradientBoostingClassifier`` (``null``: none)."""
    from sklearn.ensemble import HistGradientBoostingClassifier

    options = mapping(value or {}, source, "arrests.hgb")
    known = set(inspect.signature(HistGradientBoostingClassifier).parameters) - {"random_state"}
    check_keys(options, known, source, "arrests.hgb")
    try:
        # scikit-learn's own check of the values, as its fit would do it
        HistGradientBoostingClassifier(**{str(k): v for k, v in options.items()})._validate_params()
    except (TypeError, ValueError) as err:
        raise fail(source, "arrests.hgb", " ".join(str(err).split())) from None
    return dict(options)


@config_dataclass
class ArrestsConfig:
    """The arrests comparison: inner cross-validation, boosting options and the methods run.

    Attributes
    ----------
    inner_cv
        Per raw classifier (``lr``, ``hgb``): ``None`` fits the transform on the
        training scores, ``k`` on ``k``-fold out-of-fold scores.
    hgb
        Options of scikit-learn's ``HistGradientBoostingClassifier``
        (``random_state`` is the study's seed).
    methods
        The methods run, in the study's order; ``None`` runs them all.
    """

    inner_cv: Mapping[str, int | None] = option(
        default_factory=lambda: dict(_INNER_CV),
        doc="per raw classifier (lr, hgb): the folds of the out-of-fold scores the transform "
        "is fitted on, or null to fit it on the training scores",
        check=_inner_cv,
        type="{lr: integer or null, hgb: integer or null}",
    )
    hgb: Mapping[str, Any] = option(
        default_factory=dict,
        doc="options of scikit-learn's HistGradientBoostingClassifier (random_state is the seed)",
        check=_hgb_options,
    )
    methods: tuple[str, ...] | None = option(
        default=None,
        doc=f"the methods run, among {', '.join(METHODS)}; null runs them all",
        check=_methods,
        type="list of method names, or null",
    )


@config_dataclass
class DigitsConfig:
    """The digits: two classes, the classifier's regularisation, folds and resamplings.

    Attributes
    ----------
    classes
        The negative digit (it defines the transform) and the positive one.
    C
        Inverse regularisation strength of the logistic regression.
    inner_cv
        Folds of the out-of-fold scores the transform is fitted on.
    folds, permutations, bootstrap
        As at the top level, which they default to.
    """

    folds: int = option(
        default=5,
        doc="stratified folds of the digits",
        check=_folds,
        default_doc="the top level's folds",
    )
    permutations: int = option(
        default=200,
        doc="permutations of the digits' dCor² floor",
        check=count,
        default_doc="the top level's permutations",
    )
    bootstrap: int = option(
        default=200,
        doc="paired bootstrap resamplings of the digits",
        check=_at_least_two,
        default_doc="the top level's bootstrap",
    )
    classes: tuple[int, int] = option(
        default=(5, 9),
        doc="the negative digit (it defines the transform) and the positive one",
        check=_classes,
    )
    C: float = option(
        default=0.1,
        doc="inverse regularisation strength of the logistic regression",
        check=positive,
    )
    inner_cv: int = option(
        default=5, doc="folds of the out-of-fold scores the transform is fitted on", check=_folds
    )


@config_dataclass
class FairnessConfig(StudyConfig):
    """A validated ``study: fairness`` configuration; each field is one key of the file.

    Attributes
    ----------
    name, source
        The study's name and the configuration file read.
    seed
        Seed of the folds, the classifiers, the permutations and the bootstraps.
    threads
        BLAS and OpenMP threads.
    folds, bootstrap, permutations
        Stratified folds shared by every method, paired bootstrap resamplings
        and permutations of the dCor² floor.
    age_groups
        Quantile groups of age for the parity spreads.
    working_points
        Fractions of people rejected at which the spreads are computed.
    rate_working_points
        Fractions rejected at which the rates of every group are tabulated.
    arrests, digits
        The two data sets' sections.
    dcc_floor_ratio_max
        The claims' bound on dCor² over its permutation floor.
    """

    seed: int = option(
        default=0,
        doc="seed of the folds, the classifiers, the permutations and the bootstraps",
        check=seed,
    )
    threads: int = option(default=1, doc="BLAS and OpenMP threads", check=count)
    folds: int = option(default=5, doc="stratified folds shared by every method", check=_folds)
    bootstrap: int = option(default=200, doc="paired bootstrap resamplings", check=_at_least_two)
    permutations: int = option(default=200, doc="permutations of the dCor² floor", check=count)
    age_groups: int = option(
        default=5, doc="quantile groups of age for the parity spreads", check=_folds
    )
    working_points: tuple[float, ...] = option(
        default=tuple(float(q) for q in np.linspace(0.1, 0.9, 9)),
        doc="fractions of people rejected at which the spreads are computed, each in (0, 1)",
        check=_fractions,
    )
    rate_working_points: tuple[float, ...] = option(
        default=(0.2, 0.5, 0.8),
        doc="fractions rejected at which the rates of every group are tabulated, each in (0, 1)",
        check=_fractions,
    )
    arrests: ArrestsConfig = option(
        default_factory=ArrestsConfig, doc="the arrests comparison", check=ArrestsConfig
    )
    digits: DigitsConfig = option(
        default_factory=DigitsConfig, doc="the digits comparison", check=DigitsConfig
    )
    dcc_floor_ratio_max: float = option(
        default=2.0,
        key="claims.dcc_floor_ratio_max",
        doc="the claims' bound on dCor² over its permutation floor",
        check=positive,
    )

    @classmethod
    def parse(cls, config: Mapping[str, Any]) -> FairnessConfig:
        """Validate a configuration read by :func:`rosenblatt.studies.config.load_config`."""
        cfg: FairnessConfig = cls.read(config)
        digits = config.get("digits") or {}
        shared = {key: getattr(cfg, key) for key in _SHARED if key not in digits}
        return replace(cfg, digits=replace(cfg.digits, **shared))
