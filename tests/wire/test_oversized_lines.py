"""Lines over the line limit, deep JSON and the warnings the person sees about them.

The end-to-end behaviour (the real program, a real agent process) is in
``tests/cli/test_hostile_output.py``; here the pieces: the framer's report of a dropped
line, reading a JSON-RPC id from its head, the connection settling what waited for it,
the rate-limited warnings and ``--raw`` on JSON it cannot parse.
"""

from __future__ import annotations

import io
import json
from typing import Any

import anyio
import pytest

from acpcli import notices
from acpcli.errors import AnswerTooLarge, ExitCode, RpcError
from acpcli.wire.connection import _UNREAD, Connection, _head_fields
from acpcli.wire.transport import OVERSIZED_HEAD_BYTES, LineFramer, MemoryTransport, memory_pair
from acpcli.wire.wiretap import StreamTap


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


# -- the framer ----------------------------------------------------------------------------------


def test_framer_hands_the_head_of_a_dropped_line_to_its_callback() -> None:
    dropped: list[tuple[bytes, int, int]] = []
    framer = LineFramer(100, on_oversized=lambda head, size, limit: dropped.append((head, size, limit)))
    line = b'{"jsonrpc":"2.0","id":7,"result":"' + b"x" * 10_000 + b'"}'
    for start in range(0, len(line), 33):  # across many chunks
        framer.feed(line[start : start + 33])
    framer.feed(b'\n{"ok":1}\n' + line + b"\n")  # and one within a chunk
    assert list(framer.frames) == [b'{"ok":1}']
    assert [(size, limit) for _, size, limit in dropped] == [(len(line), 100), (len(line), 100)]
    across, within = (head for head, _, _ in dropped)
    # Across chunks the framer keeps what it had when the line went over the limit (at most
    # OVERSIZED_HEAD_BYTES); within one chunk, the first OVERSIZED_HEAD_BYTES.
    assert line.startswith(across) and 100 < len(across) <= OVERSIZED_HEAD_BYTES
    assert within == line[:OVERSIZED_HEAD_BYTES]


# -- reading the head ------------------------------------------------------------------------------


def test_head_fields_reads_top_level_members_only() -> None:
    assert _head_fields(b'{"jsonrpc":"2.0","id":5,"result":{"id":9,"x":"xxx') == {
        "jsonrpc": "2.0", "id": 5, "result": _UNREAD,
    }
    assert _head_fields(b'{"params":{"id":3},"method":"session/update","id":"r1"}') == {
        "params": {"id": 3}, "method": "session/update", "id": "r1",
    }
    assert _head_fields(b'{"result":"' + b"y" * 100) == {"result": _UNREAD}
    assert _head_fields(b'{"id":' + b"[" * 5000) == {"id": _UNREAD}
    assert _head_fields(b"[1,2,3") == {}
    assert _head_fields(b"\xff\xfe garbage") == {}
    assert _head_fields(b'  { "id" : 1 , "error" : {"code": 1') == {"id": 1, "error": _UNREAD}


# -- the connection ----------------------------------------------------------------------------------


class DroppingTransport(MemoryTransport):
    """A memory transport that can pretend its framer dropped a line (as AgentProcess does)."""

    handler: Any = None

    def set_oversized_handler(self, handler: Any) -> None:
        self.handler = handler


def dropping_pair() -> tuple[DroppingTransport, MemoryTransport]:
    client, agent = memory_pair()
    client.__class__ = DroppingTransport
    assert isinstance(client, DroppingTransport)
    return client, agent


async def _until_sent(agent: MemoryTransport, count: int) -> list[dict[str, Any]]:
    got = []
    for _ in range(count):
        frame = await agent.receive()
        assert frame is not None
        got.append(json.loads(frame))
    return got


