"""Rows of the bad-input policy through the API, the CLI and the processor.

Each row feeds one bad input and asserts the documented outcome: an error that
names the argument or file, what is wrong and how many events are affected
(exit status 2 and a message on stderr for the CLI), or the documented result.
"""

from __future__ import annotations

import json
from pathlib import Path

import awkward as ak
import numpy as np
import pytest
from gaussian_blob import bivariate_normal

import rosenblatt as rb
from rosenblatt.cli import main as cli_main
from rosenblatt.io import EventFileError
from rosenblatt.serialization import SCHEMA_VERSION

uproot = pytest.importorskip("uproot")
pytest.importorskip("coffea")

#: particles (pt, eta, phi) of five events; the last three have two jets or more
ROWS = [
    [(900.0, 0.0, 0.0), (800.0, 0.1, 3.0)],
    [(500.0, 0.2, 0.0), (400.0, 0.0, 0.05), (20.0, 1.0, 1.0)],
    [(700.0, -0.3, 1.0), (650.0, 0.4, -2.0), (30.0, 1.0, 0.0)],
    [(1200.0, 0.5, 0.5), (1100.0, -0.5, -2.6)],
    [(300.0, 1.5, 2.0), (310.0, -1.5, -1.0)],
]


def particles_of(rows: list[list[tuple[float, float, float]]]) -> ak.Array:
    flat = np.array([p for row in rows for p in row], dtype=float).reshape(-1, 3)
    return ak.unflatten(
        ak.zip({"pt": flat[:, 0], "eta": flat[:, 1], "phi": flat[:, 2]}),
        [len(row) for row in rows],
    )


def write_events(path: Path, rows=ROWS, weight=None) -> Path:
    from rosenblatt.hep.particles import make_events
    from rosenblatt.io.root import write_root

    weight = [1.0] * len(rows) if weight is None else weight
    write_root(path, make_events(particles_of(rows), label=0, weight=weight))
    return path


