"""The Gaussian-blob study of the method paper (``study: blobs``).

:mod:`~rosenblatt.studies.blobs.study` runs it (``rosenblatt run blobs``);
:mod:`~rosenblatt.studies.blobs.config` validates its configuration,
:mod:`~rosenblatt.studies.blobs.summary` gives the shape of ``summary.json`` and
:mod:`~rosenblatt.studies.blobs.report` the figures and the report.
"""

from __future__ import annotations
