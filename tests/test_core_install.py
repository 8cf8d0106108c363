"""The core install (no extra): the library works, and whatever needs an extra names it.

These tests run in every environment: in a subprocess the modules of every extra
are made unimportable (a finder first on ``sys.meta_path`` refuses them), so that the full
development environment sees what ``pip install rosenblatt`` alone gives.
``.ci/run`` also runs them (with the other tests marked ``core``) from the
built wheel in a fresh virtual environment without extras, where
``ROSENBLATT_CORE_JOB=1`` checks that nothing of an extra is installed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import rosenblatt as rb
from rosenblatt._extras import EXTRA_OF, PROVIDES, MissingExtraError, needs_message
from rosenblatt.cli import COMMANDS

pytestmark = [pytest.mark.core, pytest.mark.packaging]

ROOT = Path(__file__).resolve().parents[1]
CORE_JOB = os.environ.get("ROSENBLATT_CORE_JOB") == "1"

#: modules of an extra that the core brings anyway (uhi: histoprint, a dependency of hist)
IN_THE_CORE = {"uhi"}
#: run first in every subprocess: the modules of every extra cannot be imported
BLOCK = f"""
import importlib.abc, sys

class _Blocked(importlib.abc.MetaPathFinder):
    names = {sorted(set(EXTRA_OF) - IN_THE_CORE)!r}

    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in self.names:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)

