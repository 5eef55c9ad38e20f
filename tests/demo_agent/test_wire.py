"""The demo agent, driven as a real subprocess with raw JSON lines (v1 and v2).

The helper below is deliberately tiny and synchronous: write a request, read lines until its
response, collecting notifications and answering the agent's own requests. A reader thread
feeds a queue only so that a broken agent fails a test with a timeout instead of hanging it.
"""

from __future__ import annotations

import asyncio
import json
import os
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

TIMEOUT = 20.0  # per message; a guard against hangs, never reached when things work
KINDS4 = {"allow_once", "allow_always", "reject_once", "reject_always"}
WHOLE = {"user_message", "agent_message", "agent_thought"}
CHUNKS = {f"{k}_chunk": k for k in WHOLE}
HOLD = object()  # a handler result meaning "do not answer (yet)"


# -- the helper ------------------------------------------------------------------------------------


class Agent:
    """``python -m acpcli.demo_agent`` with pipes, and a synchronous JSON-RPC client for it."""

    def __init__(self, *args: str, delay: bool = False) -> None:
        cmd = [sys.executable, "-m", "acpcli.demo_agent", *([] if delay else ["--delay", "0"]), *args]
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self._setup()

    def _setup(self) -> None:
        """Start the reader threads of ``self.proc`` (subclasses start other programs)."""
        self._lines: queue.Queue[bytes] = queue.Queue()
        self._stderr: list[str] = []
        threading.Thread(target=self._pump, args=(self.proc.stdout, self._lines.put), daemon=True).start()
        threading.Thread(
            target=self._pump, args=(self.proc.stderr, lambda b: self._stderr.append(b.decode())), daemon=True
        ).start()
        self._next_id = 0
        self.permission: str = "allow-once"  # optionId to choose, or "cancelled"
        self.handlers: dict[str, Callable[[dict[str, Any]], Any]] = {}
        self.agent_requests: list[dict[str, Any]] = []

    @staticmethod
    def _pump(stream: Any, put: Callable[[bytes], None]) -> None:
        for line in stream:
            put(line)
        put(b"")

    @property
    def stderr(self) -> str:
        return "".join(self._stderr)

    def send(self, msg: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write((json.dumps(msg) + "\n").encode())
        self.proc.stdin.flush()

    def notify(self, method: str, params: dict[str, Any]) -> None:
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def recv(self) -> dict[str, Any] | None:
        """The next message, answering agent→client requests on the way; None at end of output."""
        try:
            line = self._lines.get(timeout=TIMEOUT)
        except queue.Empty:
            raise AssertionError(f"no message from the agent within {TIMEOUT}s; stderr:\n{self.stderr}") from None
        if not line:
            return None
        msg = json.loads(line)
        if "method" in msg and "id" in msg:
            self.agent_requests.append(msg)
            self._answer(msg)
        return msg

    def _answer(self, msg: dict[str, Any]) -> None:
        method = msg["method"]
        if method == "session/request_permission" and method not in self.handlers:
            outcome = (
                {"outcome": "cancelled"}
                if self.permission == "cancelled"
                else {"outcome": "selected", "optionId": self.permission}
            )
            self.send({"jsonrpc": "2.0", "id": msg["id"], "result": {"outcome": outcome}})
        elif method in self.handlers:
            result = self.handlers[method](msg["params"])
            if result is not HOLD:
                self.send({"jsonrpc": "2.0", "id": msg["id"], "result": result})
        else:
            self.send({"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32601, "message": "no"}})

    def request(self, method: str, params: dict[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """Send a request; return its response and every other message received before it."""
        self._next_id += 1
        req_id = self._next_id
        self.send({"jsonrpc": "2.0", "id": req_id, "method": method, "params": params})
        seen = []
        while True:
            msg = self.recv()
            assert msg is not None, f"agent exited before answering {method}; stderr:\n{self.stderr}"
            if msg.get("id") == req_id and "method" not in msg:
                return msg, seen
            seen.append(msg)

    def until(self, done: Callable[[dict[str, Any]], bool]) -> list[dict[str, Any]]:
        """Messages up to and including the first for which ``done`` is true."""
        seen = []
        while True:
            msg = self.recv()
            assert msg is not None, f"agent exited early; stderr:\n{self.stderr}"
            seen.append(msg)
            if done(msg):
                return seen

    def close(self) -> int:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        return self.proc.wait(timeout=TIMEOUT)

    # -- conveniences ----------------------------------------------------------------------------

    def initialize(self, version: int = 2, **client_caps: Any) -> dict[str, Any]:
        params: dict[str, Any] = {"protocolVersion": version, "info": {"name": "test", "version": "0"},
                                  "clientInfo": {"name": "test", "version": "0"}}
        if client_caps:
            params["clientCapabilities"] = client_caps
        resp, _ = self.request("initialize", params)
        return resp["result"]

    def new_session(self, cwd: str, **extra: Any) -> str:
        """session/new, then the available_commands_update that follows its answer."""
        resp, _ = self.request("session/new", {"cwd": cwd, "mcpServers": [], **extra})  # extra may override
        assert "result" in resp, resp
        self.until(lambda m: _update(m).get("sessionUpdate") == "available_commands_update")
        return resp["result"]["sessionId"]

    def prompt(self, sid: str, text: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """A whole turn: (v1 response or v2 idle update, every message of the turn in order)."""
        resp, seen = self.request("session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": text}]})
        if resp.get("result") == {} and "error" not in resp:  # v2: an acknowledgement; wait for idle
            assert seen == [], "v2 acknowledges the prompt before any update of the turn"
            seen = self.until(lambda m: _update(m).get("state") == "idle")
            return seen[-1], seen
        return resp, seen


def stop_all(agents: list[Agent]) -> None:
    """Kill every agent still alive and close its pipes (fixture teardown)."""
    for agent in agents:
        if agent.proc.poll() is None:
            agent.proc.kill()
            agent.proc.wait()
        for stream in (agent.proc.stdin, agent.proc.stdout, agent.proc.stderr):
            if stream is not None:
                stream.close()


@pytest.fixture
def spawn() -> Any:
    agents: list[Agent] = []

    def make(*args: str, **kw: Any) -> Agent:
        agent = Agent(*args, **kw)
        agents.append(agent)
        return agent

    yield make
    stop_all(agents)


def _update(msg: dict[str, Any]) -> dict[str, Any]:
    if msg.get("method") == "session/update":
        return msg["params"]["update"]
    return {}


def updates(msgs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [_update(m) for m in msgs if m.get("method") == "session/update"]


def labels(msgs: list[dict[str, Any]]) -> list[str]:
    """A readable trace: update kinds (with state / tool status) and agent request methods."""
    out = []
    for m in msgs:
        u = _update(m)
        if not u:
            out.append(m.get("method", "response"))
        elif u["sessionUpdate"] == "state_update":
            out.append(f"state:{u['state']}")
        elif u["sessionUpdate"] in ("tool_call", "tool_call_update") and u.get("status"):
            out.append(f"{u['sessionUpdate']}:{u['status']}")
        else:
            out.append(u["sessionUpdate"])
    return out


def _text(block: Any) -> str:
    return block.get("text", "") if isinstance(block, dict) else ""


def reduce_messages(ups: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """A tiny reference reducer: (kind, text) per message, in order of first appearance.

    The seed's rules: keyed by messageId, a whole update replaces, a chunk appends. A chunk
    without messageId (v1) continues the current message only if nothing else came between.
    """
    messages: dict[Any, list[str]] = {}
    current: tuple[Any, str] | None = None
    for u in ups:
        kind = u.get("sessionUpdate")
        if kind not in WHOLE and kind not in CHUNKS:
            current = None
            continue
        base = CHUNKS.get(kind, kind)
        key = u.get("messageId")
        if key is None:
            key = current[0] if current is not None and current[1] == base else ("anonymous", len(messages))
        entry = messages.setdefault(key, [base, ""])
        if kind in CHUNKS:
            entry[1] += _text(u["content"])
        elif "content" in u:
            entry[1] = "".join(_text(b) for b in u["content"] or [])
        current = (key, base)
    return [(kind, text) for kind, text in messages.values()]


# -- initialize ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("flags", "offered", "expected"),
    [((), 2, 2), ((), 1, 1), ((), 7, 2), (("--protocol", "1"), 2, 1), (("--protocol", "2"), 2, 2)],
)
def test_initialize_negotiates_the_lower_version(spawn: Any, flags: tuple[str, ...], offered: int, expected: int) -> None:
    result = spawn(*flags).initialize(offered)
    assert result["protocolVersion"] == expected
    assert result["authMethods"] == []


def test_initialize_v2_shape(spawn: Any) -> None:
    result = spawn().initialize(2)
    session = result["capabilities"]["session"]
    for marker in ("load", "resume", "close", "list", "additionalDirectories"):
        assert session[marker] == {}
    assert session["mcp"] == {"stdio": {}, "http": {}}
    assert result["info"]["name"] == "acpcli-demo-agent" and result["info"]["version"]
    assert "agentCapabilities" not in result


def test_initialize_v1_shape(spawn: Any) -> None:
    result = spawn("--protocol", "1").initialize(2)
    caps = result["agentCapabilities"]
    assert caps["loadSession"] is True
    assert caps["promptCapabilities"] == {"image": False, "audio": False, "embeddedContext": True}
    assert caps["mcpCapabilities"]["http"] is True
    assert caps["sessionCapabilities"] == {"resume": {}, "close": {}, "list": {}, "additionalDirectories": {}}
    assert result["agentInfo"]["name"] == "acpcli-demo-agent"
    assert "capabilities" not in result


# -- withheld capabilities -------------------------------------------------------------------------


@pytest.mark.parametrize("version", [1, 2])
@pytest.mark.parametrize(
    ("feature", "method", "v2_marker", "v1_absent"),
    [
        ("load", "session/load", "load", lambda c: c["loadSession"] is False),
        ("resume", "session/resume", "resume", lambda c: "resume" not in c["sessionCapabilities"]),
        ("close", "session/close", "close", lambda c: "close" not in c["sessionCapabilities"]),
        ("list", "session/list", "list", lambda c: "list" not in c["sessionCapabilities"]),
    ],
)
def test_withheld_method_is_refused_and_logged(
    spawn: Any, tmp_path: Path, version: int, feature: str, method: str, v2_marker: str, v1_absent: Any
) -> None:
    agent = spawn("--without", feature)
    result = agent.initialize(version)
    if version == 2:
        assert v2_marker not in result["capabilities"]["session"]
    else:
        assert v1_absent(result["agentCapabilities"])
    sid = agent.new_session(str(tmp_path))
    resp, _ = agent.request(method, {"sessionId": sid, "cwd": str(tmp_path), "mcpServers": []})
    assert resp["error"]["code"] == -32601
    assert agent.close() == 0
    assert f"UNADVERTISED METHOD CALLED: {method}" in agent.stderr


def test_unknown_method_is_refused_and_logged(spawn: Any) -> None:
    agent = spawn()
    agent.initialize(2)
    resp, _ = agent.request("session/set_mode", {"sessionId": "x", "modeId": "y"})
    assert resp["error"]["code"] == -32601
    agent.close()
    assert "UNADVERTISED METHOD CALLED: session/set_mode" in agent.stderr


@pytest.mark.parametrize("version", [1, 2])
def test_withheld_additional_directories_are_refused_and_logged(spawn: Any, tmp_path: Path, version: int) -> None:
    agent = spawn("--without", "additional-directories")
    caps = agent.initialize(version)
    session_caps = caps["capabilities"]["session"] if version == 2 else caps["agentCapabilities"]["sessionCapabilities"]
    assert "additionalDirectories" not in session_caps
    resp, _ = agent.request("session/new", {"cwd": str(tmp_path), "mcpServers": [], "additionalDirectories": ["/x"]})
    assert "error" in resp
    agent.close()
    assert "UNADVERTISED FIELD SENT: additionalDirectories in session/new" in agent.stderr


def test_withheld_mcp_transports(spawn: Any, tmp_path: Path) -> None:
    agent = spawn("--without", "mcp-http", "--without", "mcp-stdio")
    assert agent.initialize(2)["capabilities"]["session"]["mcp"] == {}
    http = {"type": "http", "name": "h", "url": "http://127.0.0.1:9/mcp", "headers": []}
    stdio = {"type": "stdio", "name": "s", "command": "/bin/true", "args": [], "env": []}
    for server in (http, stdio):
        resp, _ = agent.request("session/new", {"cwd": str(tmp_path), "mcpServers": [server]})
        assert "error" in resp
    agent.close()
    assert "UNADVERTISED FIELD SENT: mcpServers[0] of type http in session/new" in agent.stderr
    assert "UNADVERTISED FIELD SENT: mcpServers[0] of type stdio in session/new" in agent.stderr


# -- a prompt turn ---------------------------------------------------------------------------------


def _index(trace: list[str], label: str, start: int = 0) -> int:
    assert label in trace[start:], f"{label} missing after position {start} in {trace}"
    return trace.index(label, start)


def test_v2_turn_order_and_shapes(spawn: Any, tmp_path: Path) -> None:
    agent = spawn()
    agent.initialize(2)
    resp, seen = agent.request("session/new", {"cwd": str(tmp_path), "mcpServers": []})
    sid = resp["result"]["sessionId"]
    assert sid.startswith("demo-") and seen == []
    cmds = agent.until(lambda m: _update(m).get("sessionUpdate") == "available_commands_update")
    assert _update(cmds[-1])["availableCommands"]

    final, msgs = agent.prompt(sid, "Please tidy the README")
    trace = labels(msgs)
    assert _update(final) == {"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"}
    assert trace[:2] == ["user_message", "state:running"]
    i = _index(trace, "agent_thought_chunk")
    i = _index(trace, "plan_update", i)
    i = _index(trace, "tool_call_update:pending", i)
    i = _index(trace, "state:requires_action", i)
    i = _index(trace, "session/request_permission", i)
    i = _index(trace, "state:running", i)
    i = _index(trace, "tool_call_update:in_progress", i)
    i = _index(trace, "tool_call_update:completed", i)
    i = _index(trace, "agent_message_chunk", i)
    i = _index(trace, "usage_update", i)
    i = _index(trace, "session_info_update", i)
    assert trace[-1] == "state:idle" and "tool_call" not in trace and "plan" not in trace

    ups = updates(msgs)
    user = ups[0]
    assert user["messageId"] and user["content"] == [{"type": "text", "text": "Please tidy the README"}]
    for u in ups:
        if u["sessionUpdate"] in CHUNKS:
            assert u["messageId"], u
    pending = next(u for u in ups if u.get("status") == "pending")
    diff = pending["content"][0]
    assert diff["type"] == "diff" and diff["path"].startswith(str(tmp_path)) and diff["newText"]
    permission = next(m for m in msgs if m.get("method") == "session/request_permission")
    assert {o["kind"] for o in permission["params"]["options"]} == KINDS4
    assert permission["params"]["toolCall"]["toolCallId"] == pending["toolCallId"]
    plans = [u["plan"] for u in ups if u["sessionUpdate"] == "plan_update"]
    assert plans[0]["type"] == "items" and plans[0]["planId"] and {p["planId"] for p in plans} == {plans[0]["planId"]}
    assert any(e["status"] == "in_progress" for e in plans[0]["entries"])
    assert all(e["status"] == "completed" for e in plans[-1]["entries"])
    answer = "".join(_text(u["content"]) for u in ups if u["sessionUpdate"] == "agent_message_chunk")
    assert answer.startswith("## ") and "\n- " in answer and "\n```python\n" in answer
    assert "Please tidy the README" in answer
    usage = next(u for u in ups if u["sessionUpdate"] == "usage_update")
    assert usage["used"] > 0 and usage["size"] > 0 and usage["cost"]["currency"] == "USD"
    title = next(u for u in ups if u["sessionUpdate"] == "session_info_update")
    assert title["title"] == "Please tidy the README"

    # The title is sent after the first turn only.
    _, msgs2 = agent.prompt(sid, "again")
    assert "session_info_update" not in labels(msgs2)
    assert agent.close() == 0


@pytest.mark.parametrize("ids", [False, True])
def test_v1_turn_order_and_shapes(spawn: Any, tmp_path: Path, ids: bool) -> None:
    agent = spawn("--protocol", "1", *(["--v1-message-ids"] if ids else []))
    agent.initialize(2)
    sid = agent.new_session(str(tmp_path))
    resp, msgs = agent.prompt(sid, "hello v1")
    assert resp["result"] == {"stopReason": "end_turn"}
    trace = labels(msgs)
    i = _index(trace, "agent_thought_chunk")
    i = _index(trace, "plan", i)
    i = _index(trace, "tool_call:pending", i)
    i = _index(trace, "session/request_permission", i)
    i = _index(trace, "tool_call_update:in_progress", i)
    i = _index(trace, "tool_call_update:completed", i)
    i = _index(trace, "agent_message_chunk", i)
    _index(trace, "session_info_update", _index(trace, "usage_update", i))
    # No v2-only updates, no echo of the prompt in v1.
    assert not {"state_update", "user_message", "user_message_chunk", "plan_update", "tool_call_content_chunk"} & {
        u["sessionUpdate"] for u in updates(msgs)
    }
    chunks = [u for u in updates(msgs) if u["sessionUpdate"] in CHUNKS]
    assert all(("messageId" in u) == ids for u in chunks)
    tool = next(u for u in updates(msgs) if u["sessionUpdate"] == "tool_call")
    assert tool["title"] and tool["kind"] == "edit" and tool["content"][0]["type"] == "diff"
    assert agent.close() == 0


@pytest.mark.parametrize("version", [1, 2])
@pytest.mark.parametrize(("choice", "status"), [("allow-once", "completed"), ("reject-once", "failed")])
def test_permission_answer_is_honoured(spawn: Any, tmp_path: Path, version: int, choice: str, status: str) -> None:
    agent = spawn()
    agent.initialize(version)
    sid = agent.new_session(str(tmp_path))
    agent.permission = choice
    _, msgs = agent.prompt(sid, "edit something")
    finals = [u["status"] for u in updates(msgs) if u.get("toolCallId", "").startswith("edit-") and u.get("status")]
    assert finals[-1] == status
    assert finals.count("in_progress") == (1 if status == "completed" else 0)
    answer = "".join(_text(u["content"]) for u in updates(msgs) if u["sessionUpdate"] == "agent_message_chunk")
    assert ("rejected" in answer) == (status == "failed")


def test_always_choices_are_remembered(spawn: Any, tmp_path: Path) -> None:
    agent = spawn()
    agent.initialize(2)
    sid = agent.new_session(str(tmp_path))
    agent.permission = "reject-always"
    agent.prompt(sid, "first")
    asked = len(agent.agent_requests)
    _, msgs = agent.prompt(sid, "second")
    assert len(agent.agent_requests) == asked, "not asked again after reject_always"
    statuses = [u["status"] for u in updates(msgs) if u.get("status")]
    assert statuses[-1] == "failed"


def test_no_permission_keyword_skips_the_request(spawn: Any, tmp_path: Path) -> None:
    agent = spawn()
    agent.initialize(1)
    sid = agent.new_session(str(tmp_path))
    resp, msgs = agent.prompt(sid, "just do it, no-permission")
    assert resp["result"]["stopReason"] == "end_turn"
    assert "session/request_permission" not in labels(msgs)
    assert "tool_call_update:completed" in labels(msgs)


@pytest.mark.parametrize("version", [1, 2])
@pytest.mark.parametrize(("text", "reason"), [("please refuse", "refusal"), ("hit max tokens", "max_tokens")])
def test_stop_reason_keywords(spawn: Any, tmp_path: Path, version: int, text: str, reason: str) -> None:
    agent = spawn()
    agent.initialize(version)
    sid = agent.new_session(str(tmp_path))
    final, _ = agent.prompt(sid, text)
    got = final["result"]["stopReason"] if version == 1 else _update(final)["stopReason"]
    assert got == reason


# -- cancellation ----------------------------------------------------------------------------------


@pytest.mark.parametrize("version", [1, 2])
def test_cancel_while_streaming(spawn: Any, tmp_path: Path, version: int) -> None:
    agent = spawn()
    agent.initialize(version)
    sid = agent.new_session(str(tmp_path))
    agent.send({"jsonrpc": "2.0", "id": 99, "method": "session/prompt",
                "params": {"sessionId": sid, "prompt": [{"type": "text", "text": "be slow please"}]}})
    agent.until(lambda m: _update(m).get("sessionUpdate") == "agent_message_chunk")
    agent.notify("session/cancel", {"sessionId": sid})
    if version == 1:
        rest = agent.until(lambda m: m.get("id") == 99 and "method" not in m)
        assert rest[-1]["result"] == {"stopReason": "cancelled"}
    else:
        rest = agent.until(lambda m: _update(m).get("state") == "idle")
        assert _update(rest[-1])["stopReason"] == "cancelled"
    streamed = "".join(_text(u["content"]) for u in updates(rest) if u["sessionUpdate"] == "agent_message_chunk")
    assert "line 400 of 400" not in streamed, "the slow answer stopped early"
    # The session stays usable.
    final, _ = agent.prompt(sid, "and now quickly")
    assert (final["result"]["stopReason"] if version == 1 else _update(final)["stopReason"]) == "end_turn"
    assert agent.close() == 0


@pytest.mark.parametrize("version", [1, 2])
def test_cancel_while_permission_is_pending(spawn: Any, tmp_path: Path, version: int) -> None:
    agent = spawn()
    agent.initialize(version)
    sid = agent.new_session(str(tmp_path))
    # Hold the permission request unanswered: cancel first, answer "cancelled" afterwards.
    agent.handlers["session/request_permission"] = lambda params: HOLD
    agent.send({"jsonrpc": "2.0", "id": 99, "method": "session/prompt",
                "params": {"sessionId": sid, "prompt": [{"type": "text", "text": "edit"}]}})
    msg = agent.until(lambda m: m.get("method") == "session/request_permission")[-1]
    agent.notify("session/cancel", {"sessionId": sid})
    if version == 1:
        rest = agent.until(lambda m: m.get("id") == 99 and "method" not in m)
        assert rest[-1]["result"] == {"stopReason": "cancelled"}
    else:
        rest = agent.until(lambda m: _update(m).get("state") == "idle")
        assert _update(rest[-1])["stopReason"] == "cancelled"
    statuses = [u["status"] for u in updates(rest) if u.get("status")]
    assert statuses and statuses[-1] == "failed"
    # The client's late "cancelled" answer is accepted quietly.
    agent.send({"jsonrpc": "2.0", "id": msg["id"], "result": {"outcome": {"outcome": "cancelled"}}})
    assert agent.close() == 0


def test_close_cancels_the_running_turn(spawn: Any, tmp_path: Path) -> None:
    agent = spawn("--protocol", "1")
    agent.initialize(1)
    sid = agent.new_session(str(tmp_path))
    agent.send({"jsonrpc": "2.0", "id": 99, "method": "session/prompt",
                "params": {"sessionId": sid, "prompt": [{"type": "text", "text": "slow"}]}})
    agent.until(lambda m: _update(m).get("sessionUpdate") == "agent_message_chunk")
    resp, before = agent.request("session/close", {"sessionId": sid})
    assert resp["result"] == {}
    prompt_answers = [m for m in before if m.get("id") == 99 and "method" not in m]
    assert prompt_answers and prompt_answers[0]["result"] == {"stopReason": "cancelled"}
    resp, _ = agent.request("session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "hi"}]})
    assert "error" in resp, "a closed session takes no prompts"
    assert agent.close() == 0


def test_stdin_eof_mid_turn_exits_cleanly(spawn: Any, tmp_path: Path) -> None:
    agent = spawn()
    agent.initialize(2)
    sid = agent.new_session(str(tmp_path))
    agent.send({"jsonrpc": "2.0", "id": 99, "method": "session/prompt",
                "params": {"sessionId": sid, "prompt": [{"type": "text", "text": "slow"}]}})
    agent.until(lambda m: _update(m).get("sessionUpdate") == "agent_message_chunk")
    assert agent.close() == 0


def test_crash_keyword(spawn: Any, tmp_path: Path) -> None:
    agent = spawn()
    agent.initialize(1)
    sid = agent.new_session(str(tmp_path))
    agent.send({"jsonrpc": "2.0", "id": 99, "method": "session/prompt",
                "params": {"sessionId": sid, "prompt": [{"type": "text", "text": "crash now"}]}})
    seen = []
    while (msg := agent.recv()) is not None:
        seen.append(msg)
    assert not any(m.get("id") == 99 for m in seen), "no answer to the prompt"
    assert "agent_thought_chunk" in labels(seen), "it crashed mid-turn, after streaming"
    assert agent.proc.wait(timeout=TIMEOUT) == 3
    assert "crash" in agent.stderr


# -- client methods (v1) ---------------------------------------------------------------------------


def test_read_write_run_keywords_use_client_methods(spawn: Any, tmp_path: Path) -> None:
    agent = spawn()
    agent.initialize(1, fs={"readTextFile": True, "writeTextFile": True}, terminal=True)
    sid = agent.new_session(str(tmp_path))
    written: dict[str, str] = {}
    agent.handlers.update({
        "fs/read_text_file": lambda p: {"content": f"contents of {p['path']}\n"},
        "fs/write_text_file": lambda p: written.update({p["path"]: p["content"]}),
        "terminal/create": lambda p: {"terminalId": "t1"},
        "terminal/wait_for_exit": lambda p: {"exitCode": 0, "signal": None},
        "terminal/output": lambda p: {"output": "hi from the terminal\n", "truncated": False},
        "terminal/release": lambda p: {},
    })
    resp, msgs = agent.prompt(sid, "read notes.txt and write out.txt\nrun echo 'hi there'")
    assert resp["result"]["stopReason"] == "end_turn"
    methods = [r["method"] for r in agent.agent_requests]
    assert methods == ["fs/read_text_file", "session/request_permission", "fs/write_text_file", "terminal/create",
                       "terminal/wait_for_exit", "terminal/output", "terminal/release"]
    assert agent.agent_requests[0]["params"]["path"] == str(tmp_path / "notes.txt")
    assert list(written) == [str(tmp_path / "out.txt")]
    create = agent.agent_requests[3]["params"]
    assert (create["command"], create["args"], create["cwd"]) == ("echo", ["hi there"], str(tmp_path))
    answer = "".join(_text(u["content"]) for u in updates(msgs) if u["sessionUpdate"] == "agent_message_chunk")
    assert f"contents of {tmp_path / 'notes.txt'}" in answer and "hi from the terminal" in answer
    tools = [u for u in updates(msgs) if u["sessionUpdate"] in ("tool_call", "tool_call_update")]
    terminal_tool = [u for u in tools if any(c.get("type") == "terminal" for c in u.get("content") or [])]
    assert terminal_tool and terminal_tool[0]["content"] == [{"type": "terminal", "terminalId": "t1"}]


def test_client_methods_are_not_called_unless_advertised(spawn: Any, tmp_path: Path) -> None:
    agent = spawn()
    agent.initialize(1)  # no clientCapabilities
    sid = agent.new_session(str(tmp_path))
    resp, msgs = agent.prompt(sid, "read a.txt, write b.txt, run ls")
    assert resp["result"]["stopReason"] == "end_turn"
    assert [r["method"] for r in agent.agent_requests] == ["session/request_permission"]
    answer = "".join(_text(u["content"]) for u in updates(msgs) if u["sessionUpdate"] == "agent_message_chunk")
    assert "did not advertise fs.readTextFile" in answer and "did not advertise terminal" in answer


def test_form_keyword_asks_for_input_only_when_the_client_offers_it(spawn: Any, tmp_path: Path) -> None:
    agent = spawn()
    agent.initialize(1, elicitation={"form": {}, "url": {}})
    sid = agent.new_session(str(tmp_path))
    agent.handlers["elicitation/create"] = lambda p: {
        "action": "accept", "content": {"name": "Ada", "drink": "tea", "cups": 2, "sugar": False},
    }
    resp, msgs = agent.prompt(sid, "form")
    assert resp["result"]["stopReason"] == "end_turn"
    (asked,) = agent.agent_requests
    assert asked["method"] == "elicitation/create" and asked["params"]["mode"] == "form"
    assert asked["params"]["sessionId"] == sid and asked["params"]["requestedSchema"]["required"] == ["name", "drink"]
    answer = "".join(_text(u["content"]) for u in updates(msgs) if u["sessionUpdate"] == "agent_message_chunk")
    assert "Order taken: 2 × tea for Ada, no sugar." in answer
    agent.close()
    for caps in ({}, {"elicitation": {}}, {"elicitation": {"url": {}}}):  # form not advertised: never asked
        agent = spawn()
        agent.initialize(1, **caps)
        sid = agent.new_session(str(tmp_path))
        resp, msgs = agent.prompt(sid, "form")
        assert agent.agent_requests == []
        answer = "".join(_text(u["content"]) for u in updates(msgs) if u["sessionUpdate"] == "agent_message_chunk")
        assert "did not advertise elicitation.form" in answer
        agent.close()


# -- persistence -----------------------------------------------------------------------------------


def test_session_file_and_no_secrets(spawn: Any, tmp_path: Path, acpcli_home: Path) -> None:
    agent = spawn()
    agent.initialize(2)
    servers = [
        {"type": "stdio", "name": "tools", "command": "/bin/true", "args": [], "env": [{"name": "K", "value": "s3cr3t"}]},
        {"type": "http", "name": "web", "url": "http://127.0.0.1:9/", "headers": [{"name": "A", "value": "t0ken"}]},
    ]
    sid = agent.new_session(str(tmp_path), mcpServers=servers, additionalDirectories=[str(tmp_path / "extra")])
    agent.prompt(sid, "hello")
    agent.close()
    path = acpcli_home / "demo-agent" / "sessions" / f"{sid}.json"
    raw = path.read_text()
    assert "s3cr3t" not in raw and "t0ken" not in raw and "/bin/true" not in raw
    data = json.loads(raw)
    assert data["cwd"] == str(tmp_path) and data["mcpServers"] == ["tools", "web"]
    assert data["additionalDirectories"] == [str(tmp_path / "extra")]
    assert data["title"] == "hello" and data["createdAt"] and data["updatedAt"]
    kinds = [u["sessionUpdate"] for u in data["history"]]
    assert kinds[0] == "available_commands_update" and kinds[1] == "user_message" and kinds[-1] == "state_update"


def test_state_dir_flag(spawn: Any, tmp_path: Path, acpcli_home: Path) -> None:
    state = tmp_path / "state"
    agent = spawn("--state-dir", str(state))
    agent.initialize(2)
    sid = agent.new_session(str(tmp_path))
    agent.close()
    assert (state / "sessions" / f"{sid}.json").is_file()
    assert not (acpcli_home / "demo-agent").exists()


@pytest.mark.parametrize("version", [1, 2])
def test_load_in_a_new_process_replays_the_conversation(spawn: Any, tmp_path: Path, version: int) -> None:
    first = spawn("--protocol", str(version))
    first.initialize(version)
    sid = first.new_session(str(tmp_path))
    _, msgs1 = first.prompt(sid, "first question")
    _, msgs2 = first.prompt(sid, "second question")
    assert first.close() == 0

    second = spawn("--protocol", str(version))
    second.initialize(version)
    resp, replayed = second.request("session/load", {"sessionId": sid, "cwd": str(tmp_path), "mcpServers": []})
    # The load answer carries the session's settings (v1: modes too); nothing else.
    assert set(resp["result"]) == ({"modes", "configOptions"} if version == 1 else {"configOptions"})
    got = reduce_messages(updates(replayed))
    live = reduce_messages(updates(msgs1) + updates(msgs2))
    if version == 1:  # v1 does not echo prompts live, but they are replayed
        assert [m for m in got if m[0] != "user_message"] == live
        assert [m for m in got if m[0] == "user_message"] == [("user_message", "first question"),
                                                            ("user_message", "second question")]
    else:
        assert got == live
        live_ids = [u["messageId"] for u in updates(msgs1 + msgs2) if u["sessionUpdate"] in WHOLE | set(CHUNKS)]
        got_ids = [u["messageId"] for u in updates(replayed) if u["sessionUpdate"] in WHOLE | set(CHUNKS)]
        assert list(dict.fromkeys(got_ids)) == list(dict.fromkeys(live_ids))
    kinds = {u["sessionUpdate"] for u in updates(replayed)}
    assert not kinds & {"state_update", "usage_update", "available_commands_update"}
    assert ("tool_call" if version == 1 else "tool_call_update") in kinds
    # The loaded session takes prompts.
    final, _ = second.prompt(sid, "third")
    assert (final["result"]["stopReason"] if version == 1 else _update(final)["stopReason"]) == "end_turn"
    assert second.close() == 0


def test_resume_does_not_replay_and_checks_cwd(spawn: Any, tmp_path: Path) -> None:
    first = spawn()
    first.initialize(2)
    sid = first.new_session(str(tmp_path))
    first.prompt(sid, "hello")
    first.close()

    second = spawn()
    second.initialize(2)
    resp, before = second.request("session/resume", {"sessionId": sid, "cwd": str(tmp_path), "mcpServers": []})
    assert set(resp["result"]) == {"configOptions"} and before == []
    resp, _ = second.request("session/load", {"sessionId": sid, "cwd": str(tmp_path / "elsewhere"), "mcpServers": []})
    assert resp["error"]["code"] == -32602
    resp, _ = second.request("session/load", {"sessionId": "demo-" + "0" * 32, "cwd": str(tmp_path), "mcpServers": []})
    assert resp["error"]["code"] == -32002
    final, _ = second.prompt(sid, "resumed")
    assert _update(final)["stopReason"] == "end_turn"
    second.close()


def test_prompt_needs_an_active_session(spawn: Any, tmp_path: Path) -> None:
    first = spawn()
    first.initialize(2)
    sid = first.new_session(str(tmp_path))
    first.close()
    second = spawn()
    second.initialize(2)
    resp, _ = second.request("session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "x"}]})
    assert resp["error"]["code"] == -32002


def test_list_paging_and_cwd_filter(spawn: Any, tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    maker = spawn()
    maker.initialize(2)
    in_a = [maker.new_session(str(a)) for _ in range(5)]
    in_b = maker.new_session(str(b))
    maker.close()

    lister = spawn("--page-size", "2")
    lister.initialize(2)
    seen: list[str] = []
    cursor = None
    pages = 0
    while True:
        params = {"cwd": str(a), **({"cursor": cursor} if cursor else {})}
        resp, _ = lister.request("session/list", params)
        result = resp["result"]
        assert len(result["sessions"]) <= 2
        seen += [s["sessionId"] for s in result["sessions"]]
        assert all(s["cwd"] == str(a) for s in result["sessions"])
        pages += 1
        cursor = result.get("nextCursor")
        if not cursor:
            break
    assert pages == 3 and sorted(seen) == sorted(in_a) and len(set(seen)) == 5
    assert seen == list(reversed(in_a)), "most recently updated first"
    resp, _ = lister.request("session/list", {})
    assert in_b in [s["sessionId"] for s in resp["result"]["sessions"]]
    resp, _ = lister.request("session/list", {"cursor": "not-a-cursor"})
    assert resp["error"]["code"] == -32602
    lister.close()


def test_close_known_and_unknown_sessions(spawn: Any, tmp_path: Path) -> None:
    agent = spawn()
    agent.initialize(2)
    sid = agent.new_session(str(tmp_path))
    resp, _ = agent.request("session/close", {"sessionId": sid})
    assert resp["result"] == {}
    resp, _ = agent.request("session/close", {"sessionId": "demo-" + "f" * 32})
    assert resp["error"]["code"] == -32002
    agent.close()


# -- replay styles ---------------------------------------------------------------------------------

STYLES = ["whole", "chunks", "chunks-then-whole", "whole-then-chunks", "interleaved"]


@pytest.mark.parametrize(("version", "ids"), [(2, False), (1, False), (1, True)])
def test_every_replay_style_yields_the_same_transcript(spawn: Any, tmp_path: Path, version: int, ids: bool) -> None:
    v1_flags = ["--v1-message-ids"] if ids else []
    maker = spawn("--protocol", str(version), *v1_flags)
    maker.initialize(version)
    sid = maker.new_session(str(tmp_path))
    maker.prompt(sid, "first question, with a longer text so it takes several chunks")
    maker.prompt(sid, "second one, refuse")
    maker.close()

    results = {}
    traces = {}
    for style in STYLES:
        agent = spawn("--protocol", str(version), "--replay", style, "--chunk-size", "7", *v1_flags)
        agent.initialize(version)
        resp, replayed = agent.request("session/load", {"sessionId": sid, "cwd": str(tmp_path), "mcpServers": []})
        assert "result" in resp
        results[style] = reduce_messages(updates(replayed))
        traces[style] = [u["sessionUpdate"] for u in updates(replayed)]
        agent.close()
    baseline = results["whole"]
    assert len(baseline) == 6 and baseline[0] == ("user_message", "first question, with a longer text so it takes several chunks")
    for style in STYLES:
        assert results[style] == baseline, style
    if version == 2:
        assert "agent_message" in traces["chunks-then-whole"] and "agent_message_chunk" in traces["chunks-then-whole"]
        assert traces["whole"].count("agent_message") == 2 and "agent_message_chunk" not in traces["whole"]
    # The styles really differ on the wire (each yields a different update sequence).
    if version == 2 or ids:
        assert traces["interleaved"] != traces["chunks"]


def test_load_answers_first(spawn: Any, tmp_path: Path) -> None:
    maker = spawn()
    maker.initialize(2)
    sid = maker.new_session(str(tmp_path))
    _, live = maker.prompt(sid, "remember me")
    maker.close()

    agent = spawn("--load-answers-first")
    agent.initialize(2)
    resp, before = agent.request("session/load", {"sessionId": sid, "cwd": str(tmp_path), "mcpServers": []})
    assert "configOptions" in resp["result"] and before == [], "answered before replaying"
    # Requests are handled in order, so this answer comes after the whole replay.
    _, after = agent.request("session/list", {})
    assert reduce_messages(updates(after)) == reduce_messages(updates(live))
    agent.close()


def test_replay_pause_answers_first_and_replays_later_while_serving(spawn: Any, tmp_path: Path) -> None:
    maker = spawn()
    maker.initialize(2)
    sid = maker.new_session(str(tmp_path))
    maker.prompt(sid, "remember me")
    maker.close()

    agent = spawn("--replay-pause", "0.5", "--replay", "whole")
    agent.initialize(2)
    started = time.monotonic()
    resp, before = agent.request("session/load", {"sessionId": sid, "cwd": str(tmp_path), "mcpServers": []})
    assert "configOptions" in resp["result"] and before == [], "answered before replaying"
    # Unlike --load-answers-first, the agent keeps serving while the replay waits: this
    # answer comes before any of it.
    _, meanwhile = agent.request("session/list", {})
    assert updates(meanwhile) == []
    later = agent.until(lambda m: "(turn 1)" in json.dumps(m))
    assert time.monotonic() - started >= 0.5
    assert "remember me" in json.dumps(later)
    agent.close()


# -- misc ------------------------------------------------------------------------------------------


def test_help_lists_flags_and_keywords() -> None:
    out = subprocess.run([sys.executable, "-m", "acpcli.demo_agent", "--help"], capture_output=True, text=True,
                         check=True).stdout
    for word in ("--protocol", "--without", "--state-dir", "--page-size", "--replay", "--load-answers-first",
                 "--v1-message-ids", "--chunk-size", "--delay", "slow", "refuse", "max tokens", "crash",
                 "read PATH", "write PATH", "run CMD", "no-permission", "--with", "--require-auth",
                 "--forget-auth", "plan mode", "status", "modes", "config-options", "embedded-context",
                 "credentials.json"):
        assert word in out, word


def test_garbage_input_gets_a_parse_error_and_the_agent_survives(spawn: Any) -> None:
    agent = spawn()
    assert agent.proc.stdin is not None
    agent.proc.stdin.write(b"this is not json\n")
    agent.proc.stdin.flush()
    msg = agent.recv()
    assert msg is not None and msg["error"]["code"] == -32700 and msg["id"] is None
    assert agent.initialize(2)["protocolVersion"] == 2
    assert agent.close() == 0


def test_string_request_ids(spawn: Any, tmp_path: Path) -> None:
    agent = spawn("--string-ids")
    agent.initialize(1)
    sid = agent.new_session(str(tmp_path))
    resp, _ = agent.prompt(sid, "hello")
    assert resp["result"]["stopReason"] == "end_turn"
    assert isinstance(agent.agent_requests[0]["id"], str)


# -- an independent peer: the official ACP Python SDK (v1) ----------------------------------------


def test_official_sdk_client_drives_a_v1_turn_and_a_load(tmp_path: Path) -> None:
    acp = pytest.importorskip("acp")
    from acp import schema

    class Recorder:
        def __init__(self) -> None:
            self.updates: list[Any] = []
            self.permissions = 0
            self.reads: list[str] = []

        async def request_permission(self, options: Any, session_id: str, tool_call: Any, **kw: Any) -> Any:
            self.permissions += 1
            allow = next(o for o in options if o.kind == "allow_once")
            return schema.RequestPermissionResponse(
                outcome=schema.AllowedOutcome(outcome="selected", option_id=allow.option_id)
            )

        async def session_update(self, session_id: str, update: Any, **kw: Any) -> None:
            self.updates.append(update)

        async def read_text_file(self, session_id: str, path: str, **kw: Any) -> Any:
            self.reads.append(path)
            return schema.ReadTextFileResponse(content="sdk file body")

        def on_connect(self, conn: Any) -> None:
            pass

    async def drive() -> tuple[Recorder, Recorder, Any, Any]:
        live, loader = Recorder(), Recorder()
        cmd = (sys.executable, "-m", "acpcli.demo_agent", "--protocol", "1", "--delay", "0")
        # The SDK starts agents with a minimal environment: hand over the test's state root.
        env = {"ACPCLI_HOME": os.environ["ACPCLI_HOME"]}
        async with acp.spawn_agent_process(live, *cmd, env=env) as (conn, _proc):
            init = await conn.initialize(
                protocol_version=1,
                client_capabilities=schema.ClientCapabilities(fs=schema.FileSystemCapabilities(read_text_file=True)),
            )
            assert init.agent_capabilities.load_session is True
            session = await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
            answer = await conn.prompt(session_id=session.session_id,
                                       prompt=[schema.TextContentBlock(type="text", text="read notes.md")])
        async with acp.spawn_agent_process(loader, *cmd, env=env) as (conn, _proc):
            await conn.initialize(protocol_version=1)
            await conn.load_session(cwd=str(tmp_path), session_id=session.session_id, mcp_servers=[])
            listing = await conn.list_sessions()
        return live, loader, answer, listing

    live, loader, answer, listing = asyncio.run(drive())
    assert answer.stop_reason == "end_turn"
    assert live.permissions == 1 and live.reads == [str(tmp_path / "notes.md")]
    kinds = [u.session_update for u in live.updates]
    for kind in ("agent_thought_chunk", "plan", "tool_call", "tool_call_update", "agent_message_chunk",
                 "usage_update", "session_info_update", "available_commands_update"):
        assert kind in kinds, kind
    text = "".join(u.content.text for u in live.updates if u.session_update == "agent_message_chunk")
    assert "sdk file body" in text
    replayed = [u.session_update for u in loader.updates]
    assert "user_message_chunk" in replayed and "tool_call" in replayed
    replayed_text = "".join(u.content.text for u in loader.updates if u.session_update == "agent_message_chunk")
    assert replayed_text == text
    assert [s.title for s in listing.sessions] == ["read notes.md"]
