"""Issue 32's low points where a session in a host behaved otherwise than one without: each
is run through the real CLI, hosted (keep-alive on) and unhosted (``--keep-alive 0``), in a
pseudo-terminal where it is about the terminal.

Peers: the demo agent, and ``tests/peers/sdk_gemini_like_agent.py`` (the official SDK; it
advertises ``loadSession`` only: no resume, close, fork), as gemini does.
"""

from __future__ import annotations

import json
import shlex
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from acpcli.errors import ExitCode

from .conftest import AgentTrace, Cli, error_line
from .pty import CHOICE, CTRL_C, REPLY, Pty, new_args
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


@pytest.fixture(params=["hosted", "unhosted"])
def keep(request: pytest.FixtureRequest, cli: Cli) -> Iterator[dict[str, str]]:
    """The environment of a command through a session host (keep-alive on) or without one;
    every host is stopped at the end."""
    yield {"ACPCLI_KEEP_ALIVE": "300" if request.param == "hosted" else "0"}
    cli.run("stop", "--all")


def _live(cli: Cli) -> list[str]:
    return [json.loads(line)["id"] for line in cli.ok("sessions", "--live", "--json").stdout.splitlines()]


def test_close_on_an_agent_without_close_closes_here_at_once(cli: Cli, keep: dict[str, str]) -> None:
    """The agent did not advertise ``session/close`` (gemini): ``close`` says so in one line
    and exits 6, the session marked closed here, as without a host; a live session's host is
    stopped with its agent, said in that line (no line before it saying the host was
    stopped, then a failure), and no agent is started to be asked."""
    sid = cli.ok("new", "--no-repl", "--cmd", cli.trace.record_cmd("--load"), env=keep).stdout.strip()
    hosted = keep["ACPCLI_KEEP_ALIVE"] != "0"
    assert _live(cli) == ([sid] if hosted else [])
    started = len(cli.trace.pids())
    error = error_line(cli.run("close", sid, env=keep), ExitCode.CAPABILITY)
    assert "does not support session/close" in error and "marked closed locally" in error, error
    assert ("its host" in error) == hosted, error
    assert len(cli.trace.pids()) == started  # nobody was started only to be refused
    assert cli.trace.requests("session/close") == []
    assert _live(cli) == []
    assert [r["state"] for r in cli.index()] == ["closed"]
    cli.trace.assert_all_gone()
    again = cli.ok("close", sid, env=keep)
    assert again.stderr == f"{sid} is already closed\n"


def test_resume_on_an_agent_without_resume_is_refused_before_anything_starts(cli: Cli, keep: dict[str, str]) -> None:
    """The agent did not advertise ``session/resume`` (gemini): ``resume`` of its session is
    refused at once from what the record says (exit 6, the agent's own words and the hint to
    load), no host or agent started; ``--cmd`` asks the agent itself again."""
    cmd = cli.trace.record_cmd("--load")
    sid = cli.ok("new", "--no-repl", "--cmd", cmd, env=keep).stdout.strip()
    cli.ok("stop", "--all")
    started = len(cli.trace.pids())
    proc = cli.run("resume", sid, "--no-repl", env=keep)
    error = error_line(proc, ExitCode.CAPABILITY)
    assert "does not support session/resume" in error and "acpcli load" in proc.stderr, proc.stderr
    assert len(cli.trace.pids()) == started and _live(cli) == []
    asked = cli.run("resume", sid, "--no-repl", "--cmd", cmd, env=keep)  # the agent asked: the same refusal
    assert "does not support session/resume" in error_line(asked, ExitCode.CAPABILITY)
    assert len(cli.trace.pids()) == started + 1
    assert cli.trace.requests("session/resume") == []
    cli.trace.assert_all_gone()


def test_resume_of_a_live_session_joins_its_host_whatever_the_agent_advertised(cli: Cli) -> None:
    """Joining a running host needs no ``session/resume``: nothing is refused then."""
    keep = {"ACPCLI_KEEP_ALIVE": "300"}
    try:
        sid = cli.ok("new", "--no-repl", "--cmd", cli.trace.record_cmd("--load"), env=keep).stdout.strip()
        started = len(cli.trace.pids())
        cli.ok("resume", sid, "--no-repl", env=keep)
        assert len(cli.trace.pids()) == started and _live(cli) == [sid]
    finally:
        cli.run("stop", "--all")


SESSIONS_AGENT = Path(__file__).resolve().parent.parent / "peers" / "sdk_sessions_agent.py"


