"""Today's ACP methods through the real CLI, against an agent written with the official SDK
(``tests/peers/sdk_sessions_agent.py``, which keeps its sessions in a file shared by its
processes): ``sessions rm --remote`` (``session/delete``), ``fork`` (``session/fork``), boolean
config options, and ``$/cancel_request`` for a setup request given up with Ctrl-C."""

from __future__ import annotations

import json
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from acpcli.errors import ExitCode

from .conftest import TIMEOUT, AgentTrace, Cli, error_line
from .screen import screen_text

SESSIONS_AGENT = Path(__file__).resolve().parent.parent / "peers" / "sdk_sessions_agent.py"


@pytest.fixture
def state(tmp_path: Path) -> dict[str, str]:
    """The agent's shared session file, passed through acpcli's environment."""
    return {"SDK_SESSIONS_STATE": str(tmp_path / "agent-sessions.json")}


def agent_cmd(*flags: str) -> str:
    return shlex.join([sys.executable, str(SESSIONS_AGENT), *flags])


def _remote_ids(cli: Cli, cmd: str, state: dict[str, str]) -> list[str]:
    proc = cli.ok("sessions", "--remote", "--cmd", cmd, "--json", env=state)
    return [json.loads(line)["sessionId"] for line in proc.stdout.splitlines() if line.strip()]


def _started(cli: Cli, cmd: str, state: dict[str, str], *prompts: str) -> str:
    sid = cli.ok("new", "--no-repl", "--cmd", cmd, env=state).stdout.strip()
    for text in prompts:
        cli.ok("prompt", "--session", sid, text, env=state)
    return sid


# -- session/delete ----------------------------------------------------------------------------


def test_rm_remote_deletes_on_the_agent_then_here(cli: Cli, trace: AgentTrace, state: dict[str, str]) -> None:
    cmd = agent_cmd("--delete")
    gone = _started(cli, cmd, state, "to be deleted")
    kept = _started(cli, cmd, state, "to be kept")
    assert set(_remote_ids(cli, cmd, state)) == {gone, kept}
    done = cli.ok("sessions", "rm", gone, "--remote", env=state)
    assert done.stdout == ""
    assert done.stderr.splitlines() == [
        f"agent side: sdk-sessions 0.1 deleted {gone} (session/delete)",
        f"local record: deleted {gone}",
    ]
    deletes = trace.requests("session/delete")
    assert [r["params"] for r in deletes] == [{"sessionId": gone}]
    assert _remote_ids(cli, cmd, state) == [kept]  # the agent's own list no longer has it
    assert [r["id"] for r in cli.index()] == [kept]
    trace.assert_all_gone()


def test_rm_remote_is_refused_without_the_capability_and_keeps_the_record(
    cli: Cli, trace: AgentTrace, state: dict[str, str]
) -> None:
    cmd = agent_cmd()  # no sessionCapabilities.delete
    sid = _started(cli, cmd, state, "hello")
    text = error_line(cli.run("sessions", "rm", sid, "--remote", env=state), ExitCode.CAPABILITY)
    assert "does not support session/delete" in text and "sessionCapabilities.delete" in text
    assert f"the local record of {sid} is kept" in text
    assert trace.requests("session/delete") == []  # never sent unadvertised
    assert [r["id"] for r in cli.index()] == [sid]
    assert _remote_ids(cli, cmd, state) == [sid]
    cli.ok("sessions", "rm", sid, env=state)  # local removal alone is still there
    assert cli.index() == []
    trace.assert_all_gone()


def test_agent_options_without_remote_are_a_usage_error(cli: Cli, state: dict[str, str]) -> None:
    sid = _started(cli, agent_cmd(), state)
    assert "--remote" in error_line(cli.run("sessions", "rm", sid, "--timeout", "5"), ExitCode.USAGE)
    assert [r["id"] for r in cli.index()] == [sid]


# -- models and other settings as config options -------------------------------------------------


