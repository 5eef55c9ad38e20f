"""The lines the REPL says are the same with a live-session host (keep-alive on, the default)
and without one (``--keep-alive 0``) (issue 32): ``waiting for you`` in the toolbar while a
question is open, the turn that ended without an answer, the transcript of a ``resume``
marked as stored locally, and the note that a closed session was reopened."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import pytest

from acpcli.errors import ExitCode

from .conftest import AgentTrace, Cli
from .pty import CHOICE, CTRL_C, CTRL_D, Pty
from .screen import screen_text

QUIRKS_CMD = shlex.join(
    [sys.executable, str(Path(__file__).resolve().parent.parent / "peers" / "sdk_quirks_agent.py")]
)
NO_ANSWER = "the agent ended the turn without an answer"
STORED = "── stored locally by acpcli, not replayed by the agent ──"
WIDTH = 90

#: Both ways the REPL runs: without a host, and over one.
KEEP_ALIVE = pytest.mark.parametrize("keep_alive", ["0", "300"], ids=["unhosted", "hosted"])


def _leave(pty: Pty) -> int:
    """Ctrl-D at the prompt (hosted, the session stays live): the exit status."""
    pty.child.send(CTRL_D)
    return pty.wait()


@pytest.fixture
def stop_hosts(cli: Cli):  # type: ignore[no-untyped-def]
    yield
    cli.run("stop", "--all")


@KEEP_ALIVE
def test_the_toolbar_says_waiting_for_you_while_a_question_is_open(
    spawn, trace: AgentTrace, stop_hosts, keep_alive: str
) -> None:  # type: ignore[no-untyped-def]
    pty: Pty = spawn("new", "--cmd", trace.demo_cmd(protocol=1), "--keep-alive", keep_alive, width=WIDTH)
    pty.prompt()
    pty.say("edit please")
    pty.expect(CHOICE)  # (drawn, and taking keys: the toolbar under it may have come first)
    if "waiting for you" not in pty.seen:
        pty.expect("waiting for you")  # the toolbar under the question
    pty.child.send(CTRL_C)  # dismissed
    pty.expect("Turn ended")
    pty.prompt()
    assert _leave(pty) == ExitCode.OK


@KEEP_ALIVE
def test_a_turn_without_an_answer_is_said_in_one_line(spawn, stop_hosts, keep_alive: str) -> None:  # type: ignore[no-untyped-def]
    pty: Pty = spawn("new", "--cmd", QUIRKS_CMD, "--keep-alive", keep_alive, width=WIDTH)
    pty.prompt()
    pty.say("say something first")  # (an answer earlier in the session does not count)
    pty.expect("you said: say something first")
    pty.prompt()
    pty.say("say nothing")
    pty.expect(NO_ANSWER)
    pty.prompt()
    pty.say("say something")
    pty.expect("you said: say something")
    pty.prompt()
    assert _leave(pty) == ExitCode.OK
    screen = screen_text(pty.seen, WIDTH)
    assert screen.count(NO_ANSWER) == 1, screen  # not after the turns that answered
    assert screen.index("› say nothing") < screen.index(NO_ANSWER) < screen.index("› say something\n"), screen


@KEEP_ALIVE
def test_resuming_a_closed_session_says_it_was_reopened_and_marks_the_stored_transcript(
    spawn, cli: Cli, stop_hosts, keep_alive: str
) -> None:  # type: ignore[no-untyped-def]
    sid = cli.new(cli.trace.demo_cmd(protocol=1))
    cli.ok("prompt", "--session", sid, "words said before")
    cli.ok("close", sid)
    pty: Pty = spawn("resume", sid, "--keep-alive", keep_alive, width=WIDTH)
    pty.prompt()
    assert _leave(pty) == ExitCode.OK
    screen = screen_text(pty.seen, WIDTH)
    assert screen.count("was closed: reopened") == 1, screen
    assert screen.count(STORED) == 1 and screen.count("── resumed ──") == 1, screen
    assert screen.index(STORED) < screen.index("words said before") < screen.index("── resumed ──"), screen
    (record,) = cli.index()
    assert record["state"] != "closed"
