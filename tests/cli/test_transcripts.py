"""End-to-end tests of what a transcript keeps (``show``, ``export``, ``prompt``'s output): text an
agent sends between turns, turns that end badly, updates after a turn's answer, usage.

The real program runs in subprocesses against the SDK agent ``tests/agents/sdk_late_agent.py``.
"""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import Any

from tests.cli.conftest import Cli

LATE_AGENT = Path(__file__).resolve().parent.parent / "agents" / "sdk_late_agent.py"


def late_cmd() -> str:
    return shlex.join([sys.executable, str(LATE_AGENT)])


def _first(cli: Cli, text: str = "hello") -> str:
    """A new session with one turn; its id."""
    proc = cli.ok("prompt", "--cmd", late_cmd(), text)
    return proc.stderr.split()[1]  # "session ID" on stderr


def _events(jsonl: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in jsonl.splitlines() if line.strip()]


def test_text_sent_between_turns_is_a_message_of_its_own(cli: Cli) -> None:
    # gemini says "[MODE_UPDATE] yolo" after a mode change, outside any turn: it is not the end
    # of the previous answer
    sid = _first(cli)
    cli.ok("prompt", "--session", sid, "--mode", "yolo", "again")
    shown = cli.show(sid)
    assert "ANSWER to hello[MODE_UPDATE]" not in shown
    assert "ANSWER to hello\n\n[MODE_UPDATE] yolo\n" in shown, shown
    agents = [e["text"] for e in _events(cli.ok("export", sid, "--format", "jsonl").stdout)
              if e["type"] == "message" and e["role"] == "agent"]
    assert agents == ["ANSWER to hello", "[MODE_UPDATE] yolo", "ANSWER to again"]
    markdown = cli.ok("export", sid, "--format", "markdown").stdout
    assert "ANSWER to hello\n\n[MODE_UPDATE] yolo" in markdown, markdown
