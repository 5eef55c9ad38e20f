"""Version negotiation and the normalized capability view (pure functions)."""

from __future__ import annotations

import pytest

from acpcli.errors import HandshakeError, UsageError
from acpcli.wire.negotiate import (
    ClientOffer,
    features_from_result,
    initialize_params,
    parse_protocol_choice,
)


def test_auto_offer_carries_v1_and_v2_fields() -> None:
    params = initialize_params("auto", ClientOffer())
    assert params["protocolVersion"] == 2
    assert params["clientCapabilities"] == {
        "fs": {"readTextFile": True, "writeTextFile": True},
        "terminal": True,
        # the v1 extensions acpcli implements: boolean config options, terminal logins
        "session": {"configOptions": {"boolean": {}}},
        "auth": {"terminal": True},
        # elicitation: each mode explicit (an empty object would advertise none)
        "elicitation": {"form": {}, "url": {}},
    }
    assert params["clientInfo"]["name"] == "acpcli"
    assert params["capabilities"] == {}  # v2 has no client fs/terminal capabilities
    assert params["info"]["name"] == "acpcli"


def test_forced_versions_carry_only_their_fields() -> None:
    v1 = initialize_params("1", ClientOffer(terminal=False))
    assert v1["protocolVersion"] == 1
    assert "capabilities" not in v1 and "info" not in v1
    assert v1["clientCapabilities"]["terminal"] is False
    bare = initialize_params("1", ClientOffer(config_boolean=False, auth_terminal=False, elicitation=False))
    assert "session" not in bare["clientCapabilities"] and "auth" not in bare["clientCapabilities"]
    assert "elicitation" not in bare["clientCapabilities"]
    v2 = initialize_params("2", ClientOffer())
    assert v2["protocolVersion"] == 2
    assert "clientCapabilities" not in v2 and "clientInfo" not in v2


def test_protocol_choice_validation() -> None:
    assert parse_protocol_choice("auto") == "auto"
    with pytest.raises(UsageError, match="--protocol"):
        parse_protocol_choice("3")


V1_FULL = {
    "protocolVersion": 1,
    "agentCapabilities": {
        "loadSession": True,
        "promptCapabilities": {"image": True, "audio": False, "embeddedContext": True},
        "mcpCapabilities": {"http": True, "sse": False},
        "sessionCapabilities": {"resume": {}, "close": {}, "list": {}, "additionalDirectories": {}},
    },
    "agentInfo": {"name": "codex-acp", "version": "0.16.0"},
    "authMethods": [{"id": "chatgpt", "name": "ChatGPT"}],
}


def test_v1_full_capabilities() -> None:
    f = features_from_result(V1_FULL)
    assert (f.protocol_version, f.reading) == (1, "v1")
    assert f.load and f.load_via == "session/load"
    assert f.resume and f.close and f.list and f.additional_directories
    assert f.mcp_stdio and f.mcp_http and not f.mcp_sse
    assert f.prompt_image and f.prompt_embedded_context and not f.prompt_audio
    assert f.auth_methods[0]["id"] == "chatgpt"
    assert f.client_fs_read and f.client_terminal
    assert f.display_name == "codex-acp 0.16.0"


def test_v1_minimal_supports_only_baseline() -> None:
    f = features_from_result({"protocolVersion": 1})
    assert not (f.load or f.resume or f.close or f.list or f.additional_directories)
    assert f.mcp_stdio and not f.mcp_http
    assert f.supports_mcp_transport("_custom")
    assert not f.supports_mcp_transport("websocket")


def test_v1_false_and_null_markers_mean_unsupported() -> None:
    f = features_from_result(
        {
            "protocolVersion": 1,
            "agentCapabilities": {
                "loadSession": False,
                "sessionCapabilities": {"resume": None, "close": None},
                "mcpCapabilities": {"http": False},
            },
        }
    )
    assert not (f.load or f.resume or f.close or f.mcp_http)


