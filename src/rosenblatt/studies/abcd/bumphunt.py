"""The bump hunt of the ABCD study (``passfail.masses``): a resonance searched for at each variant's cut.

Where ``passfail:`` gives ``masses``, each variant whose pass/fail fit ran
gets the bump hunt of :mod:`rosenblatt.abcd.bumphunt` on the same spectra:

- the templates are Gaussians of ``resolution`` (relative to the mass with
  ``relative_resolution``) at each mass hypothesis, or, with one mass and
  ``signal_template``, the signal simulation's spectra themselves;
- with a signal simulation, its events in the fit's range passing and
  failing the cut give the templates' yield, efficiency and leakage (``mu``
  is then the signal strength relative to the simulation); without one, the
  template is one event, all of it passing (``mu`` is the number of passing
  signal events);
- the local significance and the CLs limits per mass are those of the exact
  profile of the pass/fail fit's model (``method="profile"``), the
  simulation's non-closure per bin included as in the fit's workspace (a
  ``shapesys`` factor of the passing background per bin), the transfer
  ratio bounded about the background simulation's; the global significance
  of the largest local excess comes from ``global_toys`` pseudo-experiments
  seeded with ``statistics.seed`` and from the Gross-Vitells estimate.

With several ``passfail.cuts`` the hunt runs over their disjoint categories
with one ``mu`` (the likelihood of
:func:`~rosenblatt.abcd.passfail.passfail_categories_workspace`, the exact
profile of :class:`~rosenblatt.abcd.bumphunt.bump_hunt` over categories):
each category has the simulation's transfer ratio and non-closure of its
own, and the templates' signal in each is the signal simulation's fraction
passing into it (a signal simulation is needed: without one, no split of the
signal over the categories is known, and the hunt is left out with a note).

Blinded, the hunt sees the passing observation of the pass/fail fit: the
signal window's passing events are the sidebands' prediction, so the
spectra are background-like there and only the expected limits and their
band are results. Neither a local significance nor an observed limit is
written, nor a global significance.

Each variant's files are in ``passfail/<variant>/``: ``bumphunt.json``,
``brazil.png`` and, not blinded, ``local_significance.png``.
"""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from rosenblatt._atomic import write_text
from rosenblatt.typing import FloatArray

if TYPE_CHECKING:
    from rosenblatt.abcd.bumphunt import BumpHunt
    from rosenblatt.abcd.look_elsewhere import GlobalSignificance
    from rosenblatt.abcd.templates import SignalTemplates
    from rosenblatt.studies.abcd.config import PassFailConfig

__all__ = ["BLIND_NOTE", "HIDDEN_WHEN_BLIND", "HuntSettings", "summary_numbers", "write_bumphunt"]


#: the results of a hunt on the data, left out of a blinded one
HIDDEN_WHEN_BLIND = ("q0", "local_p", "local_z", "mu_hat", "observed_limit")
BLIND_NOTE = (
    "expected only: blinded, the passing observation of the signal window (bins above x0) is "
    "the failing data times the data's pass/fail ratio below x0; no local significance, "
    "observed limit or global significance is computed"
)


@dataclasses.dataclass(frozen=True, slots=True)
class HuntSettings:
    """What ``passfail:`` sets of the bump hunt.

    Attributes
    ----------
    masses
        The mass hypotheses, in units of ``x``.
    resolution
        The Gaussian templates' standard deviation (a fraction of the mass
        where ``relative``).
    relative
        Whether ``resolution`` is relative to the mass.
    toys
        The pseudo-experiments of the global significance (0: none).
    seed
        Their seed.
    signal_template
        Whether one mass takes the signal simulation's spectra as template.
    """

    masses: tuple[float, ...]
    resolution: float
    relative: bool
    toys: int
    seed: int
    signal_template: bool

    @classmethod
    def from_config(cls, settings: PassFailConfig, seed: int) -> HuntSettings:
        """The hunt that ``passfail:`` sets (``settings.masses`` given), seeded with ``seed``."""
        if settings.masses is None:
            msg = "passfail.masses is not given: no bump hunt"
            raise ValueError(msg)
        return cls(
            masses=settings.masses,
            resolution=settings.resolution,
            relative=settings.relative_resolution,
            toys=settings.global_toys,
            seed=seed,
            signal_template=settings.signal_template,
        )


