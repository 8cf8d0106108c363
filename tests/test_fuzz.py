"""Fuzzing of the transform loader and the event-file readers with mutated files.

Every mutated input must give either a correct result or one of the documented
errors (:class:`~rosenblatt.serialization.SchemaError`,
:class:`~rosenblatt.io.EventFileError`, :class:`ValueError`, :class:`OSError`)
whose message names the file; never another exception and never a hang.

The number of cases per target is modest by default; set
``ROSENBLATT_FUZZ_EXAMPLES`` (e.g. 3000) for a long fuzzing run.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import signal
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from gaussian_blob import bivariate_normal
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

import rosenblatt as rb
from rosenblatt.io import EventFileError, read_events
from rosenblatt.serialization import SchemaError, dumps, loads

awkward = pytest.importorskip("awkward")

EXAMPLES = int(os.environ.get("ROSENBLATT_FUZZ_EXAMPLES", "50"))
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    derandomize=EXAMPLES <= 100,
)
#: seconds one mutated file may take before the case counts as a hang
HANG_SECONDS = 30
#: largest difference allowed between the tabulated KDE and the KDE
KDE_TOLERANCE = 3e-2
DOCUMENTED_ERRORS = (SchemaError, EventFileError, ValueError, OSError)


@contextmanager
def no_hang(seconds: int = HANG_SECONDS) -> Iterator[None]:
    """Fail the case if the body runs longer than ``seconds``."""

    def expire(signum: int, frame: Any) -> None:
        raise AssertionError(f"no result after {seconds} s: the reader hangs")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def outcome(function: Callable[[], Any], name: str) -> Any:
    """Run ``function``; a documented error must name ``name``; return the result or None."""
    try:
        with no_hang():
            return function()
    except DOCUMENTED_ERRORS as err:
        assert name in str(err), f"{type(err).__name__} does not name {name!r}: {err}"  # noqa: PT017
        return None


def outcome_in_child(function: Callable[[], Any], name: str) -> Any:
    """:func:`outcome` in a forked process, so that a crash of a C library fails the case."""
    context = multiprocessing.get_context("fork")
    receiver, sender = context.Pipe(duplex=False)

    def child() -> None:
        try:
            sender.send(("ok", outcome(function, name)))
        except BaseException as err:  # noqa: BLE001 (reported to the parent, which fails the case)
            sender.send(("raised", f"{type(err).__name__}: {err}"))

    process = context.Process(target=child)
    process.start()
    process.join(HANG_SECONDS + 10)
    if process.is_alive():
        process.kill()
        process.join()
        raise AssertionError(f"{name}: no result after {HANG_SECONDS + 10} s: the reader hangs")
    if process.exitcode != 0 or not receiver.poll():
        raise AssertionError(
            f"{name}: the reader crashed the process (exit code {process.exitcode})"
        )
    status, value = receiver.recv()
    assert status == "ok", value
    return value


# mutations ---------------------------------------------------------------------------


def byte_mutation(data: bytes, seed: int) -> bytes:
    """Flip, overwrite, delete, insert bytes or truncate ``data``, as chosen by ``seed``."""
    rng = np.random.default_rng(seed)
    blob = bytearray(data)
    kind = rng.choice(["flip", "overwrite", "truncate", "delete", "insert", "zero-block"])
    if kind == "truncate":
        return bytes(blob[: int(rng.integers(0, len(blob)))])
    for _ in range(int(rng.integers(1, 9))):
        if not blob:
            break
        at = int(rng.integers(0, len(blob)))
        if kind == "flip":
            blob[at] ^= 1 << int(rng.integers(0, 8))
        elif kind == "overwrite":
            blob[at] = int(rng.integers(0, 256))
        elif kind == "delete":
            del blob[at : at + int(rng.integers(1, 65))]
        elif kind == "insert":
            blob[at:at] = rng.bytes(int(rng.integers(1, 33)))
        else:
            size = int(rng.integers(1, 4097))
            blob[at : at + size] = bytes(min(size, len(blob) - at))
    return bytes(blob)


HOSTILE_VALUES: list[Any] = [
    None,
    True,
    False,
    0,
    -1,
    1,
    2**70,
    -(2**70),
    0.5,
    -0.5,
    1e-300,
    1e308,
    -1e308,
    "",
    "NaN",
    "os.system",
    [],
    {},
    [0.0, 1.0],
    [1.0, 0.0],
    [[0.0, 1.0]],
    {"a": 1},
]


def _paths(node: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every path to a value inside a JSON document (long arrays: their ends)."""
    yield prefix
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _paths(value, (*prefix, key))
    elif isinstance(node, list):
        indices = sorted({*range(min(len(node), 6)), *range(max(len(node) - 2, 0), len(node))})
        for index in indices:
            yield from _paths(node[index], (*prefix, index))


