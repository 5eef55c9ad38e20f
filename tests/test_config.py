"""Agents and MCP servers: the TOML config, MCP JSON files, ACP wire shapes (acpcli.config)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from acpcli import protocol
from acpcli.config import (
    AgentSpec,
    Config,
    agent_from_cmd,
    builtin_agents,
    expand_vars,
    find_executable,
    load_config,
    load_mcp_file,
    mcp_transport,
    merge_mcp,
    resolve_agent,
    to_acp_servers,
)
from acpcli.errors import CapabilityMissing, ConfigError, ExitCode, UsageError
from acpcli.paths import config_path
from acpcli.protocol import wire
from acpcli.wire import capabilities
from acpcli.wire.negotiate import features_from_result
from acpcli.wire.redact import redact_frame


def write_config(text: str) -> Path:
    path = config_path()
    path.write_text(text, encoding="utf-8")
    return path


def make_exe(path: Path, executable: bool = True) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\nexit 0\n")
    path.chmod(0o755 if executable else 0o644)
    return path


def one_line(err: pytest.ExceptionInfo[BaseException]) -> str:
    text = str(err.value)
    assert "\n" not in text
    return text


# -- the config file -------------------------------------------------------------------------


def test_missing_file_is_an_empty_config() -> None:
    config = load_config()
    assert config.path == config_path()
    assert config.agents == builtin_agents() and config.mcp_servers == {}
    assert config.default_agent is None


def test_full_example_parses() -> None:
    write_config(
        """
        [agents.myagent]
        command = ["my-agent", "--acp"]
        env = { FOO = "bar" }
        cwd = "~/src/project"
        description = "mine"

        [agents.quoted]
        command = "my-agent --name 'two words'"
        args = ["--more"]

        [mcp_servers.fs]
        command = "mcp-fs"
        args = ["--root", "."]
        env = { TOKEN = "${MY_TOKEN}" }

        [mcp_servers.web]
        url = "https://example.com/mcp"
        headers = { Authorization = "Bearer ${API_TOKEN}" }

        [ui]
        theme = "dark"
        """
    )
    config = load_config()
    assert "demo" in config.agents and config.agents["demo"].builtin
    my = config.agents["myagent"]
    assert my == AgentSpec(
        name="myagent",
        argv=["my-agent", "--acp"],
        env={"FOO": "bar"},
        cwd=os.path.expanduser("~/src/project"),
        description="mine",
        builtin=False,
    )
    assert config.agents["quoted"].argv == ["my-agent", "--name", "two words", "--more"]
    # ${VAR} stays unexpanded when the file is read: expansion happens at use time
    assert config.mcp_servers["fs"]["env"] == {"TOKEN": "${MY_TOKEN}"}
    assert config.mcp_servers["web"]["headers"] == {"Authorization": "Bearer ${API_TOKEN}"}
    assert not hasattr(config, "extra")  # an unknown top-level key ("ui") is ignored, not kept


def test_the_documented_example_is_valid() -> None:
    """The TOML shown in the module docstring (copied to the README) loads as described."""
    import textwrap

    import acpcli.config

    doc = acpcli.config.__doc__ or ""
    block = doc.split("Shape::\n", 1)[1].split("\n\n``", 1)[0]
    write_config(textwrap.dedent(block))
    config = load_config()
    assert config.default_agent == "myagent"
    assert config.agents["myagent"].argv == ["my-agent", "--acp", "--verbose"]
    assert set(config.mcp_servers) == {"fs", "web", "custom"}
    assert resolve_agent(config.default_agent, config).description == "..."


def test_default_agent() -> None:
    write_config('default_agent = "mine"\n[agents.mine]\ncommand = ["m"]\n')
    config = load_config()
    assert config.default_agent == "mine"
    assert resolve_agent(config.default_agent, config).argv == ["m"]
    write_config("default_agent = 1\n")
    with pytest.raises(ConfigError, match="default_agent"):
        load_config()


def test_user_entries_override_builtins() -> None:
    write_config('[agents.codex]\ncommand = ["/opt/codex-acp", "--debug"]\n')
    spec = resolve_agent("codex", load_config())
    assert spec.argv == ["/opt/codex-acp", "--debug"] and not spec.builtin
    assert resolve_agent("codex").argv == ["codex-acp"]


def test_builtin_agents() -> None:
    agents = builtin_agents()
    # isolated (-I): never `python -m`, which would put the working directory on the import path
    assert agents["demo"].argv[:2] == [sys.executable, "-I"] and "-m" not in agents["demo"].argv
    assert agents["claude"].argv == ["claude-agent-acp"]
    assert agents["claude-code"].argv == ["claude-code-acp"]
    assert agents["codex"].argv == ["codex-acp"]
    assert agents["gemini"].argv == ["gemini", "--acp"]
    assert all(a.builtin and a.name == name for name, a in agents.items())
    agents["demo"].env["X"] = "1"  # callers get fresh objects, never shared state
    assert builtin_agents()["demo"].env == {}


def test_unknown_agent_lists_known_names() -> None:
    config = Config()
    config.agents["mine"] = AgentSpec(name="mine", argv=["m"])
    with pytest.raises(UsageError) as info:
        resolve_agent("my-agent --acp", config)
    text = one_line(info)
    assert "'my-agent --acp'" in text
    for name in ("demo", "claude", "codex", "gemini", "mine"):
        assert name in text
    assert info.value.exit_code == ExitCode.USAGE


@pytest.mark.parametrize(
    ("text", "line", "needle"),
    [
        ("[agents.x]\ncommand = [\n", 2, "invalid TOML"),
        ("a = 1\nb = = 2\n", 2, "invalid TOML"),
        ("\n\n[agents.bad]\ncommand = 3\n", 3, "command must be a list of strings"),
        ("[agents.bad]\ndescription = 'no command'\n", 1, "has no command"),
        ("[agents.bad]\ncommand = []\n", 1, "command is empty"),
        ("[agents.bad]\ncommand = ['x']\nargz = []\n", 1, "unknown key 'argz'"),
        ("[agents.bad]\ncommand = ['x']\nenv = { A = 1 }\n", 1, "env value for A must be a string"),
        ("[agents.bad]\ncommand = 'x \"unclosed'\n", 1, "cannot parse command"),
        ("\n[mcp_servers.m]\nargs = []\n", 2, "needs a command (stdio) or a url (http)"),
        ("[mcp_servers.m]\nurl = 'https://x'\nheaders = ['a']\n", 1, "headers must be a table"),
        ("[mcp_servers.m]\ntype = 'websocket'\nurl = 'ws://x'\n", 1, "unknown transport type 'websocket'"),
    ],
)
def test_malformed_config_names_file_and_line(text: str, line: int, needle: str) -> None:
    path = write_config(text)
    with pytest.raises(ConfigError) as info:
        load_config()
    message = one_line(info)
    assert message.startswith(f"{path}:{line}")
    assert needle in message
    assert info.value.exit_code == ExitCode.CONFIG


def test_wrong_top_level_types() -> None:
    write_config('agents = "nope"\n')
    with pytest.raises(ConfigError, match="'agents' must be a table"):
        load_config()
    write_config("mcp_servers = 3\n")
    with pytest.raises(ConfigError, match="'mcp_servers' must be a table"):
        load_config()


def test_a_directory_where_the_file_should_be_is_unreadable() -> None:
    config_path().mkdir()
    with pytest.raises(ConfigError) as info:
        load_config()
    message = one_line(info)
    assert str(config_path()) in message and "cannot read" in message


@pytest.mark.skipif(
    sys.platform == "win32" or os.geteuid() == 0, reason="root (and Windows) read files whatever their mode"
)
def test_a_file_without_read_permission_is_unreadable() -> None:
    path = write_config("[agents.x]\ncommand = ['x']\n")
    path.chmod(0)
    with pytest.raises(ConfigError, match="cannot read"):
        load_config()


def test_not_utf8_is_a_config_error() -> None:
    config_path().write_bytes(b"[agents.x]\ncommand = ['\xff']\n")
    with pytest.raises(ConfigError, match="not UTF-8"):
        load_config()


# -- agents ------------------------------------------------------------------------------------


def test_agent_from_cmd() -> None:
    spec = agent_from_cmd("/opt/bin/my-agent --acp --name 'a b'")
    assert spec.argv == ["/opt/bin/my-agent", "--acp", "--name", "a b"]
    assert spec.name == "my-agent" and not spec.builtin
    for bad in ("", "   ", "agent 'unclosed"):
        with pytest.raises(UsageError):
            agent_from_cmd(bad)


def test_agent_environment_is_the_user_env_plus_additions() -> None:
    spec = AgentSpec(name="a", argv=["a"], env={"FOO": "bar", "URL": "http://${HOST}:1"})
    env = spec.environment({"PATH": "/bin", "HOST": "h", "FOO": "old"})
    assert env == {"PATH": "/bin", "HOST": "h", "FOO": "bar", "URL": "http://h:1"}
    with pytest.raises(ConfigError, match="HOST"):
        spec.environment({})


def test_find_executable_on_path(tmp_path: Path) -> None:
    exe = make_exe(tmp_path / "bin" / "my-agent")
    make_exe(tmp_path / "bin" / "not-exec", executable=False)
    environ = {"PATH": f"{tmp_path / 'empty'}{os.pathsep}{tmp_path / 'bin'}"}
    assert find_executable(AgentSpec(name="a", argv=["my-agent"]), environ) == str(exe)
    assert find_executable(AgentSpec(name="a", argv=["not-exec"]), environ) is None
    assert find_executable(AgentSpec(name="a", argv=["nowhere-to-be-found-acp"]), environ) is None
    # the agent's own env may set PATH
    spec = AgentSpec(name="a", argv=["my-agent"], env={"PATH": str(tmp_path / "bin")})
    assert find_executable(spec, {"PATH": ""}) == str(exe)


def test_find_executable_with_paths(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    exe = make_exe(tmp_path / "tools" / "agent.sh")
    make_exe(tmp_path / "tools" / "plain.txt", executable=False)
    monkeypatch.chdir(tmp_path)
    relative = AgentSpec(name="a", argv=["./tools/agent.sh"])
    assert find_executable(relative, {"PATH": ""}) == str(exe)
    assert find_executable(AgentSpec(name="a", argv=[str(exe)]), {"PATH": ""}) == str(exe)
    assert find_executable(AgentSpec(name="a", argv=["tools/plain.txt"]), {}) is None
    assert find_executable(AgentSpec(name="a", argv=["./tools"]), {}) is None  # a directory
    assert find_executable(AgentSpec(name="a", argv=["./tools/missing"]), {}) is None


def test_find_executable_really_finds_the_interpreter() -> None:
    found = find_executable(AgentSpec(name="py", argv=[sys.executable]))
    assert found is not None and os.path.samefile(found, sys.executable)


# -- ${VAR} -----------------------------------------------------------------------------------


def test_expand_vars() -> None:
    env = {"A": "1", "B": "two"}
    assert expand_vars("plain", env, "w") == "plain"
    assert expand_vars("${A}-${B}-${A}", env, "w") == "1-two-1"
    assert expand_vars("$A ${ A} $${A}", env, "w") == "$A ${ A} ${A}"
    with pytest.raises(ConfigError) as info:
        expand_vars("x ${MISSING_VAR}", env, "MCP server 'fs': env TOKEN")
    assert one_line(info) == "MCP server 'fs': env TOKEN: environment variable MISSING_VAR is not set"


# -- MCP files -----------------------------------------------------------------------------


def write_json(path: Path, data: object) -> Path:
    path.write_text(json.dumps(data) if not isinstance(data, str) else data, encoding="utf-8")
    return path


def test_load_mcp_file(tmp_path: Path) -> None:
    path = write_json(
        tmp_path / "mcp.json",
        {
            "mcpServers": {
                "fs": {"command": "mcp-fs", "args": ["--root", "."], "env": {"K": "V"}, "disabled": False},
                "web": {"type": "http", "url": "https://e.com/mcp", "headers": {"H": "v"}},
                "plain": {"command": "x"},
                "ext": {"type": "_acme", "socket": "/run/acme.sock"},
            }
        },
    )
    servers = load_mcp_file(path)
    assert list(servers) == ["fs", "web", "plain", "ext"]
    assert servers["fs"]["args"] == ["--root", "."] and servers["fs"]["env"] == {"K": "V"}
    assert servers["plain"]["args"] == [] and servers["plain"]["env"] == {}
    assert servers["ext"] == {"type": "_acme", "socket": "/run/acme.sock"}
    vscode = write_json(tmp_path / "vscode.json", {"servers": {"s": {"url": "https://x"}}})
    assert load_mcp_file(vscode)["s"]["url"] == "https://x"


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        ('{"mcpServers": {"fs": {"command": "x",}}}', ":1:39: invalid JSON"),
        ("[1, 2]", "expected a JSON object"),
        ('{"mcpServers": []}', 'expected an "mcpServers" object'),
        ('{"other": {}}', 'expected an "mcpServers" object'),
        ('{"mcpServers": {"fs": "mcp-fs"}}', "MCP server 'fs' must be an object"),
        ('{"mcpServers": {"fs": {"args": []}}}', "needs a command"),
        ('{"mcpServers": {"fs": {"command": "x", "args": "--root ."}}}', "args must be a list of strings"),
        (
            '{"mcpServers": {"fs": {"command": "x", "env": {"PORT": 8080}}}}',
            "env value for PORT must be a string",
        ),
        ('{"mcpServers": {"fs": {"command": ""}}}', "command must be a non-empty string"),
        ('{"mcpServers": {"w": {"type": "http"}}}', "url must be a non-empty string"),
        ('{"mcpServers": {"w": {"type": 7, "url": "https://x"}}}', "type must be a string"),
    ],
)
def test_malformed_mcp_files(tmp_path: Path, content: str, needle: str) -> None:
    path = write_json(tmp_path / "mcp.json", content)
    with pytest.raises(ConfigError) as info:
        load_mcp_file(path)
    message = one_line(info)
    assert message.startswith(str(path))
    assert needle in message


def test_unreadable_mcp_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read MCP server file"):
        load_mcp_file(tmp_path / "missing.json")
    with pytest.raises(ConfigError, match="cannot read MCP server file"):
        load_mcp_file(tmp_path)


# -- ACP wire shapes -----------------------------------------------------------------------------


def schema_required(version: str, name: str) -> set[str]:
    """The wire names of the required fields of a schema definition, read from the models
    generated from that schema (the suite reads nothing outside the repository)."""
    cls = getattr(protocol.models(1 if version == "v1" else 2), name)
    return {field.alias or attr for attr, field in cls.model_fields.items() if field.is_required()}


def shaped(named, environ, version=None, **kwargs):
    """``to_acp_servers`` as a request to an agent of ``version`` would carry them (the
    version shaping lives in ``acpcli.protocol.wire``)."""
    servers = to_acp_servers(named, environ, **kwargs)
    return servers if version is None else [wire.server_for_version(s, version) for s in servers]


def v2_features():
    return features_from_result(
        {"protocolVersion": 2, "capabilities": {"session": {"mcp": {"stdio": {}, "http": {}}}}}
    )


@pytest.fixture
def mcp_bin(tmp_path: Path) -> Path:
    make_exe(tmp_path / "mcpbin" / "mcp-fs")
    return tmp_path / "mcpbin"


def test_stdio_v2(mcp_bin: Path) -> None:
    named = {"fs": {"command": "mcp-fs", "args": ["--root", "${ROOT}"], "env": {"TOKEN": "${MY_TOKEN}"}}}
    environ = {"PATH": str(mcp_bin), "ROOT": "/src", "MY_TOKEN": "t0k"}
    (server,) = shaped(named, environ, 2)
    assert server == {
        "type": "stdio",
        "name": "fs",
        "command": str(mcp_bin / "mcp-fs"),
        "args": ["--root", "/src"],
        "env": [{"name": "TOKEN", "value": "t0k"}],
    }
    assert schema_required("v2-draft", "McpServerStdio") <= set(server)
    assert mcp_transport(server) == "stdio"


def test_stdio_v1_is_untagged(mcp_bin: Path) -> None:
    (server,) = shaped({"fs": {"command": "mcp-fs"}}, {"PATH": str(mcp_bin)}, 1)
    assert "type" not in server
    assert set(server) == schema_required("v1", "McpServerStdio") == {"name", "command", "args", "env"}
    assert mcp_transport(server) == "stdio"


@pytest.mark.parametrize("version", [1, 2])
def test_http(version: int) -> None:
    named = {
        "web": {"url": "https://${HOST}/mcp", "headers": {"Authorization": "Bearer ${API_TOKEN}"}},
        "alias": {"type": "streamable-http", "url": "https://x/mcp"},
    }
    web, alias = shaped(named, {"HOST": "e.com", "API_TOKEN": "abc"}, version)
    assert web == {
        "type": "http",
        "name": "web",
        "url": "https://e.com/mcp",
        "headers": [{"name": "Authorization", "value": "Bearer abc"}],
    }
    assert alias["type"] == "http" and alias["headers"] == []
    schema = "v1" if version == 1 else "v2-draft"
    assert schema_required(schema, "McpServerHttp") <= set(web)


def test_sse_exists_only_in_v1() -> None:
    named = {"old": {"type": "sse", "url": "https://x/sse"}}
    (server,) = shaped(named, {}, 1)
    assert server == {"type": "sse", "name": "old", "url": "https://x/sse", "headers": []}
    assert schema_required("v1", "McpServerSse") <= set(server)
    # A v2 agent cannot advertise sse: the request is refused before it is built.
    with pytest.raises(CapabilityMissing, match="sse"):
        capabilities.opening_params(v2_features(), "new", "/w", [], shaped(named, {}))


def test_before_negotiation_then_adapted(mcp_bin: Path) -> None:
    named = {"fs": {"command": "mcp-fs"}, "old": {"type": "sse", "url": "https://x"}, "c": {"type": "_c"}}
    servers = to_acp_servers(named, {"PATH": str(mcp_bin)})  # version not known yet
    assert [s["type"] for s in servers] == ["stdio", "sse", "_c"]
    v1 = [wire.server_for_version(s, 1) for s in servers]
    assert "type" not in v1[0] and v1[1:] == servers[1:]
    assert servers[0]["type"] == "stdio"  # the input is not modified
    assert [wire.server_for_version(s, 2) for s in v1[:1]] == servers[:1]
    with pytest.raises(CapabilityMissing, match=r"'old'"):
        capabilities.opening_params(v2_features(), "new", "/w", [], servers)


def test_custom_transport_passes_through_unchanged() -> None:
    entry = {"type": "_acme", "socket": "/run/${NOT_EXPANDED}", "env": {"K": "V"}}
    for version in (None, 1, 2):
        (server,) = shaped({"ext": entry}, {}, version)
        assert server == {"name": "ext", **entry}
    assert mcp_transport(server) == "_acme"


def test_missing_variable_names_it(mcp_bin: Path) -> None:
    named = {"fs": {"command": "mcp-fs", "env": {"TOKEN": "${MY_TOKEN}"}}}
    with pytest.raises(ConfigError) as info:
        to_acp_servers(named, {"PATH": str(mcp_bin)})
    assert "MY_TOKEN" in one_line(info) and "'fs'" in str(info.value)
    with pytest.raises(ConfigError, match="API_TOKEN"):
        to_acp_servers({"w": {"url": "https://x", "headers": {"A": "${API_TOKEN}"}}}, {})


def test_unresolvable_commands(tmp_path: Path) -> None:
    make_exe(tmp_path / "data.txt", executable=False)
    with pytest.raises(ConfigError, match="'nope-mcp' not found on PATH"):
        to_acp_servers({"x": {"command": "nope-mcp"}}, {"PATH": str(tmp_path)})
    with pytest.raises(ConfigError, match="not an executable file"):
        to_acp_servers({"x": {"command": "./data.txt"}}, {}, base_dir=tmp_path)


def test_relative_commands_resolve_against_base_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    exe = make_exe(tmp_path / "proj" / "bin" / "server")
    (server,) = to_acp_servers({"s": {"command": "./bin/server"}}, {}, base_dir=tmp_path / "proj")
    assert server["command"] == str(exe) and os.path.isabs(server["command"])
    monkeypatch.chdir(tmp_path / "proj")  # default base: the current directory
    (server,) = to_acp_servers({"s": {"command": "bin/server"}}, {})
    assert server["command"] == str(exe)


def test_every_server_says_its_transport(mcp_bin: Path) -> None:
    named = {
        "fs": {"command": "mcp-fs"},
        "web": {"url": "https://x"},
        "ext": {"type": "_acme"},
    }
    for version in (None, 1, 2):
        servers = shaped(named, {"PATH": str(mcp_bin)}, version)
        assert [mcp_transport(s) for s in servers] == ["stdio", "http", "_acme"]
    assert [s["type"] for s in to_acp_servers(named, {"PATH": str(mcp_bin)})] == ["stdio", "http", "_acme"]


def test_config_servers_end_to_end_and_redacted(mcp_bin: Path) -> None:
    write_config('[mcp_servers.fs]\ncommand = "mcp-fs"\nenv = { TOKEN = "${MY_TOKEN}" }\n')
    config = load_config()
    selected = merge_mcp({}, config.mcp_servers, ["fs"])
    servers = to_acp_servers(selected, {"PATH": str(mcp_bin), "MY_TOKEN": "s3cret"})
    assert servers[0]["env"] == [{"name": "TOKEN", "value": "s3cret"}]
    frame = json.dumps({"method": "session/new", "params": {"mcpServers": servers}}).encode()
    assert "s3cret" not in redact_frame(frame).decode()  # what the wire log and --raw write


# -- --mcp NAME -----------------------------------------------------------------------------------


def test_merge_mcp() -> None:
    file_servers = {"a": {"command": "a"}}
    config_servers = {"b": {"url": "https://b"}, "c": {"command": "c"}}
    merged = merge_mcp(file_servers, config_servers, ["c"])
    assert merged == {"a": {"command": "a"}, "c": {"command": "c"}}
    assert merge_mcp(file_servers, config_servers, []) == file_servers
    with pytest.raises(UsageError) as info:
        merge_mcp(file_servers, config_servers, ["zz"])
    message = one_line(info)
    assert "'zz'" in message and "b, c" in message
    with pytest.raises(UsageError, match="none configured"):
        merge_mcp({}, {}, ["x"])


def test_merge_mcp_same_name_twice() -> None:
    same = {"command": "a"}
    assert merge_mcp({"a": same}, {"a": dict(same)}, ["a"]) == {"a": same}
    with pytest.raises(UsageError, match="both"):
        merge_mcp({"a": same}, {"a": {"command": "other"}}, ["a"])


def test_an_agent_protocol_is_read_and_checked() -> None:
    write_config('[agents.a]\ncommand = ["a"]\nprotocol = "2-latest"\n[agents.b]\ncommand = ["b"]\nprotocol = 1\n')
    config = load_config()
    assert config.agents["a"].protocol == "2-latest" and config.agents["b"].protocol == "1"
    write_config('[agents.c]\ncommand = ["c"]\nprotocol = "v2"\n')
    with pytest.raises(ConfigError, match="protocol must be one of"):
        load_config()
