"""Opt-in: "send now" with claude-agent-acp, which advertises
``agentCapabilities._meta.claudeCode.promptQueueing``: Alt-Enter during a turn sends a second
``session/prompt`` at once, claude takes it up in the same turn, and the REPL follows that
turn to its end. And with codex, which advertises nothing of the kind: the prompt is queued
and sent after the turn. Runs only when ``ACPCLI_REAL_AGENTS`` names the launcher.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import sys
from pathlib import Path

import pytest

from acpcli.errors import ExitCode
from tests.cli.pty import CTRL_D, PROMPT, Pty
from tests.cli.screen import screen_text

LAUNCHER = os.environ.get("ACPCLI_REAL_AGENTS", "")

pytestmark = pytest.mark.skipif(
    not LAUNCHER or not Path(LAUNCHER).is_file(),
    reason="real agents are opt-in: set ACPCLI_REAL_AGENTS to the real-agent harness's launch.py",
)

ANSWER = "Hello from the fake model. This is a streamed answer."


def _prompt_times(log: Path) -> list[tuple[str, object]]:
    """("asked" or "answered", id) of each session/prompt request and its answer, in wire order."""
    out: list[tuple[str, object]] = []
    asked: set[object] = set()
    for line in log.read_text().splitlines():
        _, _, frame = line.partition(" ")
        _, _, body = frame.partition(" ")
        try:
            message = json.loads(body)
        except ValueError:
            continue
        if message.get("method") == "session/prompt":
            asked.add(message["id"])
            out.append(("asked", message["id"]))
        elif "method" not in message and message.get("id") in asked:
            out.append(("answered", message["id"]))
    return out


@pytest.mark.parametrize("agent", ["claude", "codex"])
def test_alt_enter_during_a_turn(agent: str, tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    log = tmp_path / "wire.log"
    cmd = shlex.join([sys.executable, LAUNCHER, agent])
    pty = Pty([sys.executable, "-m", "acpcli", "new", "--cmd", cmd, "--log-file", str(log)], project)
    pty.child.timeout = 120
    try:
        pty.prompt()
        pty.say("slow please")  # ten chunks half a second apart
        pty.expect("streams")
        pty.child.send("and also say hi\x1b\r")
        if agent == "codex":
            pty.expect("does not take a prompt during a turn")
        pty.expect(re.escape("Hello from the fake model"))  # the second prompt's answer
        mark = len(pty.seen)
        while not re.search(PROMPT, pty.seen[mark:]):
            pty.expect(r"[\s\S]+")
        pty.child.send(CTRL_D)
        assert pty.wait() == ExitCode.OK
    finally:
        pty.kill()
    order = _prompt_times(log)
    assert [d for d, _ in order].count("asked") == 2, order
    if agent == "claude":
        assert order[:2] == [("asked", order[0][1]), ("asked", order[1][1])], order  # sent during the turn
    else:
        assert [d for d, _ in order] == ["asked", "answered", "asked", "answered"], order  # after it
    screen = screen_text(pty.seen)
    assert screen.index("› slow please") < screen.index("› and also say hi") < screen.index(ANSWER), screen
