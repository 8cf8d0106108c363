"""``rosenblatt fit`` and ``rosenblatt apply`` on the user's own ROOT files (TTrees)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import awkward as ak
import numpy as np
import pytest
from flat_ntuple import TREE, fit_args, write_flat, write_tree

import rosenblatt as rb
from rosenblatt.cli import main

uproot = pytest.importorskip("uproot")


@pytest.fixture
def flat_files(tmp_path: Path) -> tuple[list[Path], dict[str, np.ndarray]]:
    """Two flat ntuples and their concatenated columns."""
    parts = [
        write_flat(tmp_path / f"sample_{i}.root", n, seed=i) for i, n in enumerate((3000, 2000))
    ]
    paths = [tmp_path / "sample_0.root", tmp_path / "sample_1.root"]
    columns = {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}
    return paths, columns


def test_fit_equals_the_fit_in_memory(
    flat_files: tuple[list[Path], dict[str, np.ndarray]],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    paths, columns = flat_files
    output = tmp_path / "t.json"
    args = fit_args(paths, output, "--weight", "evt_w", "--depth", "4", "--chunk-size", "700")
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "fitted on 5,000 events" in out
    n_negative = int((columns["evt_w"] < 0).sum())
    assert f"{n_negative:,} negative weights" in out
    assert f"sum of weights {columns['evt_w'].sum():.6g}" in out
    assert str(output) in out

    x, y = columns["m_jj"], columns["tagger_out"].astype(np.float64)
    # IRGI's columns hold equal events by default, or equal summed weight when asked
    for occupancy in ("events", "weight"):
        if occupancy == "weight":
            assert main([*args, "--occupancy", "weight"]) == 0
        expected = rb.IRGI(depth=4, occupancy=occupancy).fit(x, y, columns["evt_w"])
        expected.save(tmp_path / "expected.json")
        saved = json.loads(output.read_text())
        assert saved.pop("fitted_on")["n_events"] == 5000
        assert saved == json.loads((tmp_path / "expected.json").read_text())
        assert np.array_equal(rb.load(output).transform(x, y), expected.transform(x, y))
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_fit_depth_auto_says_what_it_chose(
    flat_files: tuple[list[Path], dict[str, np.ndarray]],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    paths, _ = flat_files
    output = tmp_path / "auto.json"
    assert main(fit_args(paths[1:], output)) == 0
    fitted = rb.load(output)
    assert isinstance(fitted, rb.IRGI)
    depth = fitted.depth_
    assert f"depth {depth} chosen by cross-validation" in capsys.readouterr().out


def test_apply_writes_a_friend_tree(
    flat_files: tuple[list[Path], dict[str, np.ndarray]],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    paths, _ = flat_files
    transform = tmp_path / "my-transform.json"
    assert main(fit_args(paths, transform, "--depth", "3")) == 0
    out_dir = tmp_path / "friends"
    args = ["apply", str(transform), *map(str, paths), "--treename", TREE]
    args += ["--x", "m_jj", "--score", "tagger_out", "--output-dir", str(out_dir)]
    assert main([*args, "--chunk-size", "333"]) == 0
    printed = capsys.readouterr().out
    fitted = rb.load(transform)
    for path in paths:
        source = uproot.open(str(path))[TREE].arrays(library="np")
        friend_path = out_dir / f"{path.stem}_gamma.root"
        assert str(friend_path) in printed
        with uproot.open(str(friend_path)) as handle:
            assert [k.split(";")[0] for k in handle] == [TREE]
            friend = handle[TREE].arrays(library="np")
        assert sorted(friend) == ["entry", "gamma_my_transform"]
        n = len(source["m_jj"])
        assert np.array_equal(friend["entry"], np.arange(n))
        assert friend["entry"].dtype == np.int64
        expected = fitted.transform(source["m_jj"], source["tagger_out"])
        assert np.array_equal(friend["gamma_my_transform"], expected)
    assert sorted(p.name for p in out_dir.iterdir()) == [
        "sample_0_gamma.root",
        "sample_1_gamma.root",
    ]


def _nanoaod(path: Path, n: int, seed: int) -> dict[str, Any]:
    """NanoAOD's layout: ``nFatJet``, ``FatJet_pt/eta/phi/mass``, event identifiers."""
    rng = np.random.default_rng(seed)
    counts = rng.integers(0, 4, n)
    total = int(counts.sum())
    jets = ak.zip(
        {
            "pt": ak.unflatten(rng.uniform(200.0, 1500.0, total), counts),
            "eta": ak.unflatten(rng.normal(0.0, 1.2, total), counts),
            "phi": ak.unflatten(rng.uniform(-np.pi, np.pi, total), counts),
            "mass": ak.unflatten(rng.uniform(10.0, 250.0, total), counts),
        }
    )
    columns = {
        "run": np.full(n, 1, dtype=np.uint32),
        "luminosityBlock": (1 + np.arange(n) // 700).astype(np.uint32),
        "event": (rng.permutation(n) + 10_000).astype(np.uint64),
        "FatJet": jets,
        "tagger": rng.random(n),
        "genWeight": rng.choice([-1.0, 1.0, 1.0], n).astype(np.float32),
    }
    with uproot.recreate(str(path)) as handle:
        types = {k: (v.type.content if k == "FatJet" else v.dtype) for k, v in columns.items()}
        handle.mktree("Events", types)
        handle["Events"].extend(columns)
    return columns


def _dijet_mass(jets: ak.Array) -> tuple[np.ndarray, np.ndarray]:
    """The invariant mass of the two leading jets by pT (independently of the project's code)."""
    vector = pytest.importorskip("vector")
    ordered = jets[ak.argsort(jets.pt, axis=1, ascending=False)]
    has_two = np.asarray(ak.num(ordered) >= 2)
    two = ordered[has_two][:, :2]
    first = vector.array({f: np.asarray(two[f][:, 0]) for f in ("pt", "eta", "phi", "mass")})
    second = vector.array({f: np.asarray(two[f][:, 1]) for f in ("pt", "eta", "phi", "mass")})
    mass = np.full(len(jets), np.nan)
    mass[has_two] = (first + second).mass
    return mass, has_two


def test_nanoaod_mjj_events_without_two_jets_counted_and_minus_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "nano.root"
    columns = _nanoaod(path, 3000, seed=5)
    mjj, has_two = _dijet_mass(columns["FatJet"])
    lacking = int((~has_two).sum())
    assert lacking > 0
    transform = tmp_path / "nano.json"
    fit = ["fit", str(path), "--x", "mjj", "--score", "tagger", "--weight", "genWeight"]
    assert main([*fit, "--depth", "3", "--output", str(transform)]) == 0
    out = capsys.readouterr().out
    assert f"{lacking:,} of the 3,000 events read were left out" in out
    assert f"{lacking:,} with fewer than two FatJet for --x mjj" in out
    tagger = np.asarray(columns["tagger"])
    weight = np.asarray(columns["genWeight"], dtype=np.float64)
    expected = rb.IRGI(depth=3, occupancy="events").fit(
        mjj[has_two], tagger[has_two], weight[has_two]
    )
    assert np.allclose(
        rb.load(transform).transform(mjj[has_two], tagger[has_two]),
        expected.transform(mjj[has_two], tagger[has_two]),
        rtol=0,
        atol=1e-9,
    )

    friend_path = tmp_path / "friend.root"
    apply = ["apply", str(transform), str(path), "--x", "mjj", "--score", "tagger"]
    assert main([*apply, "--output", str(friend_path), "--name", "nano"]) == 0
    out = capsys.readouterr().out
    assert f"{lacking:,} events lacking a value got gamma = -1" in out
    friend = uproot.open(str(friend_path))["Events"].arrays(library="np")
    assert sorted(friend) == ["event", "gamma_nano", "luminosityBlock", "run"]
    for name in ("run", "luminosityBlock", "event"):
        assert np.array_equal(friend[name], columns[name])
        assert friend[name].dtype == np.asarray(columns[name]).dtype
    gamma = friend["gamma_nano"]
    assert np.all(gamma[~has_two] == -1.0)
    fitted = rb.load(transform)
    assert np.array_equal(gamma[has_two], fitted.transform(mjj[has_two], tagger[has_two]))


@pytest.mark.parametrize("command", ["fit", "apply"])
def test_misspelled_branch_one_line_and_no_output(
    command: str,
    flat_files: tuple[list[Path], dict[str, np.ndarray]],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    paths, _ = flat_files
    transform = tmp_path / "t.json"
    assert main(fit_args(paths, transform, "--depth", "2")) == 0
    capsys.readouterr()
    before = sorted(tmp_path.iterdir())
    if command == "fit":
        args = fit_args(paths, tmp_path / "new.json")
    else:
        args = ["apply", str(transform), *map(str, paths), "--treename", TREE]
        args += ["--x", "m_jj", "--score", "tagger_out", "--output-dir", str(tmp_path / "out")]
    args[args.index("m_jj")] = "m_j"
    assert main(args) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.count("\n") == 1
    assert captured.err.startswith(
        f"rosenblatt {command}: error: {paths[0]}: no branch 'm_j' for --x "
        "(did you mean 'm_jj'?); the tree has ['evt_w', 'm_jj', 'tagger_out']"
    )
    assert sorted(tmp_path.iterdir()) == before


def test_missing_tree_and_not_root(
    flat_files: tuple[list[Path], dict[str, np.ndarray]],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    paths, _ = flat_files
    args = fit_args(paths, tmp_path / "t.json")
    args[args.index(TREE)] = "Events"
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "no tree 'Events'; the file has the trees ['nominal']" in err
    text = tmp_path / "notes.root"
    text.write_text("not a ROOT file\n")
    assert main(fit_args([text], tmp_path / "t.json")) == 2
    assert f"{text}: not a ROOT file" in capsys.readouterr().err
    assert not (tmp_path / "t.json").exists()


def test_non_finite_value_names_file_and_entry(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    columns = {"m_jj": np.linspace(1.0, 2.0, 50), "tagger_out": np.linspace(0.0, 1.0, 50)}
    columns["tagger_out"][37] = np.nan
    path = write_tree(tmp_path / "nan.root", columns)
    assert main(fit_args([path], tmp_path / "t.json", "--chunk-size", "10")) == 2
    err = capsys.readouterr().err
    assert f"{path}: entry 37 of tree 'nominal': --score 'tagger_out' is nan" in err
    assert not (tmp_path / "t.json").exists()


def test_apply_writes_nothing_when_a_later_file_fails(
    flat_files: tuple[list[Path], dict[str, np.ndarray]],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    paths, _ = flat_files
    transform = tmp_path / "t.json"
    assert main(fit_args(paths, transform, "--depth", "2")) == 0
    bad = write_tree(
        tmp_path / "bad.root", {"m_jj": np.array([1.0, np.inf]), "tagger_out": np.ones(2)}
    )
    out_dir = tmp_path / "out"
    args = ["apply", str(transform), str(paths[0]), str(bad), "--treename", TREE]
    args += ["--x", "m_jj", "--score", "tagger_out", "--output-dir", str(out_dir)]
    assert main(args) == 2
    assert "entry 1 of tree 'nominal': --x 'm_jj' is inf" in capsys.readouterr().err
    assert not out_dir.exists()
    out_dir.mkdir()
    assert main(args) == 2
    assert list(out_dir.iterdir()) == []


def test_function_quantity_from_a_file(
    flat_files: tuple[list[Path], dict[str, np.ndarray]],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    pytest.importorskip("coffea")
    paths, columns = flat_files
    monkeypatch.chdir(tmp_path)
    (tmp_path / "my_score.py").write_text(
        "def score(events):\n    return 1.0 - 2.0 * events.tagger_out\n"
    )
    transform = tmp_path / "f.json"
    args = fit_args(paths, transform, "--depth", "3", "--chunk-size", "1500")
    args[args.index("tagger_out")] = "my_score.py:score"
    assert main(args) == 0
    assert "--score function my_score.py:score" in capsys.readouterr().out
    x = columns["m_jj"]
    y = 1.0 - 2.0 * columns["tagger_out"]
    expected = rb.IRGI(depth=3).fit(x, np.asarray(y, dtype=np.float64))
    assert np.array_equal(rb.load(transform).transform(x, y), expected.transform(x, y))

    out = tmp_path / "friend.root"
    apply = ["apply", str(transform), str(paths[1]), "--treename", TREE, "--x", "m_jj"]
    assert main([*apply, "--score", "my_score.py:score", "--output", str(out)]) == 0
    friend = uproot.open(str(out))[TREE].arrays(library="np")
    source = uproot.open(str(paths[1]))[TREE].arrays(library="np")
    y1 = 1.0 - 2.0 * source["tagger_out"]
    assert np.array_equal(friend["gamma_f"], expected.transform(source["m_jj"], y1))
    # the recorded function is the default score
    recorded = tmp_path / "recorded.root"
    assert main(["apply", str(transform), str(paths[1]), "--output", str(recorded)]) == 0
    again = uproot.open(str(recorded))[TREE].arrays(library="np")
    assert np.array_equal(again["gamma_f"], friend["gamma_f"])

    (tmp_path / "broken.py").write_text("def score(events):\n    return events.no_such\n")
    args[args.index("my_score.py:score")] = "broken.py:score"
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "the function" in err
    assert "broken.py" in err
    assert err.count("\n") == 1


def test_bad_options_are_refused(
    flat_files: tuple[list[Path], dict[str, np.ndarray]],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    paths, _ = flat_files
    assert main(fit_args(paths, tmp_path / "t.json", "--transform", "kde", "--depth", "3")) == 2
    assert "--depth is a parameter of irgi" in capsys.readouterr().err
    args = fit_args(paths, tmp_path / "t.json", "--transform", "gridkde", "--occupancy", "weight")
    assert main(args) == 2
    assert "--occupancy is a parameter of irgi, not of gridkde" in capsys.readouterr().err
    without_score = ["fit", *map(str, paths), "--x", "m_jj", "--output", str(tmp_path / "t.json")]
    assert main(without_score) == 2
    assert "give --score, or --config with its abcd.x and score:" in capsys.readouterr().err
    transform = tmp_path / "t.json"
    assert main(fit_args(paths, transform, "--depth", "2")) == 0
    args = ["apply", str(transform), *map(str, paths), "--treename", TREE]
    args += ["--x", "m_jj", "--score", "tagger_out", "--output", str(tmp_path / "one.root")]
    assert main(args) == 2
    assert "--output names one file, but 2 inputs" in capsys.readouterr().err
    assert not (tmp_path / "one.root").exists()


def test_commands_are_listed(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    assert "fit" in out
    assert "apply" in out
    with pytest.raises(SystemExit) as exit_info:
        main(["apply", "--help"])
    assert exit_info.value.code == 0
    assert "AddFriend" in capsys.readouterr().out


def test_fit_records_what_it_was_fitted_on(
    flat_files: tuple[list[Path], dict[str, np.ndarray]], tmp_path: Path
) -> None:
    paths, columns = flat_files
    output = tmp_path / "t.json"
    assert main(fit_args(paths, output, "--weight", "evt_w", "--depth", "3")) == 0
    record = rb.serialization.fitted_on(rb.load(output))
    assert record is not None
    files = record.pop("files")
    assert record == {
        "x": "m_jj",
        "y": "tagger_out",
        "weight": "evt_w",
        "treename": TREE,
        "schema": "base",
        "jets": "FatJet",
        "n_events": 5000,
        "sum_weight": pytest.approx(columns["evt_w"].sum()),
    }
    assert [f["name"] for f in files] == [str(p) for p in paths]
    for entry, path, n in zip(files, paths, (3000, 2000), strict=True):
        content = path.read_bytes()
        assert entry["size"] == len(content)
        assert entry["blake2b"] == hashlib.blake2b(content, digest_size=32).hexdigest()
        assert (entry["kind"], entry["entries"]) == ("tree", n)


@pytest.fixture
def fitted(
    flat_files: tuple[list[Path], dict[str, np.ndarray]],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> tuple[list[Path], dict[str, np.ndarray], Path]:
    """The flat files, their columns and ``t.json``, fitted on them by ``rosenblatt fit``."""
    paths, columns = flat_files
    transform = tmp_path / "t.json"
    assert main(fit_args(paths, transform, "--depth", "3")) == 0
    capsys.readouterr()
    return paths, columns, transform


def _apply(transform: Path, paths: list[Path], out_dir: Path, *extra: str) -> list[str]:
    return ["apply", str(transform), *map(str, paths), "--output-dir", str(out_dir), *extra]


def test_apply_takes_the_recorded_quantities_and_tree(
    fitted: tuple[list[Path], dict[str, np.ndarray], Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    paths, columns, transform = fitted
    assert main(_apply(transform, paths[:1], tmp_path / "out")) == 0
    assert "--x" not in capsys.readouterr().err
    friend = uproot.open(str(tmp_path / "out" / "sample_0_gamma.root"))[TREE]
    n = 3000
    expected = rb.load(transform).transform(columns["m_jj"][:n], columns["tagger_out"][:n])
    assert np.array_equal(friend["gamma_t"].array(library="np"), expected)


@pytest.mark.parametrize(
    ("given", "message"),
    [
        (
            ["--x", "evt_w"],
            (
                "--x evt_w is not the quantity {t} was fitted on (x = m_jj); leave --x out to "
                "use the recorded one, or give --allow-other-quantities"
            ),
        ),
        (
            ["--score", "m_jj"],
            "--score m_jj is not the quantity {t} was fitted on (y = tagger_out)",
        ),
    ],
)
def test_apply_refuses_another_quantity_in_one_line(
    given: list[str],
    message: str,
    fitted: tuple[list[Path], dict[str, np.ndarray], Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    paths, _, transform = fitted
    before = sorted(tmp_path.iterdir())
    assert main(_apply(transform, paths, tmp_path / "out", *given)) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.count("\n") == 1
    assert captured.err.startswith("rosenblatt apply: error: " + message.format(t=transform))
    assert sorted(tmp_path.iterdir()) == before


def test_apply_stops_when_too_many_events_lie_outside_the_domain(
    fitted: tuple[list[Path], dict[str, np.ndarray], Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    paths, columns, transform = fitted
    before = sorted(tmp_path.iterdir())
    # the wrong branch, allowed: every event outside in x
    other = ["--x", "evt_w", "--allow-other-quantities"]
    assert main(_apply(transform, paths, tmp_path / "out", *other)) == 2
    captured = capsys.readouterr()
    assert captured.err.count("\n") == 1
    low = rb.load(transform).domain_[0][0]
    assert captured.err.startswith(
        "rosenblatt apply: error: 5,000 of the 5,000 events (100.0%) lie outside the domain "
        f"{transform} was fitted on (5,000 with --x evt_w below {low:g}), more than "
        "--max-outside 0.05: is --x or --score the wrong branch? Nothing was written"
    )
    assert sorted(tmp_path.iterdir()) == before
    # 6% of the events beyond the fitted mass: refused; allowed by --max-outside 0.1
    n = 1000
    shifted = {k: v[:n].copy() for k, v in columns.items()}
    shifted["m_jj"][:60] += 5000.0
    sample = write_tree(tmp_path / "shifted.root", shifted)
    assert main(_apply(transform, [sample], tmp_path / "out")) == 2
    assert "60 of the 1,000 events (6.0%) lie outside" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
    assert main(_apply(transform, [sample], tmp_path / "out", "--max-outside", "0.1")) == 0
    assert "60 events lie outside the transform's domain" in capsys.readouterr().out


def test_apply_needs_the_quantities_of_a_transform_that_records_none(
    flat_files: tuple[list[Path], dict[str, np.ndarray]],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    paths, columns = flat_files
    transform = tmp_path / "plain.json"
    rb.IRGI(depth=3).fit(columns["m_jj"], columns["tagger_out"]).save(transform)
    assert main(_apply(transform, paths, tmp_path / "out", "--treename", TREE)) == 2
    assert capsys.readouterr().err == (
        f"rosenblatt apply: error: {transform} does not record what it was fitted on (it was "
        "not saved by rosenblatt fit): give --x and --score\n"
    )
    given = ["--treename", TREE, "--x", "m_jj", "--score", "tagger_out"]
    assert main(_apply(transform, paths, tmp_path / "out", *given)) == 0


def test_fit_mixes_the_defining_datasets_of_a_configuration_at_their_cross_sections(
    flat_files: tuple[list[Path], dict[str, np.ndarray]],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    paths, _ = flat_files
    config = tmp_path / "analysis.yaml"
    config.write_text(
        "study: abcd\n"
        f"treename: {TREE}\n"
        "lumi: 10.0\n"
        "datasets:\n"
        f"  light: {{files: [{paths[0].name}], role: defining, weight: evt_w, xsec: 4.6}}\n"
        f"  heavy: {{files: [{paths[1].name}], role: defining, weight: evt_w, xsec: 1.2}}\n"
        "  other: {files: [sample_1.root], role: background}\n"
        "score: tagger_out\n"
        "transforms: [{kind: irgi, depth: 3}]\n"
        "abcd: {x: m_jj, x0: [2000.0, 3000.0], n_x0: 3, y0: [0.3, 0.7], n_y0: 3}\n"
    )
    output = tmp_path / "mixed.json"
    args = ["fit", "--config", str(config), "--x", "m_jj", "--score", "tagger_out"]
    assert main([*args, "--depth", "3", "--output", str(output)]) == 0
    assert f"the defining datasets of {config}: light, heavy, mixed" in capsys.readouterr().out
    # without --x and --score: the configuration's abcd.x and score:
    from_config = tmp_path / "from_config.json"
    assert main(["fit", "--config", str(config), "--depth", "3", "--output", str(from_config)]) == 0
    assert "(--x m_jj, --score tagger_out)" in capsys.readouterr().out
    assert rb.load(from_config).get_state() == rb.load(output).get_state()

    x, y, w = [], [], []
    for path, xsec in zip(paths, (4.6, 1.2), strict=True):
        events = uproot.open(str(path))[TREE].arrays(library="np")
        x.append(events["m_jj"])
        y.append(events["tagger_out"].astype(np.float64))
        w.append(events["evt_w"] * (xsec * 10.0 / events["evt_w"].sum()))
    # the configuration's cut levels, as the analysis gives them
    by_hand = rb.IRGI(depth=3, cut_levels=(0.3, 0.5, 0.7), occupancy="events")
    by_hand.fit(np.concatenate(x), np.concatenate(y), np.concatenate(w))
    fitted = rb.load(output)
    assert fitted.get_state() == by_hand.get_state()
    record = rb.serialization.fitted_on(fitted)
    assert record is not None
    assert record["lumi"] == 10.0
    assert sorted(record["datasets"]) == ["heavy", "light"]
    assert record["datasets"]["heavy"]["xsec"] == 1.2
    assert [f["name"] for f in record["files"]] == [str(p) for p in paths]
    assert record["sum_weight"] == pytest.approx(4.6 * 10.0 + 1.2 * 10.0)
    # a kernel estimate is given the cut levels too
    kernel = tmp_path / "kde.json"
    assert main([*args, "--transform", "kde", "--sigma-r", "0.2", "--output", str(kernel)]) == 0
    assert tuple(rb.load(kernel).cut_levels) == (0.3, 0.5, 0.7)
    capsys.readouterr()
    # without --sigma-r, the analysis's {kind: kde}: the library's default width, not a
    # cross-validated one
    default_kernel = tmp_path / "kde_default.json"
    assert main([*args, "--transform", "kde", "--output", str(default_kernel)]) == 0
    assert "chosen by cross-validation" not in capsys.readouterr().out
    by_hand_kernel = rb.KDE(cut_levels=(0.3, 0.5, 0.7))
    by_hand_kernel.fit(np.concatenate(x), np.concatenate(y), np.concatenate(w))
    saved, expected = rb.load(default_kernel).get_state(), by_hand_kernel.get_state()
    assert saved.pop("sum_weight") == pytest.approx(expected.pop("sum_weight"))
    assert saved == expected

    assert main([*args, str(paths[0]), "--output", str(output)]) == 2
    assert "leave FILEs out" in capsys.readouterr().err


def test_a_recorded_model_score_is_refused_as_a_default_in_one_line() -> None:
    from rosenblatt.commands.apply import _as_option

    assert _as_option("tagger_out", "--score", "t.json") == "tagger_out"
    assert _as_option("function f.py:y", "--score", "t.json") == "f.py:y"
    with pytest.raises(
        ValueError, match=r"t\.json was fitted on y = xgboost m\.json.*give --score"
    ):
        _as_option("xgboost m.json", "--score", "t.json")
