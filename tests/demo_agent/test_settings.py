"""The demo agent's settings (v1 modes, config options), auth and prompt content, driven as a
real subprocess with raw JSON lines (v1 and v2); and a smoke test of the SDK config agent."""

from __future__ import annotations

import base64
import json
import os
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.demo_agent.test_wire import Agent, _update, stop_all, updates
from tests.peers import agent_argv

V1_BOOLEAN = {"session": {"configOptions": {"boolean": {}}}}
SELECTS = ["mode", "model", "effort"]


# -- helpers ---------------------------------------------------------------------------------------


@pytest.fixture
def running() -> Iterator[list[Agent]]:
    """Every agent process a test starts; stopped after it."""
    agents: list[Agent] = []
    yield agents
    stop_all(agents)


@pytest.fixture
def spawn(running: list[Agent]) -> Callable[..., Agent]:
    """Start ``python -m acpcli.demo_agent --delay 0 ARGS...``."""

    def make(*args: str) -> Agent:
        agent = Agent(*args)
        running.append(agent)
        return agent

    return make


def start(spawn: Any, version: int, *flags: str, **client_caps: Any) -> Agent:
    agent = spawn("--protocol", str(version), *flags)
    assert agent.initialize(version, **client_caps)["protocolVersion"] == version
    return agent


def new(agent: Agent, cwd: Path) -> tuple[str, dict[str, Any]]:
    """session/new: (session id, the whole result); the commands update after it is consumed."""
    resp, _ = agent.request("session/new", {"cwd": str(cwd), "mcpServers": []})
    assert "result" in resp, resp
    agent.until(lambda m: _update(m).get("sessionUpdate") == "available_commands_update")
    return resp["result"]["sessionId"], resp["result"]


