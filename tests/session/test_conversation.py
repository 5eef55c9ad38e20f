"""The session layer's :class:`~acpcli.session.conversation.Conversation`: a live session with
its link, index and writer as one object, and what a conversation does (a turn and its
bookkeeping, a setting, a cancel, a close, a fork refused, a login), driven over an in-memory
transport pair (no subprocess) against a v1 agent written as a few JSON-RPC handlers on the
project's own connection, so each test says exactly what the agent sends."""

from __future__ import annotations

import io
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from acpcli.env import Environment
from acpcli.errors import CapabilityMissing
from acpcli.history.guarded import open_index
from acpcli.history.records import SETTING, rebuild
from acpcli.protocol.settings import Choice
from acpcli.session.agent import AgentChoice
from acpcli.session.attach import attach, fork_recorded
from acpcli.session.context import Invocation
from acpcli.session.conversation import Conversation
from acpcli.session.feed import SessionFeed
from acpcli.session.inputs import session_inputs
from acpcli.session.link import open_link
from acpcli.wire.connection import Connection
from acpcli.wire.negotiate import AgentFeatures
from acpcli.wire.transport import memory_pair

LIMIT = 30  # a broken turn fails the test instead of hanging the suite
SID = "conv-1"
MODES = {"currentModeId": "ask", "availableModes": [{"id": "ask", "name": "Ask"}, {"id": "code", "name": "Code"}]}


class Agent:
    """A v1 agent on the agent end of a memory pair that can close sessions (not fork them):
    ``session/prompt`` answers with one message chunk, or waits for ``session/cancel`` when
    the prompt says ``wait``. ``calls`` records every method the client sent."""

    def __init__(self) -> None:
        self.conn: Connection | None = None
        self.calls: list[tuple[str, Any]] = []
        self.cancelled = anyio.Event()

    async def serve(self, end: Any) -> None:
        def recorded(method: str, answer: Callable[[Any], Awaitable[Any]]) -> Callable[[Any], Awaitable[Any]]:
            async def handle(params: Any) -> Any:
                self.calls.append((method, params))
                return await answer(params)

            return handle

        async def initialize(params: Any) -> Any:
            return {
                "protocolVersion": 1,
                "agentCapabilities": {"loadSession": False, "sessionCapabilities": {"close": {}}},
                "agentInfo": {"name": "conversation-agent", "version": "1.0"},
                "authMethods": [{"id": "token", "name": "Token"}],
            }

        async def new(params: Any) -> Any:
            return {"sessionId": SID, "modes": MODES}

        async def prompt(params: Any) -> Any:
            said = params["prompt"][0]["text"]
            if said == "wait":
                await self.cancelled.wait()
                return {"stopReason": "cancelled"}
            assert self.conn is not None
            await self.conn.notify(
                "session/update",
                {"sessionId": SID, "update": {"sessionUpdate": "agent_message_chunk", "content": text(f"echo: {said}")}},
            )
            return {"stopReason": "end_turn"}

        async def empty(params: Any) -> Any:
            return {}

        def notified(method: str, params: Any, frame_text: str | None = None) -> None:
            self.calls.append((method, params))
            if method == "session/cancel":
                self.cancelled.set()

        handlers = {
            "initialize": initialize,
            "session/new": recorded("session/new", new),
            "session/prompt": recorded("session/prompt", prompt),
            "session/set_mode": recorded("session/set_mode", empty),
            "session/close": recorded("session/close", empty),
            "authenticate": recorded("authenticate", empty),
        }
        async with Connection(end, handlers=handlers, on_notification=notified) as conn:
            self.conn = conn
            await anyio.sleep_forever()

    def methods(self) -> list[str]:
        return [method for method, _ in self.calls]


def quiet_run() -> Invocation:
    """A command run with nobody at a terminal and streams of its own."""
    return Invocation(env=Environment(stdin=io.StringIO(), stdout=io.StringIO(), stderr=io.StringIO()))


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def converse(agent: Agent, cwd: Path, body: Callable[[Conversation], Awaitable[Any]]) -> Any:
    """Link ``agent`` over a memory pair, set a new session up and record it (as ``acpcli new``
    does), then run ``body`` on the conversation; its result."""
    result: list[Any] = []

    async def main() -> None:
        client_end, agent_end = memory_pair()
        inputs = session_inputs(
            agent=None, cmd=None, cwd=cwd, add_dir=None, mcp_config=None, mcp=None, protocol="1", log_file=None,
            default_agent=AgentChoice("cmd", []),
        )
        index = open_index()
        writer = index.writer()
        try:
            with anyio.fail_after(LIMIT):
                async with anyio.create_task_group() as tg:
                    tg.start_soon(agent.serve, agent_end)
                    async with open_link([], choice="1", transport=client_end) as link:
                        live = await attach(link, "new", inputs, quiet_run(), index, writer, None, None)
                        if live.lock is not None:
                            live.lock.release()  # between turns nobody writes: each turn takes it again
                        result.append(await body(Conversation(link, live, index, writer, "conversation-agent")))
                    tg.cancel_scope.cancel()
        finally:
            writer.close()
            index.close()

    try:
        anyio.run(main)
    except Exception as err:  # this harness's own task group wraps what the body raised
        inner = getattr(err, "exceptions", None)
        if inner and len(inner) == 1:
            raise inner[0] from None
        raise
    return result[0]


