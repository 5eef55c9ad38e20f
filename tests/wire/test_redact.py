"""The one redaction module: env, headers, MCP args and URLs masked; names and shapes kept."""

from __future__ import annotations

import json
from typing import Any

import pytest

from acpcli.wire.redact import (
    REDACTED,
    redact_args,
    redact_frame,
    redact_url,
    redact_value,
    secret_name,
)


def logged(servers: Any) -> Any:
    """MCP server definitions as the wire log writes them: :func:`redact_value` of a
    ``session/new`` carrying them. The config files' named shape (name → entry) comes back as a
    list of definitions with their names, to compare alike with the wire shape."""
    out = redact_value({"method": "session/new", "params": {"mcpServers": servers}})["params"]["mcpServers"]
    if isinstance(out, dict):
        return [{"name": name, **entry} for name, entry in out.items()]
    return out


@pytest.mark.parametrize(
    "name",
    ["token", "API_KEY", "api-key", "apikey", "X-Api-Key", "access_key", "password", "passwd", "pwd",
     "client-secret", "Authorization", "auth", "GITHUB_PAT", "session", "Cookie", "sig", "private-key"],
)
def test_secret_names(name: str) -> None:
    assert secret_name(name)


@pytest.mark.parametrize("name", ["verbose", "port", "root", "keyboard", "monkeys", "host", "name", "p", "model"])
def test_ordinary_names(name: str) -> None:
    assert not secret_name(name)


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--token", "s3cret", "--verbose"], ["--token", REDACTED, "--verbose"]),
        (["--api-key=s3cret"], [f"--api-key={REDACTED}"]),
        (["-password", "s3cret"], ["-password", REDACTED]),
        (["--password"], ["--password"]),  # nothing follows: nothing to mask
        (["--token", "--verbose"], ["--token", "--verbose"]),  # a flag is not a value
        (["--root", "/srv", "--port", "8080"], ["--root", "/srv", "--port", "8080"]),
        (["-p", "8080"], ["-p", "8080"]),  # one-letter flags are ambiguous: left alone
        (["API_KEY=s3cret", "MODE=fast"], [f"API_KEY={REDACTED}", "MODE=fast"]),
        (["Authorization: Bearer s3cret"], [f"Authorization: {REDACTED}"]),
        (["https://u:s3cret@h.example/p?key=s3cret"], [f"https://{REDACTED}@h.example/p?key={REDACTED}"]),
        (["--url=https://h.example/?token=s3cret"], [f"--url=https://h.example/?token={REDACTED}"]),
        ([1, None, "--token", "s3cret"], [1, None, "--token", REDACTED]),
    ],
)
def test_redact_args(args: list, expected: list) -> None:
    assert redact_args(args) == expected


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("https://bob:pw@example.com/mcp", "https://***@example.com/mcp"),
        ("https://ghp_token@github.com/x", "https://***@github.com/x"),
        ("https://example.com/mcp?key=abc&x=1", "https://example.com/mcp?key=***&x=***"),
        ("https://example.com/cb#access_token=abc&state=1", "https://example.com/cb#access_token=***&state=***"),
        ("https://example.com:8443/mcp", "https://example.com:8443/mcp"),
        ("https://example.com/doc#section", "https://example.com/doc#section"),
        ("https://example.com/?s3cret", "https://example.com/?***"),
    ],
)
def test_redact_url(url: str, expected: str) -> None:
    assert redact_url(url) == expected


