"""Opt-in: escape sequences from real agents (codex-acp, claude-agent-acp, gemini --acp).

Runs only when ``ACPCLI_REAL_AGENTS`` names the launcher (the real-agent harness's ``launch.py``); skipped
with a reason otherwise. The fake model behind each agent is scripted (inline JSON) to put an
OSC that renames the terminal, SGR and erase-screen CSIs, a C1 CSI and a carriage return in the
session title, the plan, a thought and the answer, and to run a shell command whose output
carries escapes. ``prompt`` (piped, and with ``FORCE_COLOR`` as on a terminal), ``show`` and
``sessions`` must show them neutralized (``^[``) and never as they are.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from acpcli.errors import ExitCode

LAUNCHER = os.environ.get("ACPCLI_REAL_AGENTS", "")

pytestmark = pytest.mark.skipif(
    not LAUNCHER or not Path(LAUNCHER).is_file(),
    reason="real agents are opt-in: set ACPCLI_REAL_AGENTS to the real-agent harness's launch.py",
)

EVIL = "\x1b]2;PWNED\x07\x1b[41m\x1b[2J\x9b31m\r"
PLAN = {"tool": "plan", "entries": [[f"Step {EVIL} one", "completed"], [f"Step {EVIL} two", "in_progress"]]}
STEPS = [
        {"thought": [f"Think {EVIL} ", "hard."], "tool": "shell",
         "command": "printf 'out \\033]2;PWNED\\007 \\033[41mred\\033[0m\\n'", "text": [f"Running {EVIL}", "..."]},
        {"text": [f"Answer {EVIL} ", "done."]},
]


def script(agent: str) -> str:
    """The fake model's script (gemini's plan tool does not exist in the fake model's eyes)."""
    steps = STEPS if agent == "gemini" else [PLAN, *STEPS]
    return json.dumps({"side_text": [f"Title {EVIL} here"], "rules": [{"steps": steps}]})
RAW_PIECES = ("\x1b]2;PWNED", "\x07", "\x1b[41m", "\x1b[2J", "\x9b")
OURS = re.compile(r"\x1b\[[0-9;]*m|\x1b\[\d*[AK]|\x1b\[\?25[lh]|\r")


def assert_clean(text: str, *, terminal: bool = False) -> None:
    for piece in RAW_PIECES:
        assert piece not in text, f"{piece!r} reached the output"
    if terminal:
        text = OURS.sub("", text)
    bad = {c for c in text if (ord(c) < 0x20 and c not in "\n\t") or 0x7F <= ord(c) <= 0x9F}
    assert not bad, sorted(map(hex, map(ord, bad)))


def acpcli(home: Path, cwd: Path, *args: str, color: bool = False, agent: str = "") -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "ACPCLI_LOG_FILE")}
    env.update(ACPCLI_HOME=str(home), FAKEMODEL_SCRIPT=script(agent), COLUMNS="120")
    if color:
        env["FORCE_COLOR"] = "1"
    return subprocess.run(
        [sys.executable, "-m", "acpcli", *args],
        cwd=cwd, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=300, check=False,
    )


@pytest.mark.parametrize("agent", ["codex", "claude", "gemini"])
def test_real_agent_escapes_are_shown_neutralized(agent: str, tmp_path: Path) -> None:
    home, cwd = tmp_path / "home", tmp_path / "work"
    cwd.mkdir()
    cmd = shlex.join([sys.executable, LAUNCHER, agent])
    piped = acpcli(home, cwd, "prompt", "--cmd", cmd, "--permissions", "allow", "go", agent=agent)
    assert piped.returncode == ExitCode.OK, piped.stderr
    assert_clean(piped.stdout)
    assert_clean(piped.stderr)
    assert "^[]2;PWNED^G" in piped.stdout
    terminal = acpcli(home, cwd, "prompt", "--cmd", cmd, "--permissions", "allow", "go", color=True, agent=agent)
    assert terminal.returncode == ExitCode.OK, terminal.stderr
    assert_clean(terminal.stdout, terminal=True)
    assert "^[]2;PWNED^G" in terminal.stdout
    listed = acpcli(home, cwd, "sessions", "--json")
    for line in listed.stdout.splitlines():
        session_id = json.loads(line)["id"]
        for color in (False, True):
            shown = acpcli(home, cwd, "show", session_id, color=color)
            assert shown.returncode == ExitCode.OK, shown.stderr
            assert_clean(shown.stdout, terminal=color)
    for color in (False, True):
        assert_clean(acpcli(home, cwd, "sessions", color=color).stdout, terminal=color)
