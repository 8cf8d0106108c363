"""Fuzzing of the study configurations: every mutated file ends in a run start or in one line.

For every study kind (``blobs``, ``fairness``, ``lhco``, ``lhco-2d``, ``abcd``)
the shipped configurations (and, for ``abcd``, configurations of small ROOT
files written here) are mutated — keys dropped, renamed, duplicated,
retyped; numbers negative, zero, huge, NaN, infinite; lists emptied; strings
where mappings are expected and back; paths to missing files, folders,
``/dev/null`` and binary files — and written as YAML, whose text is mutated
in turn (lines duplicated or dropped, bytes that are not UTF-8, truncation).
Each file is given to ``rosenblatt run FILE --output FOLDER`` within a few
seconds, with every study's ``run`` replaced by its validation: the study's
configuration ``parse`` and, for ``abcd`` without a ``generate:`` block, the
preflight of every file. So nothing is generated or trained, and each case
must end either in exit status 0 (the validated run would start) or in exit
status 2 with exactly one line on stderr, ``<file>: <key>: <what is wrong>``,
whose key is a key of the configuration (``top level`` and ``line N`` where
the file itself is at fault); never a traceback and never a hang.

Shipped files are also edited byte by byte, comments and all, and arbitrary
bytes are given as configurations. ``test_found_cases`` pins each mistake the
fuzz found.

The regular suite runs about 800 cases (100 per study and per kind of file
mutation, derandomized: the same cases every run) in about 25 s on 2 cores;
the ``slow`` tests another 2,800 drawn afresh each run (400 per study and
per kind, about 50 s). ``ROSENBLATT_CONFIG_FUZZ_EXAMPLES`` sets the slow
tests' cases per study (e.g. 5000 for a long fuzzing run).
"""

from __future__ import annotations

import io
import itertools
import json
import math
import os
import re
import signal
from collections.abc import Callable, Iterator
from contextlib import contextmanager, redirect_stderr
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st

from rosenblatt.cli import main
from rosenblatt.config import load_config

awkward = pytest.importorskip("awkward")
uproot = pytest.importorskip("uproot")

#: cases per study in the regular suite, and in the slow tests
REGULAR = 100
SLOW = int(os.environ.get("ROSENBLATT_CONFIG_FUZZ_EXAMPLES", "400"))
#: seconds one case may take before it counts as a hang
HANG_SECONDS = 20

#: the shipped configurations fuzzed, per study
SHIPPED = {
    "blobs": ("blobs", "blobs-1e6"),
    "fairness": ("fairness",),
    "lhco": ("lhco-smoke", "lhco-quick", "lhco-paper"),
    "lhco-2d": ("lhco-2d",),
    "abcd": ("abcd-example", "ntuple-example", "nanoaod-example"),
}
#: the abcd configurations of the files written here
OWN_ABCD = ("ntuple", "nanoaod", "legacy")

#: top-level keys of every study: the first part of a key named in a message
TOP_KEYS = frozenset(
    {
        "study",
        "name",
        "seed",
        # blobs
        "background",
        "signal",
        "n_subsamples",
        "permutations",
        "whole_sample",
        "whole_sample_permutations",
        "irgi",
        "kde",
        "figures",
        "variants",
        "peers",
        "claims",
        # fairness
        "threads",
        "folds",
        "bootstrap",
        "age_groups",
        "working_points",
        "rate_working_points",
        "arrests",
        "digits",
        # lhco, lhco-2d
        "data",
        "partition",
        "features",
        "classifier",
        "disco",
        "disco_selection",
        "selection",
        "abcd",
        "statistics",
        "decorrelation",
        # abcd
        "datasets",
        "lumi",
        "treename",
        "schema",
        "jets",
        "blind",
        "generate",
        "defining",
        "fileset",
        "score",
        "transforms",
        "executor",
        "skip_bad_files",
        "max_gather_events",
        "plane",
    }
)
#: where the file itself is at fault, the "key" is the top level or a line
_FILE_LEVEL = re.compile(r"^(top level|line \d+(, column \d+)?)$")

_counter = itertools.count()


# ---------------------------------------------------------------- the files


@dataclass(frozen=True, repr=False)
class Files:
    """The folder of the cases and the files they may name."""

    folder: Path
    missing: Path
    binary: Path
    empty: Path
    transform: Path
    function: Path

    def __repr__(self) -> str:
        return f"Files({str(self.folder)!r})"

    def paths(self) -> list[str]:
        """Paths a mutated value may take."""
        return [
            str(self.missing),
            str(self.folder),
            "/dev/null",
            str(self.binary),
            str(self.empty),
            str(self.transform),
            "missing.root",
            "cuts.py:no_such_function",
            f"{self.function}:selection",
            "no_such_module:function",
        ]


