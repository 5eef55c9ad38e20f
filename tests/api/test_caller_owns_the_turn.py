"""The library, as a script sees it (issue 33): what ``prompt`` sends, who owns a turn, and
what a callback's error does. Against the built-in demo agent, a real process."""

from __future__ import annotations

import time
from pathlib import Path

import anyio
import pytest

import acpcli


def test_a_mention_in_the_text_attaches_nothing_unless_asked(tmp_path: Path) -> None:
    (tmp_path / "secret.txt").write_text("the launch code is 0000\n")
    (tmp_path / "notes.txt").write_text("bring apples\n")

    async def main() -> tuple[str, str, str]:
        async with acpcli.connect("demo", cwd=tmp_path, protocol="1") as agent:
            session = await agent.new_session()
            plain = (await session.ask("what does @secret.txt say?")).text
            attached = (await session.ask("and this one?", attach=[tmp_path / "notes.txt"])).text
            mentioned = ""
            async for event in session.prompt("read @notes.txt", mentions=True):
                if isinstance(event, acpcli.TurnEnded):
                    mentioned = event.result.text
            return plain, attached, mentioned

    plain, attached, mentioned = anyio.run(main)
    # the demo agent names every block it received beyond the text
    assert "received resource" not in plain and "secret.txt (" not in plain, plain
    assert "notes.txt" in attached and "received resource" in attached, attached
    assert "notes.txt" in mentioned and "received resource" in mentioned, mentioned
    with pytest.raises(acpcli.UsageError, match="outside the session's directories"):

        async def outside() -> None:
            async with acpcli.connect("demo", cwd=tmp_path / "..", protocol="1") as agent:
                session = await agent.new_session()
                await session.ask("x", attach=["/etc/passwd"])

        anyio.run(outside)


def test_leaving_the_loop_cancels_the_turn_and_the_session_is_ready_again(tmp_path: Path) -> None:
    async def main() -> tuple[float, str, str | None]:
        async with acpcli.connect("demo", cwd=tmp_path) as agent:
            session = await agent.new_session()
            started = time.monotonic()
            async for event in session.prompt("slow"):
                if isinstance(event, acpcli.AgentText):
                    break  # the first words are enough
            again = await session.ask("hello")  # no SessionBusy: the slow turn was cancelled
            took = time.monotonic() - started
            stops = [line for line in session.transcript.text().splitlines() if line.startswith("[turn ")]
            return took, again.stop_reason, stops[0] if stops else None

    took, stop, first_stop = anyio.run(main)
    assert stop == "end_turn"
    assert first_stop is not None and "cancelled" in first_stop, first_stop
    assert took < 20  # a slow demo turn streams for far longer: the cancel ended it


def test_a_cancelled_reader_cancels_its_turn(tmp_path: Path) -> None:
    async def main() -> str:
        async with acpcli.connect("demo", cwd=tmp_path) as agent:
            session = await agent.new_session()

            async def read() -> None:
                async for _ in session.prompt("slow"):
                    pass

            with anyio.move_on_after(1.0):
                await read()
            assert not session.running
            return (await session.ask("hello")).stop_reason

    assert anyio.run(main) == "end_turn"


def test_a_callbacks_error_is_raised_after_its_turn_and_the_session_goes_on(tmp_path: Path) -> None:
    calls: list[str] = []

    async def broken(request: acpcli.PermissionRequest) -> acpcli.PermissionOption | None:
        calls.append(request.title or "")
        raise RuntimeError("my callback broke")

    async def main() -> tuple[bool, str]:
        async with acpcli.connect("demo", cwd=tmp_path, permissions=broken) as agent:
            session = await agent.new_session()
            with pytest.raises(RuntimeError, match="my callback broke"):
                await session.ask("hello")  # the demo asks permission for an edit
            running = session.running
            again = await session.ask("no-permission hello")  # asks nothing: no callback
            return running, again.stop_reason

    running, stop = anyio.run(main)
    assert calls and not running and stop == "end_turn"
