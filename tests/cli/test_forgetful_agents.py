"""The scripted flow with agents that forget never-prompted sessions (as every real agent does):
``ID=$(acpcli new --no-repl)`` then ``prompt --session ID``, ``--last``, ``load``, ``resume``
and ``close`` all work, each saying so in one stderr line, and the index keeps one session
under the user's id. A session that had turns fails loudly with a true hint. Also: the MCP
servers a session was set up with are sent again on load/resume (references recorded, never
secrets), and an agent's ``error.data`` reaches the user.

Peers: ``tests/peers/sdk_forgetful_agent.py`` (official SDK) in codex style (-32002) and
gemini style (-32603 with ``data.details``), and the SDK record agent for MCP.
"""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import pytest

from acpcli.errors import ExitCode

from .conftest import Cli, error_line

FORGETFUL = Path(__file__).resolve().parent.parent / "peers" / "sdk_forgetful_agent.py"


def forgetful(style: str) -> str:
    return shlex.join([sys.executable, str(FORGETFUL), "--style", style])


@pytest.fixture
def state(tmp_path: Path) -> dict[str, str]:
    """The agent's own session store (what survives between its launches)."""
    return {"FORGETFUL_STATE": str(tmp_path / "forgetful.json")}


def _agent_state(env: dict[str, str]) -> dict[str, dict]:
    path = Path(env["FORGETFUL_STATE"])
    return json.loads(path.read_text()) if path.exists() else {}


def _fresh_notes(stderr: str, sid: str) -> list[str]:
    return [line for line in stderr.splitlines() if f"({sid} never had a turn): started a fresh agent session" in line]


# (command line after `acpcli`, whether it prints the answer) per verb; {id} is the session id
VERBS = {
    "prompt --session": (["prompt", "--session", "{id}", "hello"], True),
    "prompt --last": (["prompt", "--last", "--cmd", "{cmd}", "hello"], True),
    "load": (["load", "{id}", "--no-repl"], False),
    "resume": (["resume", "{id}", "--no-repl"], False),
    "close": (["close", "{id}"], False),
}


@pytest.mark.parametrize(
    ("style", "verb"),
    [("codex", v) for v in VERBS] + [("gemini", v) for v in ("prompt --session", "prompt --last", "load")],
)
def test_every_verb_works_after_new_no_repl(cli: Cli, state: dict[str, str], style: str, verb: str) -> None:
    cmd = forgetful(style)
    sid = cli.ok("new", "--no-repl", "--cmd", cmd, env=state).stdout.strip()
    assert _agent_state(state) == {}  # never prompted: the agent kept nothing
    args, answers = VERBS[verb]
    proc = cli.run(*[a.format(id=sid, cmd=cmd) for a in args], env=state)
    assert proc.returncode == 0, proc.stderr
    if verb == "close":
        assert f"closed {sid}" in proc.stderr and "never had a turn" in proc.stderr
        assert [r["state"] for r in cli.index()] == ["closed"]
        return
    assert len(_fresh_notes(proc.stderr, sid)) == 1, proc.stderr
    if answers:
        assert "you said: hello" in proc.stdout
    rows = cli.index()
    assert len(rows) == 1 and rows[0]["id"] == sid, rows  # one session, under the user's id
    agent_id = rows[0]["agentSessionId"]
    assert agent_id != sid
    if answers:
        assert _agent_state(state)[agent_id]["history"][0] == ["user", "hello"]
        # From now on the agent knows it: no fresh start, no note, same mapping.
        again = cli.run("prompt", "--session", sid, "again", env=state)
        assert again.returncode == 0, again.stderr
        assert _fresh_notes(again.stderr, sid) == []
        assert cli.index()[0]["agentSessionId"] == agent_id
        shown = cli.show(sid)
        assert shown.index("hello") < shown.index("again")


@pytest.mark.parametrize("style", ["codex", "gemini"])
def test_a_session_with_turns_that_the_agent_lost_fails_loudly(cli: Cli, state: dict[str, str], style: str) -> None:
    cmd = forgetful(style)
    sid = cli.ok("new", "--no-repl", "--cmd", cmd, env=state).stdout.strip()
    cli.ok("prompt", "--session", sid, "hello", env=state)
    Path(state["FORGETFUL_STATE"]).unlink()  # the agent loses everything
    proc = cli.run("prompt", "--session", sid, "again", env=state)
    assert proc.returncode == ExitCode.SESSION_NOT_FOUND, proc.stderr
    assert _fresh_notes(proc.stderr, sid) == []  # no silent replacement
    assert "no longer has session" in proc.stderr and f"acpcli show {sid}" in proc.stderr
    if style == "gemini":
        assert "Invalid session identifier" in proc.stderr  # the agent's data is shown
    assert "hello" in cli.show(sid)  # the record is untouched
    assert len(cli.index()) == 1


