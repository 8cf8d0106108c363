"""The pseudo-experiment study of the ABCD estimate (``study: toys``).

:mod:`~rosenblatt.studies.toys.study` runs it (``rosenblatt run toys``);
:mod:`~rosenblatt.studies.toys.config` validates its configuration,
:mod:`~rosenblatt.studies.toys.population` is the toy population with its exact
yields, :mod:`~rosenblatt.studies.toys.experiment` one pseudo-experiment,
:mod:`~rosenblatt.studies.toys.summary` the bias, pulls and coverage, and
:mod:`~rosenblatt.studies.toys.report` the report.
"""

from __future__ import annotations
