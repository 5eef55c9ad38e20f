"""A v1 ACP agent (standard library, raw stdio) that streams fast and big, for the host's tests.

What it does on ``session/prompt`` depends on the prompt's text:

``flood N SIZE [DELAY]``  N ``agent_message_chunk`` updates as fast as stdout takes them
                  (DELAY seconds apart, if given), each
                  ``[cNNNNNN]`` and SIZE-10 filler characters; after each one, the count sent
                  so far goes to ``FLOOD_SENT`` (env, a file) when set. A ``session/cancel``
                  stops the stream (stopReason ``cancelled``).
``big SIZE``      one chunk of SIZE characters (``"`` and ``\\`` alternate with letters, so
                  its JSON string is half escapes), then ``end_turn``
``quiet SECONDS`` says nothing for SECONDS, then one chunk and ``end_turn``
``bye``           answers ``end_turn``, then exits a moment later (dies between turns)
otherwise         one chunk ``echo: <text>``

Sessions: ``session/new`` answers ``flood-<n>``; ``session/load`` and ``session/resume``
answer at once (no replay). Its pid is appended to ``PID_FILE`` (env) at start-up.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from typing import Any

out = sys.stdout.buffer
_write = threading.Lock()
_cancelled = threading.Event()


def send(message: Any) -> None:
    data = json.dumps(message, separators=(",", ":")).encode() + b"\n"
    with _write:
        out.write(data)
        out.flush()


def chunk(session_id: str, text: str) -> None:
    send({"jsonrpc": "2.0", "method": "session/update", "params": {
        "sessionId": session_id,
        "update": {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}},
    }})


def flood(message_id: Any, session_id: str, count: int, size: int, delay: float = 0.0) -> None:
    record = os.environ.get("FLOOD_SENT")
    stop = "end_turn"
    for i in range(count):
        if _cancelled.is_set():
            stop = "cancelled"
            break
        if delay and i:
            time.sleep(delay)
        chunk(session_id, f"[c{i:06d}]" + "x" * max(size - 9, 0) + "\n")
        if record:
            with open(record, "w") as f:
                f.write(str(i + 1))
    send({"jsonrpc": "2.0", "id": message_id, "result": {"stopReason": stop}})


def prompt(message_id: Any, params: dict[str, Any]) -> None:
    session_id = params.get("sessionId", "")
    said = " ".join(b.get("text", "") for b in params.get("prompt", []) if isinstance(b, dict)).split()
    _cancelled.clear()
    if len(said) >= 3 and said[0] == "flood":
        delay = float(said[3]) if len(said) > 3 else 0.0
        threading.Thread(target=flood, args=(message_id, session_id, int(said[1]), int(said[2]), delay), daemon=True).start()
        return
    if len(said) >= 2 and said[0] == "quiet":
        time.sleep(float(said[1]))
        chunk(session_id, "after the quiet")
        send({"jsonrpc": "2.0", "id": message_id, "result": {"stopReason": "end_turn"}})
        return
    if len(said) >= 2 and said[0] == "big":
        size = int(said[1])
        chunk(session_id, ('a"b\\' * (size // 4 + 1))[:size])
        send({"jsonrpc": "2.0", "id": message_id, "result": {"stopReason": "end_turn"}})
        return
    chunk(session_id, "echo: " + " ".join(said))
    send({"jsonrpc": "2.0", "id": message_id, "result": {"stopReason": "end_turn"}})
    if said[:1] == ["bye"]:
        time.sleep(0.2)
        os._exit(0)


def main() -> None:
    pid_file = os.environ.get("PID_FILE")
    if pid_file:
        with open(pid_file, "a") as f:
            f.write(f"{os.getpid()}\n")
    sessions = 0
    for line in sys.stdin.buffer:
        try:
            message = json.loads(line)
        except ValueError:
            continue
        if not isinstance(message, dict):
            continue
        method, message_id, params = message.get("method"), message.get("id"), message.get("params") or {}
        if method == "session/cancel":
            _cancelled.set()
            continue
        if method is None or message_id is None:
            continue
        if method == "initialize":
            send({"jsonrpc": "2.0", "id": message_id, "result": {
                "protocolVersion": 1, "agentCapabilities": {"loadSession": True},
                "agentInfo": {"name": "flood", "version": "1"}, "authMethods": [],
            }})
        elif method == "session/new":
            sessions += 1
            send({"jsonrpc": "2.0", "id": message_id, "result": {"sessionId": f"flood-{os.getpid()}-{sessions}"}})
        elif method == "session/load":
            send({"jsonrpc": "2.0", "id": message_id, "result": {}})
        elif method == "session/prompt":
            prompt(message_id, params)
        else:
            send({"jsonrpc": "2.0", "id": message_id, "error": {"code": -32601, "message": "no such method"}})


if __name__ == "__main__":
    main()
