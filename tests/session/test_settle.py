"""``AgentLink.settle``: after a load/resume answer, wait while the replay is still arriving.

gemini answers ``session/load`` first and replays afterwards; codex and claude replay first.
settle must return soon after the stream goes quiet (no fixed pause), wait up to ``first``
seconds for a replay that has not started yet, and never longer than ``limit``.
Times here are generous bounds, not exact measurements (the machine may be busy).
"""

from __future__ import annotations

import socket
import time

import anyio
import anyio.lowlevel
import pytest

from acpcli.model import Store
from acpcli.session.feed import SessionFeed
from acpcli.session.link import AgentLink, Dispatcher
from acpcli.wire.negotiate import AgentFeatures


class _Conn:
    closed = False


def _setup(agent: str = "codex-acp") -> tuple[AgentLink, SessionFeed]:
    features = AgentFeatures(protocol_version=1, reading="v1", agent_name=agent)
    link = AgentLink(_Conn(), features, Dispatcher(), store_factory=Store)  # type: ignore[arg-type]  # a stand-in connection
    return link, SessionFeed(session_id="s", store=Store())


def _chunk(text: str) -> dict[str, object]:
    return {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}}


async def _feed_later(live: SessionFeed, delays: list[float]) -> None:
    for n, delay in enumerate(delays):
        await anyio.sleep(delay)
        live.feed(_chunk(f"part{n} "))


@pytest.mark.anyio
async def test_settle_waits_for_a_replay_that_starts_after_the_answer() -> None:
    link, live = _setup()
    async with anyio.create_task_group() as tg:
        tg.start_soon(_feed_later, live, [0.4, 0.05, 0.05, 0.05])  # starts 0.4 s late (< first)
        await link.settle(live, quiet=0.15, first=1.0)
        assert live.updates_seen == 4  # the whole late replay, not a part of it


@pytest.mark.anyio
async def test_settle_returns_soon_after_a_replay_that_came_first() -> None:
    link, live = _setup()
    live.feed(_chunk("replayed before the answer"))
    started = time.monotonic()
    await link.settle(live, quiet=0.1, first=5.0)
    assert time.monotonic() - started < 2.0  # one quiet period, not the 5 s allowed for a first update


@pytest.mark.anyio
async def test_settle_gives_up_on_a_replay_that_never_comes() -> None:
    link, live = _setup()
    started = time.monotonic()
    await link.settle(live, quiet=0.1, first=0.3)
    elapsed = time.monotonic() - started
    assert 0.25 <= elapsed < 3.0


@pytest.mark.anyio
async def test_settle_stops_at_its_limit_while_updates_keep_coming() -> None:
    link, live = _setup()
    started = time.monotonic()
    async with anyio.create_task_group() as tg:
        tg.start_soon(_feed_later, live, [0.05] * 100)  # a 5 s stream
        await link.settle(live, quiet=0.2, first=1.0, limit=0.6)
        elapsed = time.monotonic() - started
        tg.cancel_scope.cancel()
    assert 0.5 <= elapsed < 3.0
    assert 0 < live.updates_seen < 100


