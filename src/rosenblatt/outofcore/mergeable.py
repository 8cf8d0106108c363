"""Fits over a sample that is never held in one place: one read of the events.

A :class:`MergeableFit` fits an :class:`~rosenblatt.IRGI` (one or several
observables), a :class:`~rosenblatt.GridKDE` or a bootstrap
:class:`~rosenblatt.TransformEnsemble` of either over chunks of events
processed wherever they are (coffea workers, a dask cluster). The events are
read once: the first pass hands each chunk a :class:`Request`, which returns
a :class:`Partial` (sums and a histogram that add up over chunks) and writes
the chunk's ``(x, y, weight)`` as a small *skim*. Every later pass runs over
the skims only, on the same executor::

    fit = rb.MergeableFit(rb.IRGI(depth=7), skim_dir="skims/")
    transform = fit.run(runner, fileset, observables, treename="Events")

with ``observables(events) -> (x, y[, weight])`` the user's function and
``runner`` their coffea ``processor.Runner``; or, from the user's own
processor::

    request = fit.request()          # small and picklable
    # in process(events): return {"fit": request(x, y, w, chunk=events.metadata)}
    output = runner(fileset, MyProcessor(request), treename="Events")
    transform = fit.finish(output["fit"], runner)

The order statistics are exact (:mod:`rosenblatt.outofcore._order`):
the skims are sorted in groups of consecutive values, each group reports the
cumulative weight around the quantiles that the fit needs, and the fit's
last stage runs in the workers on whole columns, slabs or groups
(:mod:`rosenblatt.outofcore._tasks`). IRGI and GridKDE take two
passes over the skims, a bootstrap ensemble three.
"""

from __future__ import annotations

import math
import os
import uuid
import weakref
from collections.abc import Callable, Generator, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from rosenblatt._validation import check_int, is_int
from rosenblatt.outofcore._first_pass import Facts, Partial, Request
from rosenblatt.outofcore._order import plan_groups
from rosenblatt.outofcore._passes import Fitted, Pass, Replicas, skim_passes
from rosenblatt.outofcore._plans import BinSpec, Plan, plan_for
from rosenblatt.outofcore._running import (
    Executor,
    FitProgress,
    ObservablesPass,
    executor_for,
    read_with_runner,
)
from rosenblatt.outofcore._skims import SkimStore
from rosenblatt.outofcore._tasks import Layout
from rosenblatt.transforms._base import ConditionalCDFTransform
from rosenblatt.transforms.ensemble import TransformEnsemble
from rosenblatt.transforms.grid_kde import GridKDE
from rosenblatt.transforms.irgi import IRGI

if TYPE_CHECKING:
    from rosenblatt.outofcore._kept import KeptPasses
    from rosenblatt.processors.pieces import PieceStore

__all__ = ["MergeableFit", "Partial", "Request"]

#: default largest number of bins of the first pass's histogram
HISTOGRAM_BINS = 4096
#: default largest number of events a task of a later pass is given (where bins allow)
GATHER_LIMIT = 2**18
#: fewest bins of the first pass's histogram
MIN_BINS = 16
#: fewest events a group task is given when the sample allows
MIN_GROUP = 2**15
#: group tasks per worker
GROUPS_PER_WORKER = 2