def agent_text(live: SessionFeed) -> str:
    return "".join(getattr(entry, "text", "") for entry in live.store.entries if getattr(entry, "kind", "") == "agent")


def test_a_turn_and_its_bookkeeping_reach_the_store_the_event_log_and_the_title(tmp_path: Path) -> None:
    agent = Agent()

    async def body(conversation: Conversation) -> tuple[str, str, str | None]:
        blocks = [text("hello there")]
        stop = await conversation.turn("hello there", blocks, notice=lambda line: None, interrupts=False)
        conversation.flush()
        conversation.after_turn()
        stored = rebuild(conversation.index, conversation.session_id)
        record = conversation.index.get(conversation.session_id)
        said = "".join(getattr(e, "text", "") for e in stored.entries if getattr(e, "kind", "") == "agent")
        return stop, said, record.shown_title

    stop, said, title = converse(agent, tmp_path, body)
    assert stop == "end_turn"
    assert said == "echo: hello there"  # on disk, not only in memory
    assert title == "hello there"  # the first prompt titles the session
    assert agent.methods() == ["session/new", "session/prompt"]


def test_a_setting_is_sent_and_recorded(tmp_path: Path) -> None:
    agent = Agent()

    async def body(conversation: Conversation) -> tuple[Choice, Choice, list[str]]:
        before = conversation.find_setting("mode")
        after = await conversation.set("mode", "code")
        # The change is recorded in the session's event log, as `show` reads it.
        kinds = [kind for _seq, kind, _payload in conversation.index.events_raw(conversation.session_id)]
        return before, after, kinds

    before, after, kinds = converse(agent, tmp_path, body)
    assert (before.current, after.current) == ("Ask", "Code")  # shown by name
    assert ("session/set_mode", {"sessionId": SID, "modeId": "code"}) in agent.calls
    assert SETTING in kinds


def test_cancel_ends_the_running_turn_as_cancelled(tmp_path: Path) -> None:
    agent = Agent()

    async def body(conversation: Conversation) -> str:
        stops: list[str] = []
        async with anyio.create_task_group() as tg:

            async def turn() -> None:
                stops.append(await conversation.turn("wait", [text("wait")], notice=lambda line: None, interrupts=False))

            tg.start_soon(turn)
            while not conversation.live.prompting:
                await anyio.sleep(0.01)
            await conversation.cancel()
        return stops[0]

    assert converse(agent, tmp_path, body) == "cancelled"
    assert "session/cancel" in agent.methods()


def test_close_tells_the_agent_and_marks_the_session_closed(tmp_path: Path) -> None:
    agent = Agent()

    async def body(conversation: Conversation) -> tuple[Any, str]:
        answer = await conversation.close()
        return answer, conversation.index.get(conversation.session_id).state

    answer, state = converse(agent, tmp_path, body)
    assert answer == {}
    assert state == "closed"
    assert agent.methods()[-1] == "session/close"


def test_a_fork_the_agent_cannot_do_is_refused_before_anything_is_sent(tmp_path: Path) -> None:
    agent = Agent()

    async def body(conversation: Conversation) -> None:
        await fork_recorded(conversation, quiet_run())

    with pytest.raises(CapabilityMissing, match="session/fork"):
        converse(agent, tmp_path, body)
    assert "session/fork" not in agent.methods()


def test_a_login_goes_through_the_link(tmp_path: Path) -> None:
    agent = Agent()

    async def body(conversation: Conversation) -> None:
        await conversation.login("token")

    converse(agent, tmp_path, body)
    assert ("authenticate", {"methodId": "token"}) in agent.calls


class HostedStandIn:
    """What a hosted conversation's link does for it here: a ``turn`` that takes the prompt's
    text (the host builds and sends it)."""

    def __init__(self) -> None:
        self.features = AgentFeatures(protocol_version=1, reading="v1")
        self.turns: list[str] = []

    def find_setting(self, live: SessionFeed, key: str) -> Choice:
        raise AssertionError("not asked here")

    async def set_by_name(self, live: SessionFeed, key: str, value_text: str) -> Choice:
        raise AssertionError("not asked here")

    async def close(self, session_id: str) -> Any:
        return {}

    async def login(self, method_id: str) -> Any:
        return None

    async def logout(self) -> Any:
        return None

    async def turn(self, text: str, *, notice: Callable[[str], None], tick: Callable[[], None] | None = None) -> str:
        self.turns.append(text)
        return "max_tokens"


def test_a_hosted_conversation_hands_its_turn_to_the_host_and_leaves_it_the_bookkeeping() -> None:
    from acpcli.model import Store
    from acpcli.session.hosted import HostedConversation

    link = HostedStandIn()
    live = SessionFeed("hosted-1", Store())
    index = open_index()
    try:
        conversation = HostedConversation(link, live, index, None, "demo")
        stop = anyio.run(lambda: conversation.turn("from the terminal", [], notice=lambda line: None))
        conversation.after_turn()  # the host's to do: nothing here (the session is not even recorded)
        conversation.title_from_prompt()
        conversation.flush()  # no writer: nothing to write
    finally:
        index.close()
    assert (stop, link.turns) == ("max_tokens", ["from the terminal"])
