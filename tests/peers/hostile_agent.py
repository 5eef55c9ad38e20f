"""A hostile ACP v1 agent: terminal escape sequences in every field it controls.

Standard library only, raw stdio (one JSON-RPC message per line), so that it can also send
what no SDK would: a line of 1000 nested brackets, a line over acpcli's line limit.

Every string the agent controls carries :data:`EVIL`: an OSC that renames the terminal
(``ESC ] 2 ; … BEL``), SGR and erase-screen CSIs, a one-byte C1 CSI, a carriage return,
DEL, a NUL. What it does on ``session/prompt`` depends on the prompt's text:

``hostile`` (default)  stderr line, message, thought (both with rich markup too), tool call (title, kind, locations,
                       text output, a diff), tool call update, plan, available commands,
                       session title, mode update, a permission request with evil option
                       names; then ``end_turn`` (or the stop reason after ``stop:``)
``error``              the prompt is answered with a JSON-RPC error whose message and data
                       carry escapes
``surrogate``          a message and a session title holding lone surrogates (``"\\ud800"``)
``deep``               a line of 1000 nested brackets (and other garbage), then a message
``huge-answer``        the prompt's answer is one line of ``HOSTILE_HUGE`` bytes
``huge-request``       an ``fs/read_text_file`` request of ``HOSTILE_HUGE`` bytes; reports
                       the error it got back in a message, then ends the turn
``crash``              escapes on stderr, then exit 3 without answering

``session/load`` replays the hostile updates. ``HOSTILE_HUGE`` (env, bytes) defaults to 2 MiB.
``HOSTILE_ID_BYTES`` (env), if set, makes the id ``session/new`` answers with that many ``x``
characters instead of ``hostile-1``; ``HOSTILE_ID`` (env), that very id.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

EVIL = "\x1b]2;PWNED\x07\x1b[41m\x1b[2J\x9b31m\r\x7f\x00\x1bP+q\x1b\\"

#: rich markup, which must be shown as it is, never read as markup (an unmatched closing tag
#: would make rich raise)
MARKUP = "[/dim] [link=https://example.invalid]click[/link] [bold]"

out = sys.stdout.buffer
HUGE = int(os.environ.get("HOSTILE_HUGE", str(2 * 1024 * 1024)))
_next_id = [1000]


def raw(data: bytes) -> None:
    out.write(data)
    out.flush()


def send(message: Any) -> None:
    raw(json.dumps(message, separators=(",", ":")).encode() + b"\n")


def read() -> dict[str, Any] | None:
    while True:
        line = sys.stdin.buffer.readline()
        if not line:
            return None
        try:
            message = json.loads(line)
        except ValueError:
            continue
        if isinstance(message, dict):
            return message


def request(method: str, params: Any) -> dict[str, Any] | None:
    """Send a request and wait for its answer (other messages are ignored)."""
    _next_id[0] += 1
    send({"jsonrpc": "2.0", "id": _next_id[0], "method": method, "params": params})
    while True:
        message = read()
        if message is None or ("method" not in message and message.get("id") == _next_id[0]):
            return message


def update(session_id: str, body: dict[str, Any]) -> None:
    send({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": session_id, "update": body}})


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def hostile_updates(session_id: str) -> None:
    update(session_id, {"sessionUpdate": "agent_thought_chunk", "content": text(f"thinking {EVIL} hard {MARKUP}")})
    update(session_id, {"sessionUpdate": "agent_message_chunk", "content": text(f"message {EVIL} one\n\nsecond {EVIL}")})
    update(session_id, {
        "sessionUpdate": "tool_call",
        "toolCallId": "call-1",
        "title": f"tool {EVIL} title",
        "kind": "edit",
        "status": "in_progress",
        "locations": [{"path": f"/tmp/evil{EVIL}.txt", "line": 3}],
        "content": [
            {"type": "content", "content": text(f"tool output {EVIL}\nline two {EVIL}")},
            {"type": "diff", "path": f"/tmp/evil{EVIL}.txt", "oldText": f"old {EVIL}\n", "newText": f"new {EVIL}\n"},
        ],
        "rawInput": {"command": f"rm {EVIL}"},
    })
    update(session_id, {
        "sessionUpdate": "tool_call_update",
        "toolCallId": "call-1",
        "status": "completed",
        "title": f"tool {EVIL} done",
        "content": [{"type": "content", "content": text(f"more output {EVIL}")}],
    })
    update(session_id, {
        "sessionUpdate": "plan",
        "entries": [
            {"content": f"step {EVIL} one", "priority": "high", "status": "completed"},
            {"content": f"step {EVIL} two", "priority": "low", "status": f"weird{EVIL}"},
        ],
    })
    update(session_id, {
        "sessionUpdate": "available_commands_update",
        "availableCommands": [{"name": f"evil{EVIL}", "description": f"does {EVIL} things", "input": None}],
    })
    update(session_id, {"sessionUpdate": "session_info_update", "title": f"title {EVIL} here {MARKUP}"})
    update(session_id, {"sessionUpdate": "agent_message_chunk", "content": {"type": "resource_link", "uri": f"file:///x{EVIL}", "name": f"link {EVIL}"}})


def prompt(message_id: Any, params: dict[str, Any]) -> None:
    session_id = params.get("sessionId", "")
    said = " ".join(b.get("text", "") for b in params.get("prompt", []) if isinstance(b, dict))
    sys.stderr.write(f"stderr {EVIL} line\n")
    sys.stderr.flush()
    if "crash" in said:
        sys.stderr.write(f"dying {EVIL} now\n")
        sys.stderr.flush()
        sys.exit(3)
    if "error" in said:
        send({"jsonrpc": "2.0", "id": message_id, "error": {"code": -32603, "message": f"failed {EVIL} badly", "data": {"why": EVIL}}})
        return
    if "surrogate" in said:
        # lone surrogates (a "\\ud800" escape, as JSON allows) in a message and a title
        update(session_id, {"sessionUpdate": "agent_message_chunk", "content": text("lonely \ud800 needle \udfff here")})
        update(session_id, {"sessionUpdate": "session_info_update", "title": "title \ud800 lone"})
        send({"jsonrpc": "2.0", "id": message_id, "result": {"stopReason": "end_turn"}})
        return
    if "deep" in said:
        raw(b"[" * 1000 + b"]" * 1000 + b"\n")
        raw(b'{"jsonrpc":"2.0","method":"session/update","params":' + b"[" * 5000 + b"\n")
        raw(b"\xff\xfe not utf-8 " + EVIL.encode() + b"\n")
        update(session_id, {"sessionUpdate": "agent_message_chunk", "content": text("still here after the deep line")})
        send({"jsonrpc": "2.0", "id": message_id, "result": {"stopReason": "end_turn"}})
        return
    if "huge-answer" in said:
        head = json.dumps({"jsonrpc": "2.0", "id": message_id, "result": {"stopReason": "end_turn", "_meta": {"pad": ""}}})
        pad = "x" * HUGE
        raw(head.replace('"pad": ""', f'"pad": "{pad}"').encode() + b"\n")
        return
    if "huge-request" in said:
        _next_id[0] += 1
        big = {"jsonrpc": "2.0", "id": _next_id[0], "method": "fs/read_text_file",
               "params": {"sessionId": session_id, "path": "/tmp/x", "_meta": {"pad": "x" * HUGE}}}
        send(big)
        while True:
            answer = read()
            if answer is None:
                return
            if "method" not in answer and answer.get("id") == _next_id[0]:
                break
        error = answer.get("error") or {}
        update(session_id, {"sessionUpdate": "agent_message_chunk", "content": text(f"the client answered {error.get('code')}")})
        send({"jsonrpc": "2.0", "id": message_id, "result": {"stopReason": "end_turn"}})
        return
    hostile_updates(session_id)
    answer = request("session/request_permission", {
        "sessionId": session_id,
        "toolCall": {"toolCallId": "call-2", "title": f"permit {EVIL} this", "kind": "execute", "status": "pending"},
        "options": [
            {"optionId": "allow", "name": f"Allow {EVIL}", "kind": "allow_once"},
            {"optionId": "deny", "name": f"Deny {EVIL}", "kind": "reject_once"},
        ],
    })
    outcome = (answer or {}).get("result", {}).get("outcome", {})
    update(session_id, {"sessionUpdate": "agent_message_chunk", "content": text(f" [permission: {outcome.get('optionId', outcome.get('outcome'))}]")})
    stop = said.split("stop:", 1)[1].split()[0] if "stop:" in said else "end_turn"
    send({"jsonrpc": "2.0", "id": message_id, "result": {"stopReason": stop}})


def _session_id() -> str:
    size = os.environ.get("HOSTILE_ID_BYTES")
    return "x" * int(size) if size else os.environ.get("HOSTILE_ID", "hostile-1")


def main() -> None:
    sys.stderr.write(f"hostile agent {EVIL} starting\n")
    sys.stderr.flush()
    while True:
        message = read()
        if message is None:
            return
        method, message_id, params = message.get("method"), message.get("id"), message.get("params") or {}
        if method is None or message_id is None:
            continue  # answers we did not wait for, notifications (session/cancel)
        if method == "initialize":
            send({"jsonrpc": "2.0", "id": message_id, "result": {
                "protocolVersion": 1,
                "agentCapabilities": {"loadSession": True},
                "agentInfo": {"name": f"hostile{EVIL}", "title": f"Hostile {EVIL} Agent", "version": f"6.6.6{EVIL}"},
                "authMethods": [],
            }})
        elif method == "session/new":
            send({"jsonrpc": "2.0", "id": message_id, "result": {
                "sessionId": _session_id(),
                "modes": {"currentModeId": "evil", "availableModes": [
                    {"id": "evil", "name": f"Evil {EVIL} mode", "description": f"be {EVIL} evil"},
                ]},
            }})
        elif method == "session/load":
            hostile_updates(params.get("sessionId", ""))
            send({"jsonrpc": "2.0", "id": message_id, "result": {}})
        elif method == "session/prompt":
            prompt(message_id, params)
        else:
            send({"jsonrpc": "2.0", "id": message_id, "error": {"code": -32601, "message": f"no {EVIL} method"}})


if __name__ == "__main__":
    main()
