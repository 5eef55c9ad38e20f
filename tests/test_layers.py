"""The house's floors: imports go down (cli -> the Python API -> session layer -> render,
services, the wire, history -> the ground floor -> protocol; every floor in ``FLOORS``), never up;
no two floors import each other, and no module takes part in an import cycle.

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
#: Who may import what of the upper floors (a prefix imports a prefix). The front ends (the
#: command tree, the REPL, the live-session host) and the Python API (acpcli.api, exported by
#: the package's door ``acpcli/__init__.py``) each drive the session layer directly; the CLI and
#: the REPL are the host's clients; the library is below them all, and none of it may import them.
ALLOWED_UP = {
    "acpcli.cli": ("acpcli.cli", "acpcli.repl", "acpcli.host", "acpcli.api", "acpcli.session"),
    "acpcli.repl": ("acpcli.repl", "acpcli.host", "acpcli.api", "acpcli.session"),
    "acpcli.host": ("acpcli.host", "acpcli.api", "acpcli.session"),
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


#: The Python API's doors: ``import acpcli`` (its exports are the API), ``acpcli.testing`` (the
#: scripted agent for users' tests) and ``acpcli.sync`` (the blocking twin). On the API's floor.
DOORS = ("acpcli", "acpcli.testing", "acpcli.sync")


def _floor(name: str) -> str | None:
    if name == "acpcli.__main__":  # ``python -m acpcli``: the command tree's own door
        return "acpcli.cli"
    if name in DOORS:
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
    "module", ["acpcli.cli.commands", "acpcli.session.link", "acpcli.cli.sessions", "acpcli.api.client"]
)
def test_the_walk_modules_exist(module: str) -> None:
    # The layer test reads files: make sure it reads the modules the README's walks name.
    assert module in _modules()


#: Every floor of acpcli/, from the top down: a package (a folder) or one of the few modules
#: that sit directly in acpcli/. A module may import its own floor and the floors below it,
#: never one above (the order read from today's imports; the README's map follows it). The
#: door ``acpcli/__init__.py`` is on the Python API's floor, ``acpcli/__main__.py`` on the
#: command tree's. ``ALLOWED_UP`` above says more about the upper floors.
FLOORS = (
    "acpcli.cli",  # the typer tree: options in, output and exit codes out
    "acpcli.repl",  # the person at the terminal
    "acpcli.host",  # live sessions: a background process per session, reached over a socket
    "acpcli.api",  # the Python API
    "acpcli.session",  # a session's whole life, shared by the commands, the REPL and the API
    "acpcli.racing",  # one task, several agents at once: worktrees, candidates, board, apply
    "acpcli.render",  # views of the store: tty, plain, jsonl, export
    "acpcli.services",  # what the agent may ask of us: permissions, files, terminals, forms
    "acpcli.agents",  # the ACP Registry and installs
    "acpcli.wire",  # the agent's pipe: transport, JSON-RPC, negotiation, capabilities
    "acpcli.worktree",  # checkpoints of the working tree, in a private git store
    "acpcli.history",  # the SQLite index, event log, search, the message store
    "acpcli.config",  # config files and the built-in agents
    "acpcli.processes",  # children acpcli starts, and the process supervisor
    "acpcli.env",  # streams and terminal facts
    "acpcli.notices",  # one-line warnings on stderr
    "acpcli.errors",  # the exception tree and its exit codes
    "acpcli.bounded",  # reading what a user points at, with caps
    "acpcli.paths",  # where state lives (ACPCLI_HOME)
    "acpcli._version",
    "acpcli.text",  # text made safe for a terminal
    "acpcli.model",  # the conversation model: messages, tool calls, plans, the pure reducer
    "acpcli.protocol",  # pure data at the bottom: the generated models, method names
)


def _floor_of(name: str) -> str | None:
    """The floor of module ``name`` (None for a module on no floor: a test says so)."""
    if name == "acpcli.__main__":
        return "acpcli.cli"
    if name in DOORS:
        return "acpcli.api"
    return next((floor for floor in FLOORS if name == floor or name.startswith(floor + ".")), None)


def _floor_graph(graph: dict[str, set[str]]) -> dict[tuple[str, str], list[str]]:
    """(importing floor, imported floor) -> the module imports that make that edge."""
    edges: dict[tuple[str, str], list[str]] = {}
    for name, targets in graph.items():
        for target in targets:
            mine, theirs = _floor_of(name), _floor_of(target)
            if mine is not None and theirs is not None and mine != theirs:
                edges.setdefault((mine, theirs), []).append(f"{name} -> {target}")
    return edges


def test_every_module_is_on_a_floor() -> None:
    # A new package or top-level module takes its place in FLOORS (and in the README's map).
    lost = sorted(name for name in _modules() if _floor_of(name) is None)
    assert not lost, "modules on no floor (add them to FLOORS):\n" + "\n".join(lost)
    tops = {
        path.stem if path.suffix == ".py" else path.name
        for path in PACKAGE.iterdir()
        if (path.suffix == ".py" or (path / "__init__.py").is_file())
        and path.name not in ("__init__.py", "__main__.py", "demo_agent", "testing.py", "sync.py")
    }
    assert sorted(f"acpcli.{top}" for top in tops) == sorted(FLOORS)


def test_no_module_imports_a_higher_floor() -> None:
    height = {floor: len(FLOORS) - i for i, floor in enumerate(FLOORS)}
    up = [
        f"{edge}  ({mine} is below {theirs})"
        for (mine, theirs), found in _floor_graph(_graph()).items()
        if height[theirs] > height[mine]
        for edge in found
    ]
    assert not up, "imports that go up a floor:\n" + "\n".join(sorted(up))


def test_no_two_floors_import_each_other() -> None:
    # Rooms without a circle: package A importing B and B importing A is a tangle even when
    # no module cycle closes (A.x -> B.y, B.z -> A.w). Holds whatever the order of FLOORS.
    edges = _floor_graph(_graph())
    both = [
        f"{a} <-> {b}: {found[0]} ... {edges[(b, a)][0]}"
        for (a, b), found in sorted(edges.items())
        if a < b and (b, a) in edges
    ]
    assert not both, "floors that import each other:\n" + "\n".join(both)
