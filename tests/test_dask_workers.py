"""The abcd study on a dask cluster of separately started processes, as on a batch system.

A ``dask scheduler`` and two ``dask worker`` processes are started here, each in its own
temporary working folder, the workers' ``--local-directory`` elsewhere, as a cluster of
dask-jobqueue's would be. The study run on it gives the results of the futures executor bit
for bit. Each worker records, through an audit hook (``sys.addaudithook``, loaded with
``--preload``), every file it opens, renames or makes under the driver's folder: the
tasks carry the transforms by value (no worker opens a file of the results folder), and
the places where the workers still need the driver's disk are named by the test
:func:`test_the_workers_need_the_data_folder_but_never_the_results_folder`. Without a
shared disk, an XGBoost model and a module of the user's functions named by path in the
driver's folder travel with the tasks as bytes, and so does the TorchScript file of a
scorer of particle-level files (track images): no worker opens them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

pytest.importorskip("coffea")
pytest.importorskip("pyhf")
pytest.importorskip("distributed")
uproot = pytest.importorskip("uproot")

from dijet_ntuple import dijet_columns

from rosenblatt.cli import main

pytestmark = [pytest.mark.slow, pytest.mark.system]

#: the audit hook each worker loads: it appends ``event<TAB>path<TAB>mode`` to its log
#: for every path under ``ROSENBLATT_AUDIT_PREFIX`` (parquet's reads and writes included)
_PRELOAD = """\
import os
import sys

_prefix = os.environ["ROSENBLATT_AUDIT_PREFIX"]
_log = os.open(os.environ["ROSENBLATT_AUDIT_LOG"], os.O_WRONLY | os.O_APPEND | os.O_CREAT)


def _hook(event, args):
    if event not in ("open", "os.rename", "os.mkdir", "os.remove"):
        return
    path = args[0]
    if isinstance(path, bytes):
        path = os.fsdecode(path)
    if not isinstance(path, str):
        return
    path = os.path.abspath(path)
    if path.startswith(_prefix):
        mode = args[1] if event == "open" and isinstance(args[1], str) else ""
        if event == "open" and args[1] is None:
            mode = "w" if args[2] & (os.O_WRONLY | os.O_RDWR) else "r"
        os.write(_log, f"{event}\\t{path}\\t{mode}\\n".encode())


sys.addaudithook(_hook)

# pyarrow reads and writes parquet in C++, unseen by the hook: its two calls are wrapped
import pyarrow.parquet as _pq

for _name, _mode in (("read_table", "r"), ("write_table", "w")):

    def _wrapped(*args, _call=getattr(_pq, _name), _mode=_mode, **kwargs):
        where = args[0] if _mode == "r" else args[1]
        if isinstance(where, (str, os.PathLike)):
            _hook("open", (os.fspath(where), _mode, 0))
        return _call(*args, **kwargs)

    setattr(_pq, _name, _wrapped)

# so does xgboost: a booster loaded from a file is recorded as an open of that file
try:
    import xgboost as _xgboost
except ImportError:
    _xgboost = None
if _xgboost is not None:

    def _load_model(self, fname, _call=_xgboost.Booster.load_model):
        if isinstance(fname, (str, os.PathLike)):
            _hook("open", (os.fspath(fname), "r", 0))
        return _call(self, fname)

    _xgboost.Booster.load_model = _load_model

# and torch: a TorchScript module or a state dict loaded from a path is recorded as an open
try:
    import torch as _torch
except ImportError:
    _torch = None
if _torch is not None:

    def _recorded(call):
        def load(f, *args, **kwargs):
            if isinstance(f, (str, os.PathLike)):
                _hook("open", (os.fspath(f), "r", 0))
            return call(f, *args, **kwargs)

        return load

    _torch.jit.load = _recorded(_torch.jit.load)
    _torch.load = _recorded(_torch.load)
