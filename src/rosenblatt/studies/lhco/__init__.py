"""The LHC Olympics dijet study (``study: lhco``) and its two-observable variant (``lhco-2d``).

One module per idea: :mod:`~rosenblatt.studies.lhco.study` (the named, timed steps),
:mod:`~rosenblatt.studies.lhco.config`, :mod:`~rosenblatt.studies.lhco.statistics`
(uncertainties, closure test, likelihood, contamination), :mod:`~rosenblatt.studies.lhco.paper`
(the paper's numbers beside ours), :mod:`~rosenblatt.studies.lhco.processor_closure` (the
closure from the event files), :mod:`~rosenblatt.studies.lhco.results` (what the steps hand
on), :mod:`~rosenblatt.studies.lhco.summary` (the shape of ``summary.json``),
:mod:`~rosenblatt.studies.lhco.report`; the two-observable study in
:mod:`~rosenblatt.studies.lhco.study_2d`, :mod:`~rosenblatt.studies.lhco.config_2d`,
:mod:`~rosenblatt.studies.lhco.summary_2d` and :mod:`~rosenblatt.studies.lhco.report_2d`.

The names of :mod:`~rosenblatt.studies.lhco.study` (``run``, ``STEPS``, ...) are also reached
from here, as ``rosenblatt.studies.lhco.run``, loaded on first use.
"""

from __future__ import annotations

import importlib
from typing import Any


def __getattr__(name: str) -> Any:
    study = importlib.import_module("rosenblatt.studies.lhco.study")
    try:
        return getattr(study, name)
    except AttributeError:
        msg = f"module {__name__!r} has no attribute {name!r}"
        raise AttributeError(msg) from None
