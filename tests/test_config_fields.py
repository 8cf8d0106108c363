"""Configuration dataclasses parsed from their own fields: values, defaults, sections, messages."""

from __future__ import annotations

import ast
import dataclasses
import re
from collections.abc import Mapping
from typing import Any

import pytest

from rosenblatt.studies.config_checks import ConfigError, count, flag, number
from rosenblatt.studies.config_fields import (
    ConfigKey,
    config_dataclass,
    config_keys,
    option,
    parse_dataclass,
)


@config_dataclass
class Sizes:
    """A section."""

    n_defining: int = option(doc="defining events", check=count)
    n_testing: int = option(default=10, doc="testing events", check=count)
    rho: float = option(default=0.0, doc="correlation", check=number)


@config_dataclass
class Toy:
    """A study's configuration."""

    source: str = dataclasses.field(metadata={"doc": "the file"})
    sizes: Sizes = option(doc="the sizes", check=Sizes, only=("n_defining", "n_testing"))
    depths: tuple[int, ...] = option(
        key="irgi.depths",
        doc="depths",
        check=lambda value, source, key: tuple(count(v, source, key) for v in value),
    )
    seed: int = option(default=0, doc="the seed", check=count)
    plots: bool = option(default=False, doc="draw", check=flag)
    bound: float = option(default=6e-4, key="claims.bound", doc="a bound", check=number)
    extra: Mapping[str, Any] | None = option(
        default_factory=dict, doc="options", check=lambda v, s, k: dict(v)
    )


GOOD = {"_path": "toy.yaml", "study": "toy", "sizes": {"n_defining": 5}, "irgi": {"depths": [2]}}


def parse(config: Mapping[str, Any]) -> Toy:
    return parse_dataclass(
        Toy, config, "toy.yaml", given={"source": "toy.yaml"}, extra_keys=("study",)
    )


def test_values_defaults_and_sections() -> None:
    toy = parse(GOOD)
    assert toy == Toy(
        source="toy.yaml", sizes=Sizes(5, 10, 0.0), depths=(2,), seed=0, bound=6e-4, extra={}
    )
    given = parse(
        {**GOOD, "seed": 3, "plots": True, "claims": {"bound": 1}, "sizes": {"n_defining": 7}}
    )
    assert (given.seed, given.plots, given.bound, given.sizes.n_defining) == (3, True, 1.0, 7)
    assert parse({**GOOD, "claims": None}).bound == 6e-4


def test_defaults_given_by_the_caller_replace_the_fields() -> None:
    toy = parse_dataclass(
        Toy, GOOD, "toy.yaml", given={"source": "s"}, defaults={"seed": 9}, extra_keys=("study",)
    )
    assert toy.seed == 9
    assert parse_dataclass(Sizes, {"n_defining": 1}, "f", "sizes", defaults={"rho": 0.5}).rho == 0.5


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        ({"sead": 1}, "toy.yaml: top level: unknown key(s) ['sead']; known: ["),
        ({"claims": {"bond": 1}}, "toy.yaml: claims: unknown key(s) ['bond']; known: ['bound']"),
        ({"sizes": {"n_defining": 5, "rho": 0.1}}, "toy.yaml: sizes: unknown key(s) ['rho']"),
        ({"sizes": None}, "toy.yaml: sizes.n_defining: missing"),
        ({"irgi": {}}, "toy.yaml: irgi.depths: missing"),
        ({"irgi": None}, "toy.yaml: irgi: missing"),
        ({"irgi": [2]}, "toy.yaml: irgi: must be a mapping, got list"),
        ({"sizes": "big"}, "toy.yaml: sizes: must be a mapping, got str"),
        ({"seed": -1}, "toy.yaml: seed: must be an integer >= 1, got -1"),
        ({"sizes": {"n_defining": True}}, "toy.yaml: sizes.n_defining: must be an integer >= 1"),
        ({"plots": "yes"}, "toy.yaml: plots: must be true or false, got 'yes'"),
        ({"claims": {"bound": "x"}}, "toy.yaml: claims.bound: must be a number, got 'x'"),
    ],
)
def test_mistakes_name_file_and_key(edit: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=f"^{re.escape(message)}"):
        parse({**GOOD, **edit})


