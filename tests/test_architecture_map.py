"""The architecture map (docs/architecture.md) is held to the floors of ``tests/test_layers.py``.

The map names every floor (a folder, or a module directly in acpcli/) once, from the top down,
in the order of ``FLOORS``; every module file the Architecture section names exists. Which
modules a floor's line lists is the writer's choice: a line is checked only for naming nothing
that is not there.
"""

from __future__ import annotations

import re
from pathlib import Path

from test_layers import FLOORS

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "acpcli"
#: A module file as prose names it: ``store.py``, ``model.py``, ``acpcli/__init__.py``.
MODULE_FILE = re.compile(r"(?<![\w./-])((?:\w+/)*\w+\.py)\b")


def _section() -> str:
    return (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")


def _map(section: str) -> list[tuple[str, str]]:
    """The map's entries, top down: (the name a line starts with, the entry's whole text).

    An entry starts on a line indented by two spaces; deeper lines continue it."""
    block = section.split("```", 2)[1]
    lines = block.splitlines()[1:]  # the first is the fence's language (none) and `acpcli/`
    assert lines and lines[0] == "acpcli/", "the map starts at acpcli/"
    entries: list[tuple[str, str]] = []
    for line in lines[1:]:
        if not line.strip():
            continue
        if re.match(r"  \S", line):
            name, _, rest = line.strip().partition(" ")
            entries.append((name, rest))
        else:
            assert line.startswith("   ") and entries, f"not part of an entry: {line!r}"
            name, rest = entries[-1]
            entries[-1] = (name, f"{rest} {line.strip()}")
    return entries


def _floor_named(name: str) -> str:
    """``cli/`` -> ``acpcli.cli``; ``errors.py`` -> ``acpcli.errors``."""
    return "acpcli." + name.removesuffix("/").removesuffix(".py")


def _exists(token: str, folder: Path | None) -> bool:
    """Whether the module file ``token`` is there: in ``folder`` (at any depth, for a map
    entry's own modules), in acpcli/, or from the repository's root."""
    token = token.removeprefix("acpcli/")
    if folder is not None and ((folder / token).is_file() or any(folder.rglob(token))):
        return True
    return (PACKAGE / token).is_file() or (ROOT / token).is_file()


def test_the_map_names_every_floor_top_down() -> None:
    names = [name for name, _ in _map(_section())]
    assert [_floor_named(name) for name in names] == list(FLOORS)


def test_every_floor_on_the_map_is_there() -> None:
    for name, _ in _map(_section()):
        path = PACKAGE / name
        if name.endswith("/"):
            assert (path / "__init__.py").is_file(), f"{name}: no such package"
        else:
            assert name.endswith(".py") and path.is_file(), f"{name}: no such module"


def test_the_architecture_section_names_only_modules_that_exist() -> None:
    section = _section()
    missing = []
    for name, text in _map(section):
        folder = PACKAGE / name if name.endswith("/") else None
        missing += [f"{name}: {tok}" for tok in MODULE_FILE.findall(text) if not _exists(tok, folder)]
    prose = section.split("```")[0] + section.split("```", 2)[2]
    tokens = MODULE_FILE.findall(prose)
    assert any(tok.startswith("session/") for tok in tokens)  # the walks are read
    missing += [f"(prose): {tok}" for tok in tokens if not _exists(tok, None)]
    assert not missing, "the Architecture section names modules that are not there:\n" + "\n".join(missing)
