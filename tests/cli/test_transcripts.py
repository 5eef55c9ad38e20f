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


def test_cancelled_and_failed_turns_are_marked_and_each_prompt_has_its_heading(cli: Cli) -> None:
    sid = _first(cli)
    cancelled = cli.run("prompt", "--session", sid, "--timeout", "1", "cancel this")  # cancelled on time out
    assert cancelled.returncode != 0 and "PARTIAL" in cancelled.stdout
    failed = cli.run("prompt", "--session", sid, "fail now")
    assert failed.returncode != 0
    cli.ok("prompt", "--session", sid, "next one")
    shown = cli.show(sid)
    assert "PARTIAL\n\n[turn cancelled]\n\n> fail now\n\n[turn failed: Internal error (-32603): model exploded]\n\n> next one" in shown, shown
    assert shown.count("[turn") == 2  # a turn that simply ended says nothing
    markdown = cli.ok("export", sid, "--format", "markdown").stdout
    # two prompts in a row (the first failed before the agent said anything): two headings
    assert "## User\n\nfail now\n\n*[turn failed: Internal error (-32603): model exploded]*\n\n## User\n\nnext one\n\n## Agent\n\nANSWER to next one" in markdown, markdown
    assert markdown.count("## User") == 4
    assert "*[turn cancelled]*" in markdown
    events = _events(cli.ok("export", sid, "--format", "jsonl").stdout)
    ends = [(e["stopReason"], e["error"]) for e in events if e["type"] == "turn_end"]
    assert ends == [("end_turn", None), ("cancelled", None), (None, "Internal error (-32603): model exploded"), ("end_turn", None)]


def test_markdown_export_starts_with_what_the_session_is(cli: Cli, workdir: Path) -> None:
    sid = _first(cli, "what is this?")
    markdown = cli.ok("export", sid, "--format", "markdown").stdout
    head = markdown.split("## User")[0]
    lines = head.strip().splitlines()
    assert lines[0] == "# what is this?"  # the title sessions shows
    assert f"- **Session:** `{sid}`" in lines
    assert f"- **Directory:** `{workdir}`" in lines
    agent = next(line for line in lines if line.startswith("- **Agent:**"))
    assert "sdk-late" in agent and agent.endswith(" 0.1")  # agentInfo's name and version
    assert any(line.startswith("- **Started:** 20") for line in lines)
    assert any(line.startswith("- **Last used:** 20") for line in lines)