@pytest.mark.anyio
async def test_a_dropped_answer_fails_its_request_and_only_it() -> None:
    client, agent = dropping_pair()
    async with Connection(client) as conn:
        results: dict[str, Any] = {}
        async with anyio.create_task_group() as tg:

            async def ask(name: str) -> None:
                try:
                    results[name] = await conn.request(name)
                except RpcError as exc:
                    results[name] = exc

            tg.start_soon(ask, "first")
            tg.start_soon(ask, "second")
            sent = await _until_sent(agent, 2)
            ids = {m["method"]: m["id"] for m in sent}
            client.handler(b'{"jsonrpc":"2.0","id":%d,"result":{"text":"xxxx' % ids["first"], 99_999_999, 67_108_864)
            await agent.send(json.dumps({"jsonrpc": "2.0", "id": ids["second"], "result": "fine"}).encode())
    failure = results["first"]
    assert isinstance(failure, AnswerTooLarge)
    assert failure.exit_code == ExitCode.AGENT_ERROR
    assert "first: the agent's answer was a 99999999-byte line, over the 67108864-byte limit" in str(failure)
    assert results["second"] == "fine"


@pytest.mark.anyio
async def test_a_dropped_answer_whose_id_cannot_be_read_fails_every_pending_request() -> None:
    client, agent = dropping_pair()
    async with Connection(client) as conn:
        failures: list[BaseException] = []
        async with anyio.create_task_group() as tg:

            async def ask(name: str) -> None:
                with pytest.raises(AnswerTooLarge) as info:
                    await conn.request(name)
                failures.append(info.value)

            tg.start_soon(ask, "one")
            tg.start_soon(ask, "two")
            await _until_sent(agent, 2)
            client.handler(b'{"jsonrpc":"2.0","result":{"text":"xxxx', 10**8, 10**6)
    assert len(failures) == 2


@pytest.mark.anyio
async def test_a_dropped_request_of_the_agent_gets_an_invalid_request_error() -> None:
    client, agent = dropping_pair()
    async with Connection(client) as conn:
        client.handler(b'{"jsonrpc":"2.0","id":"a-1","method":"fs/write_text_file","params":{"content":"xx', 10**8, 10**6)
        (reply,) = await _until_sent(agent, 1)
        assert reply["id"] == "a-1"
        assert reply["error"]["code"] == RpcError.INVALID_REQUEST
        assert "too large" in reply["error"]["message"]
        # a notification (no id before its big params) fails nothing: requests still work
        client.handler(b'{"jsonrpc":"2.0","method":"session/update","params":{"x":"xxxx', 10**8, 10**6)
        async with anyio.create_task_group() as tg:

            async def answer() -> None:
                (request,) = await _until_sent(agent, 1)
                await agent.send(json.dumps({"jsonrpc": "2.0", "id": request["id"], "result": 1}).encode())

            tg.start_soon(answer)
            assert await conn.request("still/there") == 1


# -- warnings ------------------------------------------------------------------------------------------


def test_warnings_are_sanitized_and_limited_per_kind() -> None:
    shown = io.StringIO()
    notices.reset()
    previous = notices.set_sink(notices.stderr_sink(shown))
    try:
        for _ in range(5):
            notices.warn("fuzz-kind", "bad \x1b]2;x\x07 line")
        notices.warn("other-kind", "another")
    finally:
        notices.set_sink(previous)
        notices.reset()
    lines = shown.getvalue().splitlines()
    assert lines == [
        "acpcli: warning: bad ^[]2;x^G line",
        "acpcli: warning: bad ^[]2;x^G line",
        "acpcli: warning: bad ^[]2;x^G line (further ones are only logged)",
        "acpcli: warning: another",
    ]


# -- --raw -----------------------------------------------------------------------------------------------


def test_raw_output_survives_deep_json_and_escapes_del_and_c1() -> None:
    out = io.StringIO()
    tap = StreamTap(out)
    tap.received(b"[" * 5000 + b"]" * 5000)
    tap.received('{"jsonrpc":"2.0","method":"x","params":{"t":"\x7f\x9b31m"}}'.encode())
    first, second = out.getvalue().splitlines()
    assert json.loads(first)["line"] == "[" * 5000 + "]" * 5000
    assert "\x7f" not in second and "\x9b" not in second
    assert json.loads(second)["message"]["params"]["t"] == "\x7f\x9b31m"  # exact, as JSON escapes
