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

Where negative weights leave a fit undefined in spite of the estimators'
remedies (a :class:`~rosenblatt.exceptions.NegativeWeightError`), the error
names the dataset, file and entries whose negative weights lie where the fit
failed (:func:`negative_weight_sources`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from rosenblatt.exceptions import NegativeWeightError
from rosenblatt.typing import FloatArray

__all__ = [
    "DEFAULT_MAX_GATHER",
    "KeptSkimPass",
    "ScoreHistogram",
    "SkimData",
    "SkimPass",
    "fit_in_workers",
    "fit_on_skims",
    "gather_skims",
    "mergeable",
    "negative_weight_sources",
    "score_range",
    "skim_chunk",
    "skim_events",
]

#: most events :func:`gather_skims` reads into the driver by default
DEFAULT_MAX_GATHER = 5_000_000
#: skim files, and entries of each, named by :func:`negative_weight_sources`
NAMED_FILES, NAMED_ENTRIES = 3, 5
#: a skim's file name: ``<dataset>-<file stem>-<digest of the file>-<start>-<stop>.parquet``
SKIM_NAME = re.compile(
    r"(?P<head>.*)-(?P<digest>[0-9a-f]{10})-(?P<start>\d{12})-(?P<stop>\d{12})\.parquet"
)


@dataclass(frozen=True)
class SkimData:
    """A skim file sent to the workers by value: its path on the driver and its bytes.

    The passes over skims (:class:`SkimPass`, :class:`ScoreHistogram`) take it
    in place of the path where the workers share no disk with the driver.
    """

    path: str
    data: bytes

    @classmethod
    def read(cls, path: str) -> SkimData:
        """The skim file at ``path``, read whole."""
        return cls(path, Path(path).read_bytes())


def _read(path: str | SkimData, score: str) -> tuple[FloatArray, FloatArray, FloatArray]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    column = f"score_{score}"
    source = pa.BufferReader(path.data) if isinstance(path, SkimData) else path
    table = pq.read_table(source, columns=["x", column, "weight"])
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

    def __call__(self, path: str | SkimData) -> Any:
        """Return the partial result of the file's events (in the order of the file names)."""
        x, y, weight = _read(path, self.score)
        name = path.path if isinstance(path, SkimData) else path
        return self.request(x, y, weight, chunk={"filename": name})


@dataclass(frozen=True)
class ScoreHistogram:
    """The weighted histogram of one score of a skim file, on ``bins`` equal bins (picklable)."""

    score: str
    low: float
    high: float
    bins: int = 4096

    def __call__(self, path: str | SkimData) -> FloatArray:
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
) -> tuple[FloatArray, FloatArray, FloatArray]:
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
            f"{max_events}: this transform is fitted on the events themselves (KDE, IRGI with "
            "occupancy: events, or 'auto' parameters); raise max_gather_events, or use IRGI "
            "(with occupancy: weight) or GridKDE with fixed parameters, which are fitted in the "
            "workers"
        )
    if not paths:
        raise ValueError("the defining sample has no events")
    parts = [_read(path, score) for path in sorted(paths)]
    x, y, weight = (np.concatenate([part[k] for part in parts]) for k in range(3))
    return x, y, weight


@dataclass(frozen=True)
class KeptSkimPass:
    """:class:`SkimPass` whose output is kept as a piece: the partial as data, and its skim."""

    request: Any
    score: str

    def __call__(self, path: str | SkimData) -> dict[str, Any]:
        """The file's partial as a piece holds it."""
        from rosenblatt.outofcore._running import piece_output

        return piece_output(SkimPass(self.request, self.score)(path), self.request)


def skim_chunk(path: str | SkimData) -> Any:
    """The chunk of a skim file in the pieces of a fit's first pass: the whole file."""
    from rosenblatt.processors.pieces import Chunk

    return Chunk("defining", path.path if isinstance(path, SkimData) else path, 0, 0)


def fit_in_workers(
    transform: Any,
    paths: Sequence[str],
    score: str,
    run_pass: Callable[[Sequence[str], Any, str], Any],
    *,
    work_dir: str | os.PathLike[str] | None = None,
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
    work_dir : path-like, optional
        Where the first pass keeps each skim file's partial result and the
        fit's skim of it as a piece (:mod:`rosenblatt.processors.pieces`,
        keyed by the fit's first-pass parameters, the score and the file's
        content hash), so that a fit stopped in that pass and run again
        reads only the files left; the workers must see it.

    Returns
    -------
    The fitted transform.
    """
    from rosenblatt.outofcore.mergeable import MergeableFit

    fit = MergeableFit(transform, work_dir=work_dir)
    request = fit.request()
    if work_dir is None:
        first = run_pass(sorted(paths), SkimPass(request, score), request.description)
    else:
        first = _kept_first_pass(fit, paths, score, run_pass, Path(work_dir))
    return fit.finish(first, run_pass)


def _kept_first_pass(
    fit: Any,
    paths: Sequence[str],
    score: str,
    run_pass: Callable[[Sequence[str], Any, str], Any],
    work_dir: Path,
) -> Any:
    """The first pass of ``fit`` over the skim files, each file's partial kept as a piece."""
    from rosenblatt._records import file_digest
    from rosenblatt._version import __version__
    from rosenblatt.processors.pieces import PieceStore, PieceTask, run_in_pieces

    request = fit.request()
    document = {
        "version": __version__,
        "score": score,
        "order": request.order,
        "domain": request.domain,
        "sketch_bins": request.sketch_bins,
    }
    digests = {path: file_digest(path) for path in paths}
    store = PieceStore.create(work_dir / "pieces", "fit", document, digests)
    task = PieceTask(KeptSkimPass(request, score), skim_chunk, store)

    def run_missing(missing: list[Any]) -> None:
        run_pass([chunk.file for chunk in missing], task, request.description)

    chunks = [skim_chunk(path) for path in paths]
    merged = run_in_pieces(store, chunks, run_missing)
    return fit.kept_partial(merged, pieces=store.identity(chunks))


