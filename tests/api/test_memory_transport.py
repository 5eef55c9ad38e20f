"""``acpcli.connect(transport=...)``: the whole API over an in-memory transport pair, no
subprocess. The agent at the other end is a few JSON-RPC handlers on the project's own
connection, so each test says exactly what the agent sends."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

import acpcli
from acpcli.history.index import Index
from acpcli.wire.connection import Connection

LIMIT = 30  # a broken turn fails the test instead of hanging the suite
SID = "mem-1"


def update(what: str, /, **fields: Any) -> dict[str, Any]:
    return {"sessionId": SID, "update": {"sessionUpdate": what, **fields}}


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


PERMISSION = {
    "sessionId": SID,
    "toolCall": {"toolCallId": "t1", "title": "Edit a.txt", "kind": "edit", "status": "pending"},
    "options": [
        {"optionId": "yes", "name": "Allow", "kind": "allow_once"},
        {"optionId": "no", "name": "Reject", "kind": "reject_once"},
    ],
}


class MemoryAgent:
    """A v1 agent on the agent end of a memory pair: ``prompt`` runs ``turn`` (which may
    notify and ask), then answers ``stopReason``."""

    def __init__(self, turn: Callable[[MemoryAgent, str], Awaitable[str]]) -> None:
        self.turn = turn
        self.conn: Connection | None = None
        self.answers: list[Any] = []
        self.cancelled = anyio.Event()

    async def serve(self, end: Any) -> None:
        async def initialize(params: Any) -> Any:
            return {
                "protocolVersion": 1,
                "agentCapabilities": {"loadSession": False},
                "agentInfo": {"name": "memory-agent", "version": "1.0"},
                "authMethods": [],
            }

        async def new(params: Any) -> Any:
            return {"sessionId": SID}

        async def prompt(params: Any) -> Any:
            return {"stopReason": await self.turn(self, params["prompt"][0]["text"])}

        async def cancel(params: Any) -> None:
            self.cancelled.set()

        handlers = {"initialize": initialize, "session/new": new, "session/prompt": prompt}
        async with Connection(
            end, handlers=handlers, on_notification=lambda m, p, t=None: cancel(p) if m == "session/cancel" else None
        ) as conn:
            self.conn = conn
            await anyio.sleep_forever()

    async def say(self, what: str, /, **fields: Any) -> None:
        assert self.conn is not None
        await self.conn.notify("session/update", update(what, **fields))

    async def ask(self) -> Any:
        assert self.conn is not None
        answer = await self.conn.request("session/request_permission", PERMISSION)
        self.answers.append(answer)
        return answer


def drive(agent: MemoryAgent, body: Callable[[acpcli.Agent], Awaitable[Any]], **connect: Any) -> Any:
    """Run ``body`` on a connection to ``agent`` over a memory pair; its result."""
    result: list[Any] = []

    async def main() -> None:
        client_end, agent_end = acpcli.memory_pair()
        with anyio.fail_after(LIMIT):
            async with anyio.create_task_group() as tg:
                tg.start_soon(agent.serve, agent_end)
                async with acpcli.connect(transport=client_end, **connect) as connected:
                    result.append(await body(connected))
                tg.cancel_scope.cancel()

    try:
        anyio.run(main)
    except Exception as err:  # this harness's own task group wraps what the body raised
        inner = getattr(err, "exceptions", None)
        if inner and len(inner) == 1:
            raise inner[0] from None
        raise
    return result[0]


async def full_turn(agent: MemoryAgent, prompt: str) -> str:
    await agent.say("agent_thought_chunk", content=text("thinking"))
    await agent.say("tool_call", toolCallId="t1", title="Edit a.txt", kind="edit", status="pending")
    await agent.say("plan", entries=[{"content": "edit a.txt", "priority": "high", "status": "in_progress"}])
    answer = await agent.ask()
    chosen = answer["outcome"].get("optionId", "cancelled")
    await agent.say("tool_call_update", toolCallId="t1", status="completed" if chosen == "yes" else "failed")
    await agent.say("agent_message_chunk", content=text(f"echo: {prompt}"))
    await agent.say("agent_message_chunk", content=text(f" ({chosen})"))
    await agent.say("usage_update", used=10, size=100)
    return "end_turn"


def test_a_turn_yields_typed_events_and_is_recorded(tmp_path: Path) -> None:
    asked: list[acpcli.PermissionRequest] = []

    async def decide(request: acpcli.PermissionRequest) -> acpcli.PermissionOption | None:
        asked.append(request)
        return request.allow()

    async def body(agent: acpcli.Agent) -> tuple[str, list[acpcli.Event], str]:
        assert agent.name == "memory-agent"  # no configured name: the agent's own
        session = await agent.new_session()
        events = [event async for event in session.prompt("hi")]
        return session.id, events, session.transcript.markdown()

    sid, events, markdown = drive(MemoryAgent(full_turn), body, cwd=tmp_path, permissions=decide)
    assert sid == SID
    assert [type(e).__name__ for e in events] == [
        "UserText", "ThoughtText", "ToolCallStarted", "PlanUpdated",
        "ToolCallUpdated",  # what the permission request says of the call, stored as an update
        "PermissionAsked", "PermissionAnswered", "ToolCallUpdated", "AgentText", "AgentText", "UsageUpdated",
        "TurnEnded",
    ]
    assert events[0] == acpcli.UserText("hi", None)
    assert events[3] == acpcli.PlanUpdated((acpcli.PlanEntry("edit a.txt", "in_progress", "high"),))
    (request,) = asked
    assert request.options == (
        acpcli.PermissionOption("yes", "Allow", "allow_once"), acpcli.PermissionOption("no", "Reject", "reject_once"),
    )
    assert events[5] == acpcli.PermissionAsked(request)
    assert events[6] == acpcli.PermissionAnswered(request, request.options[0])
    assert isinstance(events[7], acpcli.ToolCallUpdated) and events[7].call.status == "completed"
    assert events[10] == acpcli.UsageUpdated(10, 100, None)
    assert events[-1] == acpcli.TurnEnded(acpcli.TurnResult("end_turn", SID, "echo: hi (yes)"))
    assert "echo: hi (yes)" in markdown and "## User" in markdown
    with Index.open(read_only=True) as index:  # in `acpcli sessions` like the CLI's sessions
        record = index.get(SID)
        assert (record.agent, record.cwd, record.prompt_title) == ("memory-agent", str(tmp_path), "hi")


def test_a_policy_answers_and_its_lines_arrive_as_notices(tmp_path: Path) -> None:
    async def body(agent: acpcli.Agent) -> list[acpcli.Event]:
        session = await agent.new_session()
        return [event async for event in session.prompt("hi")]

    agent = MemoryAgent(full_turn)
    events = drive(agent, body, cwd=tmp_path, permissions="deny")
    assert agent.answers == [{"outcome": {"outcome": "selected", "optionId": "no"}}]
    notices = [e.text for e in events if isinstance(e, acpcli.Notice)]
    assert notices == [
        "acpcli: refused permission for 'Edit a.txt' (kind edit) (policy deny): "
        'pass permissions="allow" or a callback to acpcli.connect'
    ]
    assert events[-1] == acpcli.TurnEnded(acpcli.TurnResult("end_turn", SID, "echo: hi (no)"))


def test_a_dismissed_question_cancels_the_turn(tmp_path: Path) -> None:
    async def dismiss(request: acpcli.PermissionRequest) -> acpcli.PermissionOption | None:
        return None

    async def turn(agent: MemoryAgent, prompt: str) -> str:
        await agent.ask()
        await agent.cancelled.wait()  # the client sends session/cancel, as a dismissal asks
        return "cancelled"

    async def body(agent: acpcli.Agent) -> acpcli.TurnResult:
        session = await agent.new_session()
        return await session.ask("hi")

    agent = MemoryAgent(turn)
    result = drive(agent, body, cwd=tmp_path, permissions=dismiss)
    assert result == acpcli.TurnResult("cancelled", SID, "")
    assert agent.answers == [{"outcome": {"outcome": "cancelled"}}]


def test_an_agent_that_goes_away_is_connection_closed(tmp_path: Path) -> None:
    async def turn(agent: MemoryAgent, prompt: str) -> str:
        await agent.say("agent_message_chunk", content=text("partial"))
        assert agent.conn is not None
        await agent.conn._transport.aclose()  # the agent's end goes away mid-turn
        await anyio.sleep_forever()
        return "end_turn"

    seen: list[acpcli.Event] = []

    async def body(agent: acpcli.Agent) -> None:
        session = await agent.new_session()
        async for event in session.prompt("hi"):
            seen.append(event)

    with pytest.raises(acpcli.ConnectionClosed):  # the error itself, not an exception group
        drive(MemoryAgent(turn), body, cwd=tmp_path)
    assert acpcli.AgentText("partial", None) in seen


def test_the_callers_own_error_leaves_as_itself(tmp_path: Path) -> None:
    async def body(agent: acpcli.Agent) -> None:
        await agent.new_session()
        raise LookupError("mine")

    with pytest.raises(LookupError, match="mine"):
        drive(MemoryAgent(full_turn), body, cwd=tmp_path)


def test_a_turn_that_outlasts_the_timeout_is_step_timeout(tmp_path: Path) -> None:
    async def turn(agent: MemoryAgent, prompt: str) -> str:
        await agent.say("agent_message_chunk", content=text("slow"))
        await anyio.sleep_forever()  # and never answers the cancel
        return "end_turn"

    async def body(agent: acpcli.Agent) -> None:
        session = await agent.new_session()
        await session.ask("hi")

    agent = MemoryAgent(turn)
    with pytest.raises(acpcli.StepTimeout, match="outlasted"):
        drive(agent, body, cwd=tmp_path, timeout=0.5)
    assert agent.cancelled.is_set()


def test_one_turn_at_a_time(tmp_path: Path) -> None:
    async def turn(agent: MemoryAgent, prompt: str) -> str:
        await agent.cancelled.wait()
        return "cancelled"

    async def body(agent: acpcli.Agent) -> acpcli.TurnResult:
        session = await agent.new_session()
        events = session.prompt("first")
        first = await events.__anext__()  # the turn is running now
        assert isinstance(first, acpcli.UserText) and session.running
        with pytest.raises(acpcli.SessionBusy, match="one turn at a time"):
            await session.ask("second")
        await session.cancel()
        rest = [event async for event in events]
        ended = rest[-1]
        assert isinstance(ended, acpcli.TurnEnded)
        return ended.result

    assert drive(MemoryAgent(turn), body, cwd=tmp_path).stop_reason == "cancelled"


def test_the_callbacks_own_error_leaves_the_turn_as_itself(tmp_path: Path) -> None:
    async def broken(request: acpcli.PermissionRequest) -> acpcli.PermissionOption | None:
        raise KeyError("a bug in the caller's callback")

    async def turn(agent: MemoryAgent, prompt: str) -> str:
        await agent.ask()
        await agent.cancelled.wait()
        return "cancelled"

    async def body(agent: acpcli.Agent) -> None:
        session = await agent.new_session()
        await session.ask("hi")

    with pytest.raises(KeyError, match="a bug in the caller's callback"):
        drive(MemoryAgent(turn), body, cwd=tmp_path, permissions=broken)


def test_no_agent_named_is_a_usage_error_naming_the_arguments() -> None:
    async def main() -> None:
        async with acpcli.connect():
            pass

    with pytest.raises(acpcli.UsageError, match=r"give acpcli.connect an agent name or argv=\[...\]"):
        anyio.run(main)


def test_the_library_prints_nothing(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    # A turn with a policy refusal and an agent line that is not JSON: what the CLI would say
    # on stderr arrives as notices and logs, never on the process's own streams.
    async def turn(agent: MemoryAgent, prompt: str) -> str:
        assert agent.conn is not None
        await agent.conn._transport.send(b"this is not json")
        await full_turn(agent, prompt)
        return "end_turn"

    async def body(agent: acpcli.Agent) -> list[acpcli.Event]:
        session = await agent.new_session()
        return [event async for event in session.prompt("hi")]

    events = drive(MemoryAgent(turn), body, cwd=tmp_path, permissions="deny")
    assert any(isinstance(e, acpcli.Notice) for e in events)
    out, err = capfd.readouterr()
    assert (out, err) == ("", "")


def test_acpcli_warnings_are_not_printed_by_pythons_last_resort_handler() -> None:
    # (pytest's own log capture hides the last-resort handler: ask a fresh interpreter)
    import subprocess
    import sys

    script = (
        "import logging, acpcli\n"
        "acpcli.connect\n"  # the API in use
        "logging.getLogger('acpcli.notices').warning('skipped a bad line from the agent')\n"
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr


def test_what_is_said_between_turns_is_kept_on_the_agent(tmp_path: Path) -> None:
    # The agent gives two sessions the same id: the second is recorded under an id of its own,
    # and the line the CLI would print says so (agent.notices, no turn being run).
    async def body(agent: acpcli.Agent) -> tuple[str, str, list[str]]:
        first = await agent.new_session()
        second = await agent.new_session()
        return first.id, second.id, list(agent.notices)

    first, second, notices = drive(MemoryAgent(full_turn), body, cwd=tmp_path)
    assert (first, second) == (SID, f"{SID}.2")
    assert len(notices) == 1 and f"this one is recorded as {SID}.2" in notices[0], notices


def test_the_librarys_errors_name_arguments_not_flags(tmp_path: Path) -> None:
    async def turn(agent: MemoryAgent, prompt: str) -> str:
        await anyio.sleep(30)  # outlasts the timeout below
        return "end_turn"

    async def body(agent: acpcli.Agent) -> None:
        session = await agent.new_session()
        await session.ask("hi")

    with pytest.raises(acpcli.StepTimeout) as raised:
        drive(MemoryAgent(turn), body, cwd=tmp_path, timeout=0.5)
    said = str(raised.value) + (raised.value.hint or "")
    assert "timeout=" in said and "--timeout" not in said, said