class MergeableFit:
    """Fit a transform over chunks of events, reading each chunk once.

    Parameters
    ----------
    transform
        An unfitted :class:`~rosenblatt.IRGI` with an integer depth (or levels
        per observable) and ``occupancy="weight"``, a
        :class:`~rosenblatt.GridKDE` with a numerical ``sigma_r`` (one
        observable), or a
        :class:`~rosenblatt.TransformEnsemble` of either (Poisson-bootstrap
        replicas). IRGI and GridKDE are fitted in place; an ensemble's
        estimator is left as given, the ensemble fitted in place.
    skim_dir
        Folder of the skims (created if missing; every worker must reach it).
        By default a temporary folder, removed when the fit ends.
    keep_skims
        Keep the skims when the fit ends (in ``skim_dir``).
    work_dir
        Folder where :meth:`run` keeps the work of every pass, so that a fit
        stopped during a pass reads only the chunks left and runs only the
        tasks left when it is run again (see Notes); the skims are kept there
        too (unless ``skim_dir`` is given). By default nothing is kept
        between fits.
    progress
        Show one progress bar for the whole fit; by default as the executor's
        ``status`` says (off without an executor).
    histogram_bins
        Most bins of the first pass's histogram of the ordering column.
    gather_limit
        Most events of a task of a later pass, where the histogram's bins
        allow (a bin with more is one task).

    Attributes
    ----------
    passes : int
        Passes run so far, the one over the events included (IRGI and GridKDE:
        3, an ensemble 4, one more where a replica is replaced).
    pass_descriptions : list of str
        What each pass computed.
    chunks_ : tuple of (str, int)
        The skims of the first pass, in the order the fit takes the events,
        with their numbers of events.
    skim_dir_ : str or None
        The folder of the skims.
    y_fine_edges_ : numpy.ndarray or None
        GridKDE's shared ``y`` edges.

    Raises
    ------
    ValueError
        For a parameter chosen by cross-validation (``depth="auto"``,
        ``sigma_r="auto"``), for :class:`~rosenblatt.KDE` and for GridKDE on
        several observables: they need all defining events at once.

    Notes
    -----
    The fit is the in-memory one, ``transform.fit(x, y, weight)`` on the
    chunks' events in the order of their skims' names: the same grid for
    unit and integer weights (ties in ``x`` are broken by that order, as the
    in-memory fit breaks them by input order), the same up to rounding
    (1e-12) for other weights and for IRGI on several observables, whose
    plane is a sum of moments. Two differences remain with negative
    weights: a bisection of ``y`` looks for the crossing of the cumulative
    weight inside its column (the in-memory fit takes the running maximum
    over the whole sample), and the first level of IRGI's nested cells takes
    the first crossing (the in-memory fit a binary search of the cumulative
    weight, which is not monotone). A bootstrap replica's Poisson counts
    depend on the event's chunk and position
    (:func:`~rosenblatt.outofcore._skims.bootstrap_counts`), not on
    :func:`~rosenblatt.transforms.ensemble.poisson_weights`.

    With ``work_dir``, each chunk of :meth:`run`'s first pass keeps its
    partial result and its skim as a piece (:mod:`rosenblatt.processors.pieces`)
    under a key of the fit's configuration (the estimator's first-pass
    parameters, the function ``observables`` by its name and source, the
    tree, the Runner's schema and options, the version of rosenblatt), the
    file's content hash (BLAKE2b) and the chunk's entries. A fit run again
    reads only the chunks without a sound piece and adds the partials in the
    chunks' order, so its result is that of an uninterrupted fit bit for
    bit; a piece of another configuration or of a changed file is never
    read, and is removed. What the function's source does not show (a value
    it closes over, a module it calls) is not in the key: give another
    ``work_dir`` when it changes.

    Each task of the later passes, over the skims, keeps its result too
    (:mod:`rosenblatt.outofcore._kept`), under a key of the first pass's
    pieces and partial, the estimator's parameters, the replicas, the limits
    and the groups of the order (which depend on the executor's number of
    workers): a fit stopped in a later pass runs again only the tasks left
    of that pass, with the result of an uninterrupted fit bit for bit. These
    are removed once the fit ends. The later passes are kept only after a
    first pass kept as pieces (:meth:`run`, or :meth:`kept_partial` given the
    pieces' identity), which names the skims' content.

    A task of a later pass holds about ``gather_limit`` events at most where
    the histogram's bins allow (a bin of one repeated value is one task),
    whole IRGI columns, or one slab of the first observable that IRGI's
    nested cells split (``n / 2**s`` events for ``s`` levels along it).

    Examples
    --------
    >>> fit = MergeableFit(IRGI(depth=5))                           # doctest: +SKIP
    >>> transform = fit.fit_chunks(lambda: iter(chunks))            # doctest: +SKIP
    """

    def __init__(
        self,
        transform: ConditionalCDFTransform,
        *,
        skim_dir: str | os.PathLike[str] | None = None,
        keep_skims: bool = False,
        work_dir: str | os.PathLike[str] | None = None,
        progress: bool | None = None,
        histogram_bins: int = HISTOGRAM_BINS,
        gather_limit: int = GATHER_LIMIT,
    ) -> None:
        for value, name, least in (
            (histogram_bins, "histogram_bins", MIN_BINS),
            (gather_limit, "gather_limit", 2),
        ):
            check_int(value, name, low=least, what=f"an integer >= {least}")
        self.transform = transform
        self.work_dir = work_dir
        #: whether the skims are in the work folder's own folder (others there are removed)
        self._own_skims = skim_dir is None and work_dir is not None
        if skim_dir is None and work_dir is not None:
            skim_dir = os.path.join(work_dir, "skims")
        self.skim_dir = skim_dir
        # the kept pieces name their skims
        self.keep_skims = bool(keep_skims) or work_dir is not None
        self.progress = progress
        self.limits = (int(histogram_bins), int(gather_limit))
        self.estimator, self.replicas = _unwrap(transform)
        self.passes = 0
        self.pass_descriptions: list[str] = []
        self.y_fine_edges_: Any = None
        self.chunks_: tuple[tuple[str, int], ...] = ()
        self._tag = uuid.uuid4().hex[:12]
        self._request: Request | None = None
        self._temporary = False
        self.skim_dir_: str | None = None
        self._result: ConditionalCDFTransform | None = None
        self._error: BaseException | None = None
        #: the identity of the first pass's pieces, where it was kept (names the later passes)
        self._first_pieces: str | None = None

    def __repr__(self) -> str:
        return f"MergeableFit({self.transform!r}, passes={self.passes})"

    # ------------------------------------------------------------ protocol
    @property
    def done(self) -> bool:
        """Whether every pass is done and :meth:`result` is ready."""
        return self._result is not None

    def request(self) -> Request:
        """What every chunk computes in the first pass (the only pass over the events)."""
        if self._error is not None:
            msg = f"the fit failed: {self._error}"
            raise RuntimeError(msg) from self._error
        if self._result is not None:
            msg = "the fit is done: call result()"
            raise RuntimeError(msg)
        if self._request is None:
            store, temporary = SkimStore.create(self.skim_dir)
            if temporary and not self.keep_skims:
                weakref.finalize(self, store.remove_skims, (), temporary=True)
            self._temporary = temporary
            self.skim_dir_ = store.directory
            name = type(self.estimator).__name__
            self._request = Request(
                f"{self._tag}:0",
                f"{name}: reading events",
                store,
                _order_of(self.estimator),
                _given_domain(self.estimator),
                self.limits[0],
            )
        return self._request

    def update(self, partial: Partial | None) -> None:
        """Finish the fit in this process from the sum of the first pass's partials."""
        self.finish(partial, None)

    def result(self) -> ConditionalCDFTransform:
        """The fitted transform."""
        if self._result is None:
            msg = "the fit is not done: hand the first pass's partial to finish() (or update())"
            raise RuntimeError(msg)
        return self._result

    def fit_chunks(self, make_iterator: Callable[[], Iterable[Any]]) -> ConditionalCDFTransform:
        """Fit in this process on the chunks of ``make_iterator()``: ``(x, y)`` or ``(x, y, weight)``."""
        request = self.request()
        total: Partial | None = None
        for ordinal, chunk in enumerate(make_iterator()):
            x, y, *rest = chunk
            part = request(x, y, rest[0] if rest else None, ordinal=ordinal)
            total = part if total is None else total + part
        return self.finish(total, None)

    def run(
        self,
        runner: Any,
        fileset: Any,
        observables: Callable[[Any], Any],
        *,
        treename: str | None = None,
        **options: Any,
    ) -> ConditionalCDFTransform:
        """Fit over a file set: the user's events read once through their coffea ``Runner``.

        Parameters
        ----------
        runner
            A coffea ``processor.Runner`` (any executor); every pass runs on
            its executor, in one pool or client. A process pool the fit
            starts (the futures executor given a pool class, as by default)
            is stopped at once if the fit raises (Ctrl-C, ``SystemExit``),
            and its workers end by themselves if this process is killed
            (SIGTERM, SIGKILL); a pool given as an instance is the caller's
            to stop.
        fileset
            The file set, as the Runner takes it.
        observables
            ``observables(events) -> (x, y)`` or ``(x, y, weight)``, one value
            per event (``x`` may hold several observables as a list); called
            once per chunk.
        treename, options
            Passed to the Runner (``uproot_options``, ``iteritems_options``).

        Returns
        -------
        The fitted transform.
        """
        progress = self._progress(runner)
        try:
            with executor_for(runner, progress) as executor:
                request = self.request()
                keep = None
                work_dir = self.work_dir
                identity: list[str] = []
                if work_dir is not None:
                    document = _pass_document(request, observables, runner, treename, options)

                    def keep(chunks: list[Any]) -> PieceStore:
                        from rosenblatt.processors.pieces import Chunk

                        store = _piece_store(work_dir, document, chunks)
                        identity.append(store.identity(map(Chunk.of_work_item, chunks)))
                        return store

                output: Any = read_with_runner(
                    runner,
                    executor,
                    fileset,
                    lambda ordinals: ObservablesPass(request, observables, ordinals),
                    progress,
                    {"treename": treename, **options},
                    keep,
                )
                if work_dir is None:
                    first = output["fit"]
                else:
                    first = self.kept_partial(output, pieces=identity[-1])
                return self._complete(first, executor, progress)
        except BaseException as err:
            self._fail(err)
            raise
        finally:
            progress.close()

    def kept_partial(
        self, output: Mapping[str, Any], *, pieces: str | None = None
    ) -> Partial | None:
        """The sum of the partials of a first pass kept as pieces, for :meth:`finish`.

        ``output`` is the merge of the pieces (:func:`rosenblatt.processors.pieces.run_in_pieces`)
        whose chunks returned :func:`~rosenblatt.outofcore._running.piece_output`: the
        partials are added in the chunks' order (``None`` without any), and the skims of
        ``work_dir`` that no piece names are removed. ``pieces``: the identity of
        those pieces (:meth:`~rosenblatt.processors.pieces.PieceStore.identity`); with
        it, the later passes keep their tasks' results in ``work_dir`` too.
        """
        self._first_pieces = pieces
        return _kept_partial(output, self.request(), prune=self._own_skims)

    def finish(self, output: Any, runner: Any = None) -> ConditionalCDFTransform:
        """Run the passes over the skims on ``runner``'s executor; return the fitted transform.

        Parameters
        ----------
        output
            The sum of the first pass's partials (or a mapping that holds it,
            such as a coffea Runner's output).
        runner
            A coffea ``processor.Runner`` or executor, a function
            ``(items, function, description) -> merged results``, or ``None``
            (this process).
        """
        progress = self._progress(runner)
        try:
            with executor_for(runner, progress) as executor:
                return self._complete(output, executor, progress)
        except BaseException as err:
            self._fail(err)
            raise
        finally:
            progress.close()

    # ------------------------------------------------------------- internals
    def _progress(self, runner: Any) -> FitProgress:
        enabled = self.progress
        if enabled is None:
            executor = getattr(runner, "executor", runner)
            enabled = runner is not None and bool(getattr(executor, "status", False))
        progress = FitProgress(f"{type(self.estimator).__name__} fit", bool(enabled))
        progress.passes = self.passes
        return progress

    def _complete(
        self, output: Any, executor: Executor, progress: FitProgress
    ) -> ConditionalCDFTransform:
        request = self.request()
        partial = _find_partial(output, request)
        self._count(request.description)
        store = request.store
        try:
            facts = Facts.of(partial)
            self.chunks_ = facts.chunks
            plan = plan_for(self.estimator, facts)
            if (
                plan.order != request.order
            ):  # pragma: no cover - fixed by the estimator's parameters
                msg = "the first pass ordered another column than the fit needs"
                raise RuntimeError(msg)
            share = math.ceil(facts.n / (GROUPS_PER_WORKER * executor.workers))
            groups = plan_groups(facts.sketch, min(self.limits[1], max(MIN_GROUP, share)))
            kept = self._kept_passes(partial, groups)
            skims = store if kept is None else kept.skims
            layout = Layout(skims, facts.k, plan.order, facts.chunks)
            into = None if self.replicas is not None else self.estimator
            passes = skim_passes(plan, facts, layout, groups, self.replicas, into)
            fitted = self._drive(passes, executor, progress, kept)
            if kept is not None:
                kept.remove()
        finally:
            store.remove_groups()
            if not self.keep_skims:
                store.remove_skims(
                    [name for _, name, _ in partial.chunks], temporary=self._temporary
                )
        self._result = self._assemble(fitted, plan)
        return self._result

    def _kept_passes(self, partial: Partial, groups: list[Any]) -> KeptPasses | None:
        """Where the later passes keep their tasks' results: only after a kept first pass."""
        if self.work_dir is None or self._first_pieces is None:
            return None
        import dataclasses

        from rosenblatt._version import __version__
        from rosenblatt.outofcore._kept import KeptPasses
        from rosenblatt.processors.pieces import fingerprint

        document = {
            "version": __version__,
            "first pass": self._first_pieces,
            "partial": fingerprint(partial.to_document()),
            "estimator": [type(self.estimator).__qualname__, _parameters(self.estimator)],
            "replicas": None if self.replicas is None else dataclasses.astuple(self.replicas),
            "limits": list(self.limits),
            "groups": [dataclasses.astuple(group) for group in groups],
        }
        return KeptPasses.create(self.work_dir, document, self.request().store)

    def _drive(
        self,
        passes: Generator[Pass, dict[str, Any], Fitted],
        executor: Executor,
        progress: FitProgress,
        kept: KeptPasses | None = None,
    ) -> Fitted:
        """Run every pass of ``passes`` on ``executor`` (the results ``kept`` read back)."""
        results: dict[str, Any] | None = None
        number = 0
        while True:
            try:
                step = next(passes) if results is None else passes.send(results)
            except StopIteration as stop:
                fitted: Fitted = stop.value
                return fitted
            number += 1
            self._count(step.description)
            progress.start(step.description, len(step.tasks))
            if kept is None:
                results = executor.map(step.tasks, progress.advance)
            else:
                results = kept.run(number, step.tasks, executor.map, progress.advance)

    def _count(self, description: str) -> None:
        self.passes += 1
        self.pass_descriptions.append(description)

    def _assemble(self, fitted: Fitted, plan: Plan) -> ConditionalCDFTransform:
        if isinstance(fitted.spec, BinSpec):
            self.y_fine_edges_ = fitted.spec.fine_edges
        if self.replicas is None:
            return fitted.nominal
        assert isinstance(self.transform, TransformEnsemble)
        return self.transform.set_fitted_members(
            fitted.nominal, fitted.replicas, fitted.draws, fitted.failed
        )

    def _fail(self, err: BaseException) -> None:
        if self._result is None:
            self._error = err