def _record_sleeps(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """Every ``anyio.sleep`` settle asks for (still slept), to tell a pause from a yield."""
    import acpcli.session.link as link_module

    asked: list[float] = []
    real_sleep = anyio.sleep

    async def sleep(delay: float) -> None:
        asked.append(delay)
        await real_sleep(delay)

    monkeypatch.setattr(link_module.anyio, "sleep", sleep)
    return asked


@pytest.mark.anyio
async def test_settle_does_not_pause_after_a_replay_that_came_before_the_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    # the spec's order (codex, claude, the demo agent): the transcript is there at the answer
    link, live = _setup()
    live.feed(_chunk("replayed before the answer"))
    asked = _record_sleeps(monkeypatch)
    await link.settle(live, quiet=5.0, first=5.0)
    assert asked == []  # event-loop turns only (checkpoints), no timed pause


async def _feed_at_yields(live: SessionFeed, texts: list[str]) -> None:
    for text in texts:
        await anyio.lowlevel.checkpoint()
        live.feed(_chunk(text))


@pytest.mark.anyio
async def test_settle_waits_when_updates_keep_coming_after_a_replay_that_came_first() -> None:
    # part of the replay before the answer, the rest arriving while settle drains: keep it all
    link, live = _setup()
    live.feed(_chunk("before the answer "))
    async with anyio.create_task_group() as tg:
        tg.start_soon(_feed_at_yields, live, ["after "] * 3)
        tg.start_soon(_feed_later, live, [0.05, 0.05, 0.05])
        await link.settle(live, quiet=0.3, first=5.0)
        settled = live.updates_seen  # checked when settle returns, not when the feeders end
    assert settled == 7


@pytest.mark.anyio
async def test_settle_waits_for_a_late_replay_after_only_session_level_updates() -> None:
    # a session-level update before the answer is no transcript: the replay may still follow
    # (an agent that announces its commands, answers, then replays)
    link, live = _setup()
    live.feed({"sessionUpdate": "available_commands_update", "availableCommands": []})
    async with anyio.create_task_group() as tg:
        tg.start_soon(_feed_later, live, [0.3, 0.05, 0.05])  # starts later than one quiet period
        await link.settle(live, quiet=0.1, first=2.0)
        settled = live.updates_seen  # checked when settle returns, not when the feeder ends
    assert settled == 4
    assert "".join(m.text for m in live.store.entries) == "part0 part1 part2 "  # type: ignore[union-attr]


@pytest.mark.anyio
async def test_settle_waits_for_geminis_replay_that_began_before_the_answer() -> None:
    # gemini (observed, 0.61.0): its <session_context> message comes before the answer, the rest
    # of the replay after it, later than a few event-loop turns
    link, live = _setup("gemini-cli")
    live.feed(_chunk("<session_context>…</session_context> "))
    async with anyio.create_task_group() as tg:
        tg.start_soon(_feed_later, live, [0.05, 0.02, 0.02])
        await link.settle(live, quiet=0.3, first=5.0)
        settled = live.updates_seen  # what the load shows: the replay must be whole by now
    assert settled == 4


@pytest.mark.anyio
async def test_a_quiet_that_was_acpcli_not_running_does_not_end_the_replay() -> None:
    # A busy machine keeps acpcli from running while the agent writes on: when acpcli runs
    # again, its timer is overdue and the replay's next frames are in the pipe, not yet read.
    # settle must let the reader take them before it calls the replay over.
    link, live = _setup()
    agent_end, reader_end = socket.socketpair()
    agent_end.setblocking(False)

    # Two hops, as in acpcli: a task reads the pipe and queues the frames (the transport),
    # another takes them and feeds the session (the connection's reader).
    send, receive = anyio.create_memory_object_stream[bytes](100)

    async def transport() -> None:
        async with send:
            while True:
                await anyio.wait_readable(reader_end)
                data = reader_end.recv(65536)
                if not data:
                    return
                for frame in data.split(b"\n")[:-1]:
                    await send.send(frame)

    async def connection_reader() -> None:
        async with receive:
            async for _ in receive:
                live.feed(_chunk("part "))

    reader_end.setblocking(False)
    async with anyio.create_task_group() as tg:
        tg.start_soon(transport)
        tg.start_soon(connection_reader)

        async def agent() -> None:
            agent_end.send(b"x\n")  # the replay has begun
            await anyio.sleep(0.05)
            agent_end.send(b"x\n" * 5)  # more of it, written while acpcli is not running:
            time.sleep(0.3)  # (this blocks the event loop: acpcli descheduled for 0.3 s)
            await anyio.sleep(0.5)
            agent_end.close()

        tg.start_soon(agent)
        await link.settle(live, quiet=0.1, first=2.0)
        settled = live.updates_seen
    reader_end.close()
    assert settled == 6  # the frames that waited in the pipe are part of the replay
