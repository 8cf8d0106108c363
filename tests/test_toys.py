"""The pseudo-experiment study of the ABCD estimate (``study: toys``), end to end at a small size."""

from __future__ import annotations

import json
import logging
import math
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

pytest.importorskip("pyhf")
pytest.importorskip("matplotlib")

import rosenblatt as rb
from rosenblatt.cli import main
from rosenblatt.studies.toys.config import ToysConfig
from rosenblatt.studies.toys.experiment import Setting, coarse_cut_note, pseudo_experiment
from rosenblatt.studies.toys.population import Population, constant_threshold
from rosenblatt.studies.toys.summary import pull_statistics

pytestmark = pytest.mark.filterwarnings(
    "ignore:jsonschema.RefResolver is deprecated:DeprecationWarning"
)

SMALL: dict[str, Any] = {
    "study": "toys",
    "n_toys": 4,
    "defining_sizes": [4000],
    "transforms": [{"kind": "irgi", "depth": 3}],
    "n_boot": 6,
    "workers": 1,
    "population": {"background": 20000, "signal": 200},
}


def _config(folder: Path, **changes: Any) -> ToysConfig:
    return ToysConfig.parse({**SMALL, **changes, "_path": str(folder / "small.yaml")})


def test_the_populations_yields_are_those_of_its_samples() -> None:
    population = Population(_config(Path("."), seed=1).population)
    rng = np.random.default_rng(3)
    x, y = population.background(rng, 400_000)
    xs, ys = population.signal(rng, 400_000)
    background, signal = population.yields(constant_threshold(0.7), 0.6, 400_000, 400_000)
    for (sx, sy), expected in ((x, y), background.as_tuple()), ((xs, ys), signal.as_tuple()):
        high_x, high_y = sx >= 0.6, sy >= 0.7
        counts = [
            np.count_nonzero(high_x & high_y),
            np.count_nonzero(high_x & ~high_y),
            np.count_nonzero(~high_x & high_y),
            np.count_nonzero(~high_x & ~high_y),
        ]
        for count, value in zip(counts, expected, strict=True):
            assert abs(count - value) < 4 * math.sqrt(value) + 1


@pytest.mark.slow
def test_a_pseudo_experiment_uses_the_estimate_of_the_abcd_study(tmp_path: Path) -> None:
    cfg = _config(tmp_path)
    setting = Setting("irgi", cfg.transforms[0], 4000)
    first = pseudo_experiment(cfg, setting, 0)
    assert first["error"] is None
    assert first == pseudo_experiment(cfg, setting, 0)  # deterministic
    assert first["predicted_A"] == pytest.approx(first["predicted_A_uncorrected"] * first["factor"])
    assert first["predicted_A_syst"] == pytest.approx(
        first["predicted_A_uncorrected"] * first["factor_error"]
    )
    assert first["mu_low"] < first["mu_hat"] < first["mu_high"]
    # the exact truth under the fitted transform: a transform fitted on a far larger sample
    # closes, and its true closure factor is near 1
    population = Population(cfg.population)
    big = rb.IRGI(depth=6).fit(*population.background(np.random.default_rng(9), 400_000))
    from rosenblatt.studies.toys.population import transform_threshold

    truth, _ = population.yields(transform_threshold(big, cfg.y0), cfg.x0, 1.0, 0.0)
    assert truth.a * truth.d / (truth.b * truth.c) == pytest.approx(1.0, abs=0.03)


def test_transforms_are_built_with_the_cut_as_the_abcd_study_builds_them(tmp_path: Path) -> None:
    """An IRGI without a depth cross-validates one that resolves ``y0``; a coarse grid is said."""
    cfg = _config(
        tmp_path, transforms=[{"kind": "irgi"}, {"kind": "irgi", "depth": 3, "name": "d3"}]
    )
    built = [t.build() for t in cfg.transforms]
    assert [(t.depth, t.cut_levels) for t in built] == [("auto", (0.95,)), (3, (0.95,))]
    x, y = Population(cfg.population).background(np.random.default_rng(3), 20_000)
    # 20,000 events fit depth 6, the first whose 64 y bins put 2 beyond 0.95
    assert built[0].fit(x, y).depth_ == 6
    assert coarse_cut_note(cfg, Setting("irgi", cfg.transforms[0], 20_000)) is None
    note = coarse_cut_note(cfg, Setting("d3", cfg.transforms[1], 4000))
    assert note is not None
    assert "resolving them needs depth 6" in note