"""


def _dask(command: str) -> list[str]:
    """The command line of ``dask scheduler`` or ``dask worker`` of this interpreter."""
    script = Path(sys.executable).with_name("dask")
    if script.is_file():
        return [str(script), command]
    return [sys.executable, "-m", f"distributed.cli.dask_{command}"]


class Cluster:
    """A running scheduler and its workers; ``opened()`` reads what the workers touched."""

    def __init__(self, address: str, logs: list[Path]) -> None:
        self.address, self.logs = address, logs

    def opened(self) -> list[tuple[str, str, str]]:
        """Every ``(event, path, mode)`` the workers recorded since the last :meth:`clear`."""
        lines = [line for log in self.logs for line in log.read_text().splitlines()]
        return [tuple(line.split("\t")) for line in lines]  # type: ignore[misc]

    def clear(self) -> None:
        """Forget what the workers recorded (no task runs in between)."""
        for log in self.logs:
            log.write_text("")


class Run:
    """A study's results folder and what the cluster's workers touched while it ran."""

    def __init__(self, out: Path, opened: list[tuple[str, str, str]]) -> None:
        self.out, self.opened = out, opened


@pytest.fixture(scope="module")
def driver(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The driver's folder: the input files, the configuration, data and results."""
    folder = tmp_path_factory.mktemp("driver").resolve()
    rng = np.random.default_rng(5)
    for name, n, signal in (("qcd_def", 9000, False), ("qcd", 6000, False), ("sig", 900, True)):
        columns = dijet_columns(rng, n, signal)
        columns["w_mc"] = rng.choice([-0.5, 1.0, 1.5], n, p=[0.1, 0.6, 0.3])
        _write_tree(folder / f"{name}.root", columns)
    data = {
        key: np.concatenate([a, b])
        for (key, a), b in zip(
            dijet_columns(rng, 6000, False).items(),
            dijet_columns(rng, 60, True).values(),
            strict=True,
        )
    }
    _write_tree(folder / "data.root", data)
    return folder


def _write_tree(path: Path, columns: dict[str, np.ndarray]) -> None:
    with uproot.recreate(path) as handle:
        handle.mktree("nominal", {key: value.dtype for key, value in columns.items()})
        handle["nominal"].extend(columns)


