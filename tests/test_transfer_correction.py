"""The pass/fail fit's per-bin non-closure with the keyed bootstrap of the transform's fit."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import rosenblatt as rb
from rosenblatt.abcd.transfer_correction import bin_ratios, transfer_correction
from rosenblatt.processors.analysis import (
    PlaneBinning,
    Variant,
    empty_output,
    fill_variants,
    passfail_replica,
)
from rosenblatt.transforms.ensemble import keyed_poisson_weights

#: the pass/fail fit's bins of x, the cut levels of the score and the cut of the fit
EDGES = np.linspace(0.0, 1.0, 9)
Y0 = (0.5, 0.8, 0.9)
CUT = 0.8
SEED = 5


def _events(n: int = 6000) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(3)
    x = rng.uniform(0.0, 1.0, n)
    return x, np.clip(rng.normal(0.3 + 0.4 * x, 0.2), 0.0, 1.0)


def _variants(ensemble: rb.TransformEnsemble) -> list[Variant]:
    nominal = Variant("irgi", "score", Y0, transform=ensemble.nominal_)
    replicas = [
        Variant(
            f"irgi#{k}",
            "score",
            Y0,
            transform=member,
            replica_of="irgi",
            keyed_draw=(SEED, draw),
        )
        for k, (member, draw) in enumerate(
            zip(ensemble.replicas_, ensemble.replica_draws_, strict=True)
        )
    ]
    return [nominal, *replicas]


def _filled(variants: list[Variant], x: np.ndarray, y: np.ndarray) -> dict:
    output = empty_output(variants, [0.4, 0.6], PlaneBinning(10, (0.0, 1.0), 10), "x", "sim", EDGES)
    fill_variants(
        output,
        variants,
        dataset="sim",
        x=x,
        scores={"score": y},
        process=np.zeros(x.size, dtype=np.int64),
        weight=np.ones(x.size),
    )
    return output


def _spectra(histogram) -> tuple[np.ndarray, np.ndarray]:
    """Failing and passing sums of the background per bin of x at CUT (no flow in x)."""
    view = histogram.view(flow=True).value[0, 1:-1, :, 0]
    split = 1 + list(np.round(histogram.axes["y"].edges, 9)).index(CUT)
    return view[:, :split].sum(axis=1), view[:, split:].sum(axis=1)


def _counted(
    gamma: np.ndarray,
    x: np.ndarray,
    weight: np.ndarray,
    cut: float = CUT,
    edges: np.ndarray = EDGES,
) -> tuple[np.ndarray, np.ndarray]:
    """An independent count: the weights failing and passing ``cut`` in each bin of ``edges``."""
    passed = gamma >= cut
    fail = np.histogram(x[~passed], edges, weights=weight[~passed])[0]
    return fail, np.histogram(x[passed], edges, weights=weight[passed])[0]


def test_the_fit_term_equals_an_independent_computation_from_the_replicas() -> None:
    x, y = _events()
    ensemble = rb.bootstrap(rb.IRGI(depth=3), x, y, n=6, seed=SEED, keyed=True)
    variants = _variants(ensemble)
    output = _filled(variants, x, y)
    fitted, reweighted = [], []
    q_fitted, q_reweighted = [], []
    for k, (member, draw) in enumerate(
        zip(ensemble.replicas_, ensemble.replica_draws_, strict=True)
    ):
        name = passfail_replica(f"irgi#{k}")
        gamma = member.transform(x, y)
        counts = keyed_poisson_weights(x, y, SEED, draw).astype(np.float64)
        for histogram, weight, into, ratios in (
            (output["replicas"][name], np.ones(x.size), fitted, q_fitted),
            (output["resampled"][name], counts, reweighted, q_reweighted),
        ):
            fail, passed = _counted(gamma, x, weight)
            np.testing.assert_allclose(_spectra(histogram), (fail, passed), rtol=1e-12)
            into.append(_spectra(histogram))
            ratios.append(passed / fail / (passed.sum() / fail.sum()))
    nominal = _spectra(output["passfail"]["irgi"])
    correction = transfer_correction(*nominal, fitted, reweighted)
    delta = np.asarray(q_reweighted) - np.asarray(q_fitted)
    fail, passed = nominal
    measured = passed / fail / (passed.sum() / fail.sum())
    np.testing.assert_allclose(correction.error, delta.std(axis=0, ddof=1), rtol=1e-10)
    np.testing.assert_allclose(correction.bias, delta.mean(axis=0), rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(
        correction.transform_fit, np.std(q_fitted, axis=0, ddof=1), rtol=1e-10
    )
    relative = measured - 1.0 - delta.mean(axis=0)
    np.testing.assert_allclose(correction.relative, relative, rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(
        correction.uncertainty, np.hypot(relative, delta.std(axis=0, ddof=1)), rtol=1e-10
    )
    assert correction.n_replicas == 6


def test_without_replicas_the_outputs_keep_their_keys() -> None:
    x, y = _events(500)
    plain = [Variant("score", "score", Y0)]
    output = _filled(plain, x, y)
    assert set(output) == {"abcd", "plane", "cutflow", "cutflow_weighted", "skim", "passfail"}
    ensemble = rb.bootstrap(rb.IRGI(depth=2), x, y, n=2, seed=SEED, keyed=True)
    variants = _variants(ensemble)
    without = empty_output(variants, [0.4, 0.6], PlaneBinning(10, (0.0, 1.0), 10), "x")
    assert set(without["replicas"]) == {"irgi#0", "irgi#1"}
    assert set(without["resampled"]) == {"irgi#0", "irgi#1"}
    with_spectra = empty_output(
        variants, [0.4, 0.6], PlaneBinning(10, (0.0, 1.0), 10), "x", None, EDGES
    )
    assert set(with_spectra["replicas"]) == {
        "irgi#0",
        "irgi#1",
        "passfail:irgi#0",
        "passfail:irgi#1",
    }


def test_the_inputs_are_checked() -> None:
    fail, passed = np.full(4, 90.0), np.full(4, 10.0)
    with pytest.raises(ValueError, match="at least 2 replicas"):
        transfer_correction(fail, passed, [(fail, passed)], [(fail, passed)])
    with pytest.raises(ValueError, match="each replica needs both"):
        transfer_correction(fail, passed, [(fail, passed)] * 2, [(fail, passed)] * 3)
    with pytest.raises(ValueError, match="nominal"):
        transfer_correction(fail, passed, [(fail[:3], passed[:3])] * 2, [(fail, passed)] * 2)
    assert np.isnan(bin_ratios([0.0, 5.0], [1.0, 1.0])[0])


def test_on_its_own_defining_sample_the_term_holds_the_transform_fit() -> None:
    """The simulation is the defining sample: the transform closes on it, the truth does not.

    Per pseudo-experiment the true ratio of the population under the fitted
    transform is known (the expected spectra); the measured ratio less its bias
    is compared with it, in units of the keyed bootstrap's error.
    """
    from rosenblatt.studies.passfail_toys.config import PassfailToysConfig
    from rosenblatt.studies.passfail_toys.spectra import defining_rng, expected_spectra
    from rosenblatt.studies.toys.population import Population

    cfg = PassfailToysConfig.parse(
        {
            "study": "passfail-toys",
            "transforms": [{"kind": "irgi", "depth": 4}],
            "n_defining": 8000,
            "spectrum": {"bins": 8, "y0": 0.8},
            "_path": "passfail-toys-test.yaml",
        }
    )
    transform = cfg.transforms[0]
    edges = np.linspace(0.0, 1.0, 9)
    pulls, errors, closes = [], [], []
    for toy in range(12):
        x, y = Population(cfg.population).background(defining_rng(cfg, toy), cfg.n_defining)
        ensemble = rb.bootstrap(transform.build(), x, y, n=20, seed=toy, keyed=True)
        one, cut = np.ones(x.size), cfg.spectrum.y0
        replicas, resampled = [], []
        for member, draw in zip(ensemble.replicas_, ensemble.replica_draws_, strict=True):
            gamma = member.transform(x, y)
            counts = keyed_poisson_weights(x, y, toy, draw).astype(np.float64)
            replicas.append(_counted(gamma, x, one, cut, edges))
            resampled.append(_counted(gamma, x, counts, cut, edges))
        nominal = _counted(ensemble.nominal_.transform(x, y), x, one, cut, edges)
        correction = transfer_correction(*nominal, replicas, resampled)
        truth = expected_spectra(dataclasses.replace(cfg, n_boot=0), "irgi", transform, toy)
        true_q = bin_ratios(truth.background_fail, truth.background_pass)
        pulls.append((true_q - 1.0 - correction.relative) / correction.error)
        errors.append(correction.error)
        closes.append(np.abs(correction.relative))
    pulls, errors = np.concatenate(pulls), np.concatenate(errors)
    # the term is there: a few percent per bin at 8,000 defining events
    assert np.all(errors > 0.01)
    # and the truth lies within it as a standard deviation should
    assert 0.7 < pulls.std() < 1.4
    assert 0.55 < np.mean(np.abs(pulls) <= 1.0) < 0.85
    # the measured non-closure alone (the transform on its own events) is smaller
    assert np.median(np.concatenate(closes)) < 0.5 * np.median(errors), (
        np.median(np.concatenate(closes)),
        np.median(errors),
        pulls.std(),
    )
