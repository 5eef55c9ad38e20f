"""A turn the agent ends (``end_turn``) having said and done nothing is not passed over in
silence (issue 24): claude, after a cancelled turn, may answer the next prompt so and put the
work into the following turn. ``prompt`` says so in one stderr line (exit 0: the agent did end
the turn); the REPL in one dim line.

Peer: ``tests/peers/sdk_quirks_agent.py``, whose answer to a prompt holding "nothing" is an
``end_turn`` with no update at all.
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

from acpcli.errors import ExitCode

from .conftest import Cli
from .pty import Pty
from .screen import screen_text

QUIRKS_CMD = shlex.join(
    [sys.executable, str(Path(__file__).resolve().parent.parent / "peers" / "sdk_quirks_agent.py")]
)
LINE = "the agent ended the turn without an answer"


def test_prompt_says_the_turn_ended_without_an_answer(cli: Cli) -> None:
    proc = cli.run("prompt", "--cmd", QUIRKS_CMD, "say nothing")
    assert proc.returncode == ExitCode.OK, proc.stderr
    assert f"acpcli: {LINE}\n" in proc.stderr, proc.stderr
    assert "you said" not in proc.stdout
    answered = cli.ok("prompt", "--cmd", QUIRKS_CMD, "say something")
    assert "you said: say something" in answered.stdout and LINE not in answered.stderr


def test_prompt_on_a_live_session_says_it_too(cli: Cli) -> None:
    sid = cli.new(QUIRKS_CMD, "--keep-alive", "30")
    try:
        proc = cli.run("prompt", "--session", sid, "say nothing", env={"ACPCLI_KEEP_ALIVE": "30"})
        assert proc.returncode == ExitCode.OK, proc.stderr
        assert f"acpcli: {LINE}\n" in proc.stderr, proc.stderr
    finally:
        cli.run("stop", "--all")


def test_the_repl_says_it_in_one_line(spawn) -> None:  # type: ignore[no-untyped-def]
    pty: Pty = spawn("new", "--cmd", QUIRKS_CMD)
    pty.prompt()
    pty.say("say nothing")
    pty.expect(LINE)
    pty.prompt()
    pty.say("say something")
    pty.expect("you said: say something")
    pty.prompt()
    assert pty.leave()[0] == ExitCode.OK
    screen = screen_text(pty.seen)
    assert screen.count(LINE) == 1, screen
    assert screen.index("› say nothing") < screen.index(LINE) < screen.index("› say something"), (
        screen
    )
