"""Stored transcripts through the real program: every prompt acpcli sends is its own user
message (also when a turn failed before the agent said anything, and the agent uses no
messageIds), and ``export`` gives the same messages before and after ``acpcli load`` although
the agent's replay glues the two prompts together (as codex does).

Peer: ``tests/agents/sdk_forgetful_agent.py`` (official SDK, v1, no messageIds). The merge
rules themselves are unit-tested in ``tests/test_replay_merge.py``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from acpcli.errors import ExitCode

from .conftest import Cli
from .test_forgetful_agents import forgetful


@pytest.fixture
def state(tmp_path: Path) -> dict[str, str]:
    return {"FORGETFUL_STATE": str(tmp_path / "forgetful.json")}


def test_a_failed_turn_and_the_next_prompt_stay_two_messages_across_a_load(cli: Cli, state: dict[str, str]) -> None:
    cmd = forgetful("codex")
    sid = cli.ok("new", "--no-repl", "--cmd", cmd, env=state).stdout.strip()
    assert cli.run("prompt", "--session", sid, "fail", env=state).returncode == ExitCode.AGENT_ERROR
    cli.ok("prompt", "--session", sid, "hello", env=state)
    before = cli.ok("export", sid, "--format", "jsonl").stdout
    users = [json.loads(line) for line in before.splitlines() if '"user"' in line]
    texts = [json.dumps(u) for u in users]
    assert len(users) == 2 and "fail" in texts[0] and "hello" in texts[1] and "failhello" not in before
    cli.ok("load", sid, "--no-repl", env=state)  # the agent replays "fail" and "hello" glued
    assert cli.ok("export", sid, "--format", "jsonl").stdout == before
    assert cli.ok("export", sid, "--format", "markdown").stdout.count("fail") == 1