def test_pull_statistics() -> None:
    pulls = pull_statistics([-2.5, -0.5, 0.0, 0.5, 1.5, float("nan")])
    assert pulls["mean"] == pytest.approx(-0.2)
    assert pulls["coverage_1sd"] == pytest.approx(0.6)
    assert pulls["coverage_2sd"] == pytest.approx(0.8)
    assert pulls["coverage_1sd_error"] == pytest.approx(math.sqrt(0.6 * 0.4 / 5))
    assert pulls["sd"] == pytest.approx(np.std([-2.5, -0.5, 0.0, 0.5, 1.5], ddof=1))


@pytest.mark.slow
def test_the_study_writes_its_table_and_reuses_its_toys(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    config = {**SMALL, "data": {"folder": str(tmp_path / "cache")}}
    path = tmp_path / "toys-test.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    out = tmp_path / "results"
    with caplog.at_level(logging.INFO, logger="rosenblatt.toys"):
        assert main(["run", str(path), "--output", str(out)]) == 0
    # the toys step reports its events (two settings, four toys of 4,000 defining events)
    line = re.compile(r"step toys: 32000 events in [\d.]+ s, [\d,.]+ events/s")
    assert [m for m in caplog.messages if line.fullmatch(m)], caplog.messages
    summary = json.loads((out / "summary.json").read_text())
    from summary_keys import assert_same_keys

    assert_same_keys("toys-test", summary)
    assert [(s["name"], s["n_defining"]) for s in summary["settings"]] == [
        ("score", 4000),
        ("irgi", 4000),
    ]
    for setting in summary["settings"]:
        assert setting["n_toys"] == 4
        assert setting["targets"]["verdict"]
    report = (out / "report.md").read_text()
    assert "| irgi | 4,000 | 4 |" in report
    # depth 3's 8 y bins do not resolve 0.95: said once, in the summary and the report
    assert summary["settings"][0]["grid_note"] is None
    note = summary["settings"][1]["grid_note"]
    assert "resolving them needs depth 6" in note
    assert f"- irgi at 4,000 defining events: {note}" in report
    assert sum(note in message for message in caplog.messages) == 1
    assert (out / "coverage.png").is_file()
    cached = sorted(p.name for p in (tmp_path / "cache").iterdir())
    assert cached == ["irgi-4000.json", "score-4000.json"]
    # a rerun reads the toys; a changed setting computes them again
    assert main(["run", str(path), "--output", str(out)]) == 0
    assert json.loads((out / "summary.json").read_text())["settings"] == summary["settings"]
    path.write_text(yaml.safe_dump({**config, "n_boot": 5}), encoding="utf-8")
    assert main(["run", str(path), "--output", str(out)]) == 0
    changed = json.loads((out / "summary.json").read_text())["settings"][1]
    assert changed["background"] != summary["settings"][1]["background"]


def test_configuration_errors_name_the_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for changes, key in (
        ({"defining_sizes": []}, "defining_sizes"),
        ({"simulation": "elsewhere"}, "simulation"),
        ({"n_boot": 2}, "n_boot"),
        ({"transforms": [{"kind": "irgi", "depth": 3, "name": "score"}]}, "transforms"),
        ({"population": {"concentration": -1}}, "population.concentration"),
        ({"simulation_size": 10}, "simulation_size"),
        ({"simulation": "independent", "simulation_size": 0}, "simulation_size"),
    ):
        path = tmp_path / "bad.yaml"
        path.write_text(yaml.safe_dump({**SMALL, **changes}), encoding="utf-8")
        assert main(["run", str(path), "--output", str(tmp_path / "out")]) != 0
        err = capsys.readouterr().err
        assert key in err
        assert "Traceback" not in err
        assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_a_stopped_setting_keeps_its_finished_toys(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rosenblatt.studies.toys import study

    cfg = _config(tmp_path, transforms=[], n_toys=4)
    (setting,) = study.settings(cfg)
    cache = tmp_path / "cache"
    cache.mkdir()
    ran: list[int] = []

    def stopped_after_two(cfg: ToysConfig, setting: Setting, toy: int) -> Any:
        if len(ran) == 2:
            raise KeyboardInterrupt
        ran.append(toy)
        return pseudo_experiment(cfg, setting, toy)

    monkeypatch.setattr(study, "TOYS_PER_TASK", 1)
    monkeypatch.setattr(study, "pseudo_experiment", stopped_after_two)
    with pytest.raises(KeyboardInterrupt):
        study._setting(cfg, setting, cache)
    kept = json.loads((cache / "score-4000.json").read_text())["toys"]
    assert [row["toy"] for row in kept] == [0, 1]
    # the rerun does only the toys left, and gives what an uninterrupted run gives
    ran.clear()

    def counted(cfg: ToysConfig, setting: Setting, toy: int) -> Any:
        ran.append(toy)
        return pseudo_experiment(cfg, setting, toy)

    monkeypatch.setattr(study, "pseudo_experiment", counted)
    resumed = study._setting(cfg, setting, cache)
    assert ran == [2, 3]
    fresh = [pseudo_experiment(cfg, setting, toy) for toy in range(4)]
    assert json.loads(json.dumps(resumed)) == json.loads(json.dumps(fresh))


@pytest.mark.parametrize(
    "name", ["toys", "toys-simulation", "toys-negative-weights", "toys-irgi-auto"]
)
def test_shipped_configurations_parse(name: str) -> None:
    from rosenblatt.config import load_config

    config = load_config(name)
    cfg = ToysConfig.parse(config)
    assert cfg.defining_sizes == tuple(config["defining_sizes"])
    assert cfg.simulation_size == config.get("simulation_size", 1.0)


def test_the_toys_step_counts_the_defining_and_simulation_events(tmp_path: Path) -> None:
    from rosenblatt.studies.toys.study import toy_events

    assert toy_events(_config(tmp_path)) == 2 * 4 * 4000
    independent = _config(tmp_path, simulation="independent", simulation_size=2.5)
    assert toy_events(independent) == 2 * 4 * (4000 + 10000)


def test_an_independent_simulation_has_its_own_size(tmp_path: Path) -> None:
    cfg = _config(tmp_path, simulation="independent", simulation_size=2.5, n_boot=3)
    setting = Setting("irgi", cfg.transforms[0], 4000)
    row = pseudo_experiment(cfg, setting, 0)
    assert row["error"] is None
    from rosenblatt.studies.toys.study import fingerprint

    same_size = _config(tmp_path, simulation="independent", n_boot=3)
    assert fingerprint(cfg, setting) != fingerprint(same_size, setting)
    # the simulation's statistics alone: 2.5 times the events, about 1/sqrt(2.5) of the error
    small = pseudo_experiment(same_size, setting, 0)
    assert row["simulation_statistics"] < small["simulation_statistics"]


def test_a_verdict_names_the_targets_missed() -> None:
    from rosenblatt.studies.toys.summary import _targets

    background: Any = {
        "pull_observed": {"sd": 1.3, "coverage_1sd": 0.55},
        "relative_bias": 0.001,
        "relative_bias_error": 0.002,
    }
    signal: Any = {"pull": {"coverage_1sd": 0.68}}
    at_larger = _targets(background, signal, 20000, 5000)
    assert at_larger["verdict"] == "not held: pull sd, coverage"
    assert not at_larger["held"]
    at_smallest = _targets(background, signal, 5000, 5000)
    assert at_smallest["verdict"].startswith("not held (pull sd, coverage): the defining sample")
    background["pull_observed"] = {"sd": 1.0, "coverage_1sd": 0.69}
    assert _targets(background, signal, 5000, 5000)["held"]


def test_simulation_weights_with_negative_entries_have_expectation_one() -> None:
    from rosenblatt.studies.toys.experiment import effective_events, simulation_weights

    assert simulation_weights(np.random.default_rng(1), 10, 0.0) is None
    weights = simulation_weights(np.random.default_rng(1), 40_000, 0.2)
    assert weights is not None
    assert set(np.unique(weights)) == {-1 / 0.6, 1 / 0.6}
    assert np.mean(weights < 0) == pytest.approx(0.2, abs=4 * math.sqrt(0.16 / 40_000))
    assert abs(np.mean(weights) - 1.0) < 4 * np.std(weights) / math.sqrt(len(weights))
    # (1 - 2f)^2 of the events are effective
    everything = np.ones(len(weights), dtype=bool)
    assert effective_events(weights, everything) / len(weights) == pytest.approx(0.36, rel=0.05)
    assert effective_events(None, everything) == len(weights)


def test_a_pseudo_experiment_fits_weights_with_negative_entries(tmp_path: Path) -> None:
    cfg = _config(tmp_path, negative_weight_fraction=0.2, n_boot=3)
    setting = Setting("irgi", cfg.transforms[0], 4000)
    row = pseudo_experiment(cfg, setting, 0)
    assert row["error"] is None
    assert math.isfinite(row["predicted_A"])
    unit = pseudo_experiment(_config(tmp_path, n_boot=3), setting, 0)
    # the same events, their weights costing the simulation's statistics
    assert row["simulation_effective_A"] < unit["simulation_effective_A"]
    assert row["simulation_statistics"] > unit["simulation_statistics"]
    from rosenblatt.studies.toys.study import fingerprint

    assert fingerprint(cfg, setting) != fingerprint(_config(tmp_path, n_boot=3), setting)


@pytest.mark.parametrize("fraction", [0.5, -0.1, "some"])
def test_a_bad_negative_weight_fraction_is_refused_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], fraction: object
) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(
        yaml.safe_dump({**SMALL, "negative_weight_fraction": fraction}), encoding="utf-8"
    )
    assert main(["run", str(path), "--output", str(tmp_path / "out")]) != 0
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1, lines
    assert "negative_weight_fraction" in lines[0]
    assert not (tmp_path / "out").exists()