def _write_tree(path: Path, name: str, columns: dict[str, np.ndarray]) -> None:
    with uproot.recreate(path) as handle:
        handle.mktree(name, {key: value.dtype for key, value in columns.items()})
        handle[name].extend(columns)


def _ntuple_events(rng: np.random.Generator, n: int, signal: bool) -> dict[str, np.ndarray]:
    mass = rng.normal(3400.0, 150.0, n) if signal else 2000.0 + rng.exponential(600.0, n)
    score = np.clip(rng.beta(5.0 if signal else 2.0, 2.0 if signal else 5.0, n), 0.0, 1.0)
    return {
        "m_jj_reco": mass,
        "tagger_out": score,
        "w_mc": rng.choice([-0.5, 1.0, 1.5], n, p=[0.1, 0.6, 0.3]),
        "label": np.full(n, int(signal), dtype=np.int32),
    }


def _write_nanoaod(path: Path, rng: np.random.Generator, n: int) -> None:
    from rosenblatt.io.nanoaod import FATJET_FIELDS, NanoAODWriter

    counts = rng.integers(0, 4, n)
    total = int(counts.sum())
    fat_jets = awkward.zip(
        {
            field: awkward.unflatten(rng.uniform(0.0, 1.0, total) * scale, counts)
            for field, scale in zip(
                FATJET_FIELDS, (1500.0, 2.0, 3.0, 300.0, 200.0, 1.0, 1.0, 1.0, 1.0), strict=True
            )
        }
    )
    writer = NanoAODWriter.create(path, weighted=True)
    writer.append(np.arange(n), fat_jets, rng.choice([-1.0, 1.0], n, p=[0.1, 0.9]))
    writer.close()


