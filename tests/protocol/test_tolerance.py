"""What an agent may send that a strict reading of the schema would reject never crashes us:
unknown update kinds, unknown enum values (``_``-prefixed ones included), unknown union tags,
unknown fields and ``_meta``; and the schema's own leniency marks are honoured."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import TypeAdapter, ValidationError

from acpcli import protocol
from tests.helpers import model_reading as reading

SESSION = "sess_1"


def notification(update: dict[str, Any]) -> dict[str, Any]:
    return {"sessionId": SESSION, "update": update}


# --- unknown update kinds ------------------------------------------------------------------


@pytest.mark.parametrize("version", [1, 2])
@pytest.mark.parametrize("kind", ["_zed.dev/cursor", "future_kind", "state_update_v3"])
def test_unknown_update_kind_is_ignored_and_logged_at_debug(
    version: int, kind: str, caplog: pytest.LogCaptureFixture
) -> None:
    update = {"sessionUpdate": kind, "payload": {"x": [1, 2]}, "_meta": {"a": 1}}
    with caplog.at_level(logging.DEBUG, logger="acpcli.protocol"):
        assert reading.parse_update(version, update) is None
    records = [r for r in caplog.records if r.name == "acpcli.protocol"]
    assert [r.levelno for r in records] == [logging.DEBUG]
    assert kind in records[0].getMessage()


@pytest.mark.parametrize("version", [1, 2])
def test_unknown_update_kind_round_trips_in_its_notification(version: int) -> None:
    data = notification({"sessionUpdate": "_custom", "payload": {"nested": [1, {"b": None}]}})
    parsed = protocol.parse_params(version, "session/update", data)
    assert reading.is_unknown(parsed.update)
    assert type(parsed.update).__name__ == "SessionUpdateOther"
    assert protocol.dump(parsed) == data


def test_unknown_v2_state_is_ignored() -> None:
    assert reading.parse_update(2, {"sessionUpdate": "state_update", "state": "_paused"}) is None
    known = reading.parse_update(2, {"sessionUpdate": "state_update", "state": "requires_action"})
    assert type(known).__name__ == "RequiresActionStateUpdate"


@pytest.mark.parametrize(
    "update",
    [
        {"sessionUpdate": "tool_call_update"},  # toolCallId is required
        {"sessionUpdate": "agent_message_chunk", "content": "not a block", "messageId": "m"},
        {"no": "tag"},
        "not an object",
        None,
    ],
)
def test_malformed_update_is_ignored_with_a_warning(update: Any, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.DEBUG, logger="acpcli.protocol"):
        assert reading.parse_update(2, update) is None
    assert [r.levelno for r in caplog.records if r.name == "acpcli.protocol"] == [logging.WARNING]


def test_a_known_update_still_validates_strictly_where_the_schema_is_strict() -> None:
    with pytest.raises(ValueError):
        protocol.parse_params(2, "session/update", {"update": {"sessionUpdate": "usage_update"}})


# --- unknown enum values and union tags ----------------------------------------------------


def test_unknown_enum_values_are_kept_v1() -> None:
    data = notification(
        {
            "sessionUpdate": "tool_call",
            "toolCallId": "t1",
            "title": "x",
            "kind": "_telepathy",
            "status": "queued",
        }
    )
    parsed = protocol.parse_params(1, "session/update", data)
    assert (parsed.update.kind, parsed.update.status) == ("_telepathy", "queued")
    assert protocol.dump(parsed) == data
    assert reading.parse_result(1, "session/prompt", {"stopReason": "_paused"}).stop_reason == "_paused"


def test_unknown_enum_values_are_kept_v2() -> None:
    update = {"sessionUpdate": "state_update", "state": "idle", "stopReason": "_budget_exhausted"}
    parsed = reading.parse_update(2, update)
    assert parsed.stop_reason == "_budget_exhausted"
    options = [{"optionId": "o", "name": "Maybe", "kind": "_ask_later"}]
    request = protocol.parse_params(
        2, "session/request_permission", {"sessionId": SESSION, "toolCall": {"toolCallId": "t"}, "options": options}
    )
    assert request.options[0].kind == "_ask_later"


@pytest.mark.parametrize("version", [1, 2])
def test_unknown_content_block_is_kept_inside_a_known_update(version: int) -> None:
    update = {"sessionUpdate": "agent_message_chunk", "messageId": "m1", "content": {"type": "_sticker", "id": 7}}
    parsed = reading.parse_update(version, update)
    assert parsed is not None and reading.is_unknown(parsed.content)
    assert type(parsed.content).__name__ == "ContentBlockOther"
    assert protocol.dump(parsed) == update


def test_unknown_tool_call_content_in_a_v1_permission_request() -> None:
    # v1/session-modes.mdx itself shows a "text" item, which v1's ToolCallContent does not define
    params = {
        "sessionId": SESSION,
        "toolCall": {"toolCallId": "t", "content": [{"type": "text", "text": "## Plan"}]},
        "options": [{"optionId": "code", "name": "Yes", "kind": "allow_always"}],
    }
    parsed = protocol.parse_params(1, "session/request_permission", params)
    assert reading.is_unknown(parsed.tool_call.content[0])
    assert protocol.dump(parsed) == params


def test_mcp_server_members() -> None:
    v1, v2 = protocol.models(1), protocol.models(2)
    stdio_v1 = {"name": "fs", "command": "/bin/fs", "args": [], "env": []}
    custom = {"type": "_websocket", "name": "ws", "url": "ws://localhost:1"}
    assert type(TypeAdapter(v1.McpServer).validate_python(stdio_v1)).__name__ == "McpServerStdio"
    sse = {"type": "sse", "name": "s", "url": "http://localhost", "headers": []}
    assert type(TypeAdapter(v1.McpServer).validate_python(sse)).__name__ == "McpServerSse"
    for module in (v1, v2):
        parsed = TypeAdapter(module.McpServer).validate_python(custom)
        assert reading.is_unknown(parsed)
        assert TypeAdapter(module.McpServer).dump_python(parsed, mode="json", exclude_unset=True) == custom


def test_meta_and_unknown_fields_round_trip_at_every_level() -> None:
    result = {
        "protocolVersion": 1,
        "agentCapabilities": {
            "loadSession": True,
            "promptCapabilities": {"image": True, "_meta": {"x": 1}, "video": True},
            "futureCapability": {"deep": [1, 2]},
        },
        "authMethods": [],
        "_meta": {"vendor.example/build": "abc"},
        "serverTime": "2024-01-01T00:00:00Z",
    }
    parsed = reading.parse_result(1, "initialize", result)
    assert parsed.meta == {"vendor.example/build": "abc"}
    assert parsed.model_extra == {"serverTime": "2024-01-01T00:00:00Z"}
    assert protocol.dump(parsed) == result


# --- the schema's leniency marks -----------------------------------------------------------


def test_default_on_error_drops_an_invalid_capability() -> None:
    result = {
        "protocolVersion": 2,
        "capabilities": {"session": {"load": "yes please", "close": {}}},
    }
    parsed = reading.parse_result(2, "initialize", result)
    assert parsed.capabilities.session.load is None
    assert parsed.capabilities.session.close is not None
    assert protocol.dump(parsed) == {"protocolVersion": 2, "capabilities": {"session": {"close": {}}}}


def test_skip_invalid_items_drops_only_the_bad_items() -> None:
    update = {
        "sessionUpdate": "agent_message",
        "messageId": "m",
        "content": [{"type": "text", "text": "kept"}, {"type": "text", "text": 42}, {"type": "text", "text": "also"}],
    }
    parsed = reading.parse_update(2, update)
    assert [block.text for block in parsed.content] == ["kept", "also"]


def test_default_on_error_v1_tool_call_status() -> None:
    update = {"sessionUpdate": "tool_call", "toolCallId": "t", "title": "x", "status": 42, "rawInput": {}}
    parsed = reading.parse_update(1, update)
    assert parsed is not None and parsed.status is None and parsed.raw_input == {}


def test_leniency_does_not_excuse_fields_it_does_not_cover() -> None:
    # toolCallId carries no leniency mark: the update is malformed, not repaired
    assert reading.parse_update(1, {"sessionUpdate": "tool_call", "toolCallId": 5, "title": "x"}) is None
    with pytest.raises(ValidationError):
        protocol.models(2).NewSessionResponse.model_validate({"sessionId": ["not", "a", "string"]})


# --- building outgoing messages ------------------------------------------------------------


def test_built_models_dump_wire_names_and_only_what_was_set() -> None:
    v2 = protocol.models(2)
    request = v2.NewSessionRequest(
        cwd="/home/user/project",
        mcp_servers=[v2.McpServerStdio(type="stdio", name="tools", command="/bin/tools", args=[], env=[])],
    )
    assert protocol.dump(request) == {
        "cwd": "/home/user/project",
        "mcpServers": [{"type": "stdio", "name": "tools", "command": "/bin/tools", "args": [], "env": []}],
    }
    prompt = v2.PromptRequest(session_id=SESSION, prompt=[v2.TextContent(type="text", text="hi")])
    assert prompt.model_dump(mode="json", exclude_unset=True) == {
        "sessionId": SESSION,
        "prompt": [{"type": "text", "text": "hi"}],
    }


def test_tags_are_required_when_building() -> None:
    with pytest.raises(ValidationError):
        protocol.models(2).TextContent(text="hi")  # type="text" must be given: dumps never lose it


# --- never crash: properties ----------------------------------------------------------------

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=8,
)
KNOWN_KINDS = sorted(
    {tag for v in (1, 2) for tag in protocol.models(v).TAGGED_UNIONS["SessionUpdate"][1] if not tag.startswith("*")}
)


@settings(max_examples=60, deadline=None)
@given(
    version=st.sampled_from([1, 2]),
    kind=st.one_of(st.sampled_from(KNOWN_KINDS), st.text(max_size=12)),
    fields=st.dictionaries(st.sampled_from(["content", "messageId", "toolCallId", "state", "entries", "_x"]), JSON),
)
def test_parse_update_never_raises(version: int, kind: str, fields: dict[str, Any]) -> None:
    update = {**fields, "sessionUpdate": kind}
    parsed = reading.parse_update(version, update)
    if parsed is not None:
        assert parsed.session_update == kind


@settings(max_examples=60, deadline=None)
@given(
    version=st.sampled_from([1, 2]),
    kind=st.text(min_size=1, max_size=12).filter(lambda k: k not in KNOWN_KINDS),
    extra=st.dictionaries(st.text(max_size=6).filter(lambda k: k != "sessionUpdate"), JSON, max_size=4),
)
def test_unknown_kinds_round_trip_verbatim(version: int, kind: str, extra: dict[str, Any]) -> None:
    data = notification({"sessionUpdate": kind, **extra})
    assert protocol.dump(protocol.parse_params(version, "session/update", data)) == data
