"""Flat ntuples as a user writes them, for the tests of ``rosenblatt fit`` and ``apply``.

The user's own branch names: a mass ``m_jj`` (uniform in 1-4 TeV), a score
``tagger_out`` (float32) that rises with the mass (a dependence to remove) and a
weight ``evt_w`` of which about a quarter is negative, written as a TTree.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

#: the tree the tests write
TREE = "nominal"


def write_tree(path: Path, branches: dict[str, Any], tree: str = TREE) -> Path:
    """A TTree (``mktree`` + ``extend``: plain assignment would write an RNTuple)."""
    import uproot

    with uproot.recreate(str(path)) as handle:
        handle.mktree(tree, {name: values.dtype for name, values in branches.items()})
        handle[tree].extend(branches)
    return path


def write_flat(path: Path, n: int, seed: int, *, selection: bool = False) -> dict[str, Any]:
    """Write ``n`` events drawn with ``seed`` to ``path``; their columns.

    With ``selection``, a branch ``passes`` too (1 where ``m_jj > 1200``).
    """
    rng = np.random.default_rng(seed)
    mass = rng.uniform(1000.0, 4000.0, n)
    columns = {
        "m_jj": mass,
        "tagger_out": rng.normal(mass / 4000.0, 0.2).astype(np.float32),
        "evt_w": rng.choice([-1.0, 1.0, 1.0, 1.0], n) * rng.uniform(0.5, 1.5, n),
    }
    if selection:
        columns["passes"] = (mass > 1200.0).astype(np.int32)
    write_tree(path, columns)
    return columns


def fit_args(paths: Iterable[str | Path], output: str | Path, *extra: str) -> list[str]:
    """The arguments of ``rosenblatt fit`` of ``paths`` (``--x m_jj --score tagger_out``) to ``output``."""
    return [
        "fit",
        *map(str, paths),
        "--treename",
        TREE,
        "--x",
        "m_jj",
        "--score",
        "tagger_out",
        "--output",
        str(output),
        *extra,
    ]
