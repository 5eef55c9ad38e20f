"""The hot path and the models cannot drift apart.

``session/update`` is read at run time as plain dicts by :mod:`acpcli.model` (the run-time
contract in :mod:`acpcli.protocol`). Here every update shape the store accepts -- each variant
its reducer reads (the shapes ``tests/history/test_store.py`` feeds it), the golden files, and
everything the demo agent sends in a v1 and a v2 session -- is validated by the generated
``SessionUpdate`` models of the versions it belongs to, and must parse as its own kind (not as
an ``UnknownVariant``). The other way round, every golden update is accepted by the store.
The few shapes the store reads beyond the schema are listed in :data:`BEYOND_THE_SCHEMA`, each
with its reason, and are checked to stay beyond it.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from acpcli import protocol
from acpcli.model import Store
from acpcli.protocol import wire
from tests.helpers import model_reading as reading

GOLDEN = Path(__file__).resolve().parent.parent / "golden"
DEMO = [sys.executable, "-m", "acpcli.demo_agent", "--delay", "0"]

TEXT = {"type": "text", "text": "hello"}
ANNOTATED = {"type": "text", "text": "note", "annotations": {"audience": ["user"], "priority": 0.5}}
IMAGE = {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"}
LINK = {"type": "resource_link", "uri": "file:///w/a.py", "name": "a.py"}
EMBEDDED = {"type": "resource", "resource": {"uri": "file:///w/a.py", "text": "x = 1\n", "mimeType": "text/x-python"}}
DIFF = {"type": "diff", "path": "/w/a.py", "oldText": "x = 1\n", "newText": "x = 2\n"}
NEW_FILE = {"type": "diff", "path": "/w/b.py", "oldText": None, "newText": "y = 1\n"}
TOOL_TEXT = {"type": "content", "content": TEXT}
TERMINAL = {"type": "terminal", "terminalId": "term-1"}
V1_SELECT = {
    "id": "model", "name": "Model", "category": "model", "type": "select", "currentValue": "fast",
    "options": [{"value": "fast", "name": "Fast"}, {"value": "smart", "name": "Smart", "description": "d"}],
}
V1_BOOLEAN = {"id": "brave", "name": "Brave", "type": "boolean", "currentValue": False}
V2_GROUPED = {
    "configId": "mode", "name": "Mode", "category": "mode", "type": "select", "currentValue": "ask",
    "options": [{"group": "safe", "name": "Safe", "options": [{"value": "ask", "name": "Ask"}]}],
}

V1, V2, BOTH = (1,), (2,), (1, 2)

#: (the versions whose schema it belongs to, an update the store accepts): every variant the
#: reducer reads -- chunks with and without ``messageId``, each block type, whole messages with
#: content, without it and with ``null``, tool calls created, patched, cleared with ``null``,
#: plans, session-level state, v2 turn states.
SHAPES: list[tuple[tuple[int, ...], dict[str, Any]]] = [
    # chunks: v1 as real agents send them (no messageId), v2 with one
    (V1, {"sessionUpdate": "agent_message_chunk", "content": TEXT}),
    (V1, {"sessionUpdate": "agent_thought_chunk", "content": TEXT}),
    (V1, {"sessionUpdate": "user_message_chunk", "content": TEXT}),
    (V1, {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": ""}}),  # claude's empty first chunk
    (V1, {"sessionUpdate": "agent_message_chunk", "content": TEXT, "messageId": None}),
    (V1, {"sessionUpdate": "user_message_chunk", "content": TEXT, "_meta": {"acpcli": {"local": True}}}),
    (BOTH, {"sessionUpdate": "agent_message_chunk", "content": TEXT, "messageId": "m1"}),
    (BOTH, {"sessionUpdate": "agent_thought_chunk", "content": TEXT, "messageId": "t1"}),
    (BOTH, {"sessionUpdate": "user_message_chunk", "content": TEXT, "messageId": "u1"}),
    (BOTH, {"sessionUpdate": "agent_message_chunk", "content": ANNOTATED, "messageId": "m1", "_meta": {"k": 1}}),
    (BOTH, {"sessionUpdate": "agent_message_chunk", "content": IMAGE, "messageId": "m1"}),
    (BOTH, {"sessionUpdate": "agent_message_chunk", "content": LINK, "messageId": "m1"}),
    (BOTH, {"sessionUpdate": "user_message_chunk", "content": EMBEDDED, "messageId": "u1"}),
    # whole messages (v2): content, no content (patches _meta), null content (clears)
    (V2, {"sessionUpdate": "agent_message", "messageId": "m2", "content": [TEXT, LINK]}),
    (V2, {"sessionUpdate": "agent_thought", "messageId": "t2", "content": [TEXT]}),
    (V2, {"sessionUpdate": "user_message", "messageId": "u2", "content": [TEXT, IMAGE]}),
    (V2, {"sessionUpdate": "agent_message", "messageId": "m2", "_meta": {"k": 2}}),
    (V2, {"sessionUpdate": "agent_message", "messageId": "m2", "content": None}),
    (V2, {"sessionUpdate": "agent_message", "messageId": "m2", "content": []}),
    # tool calls
    (V1, {
        "sessionUpdate": "tool_call", "toolCallId": "c1", "title": "Edit a.py", "kind": "edit", "status": "pending",
        "content": [DIFF, NEW_FILE, TOOL_TEXT], "locations": [{"path": "/w/a.py", "line": 3}], "rawInput": {"path": "/w/a.py"},
    }),
    (V1, {"sessionUpdate": "tool_call", "toolCallId": "c2", "title": "Terminal", "rawInput": {}}),  # claude's placeholder
    (V1, {"sessionUpdate": "tool_call", "toolCallId": "c3", "title": "Run", "kind": "execute", "content": [TERMINAL]}),
    (BOTH, {"sessionUpdate": "tool_call_update", "toolCallId": "c1", "status": "in_progress"}),
    (BOTH, {
        "sessionUpdate": "tool_call_update", "toolCallId": "c1", "status": "completed", "title": "Edited a.py",
        "content": [TOOL_TEXT], "locations": [], "rawOutput": {"ok": True},
    }),
    (BOTH, {
        "sessionUpdate": "tool_call_update", "toolCallId": "c1", "status": None, "kind": None, "title": None,
        "content": None, "locations": None, "rawInput": None, "rawOutput": None,
    }),
    (BOTH, {"sessionUpdate": "tool_call_update", "toolCallId": "c9", "kind": "_telepathy", "status": "queued"}),
    (V2, {"sessionUpdate": "tool_call_content_chunk", "toolCallId": "c1", "content": TOOL_TEXT}),
    (V2, {"sessionUpdate": "tool_call_content_chunk", "toolCallId": "c1", "content": DIFF}),
    # plans
    (V1, {"sessionUpdate": "plan", "entries": [
        {"content": "Read", "priority": "high", "status": "completed"},
        {"content": "Write", "priority": "low", "status": "pending"},
    ]}),
    (V1, {"sessionUpdate": "plan", "entries": []}),
    (V2, {"sessionUpdate": "plan_update", "plan": {
        "planId": "p1", "type": "items", "entries": [{"content": "Read", "priority": "high", "status": "in_progress"}],
    }}),
    # session-level state
    (BOTH, {"sessionUpdate": "available_commands_update", "availableCommands": [
        {"name": "web", "description": "Search the web", "input": {"hint": "query"}},
        {"name": "plan", "description": "Plan", "input": None},
    ]}),
    (V1, {"sessionUpdate": "current_mode_update", "currentModeId": "architect"}),
    (V1, {"sessionUpdate": "config_option_update", "configOptions": [V1_SELECT, V1_BOOLEAN]}),
    (V2, {"sessionUpdate": "config_option_update", "configOptions": [V2_GROUPED]}),
    (BOTH, {"sessionUpdate": "session_info_update", "title": "Fix the bug", "updatedAt": "2026-01-02T03:04:05Z"}),
    (BOTH, {"sessionUpdate": "session_info_update", "title": None}),
    (BOTH, {"sessionUpdate": "usage_update", "used": 1200, "size": 200000}),
    (BOTH, {"sessionUpdate": "usage_update", "used": 1200, "size": 200000, "cost": {"amount": 0.01, "currency": "USD"}}),
    # v2 turn states
    (V2, {"sessionUpdate": "state_update", "state": "running"}),
    (V2, {"sessionUpdate": "state_update", "state": "requires_action"}),
    (V2, {"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"}),
    (V2, {"sessionUpdate": "state_update", "state": "idle", "stopReason": "cancelled"}),
]

#: What the store reads beyond the schema, and why. Each must stay accepted by the store and
#: rejected by the models of every version (else it belongs in :data:`SHAPES`).
BEYOND_THE_SCHEMA: dict[str, dict[str, Any]] = {
    # the v1 Session Modes page's own example says modeId where the schema says currentModeId
    "modeId in current_mode_update (v1 docs example)": {"sessionUpdate": "current_mode_update", "modeId": "ask"},
    # not an agent's kind: the session layer folds v1's unstable `models` state (and a
    # session/set_model that succeeded) into the store through it
    "current_model_update (made by acpcli, not sent)": {
        "sessionUpdate": "current_model_update", "currentModelId": "m", "availableModels": [{"modelId": "m", "name": "M"}],
    },
}


def _kinds(version: int) -> set[str]:
    _prop, members = protocol.models(version).TAGGED_UNIONS["SessionUpdate"]
    return {tag for tag in members if not tag.startswith("*")}


def _valid_as_its_kind(version: int, update: dict[str, Any]) -> bool:
    parsed = reading.parse_update(version, update)
    return parsed is not None and not reading.is_unknown(parsed) and parsed.session_update == update["sessionUpdate"]


def _id(item: tuple[tuple[int, ...], dict[str, Any]]) -> str:
    versions, update = item
    return f"{update['sessionUpdate']}-v{''.join(map(str, versions))}-{sorted(update)[:4]}"


def test_the_store_reads_the_schemas_kinds_and_only_those() -> None:
    read = set(Store()._dispatch)
    local = {update["sessionUpdate"] for update in BEYOND_THE_SCHEMA.values()} - _kinds(1) - _kinds(2)
    assert read == _kinds(1) | _kinds(2) | local


@pytest.mark.parametrize("version", [1, 2])
def test_the_shapes_cover_every_kind_of_each_version(version: int) -> None:
    assert {u["sessionUpdate"] for versions, u in SHAPES if version in versions} == _kinds(version)


@pytest.mark.parametrize("item", SHAPES, ids=[_id(item) for item in SHAPES])
def test_every_shape_the_store_accepts_validates_under_the_models(item: tuple[tuple[int, ...], dict[str, Any]]) -> None:
    versions, update = item
    assert Store().apply(update) is not None, "the store ignores this shape: it does not belong here"
    for version in versions:
        assert _valid_as_its_kind(version, update), f"v{version} models reject a shape the store reads"


@pytest.mark.parametrize("name", sorted(BEYOND_THE_SCHEMA))
def test_what_the_store_reads_beyond_the_schema_stays_beyond_it(name: str) -> None:
    update = BEYOND_THE_SCHEMA[name]
    assert Store().apply(update) is not None
    assert not any(_valid_as_its_kind(version, update) for version in (1, 2))


GOLDEN_UPDATES = sorted(GOLDEN.glob("v[12]/update.*.json"))


@pytest.mark.parametrize("path", GOLDEN_UPDATES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_every_golden_update_is_accepted_by_the_store(path: Path) -> None:
    update = json.loads(path.read_text(encoding="utf-8"))["json"]["update"]
    assert _valid_as_its_kind(int(path.parent.name[1:]), update)
    assert Store().apply(update) is not None


# -- what a real agent sends: the demo agent, both versions ---------------------------------------


class Frames:
    """A session's event recorder: keeps every update as it was fed to the store."""

    def __init__(self) -> None:
        self.updates: list[dict[str, Any]] = []

    def append(self, session_id: str, kind: str, payload: str) -> None:
        if kind.startswith("acpcli/"):  # acpcli's own markers (a turn starts, a setting changed)
            return
        data = json.loads(payload)
        if "sessionUpdate" not in data:  # the whole notification, as received
            data = data["params"]["update"]
        self.updates.append(data)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.anyio