def _pass_document(
    request: Request,
    observables: Callable[[Any], Any],
    runner: Any,
    treename: str | None,
    options: Mapping[str, Any],
) -> dict[str, Any]:
    """What a chunk's partial and skim depend on besides the file's content and entries."""
    from rosenblatt._version import __version__

    schema = getattr(runner, "schema", None)
    return {
        "version": __version__,
        "order": request.order,
        "domain": request.domain,
        "sketch_bins": request.sketch_bins,
        "observables": _identity(observables),
        "treename": treename,
        "schema": getattr(schema, "__qualname__", repr(schema)),
        "options": dict(options),
    }


def _identity(function: Callable[..., Any]) -> list[Any]:
    """A function by its module, name and source (an object that is not a function, by its repr too)."""
    import hashlib
    import inspect

    plain = inspect.isfunction(function) or inspect.ismethod(function)
    target = function if plain else type(function)
    try:
        source = hashlib.blake2b(inspect.getsource(target).encode()).hexdigest()
    except (OSError, TypeError):
        source = None
    name = getattr(target, "__qualname__", type(function).__qualname__)
    return [getattr(target, "__module__", None), name, source, None if plain else repr(function)]


def _parameters(estimator: ConditionalCDFTransform) -> dict[str, Any]:
    """An estimator's parameters: its public attributes but the fitted ones (ending in ``_``)."""
    return {
        name: value
        for name, value in sorted(vars(estimator).items())
        if not name.startswith("_") and not name.endswith("_")
    }


