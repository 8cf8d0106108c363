"""Check that every internal link, anchor and image of a built HTML site resolves.

``python docs/_ext/check_links.py docs/_build/html`` prints each broken one and exits with
status 1 if there is any. Sphinx's own ``linkcheck`` needs the network; this reads the
built files only: an ``href`` or ``src`` without a scheme must name an existing file, and
its ``#fragment`` an ``id`` (or ``name``) in that file.
"""

from __future__ import annotations

import sys
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

#: attributes that point at another file
LINK_ATTRIBUTES = {"href", "src"}


class _Page(HTMLParser):
    """The links and the anchors of one HTML page."""

    def __init__(self) -> None:
        super().__init__()
        self.links: list[str] = []
        self.anchors: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if value is None:
                continue
            if name in {"id", "name"}:
                self.anchors.add(value)
            elif name in LINK_ATTRIBUTES and not (tag == "link" and "://" in value):
                self.links.append(value)


def _parse(path: Path, cache: dict[Path, _Page]) -> _Page:
    if path not in cache:
        page = _Page()
        page.feed(path.read_text(encoding="utf-8", errors="replace"))
        cache[path] = page
    return cache[path]


def broken_links(site: Path) -> list[str]:
    """``page: link`` for every internal link or image of ``site`` that does not resolve."""
    site = site.resolve()
    cache: dict[Path, _Page] = {}
    broken = []
    for page_path in sorted(site.rglob("*.html")):
        for link in _parse(page_path, cache).links:
            parts = urlsplit(link)
            if parts.scheme or parts.netloc or link.startswith(("mailto:", "data:", "javascript:")):
                continue
            target = (page_path.parent / unquote(parts.path)).resolve() if parts.path else page_path
            if target.is_dir():
                target = target / "index.html"
            where = f"{page_path.relative_to(site)}: {link}"
            missing = not target.is_file() or site not in target.parents
            if missing or (
                parts.fragment
                and target.suffix == ".html"
                and unquote(parts.fragment) not in _parse(target, cache).anchors
            ):
                broken.append(where)
    return broken


def main(argv: list[str]) -> int:
    """Print the broken links of the site at ``argv[0]``; status 1 if any."""
    if len(argv) != 1:
        print("usage: check_links.py BUILT_HTML_FOLDER", file=sys.stderr)
        return 2
    broken = broken_links(Path(argv[0]))
    for line in broken:
        print(line)
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
