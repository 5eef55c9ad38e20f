"""The REPL's file writes and commands after the person chose *Allow* (issue 32 point 1), the
same with and without a host: the ``repl`` fixture runs each test both ways (``--keep-alive
300``: the session in a background host, the REPL its client; ``--keep-alive 0``: the REPL's
own agent), so the two paths cannot drift apart again."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from acpcli.errors import ExitCode

from .conftest import Cli
from .pty import CHOICE, CTRL_D, Pty


@pytest.fixture(params=["300", "0"], ids=["hosted", "unhosted"])
def repl(request: pytest.FixtureRequest, spawn: Any, cli: Cli) -> Iterator[Callable[..., Pty]]:
    """``repl(*flags)``: an interactive ``new`` with the demo agent (v1: files and terminals
    through the client) and the parametrised keep-alive, at its first prompt."""
    keep_alive = request.param

    def start(*flags: str) -> Pty:
        pty: Pty = spawn("new", "--cmd", cli.trace.demo_cmd(protocol=1), "--keep-alive", keep_alive, *flags)
        pty.prompt()
        return pty

    yield start
    cli.run("stop", "--all")


def _choose_first_allow(pty: Pty) -> None:
    """Enter on the picker: its highlighted option, the narrowest allow."""
    pty.expect(CHOICE)
    pty.child.send("\r")


def test_allow_in_the_repl_writes_the_file_and_runs_the_command(repl: Callable[..., Pty], workdir: Path) -> None:
    pty = repl()
    pty.say("write made.txt run touch ran.txt")
    _choose_first_allow(pty)
    pty.expect("written with fs/write_text_file")
    pty.prompt()
    assert (workdir / "made.txt").exists(), pty.seen[-3000:]
    assert (workdir / "ran.txt").exists(), pty.seen[-3000:]
    assert "refused" not in pty.seen and "policy deny" not in pty.seen, pty.seen[-3000:]
    pty.child.send(CTRL_D)
    assert pty.wait() == ExitCode.OK


def test_deny_in_the_repl_refuses_the_write_with_the_hint_for_a_terminal(repl: Callable[..., Pty], workdir: Path) -> None:
    pty = repl("--permissions", "deny")
    pty.say("write kept-out.txt no-permission")  # written without asking: only the policy decides
    pty.expect("refused writing")
    pty.prompt()
    assert not (workdir / "kept-out.txt").exists()
    assert "--permissions ask|allow" in pty.seen.replace("\r\n", "")  # a person is here: ask helps
    pty.child.send(CTRL_D)
    assert pty.wait() == ExitCode.OK
