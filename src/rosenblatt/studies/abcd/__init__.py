"""The decorrelated ABCD analysis over a user's own files (``study: abcd``).

:mod:`~rosenblatt.studies.abcd.study` runs it (``rosenblatt run abcd-example``), its passes
of coffea processors over the files; :mod:`~rosenblatt.studies.abcd.config` validates its
configuration, with its ``abcd:`` section in :mod:`~rosenblatt.studies.abcd.cuts`, its
datasets in :mod:`~rosenblatt.studies.abcd.datasets` and its ``generate:`` entries in
:mod:`~rosenblatt.studies.abcd.generate`; :mod:`~rosenblatt.studies.abcd.preflight` checks
every file before any chunk, :mod:`~rosenblatt.studies.abcd.pieces` keys a pass's pieces,
:mod:`~rosenblatt.studies.abcd.estimate` chooses the cut and gives the data-driven estimate,
:mod:`~rosenblatt.studies.abcd.passfail` the pass/fail fit (on the spectra of
:mod:`~rosenblatt.studies.abcd.passfail_spectra`, drawn by
:mod:`~rosenblatt.studies.abcd.passfail_figures`) and
:mod:`~rosenblatt.studies.abcd.bumphunt` its bump hunt,
:mod:`~rosenblatt.studies.abcd.summary` the shape of ``summary.json``,
:mod:`~rosenblatt.studies.abcd.outputs` the files written and
:mod:`~rosenblatt.studies.abcd.report` the report.
"""

from __future__ import annotations