def test_an_unknown_id_given_with_an_agent_says_it_is_not_recorded(cli: Cli, state: dict[str, str]) -> None:
    proc = cli.run("load", "fg-nothing", "--no-repl", "--cmd", forgetful("codex"), env=state)
    error_line(proc, ExitCode.SESSION_NOT_FOUND)
    assert "not recorded here either" in proc.stderr
    assert cli.index() == []


def test_the_agents_error_data_is_shown(cli: Cli, state: dict[str, str]) -> None:
    proc = cli.run("prompt", "--cmd", forgetful("codex"), "fail", env=state)
    assert proc.returncode == ExitCode.AGENT_ERROR
    [line] = [ln for ln in proc.stderr.splitlines() if ln.startswith("acpcli: error:")]
    assert "session/prompt: Internal error (-32603)" in line
    assert "  the model provider answered 503: overloaded" in proc.stderr.splitlines()


def test_mcp_servers_are_sent_again_on_load_and_resume(cli: Cli, tmp_path: Path) -> None:
    mcp_file = tmp_path / "mcp.json"
    secret = "s3cr3t-token-value"
    mcp_file.write_text(json.dumps({"mcpServers": {"files": {"command": "sh", "args": ["-c", "true"], "env": {"TOKEN": secret}}}}))
    rec = cli.trace.record_cmd("--load", "--resume")
    sid = cli.new(rec, "--mcp-config", str(mcp_file))
    cli.ok("load", sid, "--no-repl")
    cli.ok("resume", sid, "--no-repl")
    cli.ok("resume", sid, "--no-repl", "--no-mcp")
    cli.ok("resume", sid, "--no-repl")  # --no-mcp replaced the recorded servers
    sent = [
        [(s["name"], {e["name"]: e["value"] for e in s.get("env", [])}) for s in r["params"]["mcpServers"]]
        for r in cli.trace.requests()
        if r["method"] in ("session/new", "session/load", "session/resume")
    ]
    files = [("files", {"TOKEN": secret})]
    assert sent == [files, files, files, [], []]
    raw = b"".join(p.read_bytes() for p in cli.home.rglob("*") if p.is_file() and "log" not in p.name)
    assert secret.encode() not in raw  # references only, never the values
    [row] = cli.index()
    assert row["mcpServers"] == []  # --no-mcp cleared them


def test_a_setting_changed_before_any_turn_is_given_to_the_fresh_session(
    spawn, cli: Cli, state: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FORGETFUL_STATE", state["FORGETFUL_STATE"])
    pty = spawn("new", "--cmd", forgetful("codex"))
    pty.prompt()
    pty.say("/model large")
    pty.expect("Model: Large")  # the answer (typed text may never be drawn when keys come fast)
    pty.prompt()
    code, sid = pty.leave()
    assert code == ExitCode.OK
    assert _agent_state(state) == {}  # never prompted: forgotten when the agent exits
    proc = cli.run("prompt", "--session", sid, "hello", env=state)
    assert proc.returncode == 0, proc.stderr
    assert len(_fresh_notes(proc.stderr, sid)) == 1
    agent_id = cli.index()[0]["agentSessionId"]
    entry = _agent_state(state)[agent_id]
    assert entry["settings"] == [["model", "large"]] and entry["model"] == "large"


def test_titles_from_the_agents_list_are_saved_under_the_users_id(cli: Cli, state: dict[str, str]) -> None:
    cmd = forgetful("codex")
    sid = cli.ok("new", "--no-repl", "--cmd", cmd, env=state).stdout.strip()
    cli.ok("prompt", "--session", sid, "hello there", env=state)  # a fresh agent session stands in
    [row] = cli.index()
    assert (row["title"], row["titleSource"]) == ("hello there", "prompt")  # no agent title yet: the prompt's
    listed = cli.ok("sessions", "--remote", "--cmd", cmd, env=state)
    assert "hello there" in listed.stdout
    [row] = cli.index()
    assert (row["id"], row["title"], row["titleSource"]) == (sid, "hello there", "agent")  # matched through the agent's id
