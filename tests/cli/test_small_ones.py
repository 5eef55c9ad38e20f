"""The small ones of issue 24's "say what is happening": each says once what it means.

* ``close`` on an agent without ``session/close`` (gemini) says it once, not twice;
  ``/close`` says ``closed ID`` as ``close`` does (not ``the agent answered {}``).
* ``close`` of a session already closed says so and starts no agent.
* ``prompt --session`` (and ``load``/``resume``) on a closed session reopens it, saying so.
* ``--agent cladue`` and a misspelled config key (``permisions``) get a "did you mean";
  an unknown config key is warned about once per command, and ignored.
* A setting value matching several values names them all.
* The lines after the first of a multi-line input are indented under its text.

Peers: the demo agent (``--without close``), ``tests/peers/sdk_models_agent.py``.
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

from acpcli.errors import ExitCode

from .conftest import AgentTrace, Cli, error_line
from .pty import PROMPT, REPLY, Pty, new_args
from .screen import screen_text

MODELS_AGENT = shlex.join(
    [sys.executable, str(Path(__file__).resolve().parent.parent / "peers" / "sdk_models_agent.py")]
)


def test_close_without_the_capability_says_it_once(cli: Cli, trace: AgentTrace) -> None:
    sid = cli.new(trace.demo_cmd(without=["close"]))
    proc = cli.run("close", sid, "--cmd", trace.demo_cmd(without=["close"]))
    error = error_line(proc, ExitCode.CAPABILITY)
    assert "session/close" in error and "marked closed locally" in error
    assert proc.stderr.count("closed locally") == 1, proc.stderr


def test_closing_a_closed_session_says_so_and_starts_no_agent(cli: Cli, trace: AgentTrace) -> None:
    sid = cli.new(trace.demo_cmd())
    first = cli.ok("close", sid)
    assert first.stderr == f"closed {sid}\n", (
        first.stderr
    )  # the demo agent answers {}: nothing to add
    started = len(trace.pids())
    again = cli.ok("close", sid)
    assert again.stderr == f"{sid} is already closed\n", again.stderr
    assert len(trace.pids()) == started  # no agent was started for it
    assert [r["state"] for r in cli.index()] == ["closed"]


def test_prompt_on_a_closed_session_reopens_it_and_says_so(cli: Cli, trace: AgentTrace) -> None:
    sid = cli.new(trace.demo_cmd())
    cli.ok("prompt", "--session", sid, "hello no-permission")
    cli.ok("close", sid)
    proc = cli.ok("prompt", "--session", sid, "again no-permission")
    assert f"acpcli: {sid} was closed: reopened\n" in proc.stderr, proc.stderr
    assert [r["state"] for r in cli.index()] == ["active"]
    again = cli.ok("prompt", "--session", sid, "and again no-permission")
    assert "reopened" not in again.stderr


def test_a_misspelled_agent_gets_a_did_you_mean(cli: Cli) -> None:
    proc = cli.run("prompt", "--agent", "cladue", "hi")
    assert "unknown agent 'cladue' (did you mean 'claude'?)" in error_line(proc, ExitCode.USAGE)


def test_an_unknown_config_key_is_warned_about_once_with_the_nearest_key(
    cli: Cli, trace: AgentTrace
) -> None:
    (cli.home / "config.toml").write_text('permisions = "allow"\ntimeout = 30\n')
    proc = cli.ok("prompt", "--cmd", trace.demo_cmd(), "hello no-permission")
    warning = f"acpcli: warning: {cli.home / 'config.toml'}: unknown key 'permisions' (did you mean 'permissions'?) is ignored"
    assert proc.stderr.count(warning) == 1, proc.stderr


def test_a_value_matching_several_names_them(cli: Cli) -> None:
    proc = cli.run("prompt", "--cmd", MODELS_AGENT, "--model", "gemini", "hi")
    assert proc.returncode == ExitCode.USAGE, proc.stderr
    want = (
        "acpcli: error: 'gemini' matches several values of model: gemini-2.5-pro, gemini-2.5-flash"
    )
    assert want in proc.stderr, proc.stderr  # (after the new session's line)


def test_continuation_lines_are_indented_under_the_first(spawn, trace: AgentTrace) -> None:  # type: ignore[no-untyped-def]
    pty: Pty = spawn(*new_args(trace))
    pty.prompt()
    pty.child.send("first line")
    pty.child.send("\x1b\r")  # Esc then Enter: a newline
    pty.child.send("second line")
    pty.expect("second line")
    screen = screen_text(pty.seen).splitlines()
    assert "› first line" in screen and "  second line" in screen, screen
    pty.child.send(" no-permission\r")
    pty.expect(REPLY)
    pty.expect(PROMPT)
    assert pty.leave()[0] == ExitCode.OK
