"""correctionlib export: exact for IRGI, within its measured bound for KDE, in Python and C++."""

from __future__ import annotations

import copy
import dataclasses
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from gaussian_blob import bivariate_normal
from scipy.special import expit

import rosenblatt as rb
from rosenblatt.cli import main as cli_main
from rosenblatt.correctionlib import (
    DEFAULT_NAME,
    TabulatedTransform,
    read_correctionlib,
    write_correctionlib,
)
from rosenblatt.correctionlib._numbers import ExactNumbers, rapidjson_double

correctionlib = pytest.importorskip("correctionlib")

CPP_SOURCE = Path(__file__).parent / "cpp" / "evaluate_correction.cc"


def saturated_sample(n: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A float32 classifier score piling up below 1, with 30% exactly 1 and 20% exactly 0."""
    x, latent = bivariate_normal(n, seed)
    rng = np.random.default_rng(seed + 1)
    y = expit(6.0 * latent).astype(np.float32).astype(np.float64)
    kind = rng.random(n)
    y[kind < 0.3] = 1.0
    y[(kind >= 0.3) & (kind < 0.5)] = 0.0
    weight = rng.uniform(0.5, 1.5, n)
    return 3000.0 + 400.0 * x, y, weight


@dataclasses.dataclass(frozen=True)
class Exported:
    """A fitted transform, its correctionlib file and the bound its values keep."""

    transform: rb.IRGI | rb.KDE
    path: Path
    name: str
    bound: float


def fitted(case: str) -> rb.IRGI | rb.KDE:
    if case == "irgi-plain":
        x, y = bivariate_normal(8192, seed=21)
        return rb.IRGI(4).fit(x, y)
    if case == "irgi-saturated":
        x, y, weight = saturated_sample(8192, seed=22)
        return rb.IRGI(4, domain=((1000.0, 5000.0), (0.0, 1.0))).fit(x, y, weight)
    x, y = bivariate_normal(300, seed=23)
    return rb.KDE(0.3, method="direct").fit(x, y)


@pytest.fixture(scope="module")
def exports(tmp_path_factory: pytest.TempPathFactory):
    """Each case fitted and written once for the module."""
    done: dict[str, Exported] = {}

    def get(case: str) -> Exported:
        if case not in done:
            transform = fitted(case)
            path = tmp_path_factory.mktemp(case) / f"{case}.json"
            name = DEFAULT_NAME if case.startswith("irgi") else "gamma_kde"
            metadata = write_correctionlib(transform, path, name)
            done[case] = Exported(transform, path, name, metadata.get("tolerance", 1e-12))
        return done[case]

    return get


@pytest.fixture(params=["irgi-plain", "irgi-saturated", "kde"])
def exported(request: pytest.FixtureRequest, exports) -> Exported:
    return exports(request.param)


@pytest.fixture(params=["irgi-plain", "irgi-saturated"])
def irgi_exported(request: pytest.FixtureRequest, exports) -> Exported:
    return exports(request.param)


@pytest.fixture
def kde_exported(exports) -> Exported:
    return exports("kde")


def probe_points(
    transform: rb.IRGI | rb.KDE, seed: int, n: int = 40_000
) -> tuple[np.ndarray, np.ndarray]:
    """Points inside and outside the domain, on the grid lines and at the defining scores."""
    rng = np.random.default_rng(seed)
    (x_lo, x_hi), (y_lo, y_hi) = transform.domain_
    wx, wy = x_hi - x_lo, y_hi - y_lo
    x = rng.uniform(x_lo - 0.2 * wx, x_hi + 0.2 * wx, n)
    y = rng.uniform(y_lo - 0.2 * wy, y_hi + 0.2 * wy, n)
    if isinstance(transform, rb.IRGI):
        xs = np.concatenate((transform.x_centres_, transform.x_boundaries_))
        ys = np.unique(transform.y_edges_)
    else:
        xs, ys = transform.x_, transform.y_
    q = n // 4
    x[:q] = rng.choice(xs, q)
    y[q : 3 * q] = rng.choice(ys, 2 * q)
    y[2 * q : 3 * q] = np.nextafter(y[2 * q : 3 * q], rng.choice([-np.inf, np.inf], q))
    extremes = [(-1e6, y_lo), (1e6, y_hi), (x_lo, -1e6), (x_hi, 1e6), (x_lo, y_lo), (x_hi, y_hi)]
    x[-len(extremes) :], y[-len(extremes) :] = np.array(extremes).T
    return x, y


def evaluate_file(path: Path, name: str, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return correctionlib.CorrectionSet.from_file(str(path))[name].evaluate(x, y)


def correction_cli(*args: str) -> subprocess.CompletedProcess[str]:
    command = shutil.which("correction", path=str(Path(sys.executable).parent)) or shutil.which(
        "correction"
    )
    assert command is not None, "the correctionlib command line 'correction' is not installed"
    return subprocess.run([command, *args], capture_output=True, text=True, check=False)


# ------------------------------------------------------------------ IRGI
def test_irgi_file_evaluates_as_the_transform(irgi_exported: Exported) -> None:
    irgi = irgi_exported.transform
    x, y = probe_points(irgi, seed=1)
    gamma = evaluate_file(irgi_exported.path, DEFAULT_NAME, x, y)
    np.testing.assert_allclose(gamma, irgi.transform(x, y), rtol=0, atol=1e-12)
    (_, _), (y_lo, y_hi) = irgi.domain_
    below, above = y < y_lo, y >= y_hi
    assert below.any()
    assert above.any()
    assert np.all(gamma[below] == 0.0)
    assert np.all(gamma[above] == 1.0)


def test_irgi_description_records_the_exactness(irgi_exported: Exported) -> None:
    correction = json.loads(irgi_exported.path.read_text())["corrections"][0]
    metadata = read_correctionlib(irgi_exported.path).metadata_
    assert metadata["kind"] == "irgi"
    assert metadata["params"] == {"depth": 4}
    assert metadata["max_abs_error"] <= 1e-12
    assert (
        f"{metadata['max_abs_error']:.3g} on {metadata['n_check_points']} points"
        in (correction["description"])
    )


def test_irgi_steep_columns_are_exact(tmp_path: Path) -> None:
    """Scores a few float32 steps apart give slopes above 1e5: still exact to 1e-12."""
    x, y, weight = saturated_sample(8192, seed=24)
    t = rb.IRGI(4).fit(x, y, weight)
    width = np.diff(t.y_edges_, axis=1)
    rise = np.diff(t.cdf_, axis=1)
    assert np.max(rise[width > 0] / width[width > 0]) > 1e5
    path = tmp_path / "steep.json"
    write_correctionlib(t, path)
    xq, yq = probe_points(t, seed=2)
    gamma = evaluate_file(path, DEFAULT_NAME, xq, yq)
    np.testing.assert_allclose(gamma, t.transform(xq, yq), rtol=0, atol=1e-12)


def test_written_numbers_are_read_exactly_by_correctionlib() -> None:
    """The emulated reader agrees with correctionlib's, and the chosen texts read back exactly."""
    rng = np.random.default_rng(29)
    values = np.concatenate(
        (
            rng.uniform(-3.0, 3.0, 3000),
            10.0 ** rng.uniform(-12.0, 4.0, 3000),
            np.nextafter(rng.uniform(0.0, 1.0, 3000), -np.inf),
        )
    )
    numbers = ExactNumbers()
    texts = [repr(v) for v in values.tolist()]
    exact = [numbers.text(v) for v in values.tolist()]
    written = texts + [t for t in exact if t is not None]
    content = ",".join(f'{{"key":{i},"value":{t}}}' for i, t in enumerate(written))
    document = (
        '{"schema_version":2,"corrections":[{"name":"c","version":1,'
        '"inputs":[{"name":"i","type":"int"}],"output":{"name":"v","type":"real"},'
        f'"data":{{"nodetype":"category","input":"i","content":[{content}]}}}}]}}'
    )
    read = correctionlib.CorrectionSet.from_string(document)["c"].evaluate(np.arange(len(written)))
    np.testing.assert_array_equal(read, [rapidjson_double(t) for t in written])
    assert np.any(read[: len(texts)] != values), "repr texts are all read exactly"
    np.testing.assert_array_equal(read[len(texts) :], values[[t is not None for t in exact]])
    assert sum(t is None for t in exact) <= 0.002 * len(values)


# ------------------------------------------------------------------- KDE
@pytest.mark.slow
def test_kde_file_within_its_documented_bound(kde_exported: Exported) -> None:
    kde, kde_file = kde_exported.transform, kde_exported.path
    metadata = read_correctionlib(kde_file).metadata_
    assert metadata["tolerance"] == 1e-3
    assert metadata["max_abs_error"] <= metadata["tolerance"]
    x, y = probe_points(kde, seed=3)
    gamma = evaluate_file(kde_file, "gamma_kde", x, y)
    assert np.max(np.abs(gamma - kde.transform(x, y))) <= metadata["tolerance"]
    assert np.all((gamma >= 0) & (gamma <= 1))


@pytest.mark.slow
def test_kde_tolerance_sets_the_table_size(kde_exported: Exported, tmp_path: Path) -> None:
    kde, kde_file = kde_exported.transform, kde_exported.path
    coarse = write_correctionlib(kde, tmp_path / "coarse.json", tolerance=1e-2)
    fine = read_correctionlib(kde_file).metadata_
    assert coarse["max_abs_error"] <= 1e-2
    assert coarse["n_bins"] < fine["n_bins"]
    x, y = probe_points(kde, seed=4)
    gamma = evaluate_file(tmp_path / "coarse.json", DEFAULT_NAME, x, y)
    assert np.max(np.abs(gamma - kde.transform(x, y))) <= 1e-2


# ------------------------------------------------------- file and reading
@pytest.mark.slow
def test_correction_command_line_accepts_the_files(exports) -> None:
    cases = [exports(case) for case in ("irgi-plain", "irgi-saturated", "kde")]
    paths = [str(case.path) for case in cases]
    validate = correction_cli("validate", *paths)
    assert validate.returncode == 0, validate.stdout + validate.stderr
    assert validate.stdout.count("All OK") == len(paths)
    summary = correction_cli("--width", "200", "summary", *paths)
    assert summary.returncode == 0, summary.stderr
    assert all(case.name in summary.stdout for case in cases)
    assert "Transform" in summary.stdout


def test_load_round_trip(exported: Exported, tmp_path: Path) -> None:
    original, path = exported.transform, exported.path
    loaded = rb.load(path)
    assert isinstance(loaded, TabulatedTransform)
    assert loaded.source_kind_ == original.kind
    assert loaded.n_events_ == original.n_events_
    assert loaded.domain_ == original.domain_
    x, y = probe_points(original, seed=5)
    name = loaded.name_
    np.testing.assert_allclose(
        loaded.transform(x, y), evaluate_file(path, name, x, y), rtol=0, atol=1e-12
    )
    assert np.max(np.abs(loaded.transform(x, y) - original.transform(x, y))) <= exported.bound
    with pytest.raises(TypeError, match="cannot be fitted"):
        loaded.fit(x, y)
    loaded.save(tmp_path / "again.json")
    assert (tmp_path / "again.json").read_bytes() == path.read_bytes()


def test_to_correctionlib_returns_a_correction_set() -> None:
    x, y = bivariate_normal(4096, seed=25)
    t = rb.IRGI(3).fit(x, y)
    cset = t.to_correctionlib("gamma_blob")
    assert type(cset).__name__ == "CorrectionSet"
    assert [c.name for c in cset.corrections] == ["gamma_blob"]
    xq, yq = probe_points(t, seed=6)
    gamma = cset.to_evaluator()["gamma_blob"].evaluate(xq, yq)
    np.testing.assert_allclose(gamma, t.transform(xq, yq), rtol=0, atol=1e-12)


def test_export_needs_a_fitted_transform() -> None:
    with pytest.raises(rb.NotFittedError, match="not fitted"):
        rb.IRGI(3).to_correctionlib()
    with pytest.raises(TypeError, match="cannot export a object; export a fitted") as error:
        write_correctionlib(object(), "never.json")  # type: ignore[arg-type]
    for name in ("IRGI", "KDE", "GridKDE"):
        assert re.search(rf"\b{name}\b", str(error.value)), error.value


def test_kde_options_are_checked(kde_exported: Exported, tmp_path: Path) -> None:
    kde = kde_exported.transform
    with pytest.raises(ValueError, match="tolerance"):
        write_correctionlib(kde, tmp_path / "k.json", tolerance=0.0)
    with pytest.raises(ValueError, match="max_x_nodes"):
        write_correctionlib(kde, tmp_path / "k.json", max_x_nodes=5)
    assert not (tmp_path / "k.json").exists()


# ------------------------------------------------------------- tampering
def _y_binning(document: dict, k: int = 2) -> dict:
    return document["corrections"][0]["data"]["content"][k]["content"]


TAMPERING = {
    "non-monotone edges": (
        lambda d: _y_binning(d)["edges"].__setitem__(3, _y_binning(d)["edges"][1]),
        "strictly increasing",
    ),
    "gamma above one": (
        lambda d: _y_binning(d)["content"][-2]["parameters"].__setitem__(2, 1.5),
        r"outside \[0, 1\]",
    ),
    "decreasing in y": (
        lambda d: _y_binning(d)["content"][3]["parameters"].__setitem__(1, -0.5),
        "decreases",
    ),
    "offset off its edge": (
        lambda d: _y_binning(d)["content"][3]["parameters"].__setitem__(4, 0.123),
        "does not start at the bin's edge",
    ),
    "foreign formula": (
        lambda d: d["corrections"][0]["generic_formulas"][0].__setitem__("expression", "exp(x)"),
        "not the formulas",
    ),
    "rewrite of x": (
        lambda d: d["corrections"][0]["data"]["content"][2]["rule"]["parameters"].__setitem__(
            1, 7.0
        ),
        "does not map the x bin",
    ),
    "extra field": (lambda d: _y_binning(d).__setitem__("extra", 1), "unexpected field"),
    "flow": (lambda d: _y_binning(d).__setitem__("flow", "error"), "flow must be 'clamp'"),
    "text number": (lambda d: _y_binning(d)["edges"].__setitem__(2, "0.5"), "list of numbers"),
    "below the domain": (lambda d: _y_binning(d)["content"].__setitem__(0, 0.5), "0 below"),
    "schema version": (lambda d: d.__setitem__("schema_version", 1), "reads version 2"),
    "no metadata": (
        lambda d: d["corrections"][0].__setitem__("description", "a correction"),
        "no correction written by rosenblatt",
    ),
    "newer layout": (
        lambda d: d["corrections"][0].__setitem__(
            "description",
            d["corrections"][0]["description"].replace('"layout_version":1', '"layout_version":9'),
        ),
        "upgrade rosenblatt",
    ),
}


@pytest.mark.parametrize(("edit", "message"), TAMPERING.values(), ids=TAMPERING.keys())
def test_tampered_file_is_refused(edit, message: str, tmp_path: Path) -> None:
    x, y = bivariate_normal(4096, seed=26)
    path = tmp_path / "t.json"
    write_correctionlib(rb.IRGI(3).fit(x, y), path)
    document = json.loads(path.read_text())
    edit(document)
    path.write_text(json.dumps(document))
    with pytest.raises(rb.SchemaError, match=message):
        rb.load(path)


def test_several_corrections_need_a_name(tmp_path: Path) -> None:
    x, y = bivariate_normal(4096, seed=27)
    path = tmp_path / "t.json"
    write_correctionlib(rb.IRGI(3).fit(x, y), path, "low")
    document = json.loads(path.read_text())
    second = copy.deepcopy(document["corrections"][0])
    second["name"] = "high"
    document["corrections"].append(second)
    path.write_text(json.dumps(document))
    with pytest.raises(rb.SchemaError, match="pick one with name="):
        rb.load(path)
    assert read_correctionlib(path, name="high").name_ == "high"
    with pytest.raises(rb.SchemaError, match="no correction 'mid'"):
        read_correctionlib(path, name="mid")


# ------------------------------------------------------------------ C++
@pytest.fixture(scope="module")
def cpp_evaluator(tmp_path_factory: pytest.TempPathFactory) -> Path:
    compiler = shutil.which("g++") or shutil.which("c++")
    if compiler is None:
        pytest.skip("no C++ compiler (g++ or c++) on PATH to build the correctionlib test program")
    flags = correction_cli("config", "--cflags", "--ldflags", "--rpath")
    assert flags.returncode == 0, flags.stderr
    program = tmp_path_factory.mktemp("cpp") / "evaluate_correction"
    build = subprocess.run(
        [compiler, "-O1", str(CPP_SOURCE), *flags.stdout.split(), "-o", str(program)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert build.returncode == 0, build.stderr
    return program


@pytest.mark.slow
def test_cpp_gives_the_same_numbers(
    exported: Exported, cpp_evaluator: Path, tmp_path: Path
) -> None:
    original, path, name = exported.transform, exported.path, exported.name
    x, y = probe_points(original, seed=7, n=4000)
    points = tmp_path / "points.txt"
    points.write_text(
        "".join(f"{a!r} {b!r}\n" for a, b in zip(x.tolist(), y.tolist(), strict=True))
    )
    run = subprocess.run(
        [str(cpp_evaluator), str(path), name, str(points)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    gamma_cpp = np.array(run.stdout.split(), dtype=np.float64)
    assert len(gamma_cpp) == len(x)
    np.testing.assert_allclose(gamma_cpp, evaluate_file(path, name, x, y), rtol=0, atol=1e-12)
    assert np.max(np.abs(gamma_cpp - original.transform(x, y))) <= exported.bound


# ------------------------------------------------------------------- CLI
def test_cli_export(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    x, y = bivariate_normal(4096, seed=28)
    t = rb.IRGI(3).fit(x, y)
    saved, out = tmp_path / "t.json", tmp_path / "t.correctionlib.json"
    t.save(saved)
    status = cli_main(
        ["export", "--correctionlib", str(out), str(saved), "--name", "gamma_qcd", "--quiet"]
    )
    assert status == 0
    assert "gamma_qcd" in capsys.readouterr().out
    loaded = rb.load(out)
    assert loaded.name_ == "gamma_qcd"
    xq, yq = probe_points(t, seed=8)
    np.testing.assert_allclose(loaded.transform(xq, yq), t.transform(xq, yq), rtol=0, atol=1e-12)


def test_cli_export_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out.json"
    missing = tmp_path / "missing.json"
    assert cli_main(["export", "--correctionlib", str(out), str(missing)]) == 2
    assert str(missing) in capsys.readouterr().err
    garbage = tmp_path / "garbage.json"
    garbage.write_bytes(b"\x80\x04 not json")
    assert cli_main(["export", "--correctionlib", str(out), str(garbage)]) == 2
    assert "not valid JSON" in capsys.readouterr().err
    assert not out.exists()
