"""What a person sees while their agent starts (issue 24, "say what is happening").

A slow agent (claude, gemini: 2–4 s) used to leave the terminal blank until the banner. Now a
spinner and ``starting NAME…`` are drawn at once, renamed to the agent's own name when it has
answered ``initialize``, and replaced by the banner (or by the error, when the start fails),
leaving nothing of themselves on the screen; piped, nothing of it is written.

Peer: the demo agent behind ``sh -c 'sleep 2; exec …'`` (an agent slow to start); names
before ``initialize`` come from :func:`acpcli.session.agent.starting_name`.
"""

from __future__ import annotations

import shlex
import sys

import pytest

from acpcli.errors import ExitCode
from acpcli.session.agent import AgentChoice, starting_name

from .conftest import AgentTrace, Cli
from .pty import Pty
from .screen import screen_text
from .test_repl_screen import plain


def slow(cmd: str, seconds: float = 2.0) -> str:
    """The agent command ``cmd``, started ``seconds`` late."""
    return shlex.join(["sh", "-c", f'sleep {seconds}; exec "$@"', "slow", *shlex.split(cmd)])


def test_a_slow_agent_start_shows_a_spinner_that_the_banner_replaces(
    spawn, trace: AgentTrace
) -> None:
    pty: Pty = spawn("new", "--cmd", slow(trace.demo_cmd()))
    pty.expect("starting the agent…")  # at once: the agent has not even been started yet
    pty.prompt()
    seen = plain(pty.seen)
    banner = seen.index("session demo-")
    assert seen.index("starting the agent…") < banner, seen
    screen = screen_text(pty.seen)
    assert "starting" not in screen and "session demo-" in screen, screen
    assert pty.leave()[0] == ExitCode.OK
    trace.assert_all_gone()


def test_a_failed_start_leaves_its_error_and_not_the_spinner(spawn, workdir) -> None:
    pty: Pty = spawn(
        "new",
        "--cmd",
        shlex.join([sys.executable, "-c", "import time; time.sleep(1); raise SystemExit(3)"]),
    )
    pty.expect("starting the agent…")
    status = pty.wait()
    screen = screen_text(pty.seen)
    assert status == ExitCode.AGENT_EXITED, screen
    assert "acpcli: error:" in screen and "starting" not in screen, screen


def test_nothing_of_it_when_piped(cli: Cli, trace: AgentTrace) -> None:
    proc = cli.ok("new", "--no-repl", "--cmd", slow(trace.demo_cmd(), 0.5))
    assert "starting" not in proc.stderr, proc.stderr


@pytest.mark.parametrize(
    ("name", "argv", "shown"),
    [
        ("claude", ["npx", "-y", "@zed-industries/claude-agent-acp"], "claude"),
        ("cmd", ["python3", "/opt/harness/launch.py", "claude"], "claude"),
        (
            "cmd",
            ["npx", "-y", "@zed-industries/claude-agent-acp"],
            "@zed-industries/claude-agent-acp",
        ),
        ("cmd", ["/usr/local/bin/gemini", "--acp"], "gemini"),
        ("cmd", ["env", "FOO=1", "node", "agent.js", "--stdio"], "agent.js"),
        ("cmd", ["sh", "-c", "sleep 1; exec my-agent"], "the agent"),
    ],
)
def test_the_name_said_before_the_agent_answers(name: str, argv: list[str], shown: str) -> None:
    assert starting_name(AgentChoice(name, argv)) == shown


LAUNCHER = """\
import os, sys, time
time.sleep(1.5)  # an agent slow to start
os.execv(sys.executable, [sys.executable, "-m", "acpcli.demo_agent", "--delay", "0"])
"""


@pytest.mark.parametrize("keep_alive", ["0", "300"])
def test_a_slow_agent_behind_a_launcher_is_named_while_it_starts_with_a_host_or_without(
    spawn, cli: Cli, workdir, keep_alive: str
) -> None:
    launcher = workdir / "launch.py"
    launcher.write_text(LAUNCHER)
    cmd = shlex.join([sys.executable, str(launcher), "tinyagent", "--home", str(workdir)])
    pty: Pty = spawn("new", "--cmd", cmd, "--keep-alive", keep_alive)
    try:
        pty.expect("starting tinyagent…")  # not a blank screen, and not "launch.py" or "python3"
        pty.prompt()
        seen = plain(pty.seen)
        assert seen.index("starting tinyagent…") < seen.index("session demo-"), seen
        screen = screen_text(pty.seen)
        assert "starting" not in screen and "session demo-" in screen, screen  # the banner replaced it
        pty.child.send("\x04")
        assert pty.wait() == ExitCode.OK
    finally:
        cli.run("stop", "--all")
