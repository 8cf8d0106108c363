"""A user's own coffea processor fits a transform over its files and applies it, as the docs show."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import awkward as ak
import numpy as np
import pytest
from coffea import processor
from coffea.nanoevents import BaseSchema

import rosenblatt as rb

pytestmark = pytest.mark.slow


def observables(events: Any) -> tuple[Any, Any]:
    """A user's pair: the scalar sum of particle pT, and the leading particle's share of it."""
    ht = ak.sum(events.Part_pt, axis=1)
    return ht, ak.max(events.Part_pt, axis=1) / ht


def weighted_observables(events: Any) -> tuple[Any, Any, Any]:
    """The user's pair and the events' weights, for ``MergeableFit.run``."""
    return (*observables(events), events.weight)


class FitPass(processor.ProcessorABC):
    def __init__(self, request: Any) -> None:
        self.request = request

    def process(self, events: Any) -> dict[str, Any]:
        x, y = observables(events)
        return {"fit": self.request(x, y, events.weight, chunk=events.metadata)}

    def postprocess(self, accumulator: Any) -> Any:
        return accumulator


class Apply(processor.ProcessorABC):
    def __init__(self, transform: Any) -> None:
        self.transform = transform

    def process(self, events: Any) -> dict[str, Any]:
        x, y = observables(events)
        gamma = self.transform.transform(x, y)
        return {"gamma": [ak.to_numpy(gamma)], "entries": [events.metadata["entrystart"]]}

    def postprocess(self, accumulator: Any) -> Any:
        return accumulator


@pytest.fixture(scope="module")
def fileset(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    from rosenblatt.hep.generation import generate_file

    path = tmp_path_factory.mktemp("user") / "qcd.root"
    generate_file(path, "qcd", 300, 41, chunk_size=300, workers=1, progress=False)
    return {"qcd": {"files": {str(path): "Events"}}}


@pytest.mark.parametrize(
    ("transform", "chunksize"), [(rb.IRGI(depth=3), 70), (rb.GridKDE(sigma_r=0.3, degree=1), 110)]
)
@pytest.mark.parametrize("form", ["run", "own processor"])
def test_fit_in_a_users_processor_equals_the_in_memory_fit(
    fileset: dict[str, Any], transform: Any, chunksize: int, form: str
) -> None:
    runner = processor.Runner(
        processor.IterativeExecutor(status=False), schema=BaseSchema, chunksize=chunksize
    )
    fit = rb.MergeableFit(_same_parameters(transform))
    if form == "run":
        fitted = fit.run(runner, fileset, weighted_observables, treename="Events")
    else:
        output = runner(fileset, FitPass(fit.request()), treename="Events")
        fitted = fit.finish(output["fit"], runner)
    assert fit.passes == 3

    from rosenblatt.io.root import read_root_nanoevents

    events = read_root_nanoevents(next(iter(fileset["qcd"]["files"])))
    x, y = (np.asarray(ak.to_numpy(v), dtype=float) for v in observables(events))
    reference = _same_parameters(transform).fit(x, y, np.asarray(events.weight))
    test_x = np.linspace(x.min(), x.max(), 101)
    test_y = np.linspace(y.min(), y.max(), 101)
    grid_x, grid_y = np.meshgrid(test_x, test_y)
    difference = np.abs(fitted.transform(grid_x, grid_y) - reference.transform(grid_x, grid_y))
    assert difference.max() <= 1e-12

    applied = runner(fileset, Apply(fitted), treename="Events")
    gamma = np.concatenate(
        [g for _, g in sorted(zip(applied["entries"], applied["gamma"], strict=True))]
    )
    assert np.allclose(gamma, fitted.transform(x, y), rtol=0, atol=1e-12)
    assert gamma.min() >= 0.0
    assert gamma.max() <= 1.0


def _same_parameters(transform: Any) -> Any:
    if isinstance(transform, rb.IRGI):
        return rb.IRGI(depth=transform.depth)
    return rb.GridKDE(sigma_r=transform.sigma_r, degree=transform.degree)


def test_docs_show_the_users_processor() -> None:
    root = Path(__file__).parents[1]
    tutorial = (root / "docs" / "tutorials" / "coffea-processor.md").read_text()
    howto = (root / "docs" / "howto" / "dask.md").read_text()
    assert "rb.MergeableFit(" in tutorial
    assert "fit.run(runner, fileset, observables" in tutorial
    assert "fit.request()" in howto
    assert "fit.finish(" in howto
