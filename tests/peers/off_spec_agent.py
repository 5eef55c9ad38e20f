"""An ACP v1 agent that sends what the schema does not allow, one way per ``OFF_SPEC`` (env).

Standard library only, raw stdio, so it can send what no SDK would. ``initialize`` and, unless
said otherwise, every answer are valid; the prompt turn streams one message and ends.

``new-without-id``      ``session/new`` answers ``{}`` (no ``sessionId``)
``prompt-not-object``   ``session/prompt`` answers ``"done"``
``bad-error-object``    ``session/prompt`` answers an error whose ``code`` is a string
``permission``          mid-turn, a ``session/request_permission`` without ``options``; the
                        error it gets back is reported in a message, then the turn ends
``extras``              every answer carries unknown members, ``_meta``, gemini's unstable
                        ``models``, and ``session/load`` answers ``null`` (all must be accepted)
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

MODE = os.environ.get("OFF_SPEC", "")
out = sys.stdout.buffer
_next_id = [500]


def send(message: Any) -> None:
    out.write(json.dumps(message, separators=(",", ":")).encode() + b"\n")
    out.flush()


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


def answer(message_id: Any, result: Any) -> None:
    send({"jsonrpc": "2.0", "id": message_id, "result": result})


def say(session_id: str, text: str) -> None:
    update = {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}}
    send({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": session_id, "update": update}})


def ask_without_options(session_id: str) -> None:
    _next_id[0] += 1
    tool_call = {"toolCallId": "call-1", "title": "Edit a file", "kind": "edit", "status": "pending"}
    send({"jsonrpc": "2.0", "id": _next_id[0], "method": "session/request_permission",
          "params": {"sessionId": session_id, "toolCall": tool_call}})
    while True:
        message = read()
        if message is None:
            return
        if "method" not in message and message.get("id") == _next_id[0]:
            say(session_id, "the client answered: " + json.dumps(message.get("error") or message.get("result")))
            return


EXTRAS = {"_meta": {"vendor.example/x": 1}, "futureMember": {"deep": [1]}}


def main() -> None:
    while True:
        message = read()
        if message is None:
            return
        method, message_id, params = message.get("method"), message.get("id"), message.get("params") or {}
        if method is None or message_id is None:
            continue  # answers and notifications (session/cancel): nothing to do
        extras = EXTRAS if MODE == "extras" else {}
        if method == "initialize":
            answer(message_id, {"protocolVersion": 1, "agentCapabilities": {"loadSession": True},
                                "agentInfo": {"name": "off-spec", "version": "0"}, "authMethods": [], **extras})
        elif method == "session/new":
            if MODE == "new-without-id":
                answer(message_id, {})
                continue
            models = {"models": {"availableModels": [{"modelId": "m", "name": "M"}], "currentModelId": "m"}}
            answer(message_id, {"sessionId": "off-1", **extras, **(models if extras else {})})
        elif method == "session/load":
            say(params.get("sessionId", ""), "replayed")
            answer(message_id, None if MODE == "extras" else {})
        elif method == "session/prompt":
            session_id = params.get("sessionId", "")
            if MODE == "prompt-not-object":
                answer(message_id, "done")
            elif MODE == "bad-error-object":
                send({"jsonrpc": "2.0", "id": message_id, "error": {"code": "E42", "message": "went wrong"}})
            else:
                if MODE == "permission":
                    ask_without_options(session_id)
                say(session_id, "hello from off-spec")
                answer(message_id, {"stopReason": "end_turn", **extras})
        else:
            send({"jsonrpc": "2.0", "id": message_id, "error": {"code": -32601, "message": f"method not found: {method}"}})


if __name__ == "__main__":
    main()
