"""``acpcli.testing``: the scripted agent users test their own code against."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

import acpcli
from acpcli.testing import AskPermission, Say, ScriptedAgent, Stop, Think, Tool, connect


def test_a_scripted_agent_plays_its_turns(tmp_path: Path) -> None:
    agent = ScriptedAgent(
        [Think("reading"), Tool("Read a.txt", kind="read"), AskPermission("Edit a.txt"), Say("done, I think", chunks=3)],
        [Say("no"), Stop("refusal")],
    )

    async def main() -> tuple[acpcli.TurnResult, acpcli.TurnResult, list[acpcli.Event]]:
        async with connect(agent, cwd=tmp_path, permissions="allow") as connected:
            session = await connected.new_session()
            events = [e async for e in session.prompt("fix it")]
            first = events[-1]
            assert isinstance(first, acpcli.TurnEnded)
            second = await session.ask("and this?")
            return first.result, second, events

    first, second, events = anyio.run(main)
    assert (first.stop_reason, first.text) == ("end_turn", "done, I think")
    assert (second.stop_reason, second.text) == ("refusal", "no")
    assert agent.prompts == ["fix it", "and this?"] and agent.permission_answers == ["allow_once"]
    assert [type(e).__name__ for e in events if isinstance(e, (acpcli.ThoughtText, acpcli.ToolCallStarted))] == [
        "ThoughtText", "ToolCallStarted", "ToolCallStarted",
    ]
    assert sum(isinstance(e, acpcli.AgentText) for e in events) == 3  # streamed in three chunks


def test_a_denied_permission_and_the_blocks_error_come_back_as_themselves(tmp_path: Path) -> None:
    agent = ScriptedAgent([AskPermission("Delete everything", kind="delete"), Say("gone")])

    async def main() -> None:
        async with connect(agent, cwd=tmp_path, permissions="deny") as connected:
            session = await connected.new_session()
            await session.ask("clean up")
            raise KeyError("the test's own failure")

    with pytest.raises(KeyError, match="the test's own failure"):  # not an exception group
        anyio.run(main)
    assert agent.permission_answers == ["reject_once"]