def test_n_boot_auto_takes_more_replicas_with_negative_weights(tmp_path: Path) -> None:
    assert _config(tmp_path, n_boot="auto").replicas == 20
    assert _config(tmp_path, n_boot="auto", negative_weight_fraction=0.25).replicas == 50
    assert _config(tmp_path, negative_weight_fraction=0.25).replicas == 6  # as given


def _compile_in_worker() -> tuple[str | None, float, float]:
    import os

    from rosenblatt.transforms._cell_resampling import nonnegative_weights

    rng = np.random.default_rng(1)
    x, y = rng.random(2000), rng.random(2000)
    weights = np.where(rng.random(2000) < 0.25, -2.0, 2.0)
    resampled = nonnegative_weights(x, y, weights)
    return os.environ.get("NUMBA_CACHE_DIR"), float(np.sum(resampled)), float(np.min(resampled))


def test_pool_workers_compile_kernels_after_limiting_their_threads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A worker of the study's pool compiles a kernel no cache holds, as on a fresh machine."""
    pytest.importorskip("numba")
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    from rosenblatt.studies.toys.study import _one_thread

    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "numba"))
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(1, mp_context=context, initializer=_one_thread) as pool:
        cache, total, lowest = pool.submit(_compile_in_worker).result()
    assert cache == str(tmp_path / "numba")
    rng = np.random.default_rng(1)
    rng.random(4000)
    weights = np.where(rng.random(2000) < 0.25, -2.0, 2.0)
    assert total == pytest.approx(float(np.sum(weights)))
    assert lowest >= 0