def test_boolean_options_toggle_from_the_command_line_and_in_the_repl(
    cli: Cli, trace: AgentTrace, state: dict[str, str], spawn, tmp_path: Path  # type: ignore[no-untyped-def]
) -> None:
    cmd = agent_cmd("--boolean")
    said = cli.ok("prompt", "--cmd", cmd, "--set", "brave=true", "hello", env=state).stdout
    assert "brave=True" in said
    sets = [r["params"] for r in trace.requests("session/set_config_option")]
    assert [(p["configId"], p.get("type"), p["value"]) for p in sets] == [("brave", "boolean", True)]
    log = tmp_path / "wire.log"
    pty = spawn("new", "--cmd", cmd, "--log-file", str(log))
    pty.prompt()
    pty.say("/config")
    pty.expect(r"mode\s+Ask\s+mode\s+Mode")  # id, current value, category, name
    pty.expect(r"effort\s+Medium\s+model_config\s+Effort")
    pty.expect(r"brave\s+off\s+-\s+Brave")  # no category
    pty.prompt()
    pty.say("/model")  # the model, and its model_config options near it (the spec's advice)
    pty.expect(r"\* sdk-small")
    pty.child.send("\x1b")  # (the picker of models: Escape keeps it)
    pty.expect(r"Effort \(effort\): Medium — /config effort VALUE")
    pty.prompt()
    pty.say("/config brave true")
    pty.expect(r"Brave: on")
    pty.prompt()
    pty.say("/config brave=false")  # NAME=VALUE, as --set has it
    pty.expect(r"Brave: off")
    pty.prompt()
    pty.say("/config brave maybe")
    pty.expect(r"brave is true or false \(on or off\), not 'maybe'")
    pty.prompt()
    pty.say("hello")
    pty.expect(r"brave=False")
    pty.prompt()
    assert pty.leave()[0] == ExitCode.OK
    frames = [json.loads(line.split(" ", 2)[2]) for line in log.read_text().splitlines() if line.strip()]
    sent = [f["params"] for f in frames if f.get("method") == "session/set_config_option"]
    assert [(p["configId"], p.get("type"), p["value"]) for p in sent] == [
        ("brave", "boolean", True), ("brave", "boolean", False),
    ]


# -- session/fork ------------------------------------------------------------------------------


def _records(cli: Cli) -> dict[str, dict[str, object]]:
    return {r["id"]: r for r in cli.index()}  # type: ignore[misc]


def test_fork_starts_a_session_with_the_conversation_so_far(
    cli: Cli, trace: AgentTrace, state: dict[str, str]
) -> None:
    cmd = agent_cmd("--fork")
    parent = _started(cli, cmd, state, "apple")
    parent_shown = cli.show(parent)
    done = cli.ok("fork", parent, env=state)
    fork = done.stdout.strip()
    assert fork.startswith("ses-") and fork != parent and done.stdout == fork + "\n"
    assert [r["params"] for r in trace.requests("session/fork")] == [
        {"sessionId": parent, "cwd": str(cli.cwd), "mcpServers": []}
    ]
    records = _records(cli)
    assert records[fork]["parent"] == parent and "parent" not in records[parent]
    shown = cli.ok("show", fork)
    assert "apple" in shown.stdout and f"{fork} is a fork of {parent}" in shown.stderr
    said = cli.ok("prompt", "--session", fork, "banana", env=state).stdout
    assert "you said: banana (I remember: apple;" in said  # the agent's fork holds the parent's turns
    assert cli.show(parent) == parent_shown  # the parent is untouched
    assert "banana" in cli.show(fork)
    listed = cli.ok("sessions").stdout.splitlines()
    assert listed[0].endswith("\tSTATE\tPARENT")
    assert next(line for line in listed if line.startswith(fork)).endswith(f"\t{parent}")
    trace.assert_all_gone()


def test_fork_is_refused_without_the_capability(cli: Cli, trace: AgentTrace, state: dict[str, str]) -> None:
    parent = _started(cli, agent_cmd(), state, "apple")
    text = error_line(cli.run("fork", parent, env=state), ExitCode.CAPABILITY)
    assert "does not support session/fork" in text and "sessionCapabilities.fork" in text
    assert trace.requests("session/fork") == []
    assert list(_records(cli)) == [parent]
    assert "no session" in error_line(cli.run("fork", "ses-nope", env=state), ExitCode.SESSION_NOT_FOUND)