def test_v2_draft_markers_as_in_the_seed() -> None:
    f = features_from_result({"protocolVersion": 2, "capabilities": {"session": {"load": {}}}})
    assert (f.reading, f.load_via) == ("v2-draft", "session/load")
    assert not (f.resume or f.close or f.list)
    assert not f.mcp_stdio  # v2: stdio is an explicit marker
    assert not f.client_fs_read and not f.client_terminal  # no client methods in v2


def test_v2_draft_null_marker_is_unsupported() -> None:
    f = features_from_result(
        {"protocolVersion": 2, "capabilities": {"session": {"load": None, "resume": {}, "close": {}}}}
    )
    assert not f.load and f.resume and f.close


def test_v2_mcp_and_prompt_markers_are_presence_checks() -> None:
    f = features_from_result(
        {
            "protocolVersion": 2,
            "capabilities": {
                "session": {
                    "mcp": {"stdio": {}, "http": None},
                    "prompt": {"image": {}, "embeddedContext": {"_meta": {"x": 1}}},
                    "additionalDirectories": {},
                }
            },
        }
    )
    assert f.mcp_stdio and not f.mcp_http
    assert f.prompt_image and f.prompt_embedded_context and not f.prompt_audio
    assert f.additional_directories


def test_v2_latest_reading_implies_baseline() -> None:
    result = {"protocolVersion": 2, "capabilities": {"session": {}}}
    draft = features_from_result(result)
    assert not draft.resume and not draft.load
    latest = features_from_result(result, v2_reading="latest")
    assert latest.reading == "v2-latest"
    assert latest.load_via == "session/resume" and latest.resume and latest.close and latest.list
    # No session capability at all: nothing beyond initialize.
    bare = features_from_result({"protocolVersion": 2, "capabilities": {}}, v2_reading="latest")
    assert not bare.resume and not bare.load


def test_draft_markers_win_over_latest_reading() -> None:
    f = features_from_result(
        {"protocolVersion": 2, "capabilities": {"session": {"resume": {}}}}, v2_reading="latest"
    )
    assert f.reading == "v2-draft" and f.resume and not f.close


@pytest.mark.parametrize(
    "result",
    [
        {"protocolVersion": 3},
        {"protocolVersion": "1"},
        {"protocolVersion": True},
        {},
        [],
        None,
    ],
)
def test_unspeakable_answers_are_handshake_errors(result: object) -> None:
    with pytest.raises(HandshakeError):
        features_from_result(result)


def test_insisted_version_must_be_answered() -> None:
    with pytest.raises(HandshakeError, match="--protocol 2"):
        features_from_result({"protocolVersion": 1}, choice="2")
    with pytest.raises(HandshakeError, match="--protocol 1"):
        features_from_result({"protocolVersion": 2}, choice="1")
    assert features_from_result({"protocolVersion": 1}, choice="auto").protocol_version == 1


def test_summary_is_flat() -> None:
    s = features_from_result(V1_FULL).summary()
    assert s["load"] == "session/load"
    assert s["mcp"] == ["stdio", "http"]
    assert s["authMethods"] == ["chatgpt"]


def test_2_latest_is_a_choice_that_reads_the_later_draft() -> None:
    from acpcli.wire.negotiate import protocol_of

    assert parse_protocol_choice("2-latest") == "2-latest"
    params = initialize_params("2-latest", ClientOffer())
    assert params["protocolVersion"] == 2 and "clientCapabilities" not in params and "info" in params
    result = {"protocolVersion": 2, "capabilities": {"session": {}}}
    latest = features_from_result(result, choice="2-latest")
    assert latest.reading == "v2-latest" and latest.load_via == "session/resume" and latest.close
    assert protocol_of(latest) == "2-latest"
    # plain 2 and auto keep the seed's draft reading of the same answer
    for choice in ("2", "auto"):
        draft = features_from_result(result, choice=choice)  # type: ignore[arg-type]  # literals
        assert draft.reading == "v2-draft" and not draft.load and protocol_of(draft) == "2"
    assert protocol_of(features_from_result({"protocolVersion": 1})) == "1"
    with pytest.raises(HandshakeError, match="--protocol 2-latest"):
        features_from_result({"protocolVersion": 1}, choice="2-latest")