@pytest.mark.parametrize("version", [1, 2])
async def test_everything_the_demo_agent_sends_validates(tmp_path: Path, version: int) -> None:
    from acpcli.session.link import open_link

    async def allow(live: Any, params: dict[str, Any]) -> dict[str, Any]:
        option = next(o for o in params["options"] if o["kind"].startswith("allow"))
        return {"outcome": {"outcome": "selected", "optionId": option["optionId"]}}

    (tmp_path / "notes.txt").write_text("hello\n")
    argv = [*DEMO, "--protocol", str(version), "--state-dir", str(tmp_path / "state")]
    live_frames, replay_frames = Frames(), Frames()
    async with open_link(argv, decide_permission=allow) as link:
        live = await link.new(str(tmp_path), recorder=live_frames)
        for text in ("hello", "plan mode, please", f"read {tmp_path / 'notes.txt'}", "run echo hi"):
            await link.prompt(live, [wire.text_block(text)])
    async with open_link(argv) as link:
        replayed = await link.load(live.session_id, str(tmp_path), recorder=replay_frames)
        await link.settle(replayed)
    sent = live_frames.updates + replay_frames.updates
    kinds = {u["sessionUpdate"] for u in sent}
    assert {"agent_thought_chunk", "agent_message_chunk", "tool_call_update"} <= kinds
    rejected = [u for u in sent if not _valid_as_its_kind(version, u)]
    assert rejected == []
    assert all(Store().apply(u) is not None for u in sent)
