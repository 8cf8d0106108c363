"""Flat dijet ntuple columns for the tests of a user's own files.

The background's mass falls from 2 TeV and its tagger score rises with the mass (a
dependence to remove); the signal is a 3.4 TeV resonance with a high score.
"""

from __future__ import annotations

import numpy as np


def dijet_columns(rng: np.random.Generator, n: int, signal: bool) -> dict[str, np.ndarray]:
    """``m_jj_reco`` and ``tagger_out`` of ``n`` background or signal events."""
    if signal:
        mass = rng.normal(3400.0, 150.0, n)
        score = np.clip(rng.normal(0.8, 0.1, n), 0.0, 1.0)
    else:
        mass = 2000.0 + rng.exponential(600.0, n)
        score = np.clip(rng.beta(2.0, 5.0, n) + (mass - 2000.0) / 8000.0, 0.0, 1.0)
    return {"m_jj_reco": mass, "tagger_out": score}
