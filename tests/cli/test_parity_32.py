"""Issue 32's low points where a session in a host behaved otherwise than one without: each
is run through the real CLI, hosted (keep-alive on) and unhosted (``--keep-alive 0``), in a
pseudo-terminal where it is about the terminal.

Peers: the demo agent, and ``tests/peers/sdk_gemini_like_agent.py`` (the official SDK; it
advertises ``loadSession`` only: no resume, close, fork), as gemini does.
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

from .conftest import AgentTrace
from .pty import CHOICE, Pty, new_args
from .screen import screen_text

GEMINI_LIKE = shlex.join([sys.executable, str(Path(__file__).resolve().parent.parent / "peers" / "sdk_gemini_like_agent.py")])


def test_the_toolbar_shows_the_first_prompt_as_the_title_while_its_turn_runs(spawn, trace: AgentTrace, repl_mode: list[str]) -> None:  # type: ignore[no-untyped-def]
    """A new session's toolbar names it by its first prompt as soon as it is sent (not
    ``(untitled)`` until the turn ends): seen under the turn's permission question."""
    pty: Pty = spawn(*new_args(trace), *repl_mode)
    pty.prompt()
    pty.say("tidy the garden shed")
    pty.expect(CHOICE)
    [toolbar] = [line for line in screen_text(pty.seen).splitlines() if "waiting for you" in line]
    assert "acpcli demo agent · tidy the garden shed · waiting for you" in toolbar, toolbar
    pty.child.send("\r")
    pty.prompt()
    assert pty.leave()[0] == 0
