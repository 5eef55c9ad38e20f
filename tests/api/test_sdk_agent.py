"""The Python API drives an agent written with the official ACP SDK (tests/peers/sdk_api_agent.py)
through new, prompt, a permission question, load and close, using only ``acpcli``'s public
names; what it makes is in the index, as the CLI's sessions are (``acpcli sessions``, ``show``)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import anyio
import pytest

import acpcli
from tests.peers import agent_argv


@pytest.fixture
def argv(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    monkeypatch.setenv("API_AGENT_STATE", str(tmp_path / "agent-state.json"))
    return agent_argv("sdk_api_agent.py")


def acpcli_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "acpcli", *args], capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL
    )


def test_new_prompt_permission_load_close(argv: list[str], tmp_path: Path) -> None:
    asked: list[acpcli.PermissionRequest] = []

    async def decide(request: acpcli.PermissionRequest) -> acpcli.PermissionOption | None:
        asked.append(request)
        return request.allow()

    async def first() -> tuple[str, list[acpcli.Event]]:
        async with acpcli.connect(argv=argv, cwd=tmp_path, permissions=decide) as agent:
            assert agent.protocol_version == 1 and agent.can_load
            session = await agent.new_session(title="api test")
            events = [event async for event in session.prompt("hello")]
            return session.id, events

    session_id, events = anyio.run(first)
    kinds = [type(e).__name__ for e in events]
    # the typed events, in the order the agent sent what they stand for
    assert kinds[0] == "UserText" and kinds[-1] == "TurnEnded", kinds
    assert kinds.index("ToolCallStarted") < kinds.index("PermissionAsked") < kinds.index("PermissionAnswered")
    answered = next(e for e in events if isinstance(e, acpcli.PermissionAnswered))
    assert answered.option is not None and answered.option.option_id == "allow"
    (request,) = asked
    assert (request.title, request.kind, request.session_id) == ("Edit notes.txt", "edit", session_id)
    assert [o.kind for o in request.options] == ["allow_once", "reject_once"]
    updated = [e.call for e in events if isinstance(e, acpcli.ToolCallUpdated)]
    assert updated[-1].status == "completed"
    text = "".join(e.text for e in events if isinstance(e, acpcli.AgentText))
    assert text == "you said: hello; chosen: allow"
    ended = events[-1]
    assert isinstance(ended, acpcli.TurnEnded)
    assert ended.result == acpcli.TurnResult("end_turn", session_id, "you said: hello; chosen: allow")

    # recorded like the CLI's sessions
    listed = acpcli_cli("sessions")
    assert session_id in listed.stdout and "api test" in listed.stdout, listed
    shown = acpcli_cli("show", session_id)
    assert shown.returncode == 0 and "you said: hello; chosen: allow" in shown.stdout, shown

    async def second() -> tuple[str, str, str]:
        async with acpcli.connect(argv=argv, cwd=tmp_path, permissions="deny") as agent:
            session = await agent.load(session_id)
            replayed = session.transcript.markdown()
            kept = session.transcript.text()
            result = await session.ask("again")
            await session.close()
            return replayed, kept, result.text

    replayed, kept, again = anyio.run(second)
    assert "hello" in replayed and "you said: hello; chosen: allow" in replayed
    # the record acpcli kept (the plan and the tool call too), as `show` prints it, not the raw replay
    assert kept == shown.stdout, (kept, shown.stdout)
    assert again == "you said: again; chosen: reject"  # the policy answered for us
    listed = acpcli_cli("sessions", "--all")
    line = next(row for row in listed.stdout.splitlines() if session_id in row)
    assert "closed" in line, listed.stdout


def test_ask_with_nobody_to_ask_cancels_the_turn(argv: list[str], tmp_path: Path) -> None:
    async def main() -> tuple[acpcli.TurnResult, list[acpcli.Event]]:
        async with acpcli.connect(argv=argv, cwd=tmp_path, permissions="ask") as agent:
            session = await agent.new_session()
            events = [event async for event in session.prompt("hi")]
            ended = events[-1]
            assert isinstance(ended, acpcli.TurnEnded)
            return ended.result, events

    result, events = anyio.run(main)
    assert result.stop_reason == "cancelled" and not result.ok
    answered = next(e for e in events if isinstance(e, acpcli.PermissionAnswered))
    assert answered.option is None


def test_an_unknown_session_is_the_exception_the_cli_maps(argv: list[str], tmp_path: Path) -> None:
    async def main() -> None:
        async with acpcli.connect(argv=argv, cwd=tmp_path) as agent:
            await agent.load("api-000000000000")

    with pytest.raises(acpcli.UnknownSession):
        anyio.run(main)
