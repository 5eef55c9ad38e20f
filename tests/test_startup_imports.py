"""Start-up stays light: importing acpcli and running ``acpcli --help`` import no protocol
models, no pydantic, no rich.markdown and no prompt_toolkit: the heavy modules load only when a command needs them.

A completion answer (one per TAB) is held to more: no rich at all, no anyio, no agent
plumbing, and sqlite3 only when it lists session ids.

Commands that run are held to "no pydantic" too: typer 0.29 would import it to coerce their
parameter values, which :mod:`acpcli.cli.typer_compat` does without it (checked here against
typer's own coercion, parameter by parameter). In a pipe, ``acpcli sessions`` loads no rich."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

FORBIDDEN = ("acpcli.protocol.v1", "acpcli.protocol.v2", "pydantic", "rich.markdown", "prompt_toolkit", "httpx")

PROBE = """
import json, runpy, sys
{setup}
{action}
print()  # a command's output may not end its line
print(json.dumps([m for m in {forbidden!r} if m in sys.modules]))
"""

IMPORTS = "import acpcli, acpcli.cli, acpcli.errors"
MAIN_HELP = (
    "from acpcli.cli import main\n"
    "try:\n"
    "    main(['--help'])\n"
    "except SystemExit:\n"
    "    pass\n"
)
MODULE_HELP = (
    "sys.argv = ['acpcli', '--help']\n"
    "try:\n"
    "    runpy.run_module('acpcli', run_name='__main__', alter_sys=True)\n"
    "except SystemExit:\n"
    "    pass\n"
)


def offending(action: str, setup: str = "", forbidden: tuple[str, ...] = FORBIDDEN) -> list[str]:
    """The forbidden modules loaded after ``setup`` then ``action`` in a fresh interpreter."""
    script = PROBE.format(setup=setup, action=action, forbidden=forbidden)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize(
    "action",
    [IMPORTS, IMPORTS + "\n" + MAIN_HELP, MODULE_HELP],
    ids=["import", "main --help", "python -m acpcli --help"],
)
def test_start_up_imports_nothing_heavy(action: str) -> None:
    assert offending(action) == []


# -- what the start-up path may import, by name ---------------------------------------------------

#: What ``acpcli --help`` may import beyond what ``import typer`` has imported: the command
#: tree, the errors and the one-line warnings it reports with, and click's help formatting.
#: A module added here costs every ``--help`` (and every command: they all start this way).
HELP_MAY_IMPORT = frozenset({
    "acpcli", "acpcli._version", "acpcli.errors", "acpcli.notices", "acpcli.text", "acpcli.text.safe",
    "acpcli.cli", "acpcli.cli.agents", "acpcli.cli.auth", "acpcli.cli.checkpoints", "acpcli.cli.completers",
    "acpcli.cli.completion", "acpcli.cli.doctor", "acpcli.cli.hosts", "acpcli.cli.options",
    "acpcli.cli.prompt", "acpcli.cli.sessions", "acpcli.cli.typer_compat",
    "typer._click._textwrap", "typer._click.decorators",
})
#: And a TAB offering agent names (``acpcli new --agent <TAB>``): the same tree (no help
#: formatting), the config (read, never written) and what it stands on; the ACP registry's
#: code only when a cached copy of the registry is there to offer its ids.
AGENT_NAMES_MAY_IMPORT = (HELP_MAY_IMPORT - {"acpcli.notices", "typer._click._textwrap"}) | {
    "acpcli.config", "acpcli.bounded", "acpcli.paths", "contextvars", "_contextvars",
    "acpcli.agents", "acpcli.processes",
    "shlex",  # the line being completed is split as the shell splits it
}

NEW_MODULES = """
import json, os, subprocess, sys
def loaded(code):
    out = subprocess.run([sys.executable, "-c", code + "\\nimport sys\\nprint(); print(sorted(sys.modules))"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return set(eval(out.stdout.strip().splitlines()[-1]))
print(json.dumps(sorted(loaded({action!r}) - loaded("import typer"))))
"""


def imported_beyond_typer(action: str, env: dict[str, str] | None = None) -> set[str]:
    """The modules a fresh interpreter has after ``action`` and not after ``import typer``."""
    import os

    script = NEW_MODULES.format(action=action)
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, env={**os.environ, **(env or {})}
    )
    assert proc.returncode == 0, proc.stderr
    return set(json.loads(proc.stdout.strip().splitlines()[-1]))


def test_help_imports_only_what_it_may() -> None:
    extra = imported_beyond_typer(IMPORTS + "\n" + MAIN_HELP)
    assert extra <= HELP_MAY_IMPORT, sorted(extra - HELP_MAY_IMPORT)
    assert "acpcli.cli.sessions" in extra  # the probe sees what --help imports


def test_completing_agent_names_imports_only_what_it_may(acpcli_home: Path) -> None:
    env = {"_ACPCLI_COMPLETE": "complete_bash", "COMP_WORDS": "acpcli new --agent ", "COMP_CWORD": "3"}
    action = "from acpcli.cli import main\ntry:\n    main([])\nexcept SystemExit:\n    pass\n"
    extra = imported_beyond_typer(action, env)
    assert extra <= AGENT_NAMES_MAY_IMPORT, sorted(extra - AGENT_NAMES_MAY_IMPORT)
    assert "acpcli.config" in extra
    # with a cached registry, its ids are offered: its code (and json) is loaded then
    cache = acpcli_home / "registry"
    cache.mkdir()
    (cache / "meta.json").write_text('{"url": "https://example.invalid/registry.json"}')
    assert "acpcli.agents.registry" in imported_beyond_typer(action, env)


def test_the_python_api_is_imported_on_first_use() -> None:
    # `import acpcli` (and its version, its __all__, dir()) loads none of the API's machinery;
    # the first use of a public name does.
    lazy = (*FORBIDDEN, "anyio", "typing", "acpcli.api", "acpcli.api.client", "acpcli.session", "acpcli.errors")
    touch = "import acpcli\nacpcli.__version__, acpcli.__all__, dir(acpcli)"
    assert offending(touch, forbidden=lazy) == []
    assert "acpcli.api.client" in offending(touch + "\nacpcli.connect", forbidden=lazy)


def test_the_probe_sees_a_heavy_import() -> None:
    # the check above can fail: a module that pulls pydantic in is reported
    assert offending(IMPORTS, setup="import acpcli.protocol.v2") == ["acpcli.protocol.v2", "pydantic"]


# What a TAB may not load: the --help list, all of rich, the agent plumbing, and (except
# for session ids) sqlite3.
COMPLETION_FORBIDDEN = (
    *FORBIDDEN, "rich", "anyio", "acpcli.wire.transport", "acpcli.wire.connection", "acpcli.session",
    "acpcli.cli.commands", "typer._adapters", "sqlite3",
)
COMPLETE = (
    "import os\n"
    "os.environ.update(_ACPCLI_COMPLETE='complete_{shell}', COMP_WORDS={words!r}, COMP_CWORD='{cword}')\n"
    "from acpcli.cli import main\n"
    "try:\n"
    "    main([])\n"
    "except SystemExit as exit:\n"
    "    assert not exit.code, exit.code\n"
)


@pytest.mark.parametrize(
    ("shell", "words", "cword", "allowed"),
    [
        ("bash", "acpcli lo", 1, ()),
        ("zsh", "acpcli load --", 2, ()),
        ("fish", "acpcli new --agent ", 3, ()),
        ("bash", "acpcli prompt --format ", 3, ()),
        ("bash", "acpcli new --cwd ", 3, ()),
        ("zsh", "acpcli load ", 2, ("sqlite3",)),
    ],
    ids=["command names", "option names", "agent names", "choices", "directories", "session ids"],
)
def test_completion_imports_nothing_heavy(
    shell: str, words: str, cword: int, allowed: tuple[str, ...], acpcli_home
) -> None:
    # an index to read, so that the session-id case really opens it
    from acpcli.history.index import Index, SessionRecord

    with Index.open() as index:
        index.upsert_session(SessionRecord(id="s-1", agent="demo", cwd="/"))
    forbidden = tuple(m for m in COMPLETION_FORBIDDEN if m not in allowed)
    action = COMPLETE.format(shell=shell, words=words, cword=cword)
    assert offending(action, forbidden=forbidden) == []


def test_the_completion_probe_sees_sqlite3(acpcli_home) -> None:
    # the guard above can fail: listing session ids does load sqlite3
    from acpcli.history.index import Index

    Index.open().close()
    action = COMPLETE.format(shell="bash", words="acpcli load ", cword=2)
    assert offending(action, forbidden=("sqlite3",)) == ["sqlite3"]


# -- commands that run: no pydantic -------------------------------------------------------------

RUN_COMMAND = (
    "from acpcli.cli import main\n"
    "try:\n"
    "    main({argv!r})\n"
    "except SystemExit as exit:\n"
    "    assert not exit.code, exit.code\n"
)
COMMAND_FORBIDDEN = (*FORBIDDEN, "typer._adapters")


def test_prompt_in_a_pipe_imports_no_pydantic_nor_rich(python_exe: str, acpcli_home) -> None:
    # stdout is a pipe here: the plain view; every parameter of `prompt` is coerced, and the
    # session id note goes to stderr without rich
    agent = f"{python_exe} -m acpcli.demo_agent --delay 0"
    action = RUN_COMMAND.format(argv=["prompt", "--cmd", agent, "--cwd", ".", "--format", "text", "hi"])
    assert offending(action, forbidden=(*COMMAND_FORBIDDEN, "rich")) == []


def test_sessions_in_a_pipe_imports_no_rich(acpcli_home) -> None:
    from acpcli.history.index import Index, SessionRecord

    with Index.open() as index:
        index.upsert_session(SessionRecord(id="s-1", agent="demo", cwd="/"))
    action = RUN_COMMAND.format(argv=["sessions"])
    assert offending(action, forbidden=(*COMMAND_FORBIDDEN, "rich")) == []
    # and with nothing recorded (the note on stderr)
    Index.open().conn.execute("DELETE FROM sessions")
    assert offending(action, forbidden=(*COMMAND_FORBIDDEN, "rich")) == []


@pytest.mark.parametrize(
    "setup",
    [
        # acpcli's coercer installed, then taken out again
        "import acpcli.cli.typer_compat as compat, typer.core\n"
        "assert compat.install()\n"
        "typer.core._TyperParameter.get_runtime_param = typer.core._TyperParameter.get_runtime_param.__wrapped__\n"
        "compat.install = lambda: False",
        # a typer version acpcli does not know: main() installs nothing
        "import acpcli.cli.typer_compat as compat\ncompat.KNOWN_TYPER = ()",
    ],
    ids=["unwrapped", "unknown typer"],
)
def test_the_command_probe_sees_typers_own_coercion(setup: str) -> None:
    # the guard above can fail: without acpcli's coercer, running a command loads pydantic
    action = RUN_COMMAND.format(argv=["agents"])
    assert "pydantic" in offending(action, setup="import acpcli.cli\n" + setup, forbidden=COMMAND_FORBIDDEN)


def _outcome(runtime: object, value: object, param: object, ctx: object) -> tuple[str, object]:
    import typer

    try:
        result = runtime.coerce(value, param=param, ctx=ctx)  # type: ignore[attr-defined]
    except typer.BadParameter as exc:
        return "error", exc.format_message()
    return type(result).__name__, result


def test_plain_coercion_gives_what_typer_gives(tmp_path) -> None:
    """Every parameter acpcli declares, every kind of value: the same result (type included)
    or the same error message as typer's own pydantic-based coercion."""
    import typer.main
    from typer._click import Context
    from typer._coercion import build_runtime_param

    from acpcli.cli import app
    from acpcli.cli.typer_compat import plain_runtime_param

    a_file = tmp_path / "file.txt"
    a_file.write_text("x")
    a_dir = tmp_path / "dir"
    a_dir.mkdir()
    unreadable = tmp_path / "secret"
    unreadable.write_text("x")
    unreadable.chmod(0)
    singles: list[object] = [
        None, "", ".", "-", "plain", "ü \udcff", str(a_file), str(a_dir), f"{tmp_path}//dir/",
        str(tmp_path / "missing"), str(unreadable), a_file, a_dir, True, False, b"bytes", 3,
    ]
    lists: list[object] = [None, (), [], (str(a_file),), (str(a_dir), "x", str(a_file)), ("a", b"b"), "no list"]
    command = typer.main.get_command(app)
    checked = 0
    for name, sub in [*command.commands.items(), ("", command)]:  # type: ignore[attr-defined]
        ctx = Context(sub, info_name=name or "acpcli")
        for param in sub.params:
            descriptor = param.type_descriptor
            plain = plain_runtime_param(descriptor)
            if plain is None:
                continue
            own = build_runtime_param(descriptor)
            many = param.multiple or param.nargs == -1
            for value in lists if many else singles:
                assert _outcome(plain, value, param, ctx) == _outcome(own, value, param, ctx), (name, param.name, value)
                checked += 1
    assert checked > 300  # every command's parameters were seen


def test_plain_coercion_covers_only_what_it_knows() -> None:
    import datetime
    from typing import Literal

    from typer._coercion import resolve_type_descriptor
    from typer.models import OptionInfo

    from acpcli.cli.typer_compat import plain_runtime_param

    def plain(annotation: object, **info: object) -> object:
        return plain_runtime_param(resolve_type_descriptor(annotation, OptionInfo(**info)))

    for annotation in (str, bool, Path, list[str], list[Path]):
        assert plain(annotation) is not None, annotation
    for annotation in (int, float, datetime.datetime, Literal["a", "b"], list[int]):
        assert plain(annotation) is None, annotation
    for flags in ({"exists": True}, {"writable": True}, {"resolve_path": True}, {"allow_dash": True}):
        assert plain(Path, **flags) is None, flags
    assert plain(str, parser=str.upper) is None


def test_a_warm_prompt_imports_no_event_loop(python_exe: str, acpcli_home) -> None:
    # A prompt on a live session only talks to its host: a blocking socket, no asyncio nor
    # anyio (their import costs more than the rest of the warm round trip), no agent plumbing.
    import os

    env = {**os.environ, "ACPCLI_KEEP_ALIVE": "60"}
    agent = f"{python_exe} -m acpcli.demo_agent --delay 0"
    made = subprocess.run(
        [python_exe, "-m", "acpcli", "new", "--no-repl", "--cmd", agent], env=env, capture_output=True, text=True,
        timeout=60, check=True,
    )
    session = made.stdout.strip()
    try:
        action = RUN_COMMAND.format(argv=["prompt", "--session", session, "--keep-alive", "60", "status"])
        heavy = (*COMMAND_FORBIDDEN, "rich", "asyncio", "anyio", "acpcli.wire.connection", "acpcli.session.link")
        assert offending(action, forbidden=heavy) == []
    finally:
        subprocess.run([python_exe, "-m", "acpcli", "stop", "--all"], env=env, capture_output=True, timeout=60, check=False)
