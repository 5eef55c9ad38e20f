"""The history without an agent (issue 33): ``acpcli.sessions()``, ``acpcli.search()`` and
``acpcli.transcript(id)`` read what the CLI recorded, typed, and start nothing."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

import acpcli

from .conftest import AgentTrace, Cli


def test_what_the_cli_recorded_is_read_typed_without_an_agent(cli: Cli, trace: AgentTrace, tmp_path: Path) -> None:
    sid = cli.new(trace.demo_cmd(protocol=1))
    cli.ok("prompt", "--session", sid, "tell me about pelicans")
    cli.ok("prompt", "--session", sid, "and now penguins")
    started = len(trace.pids())

    (listed,) = acpcli.sessions()
    assert listed.id == sid and listed.state == "active" and listed.cwd
    assert isinstance(listed.last_used_at, datetime) and listed.last_used_at.tzinfo is not None
    assert listed.last_used_at > datetime.now(timezone.utc) - timedelta(minutes=10)
    assert acpcli.sessions(agent="no-such-agent") == []
    assert acpcli.sessions(agent=listed.agent_title) == [listed]  # the display name finds it too

    (hit,) = acpcli.search("pelicans")
    assert hit.session == listed and hit.kind in ("user", "agent") and "pelicans" in hit.snippet
    assert acpcli.search("walruses") == []

    transcript = acpcli.transcript(sid[:12])
    entries = transcript.entries
    prompts = [e.text for e in entries if isinstance(e, acpcli.UserText)]
    assert prompts == ["tell me about pelicans", "and now penguins"]
    ends = [e for e in entries if isinstance(e, acpcli.TurnEnded)]
    assert [e.result.stop_reason for e in ends] == ["end_turn", "end_turn"]
    assert "pelicans" in ends[0].result.text and "penguins" not in ends[0].result.text
    assert any(isinstance(e, acpcli.ToolCall) for e in entries) and any(isinstance(e, acpcli.PlanUpdated) for e in entries)
    assert transcript.text() == cli.ok("show", sid).stdout  # what `show` prints in a pipe
    assert len(trace.pids()) == started  # nothing was started

    with pytest.raises(acpcli.SessionNotFound):
        acpcli.transcript("demo-nope")
    assert acpcli.sessions(home=tmp_path / "empty") == []