sys.meta_path.insert(0, _Blocked())
"""

#: an invocation of each command that needs an extra (past argument parsing), and the extras
COMMAND_CASES = [
    (["generate", "--process", "qcd", "--events", "10", "--seed", "1", "--output", "q.h5"], "hep"),
    (["features", "q.h5", "--output", "table.parquet"], "hep"),
    (["train", "train.yaml"], "ml"),
    (["fit", "f.root", "--x", "mjj", "--score", "y", "--output", "t.json"], "io"),
    (["apply", "t.json", "f.root", "--x", "mjj", "--score", "y", "--output-dir", "out"], "io"),
]

#: shipped configuration -> the extras ``rosenblatt run`` names for it
RUN_CASES = {
    "lhco-quick": ["study", "hep", "ml"],
    "lhco-2d": ["study", "hep", "ml"],
    "blobs": ["study"],
    "fairness": ["study", "fairness"],
    "abcd-example": ["study", "hep"],
    "ntuple-example": ["study", "hep"],
}


def _python(code: str, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run ``code`` after :data:`BLOCK` in a fresh interpreter."""
    return subprocess.run(
        [sys.executable, "-c", BLOCK + textwrap.dedent(code), *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return _python("from rosenblatt.cli import main\nsys.exit(main(sys.argv[1:]))", *args, cwd=cwd)


def test_the_core_job_has_no_extra() -> None:
    """In the core job the wheel is imported, and no module of an extra is installed."""
    if not CORE_JOB:
        pytest.skip("only in .ci/run's core job (ROSENBLATT_CORE_JOB=1)")
    import importlib.util

    assert "site-packages" in rb.__file__
    installed = [
        name
        for name in sorted(set(EXTRA_OF) - IN_THE_CORE)
        if importlib.util.find_spec(name) is not None
    ]
    assert installed == []


@pytest.mark.slow
def test_the_library_examples(tmp_path: Path) -> None:
    """README's "The library" without an extra: fit, transform, save, load and the metrics."""
    result = _python(
        """
        import numpy as np
        import rosenblatt as rb

        rng = np.random.default_rng(1)
        x, x_test = rng.normal(size=(2, 40_000))
        y = 0.6 * x + 0.8 * rng.normal(size=x.size)
        y_test = 0.6 * x_test + 0.8 * rng.normal(size=x.size)
        label = (rng.random(x.size) < 0.5).astype(int)
        t = rb.IRGI(depth=7)
        assert t.fit(x, y, weight=None) is t
        gamma = t.transform(x_test, y_test)
        assert t.outside(x, y).total == 0
        t.save("t.json")
        assert np.array_equal(rb.load("t.json").transform(x_test, y_test), gamma)
        assert rb.distance_correlation_sqr(x_test, gamma) < 1e-3
        assert rb.distance_correlation_sqr(x_test, y_test) > 0.2
        assert 0.0 <= rb.permutation_test(x_test[:2000], gamma[:2000]).p_value <= 1.0
        assert abs(rb.roc_auc(label, y_test) - 0.5) < 0.05
        k = rb.KDE(sigma_r=0.05).fit(x[:4000], y[:4000])
        assert np.all((k.transform(x_test, y_test) >= 0) & (k.transform(x_test, y_test) <= 1))
        two = rb.GridKDE(0.3).fit(np.column_stack([x, y_test]), y)
        assert two.transform([x_test, y], y_test).shape == x.shape
        print("ok")
        """,
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


def test_help_and_version(tmp_path: Path) -> None:
    """``--help``, ``--version`` and every command's ``--help`` work with the core alone."""
    for args in (["--help"], ["--version"], *([name, "--help"] for name in COMMANDS)):
        result = _cli(*args, cwd=tmp_path)
        assert result.returncode == 0, (args, result.stderr)
        assert result.stderr == ""
        assert result.stdout.strip()
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
def test_the_console_script(tmp_path: Path) -> None:
    """The installed ``rosenblatt`` script: help and version."""
    script = Path(sys.executable).with_name("rosenblatt")
    if not script.is_file():
        pytest.skip("no rosenblatt script beside this interpreter")
    for args in (["--help"], ["--version"]):
        result = subprocess.run(
            [str(script), *args], cwd=tmp_path, capture_output=True, text=True, check=False
        )
        assert result.returncode == 0, result.stderr
    assert rb.__version__ in result.stdout


def _assert_one_line(result: subprocess.CompletedProcess[str], expected: str, folder: Path) -> None:
    assert result.returncode == 1, result.stderr
    assert result.stdout == ""
    assert result.stderr == expected + "\n"
    assert list(folder.iterdir()) == [], "the command left something behind"


@pytest.mark.slow
@pytest.mark.parametrize(("args", "extra"), COMMAND_CASES, ids=[c[0][0] for c in COMMAND_CASES])
def test_a_command_names_its_extra(tmp_path: Path, args: list[str], extra: str) -> None:
    """One line naming the extra, status 1, no traceback, nothing written."""
    result = _cli(*args, cwd=tmp_path)
    _assert_one_line(result, needs_message(f"rosenblatt {args[0]}", [extra]), tmp_path)
    assert f'pip install "rosenblatt[{extra}]"' in result.stderr


@pytest.mark.slow
@pytest.mark.parametrize(("config", "extras"), sorted(RUN_CASES.items()))
def test_run_names_every_extra_of_the_study(tmp_path: Path, config: str, extras: list[str]) -> None:
    result = _cli("run", config, cwd=tmp_path)
    _assert_one_line(result, needs_message(f"rosenblatt run {config}", extras), tmp_path)


def test_bare_rosenblatt_runs_the_default_study(tmp_path: Path) -> None:
    from rosenblatt.config import DEFAULT_CONFIG

    result = _cli(cwd=tmp_path)
    expected = needs_message(f"rosenblatt run {DEFAULT_CONFIG}", RUN_CASES[DEFAULT_CONFIG])
    _assert_one_line(result, expected, tmp_path)
    assert 'pip install "rosenblatt[study,hep,ml]"' in result.stderr


def test_run_of_an_unknown_configuration_is_not_about_extras(tmp_path: Path) -> None:
    result = _cli("run", "no-such-study", cwd=tmp_path)
    assert result.returncode == 2
    assert "no configuration 'no-such-study'" in result.stderr
    assert "Traceback" not in result.stderr


def test_export_works_without_extras(tmp_path: Path) -> None:
    """Writing correctionlib needs no extra (tqdm's progress bar is left out)."""
    rng = np.random.default_rng(2)
    x = rng.normal(size=5000)
    rb.IRGI(depth=3).fit(x, x + rng.normal(size=x.size)).save(tmp_path / "t.json")
    result = _cli("export", "--correctionlib", "c.json", "t.json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    assert json.loads((tmp_path / "c.json").read_text())["corrections"]


def test_keys_works_without_extras(tmp_path: Path) -> None:
    """``rosenblatt keys``: a study's keys and the list of studies need no extra."""
    for args, expected in ((["keys", "abcd"], "abcd.x"), (["keys"], "toys")):
        result = _cli(*args, cwd=tmp_path)
        assert result.returncode == 0, result.stderr
        assert result.stderr == ""
        assert expected in result.stdout
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
def test_every_module_imports_or_names_its_extra(tmp_path: Path) -> None:
    """``import rosenblatt.<anything>`` works, or fails with a MissingExtraError naming the extra."""
    result = _python(
        """
        import importlib, json, pkgutil
        import rosenblatt
        from rosenblatt._extras import MissingExtraError

        outcome = {}
        names = [m.name for m in pkgutil.walk_packages(rosenblatt.__path__, "rosenblatt.")]
        for name in sorted(set(names)):
            try:
                importlib.import_module(name)
            except MissingExtraError as err:
                outcome[name] = ["extra", str(err), list(err.extras)]
            except Exception as err:
                outcome[name] = ["bare", f"{type(err).__name__}: {err}", []]
            else:
                outcome[name] = ["ok", "", []]
        print(json.dumps(outcome))
        """,
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    outcome = json.loads(result.stdout)
    bare = {name: message for name, (kind, message, _) in outcome.items() if kind == "bare"}
    assert bare == {}
    for name in ("rosenblatt.transforms", "rosenblatt.metrics", "rosenblatt.abcd"):
        assert outcome[name][0] == "ok"
    for name in ("rosenblatt.io", "rosenblatt.hep", "rosenblatt.ml", "rosenblatt.studies"):
        assert outcome[name][0] == "ok"
    kind, message, extras = outcome["rosenblatt.hep.jets"]
    assert kind == "extra"
    assert extras == ["hep"]
    assert message.endswith('pip install "rosenblatt[hep]"')
    assert outcome["rosenblatt.ml.cnn"][2] == ["ml"]
    assert outcome["rosenblatt.sklearn"][2] == ["fairness"]


def test_missing_extra_error_is_a_module_not_found_error() -> None:
    err = MissingExtraError("x needs the 'hep' extra", name="fastjet", extras=["hep"])
    assert isinstance(err, ModuleNotFoundError)
    assert err.name == "fastjet"
    assert err.extras == ("hep",)


def test_the_extras_table_matches_pyproject() -> None:
    """PROVIDES lists, per extra, the modules of the distributions pyproject declares."""
    tomllib = pytest.importorskip("tomllib", reason="Python 3.11 reads TOML")
    from rosenblatt._extras import DISTRIBUTIONS

    pyproject = ROOT / "pyproject.toml"
    if not pyproject.is_file():
        pytest.skip("needs the source tree")
    project = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]
    core = {_distribution(spec) for spec in project["dependencies"]}
    declared = project["optional-dependencies"]

    def modules(extra: str) -> set[str]:
        found: set[str] = set()
        for spec in declared[extra]:
            name = _distribution(spec)
            if name == "rosenblatt":
                for nested in spec.partition("[")[2].partition("]")[0].split(","):
                    found |= modules(nested.strip())
            elif name not in core:
                found.add(DISTRIBUTIONS.get(name, name.replace("-", "_")))
        return found

    # all, bench, test and docs gather other extras and tools, not modules of the package
    for extra in set(declared) - {"all", "bench", "test", "docs"}:
        assert set(PROVIDES[extra]) == modules(extra), extra
    assert set(PROVIDES) == set(declared) - {"all", "bench", "test", "docs"}
    for module, extra in EXTRA_OF.items():
        assert module in PROVIDES[extra]
    assert {module for modules in PROVIDES.values() for module in modules} == set(EXTRA_OF)


def _distribution(spec: str) -> str:
    """The normalised distribution name of a requirement."""
    name = spec
    for stop in "[<>=!~;@ ":
        name = name.partition(stop)[0]
    return name.strip().lower().replace("_", "-")
