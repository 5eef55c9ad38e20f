"""The jsonl view: one parseable event per line, flushed per line, documented fields."""

from __future__ import annotations

import io
import json
from types import SimpleNamespace
from typing import Any

from acpcli.model import Message, Store
from acpcli.render.jsonl import JsonlView


def text(t: str) -> dict[str, Any]:
    return {"type": "text", "text": t}


class Recorder(io.StringIO):
    def __init__(self) -> None:
        super().__init__()
        self.calls: list[str] = []

    def write(self, s: str) -> int:
        self.calls.append("write")
        return super().write(s)

    def flush(self) -> None:
        self.calls.append("flush")
        super().flush()


def run(updates: list[dict[str, Any]], stop: str | None = "end_turn") -> tuple[list[dict[str, Any]], Store, Recorder]:
    out = Recorder()
    view = JsonlView(out)
    session = SimpleNamespace(store=Store(), session_id="sess_1")
    for update in updates:
        change = session.store.apply(update)
        if change is not None:
            view.on_change(session, change)
    if stop is not None:
        view.turn_ended(stop)
    view.close()
    lines = out.getvalue().splitlines()
    return [json.loads(line) for line in lines], session.store, out


UPDATES = [
    {"sessionUpdate": "user_message_chunk", "content": text("hi ünïcode")},
    {"sessionUpdate": "agent_message_chunk", "content": text("Hel")},
    {"sessionUpdate": "agent_message_chunk", "content": text("lo")},
    {"sessionUpdate": "agent_message_chunk", "content": {"type": "image", "mimeType": "image/png", "data": "AA"}},
    {"sessionUpdate": "tool_call", "toolCallId": "t1", "title": "Read", "kind": "read", "status": "pending"},
    {"sessionUpdate": "tool_call_content_chunk", "toolCallId": "t1", "content": {"type": "content", "content": text("out")}},
    {"sessionUpdate": "tool_call_update", "toolCallId": "t1", "status": "completed"},
    {"sessionUpdate": "plan", "entries": [{"content": "step", "priority": "low", "status": "pending"}]},
    {"sessionUpdate": "usage_update", "used": 10, "size": 100},
    {"sessionUpdate": "agent_message_chunk", "content": text("Bye")},
]


def test_every_line_is_an_event_with_the_documented_fields() -> None:
    events, _store, out = run(UPDATES, stop="max_tokens")
    assert out.calls[: 2 * len(events)] == ["write", "flush"] * len(events)  # flushed per line
    assert all(e["sessionId"] == "sess_1" for e in events)
    types = [e["type"] for e in events]
    assert types == [
        "message_start", "message_chunk",  # user
        "message", "message_start", "message_chunk", "message_chunk", "message_chunk",  # user done; agent
        "message", "tool_call", "tool_call_chunk", "tool_call",  # agent done when the tool call starts
        "plan", "session",
        "message_start", "message_chunk",  # last agent message
        "message", "turn_end",  # finished at the end of the turn
    ]
    user_done, agent_start = events[2], events[3]
    assert user_done == {"type": "message", "sessionId": "sess_1", "index": 0, "role": "user", "id": None,
                         "text": "hi ünïcode", "content": [text("hi ünïcode")]}
    assert agent_start == {"type": "message_start", "sessionId": "sess_1", "index": 1, "role": "agent", "id": None}
    assert [e.get("text") for e in events[4:6]] == ["Hel", "lo"]
    assert events[6]["block"] == {"type": "image", "mimeType": "image/png", "data": "AA"}
    agent = events[7]
    assert agent["text"] == "Hello" and agent["index"] == 1 and len(agent["content"]) == 2
    tool = events[8]
    assert {k: tool[k] for k in ("index", "id", "title", "kind", "status", "content", "locations", "rawInput", "rawOutput")} == {
        "index": 2, "id": "t1", "title": "Read", "kind": "read", "status": "pending", "content": [], "locations": [],
        "rawInput": None, "rawOutput": None}
    assert events[9]["content"] == {"type": "content", "content": text("out")}
    assert events[10]["status"] == "completed" and len(events[10]["content"]) == 1
    assert events[11]["entries"] == [{"content": "step", "priority": "low", "status": "pending"}]
    assert events[11]["id"] is None and events[11]["planType"] == "items"
    assert events[12] == {"type": "session", "sessionId": "sess_1", "field": "usage",
                          "usage": {"used": 10, "size": 100, "cost": None}}
    assert events[-2]["text"] == "Bye"
    assert events[-1] == {"type": "turn_end", "sessionId": "sess_1", "stopReason": "max_tokens"}
    assert "ünïcode" in out.getvalue()  # UTF-8 as is, not \\u escapes


def test_last_message_event_per_index_is_the_store_content() -> None:
    updates = [
        {"sessionUpdate": "agent_message_chunk", "messageId": "a", "content": text("one ")},
        {"sessionUpdate": "agent_thought_chunk", "messageId": "t", "content": text("hmm")},
        {"sessionUpdate": "agent_message_chunk", "messageId": "a", "content": text("two")},
        {"sessionUpdate": "agent_message", "messageId": "a", "content": [text("rewritten")]},
        {"sessionUpdate": "agent_message_chunk", "messageId": "a", "content": text("!")},
    ]
    events, store, _ = run(updates, stop=None)
    last: dict[int, dict[str, Any]] = {}
    for event in events:
        if event["type"] == "message":
            last[event["index"]] = event
    entries = [e for e in store.entries if isinstance(e, Message)]
    assert {i: e["text"] for i, e in last.items()} == {i: m.text for i, m in enumerate(entries)}
    assert last[0]["text"] == "rewritten!"
    # the replacement was reported at once, before the chunk that followed it
    kinds = [(e["type"], e.get("text")) for e in events if e["index"] == 0]
    assert kinds[-3:] == [("message", "rewritten"), ("message_chunk", "!"), ("message", "rewritten!")]


def test_session_events_name_their_fields() -> None:
    events, _, _ = run([
        {"sessionUpdate": "current_mode_update", "currentModeId": "code"},
        {"sessionUpdate": "session_info_update", "title": "T"},
        {"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"},
        {"sessionUpdate": "available_commands_update", "availableCommands": [{"name": "web", "description": "d"}]},
    ], stop=None)
    assert [(e["field"], {k: v for k, v in e.items() if k not in ("type", "sessionId", "field")}) for e in events] == [
        ("currentMode", {"currentModeId": "code"}),
        ("sessionInfo", {"title": "T", "updatedAt": None}),
        ("state", {"state": "idle", "stopReason": "end_turn"}),
        ("availableCommands", {"availableCommands": [{"name": "web", "description": "d"}]}),
    ]


def test_print_store_writes_one_finished_event_per_entry() -> None:
    store = Store()
    for update in UPDATES:
        store.apply(update)
    out = io.StringIO()
    JsonlView(out, session_id="s").print_store(store)
    events = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [e["type"] for e in events] == ["message", "message", "tool_call", "plan", "message", "session"]
    assert [e["index"] for e in events[:-1]] == list(range(5))
    assert events[1]["text"] == "Hello" and events[2]["status"] == "completed"
    assert events[-1]["field"] == "usage" and events[-1]["usage"] == store.usage  # as last reported


def test_a_model_change_is_a_current_model_session_event() -> None:
    models = [{"modelId": "m1", "name": "One"}]
    events, _, _ = run([
        {"sessionUpdate": "current_model_update", "currentModelId": "m1", "availableModels": models},
    ], stop=None)
    assert [(e["type"], e["field"], e["currentModelId"], e["availableModels"]) for e in events] == [
        ("session", "currentModel", "m1", models)
    ]