@pytest.fixture(scope="module", autouse=True)
def own_working_folder(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Run the cases in a folder of their own.

    The shipped configurations keep their events in folders relative to the
    working folder (``data/lhco-paper``): a run of one of them on this machine
    holds that folder's lock, which a case started from the same folder would
    wait for.
    """
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(tmp_path_factory.mktemp("working-folder"))
        yield


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> Files:
    """Small ntuples, NanoAOD files, a saved transform and a user's function."""
    import rosenblatt as rb

    folder = tmp_path_factory.mktemp("config-fuzz")
    rng = np.random.default_rng(11)
    for name, n, is_signal in (("qcd_def", 3000, False), ("qcd", 1500, False), ("sig", 300, True)):
        _write_tree(folder / f"{name}.root", "nominal", _ntuple_events(rng, n, is_signal))
    data = {
        key: np.concatenate([a, b])
        for (key, a), b in zip(
            _ntuple_events(rng, 1500, False).items(),
            _ntuple_events(rng, 30, True).values(),
            strict=True,
        )
    }
    _write_tree(folder / "data.root", "nominal", data)
    for name, n in (("nano_def", 2000), ("nano_qcd", 1000), ("nano_sig", 200)):
        _write_nanoaod(folder / f"{name}.root", rng, n)
    x = rng.uniform(0.0, 1.0, 2000)
    transform = folder / "irgi.json"
    rb.IRGI(depth=3).fit(x, rng.uniform(0.0, 1.0, 2000) * x).save(transform)
    function = folder / "cuts.py"
    function.write_text(
        "import numpy as np\n\n\ndef selection(events):\n    return np.ones(len(events))\n",
        encoding="utf-8",
    )
    binary = folder / "binary.root"
    binary.write_bytes(bytes(range(256)) * 4)
    empty = folder / "empty.root"
    empty.write_bytes(b"")
    return Files(folder, folder / "missing.root", binary, empty, transform, function)


def own_abcd(files: Files) -> dict[str, dict[str, Any]]:
    """abcd configurations of the files written here: ntuples, NanoAOD and the older layout."""
    folder = files.folder
    common = {
        "study": "abcd",
        "transforms": [
            {"kind": "irgi", "depth": 3},
            {"kind": "gridkde", "sigma_r": 0.2, "name": "grid"},
            {"kind": "kde", "sigma_r": 0.1},
            {"file": str(files.transform), "name": "saved"},
        ],
        "executor": {"kind": "iterative", "chunksize": 5000},
        "statistics": {"n_boot": 0, "seed": 1},
        "data": {"folder": str(folder / "cache")},
        "max_gather_events": 100000,
    }
    ntuple = {
        **common,
        "treename": "nominal",
        "lumi": 3.0,
        "datasets": {
            "qcd-defining": {
                "files": ["qcd_def.root"],
                "role": "defining",
                "weight": "w_mc",
                "xsec": 2000.0,
            },
            "qcd": {"files": [str(folder / "qcd.root")], "role": "background", "weight": "w_mc"},
            "sig": {"files": "sig.root", "role": "signal", "weight": "w_mc", "xsec": 10.0},
            "data": {"files": ["data.root"], "role": "data"},
        },
        "defining": {"datasets": ["qcd-defining"], "selection": {"function": "cuts.py:selection"}},
        "score": "tagger_out",
        "abcd": {
            "x": "m_jj_reco",
            "x0": [2200.0, 3800.0],
            "n_x0": 5,
            "y0": [0.1, 0.3, 0.5, 0.9],
            "x_max": 6000.0,
            "cut": {"x0": 3000.0, "y0": 0.5},
        },
        "blind": False,
        "skip_bad_files": False,
        "plane": [2000.0, 5000.0],
    }
    nanoaod = {
        **common,
        "schema": "nanoaod",
        "jets": "FatJet",
        "lumi": 10.0,
        "datasets": {
            "qcd-defining": {"files": ["nano_def.root"], "role": "defining", "weight": "genWeight"},
            "qcd": {"files": ["nano_qcd.root"], "role": "background", "xsec": 4.6},
            "sig": {
                "files": ["nano_sig.root"],
                "role": "signal",
                "weight": "FatJet.tagger[0]",
                "xsec": 0.1,
            },
        },
        "score": "FatJet.tagger[0]",
        "abcd": {"x": "mjj", "x0": [2400.0, 3800.0], "n_x0": 4, "y0": [0.1, 0.9], "n_y0": 3},
        "blind": True,
    }
    legacy = {
        **common,
        "treename": "nominal",
        "defining": {"qcd-defining": ["qcd_def.root"]},
        "fileset": {"qcd": ["qcd.root"], "sig": ["sig.root"]},
        "score": {"column": "tagger_out"},
        "abcd": {"x": "m_jj_reco", "x0": [2200.0, 3000.0, 3800.0], "y0": [0.2, 0.8]},
    }
    return {"ntuple": ntuple, "nanoaod": nanoaod, "legacy": legacy}


def shipped(name: str) -> dict[str, Any]:
    """A shipped configuration as a plain mapping (its name left to the file's)."""
    config = load_config(name)
    config.pop("_path")
    config.pop("name")
    return config


class Bases(dict[str, dict[str, dict[str, Any]]]):
    """``{study: {label: configuration}}``: what is mutated (short in hypothesis' reports)."""

    def __repr__(self) -> str:
        return f"Bases({ {study: sorted(configs) for study, configs in self.items()} })"


@pytest.fixture(scope="module")
def bases(files: Files) -> Bases:
    """The configurations mutated, per study."""
    found = Bases(
        {study: {name: shipped(name) for name in names} for study, names in SHIPPED.items()}
    )
    found["abcd"].update(own_abcd(files))
    return found


# ------------------------------------------------- the run, validation only


def _validation(study: str) -> Callable[[dict[str, Any], Path], dict[str, Any]]:
    """A study's ``run`` that validates only: parse, and the abcd preflight of existing files."""

    def run(config: dict[str, Any], folder: Path) -> dict[str, Any]:
        if study == "abcd":
            from rosenblatt.studies.abcd.config import AbcdConfig
            from rosenblatt.studies.abcd.preflight import preflight

            cfg = AbcdConfig.parse(config)
            if not cfg.generate:
                preflight(cfg)
            return {}
        if study == "blobs":
            from rosenblatt.studies.blobs.config import BlobsConfig

            BlobsConfig.parse(config)
        elif study == "fairness":
            from rosenblatt.studies.fairness.config import FairnessConfig

            FairnessConfig.parse(config)
        elif study == "lhco":
            from rosenblatt.studies.lhco.config import LhcoConfig

            LhcoConfig.parse(config)
        else:
            from rosenblatt.studies.lhco.config_2d import Lhco2dConfig

            Lhco2dConfig.parse(config)
        return {}

    return run


@pytest.fixture(scope="module")
def validate_only() -> Iterator[None]:
    """Replace every study's ``run`` by its validation, so that no case generates or trains."""
    import importlib

    from rosenblatt.studies import STUDIES

    with pytest.MonkeyPatch.context() as patch:
        for study, entry in STUDIES.items():
            patch.setattr(importlib.import_module(entry.module), "run", _validation(study))
        yield


@contextmanager
def no_hang(seconds: int = HANG_SECONDS) -> Iterator[None]:
    """Fail the case if the body runs longer than ``seconds``."""

    def expire(signum: int, frame: Any) -> None:
        raise AssertionError(f"no result after {seconds} s: the configuration's check hangs")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def run_config(path: Path | str, output: Path) -> tuple[int, str]:
    """``rosenblatt run PATH --output OUTPUT``: the exit status and the one error line, if any."""
    stderr = io.StringIO()
    with no_hang(), redirect_stderr(stderr):
        status = main(["run", str(path), "--output", str(output)])
    lines = stderr.getvalue().splitlines()
    if status == 0:
        return status, ""
    assert status == 2, (status, lines)
    assert len(lines) == 1, lines
    return status, lines[0]


def check_message(line: str, path: Path | str) -> str:
    """The key named by an error line ``rosenblatt run: error: <path>: <key>: <what>``."""
    prefix = "rosenblatt run: error: "
    assert line.startswith(prefix), line
    message = line[len(prefix) :]
    assert message.startswith(f"{path}: "), f"the message does not start with the file: {line}"
    key, sep, what = message[len(str(path)) + 2 :].partition(": ")
    assert sep, f"the message names no key: {line}"
    assert what.strip(), f"the message says nothing about {key!r}: {line}"
    assert "Traceback" not in line
    first = re.split(r"[.\[]", key, maxsplit=1)[0]
    assert _FILE_LEVEL.match(key) or first in TOP_KEYS, f"{key!r} is not a key: {line}"
    return key


def outcome(path: Path | str, files: Files) -> tuple[int, str]:
    """Run a configuration file; the exit status and the key named (``""`` when it starts)."""
    status, line = run_config(path, files.folder / "out")
    return status, "" if status == 0 else check_message(line, path)


# ------------------------------------------------------------ the mutations

#: values a mutated entry may take (``@...`` placeholders are paths of :class:`Files`)
SPECIAL = [
    None,
    True,
    False,
    0,
    1,
    -1,
    2,
    0.5,
    -0.5,
    1e-300,
    1e308,
    -1e308,
    math.nan,
    math.inf,
    -math.inf,
    10**20,
    -(10**20),
    2**63,
    2**64,
    "",
    " ",
    "x",
    "auto",
    "mjj",
    "FatJet.pt[0]",
    "FatJet.pt[99999999999999999999]",
    "a.b.c[0]",
    "1e3",
    "nan",
    "yes",
    [],
    [0],
    [1, 2],
    [-1, -2],
    [math.nan, 1.0],
    [[1, 2], [3, 4]],
    ["x"],
    [None],
    {},
    {"a": 1},
    {"function": "cuts.py:selection"},
    {"function": "x"},
    {"xgboost": "model.json", "features": []},
    {"column": "mjj", "negate": True},
    {"kind": "irgi"},
    {"files": []},
    "@missing",
    "@folder",
    "@devnull",
    "@binary",
    "@empty",
    "@transform",
    "@function",
]
_PLACEHOLDERS = {
    "@missing": lambda f: str(f.missing),
    "@folder": lambda f: str(f.folder),
    "@devnull": lambda f: "/dev/null",
    "@binary": lambda f: str(f.binary),
    "@empty": lambda f: str(f.empty),
    "@transform": lambda f: str(f.transform),
    "@function": lambda f: f"{f.function}:selection",
}

_TEXT = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"),
    max_size=8,
)
VALUES = st.one_of(
    st.sampled_from(SPECIAL),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(),
    _TEXT,
)
#: structural mutations of the mapping
TREE_OPS = (
    "drop",
    "rename",
    "replace",
    "number",
    "empty",
    "wrap",
    "unwrap",
    "stringify",
    "nest",
    "path",
    "copy",
)
#: mutations of the YAML text
TEXT_OPS = (
    "duplicate_line",
    "drop_line",
    "insert",
    "truncate",
    "not_utf8",
    "tab",
    "bom",
)


