"""The REPL's link to a host (:class:`acpcli.session.hosted.HostedLink`), in-process over a fake
channel: what another terminal's turn sends is held until it is drawn, and drawn before a
turn of this terminal's that waits behind it, in the order the host sent it."""

from __future__ import annotations

import json
from typing import Any

import anyio

from acpcli.model import AGENT, USER, Message, Store
from acpcli.session.hosted import HostedLink
from acpcli.session.hostwire.channel import Ready


class FakeChannel:
    """What the host says, fed by the test; what the link sends, kept."""

    def __init__(self) -> None:
        self.to_link, self.inbox = anyio.create_memory_object_stream[dict[str, Any]](100)
        self.sent: list[dict[str, Any]] = []

    async def receive(self) -> dict[str, Any]:
        return await self.inbox.receive()

    async def send(self, message: dict[str, Any]) -> None:
        self.sent.append(message)

    def pending(self) -> bool:
        """(the link's watch asks whether something is waiting to be read)"""
        return bool(self.inbox.statistics().current_buffer_used)

    async def aclose(self) -> None:
        self.close()

    def close(self) -> None:
        self.to_link.close()
        self.inbox.close()


def _update(kind: str, text: str) -> dict[str, Any]:
    payload = {"sessionUpdate": kind, "content": {"type": "text", "text": text}}
    return {"t": "u", "k": kind, "p": json.dumps(payload)}


def _link(channel: FakeChannel) -> tuple[HostedLink, list[str | None]]:
    ready = Ready("s-1", 1, "demo", None, 0, False, {})

    async def decide(live: Any, params: dict[str, Any]) -> None:
        return None

    link = HostedLink(channel, ready, Store(), decide=decide, say=lambda line: None)  # type: ignore[arg-type]
    begun: list[str | None] = []
    link.on_other_turn = begun.append
    return link, begun


def _said(link: HostedLink) -> list[tuple[str, str]]:
    return [(e.kind, e.text) for e in link.live.store.entries if isinstance(e, Message)]


def test_another_terminals_turn_is_held_until_drawn_then_drawn_in_order() -> None:
    async def main() -> None:
        channel = FakeChannel()
        link, begun = _link(channel)
        async with anyio.create_task_group() as tg:
            tg.start_soon(link.serve)
            for message in (
                {"t": "other-turn", "text": "theirs"},
                _update("user_message_chunk", "theirs"),
                _update("agent_message_chunk", "their answer"),
                {"t": "other-end", "stop": "end_turn"},
                {"t": "other-turn", "text": "a second one"},
                _update("user_message_chunk", "a second one"),
            ):
                await channel.to_link.send(message)
            await anyio.wait_all_tasks_blocked()
            assert begun == ["theirs"]
            assert _said(link) == []  # nothing drawn while the REPL has not taken the turn
            stop = await link.watch(notice=lambda line: None)
            assert stop == "end_turn"
            assert _said(link) == [(USER, "theirs"), (AGENT, "their answer")]
            assert link.other is not None and link.other.text == "a second one"  # held, for the next watch
            await channel.to_link.send({"t": "other-end", "stop": "cancelled"})
            assert await link.watch(notice=lambda line: None) == "cancelled"
            assert _said(link)[-1] == (USER, "a second one") and link.other is None
            tg.cancel_scope.cancel()
        channel.close()

    anyio.run(main)


def test_a_turn_held_as_this_terminal_sends_its_prompt_is_drawn_before_that_prompts_turn() -> None:
    async def main() -> None:
        channel = FakeChannel()
        link, begun = _link(channel)
        async with anyio.create_task_group() as tg:
            tg.start_soon(link.serve)
            await channel.to_link.send({"t": "other-turn", "text": "theirs"})
            await channel.to_link.send(_update("user_message_chunk", "theirs"))
            await anyio.wait_all_tasks_blocked()
            assert _said(link) == []  # held: the REPL has not drawn it yet

            async def mine() -> None:
                assert await link.turn("mine", notice=lambda line: None) == "end_turn"

            tg.start_soon(mine)
            await anyio.wait_all_tasks_blocked()
            assert _said(link) == [(USER, "theirs")]  # drawn in this turn's place, before it
            assert begun == ["theirs", "theirs"]  # (the second time: its header, drawn there)
            for message in (
                _update("agent_message_chunk", "their answer"),
                {"t": "other-end", "stop": "end_turn"},
                {"t": "start"},
                _update("user_message_chunk", "mine"),
                _update("agent_message_chunk", "my answer"),
                {"t": "end", "stop": "end_turn"},
            ):
                await channel.to_link.send(message)
            await anyio.wait_all_tasks_blocked()
            assert _said(link) == [(USER, "theirs"), (AGENT, "their answer"), (USER, "mine"), (AGENT, "my answer")]
            assert [m["t"] for m in channel.sent] == ["prompt"]
            tg.cancel_scope.cancel()
        channel.close()

    anyio.run(main)