def test_a_missing_section_is_named() -> None:
    config = {k: v for k, v in GOOD.items() if k != "sizes"}
    with pytest.raises(ConfigError, match=r"^toy\.yaml: sizes: missing$"):
        parse(config)


def test_config_keys_list_every_key_with_type_default_and_doc() -> None:
    assert config_keys(Toy) == [
        ConfigKey("sizes.n_defining", "integer", "required", "defining events"),
        ConfigKey("sizes.n_testing", "integer", "10", "testing events"),
        ConfigKey("irgi.depths", "list of integer", "required", "depths"),
        ConfigKey("seed", "integer", "0", "the seed"),
        ConfigKey("plots", "true or false", "false", "draw"),
        ConfigKey("claims.bound", "number", "0.0006", "a bound"),
        ConfigKey("extra", "mapping or null", "{}", "options"),
    ]


@config_dataclass
class Entry:
    """One entry of a list or mapping."""

    path: str = option(doc="a file", check=lambda v, s, k: str(v))
    weight: float = option(default=1.0, doc="its weight", check=number)


@config_dataclass
class WithEntries:
    """Entries in a list and in a mapping."""

    files: tuple[Entry, ...] = option(
        default=(),
        doc="files",
        check=lambda v, s, k: tuple(
            parse_dataclass(Entry, e, s, f"{k}[{i}]") for i, e in enumerate(v)
        ),
        each=Entry,
    )
    named: dict[str, Entry] = option(
        default_factory=dict,
        doc="named files",
        check=lambda v, s, k: {n: parse_dataclass(Entry, e, s, f"{k}.{n}") for n, e in v.items()},
        each=Entry,
    )


def test_the_keys_of_each_entry_are_listed_below_theirs() -> None:
    assert config_keys(WithEntries) == [
        ConfigKey("files", "list of Entry", "[]", "files"),
        ConfigKey("files[].path", "text", "required", "a file"),
        ConfigKey("files[].weight", "number", "1.0", "its weight"),
        ConfigKey("named", "mapping", "{}", "named files"),
        ConfigKey("named.NAME.path", "text", "required", "a file"),
        ConfigKey("named.NAME.weight", "number", "1.0", "its weight"),
    ]
    parsed = parse_dataclass(
        WithEntries,
        {"files": [{"path": "a"}], "named": {"b": {"path": "b", "weight": 2}}},
        "w.yaml",
    )
    assert parsed.files == (Entry("a", 1.0),)
    assert parsed.named == {"b": Entry("b", 2.0)}


@pytest.mark.parametrize(
    ("module", "name"),
    [
        ("abcd.config", "AbcdConfig"),
        ("blobs.config", "BlobsConfig"),
        ("fairness.config", "FairnessConfig"),
        ("lhco.config", "LhcoConfig"),
        ("lhco.config_2d", "Lhco2dConfig"),
    ],
)
def test_the_studies_document_every_key_they_accept(module: str, name: str) -> None:
    import importlib

    cls = getattr(importlib.import_module(f"rosenblatt.studies.{module}"), name)
    keys = config_keys(cls)
    assert len({k.key for k in keys}) == len(keys)
    assert all(k.doc and k.type and k.default for k in keys)
    with pytest.raises(ConfigError, match="unknown key") as error:
        cls.parse({"_path": "x.yaml", "no_such_key": 1})
    known = ast.literal_eval(str(error.value).split("known: ")[1])
    assert {k.key.split(".")[0].removesuffix("[]") for k in keys} | {"study"} == set(known)


def test_study_keys_name_the_study_first() -> None:
    from rosenblatt.studies import STUDIES
    from rosenblatt.studies.config_fields import study_keys

    for study in STUDIES:
        keys = study_keys(study)
        assert keys[0] == ConfigKey("study", "text", "required", f"the study: {study}")
        assert len(keys) > 5
    with pytest.raises(KeyError, match="no field-by-field configuration of the study 'nope'"):
        study_keys("nope")