def test_a_fork_the_agent_forgot_before_its_first_turn_is_forked_again(
    cli: Cli, trace: AgentTrace, state: dict[str, str]
) -> None:
    cmd = agent_cmd("--fork", "--forgetful")  # like claude: an unprompted session dies with its process
    parent = _started(cli, cmd, state, "apple")
    fork = cli.ok("fork", parent, env=state).stdout.strip()
    proc = cli.ok("prompt", "--session", fork, "banana", env=state)
    assert f"no longer knows session {fork} ({fork} never had a turn): forked {parent} again" in proc.stderr
    assert "you said: banana (I remember: apple;" in proc.stdout
    wire = _records(cli)[parent].get("agentSessionId", parent)  # the agent's id for the parent
    assert [r["params"]["sessionId"] for r in trace.requests("session/fork")] == [wire, wire]
    assert "you said: cherry (I remember: apple, banana;" in cli.ok("prompt", "--session", fork, "cherry", env=state).stdout
    trace.assert_all_gone()


def test_fork_and_slash_fork_on_a_terminal(cli: Cli, state: dict[str, str], spawn, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    for key, value in state.items():
        monkeypatch.setenv(key, value)  # the pty's acpcli passes it on to the agent
    cmd = agent_cmd("--fork")
    parent = _started(cli, cmd, state, "apple")
    pty = spawn("fork", parent)
    pty.expect(rf"session (ses-[0-9a-f]+), a fork of {parent}, with sdk-sessions")  # the banner says it (issue 32)
    fork = pty.child.match.group(1)
    assert fork != parent
    pty.expect(r"you said: apple")  # the conversation so far, drawn before the prompt
    pty.prompt()
    pty.say("banana")
    pty.expect(r"I remember: apple;")
    pty.prompt()
    pty.say("/fork")
    # (the line wraps at words on the terminal: its start is matched, the rest read off the screen)
    pty.expect(rf"forked {fork} as (ses-[0-9a-f]+), with the conversation so far;")
    second = pty.child.match.group(1)
    pty.prompt()
    assert f"this prompt stays on {fork}" in " ".join(screen_text(pty.seen).split())
    assert pty.leave()[0] == ExitCode.OK
    records = _records(cli)
    assert records[fork]["parent"] == parent and records[second]["parent"] == fork
    said = cli.ok("prompt", "--session", second, "cherry", env=state).stdout
    assert "I remember: apple, banana;" in said
    pty = spawn("load", parent, "--cmd", agent_cmd())  # an agent without fork: the capability message
    pty.prompt()
    pty.say("/fork")
    pty.expect(r"/fork: sdk-sessions 0.1 does not support session/fork: it does not advertise")
    pty.prompt()
    assert pty.leave()[0] == ExitCode.OK
    assert len(_records(cli)) == 3


# -- $/cancel_request ----------------------------------------------------------------------------


def test_ctrl_c_during_a_slow_load_cancels_the_request_and_exits_130(
    cli: Cli, trace: AgentTrace, state: dict[str, str]
) -> None:
    cmd = agent_cmd("--slow-load")  # session/load waits for its $/cancel_request, then answers -32800
    made = cli.ok("prompt", "--cmd", cmd, "apple", env=state)
    sid = made.stderr.split("session ", 1)[1].split()[0]
    shown = cli.show(sid)
    trace.record_file.write_text("")  # from here on: the load's process only
    proc = subprocess.Popen(
        cli.argv("load", sid, "--no-repl"), env=cli.env(state), cwd=cli.cwd, stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        deadline = time.monotonic() + TIMEOUT
        while not trace.requests("session/load"):  # the agent holds the load: give up on it
            assert time.monotonic() < deadline and proc.poll() is None, "the load was never sent"
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=TIMEOUT)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == ExitCode.INTERRUPTED, err
    assert out == ""
    assert err == "acpcli: interrupted: gave up waiting for session/load (the agent was asked to cancel it)\n"
    ours = [r for r in trace.requests() if r["request"]]  # our requests, ids 1, 2, … in order
    load_id = [r["method"] for r in ours].index("session/load") + 1
    assert [r["params"] for r in trace.requests("$/cancel_request")] == [{"requestId": load_id}]
    assert cli.show(sid) == shown  # nothing half-stored
    trace.assert_all_gone()
