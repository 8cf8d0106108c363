"""The fairness study outside physics (``study: fairness``).

:mod:`~rosenblatt.studies.fairness.study` runs it (``rosenblatt run fairness``);
:mod:`~rosenblatt.studies.fairness.config` validates its configuration,
:mod:`~rosenblatt.studies.fairness.parity` gives the rates per group and their spreads,
:mod:`~rosenblatt.studies.fairness.summary` the shape of ``summary.json`` and
:mod:`~rosenblatt.studies.fairness.report` the figures and the report.
"""

from __future__ import annotations