def _nodes(tree: Any, where: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every entry below the top, as a path of keys and indices."""
    found = []
    items: Any = (
        tree.items()
        if isinstance(tree, dict)
        else enumerate(tree)
        if isinstance(tree, list)
        else ()
    )
    for key, value in items:
        found.append((*where, key))
        found.extend(_nodes(value, (*where, key)))
    return found


def _parent(tree: Any, path: tuple[Any, ...]) -> Any:
    for key in path[:-1]:
        tree = tree[key]
    return tree


def _resolve_value(value: Any, files: Files) -> Any:
    if isinstance(value, str) and value in _PLACEHOLDERS:
        return _PLACEHOLDERS[value](files)
    if isinstance(value, list):
        return [_resolve_value(v, files) for v in value]
    if isinstance(value, dict):
        return {k: _resolve_value(v, files) for k, v in value.items()}
    return value


def _number(old: Any, choice: int) -> Any:
    base = old if isinstance(old, (int, float)) and not isinstance(old, bool) else 1
    options = [
        -base,
        0,
        0.0,
        base * 10**12,
        base + 0.5,
        math.nan,
        math.inf,
        -math.inf,
        float(base),
        int(base) if math.isfinite(base) else 0,
        2**63,
        -1,
    ]
    return options[choice % len(options)]


def _unwrap(old: Any) -> Any:
    if isinstance(old, list) and old:
        return old[0]
    return next(iter(old.values())) if isinstance(old, dict) and old else None


#: structural mutations that replace an entry by a function of its value (and of the choice)
_REPLACE: dict[str, Callable[[Any, int, Files], Any]] = {
    "number": lambda old, choice, files: _number(old, choice),
    "empty": lambda old, choice, files: [] if not isinstance(old, dict) else {},
    "wrap": lambda old, choice, files: [old],
    "unwrap": lambda old, choice, files: _unwrap(old),
    "stringify": lambda old, choice, files: str(old),
    "nest": lambda old, choice, files: {
        str(old) if not isinstance(old, (dict, list)) else "x": old
    },
    "path": lambda old, choice, files: files.paths()[choice % len(files.paths())],
}


def mutate(config: dict[str, Any], ops: list[tuple[str, int, Any]], files: Files) -> dict[str, Any]:
    """Apply structural mutations to a copy of ``config``."""
    tree = json.loads(json.dumps(config))
    for op, choice, drawn in ops:
        nodes = _nodes(tree)
        if not nodes:
            continue
        # spread hypothesis' favourite small integers over the entries (0 is not always 'study')
        path = nodes[(choice * 7919 + 13) % len(nodes)]
        parent, key = _parent(tree, path), path[-1]
        value = _resolve_value(drawn, files)
        if op == "drop":
            del parent[key]
        elif op == "rename" and isinstance(parent, dict):
            new = value if isinstance(value, (str, int, float, bool)) or value is None else "x"
            new = f"{key}_" if new in parent else new
            parent[new] = parent.pop(key)
        elif op == "copy":
            # another entry's value: a right value at a wrong place
            other = nodes[(choice // 7) % len(nodes)]
            parent[key] = json.loads(json.dumps(_parent(tree, other)[other[-1]]))
        else:
            replace = _REPLACE.get(op)
            parent[key] = value if replace is None else replace(parent[key], choice, files)
    return tree


def mutate_text(text: bytes, ops: list[tuple[str, int, bytes]]) -> bytes:
    """Apply mutations to the YAML text."""
    for op, choice, drawn in ops:
        lines = text.split(b"\n")
        at = choice % max(len(lines), 1)
        if op == "duplicate_line":
            lines.insert(at, lines[at])
        elif op == "drop_line":
            del lines[at]
        elif op == "insert":
            line = lines[at]
            cut = choice % (len(line) + 1)
            lines[at] = line[:cut] + (drawn or b":") + line[cut:]
        elif op == "truncate":
            return text[: choice % (len(text) + 1)]
        elif op == "not_utf8":
            where = choice % (len(text) + 1)
            return text[:where] + b"\xff\xfe\x80" + text[where:]
        elif op == "tab":
            lines[at] = b"\t" + lines[at]
        else:
            return b"\xef\xbb\xbf" + text
        text = b"\n".join(lines)
    return text


def write_case(files: Files, data: bytes) -> Path:
    path = files.folder / f"case-{next(_counter)}.yaml"
    path.write_bytes(data)
    return path


def dump(config: Any) -> bytes:
    return yaml.safe_dump(config, sort_keys=False, allow_unicode=True).encode("utf-8")


TREE_MUTATIONS = st.lists(
    st.tuples(st.sampled_from(TREE_OPS), st.integers(0, 10**6), VALUES), min_size=1, max_size=3
)
TEXT_MUTATIONS = st.lists(
    st.tuples(st.sampled_from(TEXT_OPS), st.integers(0, 10**6), st.binary(max_size=4)),
    max_size=2,
)


def fuzz_case(
    files: Files,
    bases: Bases,
    study: str,
    label: int,
    tree_ops: list[tuple[str, int, Any]],
    text_ops: list[tuple[str, int, bytes]],
) -> tuple[int, str]:
    """Mutate one base configuration of ``study``, write it and run it."""
    configs = bases[study]
    name = sorted(configs)[label % len(configs)]
    mutated = mutate(configs[name], tree_ops, files)
    status, key = outcome(write_case(files, mutate_text(dump(mutated), text_ops)), files)
    event(f"exit status {status}")
    if key:
        event(f"key {re.sub(r'[0-9]+', 'N', key)}")
    return status, key


def _settings(examples: int) -> settings:
    return settings(
        max_examples=examples,
        deadline=None,
        derandomize=examples <= REGULAR,
        suppress_health_check=[
            HealthCheck.too_slow,
            HealthCheck.data_too_large,
            HealthCheck.function_scoped_fixture,
        ],
    )


STUDIES = tuple(SHIPPED)


# ------------------------------------------------------------------ the tests


@pytest.mark.parametrize("study", STUDIES)
def test_base_configurations_start(
    study: str,
    files: Files,
    bases: Bases,
    validate_only: None,
) -> None:
    """Every configuration fuzzed is itself valid: its cases start from a run that starts."""
    for name, config in bases[study].items():
        assert outcome(write_case(files, dump(config)), files) == (0, ""), name


@pytest.mark.slow
@pytest.mark.parametrize("study", STUDIES)
@_settings(REGULAR)
@given(
    label=st.integers(0, 10),
    tree_ops=TREE_MUTATIONS,
    text_ops=st.one_of(st.just([]), TEXT_MUTATIONS),
)
def test_mutated_configurations(
    study: str,
    files: Files,
    bases: Bases,
    validate_only: None,
    label: int,
    tree_ops: list[tuple[str, int, Any]],
    text_ops: list[tuple[str, int, bytes]],
) -> None:
    fuzz_case(files, bases, study, label, tree_ops, text_ops)


@pytest.mark.slow
@pytest.mark.parametrize("study", STUDIES)
@_settings(SLOW)
@given(label=st.integers(0, 10), tree_ops=TREE_MUTATIONS, text_ops=TEXT_MUTATIONS)
def test_mutated_configurations_at_length(
    study: str,
    files: Files,
    bases: Bases,
    validate_only: None,
    label: int,
    tree_ops: list[tuple[str, int, Any]],
    text_ops: list[tuple[str, int, bytes]],
) -> None:
    fuzz_case(files, bases, study, label, tree_ops, text_ops)


@pytest.mark.slow
@_settings(REGULAR)
@given(data=st.binary(max_size=200))
@example(data=b"")
@example(data=b"\xff\xfe\x00\x01")
@example(data=b"study: blobs\n\xff")
@example(data=b"- study: blobs\n")
@example(data=b"study\n")
@example(data=b"study: [blobs]\n")
@example(data=b"study: {a: 1}\n")
@example(data=b"study: null\n")
@example(data=b"study: nope\n")
@example(data=b"study: blobs\nname: [1]\n")
@example(data=b"study: blobs\nname: null\n")
@example(data=b"study: blobs\nstudy: lhco\n")
@example(data=b"study: blobs\n? [a, b]\n: c\n")
@example(data=b"study: blobs\n1: 2\nnull: 3\n")
@example(data=b"study: !!python/object:os.system x\n")
@example(data=b"study: blobs\nx: &a [*a]\n")
@example(
    data=b"a: &a [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a]\n"
    b"c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b,*b]\nd: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c,*c]\n"
    b"e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d,*d]\nf: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e,*e]\n"
    b"g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f,*f]\nstudy: lhco\nclassifier: {options: *g}\n"
)
@example(data=b"\xef\xbb\xbfstudy: blobs\n")
@example(data=b"study: blobs\t\n\tname: x\n")
@example(data=b"%YAML 1.1\n---\nstudy: blobs\n---\nstudy: lhco\n")
@example(data=b"study: fairness\nseed: 2001-12-14\n")
@example(data=b"study: fairness\nseed: !!binary aGVsbG8=\n")
def test_any_bytes(files: Files, validate_only: None, data: bytes) -> None:
    """Any file at all: one line naming the file, or a configuration that starts."""
    outcome(write_case(files, data), files)


#: byte edits of a shipped file: (where, bytes put there, bytes removed there)
BYTE_EDITS = st.lists(
    st.tuples(st.integers(0, 10**6), st.binary(max_size=3), st.integers(0, 4)),
    min_size=1,
    max_size=4,
)
_SHIPPED_FILES = sorted(name for names in SHIPPED.values() for name in names)


def edit_bytes(text: bytes, edits: list[tuple[int, bytes, int]]) -> bytes:
    """Replace ``removed`` bytes at each place by the bytes given."""
    for where, put, removed in edits:
        at = (where * 7919) % (len(text) + 1)
        text = text[:at] + put + text[at + removed :]
    return text


@pytest.mark.slow
@_settings(REGULAR)
@given(which=st.sampled_from(_SHIPPED_FILES), edits=BYTE_EDITS)
def test_edited_files(files: Files, validate_only: None, which: str, edits: Any) -> None:
    """A shipped file, comments and all, with a few bytes changed."""
    from rosenblatt.config import find_config

    outcome(write_case(files, edit_bytes(find_config(which).read_bytes(), edits)), files)


@pytest.mark.slow
@_settings(SLOW)
@given(which=st.sampled_from(_SHIPPED_FILES), edits=BYTE_EDITS, data=st.binary(max_size=2000))
def test_edited_files_at_length(
    files: Files, validate_only: None, which: str, edits: Any, data: bytes
) -> None:
    from rosenblatt.config import find_config

    outcome(write_case(files, edit_bytes(find_config(which).read_bytes(), edits)), files)
    outcome(write_case(files, data), files)


@pytest.mark.parametrize("what", ["folder", "devnull", "missing", "binary", "empty", "fifo"])
def test_paths_that_are_not_configurations(
    what: str, files: Files, validate_only: None, tmp_path: Path
) -> None:
    """A folder, /dev/null, a missing, binary or empty file, a named pipe: one line, status 2."""
    path: Path | str
    if what == "fifo":
        path = tmp_path / "pipe.yaml"
        os.mkfifo(path)
    else:
        path = {
            "folder": str(files.folder),
            "devnull": "/dev/null",
            "missing": str(files.missing.with_suffix(".yaml")),
            "binary": str(files.binary),
            "empty": str(files.empty),
        }[what]
    status, line = run_config(path, tmp_path / "out")
    assert status == 2
    if what in ("binary", "empty"):
        assert _FILE_LEVEL.match(check_message(line, path)), line
    else:
        # no configuration to name a key of: the path and what it is
        assert line.startswith(f"rosenblatt run: error: {path}: "), line
        assert {"folder": "is a folder", "missing": "no such file"}.get(
            what, "not a regular"
        ) in line


def _set(config: dict[str, Any], where: str, value: Any) -> None:
    """Set ``a.b[0].c`` of ``config`` to ``value``."""
    keys: list[Any] = [int(k) if k.isdigit() else k for k in re.findall(r"[^.\[\]]+", where)]
    for key in keys[:-1]:
        config = config[key]
    config[keys[-1]] = value


#: what the fuzz found, one case each: (study, base, entry, value, the key the message names)
FOUND = [
    ("abcd", "ntuple", "abcd.x0", [3800.0, 2200.0], "abcd.x0"),
    ("abcd", "ntuple", "abcd.n_x0", 2**62, "abcd.n_x0"),
    ("abcd", "ntuple", "abcd.y0", [0.1, 1.5], "abcd.y0"),
    ("abcd", "ntuple", "plane", 5, "plane"),
    ("abcd", "ntuple", "plane", ["a", "b"], "plane"),
    ("abcd", "ntuple", "skip_bad_files", "no", "skip_bad_files"),
    ("abcd", "ntuple", "transforms[0].depth", -1, "transforms[0].depth"),
    ("abcd", "ntuple", "transforms[1].degree", 7, "transforms[1]"),
    ("abcd", "ntuple", "transforms[2].method", "slow", "transforms[2]"),
    ("abcd", "ntuple", "transforms[3].file", "@binary", "transforms[3].file"),
    ("abcd", "ntuple", "transforms[3].file", "@function", "transforms[3].file"),
    ("abcd", "ntuple", "transforms[0].name", "a/b", "transforms[0].name"),
    ("abcd", "ntuple", "data", {"folder": "/dev/null"}, "data.folder"),
    ("abcd", "ntuple", "data", {"folder": "/dev/null/cache"}, "data.folder"),
    ("abcd", "ntuple", "score", "tagger_ot", "score"),
    ("abcd", "ntuple", "abcd.x", "FatJet.pt[0]", "abcd.x"),
    ("abcd", "ntuple", "treename", "Events", "treename"),
    ("abcd", "ntuple", "defining.datasets", [[1]], "defining"),
    ("abcd", "ntuple", "datasets.qcd.files", ["@folder"], "datasets.qcd.files"),
    ("abcd", "ntuple", "datasets.qcd.files", ["@binary"], "datasets.qcd.files"),
    ("abcd", "ntuple", "datasets.qcd.files", ["/dev/null"], "datasets.qcd.files"),
    ("abcd", "ntuple", "datasets.qcd.role", ["background"], "datasets.qcd.role"),
    ("abcd", "ntuple", "datasets.sig.xsec", math.nan, "datasets.sig.xsec"),
    ("abcd", "ntuple", "executor", {"kind": "futures", "workers": 10**30}, "executor.workers"),
    ("abcd", "ntuple", "statistics.seed", 2**40, "statistics.seed"),
    ("abcd", "nanoaod", "schema", ["nanoaod"], "schema"),
    ("abcd", "nanoaod", "score", "FatJet.tagger[99999999999999999999]", "score"),
    ("abcd", "nanoaod", "score", {"function": "..x:f"}, "score"),
    ("abcd", "nanoaod", "score", {"function": "@folder"}, "score"),
    ("abcd", "legacy", "fileset", {"qcd": [None]}, "fileset.qcd"),
    ("abcd", "legacy", "fileset", {1: ["qcd.root"], None: ["sig.root"]}, "fileset.None"),
    ("abcd", "abcd-example", "generate[0]", {"process": "qcd"}, "generate[0].events"),
    ("abcd", "abcd-example", "generate[0].process", "ttbar", "generate[0].process"),
    ("abcd", "abcd-example", "generate[1].output", "@folder", "generate[1].output"),
    (
        "abcd",
        "ntuple-example",
        "generate[0].negative_weight_fraction",
        1.5,
        "generate[0].negative_weight_fraction",
    ),
    ("abcd", "abcd-example", "fileset.qcd", ["never-generated.root"], "fileset.qcd"),
    ("lhco", "lhco-smoke", "data.folder", "/dev/null", "data.folder"),
    ("lhco", "lhco-smoke", "data.pthat_min", -1000, "data.pthat_min"),
    ("lhco", "lhco-smoke", "kde.sigma_r", [-0.1], "kde.sigma_r"),
    ("lhco", "lhco-smoke", "irgi.depths", [64], "irgi.depths"),
    ("lhco", "lhco-smoke", "classifier.options.max_epochs", "a", "classifier.options.max_epochs"),
    ("lhco", "lhco-smoke", "classifier.options.augment", "no", "classifier.options.augment"),
    ("lhco", "lhco-smoke", "classifier.options.n_layers", 3, "classifier.options"),
    ("lhco", "lhco-smoke", "statistics.n_boot", "a", "statistics.n_boot"),
    ("lhco", "lhco-smoke", "statistics.contamination", [2.0], "statistics.contamination"),
    ("lhco", "lhco-smoke", "disco_selection.min_auc", math.nan, "disco_selection.min_auc"),
    ("lhco", "lhco-smoke", "abcd.n_x0", 10**12, "abcd.n_x0"),
    ("lhco", "lhco-smoke", "features.executor", ["dask"], "features.executor"),
    ("lhco", "lhco-smoke", "seed", 2**40, "seed"),
    ("lhco-2d", "lhco-2d", "decorrelation.seed", -1, "decorrelation.seed"),
    ("lhco-2d", "lhco-2d", "data.folder", "@binary", "data.folder"),
    ("blobs", "blobs", "seed", 2**40, "seed"),
    ("blobs", "blobs", "background.rho", math.nan, "background.rho"),
    ("blobs", "blobs", "signal.cov", [[1.0, 0.5], [0.0, 1.0]], "signal.cov"),
    ("blobs", "blobs", "signal.cov", [[1e308, 1e308], [1e308, 1e308]], "signal.cov"),
    ("blobs", "blobs", "figures.kde_sigmas", ["a"], "figures.kde_sigmas"),
    ("blobs", "blobs", "figures.grid_depths", [3.5], "figures.grid_depths"),
    ("blobs", "blobs", "irgi.depths", [12], "irgi.depths"),
    ("blobs", "blobs", "kde.sigma_r.n", 10**12, "kde.sigma_r.n"),
    ("blobs", "blobs", "n_subsamples", 10**6, "n_subsamples"),
    ("blobs", "blobs", "peers", {"flow": {"bins": -1}}, "peers.flow"),
    ("fairness", "fairness", "seed", 2**40, "seed"),
    ("fairness", "fairness", "arrests.hgb.max_iter", -1, "arrests.hgb"),
    ("fairness", "fairness", "arrests.hgb.learning_rate", "fast", "arrests.hgb"),
    ("fairness", "fairness", "folds", 10**6, "folds"),
    ("fairness", "fairness", "claims.dcc_floor_ratio_max", math.inf, "claims.dcc_floor_ratio_max"),
]


@pytest.mark.parametrize(
    ("study", "base", "where", "value", "key"),
    FOUND,
    ids=[f"{study}-{where}={value!r}"[:60] for study, _, where, value, _ in FOUND],
)
def test_found_cases(
    study: str,
    base: str,
    where: str,
    value: Any,
    key: str,
    files: Files,
    bases: Bases,
    validate_only: None,
) -> None:
    """Each mistake the fuzz found (a traceback, a hang, or an error only after hours): one line."""
    config = json.loads(json.dumps(bases[study][base]))
    _set(config, where, _resolve_value(value, files))
    path = write_case(files, dump(config))
    assert outcome(path, files) == (2, key)