@pytest.fixture(scope="module")
def cluster(driver: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """``dask scheduler`` and two ``dask worker`` processes, each in a folder of its own."""
    from dask.distributed import Client

    base = tmp_path_factory.mktemp("cluster").resolve()
    preload = base / "audit_preload.py"
    preload.write_text(_PRELOAD, encoding="utf-8")
    scheduler_file = base / "scheduler" / "s.json"
    scheduler_file.parent.mkdir()
    processes: list[subprocess.Popen[bytes]] = []
    logs: list[Path] = []
    try:
        processes.append(
            subprocess.Popen(
                [
                    *_dask("scheduler"),
                    "--host",
                    "127.0.0.1",
                    "--port",
                    "0",
                    "--no-dashboard",
                    "--scheduler-file",
                    str(scheduler_file),
                ],
                cwd=scheduler_file.parent,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
        )
        deadline = time.monotonic() + 60
        while not scheduler_file.is_file() and time.monotonic() < deadline:
            time.sleep(0.2)
        for index in range(2):
            home = base / f"worker-{index}"
            home.mkdir()
            logs.append(home / "audit.log")
            logs[-1].touch()
            env = os.environ | {
                "ROSENBLATT_AUDIT_PREFIX": str(driver),
                "ROSENBLATT_AUDIT_LOG": str(logs[-1]),
            }
            processes.append(
                subprocess.Popen(
                    [
                        *_dask("worker"),
                        "--scheduler-file",
                        str(scheduler_file),
                        "--nthreads",
                        "1",
                        "--no-dashboard",
                        "--local-directory",
                        str(base / f"scratch-{index}"),
                        "--preload",
                        str(preload),
                    ],
                    cwd=home,
                    env=env,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
            )
        with Client(scheduler_file=str(scheduler_file), timeout=60) as client:
            client.wait_for_workers(2, timeout=120)
            address = client.scheduler.address
        yield Cluster(address, logs)
    finally:
        for process in reversed(processes):
            process.terminate()
        for process in processes:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def _config(
    driver: Path, name: str, executor: dict[str, Any], changes: dict[str, Any] | None = None
) -> Path:
    xsec = {"qcd": 2000.0, "sig": 10.0}
    config: dict[str, Any] = {
        "study": "abcd",
        "name": name,
        "treename": "nominal",
        "lumi": 3.0,
        "datasets": {
            "qcd-defining": {
                "files": [str(driver / "qcd_def.root")],
                "role": "defining",
                "weight": "w_mc",
                "xsec": xsec["qcd"],
            },
            "qcd": {
                "files": [str(driver / "qcd.root")],
                "role": "background",
                "weight": "w_mc",
                "xsec": xsec["qcd"],
            },
            "sig": {
                "files": [str(driver / "sig.root")],
                "role": "signal",
                "weight": "w_mc",
                "xsec": xsec["sig"],
            },
            "data": {"files": [str(driver / "data.root")], "role": "data"},
        },
        "score": "tagger_out",
        "transforms": [{"kind": "irgi", "depth": 5}, {"kind": "gridkde"}],
        "abcd": {"x": "m_jj_reco", "x0": [2200.0, 3800.0], "n_x0": 5, "y0": [0.1, 0.9], "n_y0": 5},
        "executor": {"chunksize": 2000, **executor},
        "statistics": {"n_boot": 0},
        "data": {"folder": str(driver / f"data-{name}")},
    }
    for key, value in (changes or {}).items():
        if key == "x":
            config["abcd"]["x"] = value
        elif key == "executor_chunksize":
            config["executor"]["chunksize"] = value
        elif value is None:
            config.pop(key)
        else:
            config[key] = value
    path = driver / f"{name}.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return path


def _run(
    driver: Path, name: str, executor: dict[str, Any], changes: dict[str, Any] | None = None
) -> Path:
    out = driver / f"results-{name}"
    assert main(["run", str(_config(driver, name, executor, changes)), "--output", str(out)]) == 0
    return out


@pytest.fixture(scope="module")
def on_futures(driver: Path) -> Path:
    return _run(driver, "futures", {"kind": "futures", "workers": 2})


def _on_cluster(
    driver: Path,
    cluster: Cluster,
    name: str,
    changes: dict[str, Any] | None = None,
    **executor: Any,
) -> Run:
    cluster.clear()
    out = _run(driver, name, {"kind": "dask", "scheduler": cluster.address, **executor}, changes)
    return Run(out, cluster.opened())


@pytest.fixture(scope="module")
def on_cluster(driver: Path, cluster: Cluster) -> Run:
    return _on_cluster(driver, cluster, "cluster")


@pytest.fixture(scope="module")
def unshared(driver: Path, cluster: Cluster) -> Run:
    return _on_cluster(driver, cluster, "unshared", shared_disk=False)


def _hashes(out: Path) -> dict[str, str]:
    """Each file of a run (its manifest) by its hash.

    Left out: the wall times, the report and figures that show them, and ``abcd.root``,
    whose ROOT header holds the time it was written (its histograms are compared).
    """
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    files = manifest["files"]
    entries = files.items() if isinstance(files, dict) else ((f["path"], f) for f in files)
    return {
        name: entry["blake2b"] if isinstance(entry, dict) else str(entry)
        for name, entry in entries
        if not name.endswith((".md", ".log", ".png", ".pdf", ".svg"))
        and name not in ("summary.json", "timings.json", "abcd.root")
    }


def _assert_same_results(actual: Path, expected: Path) -> None:
    """Two runs' results agree bit for bit, but for wall times and names."""
    assert _hashes(expected), "the reference run wrote no file"
    assert _hashes(actual) == _hashes(expected)
    summary = json.loads((actual / "summary.json").read_text(encoding="utf-8"))
    reference = json.loads((expected / "summary.json").read_text(encoding="utf-8"))
    assert _without_times(summary) == _without_times(reference)
    with uproot.open(actual / "abcd.root") as a, uproot.open(expected / "abcd.root") as b:
        assert sorted(a.keys(cycle=False)) == sorted(b.keys(cycle=False))
        for key in b.keys(cycle=False):
            assert np.array_equal(a[key].values(flow=True), b[key].values(flow=True)), key
            assert np.array_equal(a[key].variances(flow=True), b[key].variances(flow=True)), key


def test_a_cluster_of_separate_processes_gives_the_futures_results_bit_for_bit(
    on_futures: Path, on_cluster: Run
) -> None:
    _assert_same_results(on_cluster.out, on_futures)


def test_without_a_shared_disk_the_results_are_the_futures_results_bit_for_bit(
    on_futures: Path, unshared: Run
) -> None:
    _assert_same_results(unshared.out, on_futures)


def _without_times(value: Any) -> Any:
    """A summary without its wall times and the run's name and configuration file."""
    if isinstance(value, dict):
        return {
            key: _without_times(item)
            for key, item in value.items()
            if key not in ("step_seconds", "name", "configuration_file")
        }
    if isinstance(value, list):
        return [_without_times(item) for item in value]
    return value


def _places(run: Run, driver: Path, name: str) -> dict[str, set[str]]:
    """Which of the driver's places the workers read, wrote, and touched at all."""
    data = driver / f"data-{name}"
    places: dict[str, set[str]] = {"read": set(), "written": set(), "any": set()}
    for event, path, mode in run.opened:
        place = _place(Path(path), driver, data, run.out)
        places["any"].add(place)
        writes = event != "open" or mode.startswith(("w", "a", "x", "r+"))
        places["written" if writes else "read"].add(place)
    return places


def test_the_workers_need_the_data_folder_but_never_the_results_folder(
    driver: Path, on_cluster: Run
) -> None:
    places = _places(on_cluster, driver, "cluster")
    # the transforms, the configuration and every result travel with the tasks by value
    assert "results" not in places["any"]
    assert "configuration" not in places["any"]
    # on a shared disk (the default), the workers write each chunk's piece and the
    # defining sample's skims into the driver's data folder and read the skims back in
    # the fit's passes; they read the input files by the paths the driver names
    assert {"pieces", "skims"} <= places["written"]
    assert {"skims", "inputs"} <= places["read"]


def test_without_a_shared_disk_the_workers_read_only_the_input_files(
    driver: Path, unshared: Run
) -> None:
    places = _places(unshared, driver, "unshared")
    assert places["written"] == set()
    assert places["read"] == {"inputs"}
    # the driver wrote the pieces and skims the workers returned
    data = driver / "data-unshared"
    assert list((data / "skim").glob("*.parquet"))
    assert list((data / "pieces" / "analyse").glob("*.zip"))


#: the user's module of functions: the observable ``x`` and one of the model's features
_MODULE = """\
import numpy as np

GEV_PER_TEV = 1000.0


def mass(events):
    return np.asarray(events["m_jj_reco"], dtype=np.float64)


def mass_tev(events):
    return mass(events) / GEV_PER_TEV
"""


@pytest.fixture(scope="module")
def models(driver: Path) -> dict[str, Any]:
    """An XGBoost model and a module of functions in the driver's folder.

    Returned as the changes of a configuration that names them by path,
    relative to the configuration's folder.
    """
    xgboost = pytest.importorskip("xgboost")
    folder = driver / "analysis"
    folder.mkdir()
    (folder / "functions.py").write_text(_MODULE, encoding="utf-8")
    columns = dijet_columns(np.random.default_rng(11), 4000, False)
    features = np.stack([columns["tagger_out"], columns["m_jj_reco"] / 1000.0], axis=1)
    booster = xgboost.train(
        {"objective": "reg:logistic", "max_depth": 3, "seed": 0},
        xgboost.DMatrix(features, label=columns["tagger_out"]),
        20,
    )
    booster.save_model(str(folder / "tagger.json"))
    return {
        "score": {
            "xgboost": "analysis/tagger.json",
            "features": ["tagger_out", {"function": "analysis/functions.py:mass_tev"}],
        },
        "x": {"function": "analysis/functions.py:mass"},
    }


@pytest.fixture(scope="module")
def models_on_futures(driver: Path, models: dict[str, Any]) -> Path:
    with pytest.MonkeyPatch.context() as patch:
        # loky restarts a worker that grew 300 MB past its size after its first task, with
        # a warning (an error here): loading xgboost in the workers is not a leak
        patch.setenv("LOKY_MAX_MEMORY_LEAK_SIZE", str(2e9))
        return _run(driver, "models-futures", {"kind": "futures", "workers": 2}, models)


@pytest.fixture(scope="module")
def models_unshared(driver: Path, cluster: Cluster, models: dict[str, Any]) -> Run:
    return _on_cluster(driver, cluster, "models-unshared", models, shared_disk=False)


def test_without_a_shared_disk_a_model_and_a_module_travel_by_value(
    driver: Path, cluster: Cluster, models_on_futures: Path, models_unshared: Run
) -> None:
    _assert_same_results(models_unshared.out, models_on_futures)
    places = _places(models_unshared, driver, "models-unshared")
    # the model and the module were read by the driver alone
    assert places["written"] == set()
    assert places["read"] == {"inputs"}
    # the recorder does see a worker that loads them from their paths
    from dask.distributed import Client

    # defined here, so that it travels by value to the workers
    def load_by_path(model: str, module: str) -> int:
        """In a worker: the model and the module loaded from their paths (the features scored)."""
        import awkward as ak

        from rosenblatt.processors.quantities import parse_quantity

        quantity = parse_quantity(
            {"xgboost": model, "features": ["a", {"function": f"{module}:mass_tev"}]}, key="score"
        )
        events = ak.Array({"a": np.ones(3), "m_jj_reco": np.full(3, 3000.0)})
        values, present = quantity.evaluate(events)
        return len(quantity.features) if present.all() and np.isfinite(values).all() else 0

    model, module = driver / "analysis" / "tagger.json", driver / "analysis" / "functions.py"
    cluster.clear()
    with Client(cluster.address, timeout=60) as client:
        loaded = client.submit(load_by_path, str(model), str(module), pure=False)
        assert loaded.result() == 2
    opened = {path for event, path, _ in cluster.opened() if event == "open"}
    cluster.clear()
    assert {str(model), str(module)} <= opened


def _place(path: Path, driver: Path, data: Path, results: Path) -> str:
    """Which of the driver's places ``path`` is in."""
    folders = ((results, "results"), (data / "pieces", "pieces"), (data / "skim", "skims"))
    for folder, name in (*folders, (data, "data")):
        if path.is_relative_to(folder):
            return name
    suffixes = {".yaml": "configuration", ".root": "inputs"}
    return suffixes.get(path.suffix, str(path.relative_to(driver)))


@pytest.fixture(scope="module")
def particles(driver: Path, abcd_event_files: dict[str, Path]) -> dict[str, Any]:
    """Particle-level files scored by a TorchScript CNN of track images in the driver's folder.

    Returned as the changes of a configuration of the particle-level layout.
    """
    torch = pytest.importorskip("torch")
    from rosenblatt.ml import TrackImageCNN, TrainedModel

    torch.manual_seed(3)
    network = TrackImageCNN()
    network.fit_input_scale(np.ones((4, 36, 36), dtype=np.float32))
    folder = driver / "cnn"
    folder.mkdir()
    TrainedModel("cnn", network.eval(), {"kind": "cnn"}).save(folder / "tagger")
    scripted = folder / "tagger.torchscript.pt"
    assert scripted.is_file()
    files = abcd_event_files
    return {
        "datasets": None,
        "treename": None,
        "lumi": None,
        "defining": {"qcd-defining": [str(files["defining"])]},
        "fileset": {"qcd": [str(files["qcd"])], "wprime": [str(files["wprime"])]},
        "score": {"torchscript": "cnn/tagger.torchscript.pt"},
        "transforms": [{"kind": "irgi", "depth": 2}, {"kind": "gridkde", "sigma_r": 0.3}],
        "abcd": {"x": "mjj", "x0": [2200.0, 2600.0, 3000.0], "y0": [0.2, 0.5, 0.8]},
        "executor_chunksize": 70,
    }


def test_without_a_shared_disk_a_particle_scorer_travels_by_value(
    driver: Path, cluster: Cluster, particles: dict[str, Any]
) -> None:
    with pytest.MonkeyPatch.context() as patch:
        # loading torch in the futures workers is not a leak (as for xgboost above)
        patch.setenv("LOKY_MAX_MEMORY_LEAK_SIZE", str(2e9))
        on_futures = _run(driver, "particles-futures", {"kind": "futures", "workers": 2}, particles)
    unshared = _on_cluster(driver, cluster, "particles-unshared", particles, shared_disk=False)
    _assert_same_results(unshared.out, on_futures)
    model = driver / "cnn" / "tagger.torchscript.pt"
    places = _places(unshared, driver, "particles-unshared")
    # the TorchScript file was read by the driver alone (the inputs lie outside its folder)
    assert places["written"] == set()
    assert places["read"] <= {"inputs"}
    assert str(model) not in {path for _, path, _ in unshared.opened}
    # the recorder does see a worker that scores with the file named by its path
    from dask.distributed import Client

    def score_by_path(path: str) -> int:
        """In a worker: the scorer of ``path`` loads its module from the file."""
        import awkward as ak

        from rosenblatt.ml import make_scorer

        images = ak.Array({"image": np.zeros((2, 36 * 36), dtype=np.float32)})
        return len(make_scorer({"torchscript": path})(images))

    cluster.clear()
    with Client(cluster.address, timeout=60) as client:
        assert client.submit(score_by_path, str(model), pure=False).result() == 2
    opened = {path for event, path, _ in cluster.opened() if event == "open"}
    cluster.clear()
    assert str(model) in opened


def _fit_and_apply(driver: Path, name: str, models: dict[str, Any], options: list[str]) -> Path:
    """``rosenblatt fit --config`` and ``rosenblatt apply`` with the executor of ``options``.

    The configuration names the XGBoost model and the module of functions by path; the fit
    takes its executor from the configuration's ``executor:`` block, ``apply`` from the
    same keys given as options. Returns the folder of the transform and the friend trees.
    """
    folder = driver / f"fit-{name}"
    folder.mkdir()
    kind = options[options.index("--executor") + 1]
    executor: dict[str, Any] = {"kind": kind}
    if "--scheduler" in options:
        executor["scheduler"] = options[options.index("--scheduler") + 1]
    if "--workers" in options:
        executor["workers"] = int(options[options.index("--workers") + 1])
    executor["shared_disk"] = "--no-shared-disk" not in options
    config = _config(driver, f"fit-{name}", executor, models)
    transform = folder / "tagger.json"
    fit = ["fit", "--config", str(config), "--depth", "4", "--chunk-size", "1500"]
    assert main([*fit, "--output", str(transform)]) == 0
    module = driver / "analysis" / "functions.py"
    inputs = [str(driver / "qcd.root"), str(driver / "sig.root")]
    apply = ["apply", str(transform), *inputs, "--output-dir", str(folder / "friends")]
    # the module's function for x, the model's features' branch for the score
    apply += ["--x", f"{module}:mass", "--score", "tagger_out", "--allow-other-quantities"]
    assert main([*apply, "--max-outside", "1", "--chunk-size", "1500", *options]) == 0
    return folder


def test_fit_and_apply_on_workers_without_a_shared_disk(
    driver: Path, cluster: Cluster, models: dict[str, Any]
) -> None:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("LOKY_MAX_MEMORY_LEAK_SIZE", str(2e9))
        futures = _fit_and_apply(
            driver, "futures", models, ["--executor", "futures", "--workers", "2"]
        )
    cluster.clear()
    options = ["--executor", "dask", "--scheduler", cluster.address, "--no-shared-disk"]
    unshared = _fit_and_apply(driver, "unshared", models, options)
    opened = cluster.opened()
    # the transform is the futures executor's, bit for bit but for the configuration's name,
    # and so are the friend trees' values
    texts = [(f / "tagger.json").read_text(encoding="utf-8") for f in (unshared, futures)]
    assert texts[0].replace("fit-unshared.yaml", "fit-futures.yaml") == texts[1]
    for name in ("qcd_gamma.root", "sig_gamma.root"):
        with (
            uproot.open(unshared / "friends" / name) as a,
            uproot.open(futures / "friends" / name) as b,
        ):
            got, expected = a["nominal"].arrays(library="np"), b["nominal"].arrays(library="np")
            assert sorted(got) == sorted(expected) == ["entry", "gamma_tagger"]
            for key in expected:
                assert np.array_equal(got[key], expected[key]), key
    # the workers read the input files and nothing else of the driver's: not the model, the
    # module, the configuration, the transform, nor the fit's work folder
    assert opened, "the workers recorded nothing: the cluster did not run the chunks"
    assert {(event, mode[:1]) for event, _, mode in opened} == {("open", "r")}
    assert {Path(path).name for _, path, _ in opened} == {"qcd_def.root", "qcd.root", "sig.root"}


def test_each_worker_warms_before_the_tasks_queued_behind(cluster: Cluster, tmp_path: Path) -> None:
    from coffea import processor
    from dask.distributed import Client

    from rosenblatt.processors.runner import warm_workers

    marks = tmp_path / "warmed"
    marks.mkdir()

    def warm() -> None:
        """In a worker: leave a mark named by the process."""
        (marks / str(os.getpid())).touch()

    with Client(cluster.address, timeout=60) as client:
        warm_workers(processor.DaskExecutor(client=client, status=False), warm)
        # nothing waits for the warm tasks: each worker runs its own, ahead of later tasks
        pids = set(client.run(os.getpid).values())
        deadline = time.monotonic() + 60
        while {int(p.name) for p in marks.iterdir()} != pids and time.monotonic() < deadline:
            time.sleep(0.2)
    assert {int(p.name) for p in marks.iterdir()} == pids
    assert len(pids) == 2
