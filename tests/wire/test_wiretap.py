"""The wire tap: one line per frame, both directions, secrets masked."""

from __future__ import annotations

import json
import re
import stat
from pathlib import Path
from typing import Any

import anyio
import pytest

from acpcli.wire.connection import Connection
from acpcli.wire.redact import redact_frame
from acpcli.wire.transport import memory_pair
from acpcli.wire.wiretap import WireTap

LINE = re.compile(rb"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}\+00:00) (->|<-) (.*)$")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def entries(path: Path) -> list[tuple[bytes, bytes]]:
    """(direction, frame) for every line of the log; fails on a malformed line."""
    result = []
    for line in path.read_bytes().split(b"\n")[:-1]:
        match = LINE.match(line)
        assert match, line
        result.append((match.group(2), match.group(3)))
    return result


SESSION_NEW = {
    "jsonrpc": "2.0",
    "id": 2,
    "method": "session/new",
    "params": {
        "cwd": "/work",
        "mcpServers": [
            {
                "type": "stdio",
                "name": "db",
                "command": "/usr/bin/db-mcp",
                "args": ["--env", "prod"],
                "env": [{"name": "DB_PASSWORD", "value": "hunter2"}, {"name": "MODE", "value": "x"}],
            },
            {
                "type": "http",
                "name": "search",
                "url": "https://example.invalid/mcp",
                "headers": [{"name": "Authorization", "value": "Bearer s3cret"}],
            },
        ],
    },
}


def test_secrets_are_masked_and_names_kept(tmp_path: Path) -> None:
    log = tmp_path / "wire.log"
    with WireTap(log) as tap:
        tap.sent(json.dumps(SESSION_NEW).encode())
    [(direction, frame)] = entries(log)
    assert direction == b"->"
    assert b"hunter2" not in frame and b"s3cret" not in frame
    logged = json.loads(frame)
    servers = logged["params"]["mcpServers"]
    assert servers[0]["env"] == [{"name": "DB_PASSWORD", "value": "***"}, {"name": "MODE", "value": "***"}]
    assert servers[1]["headers"] == [{"name": "Authorization", "value": "***"}]
    # Everything else is intact.
    servers[0]["env"] = SESSION_NEW["params"]["mcpServers"][0]["env"]  # type: ignore[index]
    servers[1]["headers"] = SESSION_NEW["params"]["mcpServers"][1]["headers"]  # type: ignore[index]
    assert logged == SESSION_NEW


@pytest.mark.parametrize(
    "message",
    [
        # inside a batch, deep in params
        [{"jsonrpc": "2.0", "id": 1, "method": "x", "params": {"a": {"b": [{"env": [{"name": "K", "value": "v1"}]}]}}}],
        # an agent asking us to run a terminal with secrets in its env
        {"id": "t", "method": "terminal/create", "params": {"env": [{"name": "K", "value": "v1"}]}},
        # the object shape MCP config files use
        {"params": {"mcpServers": {"db": {"env": {"K": "v1"}, "headers": {"X-Key": "v1"}}}}},
    ],
    ids=["batch", "terminal", "object-shape"],
)
def test_secrets_are_masked_anywhere(message: Any) -> None:
    frame = json.dumps(message).encode()
    redacted = redact_frame(frame)
    assert b"v1" not in redacted
    assert b'"K"' in redacted or b'"name":"K"' in redacted


def test_frames_without_secrets_are_written_byte_for_byte(tmp_path: Path) -> None:
    log = tmp_path / "wire.log"
    odd_but_valid = b'{ "jsonrpc" : "2.0",  "method":"session/update", "params":{"text":"caf\\u00e9"} }'
    mentions_env_harmlessly = b'{"jsonrpc":"2.0","method":"m","params":{"env":"production", "headers" :null}}'
    invalid = b"\xff\xfe not json"
    with WireTap(log) as tap:
        tap.received(odd_but_valid)
        tap.received(mentions_env_harmlessly)
        tap.received(invalid)
    assert entries(log) == [(b"<-", odd_but_valid), (b"<-", mentions_env_harmlessly), (b"<-", invalid)]


def test_the_file_is_opened_lazily_private_and_reopened_after_close(tmp_path: Path) -> None:
    log = tmp_path / "deep" / "dir" / "wire.log"
    tap = WireTap(log)
    assert not log.exists()
    tap.sent(b"{}")
    # Flushed per frame: readable while the tap is still open.
    assert entries(log) == [(b"->", b"{}")]
    assert stat.S_IMODE(log.stat().st_mode) == 0o600
    tap.close()
    tap.close()
    tap.received(b"[]")
    tap.close()
    assert entries(log) == [(b"->", b"{}"), (b"<-", b"[]")]


def test_from_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert WireTap.from_env() is None  # conftest unsets ACPCLI_LOG_FILE
    monkeypatch.setenv("ACPCLI_LOG_FILE", "")
    assert WireTap.from_env() is None
    monkeypatch.setenv("ACPCLI_LOG_FILE", str(tmp_path / "w.log"))
    tap = WireTap.from_env()
    assert tap is not None and tap.path == tmp_path / "w.log"
    home_tap = WireTap.from_env({"ACPCLI_LOG_FILE": "~/x.log"})
    assert home_tap is not None and home_tap.path == Path("~/x.log").expanduser()


@pytest.mark.anyio
async def test_a_connection_taps_both_directions_in_order(tmp_path: Path) -> None:
    log = tmp_path / "wire.log"
    client_end, agent_end = memory_pair()

    async def new_session(params: Any) -> Any:
        return {"sessionId": "s1"}

    with anyio.fail_after(10):
        async with Connection(agent_end, handlers={"session/new": new_session}):
            async with Connection(client_end, tap=WireTap(log)) as client:
                assert await client.request("session/new", SESSION_NEW["params"]) == {"sessionId": "s1"}
                await client.notify("session/cancel", {"sessionId": "s1"})
    # Connection closed the tap's file on exit (no ResourceWarning under -W error).
    logged = entries(log)
    assert [d for d, _ in logged] == [b"->", b"<-", b"->"]
    assert b"hunter2" not in log.read_bytes() and b"s3cret" not in log.read_bytes()
    assert json.loads(logged[1][1]) == {"jsonrpc": "2.0", "id": 1, "result": {"sessionId": "s1"}}
    assert json.loads(logged[2][1])["method"] == "session/cancel"


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_a_log_that_cannot_be_written_fails_once_and_never_raises() -> None:
    told: list[str] = []
    tap = WireTap("/dev/full", on_failure=told.append)
    tap.open()  # /dev/full opens; it is the writes that fail
    tap.sent(b'{"a":1}')
    tap.received(b'{"b":2}')
    tap.sent(b'{"c":3}')
    tap.close()
    assert told == ["cannot write the wire log /dev/full: No space left on device"]
    assert tap.failure == told[0] and tap.lost == 3


def test_open_raises_for_a_path_that_cannot_be_a_log(tmp_path: Path) -> None:
    tap = WireTap(tmp_path)  # a directory
    with pytest.raises(IsADirectoryError):
        tap.open()
    assert tap.failure is None  # refusing to start is the caller's business, not a failure mid-run
