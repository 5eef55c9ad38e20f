"""``acpcli.sync``: the whole API blocking, from plain code and from threads (issue 33)."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

import acpcli
import acpcli.sync


def test_the_blocking_twin_does_what_the_async_api_does(tmp_path: Path) -> None:
    with acpcli.sync.connect("demo", cwd=tmp_path, permissions="read-only") as agent:
        assert agent.name == "demo" and agent.protocol_version in (1, 2)
        session = agent.new_session(title="blocking")
        events = list(session.prompt("hello"))
        assert isinstance(events[-1], acpcli.TurnEnded) and events[-1].result.stop_reason == "end_turn"
        assert any(isinstance(e, acpcli.AgentText) for e in events)
        for event in session.prompt("slow"):  # leaving the loop cancels the turn
            if isinstance(event, acpcli.AgentText):
                break
        result = session.ask("and again")
        assert result.ok and not session.running
        assert session.set("mode", "plan").current == "plan"
        assert "[turn cancelled]" in session.transcript.text()
    with pytest.raises(acpcli.UsageError):
        with acpcli.sync.connect():  # no agent named: the API's own error, not a group
            pass


def test_connections_from_threads_at_once(tmp_path: Path) -> None:
    results: dict[int, str] = {}
    errors: list[BaseException] = []

    def one(n: int) -> None:
        try:
            with acpcli.sync.connect("demo", cwd=tmp_path) as agent:
                results[n] = agent.new_session().ask(f"thread {n}").stop_reason
        except BaseException as err:
            errors.append(err)

    threads = [threading.Thread(target=one, args=(n,)) for n in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert not errors and results == {0: "end_turn", 1: "end_turn", 2: "end_turn"}
