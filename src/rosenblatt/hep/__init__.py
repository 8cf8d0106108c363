"""High-energy physics layer: event generation (Pythia 8), particles, jets and the trigger.

Modules
-------
:mod:`~rosenblatt.hep.pythia_settings`
    Pythia settings of the LHC Olympics processes (``qcd``, ``wprime``).
:mod:`~rosenblatt.hep.particles`
    Visible final-state particles and the event-array layout.
:mod:`~rosenblatt.hep.jets`
    Jet clustering with FastJet.
:mod:`~rosenblatt.hep.trigger`
    The LHC Olympics trigger (a jet above 1.2 TeV).
:mod:`~rosenblatt.hep.generation`
    Parallel, reproducible, resumable generation into memory or files.

The modules import their heavy dependencies (pythia8mc, fastjet, vector) only
when used; ``import rosenblatt.hep`` imports none of them.
"""

from __future__ import annotations

__all__: list[str] = []
