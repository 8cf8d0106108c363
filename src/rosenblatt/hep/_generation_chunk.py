"""One chunk of generated events: the run's settings, Pythia's events of one seed, the file's record.

See :mod:`rosenblatt.hep.generation`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import metadata
from typing import Any

import awkward as ak
import numpy as np
from numpy.typing import NDArray

from rosenblatt._validation import is_int
from rosenblatt.hep.particles import (
    ETA_MAX,
    MAX_PARTICLES,
    PT_MIN,
    make_events,
    visible_final_state,
)
from rosenblatt.hep.pythia_settings import (
    CENTER_OF_MASS_ENERGY,
    DEFAULT_CHUNK_SIZE,
    DEFAULT_PTHAT_MIN,
    PROCESS_LABELS,
    PYTHIA_SEED_MAX,
    pythia_settings,
)
from rosenblatt.hep.trigger import TRIGGER_PT_MIN, TRIGGER_RADIUS, passes_trigger
from rosenblatt.typing import FloatArray, Int64Array

__all__ = [
    "CHUNK_FIELDS",
    "GeneratedChunk",
    "GenerationSettings",
    "GenerationSummary",
    "generate_chunk",
]

#: per-chunk record written to the file (besides ``n_events``, the passing events)
CHUNK_FIELDS: dict[str, str] = {
    "chunk": "int64",
    "pythia_seed": "int64",
    "n_generated": "int64",
    "sigma_pb": "float64",
    "sigma_err_pb": "float64",
    "n_truncated_events": "int64",
    "n_dropped_particles": "int64",
}

#: Pythia cross sections are in mb
_PB_PER_MB = 1e9
#: events per ``nextBatch`` call: bounds the memory of the full event records
_MIN_BATCH, _MAX_BATCH = 20, 200
#: a chunk gives up when this many generated events gave no passing event
_ZERO_PASS_LIMIT = 5000


@dataclass(frozen=True)
class GenerationSettings:
    """Everything that determines the generated events.

    Parameters
    ----------
    process : {"qcd", "wprime"}
        Process to generate.
    n_events : int
        Number of events passing the trigger.
    seed : int
        Run seed (non-negative); each chunk derives its Pythia seed from it.
    chunk_size : int, default :data:`DEFAULT_CHUNK_SIZE`
        Passing events per chunk.
    pthat_min : float, default 1000
        ``PhaseSpace:pTHatMin`` of the ``qcd`` process in GeV.
    eta_max : float, default 2.5
        Particle acceptance ``|eta| < eta_max``.
    pt_min : float, default 0.5
        Particle threshold ``pt > pt_min`` in GeV.
    max_particles : int, default 700
        Particles kept per event (the hardest).
    trigger_pt_min : float, default 1200
        Trigger threshold on the leading jet pT in GeV.
    trigger_radius : float, default 1.0
        Anti-kT radius of the trigger jets.
    """

    process: str
    n_events: int
    seed: int
    chunk_size: int = DEFAULT_CHUNK_SIZE
    pthat_min: float = DEFAULT_PTHAT_MIN
    eta_max: float = ETA_MAX
    pt_min: float = PT_MIN
    max_particles: int = MAX_PARTICLES
    trigger_pt_min: float = TRIGGER_PT_MIN
    trigger_radius: float = TRIGGER_RADIUS

    def __post_init__(self) -> None:
        if self.process not in PROCESS_LABELS:
            raise ValueError(
                f"process: unknown process {self.process!r}; choose one of {sorted(PROCESS_LABELS)}"
            )
        for name, minimum in (("n_events", 1), ("seed", 0), ("chunk_size", 1)):
            value = getattr(self, name)
            if not is_int(value):
                raise TypeError(f"{name}: must be an integer, got {value!r}")
            if value < minimum:
                raise ValueError(f"{name}: must be at least {minimum}, got {value}")
        if not self.max_particles >= 1:
            raise ValueError(f"max_particles: must be at least 1, got {self.max_particles}")
        for name in ("pthat_min", "eta_max", "trigger_radius"):
            if not float(getattr(self, name)) > 0:
                raise ValueError(f"{name}: must be a positive number, got {getattr(self, name)!r}")
        if not float(self.pt_min) >= 0:
            raise ValueError(f"pt_min: must be >= 0 GeV, got {self.pt_min!r}")
        if not float(self.trigger_pt_min) >= 0:
            raise ValueError(f"trigger_pt_min: must be >= 0 GeV, got {self.trigger_pt_min!r}")

    @property
    def label(self) -> int:
        """Truth label of the process (1 signal, 0 background)."""
        return PROCESS_LABELS[self.process]

    def chunk_sizes(self) -> list[int]:
        """Return the number of passing events of each chunk."""
        full, rest = divmod(self.n_events, self.chunk_size)
        return [self.chunk_size] * full + ([rest] if rest else [])

    def chunk_seed(self, index: int) -> int:
        """Return the Pythia seed of chunk ``index`` (1 to 900 000 000)."""
        sequence = np.random.SeedSequence(entropy=self.seed, spawn_key=(self.label, index))
        return int(sequence.generate_state(1, dtype=np.uint32)[0]) % PYTHIA_SEED_MAX + 1

    def to_dict(self) -> dict[str, Any]:
        """Return the settings with the generator version and beam energy (JSON-ready)."""
        return {
            **dataclasses.asdict(self),
            "label": self.label,
            "center_of_mass_energy": CENTER_OF_MASS_ENERGY,
            "generator": f"pythia8mc {metadata.version('pythia8mc')}",
        }


@dataclass(frozen=True)
class GeneratedChunk:
    """The passing events of one chunk and its record.

    Attributes
    ----------
    index : int
        Chunk number.
    events : awkward.Array
        Event records ``pt, eta, phi, label, weight``.
    record : dict
        Values of :data:`CHUNK_FIELDS`.
    """

    index: int
    events: ak.Array
    record: dict[str, Any]


@dataclass(frozen=True)
class GenerationSummary:
    """Totals over the chunks of a run.

    Attributes
    ----------
    n_events : int
        Events passing the trigger.
    n_generated : int
        Events Pythia generated to find them.
    n_chunks : int
        Chunks written.
    sigma_pb, sigma_err_pb : float
        Pythia's cross section of the generated process and its statistical
        error in pb: the per-chunk estimates averaged with the chunks'
        generated events as weights.
    n_truncated_events : int
        Passing events that had more than ``max_particles`` particles.
    n_dropped_particles : int
        Particles those events lost to the limit.
    """

    n_events: int
    n_generated: int
    n_chunks: int
    sigma_pb: float
    sigma_err_pb: float
    n_truncated_events: int
    n_dropped_particles: int

    @property
    def efficiency(self) -> float:
        """Fraction of the generated events that pass the trigger."""
        return self.n_events / self.n_generated if self.n_generated else float("nan")

    @classmethod
    def from_records(cls, records: Mapping[str, NDArray[Any]]) -> GenerationSummary:
        """Sum the per-chunk records (as written by :func:`generate_file`)."""
        n_generated = np.asarray(records.get("n_generated", []), dtype=np.float64)
        total = float(n_generated.sum())
        sigma = np.asarray(records.get("sigma_pb", []), dtype=np.float64)
        error = np.asarray(records.get("sigma_err_pb", []), dtype=np.float64)
        return cls(
            n_events=int(np.sum(records.get("n_events", []))),
            n_generated=int(total),
            n_chunks=len(n_generated),
            sigma_pb=float(np.dot(n_generated, sigma) / total) if total else float("nan"),
            sigma_err_pb=float(np.sqrt(np.sum((n_generated * error) ** 2)) / total)
            if total
            else float("nan"),
            n_truncated_events=int(np.sum(records.get("n_truncated_events", []))),
            n_dropped_particles=int(np.sum(records.get("n_dropped_particles", []))),
        )

    def to_dict(self) -> dict[str, Any]:
        """Return the totals and the trigger efficiency as a dict."""
        return {
            "n_passed": self.n_events,
            "n_generated": self.n_generated,
            "n_chunks": self.n_chunks,
            "efficiency": self.efficiency,
            "sigma_pb": self.sigma_pb,
            "sigma_err_pb": self.sigma_err_pb,
            "n_truncated_events": self.n_truncated_events,
            "n_dropped_particles": self.n_dropped_particles,
        }


def generate_chunk(settings: GenerationSettings, index: int) -> GeneratedChunk:
    """Generate the passing events of chunk ``index``.

    Pythia is set up with the chunk's seed and runs until the chunk has its
    number of passing events; the generated count stops at the last of them.

    Raises
    ------
    RuntimeError
        If Pythia rejects a setting or fails to initialise, or if the first
        5000 generated events give no passing event.
    """
    import pythia8mc  # optional dependency of the ``hep`` extra

    target = settings.chunk_sizes()[index]
    pythia_seed = settings.chunk_seed(index)
    pythia = pythia8mc.Pythia("", False)
    for line in pythia_settings(settings.process, pythia_seed, settings.pthat_min):
        if not pythia.readString(line):
            raise RuntimeError(f"Pythia rejected the setting {line!r}")
    if not pythia.init():
        raise RuntimeError(f"Pythia failed to initialise {settings.process!r}")

    pieces: list[ak.Array] = []
    weights: list[FloatArray] = []
    dropped: list[Int64Array] = []
    n_generated = n_passed = 0
    while n_passed < target:
        needed = target - n_passed
        efficiency = max(n_passed, 1) / n_generated if n_generated else 0.5
        batch_size = int(np.clip(np.ceil(1.2 * needed / efficiency), _MIN_BATCH, _MAX_BATCH))
        batch = pythia.nextBatch(batch_size)
        visible = visible_final_state(
            batch, settings.eta_max, settings.pt_min, settings.max_particles
        )
        passed = np.flatnonzero(
            passes_trigger(visible.particles, settings.trigger_pt_min, settings.trigger_radius)
        )
        if len(passed) >= needed:
            passed = passed[:needed]
            n_generated += int(passed[-1]) + 1
        else:
            n_generated += len(batch)
        n_passed += len(passed)
        pieces.append(visible.particles[passed])
        weights.append(
            ak.to_numpy(ak.fill_none(ak.firsts(batch.info.weights[passed]), 1.0)).astype(np.float64)
        )
        dropped.append(visible.n_dropped[passed])
        if n_passed == 0 and n_generated >= _ZERO_PASS_LIMIT:
            raise RuntimeError(
                f"chunk {index}: none of {n_generated} generated {settings.process!r} events "
                f"passed the trigger (leading jet pT > {settings.trigger_pt_min:g} GeV); "
                "raise pthat_min"
            )
    info = pythia.infoPython()
    n_dropped = np.concatenate(dropped)
    events = make_events(ak.concatenate(pieces), settings.label, np.concatenate(weights))
    record = {
        "chunk": index,
        "pythia_seed": pythia_seed,
        "n_generated": n_generated,
        "sigma_pb": float(info.sigmaGen()) * _PB_PER_MB,
        "sigma_err_pb": float(info.sigmaErr()) * _PB_PER_MB,
        "n_truncated_events": int((n_dropped > 0).sum()),
        "n_dropped_particles": int(n_dropped.sum()),
    }
    return GeneratedChunk(index=index, events=ak.to_packed(events), record=record)