def _templates(
    settings: HuntSettings,
    edges: FloatArray,
    signal_fail: FloatArray,
    signal_pass: FloatArray,
) -> tuple[SignalTemplates, dict[str, Any]]:
    """The templates and how they were made (raises ``ValueError`` where none can be)."""
    from rosenblatt.abcd.templates import gaussian_templates, signal_templates

    masses = np.asarray(settings.masses, dtype=np.float64)
    inside = (masses > edges[0]) & (masses < edges[-1])
    if not inside.any():
        msg = f"no mass hypothesis lies inside the fit's range [{edges[0]:g}, {edges[-1]:g}] of x"
        raise ValueError(msg)
    total = float(signal_fail.sum() + signal_pass.sum())
    categorised = signal_pass.ndim == 2
    if categorised and not total > 0:
        msg = (
            "over categories the signal's share in each comes from the signal simulation, "
            "and there is none in the fit's range"
        )
        raise ValueError(msg)
    if settings.signal_template:
        if masses.size != 1:
            msg = f"signal_template needs one mass, got {masses.size}"
            raise ValueError(msg)
        if not signal_pass.sum() > 0:
            msg = "signal_template: the signal simulation passes the cut nowhere in the fit's range"
            raise ValueError(msg)
        templates = signal_templates(masses, edges, signal_pass[None], signal_fail[None, :])
        return templates, {"template": "signal simulation", "signal_yield": total}
    kept = masses[inside]
    efficiency: float | list[float]
    if categorised:
        efficiency = (signal_pass.sum(axis=1) / total).tolist()
        leakage = max(1.0 - float(np.sum(efficiency)), 0.0)
        signal_yield, source = total, "signal simulation"
    elif total > 0:
        efficiency = float(signal_pass.sum()) / total
        leakage, signal_yield, source = 1.0 - efficiency, total, "signal simulation"
    else:
        efficiency, leakage, signal_yield, source = 1.0, 0.0, 1.0, "default (no signal simulation)"
    templates = gaussian_templates(
        edges,
        kept,
        settings.resolution,
        relative=settings.relative,
        signal_yield=signal_yield,
        efficiency=efficiency,
        leakage=leakage,
    )
    about = {
        "template": "gaussian",
        "resolution": settings.resolution,
        "relative_resolution": settings.relative,
        "efficiency": efficiency,
        "leakage": leakage,
        "signal_yield": signal_yield,
        "efficiency_from": source,
        "masses_outside_range": masses[~inside].tolist(),
    }
    return templates, about


def _global(
    hunt: BumpHunt,
    failing: FloatArray,
    passing: FloatArray,
    templates: SignalTemplates,
    settings: HuntSettings,
    ratio: float | list[float],
    nonclosure: FloatArray | None,
) -> tuple[dict[str, Any], GlobalSignificance | None]:
    """The global significance of the largest local excess: toys and Gross-Vitells."""
    from scipy import stats

    from rosenblatt.abcd.look_elsewhere import global_significance, upcrossings

    if settings.toys > 0:
        found = global_significance(
            passing,
            failing,
            templates.edges,
            templates,
            n_toys=settings.toys,
            seed=settings.seed,
            ratio=ratio,
            nonclosure=nonclosure,
        )
        return {**found.to_dict(), "seed": settings.seed}, found
    local_z = float(np.max(hunt.local_z))
    local_p = float(stats.norm.sf(local_z))
    crossings = int(upcrossings(hunt.q0, 1.0)[0])
    return {
        "local_z": local_z,
        "local_p": local_p,
        "n_toys": 0,
        "reference_level": 1.0,
        "upcrossings_observed": crossings,
        "p_gross_vitells_observed": local_p + crossings * math.exp(-(local_z**2 - 1.0) / 2.0),
    }, None


