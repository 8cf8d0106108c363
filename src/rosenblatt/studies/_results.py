"""A results folder holds one run: its files listed in ``manifest.json``, an earlier run's gone.

:func:`rosenblatt.studies.run_study` notes the folder's files before the study
runs (:func:`Results.start`) and, once it finished (:func:`Results.finish`):

- removes each file an earlier run wrote (listed in its ``manifest.json``) that
  this run did not write, saying so in one line; a file no run is known to
  have written (the user's own, or an earlier version's) is left in place,
  named in one line, and is not part of the run;
- writes ``manifest.json``: every file of this run, its size and BLAKE2b hash
  (as the cache records hold them, :func:`rosenblatt._records.file_entries`);
- names, in one line, a file the report links that is not part of the run.

A file is this run's when it appeared or changed (another inode, time or
size) while the study ran: every output is written whole under a temporary
name and renamed (:mod:`rosenblatt._atomic`). While a run is going, and after
one that was stopped, ``manifest.json`` is absent and a file beside the folder
lists the files of the earlier runs and of the stopped one, so that the next
run that finishes removes them (beside the folder, as its lock is:
``.<name>.manifest-earlier.json``). Hidden files (temporaries) and the
study's cache folders, where they lie inside the results folder, are not
part of a run.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rosenblatt._atomic import write_text
from rosenblatt._records import HASH, file_entries

__all__ = ["MANIFEST", "MANIFEST_FORMAT", "Results", "earlier_list", "report_links"]

log = logging.getLogger("rosenblatt.studies")

#: the list of a run's files, written last
MANIFEST = "manifest.json"


#: the ``format`` of ``manifest.json``
MANIFEST_FORMAT = "rosenblatt-results-manifest"

#: a link of a Markdown report: ``[text](target)``, ``![alt](target)``, ``src="target"``
_LINK = re.compile(r"\]\(<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\)|\b(?:src|href)=\"([^\"]+)\"")


def _stat(path: Path) -> tuple[int, int, int]:
    status = path.stat()
    return (status.st_ino, status.st_mtime_ns, status.st_size)


def earlier_list(folder: Path) -> Path:
    """The files of earlier runs while a run is going, or after one that was stopped.

    ``.<name>.manifest-earlier.json`` beside the folder, as its lock is.
    """
    where = Path(os.path.abspath(folder))
    return where.with_name(f".{where.name}.manifest-earlier.json")


def _listed(path: Path) -> set[str]:
    """The files named by a manifest or an earlier runs' list (none if unreadable)."""
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return set()
    files = document.get("files") if isinstance(document, dict) else None
    return (
        {str(f) for f in files if isinstance(f, str)} if isinstance(files, (dict, list)) else set()
    )


def _remove_empty_parents(path: Path, folder: Path) -> None:
    for parent in path.parents:
        if parent == folder or folder not in parent.parents:
            return
        try:
            parent.rmdir()
        except OSError:
            return


@dataclass
class Results:
    """The files of a results folder before a run, and what the run made of them.

    Parameters
    ----------
    folder
        The results folder.
    apart
        Folders inside it that are not part of a run (the study's caches).
    """

    folder: Path
    apart: tuple[Path, ...] = ()
    before: dict[str, tuple[int, int, int]] = field(default_factory=dict)
    earlier: set[str] = field(default_factory=set)

    def files(self) -> dict[str, tuple[int, int, int]]:
        """Every file of the folder that a run may own, by its path relative to the folder."""
        found = {}
        apart = {os.path.abspath(p) for p in self.apart}
        for root, dirs, names in os.walk(self.folder):
            dirs[:] = sorted(
                d
                for d in dirs
                if not d.startswith(".") and os.path.abspath(os.path.join(root, d)) not in apart
            )
            for name in names:
                path = Path(root, name)
                if not name.startswith(".") and path.is_file() and not path.is_symlink():
                    found[path.relative_to(self.folder).as_posix()] = _stat(path)
        found.pop(MANIFEST, None)
        return found

    def start(self) -> None:
        """Note the folder's files; the earlier runs' files move to :func:`earlier_list`."""
        self.before = self.files()
        self.earlier = _listed(self.folder / MANIFEST) | _listed(earlier_list(self.folder))
        if self.earlier:
            write_text(earlier_list(self.folder), json.dumps({"files": sorted(self.earlier)}))
        (self.folder / MANIFEST).unlink(missing_ok=True)

    def written(self) -> list[str]:
        """The files this run wrote: new, or changed since :meth:`start`."""
        return sorted(n for n, s in self.files().items() if self.before.get(n) != s)

    def stopped(self) -> None:
        """After a run that did not finish: its files join the earlier runs' list."""
        with contextlib.suppress(OSError):
            files = sorted(self.earlier | set(self.written()))
            if files:
                write_text(earlier_list(self.folder), json.dumps({"files": files}))

    def finish(self, study: str, name: str) -> dict[str, Any]:
        """Remove the earlier runs' files this run did not write; write and return the manifest."""
        written = self.written()
        now = self.files()
        stale = sorted(n for n in self.earlier if n in now and n not in written)
        for relative in stale:
            (self.folder / relative).unlink(missing_ok=True)
            _remove_empty_parents(self.folder / relative, self.folder)
        if stale:
            log.info(
                "%s: removed %d file(s) of an earlier run that this run did not write: %s",
                self.folder,
                len(stale),
                ", ".join(stale),
            )
        unknown = sorted(set(now) - set(written) - set(stale))
        if unknown:
            log.warning(
                "%s: left in place, not written by this run nor by an earlier one: %s",
                self.folder,
                ", ".join(unknown),
            )
        entries = file_entries(self.folder, (self.folder / n for n in written))
        manifest = {
            "format": MANIFEST_FORMAT,
            "study": study,
            "name": name,
            "hash": HASH,
            "files": entries,
        }
        write_text(self.folder / MANIFEST, json.dumps(manifest, indent=2) + "\n")
        earlier_list(self.folder).unlink(missing_ok=True)
        _check_report(self.folder, set(entries))
        return manifest


def report_links(text: str) -> list[str]:
    """The files a Markdown report links, relative to its folder (URLs and anchors left out)."""
    found = []
    for match in _LINK.finditer(text):
        target = (match.group(1) or match.group(2)).split("#", 1)[0]
        if (
            target
            and not re.match(r"[A-Za-z][A-Za-z0-9+.-]*:", target)
            and not target.startswith("/")
        ):
            found.append(Path(os.path.normpath(target)).as_posix())
    return list(dict.fromkeys(found))


def _check_report(folder: Path, files: Iterable[str]) -> None:
    """Name, in one line, the files ``report.md`` links that are not part of the run."""
    try:
        text = (folder / "report.md").read_text(encoding="utf-8")
    except OSError:
        return
    missing = [link for link in report_links(text) if link not in set(files)]
    if missing:
        log.warning(
            "%s: report.md links file(s) this run did not write: %s", folder, ", ".join(missing)
        )
