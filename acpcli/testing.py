"""A scripted ACP agent for your own tests: no process, no model, no network.

::

    import acpcli
    from acpcli.testing import Say, Think, AskPermission, ScriptedAgent, connect

    agent = ScriptedAgent(
        [Think("reading"), AskPermission("Edit a.txt", kind="edit"), Say("done")],
        [Say("second turn")],
    )

    async def test_my_tool() -> None:
        async with connect(agent, permissions="allow") as connected:
            session = await connected.new_session()
            result = await session.ask("fix it")
        assert result.text == "done"
        assert agent.prompts == ["fix it"] and agent.permission_answers == ["allow_once"]

Each prompt plays the next scripted turn (the last one again when they run out): its steps in
order, then the turn's stop reason (``end_turn`` unless a :class:`Stop` says otherwise). The
agent speaks ACP v1 over :func:`acpcli.memory_pair`; everything else — the session store, the
index under ``home``, permissions, cancel — is acpcli's own code, as with a real agent.
"""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from acpcli.api.client import Agent
    from acpcli.wire.connection import Connection

__all__ = ["AskPermission", "Say", "ScriptedAgent", "Stop", "Think", "Tool", "connect"]

StopReason = Literal["end_turn", "max_tokens", "max_turn_requests", "refusal", "cancelled"]
ToolKind = Literal["read", "edit", "delete", "move", "search", "execute", "think", "fetch", "other"]


@dataclass(frozen=True)
class Say:
    """The agent's text, streamed in ``chunks`` pieces."""

    text: str
    chunks: int = 1


@dataclass(frozen=True)
class Think:
    """A thought."""

    text: str


@dataclass(frozen=True)
class Tool:
    """A tool call, announced and then finished with ``status``."""

    title: str
    kind: ToolKind = "other"
    status: Literal["completed", "failed"] = "completed"


@dataclass(frozen=True)
class AskPermission:
    """A tool call that asks permission first (options: allow once, reject once); it completes
    when allowed and fails otherwise. The answer's option kind is kept in
    :attr:`ScriptedAgent.permission_answers` (``cancelled`` for a dismissal)."""

    title: str
    kind: ToolKind = "edit"


@dataclass(frozen=True)
class Stop:
    """End the turn here with ``reason``."""

    reason: StopReason = "end_turn"


Step = Say | Think | Tool | AskPermission | Stop


class ScriptedAgent:
    """A v1 agent that plays ``turns`` (see the module docstring)."""

    def __init__(self, *turns: Sequence[Step], name: str = "scripted-agent") -> None:
        self.turns: list[list[Step]] = [list(turn) for turn in turns] or [[Say("ok")]]
        self.name = name
        #: The text of every prompt received, in order.
        self.prompts: list[str] = []
        #: The kind of the option chosen for each :class:`AskPermission` (or ``cancelled``).
        self.permission_answers: list[str] = []
        #: How many ``session/cancel`` notifications arrived.
        self.cancels = 0
        self._conn: Connection | None = None
        self._ids = itertools.count(1)
        self._cancelled: Any = None

    async def serve(self, end: Any) -> None:
        """Answer the client at the agent ``end`` of a :func:`~acpcli.memory_pair` until cancelled."""
        import anyio

        from acpcli.wire.connection import Connection

        sessions = itertools.count(1)

        async def initialize(params: Any) -> Any:
            return {
                "protocolVersion": 1,
                "agentCapabilities": {"loadSession": False, "promptCapabilities": {"embeddedContext": True}},
                "agentInfo": {"name": self.name, "version": "1.0"},
                "authMethods": [],
            }

        async def new(params: Any) -> Any:
            return {"sessionId": f"{self.name}-{next(sessions)}"}

        async def prompt(params: Any) -> Any:
            session_id = params["sessionId"]
            texts = [b.get("text", "") for b in params.get("prompt", []) if isinstance(b, dict) and b.get("type") == "text"]
            self.prompts.append("\n".join(texts))
            turn = self.turns[min(len(self.prompts), len(self.turns)) - 1]
            self._cancelled = anyio.Event()
            return {"stopReason": await self._play(session_id, turn)}

        def notified(method: str, params: Any, _text: Any = None) -> None:
            if method == "session/cancel":
                self.cancels += 1
                if self._cancelled is not None:
                    self._cancelled.set()

        handlers = {"initialize": initialize, "session/new": new, "session/prompt": prompt}
        async with Connection(end, handlers=handlers, on_notification=notified) as conn:
            self._conn = conn
            await anyio.sleep_forever()

    async def _say(self, session_id: str, update: dict[str, Any]) -> None:
        assert self._conn is not None
        await self._conn.notify("session/update", {"sessionId": session_id, "update": update})

    async def _play(self, session_id: str, turn: list[Step]) -> str:
        for step in turn:
            if self._cancelled is not None and self._cancelled.is_set():
                return "cancelled"
            if isinstance(step, Stop):
                return step.reason
            if isinstance(step, Say):
                count = max(1, step.chunks)
                size = -(-len(step.text) // count) or 1
                for at in range(0, max(len(step.text), 1), size):
                    piece = step.text[at : at + size]
                    await self._say(session_id, {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": piece}})
            elif isinstance(step, Think):
                await self._say(session_id, {"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": step.text}})
            elif isinstance(step, Tool):
                tool_id = f"tool-{next(self._ids)}"
                await self._say(session_id, {"sessionUpdate": "tool_call", "toolCallId": tool_id, "title": step.title, "kind": step.kind, "status": "in_progress"})
                await self._say(session_id, {"sessionUpdate": "tool_call_update", "toolCallId": tool_id, "status": step.status})
            elif isinstance(step, AskPermission):
                await self._ask(session_id, step)
        return "cancelled" if self._cancelled is not None and self._cancelled.is_set() else "end_turn"

    async def _ask(self, session_id: str, step: AskPermission) -> None:
        assert self._conn is not None
        tool_id = f"tool-{next(self._ids)}"
        call = {"toolCallId": tool_id, "title": step.title, "kind": step.kind, "status": "pending"}
        await self._say(session_id, {"sessionUpdate": "tool_call", **call})
        options = [
            {"optionId": "allow", "name": "Allow", "kind": "allow_once"},
            {"optionId": "reject", "name": "Reject", "kind": "reject_once"},
        ]
        answer = await self._conn.request(
            "session/request_permission", {"sessionId": session_id, "toolCall": call, "options": options}
        )
        outcome = answer.get("outcome") if isinstance(answer, dict) else None
        chosen = outcome.get("optionId") if isinstance(outcome, dict) else None
        kind = next((o["kind"] for o in options if o["optionId"] == chosen), "cancelled")
        self.permission_answers.append(kind)
        status = "completed" if kind.startswith("allow") else "failed"
        await self._say(session_id, {"sessionUpdate": "tool_call_update", "toolCallId": tool_id, "status": status})


@asynccontextmanager
async def connect(agent: ScriptedAgent, **options: Any) -> AsyncIterator[Agent]:
    """:func:`acpcli.connect` to ``agent`` over a memory pair (``options`` as ``connect`` takes
    them: ``cwd``, ``permissions``, ``home``, ...); the agent is stopped when the block ends."""
    import anyio

    import acpcli
    from acpcli.api.client import _unwrapped

    client_end, agent_end = acpcli.memory_pair()
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(agent.serve, agent_end)
            async with acpcli.connect(transport=client_end, **options) as connected:
                yield connected
            tg.cancel_scope.cancel()
    except BaseException as err:  # (what the block raised, not the task group's wrapping of it)
        leaf = _unwrapped(err)
        if leaf is err:
            raise
        raise leaf from None
