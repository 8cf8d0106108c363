"""Fitting transforms over the per-chunk skims of a file set, in the workers.

The first pass of an analysis writes, per chunk, the protected observable, the
scores and the weight of every event to a small parquet file (the skim, see
:class:`~rosenblatt.processors.analysis.AnalysisProcessor`). The transforms are
then fitted from these files:

- IRGI and GridKDE with fixed parameters by :class:`rosenblatt.MergeableFit`:
  its first pass maps a request over the skim files on the executor's workers
  and adds up the partial results, its later passes run over the fit's own
  sorted tables on the same workers, so the driver holds histograms only;
- KDE, and any transform with ``"auto"`` parameters, need the events
  themselves: :func:`gather_skims` reads ``(x, score, weight)`` into the
  driver, and refuses beyond ``max_events`` events with an error that says so.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

__all__ = [
    "DEFAULT_MAX_GATHER",
    "ScoreHistogram",
    "SkimPass",
    "fit_in_workers",
    "fit_on_skims",
    "gather_skims",
    "mergeable",
    "score_range",
    "skim_events",
]

#: most events :func:`gather_skims` reads into the driver by default
DEFAULT_MAX_GATHER = 5_000_000


def _read(
    path: str, score: str
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    import pyarrow.parquet as pq

    column = f"score_{score}"
    table = pq.read_table(path, columns=["x", column, "weight"])
    return tuple(  # type: ignore[return-value]
        np.asarray(table.column(name).to_numpy(), dtype=np.float64)
        for name in ("x", column, "weight")
    )


@dataclass(frozen=True)
class SkimPass:
    """One pass of a mergeable fit over one skim file (picklable, for the workers).

    Attributes
    ----------
    request
        The request of :meth:`rosenblatt.MergeableFit.request`.
    score : str
        Which score of the skim is ``y``.
    """

    request: Any
    score: str

    def __call__(self, path: str) -> Any:
        """Return the partial result of the file's events (in the order of the file names)."""
        x, y, weight = _read(path, self.score)
        return self.request(x, y, weight, chunk={"filename": path})


@dataclass(frozen=True)
class ScoreHistogram:
    """The weighted histogram of one score of a skim file, on ``bins`` equal bins (picklable)."""

    score: str
    low: float
    high: float
    bins: int = 4096

    def __call__(self, path: str) -> NDArray[np.float64]:
        """Return the summed weight per bin (values outside are put in the end bins)."""
        _, y, weight = _read(path, self.score)
        counts, _ = np.histogram(
            np.clip(y, self.low, self.high), self.bins, (self.low, self.high), weights=weight
        )
        return counts.astype(np.float64)


def score_range(paths: Sequence[str], score: str) -> tuple[float, float]:
    """Smallest and largest value of a score in the skim files, from their parquet statistics."""
    import pyarrow.parquet as pq

    column = f"score_{score}"
    low, high = np.inf, -np.inf
    for path in paths:
        metadata = pq.ParquetFile(path).metadata
        index = metadata.schema.names.index(column)
        for group in range(metadata.num_row_groups):
            statistics = metadata.row_group(group).column(index).statistics
            if statistics is not None and statistics.has_min_max:
                low, high = min(low, float(statistics.min)), max(high, float(statistics.max))
    if not low < high:
        raise ValueError(f"the defining sample's {score} has no spread (range [{low}, {high}])")
    return float(low), float(high)


def skim_events(paths: Sequence[str]) -> int:
    """Number of events in the skim files (read from their metadata)."""
    import pyarrow.parquet as pq

    return sum(int(pq.ParquetFile(path).metadata.num_rows) for path in paths)


def gather_skims(
    paths: Sequence[str], score: str, *, max_events: int = DEFAULT_MAX_GATHER
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """Read ``(x, score, weight)`` of every event of the skims into memory.

    Raises
    ------
    ValueError
        If the skims hold more than ``max_events`` events.
    """
    n_events = skim_events(paths)
    if n_events > max_events:
        raise ValueError(
            f"the defining sample has {n_events} events, more than max_gather_events = "
            f"{max_events}: this transform is fitted on the events themselves (KDE, or 'auto' "
            "parameters); raise max_gather_events, or use IRGI or GridKDE with fixed parameters, "
            "which are fitted in the workers"
        )
    if not paths:
        raise ValueError("the defining sample has no events")
    parts = [_read(path, score) for path in sorted(paths)]
    x, y, weight = (np.concatenate([part[k] for part in parts]) for k in range(3))
    return x, y, weight


def fit_in_workers(
    transform: Any,
    paths: Sequence[str],
    score: str,
    run_pass: Callable[[Sequence[str], SkimPass, str], Any],
) -> Any:
    """Fit a transform by :class:`rosenblatt.MergeableFit`: every pass on the executor's workers.

    Parameters
    ----------
    transform
        An unfitted IRGI or GridKDE with fixed parameters.
    paths : sequence of str
        The skim files of the defining sample.
    score : str
        The score that is ``y``.
    run_pass : callable
        ``run_pass(items, function, description)`` maps ``function`` over the
        items (the files, then the fit's tasks) on the workers and returns the
        sum of the results.

    Returns
    -------
    The fitted transform.
    """
    from rosenblatt.transforms.mergeable import MergeableFit

    fit = MergeableFit(transform)
    request = fit.request()
    first = run_pass(sorted(paths), SkimPass(request, score), request.description)
    return fit.finish(first, run_pass)


def fit_on_skims(
    transform: Any,
    paths: Sequence[str],
    score: str,
    run_pass: Callable[[Sequence[str], SkimPass, str], Any],
    *,
    max_gather_events: int = DEFAULT_MAX_GATHER,
) -> Any:
    """Fit a transform on the defining sample's skims, in the workers where it can be.

    IRGI and GridKDE with fixed parameters are fitted by :func:`fit_in_workers`;
    every other transform on the events read by :func:`gather_skims`.
    """
    if mergeable(transform):
        return fit_in_workers(transform, paths, score, run_pass)
    x, y, weight = gather_skims(paths, score, max_events=max_gather_events)
    return transform.fit(x, y, weight)


def mergeable(transform: Any) -> bool:
    """Whether :class:`rosenblatt.MergeableFit` can fit ``transform``."""
    from rosenblatt.transforms.mergeable import MergeableFit

    try:
        MergeableFit(transform)
    except ValueError:
        return False
    return True
