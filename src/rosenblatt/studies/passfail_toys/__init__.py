"""Pseudo-experiments of the pass/fail fit and its bump hunt (``study: passfail-toys``).

:mod:`~rosenblatt.studies.passfail_toys.study` runs it (``rosenblatt run passfail-toys``);
:mod:`~rosenblatt.studies.passfail_toys.config` validates its configuration,
:mod:`~rosenblatt.studies.passfail_toys.spectra` gives each pseudo-experiment's expected
spectra in bins of ``x`` after the cut, :mod:`~rosenblatt.studies.passfail_toys.summary`
the bias, pulls, coverage and global significance, and
:mod:`~rosenblatt.studies.passfail_toys.report` the report.
"""

from __future__ import annotations
