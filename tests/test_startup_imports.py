"""Start-up stays light: importing acpcli and running ``acpcli --help`` import no protocol
models, no pydantic, no rich.markdown and no prompt_toolkit (HOUSE-STYLE rule 5).

A completion answer (one per TAB) is held to more: no rich at all, no anyio, no agent
plumbing, and sqlite3 only when it lists session ids."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

FORBIDDEN = ("acpcli.protocol.v1", "acpcli.protocol.v2", "pydantic", "rich.markdown", "prompt_toolkit")

PROBE = """
import json, runpy, sys
{setup}
{action}
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


def test_the_probe_sees_a_heavy_import() -> None:
    # the check above can fail: a module that pulls pydantic in is reported
    assert offending(IMPORTS, setup="import acpcli.protocol.v2") == ["acpcli.protocol.v2", "pydantic"]


# What a TAB may not load: the --help list, all of rich, the agent plumbing, and (except
# for session ids) sqlite3.
COMPLETION_FORBIDDEN = (
    *FORBIDDEN, "rich", "anyio", "acpcli.transport", "acpcli.connection", "acpcli.session",
    "acpcli.cli.ops", "typer._adapters", "sqlite3",
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
    from acpcli.persistence import Index, SessionRecord

    with Index.open() as index:
        index.upsert_session(SessionRecord(id="s-1", agent="demo", cwd="/"))
    forbidden = tuple(m for m in COMPLETION_FORBIDDEN if m not in allowed)
    action = COMPLETE.format(shell=shell, words=words, cword=cword)
    assert offending(action, forbidden=forbidden) == []


def test_the_completion_probe_sees_sqlite3(acpcli_home) -> None:
    # the guard above can fail: listing session ids does load sqlite3
    from acpcli.persistence import Index

    Index.open().close()
    action = COMPLETE.format(shell="bash", words="acpcli load ", cword=2)
    assert offending(action, forbidden=("sqlite3",)) == ["sqlite3"]
