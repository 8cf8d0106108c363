"""Pythia 8 settings of the LHC Olympics 2020 R&D processes at 13 TeV.

Two processes are known, each with its truth label:

``qcd`` (label 0)
    QCD dijets, ``HardQCD:all = on`` above a pT-hat threshold
    (``PhaseSpace:pTHatMin``, default :data:`DEFAULT_PTHAT_MIN`).
``wprime`` (label 1)
    ``W'(3.5 TeV) -> X(500 GeV) Y(100 GeV)``, both to quarks. The X and Y are
    Pythia's W and Z bosons with their masses set to 500 and 100 GeV and their
    decays restricted to quarks; ``Wprime:coup2WZ = 1`` opens the
    ``W' -> W Z`` coupling (its default, 0, gives a zero cross section).

The trigger efficiency of the ``qcd`` sample depends on the pT-hat threshold:
with 1000 GeV about 45% of the events have an anti-kT R = 1.0 jet above
1.2 TeV. The threshold makes the triggered sample slightly incomplete: events
with a pT-hat below it can still pass the trigger through initial-state
radiation; with ``PhaseSpace:pTHatMin = 800`` about one triggered event in
seven has a pT-hat below 1000 GeV. Lower thresholds are closer to complete and
cost more generated events per triggered one.
"""

from __future__ import annotations

__all__ = [
    "CENTER_OF_MASS_ENERGY",
    "DEFAULT_PTHAT_MIN",
    "PROCESS_LABELS",
    "PROCESS_SETTINGS",
    "PYTHIA_SEED_MAX",
    "pythia_settings",
]

#: proton-proton centre-of-mass energy in GeV
CENTER_OF_MASS_ENERGY = 13000.0

#: default ``PhaseSpace:pTHatMin`` of the ``qcd`` process in GeV
DEFAULT_PTHAT_MIN = 1000.0

#: passing events per chunk (the unit of parallel work, writing and resuming)
DEFAULT_CHUNK_SIZE = 1000

#: largest seed Pythia accepts for ``Random:seed``
PYTHIA_SEED_MAX = 900_000_000

#: truth label of each process (1 signal, 0 background)
PROCESS_LABELS: dict[str, int] = {"qcd": 0, "wprime": 1}

#: process-specific settings (the ``qcd`` pT-hat threshold is added by :func:`pythia_settings`)
PROCESS_SETTINGS: dict[str, tuple[str, ...]] = {
    "qcd": ("HardQCD:all = on",),
    "wprime": (
        "NewGaugeBoson:ffbar2Wprime = on",
        "34:m0 = 3500",
        "34:onMode = off",
        "34:onIfMatch = 24 23",
        "Wprime:coup2WZ = 1",
        "24:m0 = 500",
        "24:onMode = off",
        "24:onIfAny = 1 2 3 4 5",
        "23:m0 = 100",
        "23:onMode = off",
        "23:onIfAny = 1 2 3 4 5",
    ),
}


def pythia_settings(process: str, seed: int, pthat_min: float = DEFAULT_PTHAT_MIN) -> list[str]:
    """Return the Pythia ``readString`` lines that set up ``process``.

    Parameters
    ----------
    process : {"qcd", "wprime"}
        Process name.
    seed : int
        Pythia random seed, 1 to :data:`PYTHIA_SEED_MAX`.
    pthat_min : float, default :data:`DEFAULT_PTHAT_MIN`
        ``PhaseSpace:pTHatMin`` in GeV (used by ``qcd`` only).

    Returns
    -------
    list of str
        Beam, random-number, output and process settings.

    Raises
    ------
    ValueError
        If the process is unknown, the seed is out of range or ``pthat_min``
        is not a positive number.
    """
    if process not in PROCESS_SETTINGS:
        raise ValueError(
            f"process: unknown process {process!r}; choose one of {sorted(PROCESS_SETTINGS)}"
        )
    if not 1 <= int(seed) <= PYTHIA_SEED_MAX:
        raise ValueError(f"seed: Pythia seeds run from 1 to {PYTHIA_SEED_MAX}, got {seed}")
    if not float(pthat_min) > 0:
        raise ValueError(f"pthat_min: must be a positive number of GeV, got {pthat_min!r}")
    settings = [
        f"Beams:eCM = {CENTER_OF_MASS_ENERGY:g}",
        "Random:setSeed = on",
        f"Random:seed = {int(seed)}",
        "Print:quiet = on",
        *PROCESS_SETTINGS[process],
    ]
    if process == "qcd":
        settings.append(f"PhaseSpace:pTHatMin = {float(pthat_min):g}")
    return settings