def structural_mutation(document: dict[str, Any], seed: int) -> str:
    """Replace, delete, perturb or duplicate values of a JSON document; return its text."""
    rng = np.random.default_rng(seed)
    document = json.loads(json.dumps(document))
    for _ in range(int(rng.integers(1, 4))):
        paths = [path for path in _paths(document) if path]
        if not paths:
            break
        path = paths[int(rng.integers(0, len(paths)))]
        parent = document
        for key in path[:-1]:
            parent = parent[key]
        key = path[-1]
        action = rng.choice(["replace", "delete", "perturb", "duplicate"])
        value = parent[key]
        if action == "delete":
            del parent[key]
        elif (
            action == "perturb" and isinstance(value, (int, float)) and not isinstance(value, bool)
        ):
            factor = float(rng.choice([-1.0, 0.0, 0.5, 1.0 + 1e-12, 2.0, 1e300]))
            offset = float(rng.choice([0.0, 1e-9, -1.0, 1e6]))
            parent[key] = value * factor + offset
        elif action == "duplicate" and isinstance(parent, list):
            parent.insert(key, json.loads(json.dumps(value)))
        else:
            parent[key] = HOSTILE_VALUES[int(rng.integers(0, len(HOSTILE_VALUES)))]
    return json.dumps(document)


SEEDS = st.integers(0, 2**63 - 1)


class Catalogue(dict):
    """A dict with a short repr, so that hypothesis reports stay small."""

    def __repr__(self) -> str:
        return f"Catalogue({sorted(self)})"


# transform files ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def saved_transforms() -> dict[str, tuple[str, rb.IRGI | rb.KDE]]:
    """Saved JSON and correctionlib texts of small fitted transforms."""
    from rosenblatt.correctionlib import correctionlib_document

    x, y = bivariate_normal(600, seed=5)
    weight = np.random.default_rng(6).uniform(0.5, 1.5, len(x))
    irgi = rb.IRGI(2).fit(x, y, weight)
    kde = rb.KDE(0.3).fit(x[:60], y[:60])
    return Catalogue(
        {
            "irgi": (dumps(irgi), irgi),
            "kde": (dumps(kde), kde),
            "irgi-correctionlib": (json.dumps(correctionlib_document(irgi, "gamma")), irgi),
            "kde-correctionlib": (
                json.dumps(
                    correctionlib_document(kde, "gamma", tolerance=KDE_TOLERANCE, progress=False)
                ),
                kde,
            ),
        }
    )


TRANSFORM_FILES = ["irgi", "kde", "irgi-correctionlib", "kde-correctionlib"]
PROBE_X = np.array([-9.0, -2.0, -0.3, 0.0, 0.7, 1.9, 9.0])
PROBE_Y = np.array([0.5, -1.0, 0.2, -9.0, 9.0, 1.0, 0.0])


def check_loaded(loaded: Any) -> None:
    """A transform that loads must evaluate to finite values in [0, 1], one per event."""
    gamma = loaded.transform(PROBE_X, PROBE_Y)
    assert gamma.shape == PROBE_X.shape
    assert np.all(np.isfinite(gamma))
    assert np.all((gamma >= 0.0) & (gamma <= 1.0))
    ys = np.linspace(-10, 10, 81)
    for x0 in (-9.0, 0.1, 9.0):
        assert np.all(np.diff(loaded.transform(np.full_like(ys, x0), ys)) >= -1e-14)


@pytest.mark.parametrize("which", TRANSFORM_FILES)
@FUZZ
@given(seed=SEEDS)
def test_loads_survives_byte_mutations(saved_transforms, which: str, seed: int) -> None:
    text, original = saved_transforms[which]
    mutated = byte_mutation(text.encode(), seed)
    loaded = outcome(lambda: loads(mutated, source="fuzzed.json"), "fuzzed.json")
    if loaded is not None:
        check_loaded(loaded)
        if mutated == text.encode():
            # the KDE is tabulated within its tolerance, the IRGI exact to rounding
            tolerance = {"kde-correctionlib": KDE_TOLERANCE, "irgi-correctionlib": 1e-12}
            np.testing.assert_allclose(
                loaded.transform(PROBE_X, PROBE_Y),
                original.transform(PROBE_X, PROBE_Y),
                rtol=0,
                atol=tolerance.get(which, 0.0),
            )


# huge tampered KDE values overflow sigma_a (see test_kde_huge_x_is_fitted_or_refused_clearly)
@pytest.mark.slow
@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")
@pytest.mark.parametrize("which", TRANSFORM_FILES)
@FUZZ
@given(seed=SEEDS)
# a KDE whose width becomes 1e-9 of its spread (once 2.3e9 boxes of the expansion, 17 GiB)
@example(seed=700)
def test_loads_survives_structural_mutations(saved_transforms, which: str, seed: int) -> None:
    text, _ = saved_transforms[which]
    mutated = structural_mutation(json.loads(text), seed)
    # a non-string kind is test_kind_of_another_json_type_is_a_schema_error
    assume(isinstance(json.loads(mutated).get("kind", ""), str))
    loaded = outcome(lambda: loads(mutated, source="fuzzed.json"), "fuzzed.json")
    if loaded is not None:
        check_loaded(loaded)