def fit_on_skims(
    transform: Any,
    paths: Sequence[str],
    score: str,
    run_pass: Callable[[Sequence[str], Any, str], Any],
    *,
    max_gather_events: int = DEFAULT_MAX_GATHER,
    sources: Mapping[str, Sequence[str]] | None = None,
    work_dir: str | os.PathLike[str] | None = None,
) -> Any:
    """Fit a transform on the defining sample's skims, in the workers where it can be.

    IRGI and GridKDE with fixed parameters are fitted by :func:`fit_in_workers`
    (which keeps its first pass in ``work_dir`` if given); every other transform
    on the events read by :func:`gather_skims`.

    Raises
    ------
    NegativeWeightError
        Where negative weights leave the fit undefined; the message adds
        :func:`negative_weight_sources` (``sources``: the ``{dataset: [file,
        ...]}`` the skims were written from).
    """
    try:
        if mergeable(transform):
            return fit_in_workers(transform, paths, score, run_pass, work_dir=work_dir)
        x, y, weight = gather_skims(paths, score, max_events=max_gather_events)
        return transform.fit(x, y, weight)
    except NegativeWeightError as err:
        where = negative_weight_sources(paths, err.x_range, sources or {})
        raise NegativeWeightError(f"{err}; {where}", err.x_range) from err


def negative_weight_sources(
    paths: Sequence[str],
    x_range: tuple[float, float] | None,
    sources: Mapping[str, Sequence[str]],
) -> str:
    """Which dataset, file and entries hold the negative weights of the skims (within ``x_range``).

    The skims with the most negative summed weight come first; each is named
    by its dataset, file and entry range (from ``sources``, ``{dataset:
    [file, ...]}``, or by the skim's own path), with the entries of its
    largest negative weights.
    """
    import pyarrow.parquet as pq

    found = []
    for path in sorted(paths):
        table = pq.read_table(path, columns=["x", "weight", "entry"])
        x, weight, entry = (table.column(c).to_numpy() for c in ("x", "weight", "entry"))
        negative = weight < 0
        if x_range is not None:
            negative &= (x >= x_range[0]) & (x <= x_range[1])
        if negative.any():
            order = np.argsort(weight[negative], kind="stable")
            found.append((float(weight[negative].sum()), path, entry[negative][order]))
    where = "" if x_range is None else f" at x in [{x_range[0]:g}, {x_range[1]:g}]"
    if not found:
        return f"no event of the defining skims has a negative weight{where}"
    found.sort(key=lambda item: item[0])
    named = []
    for total, path, entries in found[:NAMED_FILES]:
        listed = ", ".join(str(int(e)) for e in entries[:NAMED_ENTRIES])
        more = f" and {len(entries) - NAMED_ENTRIES} more" if len(entries) > NAMED_ENTRIES else ""
        named.append(f"{skim_origin(path, sources)}: entries {listed}{more} (weight {total:g})")
    others = f"; and {len(found) - NAMED_FILES} more skim(s)" if len(found) > NAMED_FILES else ""
    return f"negative weights{where} come from " + "; ".join(named) + others


def skim_origin(path: str, sources: Mapping[str, Sequence[str]]) -> str:
    """``dataset <name>, file <file> (chunk of entries <start>-<stop>)`` of a skim, or its path."""
    match = SKIM_NAME.fullmatch(Path(path).name)
    if match is None:
        return f"skim {path}"
    candidates = [
        (dataset, file)
        for dataset, files in sources.items()
        for file in files
        if match["head"] == f"{dataset}-{Path(file).stem}"
    ]
    if len(candidates) > 1:
        candidates = [c for c in candidates if match["digest"] in _digests(c[1])] or candidates
    chunk = f"chunk of entries {int(match['start'])}-{int(match['stop'])}"
    if not candidates:
        return f"skim {path} ({chunk})"
    dataset, file = candidates[0]
    return f"dataset {dataset}, file {file} ({chunk})"


def _digests(file: str) -> set[str]:
    """The digests a skim's name may hold for ``file`` (as given, or relative to here)."""
    from rosenblatt.processors.events import chunk_file_name

    spellings = {file, os.path.relpath(file)} if os.path.isabs(file) else {file}
    names = (SKIM_NAME.fullmatch(chunk_file_name("d", name, 0, 0)) for name in spellings)
    return {match["digest"] for match in names if match is not None}


def mergeable(transform: Any) -> bool:
    """Whether :class:`rosenblatt.MergeableFit` can fit ``transform``."""
    from rosenblatt.outofcore.mergeable import MergeableFit

    try:
        MergeableFit(transform)
    except ValueError:
        return False
    return True
