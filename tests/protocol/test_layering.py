"""The protocol package is the bottom floor: it imports nothing from acpcli above it.

No module under acpcli/protocol imports anything from acpcli outside acpcli.protocol (not even under TYPE_CHECKING or inside a function).
Capability policy lives above it, in acpcli.wire.capabilities."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "acpcli" / "protocol"
MODULES = sorted(PACKAGE.rglob("*.py"))


def imported(source: str, package: tuple[str, ...] = ("acpcli", "protocol")) -> list[tuple[int, str]]:
    """(line, absolute module name) of every import in ``source``, a module of ``package``,
    wherever the import is (top level, ``if TYPE_CHECKING:``, a function body)."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level:
                base = ".".join(package[: len(package) - node.level + 1])
                if node.module:
                    found.append((node.lineno, f"{base}.{module}"))
                else:  # from .. import errors
                    found.extend((node.lineno, f"{base}.{alias.name}") for alias in node.names)
            else:
                found.append((node.lineno, module))
    return found


def package_of(path: Path) -> tuple[str, ...]:
    return ("acpcli", *path.relative_to(PACKAGE.parent).parent.parts)


def outside_protocol(name: str) -> bool:
    return (name == "acpcli" or name.startswith("acpcli.")) and not (
        name == "acpcli.protocol" or name.startswith("acpcli.protocol.")
    )


@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.name)
def test_protocol_imports_nothing_from_acpcli_above_it(path: Path) -> None:
    found = imported(path.read_text(encoding="utf-8"), package_of(path))
    offending = [f"{path.name}:{line}: {name}" for line, name in found if outside_protocol(name)]
    assert offending == [], "acpcli.protocol must stay at the bottom: " + "; ".join(offending)


def test_the_check_sees_an_upward_import() -> None:
    # the guard above can fail: each spelling of an import from above is caught
    for source in (
        "from acpcli.errors import UsageError\n",
        "import acpcli.wire.negotiate\n",
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from acpcli.wire.negotiate import AgentFeatures\n",
        "def f():\n    from .. import errors\n",
        "from ..errors import CapabilityMissing\n",
    ):
        assert [name for _line, name in imported(source) if outside_protocol(name)], source
    inside = "from acpcli.protocol import methods\nfrom . import wire\nfrom .base import AcpModel\nimport json\n"
    assert [name for _line, name in imported(inside) if outside_protocol(name)] == []
