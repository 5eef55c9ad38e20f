"""Session settings: options read alike, and the values and requests that set them.

v1 modes and v1/v2 config options are read alike by :mod:`acpcli.protocol.settings`; the values
and requests that set them are :mod:`acpcli.wire.capabilities`' (the capability gates)."""

from __future__ import annotations

import pytest

from acpcli.errors import CapabilityMissing, UsageError
from acpcli.protocol import settings
from acpcli.wire import capabilities
from acpcli.wire.negotiate import AgentFeatures

V1 = AgentFeatures(protocol_version=1, reading="v1")
V2 = AgentFeatures(protocol_version=2, reading="v2-draft")

MODEL_V1 = {
    "id": "model",
    "name": "Model",
    "category": "model",
    "type": "select",
    "currentValue": "m-fast",
    "options": [
        {"value": "m-fast", "name": "Fast", "description": "the quick one"},
        {"value": "m-smart", "name": "Smart"},
    ],
}
MODE_V2 = {
    "configId": "mode",
    "name": "Session Mode",
    "category": "mode",
    "type": "select",
    "currentValue": "ask",
    # grouped values: the groups are flattened, in order
    "options": [
        {"groupId": "safe", "name": "Safe", "options": [{"value": "ask", "name": "Ask"}]},
        {"groupId": "bold", "name": "Bold", "options": [{"value": "code", "name": "Code"}]},
    ],
}
BRAVE = {"id": "brave", "name": "Brave Mode", "type": "boolean", "currentValue": False}
MODES = {
    "currentModeId": "ask",
    "availableModes": [{"id": "ask", "name": "Ask"}, {"id": "architect", "name": "Architect", "description": "plans"}],
}


def test_v1_and_v2_options_read_alike() -> None:
    found = settings.choices([MODEL_V1, MODE_V2, BRAVE], None, None)
    assert [(c.key, c.kind, c.current) for c in found] == [
        ("model", "select", "Fast"),
        ("mode", "select", "Ask"),
        ("brave", "boolean", "off"),
    ]
    assert [v for v, _, _ in found[1].values] == ["ask", "code"]
    assert found[0].values[0] == ("m-fast", "Fast", "the quick one")


def test_v1_modes_stand_in_only_without_a_mode_option() -> None:
    alone = settings.choices([MODEL_V1], MODES, "architect")
    assert [(c.key, c.kind, c.current) for c in alone] == [("model", "select", "Fast"), ("mode", "modes", "Architect")]
    # a config option of category mode wins (the spec: use configOptions exclusively)
    both = settings.choices([MODE_V2], MODES, "ask")
    assert [c.kind for c in both] == ["select"]


def test_unknown_types_and_broken_entries_are_kept_or_skipped_not_fatal() -> None:
    odd = {"id": "x", "name": "X", "type": "_slider", "currentValue": 3}
    found = settings.choices([odd, {"name": "no id"}, {"id": "y", "options": ["junk", {"value": 1}]}], {"availableModes": []}, None)
    assert [(c.key, c.kind) for c in found] == [("x", "_slider"), ("y", "select")]
    with pytest.raises(UsageError, match="cannot set"):
        capabilities.resolve(found[0], "4")


def test_find_by_id_then_category_then_name() -> None:
    found = settings.choices([MODEL_V1, MODE_V2, BRAVE], None, None)
    assert settings.find(found, "MODEL").key == "model"  # type: ignore[union-attr]
    assert settings.find(found, "brave mode").key == "brave"  # type: ignore[union-attr]
    assert settings.find(found, "nothing") is None


def test_resolve_values_by_id_or_name() -> None:
    model = settings.choices([MODEL_V1], None, None)[0]
    assert capabilities.resolve(model, "m-smart") == "m-smart"
    assert capabilities.resolve(model, "smart") == "m-smart"
    assert capabilities.resolve(model, "SMART") == "m-smart"  # a whole word of exactly one value
    with pytest.raises(UsageError, match="choose from: m-fast, m-smart"):
        capabilities.resolve(model, "slow")
    with pytest.raises(UsageError, match="'m' matches several values of model: m-fast, m-smart"):
        capabilities.resolve(model, "m")  # a word of both: ambiguous, and both are named
    with pytest.raises(UsageError, match="choose from"):
        capabilities.resolve(model, "sma")  # not a whole word: no guessing
    brave = settings.choices([BRAVE], None, None)[0]
    assert capabilities.resolve(brave, "on") is True and capabilities.resolve(brave, "OFF") is False
    with pytest.raises(UsageError, match="on or off"):
        capabilities.resolve(brave, "maybe")


def test_change_requests_per_version() -> None:
    model, brave = settings.choices([MODEL_V1, BRAVE], None, None)
    assert capabilities.change_request(V1, "s1", model, "m-smart") == (
        "session/set_config_option",
        {"sessionId": "s1", "configId": "model", "value": "m-smart"},
    )
    assert capabilities.change_request(V1, "s1", brave, True)[1] == {
        "sessionId": "s1", "configId": "brave", "value": True, "type": "boolean",
    }
    mode = settings.choices([], MODES, None)[0]
    assert capabilities.change_request(V1, "s1", mode, "architect") == (
        "session/set_mode", {"sessionId": "s1", "modeId": "architect"},
    )
    # v2 has neither session/set_mode nor boolean options: never sent
    with pytest.raises(CapabilityMissing):
        capabilities.change_request(V2, "s1", mode, "architect")
    with pytest.raises(CapabilityMissing):
        capabilities.change_request(V2, "s1", brave, True)


@pytest.mark.parametrize("version", [1, 2])
def test_requests_match_the_generated_models(version: int) -> None:
    from acpcli.protocol import dump, parse_params

    features = V1 if version == 1 else V2
    model = settings.choices([MODEL_V1], None, None)[0]
    method, params = capabilities.change_request(features, "s1", model, "m-smart")
    assert dump(parse_params(version, method, params)) == params
    if version == 1:
        mode = settings.choices([], MODES, None)[0]
        method, params = capabilities.change_request(V1, "s1", mode, "ask")
        assert dump(parse_params(1, method, params)) == params


GEMINI_MODELS = [
    {"modelId": "auto", "name": "Auto"},
    {"modelId": "gemini-2.5-pro", "name": "Gemini 2.5 Pro", "description": "deep"},
    {"name": "no id: skipped"},
]


def test_v1_models_are_a_model_setting_changed_with_set_model() -> None:
    found = settings.choices([], None, None, GEMINI_MODELS, "gemini-2.5-pro")
    assert [(c.key, c.category, c.kind, c.current) for c in found] == [("model", "model", "models", "Gemini 2.5 Pro")]
    model = settings.find(found, "model")
    assert model is not None and [v for v, _, _ in model.values] == ["auto", "gemini-2.5-pro"]
    assert capabilities.resolve(model, "pro") == "gemini-2.5-pro"
    with pytest.raises(UsageError, match=r"choose from: auto, gemini-2\.5-pro"):
        capabilities.resolve(model, "gpt")
    assert capabilities.change_request(V1, "s1", model, "auto") == ("session/set_model", {"sessionId": "s1", "modelId": "auto"})
    with pytest.raises(CapabilityMissing):
        capabilities.change_request(V2, "s1", model, "auto")


def test_a_model_config_option_wins_over_v1_models() -> None:
    found = settings.choices([MODEL_V1], None, None, GEMINI_MODELS, "auto")
    assert [(c.key, c.kind) for c in found] == [("model", "select")]
