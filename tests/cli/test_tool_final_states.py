"""One final state per tool call (issue 32.13): a call the agent leaves pending after a refused
or dismissed permission ends the turn ``cancelled``, and a call acpcli marked cancelled on a
cancel is not drawn again as ``failed`` when the agent says so later -- on the screen, piped and
in ``show``, with and without a session host."""

from __future__ import annotations

import re
import shlex
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from acpcli.errors import ExitCode

from .conftest import Cli
from .pty import CHOICE, CTRL_C, Pty, new_args
from .screen import screen_text

ASKING = Path(__file__).resolve().parent.parent / "peers" / "sdk_asking_agent.py"
ASKING_CMD = shlex.join([sys.executable, str(ASKING)])
SESSION = re.compile(r"^session (\S+)$", re.M)
#: The id in the words the REPL leaves with (resume, load or show it; attach or stop its host).
LEFT = re.compile(r"acpcli (?:resume|load|show|attach|stop) ([A-Za-z0-9_-]+)")
ICONS = ("○ ", "◐ ", "✓ ", "✗ ", "⊘ ")
PIPED_HEADER = re.compile(r"^\[tool\] (.+?) \((\w+)\): (\S+)$", re.M)


@pytest.fixture(params=["300", "0"], ids=["hosted", "unhosted"])
def keep_alive(request: pytest.FixtureRequest, cli: Cli) -> Iterator[str]:
    """``--keep-alive`` of the commands: through a session host, or without one; every host
    is stopped at the end."""
    yield request.param
    cli.run("stop", "--all")


def piped_states(text: str, title: str) -> list[str]:
    """The states a piped transcript (or ``show``) gives the tool call ``title``, in order."""
    return [status for name, _kind, status in PIPED_HEADER.findall(text) if name == title]


def test_a_call_left_pending_after_a_refusal_ends_the_turn_cancelled(cli: Cli, keep_alive: str) -> None:
    # a new session (the agent can neither load nor resume one), in a host of its own or not
    proc = cli.run("prompt", "--cmd", ASKING_CMD, "--keep-alive", keep_alive, "--permissions", "deny", "run make")
    assert proc.returncode == ExitCode.OK, proc.stderr
    sid = SESSION.findall(proc.stderr)[0]
    assert "CHOSEN=no-once" in proc.stdout
    assert piped_states(proc.stdout, "Run make") == ["pending", "cancelled"], proc.stdout
    assert piped_states(cli.show(sid), "Run make") == ["cancelled"]


def test_a_call_cancelled_by_acpcli_is_not_failed_again_by_the_agent(cli: Cli, keep_alive: str) -> None:
    # the demo agent ends what a cancel interrupts as "failed"; acpcli said "cancelled" first
    sid = cli.new(cli.trace.demo_cmd(protocol=1))
    proc = cli.run(
        "prompt", "--session", sid, "--keep-alive", keep_alive, "--permissions", "allow", "--timeout", "3",
        "run sleep 30",
    )
    assert proc.returncode == ExitCode.TIMEOUT, proc.stderr
    shown = cli.show(sid)
    titles = {title for title, _kind, _status in PIPED_HEADER.findall(proc.stdout)}
    assert titles, proc.stdout
    for title in titles:  # (however far the turn got before the time ran out)
        states = piped_states(proc.stdout, title)
        final = [state for state in states if state not in ("pending", "in_progress")]
        assert len(final) == 1 and states[-1] == final[0], proc.stdout  # one final state, the last
        assert piped_states(shown, title) == final, shown  # and show has the same
    assert "failed" not in piped_states(proc.stdout, "Run sleep 30"), proc.stdout
    assert piped_states(shown, "Run sleep 30") in ([], ["cancelled"]), shown


def test_jsonl_gives_a_refused_call_its_final_state(cli: Cli) -> None:
    import json

    proc = cli.run("prompt", "--cmd", ASKING_CMD, "--permissions", "deny", "--format", "jsonl", "run it")
    assert proc.returncode == ExitCode.OK, proc.stderr
    states = [row.get("status") for row in map(json.loads, proc.stdout.splitlines()) if row.get("type") == "tool_call"]
    assert states and states[-1] == "cancelled", proc.stdout


def _repl(spawn: Any, keep_alive: str, *flags: str) -> Pty:
    pty: Pty = spawn("new", "--cmd", ASKING_CMD, "--keep-alive", keep_alive, *flags, true_cpr=True)
    pty.prompt()
    return pty


def _leave(pty: Pty) -> str:
    """Ctrl-D at a ready prompt: the REPL ends (exit 0); the session's id."""
    pty.child.send("\x04")
    assert pty.wait() == ExitCode.OK
    match = LEFT.search(pty.seen)
    assert match is not None, pty.seen[-2000:]
    return match.group(1)


def _headers(screen: str, title: str) -> list[str]:
    """The header lines of the tool call ``title`` on the screen (its status icon first)."""
    return [line for line in screen.splitlines() if line[:2] in ICONS and f" {title}  " in line]


def test_a_refused_call_is_one_cancelled_block_on_the_screen(spawn: Any, cli: Cli, keep_alive: str) -> None:
    pty = _repl(spawn, keep_alive, "--permissions", "deny")
    pty.say("run make all")
    pty.expect("CHOSEN=no-once")
    pty.prompt()
    screen = screen_text(pty.seen)
    # drawn pending when the agent's answer followed it, then in its one final state
    assert _headers(screen, "Run make all") == [
        "○ Run make all  execute  pending", "⊘ Run make all  execute  cancelled",
    ], screen
    sid = _leave(pty)
    assert piped_states(cli.show(sid), "Run make all") == ["cancelled"]


def test_a_dismissed_question_leaves_one_cancelled_block(spawn: Any, cli: Cli, keep_alive: str) -> None:
    pty = _repl(spawn, keep_alive)
    pty.say("run make dist")
    pty.expect(CHOICE)
    time.sleep(0.5)  # the picker is up and taking keys (it may ignore keys of its first moment)
    pty.child.send(CTRL_C)
    pty.expect("CHOSEN=cancelled")
    pty.prompt()
    screen = screen_text(pty.seen)
    assert _headers(screen, "Run make dist") == ["⊘ Run make dist  execute  cancelled"], screen
    sid = _leave(pty)
    assert piped_states(cli.show(sid), "Run make dist") == ["cancelled"]


def test_a_dismissed_question_of_the_demo_agent_leaves_one_cancelled_block(
    spawn: Any, cli: Cli, trace: Any, repl_mode: list[str]
) -> None:
    # the demo agent says more of the call acpcli ended ("Cancelled.", then "failed"): what it
    # says is kept, the call is drawn once in its final state (it was drawn twice, both ⊘)
    pty: Pty = spawn(*new_args(trace), *repl_mode, width=60, true_cpr=True)
    pty.prompt()
    pty.say("write notes.txt")
    pty.expect(CHOICE)
    time.sleep(0.5)  # the picker is up and taking keys (it may ignore keys of its first moment)
    pty.child.send("\x1b")
    pty.expect("Turn ended: cancelled")
    pty.prompt()
    screen = screen_text(pty.seen, width=60)
    assert [line for line in _headers(screen, "Edit notes.txt") if line.startswith("⊘")] == [
        "⊘ Edit notes.txt  edit  cancelled"
    ], screen
    sid = _leave(pty)
    assert piped_states(cli.show(sid), "Edit notes.txt") == ["cancelled"]
