"""The documentation builds with warnings as errors, its code blocks pass as doctests, every
internal link and image resolves, and the reference covers every public name and every
configuration key.

The build executes the tutorials (a few minutes on 2 cores) and needs no network: the
intersphinx inventories are used only where their sites can be reached.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

# the build executes the tutorials: longer than the suite's timeout on a busy machine
pytestmark = [pytest.mark.slow, pytest.mark.docs, pytest.mark.timeout(1800)]

ROOT = Path(__file__).parents[1]
DOCS = ROOT / "docs"
sys.path.insert(0, str(DOCS / "_ext"))

import api_pages
import check_links
import study_keys


def _sphinx(builder: str, out: Path, **env: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-n", "-q", "-b", builder]
    return subprocess.run(
        [*command, str(DOCS), str(out), "-d", str(out.parent / f"doctrees-{builder}")],
        capture_output=True,
        text=True,
        env={**os.environ, "ROSENBLATT_DOCS_OFFLINE": "1", **env},
        check=False,
        timeout=1800,
    )


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("docs") / "html"
    result = _sphinx("html", out)
    assert result.returncode == 0, result.stdout + result.stderr
    return out


def test_code_blocks_pass_as_doctests(tmp_path: Path) -> None:
    result = _sphinx("doctest", tmp_path / "doctest", ROSENBLATT_DOCS_EXECUTE="off")
    assert result.returncode == 0, result.stdout + result.stderr
    summary = (tmp_path / "doctest" / "output.txt").read_text()
    assert "0 failures in tests" in summary
    assert "0 failures in setup code" in summary


def test_every_internal_link_and_image_resolves(site: Path) -> None:
    assert check_links.broken_links(site) == []
    images = list((site / "_images").glob("*.png"))
    assert len(images) >= 6  # the published run's figures and the tutorials' plots


def test_the_link_check_finds_a_broken_link(tmp_path: Path) -> None:
    (tmp_path / "a.html").write_text(
        '<a href="b.html#here">b</a><a href="b.html#gone">x</a><img src="missing.png">'
        '<a href="https://example.org/x">external</a>'
    )
    (tmp_path / "b.html").write_text('<h1 id="here">b</h1>')
    assert check_links.broken_links(tmp_path) == ["a.html: b.html#gone", "a.html: missing.png"]


def test_every_public_name_has_a_reference_page(site: Path) -> None:
    owners = api_pages.owners()
    assert "rosenblatt.IRGI" in owners
    assert owners["rosenblatt.transforms.IRGI"] == "rosenblatt.IRGI"
    for module in api_pages.public_modules():
        assert (site / "reference" / "api" / f"{module.__name__}.html").is_file()
        for name in module.__all__:
            page = site / "reference" / "api" / f"{owners[f'{module.__name__}.{name}']}.html"
            assert page.is_file(), name


def test_the_configuration_reference_lists_every_key(site: Path) -> None:
    from rosenblatt.studies import STUDIES

    page = (site / "reference" / "configuration.html").read_text()
    for kind in STUDIES:
        for key, *_ in study_keys.study_rows(kind):
            assert f'<span class="pre">{key}</span>' in page, (kind, key)


def test_the_command_line_reference_has_every_command(site: Path) -> None:
    from rosenblatt.cli import COMMANDS

    page = (site / "reference" / "cli.html").read_text()
    for command in COMMANDS:
        assert f"rosenblatt {command}" in page
