"""The request builders produce params the models accept, and never an unadvertised method or field.

The builders are :mod:`acpcli.wire.capabilities` (the gates) over :mod:`acpcli.protocol.wire` (the shapes)."""

from __future__ import annotations

import pytest

from acpcli.errors import CapabilityMissing
from acpcli.protocol import dump, parse_params, wire
from acpcli.wire import capabilities
from acpcli.wire.negotiate import features_from_result

V1_ALL = features_from_result(
    {
        "protocolVersion": 1,
        "agentCapabilities": {
            "loadSession": True,
            "mcpCapabilities": {"http": True},
            "sessionCapabilities": {
                "resume": {}, "close": {}, "list": {}, "delete": {}, "additionalDirectories": {},
            },
        },
    }
)
V2_ALL = features_from_result(
    {
        "protocolVersion": 2,
        "capabilities": {
            "session": {
                "load": {},
                "resume": {},
                "close": {},
                "list": {},
                "delete": {},
                "additionalDirectories": {},
                "mcp": {"stdio": {}, "http": {}},
            }
        },
    }
)
V1_NONE = features_from_result({"protocolVersion": 1})
V2_NONE = features_from_result({"protocolVersion": 2, "capabilities": {"session": {}}})

STDIO = {"type": "stdio", "name": "fs", "command": "/bin/true", "args": ["-x"], "env": [{"name": "K", "value": "v"}]}
HTTP = {"type": "http", "name": "web", "url": "https://example.invalid/mcp", "headers": [{"name": "A", "value": "b"}]}


def roundtrip(version: int, method: str, params: dict) -> None:
    model = parse_params(version, method, params)
    assert dump(model) == params


@pytest.mark.parametrize("features", [V1_ALL, V2_ALL], ids=["v1", "v2"])
def test_builders_match_the_models(features) -> None:
    v = features.protocol_version
    roundtrip(v, *capabilities.opening_params(features, "new", "/w", ["/x"], [STDIO, HTTP]))
    method, params = capabilities.opening_params(features, "load", "/w", ["/x"], [STDIO], session_id="s1")
    assert method == "session/load"
    roundtrip(v, method, params)
    roundtrip(v, *capabilities.opening_params(features, "resume", "/w", [], [HTTP], session_id="s1"))
    roundtrip(v, "session/close", capabilities.close_params(features, "s1"))
    roundtrip(v, "session/list", capabilities.list_params(features, "/w", "c2"))
    roundtrip(v, "session/delete", capabilities.delete_params(features, "s1"))
    roundtrip(v, "session/prompt", wire.prompt_params("s1", [wire.text_block("hi")]))


def test_v1_stdio_servers_are_untagged() -> None:
    _, params = capabilities.opening_params(V1_ALL, "new", "/w", [], [STDIO])
    assert "type" not in params["mcpServers"][0]
    assert capabilities.opening_params(V2_ALL, "new", "/w", [], [STDIO])[1]["mcpServers"][0]["type"] == "stdio"


def test_empty_extra_roots_are_not_sent() -> None:
    assert "additionalDirectories" not in capabilities.opening_params(V1_NONE, "new", "/w", [], [])[1]


@pytest.mark.parametrize("features", [V1_NONE, V2_NONE], ids=["v1", "v2"])
def test_nothing_unadvertised_is_built(features) -> None:
    with pytest.raises(CapabilityMissing, match="session/load"):
        capabilities.opening_params(features, "load", "/w", session_id="s")
    with pytest.raises(CapabilityMissing, match="session/resume"):
        capabilities.opening_params(features, "resume", "/w", session_id="s")
    with pytest.raises(CapabilityMissing, match="session/fork"):
        capabilities.opening_params(features, "fork", "/w", session_id="s")
    with pytest.raises(CapabilityMissing, match="session/close"):
        capabilities.close_params(features, "s")
    with pytest.raises(CapabilityMissing, match="session/list"):
        capabilities.list_params(features)
    with pytest.raises(CapabilityMissing, match="session/delete"):
        capabilities.delete_params(features, "s")
    with pytest.raises(CapabilityMissing, match="additional directories"):
        capabilities.opening_params(features, "new", "/w", ["/x"])
    with pytest.raises(CapabilityMissing, match="http MCP"):
        capabilities.opening_params(features, "new", "/w", [], [HTTP])


