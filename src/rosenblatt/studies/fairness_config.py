"""The configuration of the fairness study (``study: fairness``), validated when loaded.

An unknown key, a value of the wrong type or out of range is an error that
names the key and the configuration file (see ``configs/fairness.yaml``).
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from rosenblatt.studies.config_checks import (
    check_keys,
    check_top_level,
    count,
    fail,
    mapping,
    number,
    numbers,
    seed,
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

_TOP_KEYS = {
    "study",
    "name",
    "seed",
    "threads",
    "folds",
    "bootstrap",
    "permutations",
    "age_groups",
    "working_points",
    "rate_working_points",
    "arrests",
    "digits",
    "claims",
}

#: the most folds (and age groups); the digits hold about 180 images of each class
MAX_FOLDS = 100

#: inner cross-validation of the decorrelating transform, per raw classifier
_INNER_CV: dict[str, int | None] = {"lr": None, "hgb": 5}


@dataclass(frozen=True)
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

    inner_cv: Mapping[str, int | None] = field(default_factory=lambda: dict(_INNER_CV))
    hgb: Mapping[str, Any] = field(default_factory=dict)
    methods: tuple[str, ...] | None = None

    @classmethod
    def parse(cls, value: Any, source: str) -> ArrestsConfig:
        """Validate ``arrests:``."""
        entry = mapping(value or {}, source, "arrests")
        check_keys(entry, {"inner_cv", "hgb", "methods"}, source, "arrests")
        inner = mapping(entry.get("inner_cv") or {}, source, "arrests.inner_cv")
        check_keys(inner, _INNER_CV, source, "arrests.inner_cv")
        inner_cv = dict(_INNER_CV)
        for base, folds in inner.items():
            key = f"arrests.inner_cv.{base}"
            inner_cv[base] = None if folds is None else count(folds, source, key, 2, MAX_FOLDS)
        return cls(
            inner_cv=inner_cv,
            hgb=_hgb_options(entry.get("hgb") or {}, source),
            methods=_methods(entry.get("methods"), source),
        )


@dataclass(frozen=True)
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

    folds: int
    permutations: int
    bootstrap: int
    classes: tuple[int, int] = (5, 9)
    C: float = 0.1
    inner_cv: int = 5

    @classmethod
    def parse(
        cls, value: Any, source: str, folds: int, permutations: int, bootstrap: int
    ) -> DigitsConfig:
        """Validate ``digits:``; ``folds``, ``permutations`` and ``bootstrap`` are the defaults."""
        entry = mapping(value or {}, source, "digits")
        check_keys(
            entry,
            {"classes", "C", "inner_cv", "folds", "permutations", "bootstrap"},
            source,
            "digits",
        )
        classes = entry.get("classes", [5, 9])
        if not isinstance(classes, (list, tuple)) or len(classes) != 2:
            raise fail(source, "digits.classes", f"must be a list of two digits, got {classes!r}")
        negative, positive = (count(c, source, "digits.classes", 0) for c in classes)
        if negative > 9 or positive > 9 or negative == positive:
            raise fail(
                source, "digits.classes", f"must be two distinct digits 0 to 9, got {classes!r}"
            )
        C = number(entry.get("C", 0.1), source, "digits.C")
        if C <= 0:
            raise fail(source, "digits.C", f"must be positive, got {C}")
        return cls(
            folds=count(entry.get("folds", folds), source, "digits.folds", 2, MAX_FOLDS),
            permutations=count(
                entry.get("permutations", permutations), source, "digits.permutations"
            ),
            bootstrap=count(entry.get("bootstrap", bootstrap), source, "digits.bootstrap", 2),
            classes=(negative, positive),
            C=C,
            inner_cv=count(entry.get("inner_cv", 5), source, "digits.inner_cv", 2, MAX_FOLDS),
        )


@dataclass(frozen=True)
class FairnessConfig:
    """A validated ``study: fairness`` configuration.

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

    name: str
    source: str
    seed: int = 0
    threads: int = 1
    folds: int = 5
    bootstrap: int = 200
    permutations: int = 200
    age_groups: int = 5
    working_points: tuple[float, ...] = tuple(float(q) for q in np.linspace(0.1, 0.9, 9))
    rate_working_points: tuple[float, ...] = (0.2, 0.5, 0.8)
    arrests: ArrestsConfig = field(default_factory=ArrestsConfig)
    digits: DigitsConfig = field(default_factory=lambda: DigitsConfig(5, 200, 200))
    dcc_floor_ratio_max: float = 2.0

    @classmethod
    def parse(cls, config: Mapping[str, Any]) -> FairnessConfig:
        """Validate a configuration read by :func:`rosenblatt.config.load_config`."""
        source = check_top_level(config, _TOP_KEYS)
        defaults = cls(name="", source="")
        claims = mapping(config.get("claims") or {}, source, "claims")
        check_keys(claims, {"dcc_floor_ratio_max"}, source, "claims")
        ratio = number(
            claims.get("dcc_floor_ratio_max", defaults.dcc_floor_ratio_max),
            source,
            "claims.dcc_floor_ratio_max",
        )
        if ratio <= 0:
            raise fail(source, "claims.dcc_floor_ratio_max", f"must be positive, got {ratio}")
        folds = count(config.get("folds", defaults.folds), source, "folds", 2, MAX_FOLDS)
        bootstrap = count(config.get("bootstrap", defaults.bootstrap), source, "bootstrap", 2)
        permutations = count(
            config.get("permutations", defaults.permutations), source, "permutations"
        )
        return cls(
            name=str(config.get("name", Path(source).stem)),
            source=source,
            seed=seed(config.get("seed", defaults.seed), source, "seed"),
            threads=count(config.get("threads", defaults.threads), source, "threads"),
            folds=folds,
            bootstrap=bootstrap,
            permutations=permutations,
            age_groups=count(
                config.get("age_groups", defaults.age_groups), source, "age_groups", 2, MAX_FOLDS
            ),
            working_points=_fractions(
                config.get("working_points", list(defaults.working_points)),
                source,
                "working_points",
            ),
            rate_working_points=_fractions(
                config.get("rate_working_points", list(defaults.rate_working_points)),
                source,
                "rate_working_points",
            ),
            arrests=ArrestsConfig.parse(config.get("arrests"), source),
            digits=DigitsConfig.parse(config.get("digits"), source, folds, permutations, bootstrap),
            dcc_floor_ratio_max=ratio,
        )


def _fractions(value: Any, source: str, key: str) -> tuple[float, ...]:
    """A non-empty list of fractions, each in (0, 1)."""
    values = numbers(value, source, key)
    if any(not 0 < v < 1 for v in values):
        raise fail(source, key, f"must be fractions in (0, 1), got {list(values)}")
    return values


def _methods(value: Any, source: str) -> tuple[str, ...] | None:
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


def _hgb_options(value: Any, source: str) -> dict[str, Any]:
    """``arrests.hgb``: keyword arguments of ``HistGradientBoostingClassifier``."""
    from sklearn.ensemble import HistGradientBoostingClassifier

    options = mapping(value, source, "arrests.hgb")
    known = set(inspect.signature(HistGradientBoostingClassifier).parameters) - {"random_state"}
    check_keys(options, known, source, "arrests.hgb")
    try:
        # scikit-learn's own check of the values, as its fit would do it
        HistGradientBoostingClassifier(**{str(k): v for k, v in options.items()})._validate_params()
    except (TypeError, ValueError) as err:
        raise fail(source, "arrests.hgb", " ".join(str(err).split())) from None
    return dict(options)