def test_fork_of_a_session_whose_host_is_gone_opens_the_fork(spawn, cli: Cli, keep: dict[str, str], tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """``fork`` of a session made with a host (since stopped) or without one: the prompt
    opens on the fork, which holds the conversation so far, as without a host."""
    env = {**keep, "SDK_SESSIONS_STATE": str(tmp_path / "agent-sessions.json")}
    cmd = shlex.join([sys.executable, str(SESSIONS_AGENT), "--fork"])
    parent = cli.ok("new", "--no-repl", "--cmd", cmd, env=env).stdout.strip()
    cli.ok("prompt", "--session", parent, "apple", env=env)
    cli.ok("stop", "--all")
    assert _live(cli) == []
    pty: Pty = spawn("fork", parent, env=env)
    pty.expect(f"a fork of {parent}")
    pty.prompt()
    pty.say("banana")
    pty.expect(r"you said: banana \(I remember: apple;")
    pty.prompt()
    status, fork = pty.leave()
    assert status == 0 and fork != parent
    assert {r["id"]: r.get("parent") for r in cli.index()} == {parent: None, fork: parent}


def test_fork_on_an_agent_without_fork_is_refused_before_anything_starts(cli: Cli, keep: dict[str, str]) -> None:
    sid = cli.ok("new", "--no-repl", "--cmd", cli.trace.record_cmd("--load"), env=keep).stdout.strip()
    cli.ok("stop", "--all")
    started = len(cli.trace.pids())
    error = error_line(cli.run("fork", sid, "--no-repl", env=keep), ExitCode.CAPABILITY)
    assert "does not support session/fork" in error
    assert len(cli.trace.pids()) == started and [r["id"] for r in cli.index()] == [sid]


def test_attach_to_a_session_without_a_host_offers_to_start_one(spawn, cli: Cli, keep: dict[str, str]) -> None:  # type: ignore[no-untyped-def]
    """On a terminal, ``attach`` of a recorded session that is not live (made without a host,
    or its host since stopped) asks whether to start one; yes starts it and joins it, no
    leaves (exit 0), ``--yes`` does not ask. In a pipe: one error line, exit 20."""
    sid = cli.ok("new", "--no-repl", "--cmd", cli.trace.demo_cmd(), env=keep).stdout.strip()
    cli.ok("stop", "--all")
    piped = cli.run("attach", sid, env=keep)
    assert "is not live" in error_line(piped, ExitCode.HOST_LOST)
    started = len(cli.trace.pids())

    declined: Pty = spawn("attach", sid, env=keep)
    declined.expect(r"Start one and attach\? \[y/N\]")
    declined.child.send("n\r")
    declined.expect("no host started")
    assert declined.wait() == 0
    assert _live(cli) == [] and len(cli.trace.pids()) == started

    pty: Pty = spawn("attach", sid, env=keep)
    pty.expect(r"Start one and attach\? \[y/N\]")
    pty.child.send("y\r")
    pty.expect(f"attached to {sid}")
    pty.prompt()
    pty.say("hello no-permission")
    pty.expect(REPLY)
    pty.prompt()
    assert pty.leave() == (0, sid)
    assert _live(cli) == [sid]  # left: the session stays live
    cli.ok("stop", "--all")

    at_once: Pty = spawn("attach", sid, "--yes", env=keep)
    at_once.expect(f"attached to {sid}")
    at_once.prompt()
    assert "[y/N]" not in at_once.seen
    assert at_once.leave() == (0, sid)
    # live, without a terminal: there is nothing to draw on
    assert "needs a terminal" in error_line(cli.run("attach", sid, env=keep), ExitCode.USAGE)


@pytest.mark.parametrize("width", [60, 71])
def test_the_attach_banner_breaks_at_words(spawn, cli: Cli, width: int) -> None:  # type: ignore[no-untyped-def]
    """The line ``attach`` opens with is wrapped at words (a terminal cuts a line anywhere:
    ``C`` / ``trl-D``), and so is the hint it leaves with, each command to copy whole."""
    keep = {"ACPCLI_KEEP_ALIVE": "300"}
    try:
        sid = cli.ok("new", "--no-repl", "--cmd", cli.trace.demo_cmd(), env=keep).stdout.strip()
        pty: Pty = spawn("attach", sid, width=width, env=keep)
        pty.prompt()
        status, back = pty.leave()
        assert (status, back) == (0, sid)
        screen = screen_text(pty.seen, width=width)
        flat = " ".join(screen.split())  # a word the terminal cut shows as two here
        assert f"attached to {sid} with " in flat and " — Ctrl-D leaves, the session stays live" in flat, screen
        assert all(len(line) <= width for line in screen.splitlines())
        for command in (f"acpcli attach {sid}", f"acpcli stop {sid}"):
            assert any(f"`{command}`" in line for line in screen.splitlines()), screen
    finally:
        cli.run("stop", "--all")


def test_cancelling_is_drawn_under_the_text_on_the_screen_when_ctrl_c_was_pressed(spawn, trace: AgentTrace, repl_mode: list[str]) -> None:  # type: ignore[no-untyped-def]
    """``cancelling…`` lands in the scrollback where the person pressed Ctrl-C: under the
    streamed lines that were on the screen then (not above the message still streaming),
    before what came after and the turn's end, hosted as unhosted."""
    pty: Pty = spawn(*new_args(trace), *repl_mode, height=40)
    pty.prompt()
    pty.say("slow no-permission")
    pty.expect("line 4 of 400")
    pty.child.send(CTRL_C)
    pty.expect("cancelling…")
    pty.prompt()
    lines = [line for line in screen_text(pty.seen, height=40).splitlines() if line.strip()]
    at = next(i for i, line in enumerate(lines) if line.startswith("cancelling…"))
    seen = next(i for i, line in enumerate(lines) if "line 4 of 400" in line)
    ended = next(i for i, line in enumerate(lines) if "Turn ended: cancelled" in line)
    assert seen < at < ended, "\n".join(lines)
    assert sum("cancelling…" in line for line in lines) == 1
    assert pty.leave()[0] == 0


QUIRKS_AGENT = shlex.join([sys.executable, str(Path(__file__).resolve().parent.parent / "peers" / "sdk_quirks_agent.py")])


def test_the_agents_error_in_the_repl_breaks_at_words(spawn, repl_mode: list[str]) -> None:  # type: ignore[no-untyped-def]
    """``the agent answered an error: …`` is wider than 64 columns: it is wrapped at words
    (the terminal cut it anywhere: ``(-32`` / ``603)``), hosted as unhosted."""
    pty: Pty = spawn("new", "--cmd", QUIRKS_AGENT, *repl_mode, width=64)
    pty.prompt()
    pty.say("please fail now")
    pty.expect("the model API answered 500")
    pty.prompt()
    screen = screen_text(pty.seen, width=64)
    flat = " ".join(screen.split())  # a word the terminal cut shows as two here
    assert "the agent answered an error: session/prompt: Internal error (-32603)" in flat, screen
