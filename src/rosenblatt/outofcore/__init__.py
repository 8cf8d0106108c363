"""Fits of a transform over a sample never held in one place: chunks of a file set, read once.

:class:`MergeableFit` fits an IRGI, a GridKDE or a bootstrap ensemble of either from
partial results that add over chunks: a first pass through the user's coffea
``processor.Runner`` (or any iterable of chunks) writes each chunk's ``(x, y, weight)`` as
a skim, and the later passes run over the skims on the same executor (in this process, a
``FuturesExecutor``'s pool or a dask client). The estimators themselves are those of
:mod:`rosenblatt.transforms`, which never import this package.

- :mod:`~rosenblatt.outofcore.mergeable`: :class:`MergeableFit`, what the first pass hands
  each chunk (:class:`Request`) and what it returns (:class:`Partial`).
"""

from __future__ import annotations

from rosenblatt.outofcore.mergeable import MergeableFit, Partial, Request

__all__ = ["MergeableFit", "Partial", "Request"]
