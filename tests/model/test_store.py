"""Unit tests for the message store reducer (acpcli.model), rule by rule."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from acpcli.model import (
    AVAILABLE_COMMANDS,
    CANCELLED,
    CONFIG_OPTIONS,
    CURRENT_MODE,
    SESSION_INFO,
    STATE,
    USAGE,
    EntryUpdated,
    Message,
    NewEntry,
    Plan,
    SessionChanged,
    Store,
    ToolCall,
)


def text(t: str) -> dict[str, Any]:
    return {"type": "text", "text": t}


def chunk(kind: str, t: str, mid: str | None = None, **extra: Any) -> dict[str, Any]:
    update: dict[str, Any] = {"sessionUpdate": f"{kind}_chunk", "content": text(t), **extra}
    if mid is not None:
        update["messageId"] = mid
    return update


def whole(kind: str, mid: str, *blocks: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"sessionUpdate": kind, "messageId": mid, "content": list(blocks), **extra}


def texts(store: Store) -> list[tuple[str, str]]:
    """(kind, text) of every message entry, in order."""
    return [(e.kind, e.text) for e in store.entries if isinstance(e, Message)]


# -- whole messages (seed: "Loading Sessions") -------------------------------------------


def test_seed_replay_example_user_then_agent_message() -> None:
    store = Store()
    first = store.apply(whole("user_message", "msg_user_8f7a1", text("What's the capital of France?")))
    second = store.apply(whole("agent_message", "msg_agent_c42b9", text("The capital of France is Paris.")))
    assert isinstance(first, NewEntry) and first.index == 0
    assert isinstance(second, NewEntry) and second.index == 1
    assert texts(store) == [("user", "What's the capital of France?"), ("agent", "The capital of France is Paris.")]
    assert store.transcript() == [
        {
            "type": "message",
            "kind": "user",
            "messageId": "msg_user_8f7a1",
            "content": [{"type": "text", "text": "What's the capital of France?"}],
        },
        {
            "type": "message",
            "kind": "agent",
            "messageId": "msg_agent_c42b9",
            "content": [{"type": "text", "text": "The capital of France is Paris."}],
        },
    ]


def test_whole_message_after_chunks_replaces_what_chunks_built() -> None:
    store = Store()
    store.apply(chunk("agent_message", "Hel", "m1"))
    store.apply(chunk("agent_message", "lo wrld", "m1"))
    change = store.apply(whole("agent_message", "m1", text("Hello world")))
    assert isinstance(change, EntryUpdated) and change.index == 0 and change.appended is None
    assert texts(store) == [("agent", "Hello world")]


def test_chunks_after_whole_message_append_to_it() -> None:
    store = Store()
    store.apply(whole("agent_message", "m1", text("A")))
    change = store.apply(chunk("agent_message", "B", "m1"))
    assert isinstance(change, EntryUpdated) and change.appended == text("B")
    assert texts(store) == [("agent", "AB")]
    store.apply(whole("agent_message", "m1", text("C")))
    store.apply(chunk("agent_message", "D", "m1"))
    assert texts(store) == [("agent", "CD")]


def test_whole_message_without_content_keeps_content_and_patches_meta() -> None:
    store = Store()
    store.apply(whole("agent_thought", "t1", text("thinking"), _meta={"a": 1}))
    change = store.apply({"sessionUpdate": "agent_thought", "messageId": "t1", "_meta": {"b": 2}})
    assert isinstance(change, EntryUpdated)
    msg = store.entries[0]
    assert isinstance(msg, Message)
    assert msg.kind == "thought" and msg.text == "thinking" and msg.meta == {"b": 2}
    store.apply({"sessionUpdate": "agent_thought", "messageId": "t1"})
    assert msg.text == "thinking" and msg.meta == {"b": 2}  # omitted _meta: unchanged


@pytest.mark.parametrize("cleared", [None, []])
def test_whole_message_with_null_or_empty_content_clears_it(cleared: Any) -> None:
    store = Store()
    store.apply(chunk("agent_message", "gone", "m1"))
    store.apply({"sessionUpdate": "agent_message", "messageId": "m1", "content": cleared})
    assert texts(store) == [("agent", "")]
    assert store.entries[0].content == []  # type: ignore[union-attr]
    store.apply(chunk("agent_message", "new", "m1"))
    assert texts(store) == [("agent", "new")]


def test_new_message_id_starts_new_message_and_ids_interleave() -> None:
    store = Store()
    store.apply(chunk("agent_message", "a1 ", "a"))
    store.apply(chunk("agent_message", "b1 ", "b"))
    change = store.apply(chunk("agent_message", "a2", "a"))
    store.apply(chunk("agent_message", "b2", "b"))
    assert isinstance(change, EntryUpdated) and change.index == 0
    assert texts(store) == [("agent", "a1 a2"), ("agent", "b1 b2")]
    assert store.message("agent", "b") is store.entries[1]
    assert store.message("agent", "nope") is None


def test_message_ids_are_scoped_per_kind() -> None:
    store = Store()
    store.apply(whole("user_message", "same", text("question")))
    store.apply(whole("agent_message", "same", text("answer")))
    assert texts(store) == [("user", "question"), ("agent", "answer")]


def test_whole_message_without_id_is_shown_as_its_own_message() -> None:
    store = Store()
    store.apply(whole("agent_message", "m1", text("one")))
    change = store.apply({"sessionUpdate": "agent_message", "content": [text("two")]})
    assert isinstance(change, NewEntry)
    assert store.apply({"sessionUpdate": "agent_message"}) is None  # no id, no content: nothing
    assert texts(store) == [("agent", "one"), ("agent", "two")]


def test_whole_message_skips_invalid_blocks_and_keeps_unknown_block_types() -> None:
    store = Store()
    weird = {"type": "_custom", "payload": 1}
    store.apply(whole("agent_message", "m1", text("ok"), 42, {"type": "text"}, {"no": "type"}, weird))  # type: ignore[arg-type]
    assert store.entries[0].content == [text("ok"), weird]  # type: ignore[union-attr]


# -- v1 chunks without messageId -----------------------------------------------------------


def test_v1_chunks_continue_the_last_message_of_their_kind() -> None:
    store = Store()
    first = store.apply(chunk("agent_message", "Hello"))
    second = store.apply(chunk("agent_message", ", world"))
    assert isinstance(first, NewEntry) and first.index == 0
    assert isinstance(second, EntryUpdated) and second.index == 0 and second.appended == text(", world")
    assert texts(store) == [("agent", "Hello, world")]
    assert store.entries[0].message_id is None  # type: ignore[union-attr]


def test_v1_chunk_of_another_kind_starts_new_message() -> None:
    store = Store()
    for update in [
        chunk("agent_thought", "think "),
        chunk("agent_thought", "more"),
        chunk("agent_message", "answer "),
        chunk("agent_message", "part 2"),
        chunk("agent_thought", "again"),
    ]:
        store.apply(update)
    assert texts(store) == [("thought", "think more"), ("agent", "answer part 2"), ("thought", "again")]


def test_v1_tool_call_or_plan_between_chunks_starts_new_message() -> None:
    store = Store()
    store.apply(chunk("agent_message", "before tool"))
    store.apply({"sessionUpdate": "tool_call", "toolCallId": "t1", "title": "Read"})
    store.apply(chunk("agent_message", "after tool"))
    store.apply({"sessionUpdate": "plan", "entries": []})
    store.apply(chunk("agent_message", "after plan"))
    assert texts(store) == [("agent", "before tool"), ("agent", "after tool"), ("agent", "after plan")]
    assert [type(e) for e in store.entries] == [Message, ToolCall, Message, Plan, Message]


def test_v1_tool_call_update_to_an_earlier_call_does_not_split_the_message() -> None:
    store = Store()
    store.apply({"sessionUpdate": "tool_call", "toolCallId": "t1", "title": "Read"})
    store.apply(chunk("agent_message", "reading "))
    store.apply({"sessionUpdate": "tool_call_update", "toolCallId": "t1", "status": "completed"})
    store.apply(chunk("agent_message", "done"))
    assert texts(store) == [("agent", "reading done")]


def test_turn_boundary_starts_new_message() -> None:
    store = Store()
    store.apply(chunk("agent_message", "turn one"))
    store.turn_boundary()
    change = store.apply(chunk("agent_message", "turn two"))
    store.apply(chunk("agent_message", " continues"))
    assert isinstance(change, NewEntry) and change.index == 1
    assert texts(store) == [("agent", "turn one"), ("agent", "turn two continues")]


def test_session_level_update_between_chunks_does_not_split_message() -> None:
    store = Store()
    store.apply(chunk("agent_message", "one "))
    store.apply({"sessionUpdate": "usage_update", "used": 1, "size": 10})
    store.apply({"sessionUpdate": "available_commands_update", "availableCommands": []})
    store.apply(chunk("agent_message", "message"))
    assert texts(store) == [("agent", "one message")]


def test_idless_chunk_continues_last_message_even_if_it_had_an_id() -> None:
    store = Store()
    store.apply(chunk("agent_message", "with id ", "m1"))
    store.apply(chunk("agent_message", "without"))
    assert texts(store) == [("agent", "with id without")]


def test_null_or_invalid_message_id_counts_as_absent() -> None:
    store = Store()
    store.apply(chunk("agent_message", "a", None))
    store.apply({**chunk("agent_message", "b"), "messageId": None})
    store.apply({**chunk("agent_message", "c"), "messageId": 7})
    assert texts(store) == [("agent", "abc")]


def test_claude_empty_first_chunk_is_harmless() -> None:
    store = Store()
    store.apply(chunk("agent_thought", ""))
    store.apply(chunk("agent_thought", "Let me look"))
    store.apply(chunk("agent_message", ""))
    store.apply(chunk("agent_message", "Here it is"))
    assert texts(store) == [("thought", "Let me look"), ("agent", "Here it is")]
    assert store.entries[1].content == [text("Here it is")]  # type: ignore[union-attr]


def test_user_message_chunks_in_v1_replay_alternate_with_agent_messages() -> None:
    store = Store()
    for update in [
        chunk("user_message", "hi"),
        chunk("agent_message", "hello"),
        chunk("user_message", "again"),
        chunk("agent_message", "hello again"),
    ]:
        store.apply(update)
    assert texts(store) == [("user", "hi"), ("agent", "hello"), ("user", "again"), ("agent", "hello again")]


# -- content blocks --------------------------------------------------------------------------


def test_non_text_blocks_are_appended_as_blocks() -> None:
    store = Store()
    image = {"type": "image", "data": "AAAA", "mimeType": "image/png"}
    link = {"type": "resource_link", "uri": "file:///a", "name": "a"}
    store.apply(chunk("agent_message", "see "))
    store.apply(chunk("agent_message", "this:"))
    store.apply({"sessionUpdate": "agent_message_chunk", "content": image})
    store.apply(chunk("agent_message", "and "))
    store.apply({"sessionUpdate": "agent_message_chunk", "content": link})
    store.apply(chunk("agent_message", "end"))
    msg = store.entries[0]
    assert isinstance(msg, Message)
    assert msg.content == [text("see this:"), image, text("and "), link, text("end")]
    assert msg.text == "see this:and end"


def test_annotated_text_chunk_is_its_own_block_and_plain_chunks_extend_it() -> None:
    store = Store()
    annotated = {"type": "text", "text": "B", "annotations": {"audience": ["user"]}}
    store.apply(chunk("agent_message", "A"))
    store.apply({"sessionUpdate": "agent_message_chunk", "content": annotated})
    store.apply(chunk("agent_message", "C"))
    msg = store.entries[0]
    assert msg.content == [text("A"), {**annotated, "text": "BC"}]  # type: ignore[union-attr]
    assert annotated["text"] == "B"  # the wire dict is not mutated


def test_text_is_joined_lazily_once_and_blocks_handed_out_stay_unchanged() -> None:
    store = Store()
    first = {"type": "text", "text": "x"}
    store.apply({"sessionUpdate": "agent_message_chunk", "content": first})
    for _ in range(999):
        store.apply(chunk("agent_message", "x"))
    msg = store.entries[0]
    assert isinstance(msg, Message)
    assert len(msg._parts or []) == 1000  # appends did not build the string
    blocks = msg.content
    assert blocks == [text("x" * 1000)]
    assert msg.content[0] is blocks[0]  # cached: a second read joins nothing
    store.apply(chunk("agent_message", "y"))
    assert blocks[0]["text"] == "x" * 1000  # a block handed out earlier is never mutated
    assert first == {"type": "text", "text": "x"}
    assert msg.text == "x" * 1000 + "y"


def test_chunk_meta_is_chunk_scoped() -> None:
    store = Store()
    store.apply(whole("agent_message", "m1", text("a"), _meta={"message": True}))
    store.apply(chunk("agent_message", "b", "m1", _meta={"chunk": True}))
    assert store.entries[0].meta == {"message": True}  # type: ignore[union-attr]


# -- tool calls ------------------------------------------------------------------------------


def test_v1_tool_call_then_updates_patch_only_present_fields() -> None:
    store = Store()
    created = store.apply(
        {
            "sessionUpdate": "tool_call",
            "toolCallId": "call_001",
            "title": "Reading configuration file",
            "kind": "read",
            "status": "pending",
            "locations": [{"path": "/p/config.json"}],
            "rawInput": {"path": "/p/config.json"},
        }
    )
    assert isinstance(created, NewEntry)
    updated = store.apply({"sessionUpdate": "tool_call_update", "toolCallId": "call_001", "status": "in_progress"})
    assert isinstance(updated, EntryUpdated) and updated.index == 0
    call = store.tool_call("call_001")
    assert call is not None
    assert (call.title, call.kind, call.status) == ("Reading configuration file", "read", "in_progress")
    assert call.locations == [{"path": "/p/config.json"}] and call.raw_input == {"path": "/p/config.json"}


def test_tool_call_update_null_clears_and_omitted_keeps() -> None:
    store = Store()
    store.apply(
        {
            "sessionUpdate": "tool_call",
            "toolCallId": "t",
            "title": "Edit",
            "kind": "edit",
            "status": "in_progress",
            "content": [{"type": "content", "content": text("x")}],
            "locations": [{"path": "/a"}],
            "rawInput": {"a": 1},
            "rawOutput": {"b": 2},
            "_meta": {"m": 1},
        }
    )
    store.apply(
        {
            "sessionUpdate": "tool_call_update",
            "toolCallId": "t",
            "title": None,
            "kind": None,
            "content": None,
            "rawOutput": None,
            "_meta": None,
        }
    )
    call = store.tool_call("t")
    assert call is not None
    # cleared
    assert call.title is None and call.kind == "other" and call.content == []
    assert call.raw_output is None and call.meta is None
    # omitted: unchanged
    assert call.status == "in_progress" and call.locations == [{"path": "/a"}] and call.raw_input == {"a": 1}
    store.apply({"sessionUpdate": "tool_call_update", "toolCallId": "t", "status": None, "locations": []})
    assert call.status == "pending" and call.locations == []


def test_tool_call_update_ignores_invalid_field_values() -> None:
    store = Store()
    store.apply({"sessionUpdate": "tool_call", "toolCallId": "t", "title": "T", "status": "pending"})
    store.apply({"sessionUpdate": "tool_call_update", "toolCallId": "t", "title": 5, "status": ["x"], "content": "no"})
    call = store.tool_call("t")
    assert call is not None and call.title == "T" and call.status == "pending" and call.content == []


def test_v1_tool_call_for_known_id_replaces_it_in_place() -> None:
    store = Store()
    store.apply({"sessionUpdate": "tool_call", "toolCallId": "t", "title": "Old", "kind": "read", "rawInput": {"a": 1}})
    change = store.apply({"sessionUpdate": "tool_call", "toolCallId": "t", "title": "New"})
    assert isinstance(change, EntryUpdated) and change.index == 0
    assert len(store.entries) == 1
    call = store.tool_call("t")
    assert call is not None and (call.title, call.kind, call.raw_input) == ("New", "other", None)


def test_claude_placeholder_tool_call_is_completed_by_first_update() -> None:
    store = Store()
    store.apply({"sessionUpdate": "tool_call", "toolCallId": "toolu_1", "title": "Terminal", "kind": "execute", "rawInput": {}})
    store.apply(
        {
            "sessionUpdate": "tool_call_update",
            "toolCallId": "toolu_1",
            "title": "`ls -la`",
            "rawInput": {"command": "ls -la"},
        }
    )
    call = store.tool_call("toolu_1")
    assert call is not None and call.title == "`ls -la`" and call.raw_input == {"command": "ls -la"}
    assert call.kind == "execute"


def test_update_for_unknown_tool_call_creates_it() -> None:
    store = Store()
    change = store.apply({"sessionUpdate": "tool_call_update", "toolCallId": "ghost", "status": "completed"})
    assert isinstance(change, NewEntry) and isinstance(change.entry, ToolCall)
    assert change.entry.status == "completed" and change.entry.title is None and change.entry.kind == "other"


def test_v2_tool_call_update_creates_then_content_chunks_append_then_update_replaces() -> None:
    store = Store()
    store.apply({"sessionUpdate": "tool_call_update", "toolCallId": "c", "title": "Analyzing", "kind": "other", "status": "pending"})
    item1 = {"type": "content", "content": text("Checked syntax...")}
    item2 = {"type": "diff", "path": "/a", "oldText": None, "newText": "x"}
    change = store.apply({"sessionUpdate": "tool_call_content_chunk", "toolCallId": "c", "content": item1})
    assert isinstance(change, EntryUpdated) and change.appended is item1
    store.apply({"sessionUpdate": "tool_call_content_chunk", "toolCallId": "c", "content": item2})
    call = store.tool_call("c")
    assert call is not None and call.content == [item1, item2]
    final = {"type": "content", "content": text("Analysis complete")}
    store.apply({"sessionUpdate": "tool_call_update", "toolCallId": "c", "status": "completed", "content": [final]})
    assert call.content == [final] and call.status == "completed"
    store.apply({"sessionUpdate": "tool_call_content_chunk", "toolCallId": "c", "content": item1})
    assert call.content == [final, item1]


def test_tool_content_chunk_for_unknown_call_creates_it() -> None:
    store = Store()
    item = {"type": "content", "content": text("out")}
    change = store.apply({"sessionUpdate": "tool_call_content_chunk", "toolCallId": "new", "content": item})
    assert isinstance(change, NewEntry) and change.entry.content == [item]  # type: ignore[union-attr]


def test_unknown_tool_kind_and_status_are_kept() -> None:
    store = Store()
    store.apply({"sessionUpdate": "tool_call_update", "toolCallId": "t", "kind": "_teleport", "status": "_queued"})
    call = store.tool_call("t")
    assert call is not None and (call.kind, call.status) == ("_teleport", "_queued")


def asked(store: Store, tool_call: Any) -> Any:
    """A permission request's tool call, as the live session records it: the update the store
    makes of it, applied like any update (None when the store makes none)."""
    update = store.asked_tool_call(tool_call)
    return None if update is None else store.apply(update)


def test_gemini_permission_for_unannounced_tool_call_creates_entry() -> None:
    store = Store()
    store.apply(chunk("agent_message", "I will write the file"))
    change = asked(
        store, {"toolCallId": "write-1", "title": "Write hello.txt", "kind": "edit", "status": "pending"}
    )
    assert isinstance(change, NewEntry) and change.index == 1
    call = store.tool_call("write-1")
    assert call is not None and call.title == "Write hello.txt"
    # the permission's tool call now exists: a later update patches the same entry
    assert isinstance(store.apply({"sessionUpdate": "tool_call_update", "toolCallId": "write-1", "status": "completed"}), EntryUpdated)
    assert len(store.entries) == 2


def test_codex_in_progress_before_permission_request_is_not_reset_to_pending() -> None:
    store = Store()
    store.apply({"sessionUpdate": "tool_call", "toolCallId": "exec", "title": "Run", "status": "in_progress"})
    change = asked(store, {"toolCallId": "exec", "title": "Run `make`", "status": "pending"})
    assert isinstance(change, EntryUpdated)
    call = store.tool_call("exec")
    assert call is not None and call.status == "in_progress" and call.title == "Run `make`"
    # a pending call stays pending, and a real status change through the same path applies
    store.apply({"sessionUpdate": "tool_call", "toolCallId": "p", "title": "P", "status": "pending"})
    asked(store, {"toolCallId": "p", "status": "in_progress"})
    assert store.tool_call("p").status == "in_progress"  # type: ignore[union-attr]


def test_asked_tool_call_rejects_garbage() -> None:
    store = Store()
    assert store.asked_tool_call({"title": "no id"}) is None
    assert store.asked_tool_call("nope") is None
    assert store.entries == []


def test_cancel_tool_calls_marks_only_unfinished_calls() -> None:
    store = Store()
    for tool_id, status in [("a", "pending"), ("b", "completed"), ("c", "in_progress"), ("d", "failed")]:
        store.apply({"sessionUpdate": "tool_call", "toolCallId": tool_id, "title": tool_id, "status": status})
    changes = [store.apply(update) for update in store.cancelled_tool_calls()]
    assert [c.index for c in changes] == [0, 2]  # type: ignore[union-attr]
    assert [e.status for e in store.entries] == [CANCELLED, "completed", CANCELLED, "failed"]  # type: ignore[union-attr]
    # the agent may still report afterwards, but a final status is final (issue 32.13)
    output = {"type": "content", "content": {"type": "text", "text": "Cancelled."}}
    store.apply({"sessionUpdate": "tool_call_update", "toolCallId": "c", "status": "failed", "content": [output]})
    call = store.tool_call("c")
    assert call is not None and call.status == CANCELLED and call.content == [output]


@pytest.mark.parametrize("final", ["completed", "failed", CANCELLED])
@pytest.mark.parametrize(
    "later",
    [
        {"sessionUpdate": "tool_call_update", "status": "failed"},
        {"sessionUpdate": "tool_call_update", "status": "completed"},
        {"sessionUpdate": "tool_call_update", "status": "in_progress"},
        {"sessionUpdate": "tool_call_update", "status": None},
        {"sessionUpdate": "tool_call", "title": "again", "status": "pending"},
    ],
    ids=["failed", "completed", "in-progress", "null", "announced-again"],
)
def test_a_final_status_is_final(final: str, later: dict[str, Any]) -> None:
    store = Store()
    store.apply({"sessionUpdate": "tool_call", "toolCallId": "t", "title": "T", "status": "in_progress"})
    store.apply({"sessionUpdate": "tool_call_update", "toolCallId": "t", "status": final})
    store.apply({**later, "toolCallId": "t"})
    call = store.tool_call("t")
    assert call is not None and call.status == final
    assert call.title == later.get("title", "T")  # the rest of the update applies


def test_cancelled_tool_calls_since_an_entry_leave_earlier_calls_alone() -> None:
    store = Store()
    store.apply({"sessionUpdate": "tool_call", "toolCallId": "old", "title": "old", "status": "pending"})
    store.end_turn("end_turn")
    since = len(store.entries)
    store.apply({"sessionUpdate": "tool_call", "toolCallId": "new", "title": "new", "status": "in_progress"})
    assert store.cancelled_tool_calls(since) == [
        {"sessionUpdate": "tool_call_update", "toolCallId": "new", "status": CANCELLED}
    ]


# -- plans -----------------------------------------------------------------------------------


def plan_entry(content: str, status: str = "pending") -> dict[str, Any]:
    return {"content": content, "priority": "medium", "status": status}


def test_v1_plan_replaces_the_current_plan_in_place() -> None:
    store = Store()
    first = store.apply({"sessionUpdate": "plan", "entries": [plan_entry("a"), plan_entry("b")]})
    store.apply(chunk("agent_message", "working"))
    second = store.apply({"sessionUpdate": "plan", "entries": [plan_entry("a", "completed")]})
    assert isinstance(first, NewEntry) and isinstance(second, EntryUpdated) and second.index == 0
    plan = store.entries[0]
    assert isinstance(plan, Plan) and plan.plan_id is None
    assert plan.entries == [plan_entry("a", "completed")]
    assert len(store.entries) == 2


def test_v1_plan_in_a_new_turn_is_a_new_entry() -> None:
    store = Store()
    store.apply({"sessionUpdate": "plan", "entries": [plan_entry("turn 1")]})
    store.turn_boundary()
    change = store.apply({"sessionUpdate": "plan", "entries": [plan_entry("turn 2")]})
    assert isinstance(change, NewEntry) and change.index == 1
    # in a replay there is no turn_boundary() call: a user message opens the turn
    store.apply(chunk("user_message", "next"))
    change = store.apply({"sessionUpdate": "plan", "entries": [plan_entry("turn 3")]})
    assert isinstance(change, NewEntry) and change.index == 3
    assert [e.entries[0]["content"] for e in store.entries if isinstance(e, Plan)] == ["turn 1", "turn 2", "turn 3"]


def test_v2_plan_update_keyed_by_plan_id() -> None:
    store = Store()

    def plan_update(plan_id: str, *entries: dict[str, Any]) -> dict[str, Any]:
        return {"sessionUpdate": "plan_update", "plan": {"type": "items", "planId": plan_id, "entries": list(entries)}}

    assert isinstance(store.apply(plan_update("p1", plan_entry("x"))), NewEntry)
    assert isinstance(store.apply(plan_update("p2", plan_entry("y"))), NewEntry)
    change = store.apply(plan_update("p1", plan_entry("x", "completed"), plan_entry("z")))
    assert isinstance(change, EntryUpdated) and change.index == 0
    assert store.entries[0].entries == [plan_entry("x", "completed"), plan_entry("z")]  # type: ignore[union-attr]
    assert store.entries[1].entries == [plan_entry("y")]  # type: ignore[union-attr]


def test_v2_unknown_plan_type_is_kept_whole() -> None:
    store = Store()
    body = {"type": "_markdown", "planId": "p", "markdown": "# steps"}
    change = store.apply({"sessionUpdate": "plan_update", "plan": body})
    assert isinstance(change, NewEntry)
    plan = store.entries[0]
    assert isinstance(plan, Plan) and plan.plan_type == "_markdown" and plan.data == body and plan.entries == []


# -- session-level state ---------------------------------------------------------------------


def test_session_level_updates() -> None:
    store = Store()
    commands = [{"name": "web", "description": "Search the web", "input": {"hint": "query"}}]
    assert store.apply({"sessionUpdate": "available_commands_update", "availableCommands": commands}) == SessionChanged(AVAILABLE_COMMANDS)
    assert store.available_commands == commands
    assert store.apply({"sessionUpdate": "current_mode_update", "currentModeId": "code"}) == SessionChanged(CURRENT_MODE)
    assert store.current_mode_id == "code"
    # the shape of the v1 Session Modes page's own example (the schema says currentModeId)
    assert store.apply({"sessionUpdate": "current_mode_update", "modeId": "ask"}) == SessionChanged(CURRENT_MODE)
    assert store.current_mode_id == "ask"
    options = [{"id": "model", "name": "Model", "type": "select", "currentValue": "m1", "options": []}]
    assert store.apply({"sessionUpdate": "config_option_update", "configOptions": options}) == SessionChanged(CONFIG_OPTIONS)
    assert store.config_options == options
    assert store.apply({"sessionUpdate": "session_info_update", "title": "Fix the bug"}) == SessionChanged(SESSION_INFO)
    assert store.apply({"sessionUpdate": "session_info_update", "updatedAt": "2026-01-01T00:00:00Z"}) == SessionChanged(SESSION_INFO)
    assert (store.title, store.updated_at) == ("Fix the bug", "2026-01-01T00:00:00Z")  # omitted title unchanged
    store.apply({"sessionUpdate": "session_info_update", "title": None})
    assert store.title is None
    usage = {"sessionUpdate": "usage_update", "used": 53000, "size": 200000, "cost": {"amount": 0.045, "currency": "USD"}}
    assert store.apply(usage) == SessionChanged(USAGE)
    assert store.usage == {"used": 53000, "size": 200000, "cost": {"amount": 0.045, "currency": "USD"}}
    assert store.entries == []


def test_state_update_lifecycle() -> None:
    store = Store()
    assert store.state == "idle"
    assert store.apply({"sessionUpdate": "state_update", "state": "running"}) == SessionChanged(STATE)
    assert (store.state, store.stop_reason) == ("running", None)
    store.apply({"sessionUpdate": "state_update", "state": "requires_action"})
    assert store.state == "requires_action"
    store.apply({"sessionUpdate": "state_update", "state": "idle", "stopReason": "cancelled"})
    assert (store.state, store.stop_reason) == ("idle", "cancelled")
    store.apply({"sessionUpdate": "state_update", "state": "running"})
    assert store.stop_reason is None
    store.apply({"sessionUpdate": "state_update", "state": "_paused", "_meta": {"x": 1}})
    assert store.state == "_paused"
    assert store.set_state("idle", "end_turn") == SessionChanged(STATE)
    assert (store.state, store.stop_reason) == ("idle", "end_turn")


# -- robustness ------------------------------------------------------------------------------


MALFORMED: list[Any] = [
    None,
    [],
    "agent_message_chunk",
    42,
    {},
    {"sessionUpdate": None},
    {"sessionUpdate": ["x"]},
    {"sessionUpdate": {"a": 1}},
    {"sessionUpdate": "future_thing", "x": 1},
    {"sessionUpdate": "_vendor_update", "_meta": {}},
    {"sessionUpdate": "agent_message_chunk"},
    {"sessionUpdate": "agent_message_chunk", "content": "text"},
    {"sessionUpdate": "agent_message_chunk", "content": {"type": "text"}},
    {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": 5}},
    {"sessionUpdate": "agent_message_chunk", "content": {"text": "untyped"}},
    {"sessionUpdate": "agent_message", "messageId": "m", "content": "not a list"},
    {"sessionUpdate": "user_message"},
    {"sessionUpdate": "tool_call"},
    {"sessionUpdate": "tool_call", "toolCallId": 5},
    {"sessionUpdate": "tool_call_update", "status": "completed"},
    {"sessionUpdate": "tool_call_content_chunk", "toolCallId": "t"},
    {"sessionUpdate": "tool_call_content_chunk", "toolCallId": "t", "content": [1]},
    {"sessionUpdate": "plan"},
    {"sessionUpdate": "plan", "entries": {}},
    {"sessionUpdate": "plan_update"},
    {"sessionUpdate": "plan_update", "plan": {"type": "items"}},
    {"sessionUpdate": "plan_update", "plan": {"planId": "p"}},
    {"sessionUpdate": "available_commands_update"},
    {"sessionUpdate": "current_mode_update", "currentModeId": None},
    {"sessionUpdate": "config_option_update", "configOptions": None},
    {"sessionUpdate": "session_info_update"},
    {"sessionUpdate": "session_info_update", "title": 3},
    {"sessionUpdate": "usage_update", "used": "1", "size": 2},
    {"sessionUpdate": "state_update"},
    {"sessionUpdate": "state_update", "state": 1},
]


@pytest.mark.parametrize("update", MALFORMED, ids=range(len(MALFORMED)))
def test_malformed_or_unknown_updates_are_ignored_quietly(update: Any, caplog: pytest.LogCaptureFixture) -> None:
    store = Store()
    store.apply(chunk("agent_message", "kept"))
    before = store.transcript()
    with caplog.at_level(logging.DEBUG, logger="acpcli.model"):
        assert store.apply(update) is None
    assert store.transcript() == before
    assert (store.state, store.title, store.usage, store.current_mode_id) == ("idle", None, None, None)
    # handled as bad input (debug), not by the bug safety net (warning)
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
    store.apply(chunk("agent_message", " still streaming"))
    assert texts(store) == [("agent", "kept still streaming")]


def test_a_bug_in_a_handler_is_contained_and_logged(caplog: pytest.LogCaptureFixture) -> None:
    store = Store()

    def broken(update: dict[str, Any]) -> None:
        raise RuntimeError("bug")

    store._dispatch["plan"] = broken
    with caplog.at_level(logging.WARNING, logger="acpcli.model"):
        assert store.apply({"sessionUpdate": "plan", "entries": []}) is None
    assert any("bug" in str(r.exc_info[1]) for r in caplog.records if r.exc_info)


def test_invalid_items_in_lists_are_skipped() -> None:
    store = Store()
    store.apply({"sessionUpdate": "plan", "entries": [plan_entry("a"), "junk", 3]})
    store.apply({"sessionUpdate": "tool_call", "toolCallId": "t", "title": "T", "content": [None, {"type": "content", "content": text("x")}]})
    assert store.entries[0].entries == [plan_entry("a")]  # type: ignore[union-attr]
    assert store.entries[1].content == [{"type": "content", "content": text("x")}]  # type: ignore[union-attr]


def test_transcript_is_an_independent_snapshot() -> None:
    store = Store()
    store.apply(chunk("agent_message", "a", "m"))
    store.apply({"sessionUpdate": "tool_call", "toolCallId": "t", "title": "T", "rawInput": {"deep": [1]}})
    snap = store.transcript()
    snap[0]["content"][0]["text"] = "changed"
    snap[1]["rawInput"]["deep"].append(2)
    store.apply(chunk("agent_message", "b", "m"))
    assert store.entries[0].text == "ab"  # type: ignore[union-attr]
    assert store.tool_call("t").raw_input == {"deep": [1]}  # type: ignore[union-attr]
    assert snap[0]["content"][0]["text"] == "changed"


def test_event_indices_always_name_the_entry() -> None:
    store = Store()
    updates = [
        chunk("user_message", "q"),
        chunk("agent_thought", "t"),
        {"sessionUpdate": "tool_call", "toolCallId": "x", "title": "X"},
        chunk("agent_message", "a", "m"),
        {"sessionUpdate": "tool_call_update", "toolCallId": "x", "status": "completed"},
        chunk("agent_message", "b", "m"),
        {"sessionUpdate": "plan", "entries": []},
        whole("agent_message", "m", text("c")),
    ]
    for update in updates:
        change = store.apply(update)
        assert isinstance(change, (NewEntry, EntryUpdated))
        assert store.entries[change.index] is change.entry
        if isinstance(change, NewEntry):
            assert change.index == len(store.entries) - 1


def test_add_user_message_records_the_prompt_and_opens_a_turn() -> None:
    store = Store()
    store.apply(chunk("agent_message", "earlier answer"))
    store.apply({"sessionUpdate": "plan", "entries": [plan_entry("old")]})
    # The v1 echo of a prompt (SessionFeed.echo_prompt): a turn boundary, then each block as a
    # user message chunk; a junk block is ignored.
    store.turn_boundary()
    change = store.apply({"sessionUpdate": "user_message_chunk", "content": text("next question")})
    assert store.apply({"sessionUpdate": "user_message_chunk", "content": "junk"}) is None
    assert isinstance(change, NewEntry) and change.index == 2 and change.entry.kind == "user"  # type: ignore[union-attr]
    store.apply(chunk("agent_message", "new answer"))
    assert isinstance(store.apply({"sessionUpdate": "plan", "entries": [plan_entry("new")]}), NewEntry)
    assert texts(store) == [("agent", "earlier answer"), ("user", "next question"), ("agent", "new answer")]


def test_change_objects_stay_frozen_values() -> None:
    # NewEntry / EntryUpdated have hand-written (faster) constructors: still dataclasses
    # with value equality, a repr, match support and no assignment after construction.
    import dataclasses

    from acpcli.model import EntryUpdated, Message, NewEntry

    message = Message("agent")
    block = {"type": "text", "text": "x"}
    changed = EntryUpdated(3, message, block)
    assert changed == EntryUpdated(index=3, entry=message, appended=block)
    assert changed != EntryUpdated(3, message) and EntryUpdated(3, message).appended is None
    assert NewEntry(1, message) == NewEntry(entry=message, index=1) != EntryUpdated(1, message)
    assert repr(NewEntry(1, message)).startswith("NewEntry(index=1, entry=Message(")
    for change in (changed, NewEntry(1, message)):
        with pytest.raises(dataclasses.FrozenInstanceError):
            change.index = 9  # type: ignore[misc]
    match changed:
        case EntryUpdated(index, entry, appended):
            assert (index, entry, appended) == (3, message, block)
        case _:
            pytest.fail("no match")
    assert [f.name for f in dataclasses.fields(EntryUpdated)] == ["index", "entry", "appended"]


def test_current_model_update_keeps_the_v1_models_state() -> None:
    from acpcli.model import CURRENT_MODEL, SessionChanged, Store

    store = Store()
    change = store.apply({
        "sessionUpdate": "current_model_update", "currentModelId": "m1",
        "availableModels": [{"modelId": "m1", "name": "One"}, {"name": "no id"}, "junk"],
    })
    assert change == SessionChanged(CURRENT_MODEL)
    assert store.current_model_id == "m1" and store.available_models == [{"modelId": "m1", "name": "One"}]
    assert store.apply({"sessionUpdate": "current_model_update", "currentModelId": "m2"}) == SessionChanged(CURRENT_MODEL)
    assert store.current_model_id == "m2" and len(store.available_models) == 1  # the list stays
    assert store.apply({"sessionUpdate": "current_model_update", "currentModelId": 3}) is None
