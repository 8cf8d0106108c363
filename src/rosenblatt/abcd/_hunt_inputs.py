"""The bump hunt's inputs, validated: spectra, transfer ratios and non-closures.

What :mod:`~rosenblatt.abcd.bumphunt` and :mod:`~rosenblatt.abcd.look_elsewhere`
both take from their callers: the passing and failing spectra in bins of ``x``
(one cut, or several as categories, :func:`hunt_spectra`), the expected
transfer ratio of a cut (:func:`cut_ratio`) or of each category
(:func:`category_ratios`), the relative non-closure per bin
(:func:`bin_nonclosure`, :func:`row_nonclosure`, :func:`category_nonclosure`),
and one category given as one cut (:func:`single_cut`, :func:`first_category`);
and the exact profile likelihood of the validated spectra (:func:`hunt_likelihood`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from rosenblatt.abcd._category_profile import CategoryProfile
from rosenblatt.abcd._profile import Profile
from rosenblatt.abcd.passfail import _spectrum
from rosenblatt.abcd.templates import SignalTemplates
from rosenblatt.typing import ArrayLike, FloatArray

__all__ = [
    "bin_nonclosure",
    "category_nonclosure",
    "category_ratios",
    "cut_ratio",
    "first_category",
    "hunt_likelihood",
    "hunt_spectra",
    "row_nonclosure",
    "single_cut",
]


def hunt_spectra(
    pass_counts: ArrayLike, fail_counts: ArrayLike, edges: ArrayLike, templates: SignalTemplates
) -> tuple[FloatArray, FloatArray]:
    """The validated spectra: failing ``(n,)``, passing ``(n,)`` or, per category, ``(K, n)``."""
    failing = _spectrum(fail_counts, "fail_counts")
    given = np.asarray(pass_counts, dtype=np.float64)
    if given.ndim == 2:
        if templates.categories != given.shape[0]:
            msg = (
                f"pass_counts has {given.shape[0]} categories, the templates "
                f"{templates.categories or 'one passing spectrum'}"
            )
            raise ValueError(msg)
        passing = np.stack(
            [_spectrum(row, f"pass_counts[{k}]", failing.size) for k, row in enumerate(given)]
        )
    else:
        if templates.categories is not None:
            msg = f"the templates have {templates.categories} categories, pass_counts one spectrum"
            raise ValueError(msg)
        passing = _spectrum(pass_counts, "pass_counts", failing.size)
    edges = np.asarray(edges, dtype=np.float64)
    if edges.shape != templates.edges.shape or not np.allclose(edges, templates.edges):
        msg = "the templates' edges differ from edges"
        raise ValueError(msg)
    if edges.size != failing.size + 1:
        msg = f"edges has {edges.size} entries, the spectra {failing.size} bins"
        raise ValueError(msg)
    if not failing.sum() > 0 or not np.all(passing.sum(axis=-1) > 0):
        msg = "the failing and passing spectra (each category's) must all hold events"
        raise ValueError(msg)
    return failing, passing


def cut_ratio(failing: FloatArray, passing: FloatArray, ratio: Any) -> float:
    """The expected transfer ratio of one cut (default: all rows' passing over failing events)."""
    return float(passing.sum() / failing.sum()) if ratio is None else float(ratio)


def category_ratios(failing: FloatArray, passing: FloatArray, ratio: Any) -> FloatArray:
    """Each category's expected transfer ratio (default: its passing over all failing events).

    ``passing`` of shape ``(..., K, n)``, ``failing`` ``(..., n)``; all rows together.
    """
    count = passing.shape[-2]
    if ratio is None:
        total = passing.reshape(-1, count, passing.shape[-1]).sum(axis=(0, 2))
        return np.asarray(total / failing.sum(), dtype=np.float64)
    ratios = np.asarray(ratio, dtype=np.float64).reshape(-1)
    if ratios.size != count or not np.all(np.isfinite(ratios) & (ratios > 0)):
        msg = f"ratio must hold one positive ratio per category ({count}), got {ratio!r}"
        raise ValueError(msg)
    return ratios


def category_nonclosure(nonclosure: Any, count: int, bins: int) -> FloatArray | None:
    """Each category's validated non-closure ``(K, n)``, ``None`` where none is positive."""
    if nonclosure is None:
        return None
    if len(nonclosure) != count:
        msg = f"nonclosure needs one row per category ({count}), got {len(nonclosure)}"
        raise ValueError(msg)
    relative = np.stack(
        [
            np.zeros(bins) if row is None else _spectrum(row, f"nonclosure[{k}]", bins)
            for k, row in enumerate(nonclosure)
        ]
    )
    return relative if np.any(relative > 0) else None


def single_cut(templates: SignalTemplates) -> SignalTemplates:
    """Templates of one category as those of one cut."""
    return SignalTemplates(
        masses=templates.masses,
        edges=templates.edges,
        passing=templates.passing[:, 0, :],
        failing=templates.failing,
    )


def first_category(ratio: Any, nonclosure: Any) -> tuple[float | None, Any]:
    """The ratio and non-closure of one category as those of one cut."""
    first = None if ratio is None else float(np.ravel(np.asarray(ratio, dtype=np.float64))[0])
    return first, None if nonclosure is None else nonclosure[0]


def bin_nonclosure(nonclosure: ArrayLike | None, bins: int) -> FloatArray | None:
    """The validated relative non-closure per bin, ``None`` where none is positive."""
    if nonclosure is None:
        return None
    relative = _spectrum(nonclosure, "nonclosure", bins)
    return relative if np.any(relative > 0) else None


def row_nonclosure(nonclosure: ArrayLike | None, shape: tuple[int, ...]) -> FloatArray | None:
    """As :func:`bin_nonclosure`, or one row per data set: ``shape`` ``(k, n)``, the spectra's."""
    if nonclosure is None or np.ndim(nonclosure) < 2:
        return bin_nonclosure(nonclosure, shape[-1])
    relative = np.asarray(nonclosure, dtype=np.float64)
    if relative.shape != shape:
        msg = f"nonclosure has shape {relative.shape}, the spectra {shape}"
        raise ValueError(msg)
    for row in relative:
        _spectrum(row, "nonclosure", shape[-1])
    return relative if np.any(relative > 0) else None


def hunt_likelihood(
    failing: FloatArray, passing: FloatArray, ratio: Any, nonclosure: Any
) -> tuple[Profile | CategoryProfile, float | FloatArray, FloatArray | None]:
    """The exact profile likelihood of the spectra, its expected ratio and non-closure.

    One cut (``passing`` of shape ``(n,)``: :class:`~rosenblatt.abcd._profile.Profile`)
    or categories (``(K, n)``:
    :class:`~rosenblatt.abcd._category_profile.CategoryProfile`), the non-closure and
    the transfer ratio validated as those of one cut or one per category.
    """
    if passing.ndim == 1:
        relative = bin_nonclosure(nonclosure, failing.size)
        one = cut_ratio(failing, passing, ratio)
        return Profile(failing, passing, one, relative), one, relative
    relative = category_nonclosure(nonclosure, passing.shape[0], failing.size)
    ratios = category_ratios(failing, passing, ratio)
    return CategoryProfile(failing, passing, ratios, relative), ratios, relative
