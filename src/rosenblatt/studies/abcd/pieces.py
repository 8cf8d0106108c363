"""What a pass of the abcd study depends on, as the document its pieces are keyed by.

A piece of a pass (:mod:`rosenblatt.processors.pieces`) is reused only when
this document is the same: the configuration (but for ``executor:``, which
changes how the work is spread, not what it gives; the chunking is in each
piece's entry range), the content of every file it names that is not an input
file (a model, a module of functions; the input files are hashed per piece),
the layout read, the datasets' normalisations and processes, every variant
filled (a transform by its saved JSON text), the blinding, whether skims are
written, and the version of rosenblatt.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Collection, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rosenblatt._records import file_digest

if TYPE_CHECKING:
    from rosenblatt.processors.analysis import Variant

__all__ = ["pass_document"]

#: keys of the configuration that do not change a pass's outputs
_NOT_KEYED = ("executor",)


def pass_document(
    config: Mapping[str, Any],
    *,
    schema: str,
    scales: Mapping[str, float],
    processes: Mapping[str, int],
    variants: Sequence[Variant],
    skim_dir: str | None,
    blind: Mapping[str, tuple[float, float]] | None,
    inputs: Collection[str],
) -> dict[str, Any]:
    """The document of one pass (see the module docstring); ``inputs``: the input files."""
    import rosenblatt

    kept = {
        key: value
        for key, value in config.items()
        if key not in _NOT_KEYED and not str(key).startswith("_")
    }
    base = Path(str(config.get("_path", "."))).parent
    return {
        "version": rosenblatt.__version__,
        "config": kept,
        "files": _named_files(kept, base, inputs),
        "schema": schema,
        "scales": dict(sorted(scales.items())),
        "processes": dict(sorted(processes.items())),
        "variants": [_variant(v) for v in variants],
        "skim": skim_dir is not None,
        "blind": None if blind is None else _blinding(blind),
    }


def _blinding(blind: Mapping[str, tuple[float, float]]) -> dict[str, Any]:
    """The blinded cuts, with the cut-flow stages a blinded data set keeps.

    The stages are part of the key: a piece counted under other rules of
    blinding is never read.
    """
    from rosenblatt.processors.analysis import BLINDED_KEPT_STAGES, BLINDED_REGIONS

    return {
        "cuts": dict(sorted(blind.items())),
        "kept stages": list(BLINDED_KEPT_STAGES),
        "regions": list(BLINDED_REGIONS),
    }


def _variant(variant: Variant) -> dict[str, Any]:
    """A variant as data: its transform by the hash of its saved JSON text."""
    from rosenblatt.serialization import dumps

    transform = variant.transform
    text = None if transform is None else dumps(transform)
    return {
        "name": variant.name,
        "score": variant.score,
        "y0": list(variant.y0),
        "y_range": list(variant.y_range),
        "replica_of": variant.replica_of,
        "keyed_draw": variant.keyed_draw,
        "transform": None if text is None else hashlib.blake2b(text.encode()).hexdigest(),
    }


def _strings(value: Any) -> Iterator[str]:
    """Every string in a configuration value, nested mappings and lists included."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _strings(item)


def _named_files(config: Mapping[str, Any], base: Path, inputs: Collection[str]) -> dict[str, str]:
    """The content hash of each file the configuration names that is not an input file."""
    found = {}
    known = {os.path.realpath(path) for path in inputs}
    for text in _strings(config):
        for path in (Path(text), base / text):
            if len(text) > 4096 or not path.is_file():
                continue
            if os.path.realpath(path) not in known:
                found[text] = file_digest(path)
            break
    return dict(sorted(found.items()))
