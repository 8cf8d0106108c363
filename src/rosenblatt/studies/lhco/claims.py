"""The paper's claims on a run of the LHCO study, each decided by the one rule of the studies.

Every claim compares a figure of merit of IRGI or KDE with the baseline's or
DisCo's, and is decided beyond 2 bootstrap standard deviations
(:func:`rosenblatt.studies._common.decide`).
"""

from __future__ import annotations

import math
from typing import Final

from rosenblatt.studies._common import Claim, ClaimJson, pm
from rosenblatt.studies.lhco.summary import ClassifierJson, LhcoSummary

__all__ = ["paper_claims"]


def _sd(*entries: tuple[ClassifierJson, str]) -> float:
    """The bootstrap sd of a sum or difference of ``entry[key]`` (NaN where one has none)."""
    errors = [_err(entry, key) for entry, key in entries]
    if any(e is None for e in errors):
        return math.nan
    return math.hypot(*(float(e) for e in errors if e is not None))


def _err(entry: ClassifierJson, key: str) -> float | None:
    """The bootstrap sd of ``entry[key]`` (``None`` where the entry has none)."""
    errors = {
        "auc": entry.get("auc_err"),
        "dcc": entry.get("dcc_err"),
        "frac_eta_below_1e-2": entry.get("frac_eta_below_1e-2_err"),
    }
    return errors[key]


def _method_claims(
    name: str, result: ClassifierJson, base: ClassifierJson, disco: ClassifierJson | None
) -> list[Claim]:
    """The paper's claims on one decorrelated score, each decided beyond 2 bootstrap sd."""
    label = name.upper()
    claims = []
    if disco is not None:
        claims.append(
            Claim(
                f"dCor² of {label} at or below DisCo's chosen model",
                f"{pm(result['dcc'], result.get('dcc_err'), '.2e')} vs {pm(disco['dcc'], disco.get('dcc_err'), '.2e')}",
                disco["dcc"] - result["dcc"],
                _sd((result, "dcc"), (disco, "dcc")),
            )
        )
    ratio = base["dcc"] / result["dcc"] if result["dcc"] > 0 else float("inf")
    bound = max(base["dcc"] / 100, 2 * result["dcc_floor"])
    claims.append(
        Claim(
            f"dCor² of {label} at least 100x below the baseline's, or within 2x of the permutation floor",
            f"{ratio:.0f}x below baseline; {result['dcc'] / result['dcc_floor']:.2f}x the floor",
            bound - result["dcc"],
            _sd((result, "dcc")),
        )
    )
    claims.append(
        Claim(
            f"AUC of {label} within 0.02 of the baseline's",
            f"{pm(result['auc'], result.get('auc_err'), '.4f')} vs {pm(base['auc'], base.get('auc_err'), '.4f')}",
            0.02 - abs(result["auc"] - base["auc"]),
            _sd((result, "auc"), (base, "auc")),
        )
    )
    return claims


def _grid_claim(name: str, result: ClassifierJson, others: list[ClassifierJson]) -> Claim:
    """The central claim: a larger share of the cut grid closes than for the baseline and DisCo."""
    key: Final = "frac_eta_below_1e-2"
    rival = max(others, key=lambda entry: float(entry[key]))
    return Claim(
        f"larger fraction of the (x0, y0) grid with |eta| < 1e-2 for {name.upper()} than for the baseline and DisCo",
        f"{result[key]:.3f} vs {', '.join(f'{o[key]:.3f}' for o in others)}",
        result[key] - rival[key],
        _sd((result, key), (rival, key)),
    )


def paper_claims(summary: LhcoSummary) -> list[ClaimJson]:
    """The paper's claims, checked on this sample (:func:`~rosenblatt.studies._common.decide`)."""
    claims = []
    base = summary["baseline"]
    disco = summary.get("disco")
    others = [base] + ([disco] if disco else [])
    for name, result in (("irgi", summary["irgi"]), ("kde", summary["kde"])):
        claims += _method_claims(name, result, base, disco)
        claims.append(_grid_claim(name, result, others))
    return [claim.to_json() for claim in claims]
