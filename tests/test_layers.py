"""The house's floors: imports go down (cli -> the Python API -> session layer -> connection ->
transport; store, render and the rest below), never up, and no module takes part in an import
cycle.

Every import counts: at module level, inside functions, and under ``TYPE_CHECKING`` (a reader
following the types walks those too).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "acpcli"

#: The session layer and what sits above it; everything else under acpcli/ is below them.
UPPER = ("acpcli.cli", "acpcli.repl", "acpcli.host", "acpcli.api", "acpcli.session")
#: Who may import what of the upper floors (a prefix imports a prefix). The live-session host
#: sits between the commands and the session layer: the CLI and the REPL are its clients. The
#: Python API (acpcli.api, exported by the package's door ``acpcli/__init__.py``) is a client
#: of the session layer, below the commands, which may use it.
ALLOWED_UP = {
    "acpcli.cli": ("acpcli.cli", "acpcli.repl", "acpcli.host", "acpcli.api"),
    "acpcli.repl": ("acpcli.repl", "acpcli.host", "acpcli.api", "acpcli.session"),
    "acpcli.host": ("acpcli.host", "acpcli.session"),
    "acpcli.api": ("acpcli.api", "acpcli.session"),
    "acpcli.session": ("acpcli.session",),
}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {
        _module_name(path): path
        for path in PACKAGE.rglob("*.py")
        if "demo_agent" not in path.parts  # the demo agent is a separate program (its own test)
        and path.name not in ("v1.py", "v2.py")  # generated models: no acpcli imports but the base
    }


def _imports(name: str, path: Path, known: set[str]) -> set[str]:
    """The acpcli modules ``name`` imports (the longest known module each import names)."""
    found: set[str] = set()
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1] + ([base] if base else []))
            # ``from acpcli.x import y``: the module acpcli.x.y if there is one, else acpcli.x
            targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base for alias in node.names]
        for target in targets:
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != name and target.startswith("acpcli"):
                found.add(target)
    return found


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    known = set(modules)
    return {name: _imports(name, path, known) for name, path in modules.items()}


def _floor(name: str) -> str | None:
    if name == "acpcli.__main__":  # ``python -m acpcli``: the command tree's own door
        return "acpcli.cli"
    if name == "acpcli":  # ``import acpcli``: the Python API's door (its exports are the API)
        return "acpcli.api"
    return next((upper for upper in UPPER if name == upper or name.startswith(upper + ".")), None)


def test_imports_never_go_up_a_floor() -> None:
    wrong = []
    for name, targets in _graph().items():
        mine = _floor(name)
        for target in targets:
            theirs = _floor(target)
            if theirs is None:
                continue
            allowed = ALLOWED_UP.get(mine, ()) if mine is not None else ()
            if theirs not in allowed:
                wrong.append(f"{name} -> {target}")
    assert not wrong, "imports that go up a floor:\n" + "\n".join(sorted(wrong))


def test_no_import_cycles() -> None:
    graph = _graph()
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []
    counter = [0]

    def connect(node: str) -> None:  # Tarjan's strongly connected components
        index[node] = low[node] = counter[0]
        counter[0] += 1
        stack.append(node)
        on_stack.add(node)
        for nxt in graph.get(node, ()):
            if nxt not in index:
                connect(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            connect(node)
    assert not cycles, "import cycles:\n" + "\n".join(" <-> ".join(c) for c in cycles)


def test_the_door_exports_the_api_and_lower_floors_do_not_import_it() -> None:
    # The package's __init__ imports the façade (for type checkers; lazily at run time), so
    # a lower module reading acpcli's version from the door would close a cycle through it.
    graph = _graph()
    assert "acpcli.api.client" in graph["acpcli"]
    assert "acpcli" in graph["acpcli.cli"]  # the command tree may (it sits above the API)
    below = [name for name, targets in graph.items() if "acpcli" in targets and _floor(name) is None]
    assert not below, below


@pytest.mark.parametrize(
    "module", ["acpcli.api.commands", "acpcli.session.link", "acpcli.cli.sessions", "acpcli.api.client"]
)
def test_the_walk_modules_exist(module: str) -> None:
    # The layer test reads files: make sure it reads the modules the README's walks name.
    assert module in _modules()