def _piece_store(work_dir: str | os.PathLike[str], document: Any, chunks: list[Any]) -> PieceStore:
    """The store of the first pass's pieces in ``work_dir``, the local input files hashed."""
    from pathlib import Path

    from rosenblatt._records import file_digest
    from rosenblatt.processors.pieces import PieceStore

    files = sorted({str(item.filename) for item in chunks})
    digests = {path: file_digest(path) for path in files if Path(path).is_file()}
    return PieceStore.create(Path(work_dir) / "pieces", "fit", document, digests)


def _kept_partial(output: Mapping[str, Any], request: Request, *, prune: bool) -> Partial | None:
    """The sum, in the chunks' order, of the partials the pieces hold; with ``prune``, the
    other skims of the skims' folder removed."""
    total: Partial | None = None
    for document in output.get("partials", []):
        part = Partial.from_document(document, request.tag)
        total = part if total is None else total + part
    if not prune:
        return total
    wanted = {os.path.abspath(path) for path in output.get("skim", [])}
    folder = request.store.directory
    for name in os.listdir(folder):
        path = os.path.join(folder, name)
        if name.startswith("skim-") and name.endswith(".npy") and path not in wanted:
            os.unlink(path)
    return total


def _find_partial(output: Any, request: Request) -> Partial:
    """The first pass's partial: ``output`` itself, or a value of a mapping that holds it."""
    if output is None:
        msg = (
            f"no chunk contributed to the pass {request.description!r}: the first pass must see "
            "every chunk of the sample"
        )
        raise ValueError(msg)
    if isinstance(output, Mapping):
        found = [v for v in output.values() if isinstance(v, Partial)]
        if len(found) == 1:
            output = found[0]
    if not isinstance(output, Partial):
        msg = (
            "finish() takes the sum of the first pass's partials (or a mapping that holds it), "
            f"got {type(output).__name__}"
        )
        raise TypeError(msg)
    if output.tag != request.tag:
        msg = (
            f"this is not the sum of the partials of this fit's request ({request.description!r}): "
            "call fit.request() and add the partials it returns"
        )
        raise ValueError(msg)
    return output