def test_cached_toys_are_reused_only_by_the_same_code(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rosenblatt.studies.toys import study

    cfg = _config(tmp_path, transforms=[], n_toys=3)
    (setting,) = study.settings(cfg)
    cache = tmp_path / "cache"
    cache.mkdir()
    ran: list[int] = []

    def counted(cfg: ToysConfig, setting: Setting, toy: int) -> Any:
        ran.append(toy)
        return {"toy": toy, "error": None}

    monkeypatch.setattr(study, "pseudo_experiment", counted)
    first = study._setting(cfg, setting, cache)
    assert ran == [0, 1, 2]
    # nothing changed: every toy is read back
    ran.clear()
    assert study._setting(cfg, setting, cache) == first
    assert ran == []
    # a changed transform or estimate (another source digest) computes them again
    monkeypatch.setattr(study, "code_digest", lambda: "another source")
    study._setting(cfg, setting, cache)
    assert ran == [0, 1, 2]
    ran.clear()
    study._setting(cfg, setting, cache)
    assert ran == []
    # so does another version of the package
    monkeypatch.setattr(study, "__version__", "0.0.0+other")
    study._setting(cfg, setting, cache)
    assert ran == [0, 1, 2]


def test_the_code_digest_covers_the_transforms_and_the_toys() -> None:
    from rosenblatt._records import source_digest
    from rosenblatt.studies.toys import study

    assert study.code_digest() == source_digest(*study.TOY_SOURCES)
    assert len(study.code_digest()) == 32
    assert {"transforms", "abcd", "studies/toys/experiment.py"} <= set(study.TOY_SOURCES)
    assert source_digest("transforms") != source_digest("abcd")
    with pytest.raises(FileNotFoundError, match="not a module or folder"):
        source_digest("no_such_module.py")
