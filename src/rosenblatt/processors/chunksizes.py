"""Events per chunk of a pass over event files, by the files' layout.

The runner (:mod:`rosenblatt.processors.runner`) splits every pass into chunks of
these many events where the caller gives no chunk size: particle-level files are
clustered event by event, while flat ntuples and NanoAOD are read column by column,
where a chunk costs coffea some milliseconds of its own whatever its size.
"""

from __future__ import annotations

from typing import Literal

__all__ = ["COLUMNAR", "PARTICLES", "events_per_chunk"]

#: particle-level files (ROOT ``Events`` trees of particles, LHC Olympics HDF5)
PARTICLES = 10_000
#: flat ntuples and NanoAOD
COLUMNAR = 200_000


def events_per_chunk(layout: Literal["particles", "columnar"], given: int | None = None) -> int:
    """The chunk size of a pass: ``given``, or the default of the files' ``layout``.

    Raises
    ------
    ValueError
        If ``given`` is not a positive whole number of events.
    """
    if given is None:
        return PARTICLES if layout == "particles" else COLUMNAR
    if isinstance(given, bool) or int(given) != given or given < 1:
        msg = f"chunksize: must be a positive number of events, got {given!r}"
        raise ValueError(msg)
    return int(given)