def _unwrap(transform: Any) -> tuple[ConditionalCDFTransform, Replicas | None]:
    """The estimator to fit and, for an ensemble, its replicas; refuse what is not mergeable."""
    replicas = None
    estimator = transform
    if isinstance(transform, TransformEnsemble):
        estimator = transform.estimator
        n, seed = transform.n, transform.seed
        most = n if transform.max_refits is None else transform.max_refits
        for value, name, low in ((n, "n", 2), (seed, "seed", 0), (most, "max_refits", 0)):
            check_int(value, name, low=low, what=f"an integer >= {low}")
        replicas = Replicas(int(n), int(seed), int(most))
    fallback = "fit it in memory on the gathered (x, y, weight)"
    if isinstance(estimator, IRGI):
        if isinstance(estimator.depth, str) and estimator.depth == "auto":
            msg = (
                "IRGI(depth='auto') is not mergeable: the depth is chosen by cross-validation "
                f"on all defining events at once; give an integer depth, or {fallback}"
            )
            raise ValueError(msg)
        if estimator.occupancy != "weight":
            msg = (
                "IRGI(occupancy='events') is not mergeable: the workers' histograms of x sum "
                f"the weights; give occupancy='weight', or {fallback}"
            )
            raise ValueError(msg)
        _check_depth(estimator.depth)
        return estimator, replicas
    if isinstance(estimator, GridKDE):
        if isinstance(estimator.sigma_r, str) and estimator.sigma_r == "auto":
            msg = (
                "GridKDE(sigma_r='auto') is not mergeable: the width is chosen by "
                "cross-validation on all defining events at once; give a number, e.g. "
                f"sigma_r=0.05, or {fallback}"
            )
            raise ValueError(msg)
        estimator.fixed_parameters()
        return estimator, replicas
    msg = (
        f"{type(estimator).__name__} is not mergeable: its estimate needs every defining event; "
        f"use GridKDE (or IRGI) with fixed parameters, or {fallback}"
    )
    raise ValueError(msg)


def _check_depth(depth: Any) -> None:
    if isinstance(depth, (tuple, list)):
        if not depth or not all(is_int(s) and s >= 0 for s in depth):
            msg = f"depth as levels per observable must be non-negative integers, got {depth!r}"
            raise ValueError(msg)
        return
    check_int(depth, "depth", low=0, what="a non-negative integer or 'auto'")


def _order_of(estimator: ConditionalCDFTransform) -> int:
    """The column the fit orders first: ``y`` (-1) for GridKDE, else the first observable IRGI splits."""
    if isinstance(estimator, GridKDE):
        return -1
    depth = getattr(estimator, "depth", 0)
    if isinstance(depth, (tuple, list)):
        return next((a for a, s in enumerate(depth) if s > 0), 0)
    return 0


def _given_domain(estimator: ConditionalCDFTransform) -> Any:
    if isinstance(estimator, IRGI) and estimator.domain is not None:
        from rosenblatt.transforms.irgi import parse_domain

        return parse_domain(estimator.domain)
    return None
