"""The pure parts of a race: candidates' names, board lines at any width, the summary."""

from __future__ import annotations

import time

import pytest

from acpcli.racing.board import board_lines, summary_text
from acpcli.racing.record import Candidate, Check, Race, candidate_names, label


@pytest.mark.parametrize(
    ("command", "name"),
    [
        ("python3 /x/launch.py codex", "launch-codex"),
        ("/usr/bin/python /t/sdk_race_agent.py --write a=b", "sdk_race_agent"),
        ("npx @zed-industries/claude-code-acp", "claude-code-acp"),
        ("gemini --acp", "gemini"),
        ("'/opt/my agent/run.sh'", "run"),
    ],
)
def test_a_command_is_named_by_its_program_or_script(command: str, name: str) -> None:
    assert label(command) == name


def test_the_same_agent_twice_gets_two_names() -> None:
    names = candidate_names(["claude", "codex", "claude"], ["gemini --acp", "gemini --acp"])
    assert [n for n, _, _ in names] == ["claude", "codex", "claude-2", "gemini", "gemini-2"]
    assert names[3] == ("gemini", None, "gemini --acp")


def _race() -> Race:
    race = Race(id="rfeedbeef", cwd="/w", kind="repo", top="/w", rel="", head="0" * 40, prompt="p")
    now = time.time()
    race.candidates = [
        Candidate(name="claude", state="running", started=now - 3, files_so_far=2, last_tool="edit \x1b[31msrc/a.py",
                  usage={"used": 12_345, "size": 200_000, "cost": {"amount": 0.1234, "currency": "USD"}}),
        Candidate(name="codex-2", state="done", stop="end_turn", started=now - 70, ended=now, result="t",
                  files=[{"path": "a", "added": 3, "removed": 1, "status": "M"}], check=Check(exit=1, seconds=2.0, tail=["FAILED x"])),
        Candidate(name="gemini", state="failed", started=now - 1, ended=now, error="the agent exited with status 1"),
    ]
    return race


@pytest.mark.parametrize("width", [20, 40, 60, 100, 200])
def test_board_lines_fit_any_width_and_show_no_control_characters(width: int) -> None:
    lines = board_lines(_race(), width)
    assert len(lines) == 3
    assert all(len(line) <= max(10, width - 1) for line in lines)
    assert not any("\x1b" in line for line in lines)
    if width >= 100:
        assert "$0.12" in lines[0] and "edit ^[[31msrc/a.py" in lines[0] and "12.3k tok" in lines[0]
        assert "check exit 1" in lines[1] and "1m10s" in lines[1] and "+3 -1" in lines[1]
        assert "exited with status 1" in lines[2]


def test_the_summary_drops_columns_to_fit_a_terminal() -> None:
    wide = summary_text(_race())
    assert "SESSION" in wide.splitlines()[0] and "no candidate succeeded" in wide
    assert "codex-2 check: FAILED x" in wide and "gemini: the agent exited" in wide
    narrow = summary_text(_race(), 50)
    assert all(len(line) <= 49 for line in narrow.splitlines())
    assert "SESSION" not in narrow.splitlines()[0] and narrow.splitlines()[0].startswith("CANDIDATE")