@pytest.fixture(scope="module")
def fuzz_directory(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("fuzz")


@pytest.mark.parametrize("which", ["irgi", "kde-correctionlib"])
@FUZZ
@given(seed=SEEDS)
def test_load_of_a_mutated_file_names_it(
    saved_transforms, fuzz_directory: Path, which: str, seed: int
) -> None:
    text, _ = saved_transforms[which]
    path = fuzz_directory / f"mutated-{which}.json"
    path.write_bytes(byte_mutation(text.encode(), seed))
    loaded = outcome(lambda: rb.load(path), path.name)
    if loaded is not None:
        check_loaded(loaded)


# event files ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def event_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[bytes, Any]]:
    """Bytes of small LHCO HDF5, ROOT and parquet event files, and the events they hold."""
    pytest.importorskip("pythia8mc")
    pytest.importorskip("uproot")
    from rosenblatt.hep.generation import generate_events
    from rosenblatt.io.lhco import write_lhco
    from rosenblatt.io.parquet import write_parquet
    from rosenblatt.io.root import write_root

    events = generate_events("qcd", 6, seed=41)
    directory = tmp_path_factory.mktemp("fuzz-events")
    files = Catalogue()
    for suffix, write in ((".h5", write_lhco), (".root", write_root)):
        path = directory / f"events{suffix}"
        write(path, events)
        files[suffix] = (path.read_bytes(), read_events(path))
    path = directory / "events.parquet"
    write_parquet(events, path)
    files[".parquet"] = (path.read_bytes(), read_events(path))
    return files


def check_events(events: Any) -> None:
    """Events that read must have the event-array fields, one entry number each."""
    assert {"pt", "eta", "phi", "label", "weight"} <= set(events.fields)
    assert len(events) == len(events.weight)
    assert awkward.all(awkward.num(events.pt) == awkward.num(events.eta))


@pytest.mark.slow
@pytest.mark.parametrize(
    "suffix",
    [
        ".h5",
        ".root",
        ".parquet",
    ],
)
@FUZZ
@given(seed=SEEDS)
# mutations of the LHCO file that crash the HDF5 library (569) or make it raise SystemError (465),
# and of the parquet file that make Arrow abort (25_200_468_344) or give particles of unequal
# numbers of pt and eta values (12447)
@example(seed=569)
@example(seed=465)
@example(seed=25_200_468_344)
@example(seed=12447)
def test_readers_survive_mutated_files(
    event_files, fuzz_directory: Path, suffix: str, seed: int
) -> None:
    original, events = event_files[suffix]
    mutated = byte_mutation(original, seed)
    path = fuzz_directory / f"mutated{suffix}"
    path.write_bytes(mutated)
    read = outcome_in_child(lambda: read_events(path), path.name)
    if read is not None:
        check_events(read)
        if mutated == original:
            assert awkward.to_list(read) == awkward.to_list(events)


@pytest.mark.parametrize("kind", [[], {}, ["irgi"]])
def test_kind_of_another_json_type_is_a_schema_error(saved_transforms, kind: Any) -> None:
    document = json.loads(saved_transforms["irgi"][0])
    document["kind"] = kind
    with pytest.raises(SchemaError, match=r"fuzzed\.json: unknown transform kind"):
        loads(json.dumps(document), source="fuzzed.json")


def test_correction_without_a_name_is_a_schema_error(saved_transforms) -> None:
    document = json.loads(saved_transforms["kde-correctionlib"][0])
    del document["corrections"][0]["name"]
    with pytest.raises(SchemaError, match=r"fuzzed\.json"):
        loads(json.dumps(document), source="fuzzed.json")


@pytest.mark.filterwarnings("ignore:invalid value encountered in cast:RuntimeWarning")
def test_tiny_saved_kernel_width_is_refused_or_evaluated(saved_transforms) -> None:
    document = json.loads(saved_transforms["kde"][0])
    document["state"]["params"]["sigma_r"] = 1e-300
    try:
        loaded = loads(json.dumps(document), source="fuzzed.json")
    except SchemaError as err:
        assert "fuzzed.json" in str(err)  # noqa: PT017
        return
    check_loaded(loaded)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("suffix", "seed", "library"),
    [(".h5", 569, "HDF5"), (".parquet", 25_200_468_344, "Arrow parquet")],
)
def test_a_file_that_crashes_its_library_is_refused_by_name(
    event_files, fuzz_directory: Path, suffix: str, seed: int, library: str
) -> None:
    original, events = event_files[suffix]
    path = fuzz_directory / f"crashes{suffix}"
    path.write_bytes(byte_mutation(original, seed))
    with pytest.raises(
        EventFileError,
        match=rf"crashes\{suffix}: damaged file: opening it crashed the {library} library",
    ):
        read_events(path)
    # the reader's own process is unharmed and reads good files
    good = fuzz_directory / f"good{suffix}"
    good.write_bytes(original)
    assert len(read_events(good)) == len(events)
