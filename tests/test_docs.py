"""The docs cannot drift from the program, nor point nowhere.

* ``docs/reference.md`` is what ``tools/gen_reference.py`` makes from the command tree now;
* every command's ``--help`` reads at 80 columns: no line wider, a summary in ``acpcli --help``
  that is a whole sentence (never cut with ``...``), and a help that ends with examples, each
  one command on one line;
* the README stays a short guide (at most 250 lines) and every relative link in it and in
  ``docs/`` names a file that is there (and a heading of it, for ``#anchor`` links); every page
  is in the site's navigation (``mkdocs.yml``), and the navigation names only pages that exist.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
GENERATOR = ROOT / "tools" / "gen_reference.py"
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def _helps() -> list[tuple[str, str]]:
    import importlib.util

    spec = importlib.util.spec_from_file_location("gen_reference", GENERATOR)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    helps: list[tuple[str, str]] = module.helps()
    return helps


def test_the_command_reference_is_the_programs_help_now() -> None:
    proc = subprocess.run([sys.executable, str(GENERATOR), "--check"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr + "\n(run: python tools/gen_reference.py)"


def test_every_help_reads_at_80_columns_and_ends_with_examples() -> None:
    helps = _helps()
    assert len(helps) > 10
    for line, text in helps:
        wide = [row for row in text.splitlines() if len(row) > 80]
        assert not wide, f"{line} --help is wider than 80 columns: {wide}"
        body = text.split("\nArguments:\n")[0].split("\nOptions:\n")[0].rstrip()
        examples = body.rsplit("\n  Examples:\n", 1)
        assert len(examples) == 2, f"{line} --help does not end with examples"
        commands = [row.strip() for row in examples[1].splitlines() if row.strip()]
        assert commands and all("acpcli " in row for row in commands), (line, commands)
    root = dict(helps)["acpcli"]
    listed = root.split("\nCommands:\n", 1)[1].splitlines()
    assert listed and all(not row.endswith("...") and row.rstrip().endswith(".") for row in listed), listed


def _pages() -> list[Path]:
    return [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]


def _anchors(page: Path) -> set[str]:
    """The anchors of a page's headings, as GitHub and MkDocs make them."""
    anchors = set()
    fence = False
    for row in page.read_text(encoding="utf-8").splitlines():
        if row.startswith("```"):
            fence = not fence
        if not fence and row.startswith("#"):
            title = row.lstrip("#").strip().lower()
            anchors.add(re.sub(r"\s+", "-", re.sub(r"[^\w\- ]", "", title)))
    return anchors


def test_the_readme_is_a_short_guide() -> None:
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 250, len(lines)
    assert "make demo" in "\n".join(lines) and "make test" in "\n".join(lines)


@pytest.mark.parametrize("page", _pages(), ids=lambda p: p.name)
def test_every_relative_link_names_a_page_and_heading_that_are_there(page: Path) -> None:
    text = page.read_text(encoding="utf-8")
    text = re.sub(r"```.*?```", "", text, flags=re.S)  # links in code are not links
    for target in LINK.findall(text):
        if re.match(r"[a-z]+:", target):
            continue  # https:, mailto:
        path, _, anchor = target.partition("#")
        where = (page.parent / path).resolve() if path else page
        assert where.exists(), f"{page.name}: {target} names nothing"
        if anchor and where.suffix == ".md":
            assert anchor in _anchors(where), f"{page.name}: {target} names no heading of {where.name}"


def test_every_docs_page_is_in_the_navigation_and_back() -> None:
    config = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    named = set(re.findall(r":\s*([\w./-]+\.md)\s*$", config, flags=re.M))
    pages = {p.name for p in DOCS.glob("*.md")}
    assert named == pages, (sorted(pages - named), sorted(named - pages))
