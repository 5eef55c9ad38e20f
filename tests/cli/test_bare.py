"""``acpcli`` alone opens the interactive prompt with the default agent, and ``acpcli "fix the
tests"`` does so with that prompt sent first (issue 32), hosted and unhosted; without a
terminal, the first runs as ``prompt`` and the second prints the help as before."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from acpcli.errors import ExitCode

from .conftest import Cli
from .pty import CTRL_D, PROMPT, REPLY

MODES = {"hosted": "300", "unhosted": "0"}


@pytest.fixture(params=sorted(MODES))
def keep_alive(request: pytest.FixtureRequest, cli: Cli) -> object:
    """``ACPCLI_KEEP_ALIVE`` for one way of running a session (a host is stopped afterwards)."""
    yield MODES[request.param]
    cli.run("stop", "--all")


def _fake_codex(tmp_path: Path) -> dict[str, str]:
    """A PATH whose only agent program is ``codex-acp`` (the demo agent underneath)."""
    folder = tmp_path / "bin"
    folder.mkdir()
    script = folder / "codex-acp"
    script.write_text(f"#!/bin/sh\nexec {sys.executable} -m acpcli.demo_agent \"$@\"\n")
    script.chmod(0o755)
    return {"PATH": f"{folder}:/usr/bin:/bin"}


def test_acpcli_alone_opens_the_prompt_with_the_first_agent_found(spawn, tmp_path: Path, keep_alive: str) -> None:  # type: ignore[no-untyped-def]
    pty = spawn(env={**_fake_codex(tmp_path), "ACPCLI_KEEP_ALIVE": keep_alive})
    pty.expect("acpcli: codex \\(the first agent found")
    pty.expect(PROMPT)
    pty.say("no-permission hello")
    pty.expect(REPLY)
    pty.expect(PROMPT)
    pty.child.send(CTRL_D)
    assert pty.wait() == 0


def test_a_quoted_prompt_alone_is_sent_first(spawn, cli: Cli, tmp_path: Path, keep_alive: str) -> None:  # type: ignore[no-untyped-def]
    (cli.home / "config.toml").write_text('default_agent = "demo"\n')
    pty = spawn("no-permission tell me about the weather", env={"ACPCLI_KEEP_ALIVE": keep_alive})
    pty.expect("no-permission tell me about the weather")
    pty.expect(REPLY)
    pty.expect(PROMPT)
    pty.child.send(CTRL_D)
    assert pty.wait() == 0
    (record,) = cli.index()
    assert record["agent"] == "demo"
    assert "no-permission tell me about the weather" in cli.show(record["id"])


def test_without_a_terminal_the_quoted_prompt_runs_as_prompt_and_alone_is_the_help(cli: Cli) -> None:
    (cli.home / "config.toml").write_text('default_agent = "demo"\n')
    proc = cli.run("what is two and two")
    assert proc.returncode == 0 and "Demo agent reply" in proc.stdout, proc.stderr
    alone = cli.run()
    assert alone.returncode == ExitCode.USAGE and alone.stderr.startswith("Usage: acpcli")
    one_word = cli.run("hello")  # a single word is a command's name, mistyped
    assert one_word.returncode == ExitCode.USAGE and "no such command 'hello'" in one_word.stderr
