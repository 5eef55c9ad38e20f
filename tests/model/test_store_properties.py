"""Property tests for the message store: it agrees with a literal reference model, every
replay order of a conversation gives the same transcript, and no input makes it raise."""

from __future__ import annotations

import itertools
import logging
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from acpcli.model import EntryUpdated, Message, NewEntry, Store

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

KINDS = {"user": "user_message", "agent": "agent_message", "thought": "agent_thought"}
short_text = st.text(alphabet="ab \n\u00e9\U0001f600", max_size=12)


def text_block(t: str) -> dict[str, Any]:
    return {"type": "text", "text": t}


def normalize(blocks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Merge adjacent plain text blocks: text streamed in pieces reads the same."""
    out: list[dict[str, Any]] = []
    for block in blocks:
        if block.get("type") == "text" and out and out[-1].get("type") == "text":
            out[-1] = {**out[-1], "text": out[-1]["text"] + block["text"]}
        else:
            out.append(dict(block))
    return out


def strip_meta(transcript: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in entry.items() if k != "_meta"} for entry in transcript]


# -- (1) random upserts and chunks against a literal reference model ---------------------------

block = st.one_of(
    short_text.map(text_block),
    st.sampled_from(
        [
            {"type": "image", "data": "AA==", "mimeType": "image/png"},
            {"type": "resource_link", "uri": "file:///x", "name": "x"},
        ]
    ),
)
# Few keys and mostly chunks, so that runs of chunks on one message (and what ends them)
# come up often.
op = st.tuples(
    st.sampled_from(["chunk", "chunk", "chunk", "whole", "no_content", "null_content"]),
    st.sampled_from(["agent", "agent", "thought", "user"]),
    st.sampled_from(["m1", "m2"]),
    st.lists(block, min_size=1, max_size=3),
)


@SETTINGS
@given(st.lists(op, max_size=50))
def test_store_matches_reference_model(ops: list[tuple[str, str, str, list[dict[str, Any]]]]) -> None:
    store = Store()
    model: dict[tuple[str, str], list[dict[str, Any]]] = {}  # (kind, id) -> blocks, in creation order
    for action, kind, mid, blocks in ops:
        key = (kind, mid)
        if action == "chunk":
            update = {"sessionUpdate": f"{KINDS[kind]}_chunk", "messageId": mid, "content": blocks[0]}
            model.setdefault(key, []).append(blocks[0])
        elif action == "whole":
            update = {"sessionUpdate": KINDS[kind], "messageId": mid, "content": blocks}
            model[key] = list(blocks)
        elif action == "no_content":
            update = {"sessionUpdate": KINDS[kind], "messageId": mid, "_meta": {"n": len(blocks)}}
            model.setdefault(key, [])
        else:
            update = {"sessionUpdate": KINDS[kind], "messageId": mid, "content": None}
            model[key] = []
        change = store.apply(update)
        assert isinstance(change, (NewEntry, EntryUpdated))
        assert store.entries[change.index] is change.entry

    got = {(e.kind, e.message_id): normalize(e.content) for e in store.entries if isinstance(e, Message)}
    assert list(got) == list(model)  # one entry per (kind, id), in order of first sight
    assert got == {key: normalize(blocks) for key, blocks in model.items()}


# -- (2) every replay order of one conversation gives the same transcript -----------------------


@st.composite
def conversations(draw: st.DrawFn) -> list[tuple[str, str, str]]:
    """(kind, messageId, text) for a few messages of each kind."""
    n = draw(st.integers(min_value=1, max_value=8))
    return [(draw(st.sampled_from(sorted(KINDS))), f"msg_{i}", draw(short_text)) for i in range(n)]


def split(draw: st.DrawFn, text: str) -> list[str]:
    """Random chunks of ``text`` (empty chunks allowed, as claude sends them)."""
    cuts = sorted(draw(st.lists(st.integers(0, len(text)), max_size=4)))
    bounds = [0, *cuts, len(text)]
    return [text[a:b] for a, b in itertools.pairwise(bounds)]


def chunk_update(kind: str, mid: str, t: str) -> dict[str, Any]:
    return {"sessionUpdate": f"{KINDS[kind]}_chunk", "messageId": mid, "content": text_block(t)}


def whole_update(kind: str, mid: str, t: str) -> dict[str, Any]:
    return {"sessionUpdate": KINDS[kind], "messageId": mid, "content": [text_block(t)]}


@st.composite
def replay_stream(draw: st.DrawFn, kind: str, mid: str, t: str) -> list[dict[str, Any]]:
    """The updates for one message, replayed one of the ways the seed allows."""
    way = draw(st.sampled_from(["chunks", "whole", "chunks_then_whole", "whole_then_chunks"]))
    if way == "chunks":
        stream = [chunk_update(kind, mid, c) for c in split(draw, t)]
    elif way == "whole":
        stream = [whole_update(kind, mid, t)]
    elif way == "chunks_then_whole":
        # what the chunks built (even something stale) is replaced by the whole message
        stale = draw(st.sampled_from([t, t[::-1], "stale"]))
        stream = [*(chunk_update(kind, mid, c) for c in split(draw, stale)), whole_update(kind, mid, t)]
    else:
        cut = draw(st.integers(0, len(t)))
        stream = [whole_update(kind, mid, t[:cut]), *(chunk_update(kind, mid, c) for c in split(draw, t[cut:]))]
    if draw(st.booleans()):  # a content-less update, anywhere after the message exists
        at = draw(st.integers(1, len(stream)))
        stream.insert(at, {"sessionUpdate": KINDS[kind], "messageId": mid, "_meta": {"touched": True}})
    return stream


@st.composite
def replays(draw: st.DrawFn) -> tuple[list[tuple[str, str, str]], list[dict[str, Any]]]:
    conversation = draw(conversations())
    streams = [draw(replay_stream(kind, mid, t)) for kind, mid, t in conversation]
    # Interleave the streams at random, keeping each stream's order and the order in which
    # messages first appear (entries are ordered by first sight).
    updates: list[dict[str, Any]] = []
    started = 0
    positions = [0] * len(streams)
    while True:
        live = [i for i in range(started) if positions[i] < len(streams[i])]
        choices = live + ([started] if started < len(streams) else [])
        if not choices:
            break
        i = draw(st.sampled_from(choices))
        if i == started:
            started += 1
        updates.append(streams[i][positions[i]])
        positions[i] += 1
    return conversation, updates


@SETTINGS
@given(replays())
def test_every_replay_order_yields_the_same_transcript(case: tuple[list[tuple[str, str, str]], list[dict[str, Any]]]) -> None:
    conversation, updates = case
    canonical = Store()
    for kind, mid, t in conversation:
        canonical.apply(whole_update(kind, mid, t))

    store = Store()
    for update in updates:
        store.apply(update)
    assert strip_meta(store.transcript()) == strip_meta(canonical.transcript())
    assert [e.text for e in store.entries] == [t for _, _, t in conversation]  # type: ignore[union-attr]


# -- (3) v1 id-less chunks: message boundaries are implied ---------------------------------------

idless_op = st.one_of(
    st.tuples(st.sampled_from(sorted(KINDS)), short_text),
    st.sampled_from(["tool_call", "plan", "turn", "usage"]),
)


@SETTINGS
@given(st.lists(idless_op, max_size=30))
def test_idless_chunks_split_exactly_at_kind_changes_entries_and_turns(ops: list[Any]) -> None:
    store = Store()
    expected: list[tuple[str, str]] = []  # (kind, text) of the messages
    open_kind: str | None = None  # kind of the message id-less chunks would continue
    for n, op_ in enumerate(ops):
        if op_ == "tool_call":
            store.apply({"sessionUpdate": "tool_call", "toolCallId": f"t{n}", "title": "T"})
            open_kind = None
        elif op_ == "plan":
            store.turn_boundary()  # so that each plan is a new entry, as tool calls are
            store.apply({"sessionUpdate": "plan", "entries": []})
            open_kind = None
        elif op_ == "turn":
            store.turn_boundary()
            open_kind = None
        elif op_ == "usage":
            store.apply({"sessionUpdate": "usage_update", "used": n, "size": 100})
        else:
            kind, t = op_
            store.apply({"sessionUpdate": f"{KINDS[kind]}_chunk", "content": text_block(t)})
            if open_kind == kind:
                expected[-1] = (kind, expected[-1][1] + t)
            else:
                expected.append((kind, t))
                open_kind = kind
    assert [(e.kind, e.text) for e in store.entries if isinstance(e, Message)] == expected


# -- (4) no input makes the store raise or trip its bug safety net -------------------------------

json_scalar = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.sampled_from(["", "x", "text", "items", "m1", "t1"]))
json_value = st.recursive(
    json_scalar,
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.sampled_from(["type", "text", "planId", "entries", "x"]), children, max_size=3),
    max_leaves=8,
)
FIELDS = [
    "messageId", "content", "toolCallId", "title", "kind", "status", "locations", "rawInput",
    "rawOutput", "entries", "plan", "availableCommands", "currentModeId", "configOptions",
    "title", "updatedAt", "used", "size", "cost", "state", "stopReason", "_meta",
]  # fmt: skip
SESSION_UPDATES = [
    "user_message_chunk", "agent_message_chunk", "agent_thought_chunk", "user_message",
    "agent_message", "agent_thought", "tool_call", "tool_call_update", "tool_call_content_chunk",
    "plan", "plan_update", "available_commands_update", "current_mode_update",
    "config_option_update", "session_info_update", "usage_update", "state_update", "_custom",
]  # fmt: skip
fuzz_update = st.one_of(
    json_value,
    st.builds(
        lambda kind, fields: {"sessionUpdate": kind, **fields},
        st.sampled_from(SESSION_UPDATES),
        st.dictionaries(st.sampled_from(FIELDS), json_value, max_size=4),
    ),
)


class _Warnings(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@SETTINGS
@given(st.lists(fuzz_update, max_size=25))
def test_arbitrary_input_never_raises_nor_hits_the_safety_net(updates: list[Any]) -> None:
    handler = _Warnings()
    logger = logging.getLogger("acpcli.model")
    logger.addHandler(handler)
    try:
        store = Store()
        for update in updates:
            change = store.apply(update)
            if isinstance(change, (NewEntry, EntryUpdated)):
                assert store.entries[change.index] is change.entry
            asked = store.asked_tool_call(update)
            if asked is not None:
                store.apply(asked)
        store.transcript()
        for entry in store.entries:
            if isinstance(entry, Message):
                assert isinstance(entry.text, str)
    finally:
        logger.removeHandler(handler)
    assert handler.records == []