def write_bumphunt(
    where: Path,
    settings: HuntSettings,
    edges: FloatArray,
    failing: FloatArray,
    passing: FloatArray,
    signal_fail: FloatArray,
    signal_pass: FloatArray,
    *,
    ratio: float | list[float],
    blind: bool,
    x_label: str,
    nonclosure: FloatArray | None = None,
    cuts: tuple[float, ...] | None = None,
) -> dict[str, Any]:
    """One variant's bump hunt, written to ``where`` (``bumphunt.json`` and its figures).

    Parameters
    ----------
    where
        The variant's folder, ``passfail/<variant>/``.
    settings
        The masses, resolution, pseudo-experiments and seed.
    edges
        The fit's bin edges of ``x``.
    failing, passing
        The spectra the pass/fail fit observed (blinded: the window's passing
        events predicted from the sidebands); with categories, ``passing``
        has one row per category, shape ``(K, n)``.
    signal_fail, signal_pass
        The signal simulation's spectra at the cut (zeros without one);
        ``signal_pass`` with one row per category where ``passing`` has.
    ratio
        The background simulation's transfer ratio (the fitted one's
        bounds); with categories, one per category.
    blind
        Whether only the expected limits are results.
    x_label
        The figures' label of ``x``.
    nonclosure
        The background simulation's relative non-closure per bin, as in the
        pass/fail fit's workspace (none: the hunt has no such uncertainty);
        with categories, shape ``(K, n)``.
    cuts
        The cuts whose categories ``passing`` holds (written to
        ``bumphunt.json`` as each category's range of the score).

    Returns
    -------
    dict
        The contents of ``bumphunt.json``, or ``{"note": ...}`` where the hunt
        cannot run (nothing is written then).
    """
    from rosenblatt.abcd.bumphunt import bump_hunt
    from rosenblatt.plotting import plot_brazil, plot_local_significance, save_figure
    from rosenblatt.studies._common import strict_json

    try:
        templates, about = _templates(settings, edges, signal_fail, signal_pass)
        hunt = bump_hunt(passing, failing, edges, templates, ratio=ratio, nonclosure=nonclosure)
    except ValueError as err:
        return {"note": f"no bump hunt: {err}"}
    out: dict[str, Any] = {
        "blind": blind,
        **({} if cuts is None else {"categories": _ranges(cuts)}),
        **about,
        "nonclosure": None if nonclosure is None else nonclosure.tolist(),
        **hunt.to_dict(),
    }
    folder = where.name
    prefix = f"{where.parent.name}/{folder}"
    figures = {}
    where.mkdir(parents=True, exist_ok=True)
    if blind:
        for name in HIDDEN_WHEN_BLIND:
            out.pop(name, None)
        out["note"] = BLIND_NOTE
        shown = dataclasses.replace(hunt, observed_limit=np.full(hunt.masses.size, np.nan))
        out["global"] = None
    else:
        out["global"], found = _global(
            hunt, failing, passing, templates, settings, ratio, nonclosure
        )
        shown = hunt
        fig = plot_local_significance(hunt, xlabel=x_label, global_significance=found)
        figures["local_significance"] = save_figure(fig, where / "local_significance.png").name
    figures["brazil"] = save_figure(plot_brazil(shown, xlabel=x_label), where / "brazil.png").name
    out["figures"] = {name: f"{prefix}/{file}" for name, file in figures.items()}
    out["file"] = f"{prefix}/bumphunt.json"
    text = json.dumps(strict_json(out), indent=2, allow_nan=False)
    write_text(where / "bumphunt.json", text)
    return out


def _ranges(cuts: tuple[float, ...]) -> list[list[float | None]]:
    """Each category's range of the score: ``[cut_k, cut_k+1]``, the last ``[cut, None]``."""
    uppers: list[float | None] = [*cuts[1:], None]
    return [[low, high] for low, high in zip(cuts, uppers, strict=True)]


def summary_numbers(result: dict[str, Any]) -> dict[str, Any]:
    """A hunt's numbers for ``passfail.json`` and ``summary.json``: its headline and table.

    The table holds per mass the local significance, the observed limit and
    the median expected one (blinded: the expected one only).
    """
    if "masses" not in result:
        return {"note": result.get("note", "no bump hunt")}
    numbers: dict[str, Any] = {
        **({"categories": result["categories"]} if "categories" in result else {}),
        "blind": result["blind"],
        "masses": result["masses"],
        "expected_limit": result["expected_limits"]["median"],
        "level": result["level"],
        "file": result["file"],
        "figures": result["figures"],
    }
    if result["blind"]:
        numbers["note"] = result["note"]
        return numbers
    z = result["local_z"]
    best = int(np.argmax(z))
    numbers.update(
        {
            "local_z": z,
            "observed_limit": result["observed_limit"],
            "max_local_z": z[best],
            "max_local_z_mass": result["masses"][best],
        }
    )
    found = result["global"]
    for key in ("n_toys", "p_toys", "p_toys_error", "z_toys", "p_gross_vitells"):
        if key in found:
            numbers[key] = found[key]
    numbers["p_gross_vitells_observed"] = found["p_gross_vitells_observed"]
    return numbers