def test_v2_stdio_mcp_needs_its_marker_custom_passes() -> None:
    with pytest.raises(CapabilityMissing, match="stdio MCP"):
        capabilities.opening_params(V2_NONE, "new", "/w", [], [STDIO])
    custom = {"type": "_acme", "name": "x", "socket": "/tmp/s"}
    assert capabilities.opening_params(V2_NONE, "new", "/w", [], [custom])[1]["mcpServers"] == [custom]


def test_a_fork_names_the_session_and_gives_the_new_one_its_roots() -> None:
    forking = features_from_result(
        {"protocolVersion": 1, "agentCapabilities": {"sessionCapabilities": {"fork": {}, "additionalDirectories": {}}}}
    )
    method, params = capabilities.opening_params(forking, "fork", "/w", ["/x"], session_id="s1")
    assert (method, params["sessionId"], params["cwd"]) == ("session/fork", "s1", "/w")
    assert params["additionalDirectories"] == ["/x"] and "replayFrom" not in params


def test_v2_latest_load_is_resume_with_replay() -> None:
    latest = features_from_result({"protocolVersion": 2, "capabilities": {"session": {}}}, v2_reading="latest")
    method, params = capabilities.opening_params(latest, "load", "/w", session_id="s")
    assert method == "session/resume" and params["replayFrom"] == {"type": "start"}


# -- authentication ---------------------------------------------------------------------------

from acpcli.errors import CapabilityMissing as _Missing  # noqa: E402
from acpcli.wire.negotiate import features_from_result  # noqa: E402


def _auth_features(version: int, methods: list[dict], logout: bool = False):  # type: ignore[no-untyped-def]
    if version == 1:
        caps = {"auth": {"logout": {}}} if logout else {}
        return features_from_result({"protocolVersion": 1, "agentCapabilities": caps, "authMethods": methods})
    return features_from_result({"protocolVersion": 2, "capabilities": {"session": {}}, "authMethods": methods})


@pytest.mark.parametrize(
    ("version", "methods", "expected"),
    [
        (1, [{"id": "chatgpt", "name": "ChatGPT"}], "authenticate"),
        (2, [{"methodId": "chatgpt", "name": "ChatGPT", "type": "agent"}], "auth/login"),
    ],
)
def test_login_request_per_version_matches_the_models(version: int, methods: list, expected: str) -> None:
    features = _auth_features(version, methods)
    method, params = capabilities.login_request(features, "chatgpt")
    assert (method, params) == (expected, {"methodId": "chatgpt"})
    assert dump(parse_params(version, method, params)) == params


def test_login_refuses_unadvertised_and_terminal_methods() -> None:
    features = _auth_features(1, [{"id": "a", "name": "A"}, {"id": "t", "name": "T", "type": "terminal", "args": ["--login"]}])
    with pytest.raises(_Missing, match="offers: a, t"):
        capabilities.login_request(features, "nope")
    with pytest.raises(_Missing, match="terminal login"):
        capabilities.login_request(features, "t")  # the spec: never send authenticate for a terminal method


def test_logout_only_when_advertised_on_v1() -> None:
    with pytest.raises(_Missing, match=r"auth\.logout"):
        capabilities.logout_request(_auth_features(1, []))
    assert capabilities.logout_request(_auth_features(1, [], logout=True)) == ("logout", {})
    with pytest.raises(_Missing, match="nothing to log out of"):
        capabilities.logout_request(_auth_features(2, []))  # v2-latest: MUST NOT without authMethods
    v2 = _auth_features(2, [{"methodId": "m", "name": "M", "type": "agent"}])
    assert capabilities.logout_request(v2) == ("auth/logout", {})


def test_login_methods_read_v1_and_v2_alike() -> None:
    v1 = _auth_features(1, [{"id": "a", "name": "A", "description": "the one"}, {"name": "no id"},
                            {"id": "t", "name": "T", "type": "terminal", "args": ["--login"]}])
    v2 = _auth_features(2, [{"methodId": "a", "name": "A", "type": "agent", "description": "the one"}])
    assert [(m.id, m.type, m.label) for m in wire.login_methods(v1.auth_methods)] == [("a", "agent", "A — the one"), ("t", "terminal", "T")]
    assert [(m.id, m.type, m.label) for m in wire.login_methods(v2.auth_methods)] == [("a", "agent", "A — the one")]
    assert wire.login_methods(v1.auth_methods)[1].raw["args"] == ["--login"]
