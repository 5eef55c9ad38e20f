"""JSON-RPC over real agent processes: tests/peers/misbehave.py, and an agent built on the SDK."""

from __future__ import annotations

import json
import logging
import signal
import sys
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

from acpcli.errors import ConnectionClosed, RpcError
from acpcli.wire.connection import Connection, Handler, NotificationCallback
from acpcli.wire.transport import AgentProcess, memory_pair

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX process groups")

LIMIT = 30  # safety net: a broken connection fails the test instead of hanging the suite
AGENTS = Path(__file__).resolve().parents[1] / "peers"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@asynccontextmanager
async def connect(
    script: str = "misbehave.py",
    *,
    handlers: Mapping[str, Handler] | None = None,
    on_notification: NotificationCallback | None = None,
) -> AsyncIterator[Connection]:
    with anyio.fail_after(LIMIT):
        argv = [sys.executable, str(AGENTS / script)]
        async with AgentProcess.spawn(argv) as proc:
            async with Connection(proc, handlers=handlers, on_notification=on_notification) as conn:
                yield conn


class Updates:
    """An on_notification that records (method, params); async, so the reader must await it."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, Any]] = []
        self.waiting_id: Any = None
        self.waiting = anyio.Event()

    async def __call__(self, method: str, params: Any, frame_text: str | None = None) -> None:
        await anyio.lowlevel.checkpoint()  # yields: if the reader did not await us, order would break
        self.seen.append((method, params))
        if method == "test/waiting":
            self.waiting_id = params["id"]
            self.waiting.set()


# -- requests and responses -----------------------------------------------------------------------


@pytest.mark.anyio
async def test_many_concurrent_requests_answered_out_of_order() -> None:
    count = 40
    results: dict[int, Any] = {}
    async with connect() as conn:

        async def one(tag: int) -> None:
            results[tag] = await conn.request("hold", {"expect": count, "tag": tag})

        async with anyio.create_task_group() as tg:
            for tag in range(count):
                tg.start_soon(one, tag)
    # The agent answered newest first; every caller still got its own answer.
    assert results == {tag: {"tag": tag} for tag in range(count)}


@pytest.mark.anyio
async def test_an_error_answer_raises_rpc_error() -> None:
    async with connect() as conn:
        with pytest.raises(RpcError) as info:
            await conn.request("no/such/method", {})
        assert info.value.code == RpcError.METHOD_NOT_FOUND
        assert info.value.method == "no/such/method"
        assert await conn.request("echo", [1, "two"]) == [1, "two"]


@pytest.mark.anyio
async def test_notifications_are_handled_in_order_before_the_answer() -> None:
    updates = Updates()
    async with connect(on_notification=updates) as conn:
        answer = await conn.request("stream", {"count": 300})
        # Nothing may be left for the reader to deliver once the answer's waiter resumes.
        assert updates.seen == [("session/update", {"i": i}) for i in range(300)]
        assert answer == {"count": 300}


@pytest.mark.anyio
async def test_a_plain_function_can_take_notifications() -> None:
    seen: list[int] = []
    async with connect(on_notification=lambda method, params, text: seen.append(params["i"])) as conn:
        await conn.request("stream", {"count": 5})
    assert seen == [0, 1, 2, 3, 4]


@pytest.mark.anyio
async def test_a_failing_notification_consumer_does_not_stop_the_stream(caplog: pytest.LogCaptureFixture) -> None:
    seen: list[int] = []

    def consumer(method: str, params: Any, frame_text: str | None) -> None:
        seen.append(params["i"])
        if params["i"] == 1:
            raise ValueError("bad update")

    async with connect(on_notification=consumer) as conn:
        assert await conn.request("stream", {"count": 3}) == {"count": 3}
    assert seen == [0, 1, 2]
    assert "handling the notification session/update failed" in caplog.text


@pytest.mark.anyio
async def test_each_notification_comes_with_its_frame_as_received() -> None:
    # The event log stores the frame's own text (no re-encoding): it is handed over as an
    # argument with the notification it holds, not left on the connection for someone to read.
    import json

    got: list[tuple[Any, str | None]] = []

    async with connect(on_notification=lambda method, params, text: got.append((params, text))) as conn:
        assert await conn.request("stream", {"count": 3}) == {"count": 3}
    assert [params["i"] for params, _ in got] == [0, 1, 2]
    for params, text in got:
        assert text is not None and json.loads(text)["params"] == params


@pytest.mark.anyio
async def test_concurrent_sends_never_interleave() -> None:
    # Each frame goes out in two writes with a yield between them; without the send lock
    # another frame would land in the middle.
    client_end, agent_end = memory_pair()
    wire: list[bytes] = []

    class SlowWriter:
        async def send(self, frame: bytes) -> None:
            half = len(frame) // 2
            wire.append(frame[:half])
            await anyio.lowlevel.checkpoint()
            wire.append(frame[half:] + b"\n")

        receive = client_end.receive
        exit_info = client_end.exit_info
        aclose = client_end.aclose

    with anyio.fail_after(LIMIT):
        async with Connection(SlowWriter()) as conn, anyio.create_task_group() as tg:
            for i in range(20):
                tg.start_soon(conn.notify, "test/note", {"i": i, "pad": "p" * (100 * i)})
    lines = b"".join(wire).splitlines()
    assert sorted(json.loads(line)["params"]["i"] for line in lines) == list(range(20))
    await agent_end.aclose()


# -- requests from the agent ------------------------------------------------------------------------


async def ping(params: Any) -> Any:
    return {"pong": params}


@pytest.mark.anyio
@pytest.mark.parametrize("request_id", ["3f2a-uuid-like", 7], ids=["string-id", "int-id"])
async def test_agent_requests_are_answered_with_their_own_id(request_id: Any) -> None:
    async with connect(handlers={"test/ping": ping}) as conn:
        answer = await conn.request("ask", {"id": request_id, "method": "test/ping", "params": {"n": 1}})
    assert answer == {"response": {"jsonrpc": "2.0", "id": request_id, "result": {"pong": {"n": 1}}}}


@pytest.mark.anyio
async def test_an_unknown_agent_request_gets_method_not_found() -> None:
    async with connect(handlers={"test/ping": ping}) as conn:
        answer = await conn.request("ask", {"id": 1, "method": "fs/teleport", "params": {}})
    error = answer["response"]["error"]
    assert error["code"] == -32601
    assert "fs/teleport" in error["message"]


async def refuses(params: Any) -> Any:
    raise RpcError(RpcError.RESOURCE_NOT_FOUND, "no such file", {"path": params["path"]})


async def crashes(params: Any) -> Any:
    raise ValueError("the handler tripped")


@pytest.mark.anyio
async def test_handler_errors_are_mapped(caplog: pytest.LogCaptureFixture) -> None:
    handlers = {"fs/read_text_file": refuses, "test/crash": crashes}
    async with connect(handlers=handlers) as conn:
        refused = await conn.request("ask", {"id": "a", "method": "fs/read_text_file", "params": {"path": "/x"}})
        crashed = await conn.request("ask", {"id": "b", "method": "test/crash", "params": None})
    assert refused["response"]["error"] == {"code": -32002, "message": "no such file", "data": {"path": "/x"}}
    assert crashed["response"]["error"]["code"] == -32603
    assert "the handler tripped" in crashed["response"]["error"]["message"]
    assert "the handler for test/crash failed" in caplog.text


@pytest.mark.anyio
async def test_an_agent_request_does_not_block_the_stream() -> None:
    # The handler waits for a notification that arrives after its request: it can only
    # get it if the reader goes on while the handler runs.
    updates = Updates()
    got_update = anyio.Event()

    def on_notification(method: str, params: Any, frame_text: str | None = None) -> None:
        updates.seen.append((method, params))
        got_update.set()

    handler_started = anyio.Event()

    async def waits_for_the_stream(params: Any) -> Any:
        handler_started.set()
        await got_update.wait()
        return "saw it"

    async with connect(handlers={"test/wait": waits_for_the_stream}, on_notification=on_notification) as conn:
        async with anyio.create_task_group() as tg:
            answers: list[Any] = []

            async def ask() -> None:
                answers.append(await conn.request("ask", {"id": 5, "method": "test/wait"}))

            tg.start_soon(ask)
            await handler_started.wait()
            await conn.request("stream", {"count": 1})
    assert answers[0]["response"]["result"] == "saw it"


@pytest.mark.anyio
async def test_the_agent_can_cancel_its_request() -> None:
    started = anyio.Event()
    cancelled = anyio.Event()
    conn_box: list[Connection] = []

    async def slow(params: Any) -> Any:
        started.set()
        try:
            # Ask the agent to cancel this very request, then wait for ever.
            await conn_box[0].notify("test/cancel_your_request", {"id": params["myId"]})
            await anyio.sleep_forever()
        finally:
            cancelled.set()

    async with connect(handlers={"test/slow": slow}) as conn:
        conn_box.append(conn)
        answer = await conn.request("ask", {"id": "req-9", "method": "test/slow", "params": {"myId": "req-9"}})
        assert started.is_set() and cancelled.is_set()
    assert answer["response"]["id"] == "req-9"
    assert answer["response"]["error"]["code"] == -32800


@pytest.mark.anyio
async def test_we_can_cancel_our_request_explicitly() -> None:
    updates = Updates()
    async with connect(on_notification=updates) as conn:
        async with anyio.create_task_group() as tg:
            outcome: list[RpcError] = []

            async def held() -> None:
                try:
                    await conn.request("cancel_me")
                except RpcError as exc:
                    outcome.append(exc)

            tg.start_soon(held)
            await updates.waiting.wait()
            await conn.cancel_request(updates.waiting_id)
        assert [exc.code for exc in outcome] == [-32800]
        assert await conn.request("cancels_seen") == [updates.waiting_id]


@pytest.mark.anyio
async def test_a_cancelled_caller_sends_cancel_request() -> None:
    updates = Updates()
    async with connect(on_notification=updates) as conn:
        async with anyio.create_task_group() as tg:

            async def held() -> None:
                await conn.request("cancel_me")

            tg.start_soon(held)
            await updates.waiting.wait()
            tg.cancel_scope.cancel()
        # The agent got $/cancel_request, and its -32800 answer to the abandoned id is dropped.
        assert await conn.request("cancels_seen") == [updates.waiting_id]
        assert await conn.request("echo", "still fine") == "still fine"


# -- batches -----------------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_a_batch_of_agent_requests_is_answered_with_a_batch() -> None:
    requests = [
        {"id": "s-1", "method": "test/ping", "params": 1},
        {"id": 2, "method": "nope"},
        {"id": 3, "method": "test/ping", "params": 3},
    ]
    async with connect(handlers={"test/ping": ping}) as conn:
        answer = await conn.request("ask_batch", {"requests": requests})
    batch = answer["batch"]
    assert isinstance(batch, list)
    assert batch[0] == {"jsonrpc": "2.0", "id": "s-1", "result": {"pong": 1}}
    assert batch[1]["id"] == 2 and batch[1]["error"]["code"] == -32601
    assert batch[2] == {"jsonrpc": "2.0", "id": 3, "result": {"pong": 3}}


@pytest.mark.anyio
async def test_a_batch_of_notifications_and_a_response_is_taken_in_order() -> None:
    updates = Updates()
    async with connect(on_notification=updates) as conn:
        assert await conn.request("batch_mixed") == "batched"
        assert updates.seen == [("session/update", {"i": 0}), ("session/update", {"i": 1})]


# -- bad input ----------------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_garbage_is_survived_and_not_flooded_into_the_log(caplog: pytest.LogCaptureFixture) -> None:
    updates = Updates()
    with caplog.at_level(logging.DEBUG, logger="acpcli.wire.connection"):
        async with connect(on_notification=updates) as conn:
            assert await conn.request("garbage", {"times": 4}) == "still here"
            assert await conn.request("echo", "ok") == "ok"
    records = [r for r in caplog.records if r.name == "acpcli.wire.connection" and "bad line" in r.getMessage()]
    warnings = [r for r in records if r.levelno == logging.WARNING]
    # Per round: not JSON, cut-off JSON, invalid UTF-8 (twice), a bare number, a numeric
    # method, an object as a request id = 7 bad lines.
    assert len(records) == 28
    assert len(warnings) == 10
    assert "further bad lines are logged at debug level" in warnings[-1].getMessage()
    assert "#28" in records[-1].getMessage()
    assert any("unknown request id 987654" in r.getMessage() for r in caplog.records)
    assert any("unknown request id [1]" in r.getMessage() for r in caplog.records)
    # The line with invalid UTF-8 inside a string was dropped, not half-decoded.
    assert updates.seen == []


# -- the agent going away --------------------------------------------------------------------------


@pytest.mark.anyio
async def test_agent_death_fails_every_pending_request_with_its_story() -> None:
    failures: list[ConnectionClosed] = []
    async with connect() as conn:

        async def pending(method: str, params: Any) -> None:
            with pytest.raises(ConnectionClosed) as info:
                await conn.request(method, params)
            failures.append(info.value)

        async with anyio.create_task_group() as tg:
            tg.start_soon(pending, "hold", {"expect": 99})
            tg.start_soon(pending, "cancel_me", None)
            await anyio.wait_all_tasks_blocked()
            tg.start_soon(pending, "die", {"code": 3, "stderr": ["Traceback: boom", "fatal: out of cheese"]})
        assert conn.closed
        # Later calls fail at once, the same way.
        with pytest.raises(ConnectionClosed) as later:
            await conn.request("session/prompt", {})
        with pytest.raises(ConnectionClosed):
            await conn.notify("session/cancel", {})
    assert sorted(str(f).split("\n")[0] for f in failures) == [
        "the agent exited with status 3 before answering cancel_me; its last stderr lines:",
        "the agent exited with status 3 before answering die; its last stderr lines:",
        "the agent exited with status 3 before answering hold; its last stderr lines:",
    ]
    for failure in [*failures, later.value]:
        assert failure.returncode == 3
        assert failure.stderr_tail == ["Traceback: boom", "fatal: out of cheese"]
        assert str(failure).endswith("\n  Traceback: boom\n  fatal: out of cheese")
    assert str(later.value).startswith("the agent exited with status 3 before answering session/prompt")


@pytest.mark.anyio
async def test_an_agent_killed_by_a_signal_is_described() -> None:
    async with connect() as conn:
        with pytest.raises(ConnectionClosed) as info:
            await conn.request("die", {"signal": int(signal.SIGKILL)})
    assert str(info.value) == "the agent was killed by SIGKILL before answering die (it wrote nothing to stderr)"


@pytest.mark.anyio
async def test_leaving_the_block_fails_pending_requests_and_stops_the_agent() -> None:
    failures: list[ConnectionClosed] = []
    with anyio.fail_after(LIMIT):
        argv = [sys.executable, str(AGENTS / "misbehave.py")]
        async with anyio.create_task_group() as tg, AgentProcess.spawn(argv) as proc:
            async with Connection(proc) as conn:

                async def pending() -> None:
                    try:
                        await conn.request("hold", {"expect": 2})
                    except ConnectionClosed as exc:
                        failures.append(exc)

                tg.start_soon(pending)
                await conn.request("echo")  # the hold is in, and the agent set up
            # Connection.__aexit__ closed the transport: the agent saw stdin close and exited.
            assert proc.returncode == 0
    assert [str(f) for f in failures] == ["the connection to the agent was closed before answering hold"]


@pytest.mark.anyio
async def test_an_exception_in_the_block_comes_out_unwrapped() -> None:
    with pytest.raises(KeyError, match="mine"):
        async with connect() as conn:
            await conn.request("echo")
            raise KeyError("mine")


# -- the official SDK as the peer -----------------------------------------------------------------


@pytest.mark.anyio
async def test_an_agent_built_on_the_official_sdk(tmp_path: Path) -> None:
    updates = Updates()
    asked: list[Any] = []

    async def request_permission(params: Any) -> Any:
        asked.append(params)
        return {"outcome": {"outcome": "selected", "optionId": "allow"}}

    handlers = {"session/request_permission": request_permission}
    async with connect("sdk_echo_agent.py", handlers=handlers, on_notification=updates) as conn:
        init = await conn.request(
            "initialize",
            {"protocolVersion": 1, "clientCapabilities": {"fs": {"readTextFile": False, "writeTextFile": False}}},
        )
        assert init["protocolVersion"] == 1
        assert init["agentInfo"]["name"] == "sdk-echo"
        session_id = (await conn.request("session/new", {"cwd": str(tmp_path), "mcpServers": []}))["sessionId"]

        prompt = {"sessionId": session_id, "prompt": [{"type": "text", "text": "hello"}]}
        assert await conn.request("session/prompt", prompt) == {"stopReason": "end_turn"}
        seen = [(p["sessionId"], p["update"]["sessionUpdate"], p["update"]["content"]["text"]) for _, p in updates.seen]
        assert seen == [
            (session_id, "agent_thought_chunk", "thinking about it"),
            (session_id, "agent_message_chunk", "you said: "),
            (session_id, "agent_message_chunk", "hello"),
        ]

        updates.seen.clear()
        prompt = {"sessionId": session_id, "prompt": [{"type": "text", "text": "permission please"}]}
        assert await conn.request("session/prompt", prompt) == {"stopReason": "end_turn"}
        assert updates.seen[-1][1]["update"]["content"]["text"] == " [permission: allow]"
        assert asked[0]["toolCall"]["toolCallId"] == "call-1"
        assert [o["optionId"] for o in asked[0]["options"]] == ["allow", "deny"]


# -- in memory, both ends ours ----------------------------------------------------------------------


@pytest.mark.anyio
async def test_memory_pair_round_trip_both_ways() -> None:
    client_end, agent_end = memory_pair()
    seen_by_client: list[Any] = []
    agent_box: list[Connection] = []

    async def prompt(params: Any) -> Any:
        agent = agent_box[0]
        await agent.notify("session/update", {"text": "hi"})
        verdict = await agent.request("session/request_permission", {"q": params["q"]})
        return {"stopReason": "end_turn", "verdict": verdict}

    async def permission(params: Any) -> Any:
        return {"allowed": params["q"] == "may I?"}

    with anyio.fail_after(LIMIT):
        async with Connection(agent_end, handlers={"session/prompt": prompt}) as agent:
            agent_box.append(agent)
            async with Connection(
                client_end,
                handlers={"session/request_permission": permission},
                on_notification=lambda method, params, text: seen_by_client.append((method, params)),
            ) as client:
                answer = await client.request("session/prompt", {"q": "may I?"})
            # The client end closed: the agent side sees its peer gone.
            with pytest.raises(ConnectionClosed, match="closed its output"):
                await agent.request("anything")
    assert answer == {"stopReason": "end_turn", "verdict": {"allowed": True}}
    assert seen_by_client == [("session/update", {"text": "hi"})]


@pytest.mark.anyio
async def test_a_result_that_is_not_json_becomes_an_internal_error(caplog: pytest.LogCaptureFixture) -> None:
    client_end, agent_end = memory_pair()

    async def odd(params: Any) -> Any:
        return {"when": object()}

    with anyio.fail_after(LIMIT):
        async with Connection(agent_end, handlers={"odd": odd}), Connection(client_end) as client:
            with pytest.raises(RpcError) as info:
                await client.request("odd")
    assert info.value.code == RpcError.INTERNAL_ERROR
    assert "not JSON" in caplog.text


@pytest.mark.parametrize(
    "text",
    [
        '{"jsonrpc":"2.0","method":"session/update","params":{"update":{"text":"\\u00e9\\ud800"}}}',
        ' {"a":1}',
        '{"a":1} ',
        '{"a":1}\r',
        '{"a":1}x',
        '{"a":1}{"b":2}',
        "",
        "   ",
        "x",
        '{"a": }',
        '{"a":1',
        "[1,2]",
        '"s"',
        "1 2",
        "Infinity",
        "[" * 50 + "]" * 50,
    ],
)
def test_frame_decode_is_json_loads(text: str) -> None:
    # the reader's fast decode: the same value, or the same error, as json.loads
    from acpcli.wire.connection import _decode

    try:
        expected: Any = json.loads(text)
    except ValueError as err:
        with pytest.raises(type(err)) as raised:
            _decode(text)
        assert str(raised.value) == str(err)
    else:
        assert _decode(text) == expected
