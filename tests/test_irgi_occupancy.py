"""IRGI's columns by events (``occupancy="events"``) against columns by summed weight."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from gaussian_blob import RHO, bivariate_normal, exact_gamma
from scipy.stats import norm, truncnorm

import rosenblatt as rb
from rosenblatt._schema import SchemaError


def sliced_normal(n: int, seed: int, cut: float = 1.0) -> tuple[np.ndarray, ...]:
    """The bivariate normal generated in two slices of ``x`` of ``n`` events each.

    Below and above ``cut``; each slice's weights make the sample the normal
    again, so the events above ``cut`` weigh ``sf(cut) / cdf(cut)`` times less.
    """
    rng = np.random.default_rng(seed)
    low = truncnorm.rvs(-np.inf, cut, size=n, random_state=rng)
    high = truncnorm.rvs(cut, np.inf, size=n, random_state=rng)
    x = np.concatenate([low, high])
    y = RHO * x + np.sqrt(1 - RHO**2) * rng.standard_normal(2 * n)
    w = np.concatenate([np.full(n, norm.cdf(cut) / n), np.full(n, norm.sf(cut) / n)])
    return x, y, w


def _events_per_column(t: rb.IRGI, x: np.ndarray, w: np.ndarray | None = None) -> np.ndarray:
    column = np.searchsorted(t.x_boundaries_[1:-1], x, side="right")
    return np.bincount(column, weights=w, minlength=len(t.x_centres_))


def test_events_occupancy_gives_each_column_equal_events_and_weight_occupancy_equal_weight() -> (
    None
):
    x, y, w = sliced_normal(4096, seed=1)
    by_events = rb.IRGI(4, occupancy="events").fit(x, y, w)
    by_weight = rb.IRGI(4).fit(x, y, w)
    # the inner columns hold two of the 2**(depth + 1) equal cells, the outer two one
    share = np.r_[1, np.full(2**4 - 1, 2), 1] / 2**5
    np.testing.assert_allclose(_events_per_column(by_events, x), share * len(x), atol=1)
    np.testing.assert_allclose(
        _events_per_column(by_weight, x, w), share * w.sum(), atol=2 * w.max()
    )
    # the events above the cut weigh less: by weight they get few columns, by events half
    assert np.sum(by_events.x_centres_ > 1.0) == 2**3
    assert np.sum(by_weight.x_centres_ > 1.0) <= 3
    # each column's CDF is weighted either way
    column = np.searchsorted(by_events.x_boundaries_[1:-1], x, side="right")
    inside = column == 3
    edges = by_events.y_edges_[3, 1:-1]
    below = (y[inside][:, None] < edges[None, :]) * w[inside][:, None]
    np.testing.assert_allclose(by_events.cdf_[3, 1:-1], below.sum(0) / w[inside].sum())


def test_events_occupancy_keeps_the_resolution_a_sliced_sample_was_generated_for() -> None:
    x, y, w = sliced_normal(8192, seed=0)
    rng = np.random.default_rng(100)
    xq = rng.uniform(1.0, 2.5, 20_000)
    yq = RHO * xq + np.sqrt(1 - RHO**2) * rng.standard_normal(len(xq))
    exact = exact_gamma(xq, yq)

    def rms(occupancy: str) -> float:
        t = rb.IRGI(5, occupancy=occupancy).fit(x, y, w)  # type: ignore[arg-type]
        return float(np.sqrt(np.mean((t.transform(xq, yq) - exact) ** 2)))

    # where the slice above x = 1 put half the events but a sixth of the weight
    assert rms("events") < 0.6 * rms("weight")
    assert rms("events") < 0.025


@pytest.mark.parametrize("weights", ["none", "ones", "constant"])
def test_events_occupancy_is_weight_occupancy_where_every_event_weighs_the_same(
    weights: str,
) -> None:
    x, y = bivariate_normal(8192, seed=6)
    xq, yq = bivariate_normal(1000, seed=7)
    w = {"none": None, "ones": np.ones_like(x), "constant": np.full_like(x, 0.37)}[weights]
    by_events = rb.IRGI(4, occupancy="events").fit(x, y, w)
    by_weight = rb.IRGI(4).fit(x, y, w)
    np.testing.assert_array_equal(by_events.x_centres_, by_weight.x_centres_)
    np.testing.assert_allclose(by_events.transform(xq, yq), by_weight.transform(xq, yq), atol=1e-12)


def test_events_of_zero_weight_occupy_no_column() -> None:
    x, y = bivariate_normal(8192, seed=8)
    w = np.where(np.arange(len(x)) % 2 == 0, 1.0, 0.0)
    t = rb.IRGI(4, occupancy="events").fit(x, y, w)
    kept = w != 0
    share = np.r_[1, np.full(2**4 - 1, 2), 1] / 2**5
    np.testing.assert_allclose(
        _events_per_column(t, x[kept]), share * np.count_nonzero(kept), atol=1
    )
    # the same columns and CDF as a fit on the events of non-zero weight alone
    same = rb.IRGI(4, occupancy="events").fit(x[kept], y[kept])
    np.testing.assert_allclose(t.x_boundaries_[1:-1], same.x_boundaries_[1:-1], atol=0.05)
    np.testing.assert_array_equal(t.cdf_, same.cdf_)


def test_events_occupancy_is_saved_and_kept_by_replicas(tmp_path: Path) -> None:
    x, y, w = sliced_normal(2048, seed=2)
    t = rb.IRGI(4, occupancy="events").fit(x, y, w)
    assert "occupancy='events'" in repr(t)
    assert "columns (of equal numbers of events)" in t.describe()
    path = tmp_path / "irgi.json"
    t.save(path)
    assert json.loads(path.read_text())["state"]["params"]["occupancy"] == "events"
    loaded = rb.load(path)
    assert loaded.occupancy == "events"
    np.testing.assert_array_equal(loaded.transform(x, y), t.transform(x, y))
    # the default is not written, so that a file of it reads as before
    rb.IRGI(4).fit(x, y, w).save(tmp_path / "weight.json")
    params = json.loads((tmp_path / "weight.json").read_text())["state"]["params"]
    assert "occupancy" not in params
    assert rb.load(tmp_path / "weight.json").occupancy == "weight"
    ensemble = rb.bootstrap(rb.IRGI(4, occupancy="events"), x, y, w, n=3, seed=1)
    assert all(r.occupancy == "events" for r in ensemble.replicas_)
    auto = rb.IRGI("auto", occupancy="events", folds=3).fit(x, y, w)
    assert auto.occupancy == "events"


def test_an_unknown_occupancy_is_refused_in_the_fit_and_in_a_file(tmp_path: Path) -> None:
    x, y = bivariate_normal(512, seed=3)
    with pytest.raises(ValueError, match=r"occupancy must be one of \['weight', 'events'\]"):
        rb.IRGI(2, occupancy="count").fit(x, y)  # type: ignore[arg-type]
    path = tmp_path / "irgi.json"
    rb.IRGI(2).fit(x, y).save(path)
    document = json.loads(path.read_text())
    document["state"]["params"]["occupancy"] = 3
    path.write_text(json.dumps(document))
    with pytest.raises(SchemaError, match="occupancy must be one of"):
        rb.load(path)


def test_events_occupancy_is_for_one_observable_and_not_mergeable() -> None:
    rng = np.random.default_rng(4)
    x, y = rng.normal(size=(2, 2048, 2)), rng.normal(size=2048)
    with pytest.raises(ValueError, match="occupancy='events' is for one observable"):
        rb.IRGI(2, occupancy="events").fit(x[0], y)
    with pytest.raises(ValueError, match=r"not mergeable.*in memory on the gathered"):
        rb.MergeableFit(rb.IRGI(4, occupancy="events"))
