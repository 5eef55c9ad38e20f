"""The plain view (pipes): no ANSI, append-only, flushed per chunk, equal to to_text."""

from __future__ import annotations

import io
import re
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from acpcli.model import Message, Store
from acpcli.render.plain import PlainView
from acpcli.render.transcript import LineWriter, to_text

ANSI = re.compile(r"\x1b[\[\]]")


def text(t: str) -> dict[str, Any]:
    return {"type": "text", "text": t}


def chunk(kind: str, t: str, mid: str | None = None) -> dict[str, Any]:
    update: dict[str, Any] = {"sessionUpdate": f"{kind}_chunk", "content": text(t)}
    if mid is not None:
        update["messageId"] = mid
    return update


def whole(kind: str, mid: str, *blocks: dict[str, Any]) -> dict[str, Any]:
    return {"sessionUpdate": kind, "messageId": mid, "content": list(blocks)}


DIFF = {"type": "diff", "path": "/p/config.json", "oldText": '{\n  "debug": false\n}\n', "newText": '{\n  "debug": true\n}\n'}


class Recorder(io.StringIO):
    """A stream that records its write and flush calls in order."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[tuple[str, str]] = []

    def write(self, s: str) -> int:
        self.calls.append(("write", s))
        return super().write(s)

    def flush(self) -> None:
        self.calls.append(("flush", ""))
        super().flush()


def stream(updates: list[dict[str, Any]], view: PlainView | None = None, out: io.StringIO | None = None) -> tuple[str, Store]:
    out = out if out is not None else io.StringIO()
    view = view if view is not None else PlainView(out)
    session = SimpleNamespace(store=Store(), session_id="s")
    for update in updates:
        change = session.store.apply(update)
        if change is not None:
            view.on_change(session, change)
    view.close()
    return out.getvalue(), session.store


def conversation() -> list[dict[str, Any]]:
    """A v1-style turn: everything streamed, tool calls updated, the plan replaced."""
    return [
        chunk("user_message", "Turn on debug\nplease"),
        chunk("agent_thought", "Look at the "),
        chunk("agent_thought", "config first."),
        {"sessionUpdate": "plan", "entries": [{"content": "Read config", "priority": "high", "status": "in_progress"}]},
        {"sessionUpdate": "tool_call", "toolCallId": "t1", "title": "Read config.json", "kind": "read", "status": "pending",
         "locations": [{"path": "/p/config.json", "line": 2}]},
        {"sessionUpdate": "tool_call_update", "toolCallId": "t1", "status": "completed",
         "content": [{"type": "content", "content": text("debug is false")}]},
        {"sessionUpdate": "tool_call", "toolCallId": "t2", "title": "Edit config.json", "kind": "edit", "status": "in_progress",
         "content": [DIFF]},
        {"sessionUpdate": "tool_call_update", "toolCallId": "t2", "status": "completed"},
        chunk("agent_message", "Debug is "),
        chunk("agent_message", "now **on**.\n\nAnything "),
        chunk("agent_message", "else?"),
    ]


def test_streamed_conversation_is_plain_and_complete() -> None:
    out, _ = stream(conversation())
    assert not ANSI.search(out)
    assert out.startswith("> Turn on debug\n> please\n\n[thought] Look at the config first.\n\n[plan] [~] Read config\n\n")
    assert "[tool] Read config.json (read): pending\n  at /p/config.json:2\n[tool] Read config.json (read): completed\n  debug is false\n" in out
    assert "  -  \"debug\": false\n  +  \"debug\": true\n" in out
    assert "  --- /p/config.json\n  +++ /p/config.json\n  @@ -1,3 +1,3 @@\n" in out
    assert "[tool] Edit config.json (edit): completed\n" in out
    assert out.endswith("\n\nDebug is now **on**.\n\nAnything else?\n")
    # every piece of text exactly once, and in order
    for piece in ("Turn on debug", "config first.", "debug is false", "Debug is now", "Anything else?"):
        assert out.count(piece) == 1, piece
    order = [out.index(p) for p in ("> Turn on", "[thought]", "[plan]", "[tool] Read", "[tool] Edit", "Debug is now")]
    assert order == sorted(order)


def test_writes_only_the_appended_text_and_flushes_per_chunk() -> None:
    out = Recorder()
    view = PlainView(out)
    session = SimpleNamespace(store=Store())
    pieces = ["Hello", ", wor", "ld.\nSecond", " line"]
    for i, piece in enumerate(pieces):
        before = len(out.calls)
        view.on_change(session, session.store.apply(chunk("agent_message", piece)))
        calls = out.calls[before:]
        assert calls[-1] == ("flush", "")  # each chunk reaches the pipe at once
        written = "".join(s for kind, s in calls if kind == "write")
        if i == 0:
            assert written == "Hello"
        elif i == 2:
            assert written == "ld.\nSecond"
        else:
            assert written == piece
    view.close()
    assert out.getvalue() == "Hello, world.\nSecond line\n"


def test_text_is_taken_from_appended_not_reread_per_chunk(monkeypatch: pytest.MonkeyPatch) -> None:
    reads = {"content": 0, "text": 0}
    content_prop, text_prop = Message.content, Message.text

    def counting(name: str, prop: Any) -> property:
        def get(self: Message) -> Any:
            reads[name] += 1
            return prop.fget(self)

        return property(get)

    monkeypatch.setattr(Message, "content", counting("content", content_prop))
    monkeypatch.setattr(Message, "text", counting("text", text_prop))
    out, _store = stream([chunk("agent_message", f"word{i} ") for i in range(500)])
    assert out.count("word") == 500
    assert reads["text"] == 0
    assert reads["content"] <= 2  # the NewEntry's first block, not once per chunk


def test_whole_entries_stream_exactly_as_to_text() -> None:
    updates = [
        whole("user_message", "u1", text("Turn on debug")),
        whole("agent_thought", "th1", text("Look at the config.\n\nThen edit it.")),
        {"sessionUpdate": "plan_update", "plan": {"planId": "p1", "type": "items",
                                                  "entries": [{"content": "Edit", "priority": "low", "status": "completed"}]}},
        {"sessionUpdate": "tool_call_update", "toolCallId": "t1", "title": "Edit config.json", "kind": "edit",
         "status": "completed", "content": [DIFF, {"type": "terminal", "terminalId": "term_1"}]},
        whole("agent_message", "a1", text("Done.\n\n"), {"type": "image", "mimeType": "image/png", "data": "AAAA"}, text("See above.")),
        whole("user_message", "u2", text("thanks")),
        whole("agent_message", "a2", text("\n\nYou're welcome.\n\n\n")),
    ]
    out, store = stream(updates)
    assert out == to_text(store)
    assert "[thought] Look at the config.\n[thought]\n[thought] Then edit it.\n" in out
    assert "Done.\n\n[image image/png]\nSee above.\n" in out
    assert "  [terminal term_1]\n" in out
    assert out.endswith("> thanks\n\nYou're welcome.\n")


def test_chunks_then_same_whole_message_write_nothing_more() -> None:
    updates = [chunk("agent_message", "Hello ", "m1"), chunk("agent_message", "world", "m1"),
               whole("agent_message", "m1", text("Hello world"))]
    out, store = stream(updates)
    assert out == "Hello world\n" == to_text(store)


def test_whole_message_extending_the_chunks_writes_the_rest() -> None:
    updates = [chunk("agent_message", "Hello ", "m1"), whole("agent_message", "m1", text("Hello world"))]
    out, _ = stream(updates)
    assert out == "Hello world\n"


def test_whole_message_replacing_the_chunks_is_written_again() -> None:
    updates = [chunk("agent_message", "Hello wrld", "m1"), whole("agent_message", "m1", text("Hello world")),
               chunk("agent_message", "!", "m1")]
    out, store = stream(updates)
    assert out == "Hello wrld\n\n[agent message replaced]\nHello world!\n"
    assert to_text(store) == "Hello world!\n"


def test_cleared_message_is_said() -> None:
    updates = [chunk("agent_message", "oops", "m1"), {"sessionUpdate": "agent_message", "messageId": "m1", "content": None}]
    out, _ = stream(updates)
    assert out == "oops\n\n[agent message cleared]\n"


def test_interleaved_messages_with_ids_stay_readable() -> None:
    updates = [chunk("agent_message", "first part", "a"), chunk("agent_thought", "hmm", "t"),
               chunk("agent_message", " and more", "a")]
    out, _ = stream(updates)
    assert out == "first part\n\n[thought] hmm\n\n and more\n"


def test_tool_call_content_is_written_once_and_new_content_again() -> None:
    item = {"type": "content", "content": text("found 3 files")}
    updates = [
        {"sessionUpdate": "tool_call", "toolCallId": "t", "title": "Search", "kind": "search", "status": "pending"},
        {"sessionUpdate": "tool_call_update", "toolCallId": "t", "status": "in_progress", "content": [item]},
        {"sessionUpdate": "tool_call_update", "toolCallId": "t", "status": "completed", "content": [dict(item)]},
        {"sessionUpdate": "tool_call_content_chunk", "toolCallId": "t", "content": {"type": "content", "content": text("and 1 more")}},
        {"sessionUpdate": "tool_call_update", "toolCallId": "t", "content": [{"type": "content", "content": text("redone")}]},
    ]
    out, _ = stream(updates)
    assert out == (
        "[tool] Search (search): pending\n"
        "[tool] Search (search): in_progress\n  found 3 files\n"
        "[tool] Search (search): completed\n"
        "  and 1 more\n"
        "  redone\n"
    )


def test_tool_update_after_other_output_repeats_its_header() -> None:
    updates = [
        {"sessionUpdate": "tool_call", "toolCallId": "t", "title": "Run tests", "kind": "execute", "status": "in_progress"},
        chunk("agent_message", "waiting"),
        {"sessionUpdate": "tool_call_update", "toolCallId": "t", "status": "failed"},
        {"sessionUpdate": "tool_call_update", "toolCallId": "t", "status": "failed"},  # no change: nothing
    ]
    out, _ = stream(updates)
    assert out == "[tool] Run tests (execute): in_progress\n\nwaiting\n\n[tool] Run tests (execute): failed\n"


def test_plan_rewritten_only_when_it_changes() -> None:
    entries = [{"content": "a", "priority": "low", "status": "pending"}, {"content": "b", "priority": "low", "status": "pending"}]
    done = [dict(entries[0], status="completed"), entries[1]]
    updates = [{"sessionUpdate": "plan", "entries": entries}, {"sessionUpdate": "plan", "entries": entries},
               {"sessionUpdate": "plan", "entries": done}]
    out, _ = stream(updates)
    assert out == "[plan] [ ] a\n[plan] [ ] b\n[plan] [x] a\n[plan] [ ] b\n"


def test_empty_opening_chunk_leaves_no_gap() -> None:
    updates = [chunk("agent_message", ""), {"sessionUpdate": "tool_call", "toolCallId": "t", "title": "X", "status": "completed"},
               chunk("agent_message", "")]
    out, store = stream(updates)
    assert out == "[tool] X (other): completed\n" == to_text(store)


def test_quiet_writes_agent_text_only() -> None:
    out = io.StringIO()
    text_out, _ = stream(conversation(), PlainView(out, quiet=True), out)
    assert text_out == "Debug is now **on**.\n\nAnything else?\n"


def test_turn_ended_ends_the_line_and_says_the_stop_reason() -> None:
    out = io.StringIO()
    view = PlainView(out)
    session = SimpleNamespace(store=Store())
    view.on_change(session, session.store.apply(chunk("agent_message", "partial answer")))
    view.turn_ended("max_tokens")
    view.on_change(session, session.store.apply(chunk("user_message", "go on")))
    view.turn_ended("end_turn")
    view.close()
    assert out.getvalue() == "partial answer\n\n[turn ended: the agent reached its token limit]\n\n> go on\n"


def test_final_only_prints_the_transcript_at_close() -> None:
    out = io.StringIO()
    view = PlainView(out, stream=False)
    session = SimpleNamespace(store=Store())
    for update in conversation():
        view.on_change(session, session.store.apply(update))
    assert out.getvalue() == ""
    view.close()
    assert out.getvalue() == to_text(session.store)
    assert "[tool] Read config.json (read): completed\n  at /p/config.json:2\n  debug is false\n" in out.getvalue()


def test_print_store_writes_to_text() -> None:
    _, store = stream(conversation())
    out = io.StringIO()
    PlainView(out).print_store(store)
    assert out.getvalue() == to_text(store)


@settings(max_examples=200, deadline=None)
@given(
    st.text(alphabet=st.sampled_from("ab \n"), max_size=40),
    st.lists(st.integers(min_value=0, max_value=40), max_size=8),
    st.sampled_from(["", "> ", "[thought] "]),
)
def test_line_writer_output_does_not_depend_on_chunking(body: str, cuts: list[int], prefix: str) -> None:
    def run(pieces: list[str]) -> str:
        out: list[str] = []
        writer = LineWriter(out.append, prefix)
        for piece in pieces:
            writer.feed(piece)
        writer.end()
        return "".join(out)

    points = sorted({min(c, len(body)) for c in cuts})
    pieces = [body[a:b] for a, b in zip([0, *points], [*points, len(body)], strict=False)]
    result = run(pieces)
    assert result == run([body])
    if body.strip("\n"):
        lines = body.strip("\n").split("\n")
        assert result == "".join((prefix + line if line else prefix.rstrip()) + "\n" for line in lines)
    else:
        assert result == ""