def run_features(path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    output = tmp_path / "table.parquet"
    status = cli_main(["features", str(path), "--output", str(output), "--quiet"])
    err = capsys.readouterr().err
    if status != 0:
        assert not output.exists()
    return status, err


def run_api(path: Path):
    from rosenblatt.processors.runner import run_dijet

    return run_dijet([str(path)], progress=False)


# event files through the processor and `rosenblatt features` ---------------------------


def test_good_file_is_the_reference(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write_events(tmp_path / "good.root")
    out = run_api(path)
    assert out["cutflow"]["good"]["read"] == len(ROWS)
    status, _ = run_features(path, tmp_path, capsys)
    assert status == 0


def test_non_finite_weight_in_a_root_branch(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_events(tmp_path / "nanweight.root", weight=[1.0, np.nan, 1.0, np.inf, 1.0])
    with pytest.raises(
        ValueError, match=r"weight: 2 of 5 events have a non-finite weight \(.*nanweight"
    ):
        run_api(path)
    status, err = run_features(path, tmp_path, capsys)
    assert status == 2
    assert "nanweight.root" in err
    assert "2 of 5 events" in err


@pytest.mark.parametrize("field", ["pt", "eta", "phi"])
def test_nan_in_a_particle_branch(
    field: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = [list(row) for row in ROWS]
    index = {"pt": 0, "eta": 1, "phi": 2}[field]
    for event in (1, 3):
        particle = list(rows[event][0])
        particle[index] = np.nan
        rows[event][0] = tuple(particle)
    path = write_events(tmp_path / "nanpart.root", rows=rows)
    status, err = run_features(path, tmp_path, capsys)
    assert status == 2
    assert "nanpart.root" in err
    assert "2" in err
    assert "NaN" in err


def test_empty_root_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "empty.root"
    path.touch()
    with pytest.raises(EventFileError, match=r"empty\.root: the file is empty \(0 bytes\)"):
        run_api(path)
    status, err = run_features(path, tmp_path, capsys)
    assert status == 2
    assert "empty.root: the file is empty" in err


def test_root_file_with_zero_events(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from rosenblatt.io.root import RootWriter

    path = tmp_path / "none.root"
    RootWriter.create(path).close()
    with pytest.raises(EventFileError, match=r"none\.root: .*holds no events"):
        run_api(path)
    status, err = run_features(path, tmp_path, capsys)
    assert status == 2
    assert "none.root" in err
    assert "holds no events" in err


def test_lhco_file_with_zero_events(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("tables")
    from rosenblatt.io.lhco import LHCOWriter

    path = tmp_path / "none.h5"
    LHCOWriter.create(path).close()
    with pytest.raises(EventFileError, match=r"none\.h5: .*holds no events"):
        run_api(path)
    status, err = run_features(path, tmp_path, capsys)
    assert status == 2
    assert "none.h5" in err
    assert "holds no events" in err


@pytest.mark.parametrize("fraction", [0.1, 0.25, 0.5, 0.9])
def test_truncated_root_file(
    fraction: float, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A truncated file is refused naming it, or (data intact) gives every event."""
    good = write_events(tmp_path / "good.root")
    path = tmp_path / "cut.root"
    path.write_bytes(good.read_bytes()[: int(good.stat().st_size * fraction)])
    status, err = run_features(path, tmp_path, capsys)
    if status == 0:
        table = ak.from_parquet(str(tmp_path / "table.parquet"))
        reference = run_api(good)["table"]
        assert ak.to_list(table["mjj"]) == ak.to_list(reference["mjj"])
    else:
        assert status == 2
        assert "cut.root" in err


def test_root_file_with_zero_events_after_the_two_jet_selection(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Events without two jets are counted in the cut flow; an empty table is not an error."""
    path = write_events(
        tmp_path / "onejet.root", rows=[[(900.0, 0.0, 0.0)], [], [(50.0, 1.0, 1.0)]]
    )
    out = run_api(path)
    assert out["cutflow"]["onejet"] == {"read": 3, "fewer than two jets": 3, "in table": 0}
    assert len(out["table"]) == 0
    status, _ = run_features(path, tmp_path, capsys)
    assert status == 0


def test_missing_branch_lists_what_is_there(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "nophi.root"
    particles = particles_of(ROWS)
    with uproot.recreate(path) as handle:
        handle.mktree(
            "Events", {"Part": ak.zip({"pt": particles.pt, "eta": particles.eta}).type.content}
        )
        handle["Events"].extend({"Part": ak.zip({"pt": particles.pt, "eta": particles.eta})})
    status, err = run_features(path, tmp_path, capsys)
    assert status == 2
    assert "Part_phi" in err
    assert "Part_eta" in err
    assert "Part_pt" in err


# saved transforms through `rosenblatt export` -------------------------------------------


@pytest.fixture
def saved(tmp_path: Path) -> Path:
    x, y = bivariate_normal(2000, seed=3)
    path = tmp_path / "t.json"
    rb.IRGI(2).fit(x, y).save(path)
    return path


def export(path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    out = tmp_path / "out.correctionlib.json"
    status = cli_main(["export", "--correctionlib", str(out), str(path), "--quiet"])
    err = capsys.readouterr().err
    if status != 0:
        assert not out.exists()
    return status, err


def test_export_of_a_newer_schema(
    saved: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    document = json.loads(saved.read_text())
    document["schema_version"] = SCHEMA_VERSION + 1
    saved.write_text(json.dumps(document))
    status, err = export(saved, tmp_path, capsys)
    assert status == 2
    assert str(saved) in err
    assert f"schema version {SCHEMA_VERSION + 1}" in err
    assert "upgrade rosenblatt" in err


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda s: s["cdf"][1].__setitem__(2, 1.5), "cdf"),
        (lambda s: s["y_edges"][1].reverse(), "y_edges"),
        (lambda s: s["x_centres"].pop(), "x_centres"),
        (lambda s: s.__setitem__("cdf", "__import__('os').system('false')"), "cdf"),
    ],
    ids=["cdf-above-one", "non-monotone-edges", "shape", "code-in-a-string"],
)
def test_export_of_a_tampered_transform(
    saved: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], edit, message: str
) -> None:
    document = json.loads(saved.read_text())
    edit(document["state"])
    saved.write_text(json.dumps(document))
    status, err = export(saved, tmp_path, capsys)
    assert status == 2
    assert str(saved) in err
    assert message in err


def test_export_of_an_empty_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "empty.json"
    path.touch()
    status, err = export(path, tmp_path, capsys)
    assert status == 2
    assert "empty.json" in err


# transforms: saturated scores and events outside the domain -----------------------------


def saturated(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.normal(3000.0, 400.0, n)
    y = rng.uniform(0.0, 1.0, n)
    u = rng.uniform(size=n)
    y[u < 0.3] = 1.0
    y[u > 0.8] = 0.0
    return x, y


def test_saturated_classifier_kde() -> None:
    x, y = saturated(3000, seed=1)
    t = rb.KDE(0.1).fit(x, y)
    gamma = t.transform(x, y)
    assert np.all(np.isfinite(gamma))
    assert np.all((gamma >= 0) & (gamma <= 1))
    # H(0) = 1: every score at the top of the range maps to 1
    assert np.all(gamma[y == 1.0] == 1.0)
    # the events at y = 0 share, at each x, the kernel-weighted fraction of zeros
    x0 = np.full(5, 3000.0)
    zeros = t.transform(x0, np.zeros(5))
    assert np.all(zeros == zeros[0])
    kernel = np.exp(-0.5 * ((x - 3000.0) / t.bandwidth_) ** 2)
    assert zeros[0] == pytest.approx(kernel[y == 0.0].sum() / kernel.sum(), abs=1e-9)


@pytest.mark.parametrize("make", [lambda: rb.IRGI(3), lambda: rb.KDE(0.1)], ids=["irgi", "kde"])
def test_saturated_classifier_survives_save_and_load(make, tmp_path: Path) -> None:
    x, y = saturated(3000, seed=2)
    t = make().fit(x, y)
    path = tmp_path / "t.json"
    t.save(path)
    np.testing.assert_array_equal(rb.load(path).transform(x, y), t.transform(x, y))


@pytest.mark.parametrize("make", [lambda: rb.IRGI(3), lambda: rb.KDE(0.1)], ids=["irgi", "kde"])
def test_outside_the_domain_in_awkward_input_is_kept_and_counted(make) -> None:
    x, y = bivariate_normal(3000, seed=4)
    t = make().fit(x, y)
    jagged_x = ak.Array([[0.0, 50.0], [], [-50.0], [0.1, 0.2, 0.3]])
    jagged_y = ak.Array([[60.0, 0.0], [], [-60.0], [0.0, 0.0, 0.0]])
    gamma = t.transform(jagged_x, jagged_y)
    assert ak.to_list(ak.num(gamma)) == [2, 0, 1, 3]
    assert ak.to_list(gamma)[0][0] == 1.0
    assert ak.to_list(gamma)[2][0] == 0.0
    counts = t.outside(jagged_x, jagged_y)
    assert (counts.x_below, counts.x_above, counts.y_below, counts.y_above) == (1, 1, 1, 1)
    assert counts.total == 3
