"""``rosenblatt run [CONFIG]``: run a study end to end and write its report."""

from __future__ import annotations

import argparse
import logging
import re
import time
from pathlib import Path
from typing import Any

from rosenblatt.commands._errors import print_error
from rosenblatt.commands._locking import add_lock_argument, holding_locks

__all__ = ["add_parser", "main", "written_paths"]


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register the ``run`` sub-command."""
    from rosenblatt.studies.config import DEFAULT_CONFIG

    parser = subparsers.add_parser(
        "run",
        help=f"run a study (default: {DEFAULT_CONFIG}) and write results/<name>/",
        description="Run a study from a YAML configuration and write its report, "
        "summary.json and figures to results/<name>/.",
        epilog=_epilog(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "config",
        nargs="?",
        default=DEFAULT_CONFIG,
        help=f"configuration file or name in configs/ (default: {DEFAULT_CONFIG})",
    )
    parser.add_argument("--output", help="results folder (default: results/<name>)")
    parser.add_argument(
        "--refuse-corrupt-cache",
        action="store_true",
        help="stop (status 2) when a cached file was truncated or altered after it was "
        "written, instead of naming it and computing it again",
    )
    add_lock_argument(parser)
    parser.set_defaults(func=main)


def _epilog() -> str:
    """The configurations found by name and the study kinds, for ``run --help``."""
    import textwrap

    from rosenblatt.studies import STUDIES
    from rosenblatt.studies.config import study_configs

    def paragraph(text: str) -> str:
        return textwrap.fill(text, width=78, break_on_hyphens=False)

    return "\n\n".join(
        [
            paragraph(
                "study configurations by name (./configs/, then those shipped with the "
                "package): " + (", ".join(study_configs()) or "none")
            ),
            paragraph(
                "study kinds (a configuration's 'study:' key): " + ", ".join(sorted(STUDIES))
            ),
        ]
    )


def written_paths(config: dict[str, Any], output: str | None) -> list[Path]:
    """The folders and files a study's run writes: its results, its cache, its generated files.

    A run holds their locks (:mod:`rosenblatt._lock`), so that two runs that
    would write the same ones do not both write.
    """
    from rosenblatt.studies import STUDIES

    paths = [Path(output) if output is not None else Path("results") / str(config["name"])]
    study = STUDIES.get(str(config.get("study")))
    if study is not None and study.caches:
        data = config.get("data")
        folder = data.get("folder") if isinstance(data, dict) else None
        paths.append(Path(str(folder)) if folder else Path("data") / str(config["name"]))
    generate = config.get("generate")
    for entry in generate if isinstance(generate, list) else []:
        if isinstance(entry, dict) and isinstance(entry.get("output"), str):
            paths.append(Path(entry["output"]))
    return paths


def _size_settings(config: Any, prefix: str = "") -> dict[str, int]:
    """The integer settings of a configuration that count events, samples or bins."""
    found: dict[str, int] = {}
    items = config.items() if isinstance(config, dict) else enumerate(config)
    for key, value in items if isinstance(config, (dict, list)) else ():
        name = f"{prefix}.{key}" if prefix else str(key)
        if isinstance(value, (dict, list)):
            found |= _size_settings(value, name)
        elif isinstance(value, int) and not isinstance(value, bool):
            leaf = str(key) if isinstance(config, dict) else prefix.rsplit(".", 1)[-1]
            if leaf.startswith("n_") or any(w in leaf for w in _SIZE_WORDS):
                found[name] = value
    return found


#: words of the settings that say how much is held in memory
_SIZE_WORDS = ("events", "size", "samples", "boot", "permutations", "bins", "depth")


def _out_of_memory_line(config: dict[str, Any]) -> str:
    """The one line of a run that ran out of memory: its largest size setting named."""
    source = config.get("_path", "the configuration")
    sizes = _size_settings({k: v for k, v in config.items() if k != "_path"})
    if not sizes:
        return f"{source}: the run needed more memory than this machine has"
    key = max(sizes, key=lambda k: sizes[k])
    return (
        f"{source}: {key}: the run ran out of memory with {key} = {sizes[key]} "
        "(the largest size setting); make the sizes smaller"
    )


def _peek_study(path: Path) -> dict[str, str]:
    """The ``study:`` of a configuration, read without yaml (which the study extra installs)."""
    text = path.read_text(encoding="utf-8", errors="replace")
    found = re.search(r"^study:[ \t]*[\"']?([\w-]+)", text, flags=re.MULTILINE)
    return {"study": found.group(1)} if found else {}


def main(args: argparse.Namespace) -> int:
    """Run the configured study."""
    from rosenblatt._atomic import is_disk_full
    from rosenblatt._extras import importable, require
    from rosenblatt._records import refusing_corrupt_cache
    from rosenblatt.studies import run_study, study_extras
    from rosenblatt.studies.config import find_config, load_config

    logging.basicConfig(level=logging.INFO, format="%(message)s")
    # numexpr, imported by pandas, announces its thread count at INFO
    logging.getLogger("numexpr").setLevel(logging.WARNING)
    start = time.perf_counter()
    what = f"rosenblatt run {args.config}"
    config: dict[str, Any] = {}
    try:
        # every extra the study needs is checked before anything is written
        path = find_config(args.config)
        if not importable("yaml"):
            require(what, study_extras(_peek_study(path)))
        config = load_config(path)
        require(what, study_extras(config))
        with (
            holding_locks(args, written_paths(config, args.output)),
            refusing_corrupt_cache(getattr(args, "refuse_corrupt_cache", False)),
        ):
            folder = run_study(config, args.output)
    except MemoryError:
        print_error("rosenblatt run", _out_of_memory_line(config))
        return 2
    except (OSError, ValueError, KeyError) as err:
        if is_disk_full(err):
            raise  # said in one line by the command line, with its own status
        reason = f"missing configuration key {err}" if isinstance(err, KeyError) else str(err)
        print_error("rosenblatt run", reason)
        return 2
    elapsed = time.perf_counter() - start
    logging.getLogger("rosenblatt").info(
        "study %r done in %.1f s: see %s", config["name"], elapsed, folder / "report.md"
    )
    return 0