def test_logged_servers_both_shapes_and_input_untouched() -> None:
    wire = [
        {"type": "stdio", "name": "fs", "command": "/bin/fs", "args": ["--token", "s3cret", "-v"],
         "env": [{"name": "TOKEN", "value": "s3cret"}]},
        {"type": "http", "name": "web", "url": "https://bob:s3cret@example.com/mcp?key=s3cret",
         "headers": [{"name": "Authorization", "value": "Bearer s3cret"}]},
        {"type": "_custom", "name": "odd", "apiToken": "s3cret", "region": "eu"},
    ]
    before = json.dumps(wire)
    out = logged(wire)
    assert json.dumps(wire) == before
    assert "s3cret" not in json.dumps(out)
    assert out[0]["args"] == ["--token", REDACTED, "-v"] and out[0]["command"] == "/bin/fs"
    assert out[0]["env"] == [{"name": "TOKEN", "value": REDACTED}]
    assert out[1]["headers"] == [{"name": "Authorization", "value": REDACTED}]
    assert out[2] == {"type": "_custom", "name": "odd", "apiToken": REDACTED, "region": "eu"}

    named = logged({"fs": {"command": "fs", "args": ["--api-key=s3cret"], "env": {"K": "s3cret"}}})
    assert named == [{"name": "fs", "command": "fs", "args": [f"--api-key={REDACTED}"], "env": {"K": REDACTED}}]


def test_redact_wire_shapes() -> None:
    servers = [
        {"type": "stdio", "name": "fs", "command": "/bin/fs", "args": ["-v"],
         "env": [{"name": "TOKEN", "value": "s3cret"}]},
        {"type": "http", "name": "web", "url": "https://bob:pw@example.com/mcp?key=abc&x=1",
         "headers": [{"name": "Authorization", "value": "Bearer s3cret"}]},
    ]
    before = json.dumps(servers)
    out = logged(servers)
    assert json.dumps(servers) == before  # the input is not modified
    text = json.dumps(out)
    assert "s3cret" not in text and "pw" not in text and "abc" not in text
    assert out[0]["env"] == [{"name": "TOKEN", "value": "***"}]
    assert out[0]["args"] == ["-v"] and out[0]["command"] == "/bin/fs"
    assert out[1]["headers"] == [{"name": "Authorization", "value": "***"}]
    assert out[1]["url"].startswith("https://***@example.com/mcp?key=***")


def test_redact_named_config_shape() -> None:
    out = logged({"fs": {"command": "fs", "env": {"TOKEN": "${MY_TOKEN}"}},
                  "web": {"url": "https://e.com/mcp", "headers": {"X-Key": "k"}}})
    assert out == [
        {"name": "fs", "command": "fs", "env": {"TOKEN": "***"}},
        {"name": "web", "url": "https://e.com/mcp", "headers": {"X-Key": "***"}},
    ]


def test_redact_value_finds_servers_and_env_anywhere() -> None:
    message = {
        "jsonrpc": "2.0", "id": 1, "method": "session/new",
        "params": {"cwd": "/w", "mcpServers": [
            {"name": "fs", "command": "/bin/fs", "args": ["--token", "s3cret"], "env": []},
            {"type": "sse", "name": "s", "url": "https://h/?api_key=s3cret", "headers": []},
        ]},
    }
    out = redact_value(message)
    assert "s3cret" not in json.dumps(out)
    assert out["params"]["cwd"] == "/w" and out["params"]["mcpServers"][0]["name"] == "fs"
    terminal = {"method": "terminal/create", "params": {"command": "x", "env": [{"name": "K", "value": "s3cret"}]}}
    assert redact_value(terminal)["params"]["env"] == [{"name": "K", "value": REDACTED}]


def test_redact_frame_keeps_harmless_frames_byte_for_byte() -> None:
    harmless = b'{ "jsonrpc":"2.0", "method":"session/update", "params":{"text":"--token abc"} }'
    assert redact_frame(harmless) is harmless  # no marker: not even parsed
    nothing_secret = b'{"method":"session/new","params":{"mcpServers": []}}'
    assert redact_frame(nothing_secret) == nothing_secret  # parsed, nothing changed: unchanged bytes
    assert redact_frame(b'not json "env"') == b'not json "env"'
    deep = b'{"env":' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    assert redact_frame(deep) == deep  # too deep to be ours: returned, no exception
    secret = json.dumps({"params": {"mcpServers": [{"name": "a", "command": "c", "args": ["--token", "s3cret"]}]}})
    assert b"s3cret" not in redact_frame(secret.encode())