def turn(agent: Agent, sid: str, blocks: list[dict[str, Any]]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A whole turn with arbitrary content blocks: (v1 response / v2 idle update, its messages).
    An error answer is returned as is."""
    resp, seen = agent.request("session/prompt", {"sessionId": sid, "prompt": blocks})
    if resp.get("result") == {}:
        seen = agent.until(lambda m: _update(m).get("state") == "idle")
        return seen[-1], seen
    return resp, seen


def answer(msgs: list[dict[str, Any]]) -> str:
    return "".join(u["content"]["text"] for u in updates(msgs) if u["sessionUpdate"] == "agent_message_chunk")


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def by_id(options: list[dict[str, Any]], key: str = "id") -> dict[str, dict[str, Any]]:
    return {o[key]: o for o in options}


def current(options: list[dict[str, Any]], key: str = "id") -> dict[str, Any]:
    return {o[key]: o["currentValue"] for o in options}


def set_option(agent: Agent, sid: str, config_id: str, value: Any, **extra: Any) -> tuple[dict[str, Any], list]:
    return agent.request("session/set_config_option", {"sessionId": sid, "configId": config_id, "value": value,
                                                       **extra})


def quiet_after(agent: Agent) -> list[dict[str, Any]]:
    """Everything the agent sent before answering one more (harmless) request: requests are
    handled in order, so any update still owed to the previous one arrives first."""
    _, seen = agent.request("session/list", {})
    return updates(seen)


def settled(agent: Agent) -> str:
    agent.close()
    return agent.stderr


# -- session setup answers -------------------------------------------------------------------------


def test_v1_setup_answers_carry_modes_and_config_options(spawn: Any, tmp_path: Path) -> None:
    agent = start(spawn, 1)
    sid, result = new(agent, tmp_path)
    modes = result["modes"]
    assert modes["currentModeId"] == "ask"
    assert [m["id"] for m in modes["availableModes"]] == ["ask", "code", "plan"]
    assert all(m["name"] and m["description"] for m in modes["availableModes"])
    options = result["configOptions"]
    assert [o["id"] for o in options] == SELECTS and not any("configId" in o for o in options)
    assert [o["category"] for o in options] == ["mode", "model", "thought_level"]
    assert {o["type"] for o in options} == {"select"}
    assert current(options) == {"mode": "ask", "model": "demo-fast", "effort": "medium"}
    # The mode option offers exactly the modes.
    assert [v["value"] for v in by_id(options)["mode"]["options"]] == ["ask", "code", "plan"]
    assert [v["value"] for v in by_id(options)["model"]["options"]] == ["demo-fast", "demo-smart"]
    assert [v["value"] for v in by_id(options)["effort"]["options"]] == ["low", "medium", "high"]
    agent.close()
    for method in ("session/load", "session/resume"):
        again = start(spawn, 1)
        resp, _ = again.request(method, {"sessionId": sid, "cwd": str(tmp_path), "mcpServers": []})
        assert resp["result"]["modes"] == modes and resp["result"]["configOptions"] == options, method
        again.close()


def test_v2_setup_answers_use_config_id_and_have_no_modes(spawn: Any, tmp_path: Path) -> None:
    agent = start(spawn, 2)
    sid, result = new(agent, tmp_path)
    assert "modes" not in result
    options = result["configOptions"]
    assert [o["configId"] for o in options] == SELECTS and not any("id" in o for o in options)
    for method in ("session/load", "session/resume"):
        resp, _ = agent.request(method, {"sessionId": sid, "cwd": str(tmp_path), "mcpServers": []})
        assert resp["result"] == {"configOptions": options}, method
    agent.close()


@pytest.mark.parametrize(
    ("caps", "offered"),
    [
        (V1_BOOLEAN, True),
        ({}, False),
        ({"session": {"configOptions": {"boolean": None}}}, False),  # null means not advertised
        ({"configOptions": {"boolean": {}}}, False),  # the wrong place: not session.configOptions
    ],
)
def test_boolean_option_only_for_clients_that_advertise_it(
    spawn: Any, tmp_path: Path, caps: dict[str, Any], offered: bool
) -> None:
    agent = start(spawn, 1, **caps)
    sid, result = new(agent, tmp_path)
    options = by_id(result["configOptions"])
    assert ("brave" in options) is offered
    resp, _ = set_option(agent, sid, "brave", True, type="boolean")
    if not offered:
        assert resp["error"]["code"] == -32602
        agent.close()
        return
    assert options["brave"]["type"] == "boolean" and options["brave"]["currentValue"] is False
    assert "options" not in options["brave"]
    assert by_id(resp["result"]["configOptions"])["brave"]["currentValue"] is True
    # A boolean needs type "boolean" and a boolean value; a select is not a boolean.
    for value, extra in ((True, {}), ("true", {"type": "boolean"}), ("code", {"type": "boolean"})):
        bad, _ = set_option(agent, sid, "brave" if value != "code" else "mode", value, **extra)
        assert bad["error"]["code"] == -32602, (value, extra)
    agent.close()


def test_v2_never_offers_the_boolean_option(spawn: Any, tmp_path: Path) -> None:
    # v2 clients have no such capability: even v1's field in the request changes nothing.
    agent = start(spawn, 2, **V1_BOOLEAN)
    _, result = new(agent, tmp_path)
    assert [o["configId"] for o in result["configOptions"]] == SELECTS
    agent.close()


# -- changing settings -----------------------------------------------------------------------------


def test_v1_set_mode_is_validated_and_mirrored_in_the_config_options(spawn: Any, tmp_path: Path) -> None:
    agent = start(spawn, 1)
    sid, _ = new(agent, tmp_path)
    resp, _ = agent.request("session/set_mode", {"sessionId": sid, "modeId": "code"})
    assert resp["result"] == {}
    # The other API hears of it right after the answer.
    update = _update(agent.until(lambda m: _update(m).get("sessionUpdate") == "config_option_update")[-1])
    assert [o["id"] for o in update["configOptions"]] == SELECTS
    assert current(update["configOptions"])["mode"] == "code"
    for params, code in (({"sessionId": sid, "modeId": "yolo"}, -32602),
                         ({"sessionId": sid}, -32602),
                         ({"sessionId": "demo-" + "0" * 32, "modeId": "ask"}, -32002)):
        bad, _ = agent.request("session/set_mode", params)
        assert bad["error"]["code"] == code, params
    _, msgs = turn(agent, sid, [text("status")])
    assert answer(msgs) == "mode=code model=demo-fast effort=medium\n"
    agent.close()


@pytest.mark.parametrize("version", [1, 2])
def test_set_config_option_answers_the_complete_list(spawn: Any, tmp_path: Path, version: int) -> None:
    key = "id" if version == 1 else "configId"
    agent = start(spawn, version)
    sid, _ = new(agent, tmp_path)
    resp, _ = set_option(agent, sid, "model", "demo-smart")
    options = resp["result"]["configOptions"]
    assert [o[key] for o in options] == SELECTS
    assert current(options, key) == {"mode": "ask", "model": "demo-smart", "effort": "medium"}
    resp, _ = set_option(agent, sid, "effort", "high")
    assert current(resp["result"]["configOptions"], key)["effort"] == "high"
    # Changing the mode option: v1 clients that use modes hear of it, v2 has no modes.
    resp, _ = set_option(agent, sid, "mode", "plan")
    assert current(resp["result"]["configOptions"], key)["mode"] == "plan"
    mode_updates = [u for u in quiet_after(agent) if u["sessionUpdate"] == "current_mode_update"]
    assert mode_updates == ([{"sessionUpdate": "current_mode_update", "currentModeId": "plan"}] if version == 1
                            else [])
    for config_id, value in (("model", "gpt-9"), ("nonsense", "x"), ("model", 3), ("model", None)):
        bad, _ = set_option(agent, sid, config_id, value)
        assert bad["error"]["code"] == -32602, (config_id, value)
    _, msgs = turn(agent, sid, [text("status please")])
    assert answer(msgs) == "mode=plan model=demo-smart effort=high\n"
    agent.close()


def test_v2_has_no_set_mode(spawn: Any, tmp_path: Path) -> None:
    agent = start(spawn, 2)
    sid, _ = new(agent, tmp_path)
    resp, _ = agent.request("session/set_mode", {"sessionId": sid, "modeId": "code"})
    assert resp["error"]["code"] == -32601
    assert "UNADVERTISED METHOD CALLED: session/set_mode" in settled(agent)


@pytest.mark.parametrize("version", [1, 2])
def test_settings_persist_with_the_session(spawn: Any, tmp_path: Path, version: int) -> None:
    key = "id" if version == 1 else "configId"
    first = start(spawn, version)
    sid, _ = new(first, tmp_path)
    set_option(first, sid, "mode", "code")
    set_option(first, sid, "model", "demo-smart")
    first.close()
    for method in ("session/load", "session/resume"):
        again = start(spawn, version)
        resp, _ = again.request(method, {"sessionId": sid, "cwd": str(tmp_path), "mcpServers": []})
        assert current(resp["result"]["configOptions"], key) == {"mode": "code", "model": "demo-smart",
                                                                 "effort": "medium"}
        if version == 1:
            assert resp["result"]["modes"]["currentModeId"] == "code"
        _, msgs = turn(again, sid, [text("status")])
        assert answer(msgs) == "mode=code model=demo-smart effort=medium\n"
        again.close()


def test_every_answer_states_the_settings(spawn: Any, tmp_path: Path) -> None:
    agent = start(spawn, 2)
    sid, _ = new(agent, tmp_path)
    _, msgs = agent.prompt(sid, "hello there")
    assert "Settings: mode=ask model=demo-fast effort=medium" in answer(msgs)
    agent.close()


def test_brave_skips_the_permission_request(spawn: Any, tmp_path: Path) -> None:
    agent = start(spawn, 1, **V1_BOOLEAN)
    sid, _ = new(agent, tmp_path)
    agent.prompt(sid, "edit something")
    assert [r["method"] for r in agent.agent_requests] == ["session/request_permission"]
    set_option(agent, sid, "brave", True, type="boolean")
    _, msgs = agent.prompt(sid, "edit something again")
    assert [r["method"] for r in agent.agent_requests] == ["session/request_permission"]  # no new one
    assert "applied without asking" in answer(msgs) and "brave=true" in answer(msgs)
    agent.close()


# -- withheld capabilities -------------------------------------------------------------------------


@pytest.mark.parametrize("version", [1, 2])
def test_without_config_options(spawn: Any, tmp_path: Path, version: int) -> None:
    agent = start(spawn, version, "--without", "config-options")
    sid, result = new(agent, tmp_path)
    assert "configOptions" not in result
    assert ("modes" in result) is (version == 1)
    resp, _ = set_option(agent, sid, "model", "demo-smart")
    assert resp["error"]["code"] == -32601
    if version == 1:  # modes still work, and nothing is announced through the withheld API
        resp, _ = agent.request("session/set_mode", {"sessionId": sid, "modeId": "code"})
        assert resp["result"] == {}
        assert not [u for u in quiet_after(agent) if u["sessionUpdate"] == "config_option_update"]
    _, msgs = turn(agent, sid, [text("switch to plan mode")])
    kinds = [u["sessionUpdate"] for u in updates(msgs)]
    assert "config_option_update" not in kinds
    assert ("current_mode_update" in kinds) is (version == 1)
    assert "UNADVERTISED METHOD CALLED: session/set_config_option" in settled(agent)


def test_without_modes(spawn: Any, tmp_path: Path) -> None:
    agent = start(spawn, 1, "--without", "modes")
    sid, result = new(agent, tmp_path)
    assert "modes" not in result and [o["id"] for o in result["configOptions"]] == SELECTS
    resp, _ = agent.request("session/set_mode", {"sessionId": sid, "modeId": "code"})
    assert resp["error"]["code"] == -32601
    set_option(agent, sid, "mode", "code")
    assert not [u for u in quiet_after(agent) if u["sessionUpdate"] == "current_mode_update"]
    _, msgs = turn(agent, sid, [text("plan mode")])
    kinds = [u["sessionUpdate"] for u in updates(msgs)]
    assert "current_mode_update" not in kinds and "config_option_update" in kinds
    assert "UNADVERTISED METHOD CALLED: session/set_mode" in settled(agent)


# -- the agent changes its own mode ----------------------------------------------------------------


@pytest.mark.parametrize("version", [1, 2])
def test_plan_mode_keyword_switches_and_announces(spawn: Any, tmp_path: Path, version: int) -> None:
    key = "id" if version == 1 else "configId"
    agent = start(spawn, version)
    sid, _ = new(agent, tmp_path)
    final, msgs = turn(agent, sid, [text("Let's go to Plan Mode first")])
    ups = updates(msgs)
    kinds = [u["sessionUpdate"] for u in ups]
    config = next(u for u in ups if u["sessionUpdate"] == "config_option_update")
    assert [o[key] for o in config["configOptions"]] == SELECTS
    assert current(config["configOptions"], key)["mode"] == "plan"
    if version == 1:
        assert {"sessionUpdate": "current_mode_update", "currentModeId": "plan"} in ups
        assert final["result"]["stopReason"] == "end_turn"
    else:
        assert "current_mode_update" not in kinds
        # Announced during the turn: between running and idle.
        assert kinds.index("config_option_update") < len(kinds) - 1
    assert "switched myself to plan mode" in answer(msgs) and "mode=plan" in answer(msgs)
    agent.close()
    # Saved with the session: a later process loads it in plan mode, and does not replay the
    # settings updates (the load answer carries the state).
    again = start(spawn, version)
    resp, replayed = again.request("session/load", {"sessionId": sid, "cwd": str(tmp_path), "mcpServers": []})
    assert current(resp["result"]["configOptions"], key)["mode"] == "plan"
    assert not {"current_mode_update", "config_option_update"} & {u["sessionUpdate"] for u in updates(replayed)}
    again.close()


def test_status_turn_is_short(spawn: Any, tmp_path: Path) -> None:
    agent = start(spawn, 1)
    sid, _ = new(agent, tmp_path)
    final, msgs = turn(agent, sid, [text("status")])
    assert final["result"]["stopReason"] == "end_turn"
    assert answer(msgs) == "mode=ask model=demo-fast effort=medium\n"
    assert agent.agent_requests == []  # no edit, so no permission request
    usage = [u for u in updates(msgs) if u["sessionUpdate"] == "usage_update"]
    assert len(usage) == 1 and usage[0]["cost"]["currency"] == "USD" and usage[0]["used"] > 0
    agent.close()


@pytest.mark.parametrize("version", [1, 2])
def test_usage_update_carries_cost(spawn: Any, tmp_path: Path, version: int) -> None:
    agent = start(spawn, version)
    sid, _ = new(agent, tmp_path)
    costs = []
    for words in ("one", "two"):
        _, msgs = agent.prompt(sid, words)
        (usage,) = [u for u in updates(msgs) if u["sessionUpdate"] == "usage_update"]
        assert usage["size"] >= usage["used"] > 0
        costs.append(usage["cost"]["amount"])
    assert 0 < costs[0] < costs[1]  # cumulative
    agent.close()


# -- auth ------------------------------------------------------------------------------------------


def test_without_require_auth_there_is_nothing_to_log_into(spawn: Any, tmp_path: Path) -> None:
    agent = spawn("--protocol", "1")
    init = agent.initialize(1)
    assert "auth" not in init["agentCapabilities"] and init["authMethods"] == []
    resp, _ = agent.request("authenticate", {"methodId": "demo-login"})
    assert resp["error"]["code"] == -32602
    resp, _ = agent.request("logout", {})
    assert resp["error"]["code"] == -32601
    new(agent, tmp_path)
    assert "UNADVERTISED METHOD CALLED: logout" in settled(agent)


@pytest.mark.parametrize("version", [1, 2])
def test_require_auth_gates_sessions_until_login(spawn: Any, tmp_path: Path, version: int) -> None:
    login, logout = ("authenticate", "logout") if version == 1 else ("auth/login", "auth/logout")
    agent = spawn("--require-auth", "--protocol", str(version))
    init = agent.initialize(version)
    if version == 1:
        assert init["authMethods"] == [{"id": "demo-login", "name": "Demo login",
                                        "description": init["authMethods"][0]["description"]}]
        assert init["agentCapabilities"]["auth"] == {"logout": {}}
    else:
        (method,) = init["authMethods"]
        assert method["methodId"] == "demo-login" and method["type"] == "agent" and method["name"]
    resp, _ = agent.request("session/new", {"cwd": str(tmp_path), "mcpServers": []})
    assert resp["error"] == {"code": -32000, "message": "Authentication required"}
    resp, _ = agent.request(login, {"methodId": "nope"})
    assert resp["error"]["code"] == -32602
    resp, _ = agent.request(login, {"methodId": "demo-login"})
    assert resp["result"] == {}
    sid, _ = new(agent, tmp_path)
    agent.close()

    # A later process remembers the login (credentials in the state dir)...
    second = spawn("--require-auth", "--protocol", str(version))
    second.initialize(version)
    resp, _ = second.request("session/resume", {"sessionId": sid, "cwd": str(tmp_path), "mcpServers": []})
    assert "result" in resp
    resp, _ = second.request(logout, {})
    assert resp["result"] == {}
    # ...until logout: the active session's prompt and every new session need a login again.
    for method, params in (("session/prompt", {"sessionId": sid, "prompt": [text("hi")]}),
                           ("session/new", {"cwd": str(tmp_path), "mcpServers": []}),
                           ("session/load", {"sessionId": sid, "cwd": str(tmp_path), "mcpServers": []})):
        resp, _ = second.request(method, params)
        assert resp["error"]["code"] == -32000, method
    second.close()


def test_forget_auth_flag_drops_the_stored_login(spawn: Any, tmp_path: Path, acpcli_home: Path) -> None:
    first = spawn("--require-auth", "--protocol", "1")
    first.initialize(1)
    first.request("authenticate", {"methodId": "demo-login"})
    first.close()
    assert (acpcli_home / "demo-agent" / "credentials.json").is_file()
    second = spawn("--require-auth", "--forget-auth", "--protocol", "1")
    second.initialize(1)
    resp, _ = second.request("session/new", {"cwd": str(tmp_path), "mcpServers": []})
    assert resp["error"]["code"] == -32000
    second.close()


@pytest.mark.parametrize(("version", "method"), [(1, "auth/login"), (1, "auth/logout"), (2, "authenticate"),
                                                 (2, "logout")])
def test_auth_methods_of_the_other_version_do_not_exist(spawn: Any, version: int, method: str) -> None:
    agent = start(spawn, version, "--require-auth")
    resp, _ = agent.request(method, {"methodId": "demo-login"})
    assert resp["error"]["code"] == -32601
    assert f"UNADVERTISED METHOD CALLED: {method}" in settled(agent)


# -- prompt content --------------------------------------------------------------------------------

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(37)).decode()  # 45 bytes
LINK = {"type": "resource_link", "uri": "file:///x/y.txt", "name": "y.txt"}
EMBEDDED = {"type": "resource", "resource": {"uri": "file:///x/notes.md", "text": "a" * 123, "mimeType": "text/markdown"}}
BLOB = {"type": "resource", "resource": {"uri": "file:///x/b.bin", "blob": base64.b64encode(bytes(7)).decode()}}
IMAGE = {"type": "image", "mimeType": "image/png", "data": PNG}
AUDIO = {"type": "audio", "mimeType": "audio/wav", "data": PNG}


@pytest.mark.parametrize("version", [1, 2])
def test_prompt_content_is_listed_in_the_answer(spawn: Any, tmp_path: Path, version: int) -> None:
    agent = start(spawn, version)
    sid, _ = new(agent, tmp_path)
    _, msgs = turn(agent, sid, [text("look at these"), LINK, EMBEDDED, BLOB])
    reply = answer(msgs)
    assert "- received resource_link file:///x/y.txt\n" in reply
    assert "- received resource file:///x/notes.md (123 chars)\n" in reply
    assert "- received resource file:///x/b.bin (7 bytes)\n" in reply
    # A status turn lists them right under the settings line.
    _, msgs = turn(agent, sid, [text("status"), LINK])
    assert answer(msgs) == "mode=ask model=demo-fast effort=medium\nreceived resource_link file:///x/y.txt\n"
    agent.close()


@pytest.mark.parametrize("version", [1, 2])
def test_image_needs_the_with_image_flag(spawn: Any, tmp_path: Path, version: int) -> None:
    plain = start(spawn, version)
    init = plain.initialize(version)
    prompt_caps = init["agentCapabilities"]["promptCapabilities"] if version == 1 else init["capabilities"]["session"]["prompt"]
    assert prompt_caps == ({"image": False, "audio": False, "embeddedContext": True} if version == 1
                           else {"embeddedContext": {}})
    sid, _ = new(plain, tmp_path)
    for block in (IMAGE, AUDIO):
        resp, _ = turn(plain, sid, [text("see"), block])
        assert resp["error"]["code"] == -32602
    stderr = settled(plain)
    assert "UNADVERTISED FIELD SENT: image content in session/prompt" in stderr
    assert "UNADVERTISED FIELD SENT: audio content in session/prompt" in stderr

    able = start(spawn, version, "--with", "image")
    init = able.initialize(version)
    if version == 1:
        assert init["agentCapabilities"]["promptCapabilities"]["image"] is True
    else:
        assert init["capabilities"]["session"]["prompt"]["image"] == {}
    sid, _ = new(able, tmp_path)
    _, msgs = turn(able, sid, [text("see"), IMAGE])
    assert "- received image image/png (45 bytes)\n" in answer(msgs)
    able.close()


def test_without_embedded_context(spawn: Any, tmp_path: Path) -> None:
    agent = start(spawn, 1, "--without", "embedded-context")
    assert agent.initialize(1)["agentCapabilities"]["promptCapabilities"]["embeddedContext"] is False
    sid, _ = new(agent, tmp_path)
    resp, _ = turn(agent, sid, [text("see"), EMBEDDED])
    assert resp["error"]["code"] == -32602
    _, msgs = turn(agent, sid, [text("see"), LINK])  # links are baseline
    assert "received resource_link file:///x/y.txt" in answer(msgs)
    assert "UNADVERTISED FIELD SENT: resource content in session/prompt" in settled(agent)


@pytest.mark.parametrize(
    "block",
    [
        {"type": "resource_link", "name": "no uri"},
        {"type": "resource", "resource": {"uri": "file:///x"}},
        {"type": "image", "mimeType": "image/png", "data": "not base64!"},
        {"type": "video", "uri": "file:///x"},
        "just a string",
    ],
)
def test_malformed_blocks_are_invalid_params(spawn: Any, tmp_path: Path, block: Any) -> None:
    agent = start(spawn, 2, "--with", "image")
    sid, _ = new(agent, tmp_path)
    resp, _ = turn(agent, sid, [text("x"), block])
    assert resp["error"]["code"] == -32602
    final, _ = agent.prompt(sid, "still fine")  # the session took no harm
    assert _update(final)["stopReason"] == "end_turn"
    agent.close()


# -- the official SDK as an independent v1 agent ---------------------------------------------------


class SdkAgent(Agent):
    """The demo-agent test helper (timeouts, a reader thread), pointed at an SDK agent script."""

    def __init__(self, argv: list[str], env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     env=env)
        self._setup()


def test_sdk_config_agent_smoke(tmp_path: Path, running: list[Agent]) -> None:
    pytest.importorskip("acp")
    record = tmp_path / "record.jsonl"
    agent = SdkAgent(agent_argv("sdk_config_agent.py"), {**os.environ, "SDK_RECORD_FILE": str(record)})
    running.append(agent)
    init = agent.initialize(1)
    assert init["authMethods"][0]["id"] == "sdk-login"
    resp, _ = agent.request("session/new", {"cwd": str(tmp_path), "mcpServers": []})
    assert resp["error"]["code"] == -32000 and "auth" in resp["error"]["message"].lower()
    resp, _ = agent.request("authenticate", {"methodId": "wrong"})
    assert resp["error"]["code"] == -32602
    assert "result" in agent.request("authenticate", {"methodId": "sdk-login"})[0]
    resp, _ = agent.request("session/new", {"cwd": str(tmp_path), "mcpServers": []})
    result = resp["result"]
    sid = result["sessionId"]
    assert result["modes"]["currentModeId"] == "ask"
    assert [o["id"] for o in result["configOptions"]] == ["mode", "model"]
    assert "result" in agent.request("session/set_mode", {"sessionId": sid, "modeId": "code"})[0]
    bad, _ = agent.request("session/set_mode", {"sessionId": sid, "modeId": "nope"})
    assert bad["error"]["code"] == -32602
    resp, _ = set_option(agent, sid, "model", "sdk-large")
    assert current(resp["result"]["configOptions"]) == {"mode": "code", "model": "sdk-large"}
    resp, seen = agent.request("session/prompt", {"sessionId": sid, "prompt": [text("hi")]})
    assert resp["result"]["stopReason"] == "end_turn"
    assert answer(seen) == "mode=code model=sdk-large"
    assert agent.close() == 0
    methods = [json.loads(line)["method"] for line in record.read_text().splitlines()]
    assert methods == ["initialize", "session/new", "authenticate", "authenticate", "session/new",
                       "session/set_mode", "session/set_mode", "session/set_config_option", "session/prompt"]
