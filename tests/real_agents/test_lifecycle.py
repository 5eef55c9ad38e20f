"""Opt-in: the scripted session lifecycle with the real agents (codex-acp, claude-agent-acp,
gemini --acp).

Runs only when ``ACPCLI_REAL_AGENTS`` names the launcher of the offline real agents (e.g.
``ACPCLI_REAL_AGENTS=/path/to/launch.py``); skipped with a reason otherwise,
so the default suite neither needs nor waits for them. Each agent keeps its HOME between
launches (``--keep-home --home DIR``), as a user's would.

Checked per agent: ``ID=$(acpcli new --no-repl)`` then ``prompt --session ID``, ``--last``,
``load``, ``resume`` and ``close`` all work (a never-prompted session the agent forgot is
replaced by a fresh one under the same id, said in one stderr line); ``export`` is the same
before and after ``load``; the index shows one session per id.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

LAUNCHER = os.environ.get("ACPCLI_REAL_AGENTS", "")
pytestmark = pytest.mark.skipif(
    not LAUNCHER or not Path(LAUNCHER).is_file(),
    reason="set ACPCLI_REAL_AGENTS to the real agents' launch.py to run these",
)
TIMEOUT = 300


class Acpcli:
    def __init__(self, home: Path, cwd: Path, agent: str, agent_home: Path) -> None:
        self.env = {**os.environ, "ACPCLI_HOME": str(home), "COLUMNS": "400"}
        self.cwd = cwd
        self.cmd = shlex.join([sys.executable, LAUNCHER, agent, "--keep-home", "--home", str(agent_home)])

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "acpcli", *args], env=self.env, cwd=self.cwd, stdin=subprocess.DEVNULL,
            capture_output=True, text=True, timeout=TIMEOUT, check=False,
        )

    def ok(self, *args: str) -> subprocess.CompletedProcess[str]:
        proc = self.run(*args)
        assert proc.returncode == 0, f"{args}: exit {proc.returncode}\n{proc.stderr}"
        return proc

    def new(self) -> str:
        return self.ok("new", "--no-repl", "--cmd", self.cmd).stdout.strip()


@pytest.mark.parametrize("agent", ["codex", "claude", "gemini"])
def test_the_scripted_flow(agent: str, tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / "README.md").write_text("hello from the README\n")
    cli = Acpcli(tmp_path / "acpcli", work, agent, tmp_path / "agent-home")

    sid = cli.new()
    first = cli.ok("prompt", "--session", sid, "--permissions", "allow", "hello")
    assert "Hello from the fake model" in first.stdout
    assert len([ln for ln in first.stderr.splitlines() if f"({sid} never had a turn)" in ln]) == 1, first.stderr

    sid2 = cli.new()
    last = cli.ok("prompt", "--last", "--cmd", cli.cmd, "--permissions", "allow", "hello")
    assert f"({sid2} never had a turn)" in last.stderr

    sid3 = cli.new()
    if agent == "gemini":  # it advertises neither resume nor close: refused before anything is sent
        assert cli.run("resume", sid3, "--no-repl").returncode == 6
        assert cli.run("close", sid3).returncode == 6  # marked closed locally all the same
    else:
        cli.ok("resume", sid3, "--no-repl")
        closed = cli.ok("close", sid3)
        assert f"closed {sid3}" in closed.stderr

    rows = [json.loads(line) for line in cli.ok("sessions", "--json", "--all").stdout.splitlines()]
    assert sorted(r["id"] for r in rows) == sorted([sid, sid2, sid3])
    assert {r["id"]: r["state"] for r in rows}[sid3] == "closed"
    assert "hello" in cli.ok("show", sid).stdout

    before = cli.ok("export", sid, "--format", "jsonl").stdout
    loaded = cli.run("load", sid, "--no-repl")
    lost = ("No previous sessions found", "Invalid session identifier")
    if agent == "gemini" and loaded.returncode == 8 and any(words in loaded.stderr for words in lost):
        # gemini-cli 0.61.0 at times cannot find its own saved chat on load, also for a session
        # made by a plain `prompt` (its bug, observed: its chat files are named by the
        # minute, and two sessions started in one minute lose one); acpcli says so truthfully.
        assert "its transcript is still recorded here" in loaded.stderr
        pytest.xfail("gemini could not find its own session on load (its bug)")
    assert loaded.returncode == 0, loaded.stderr
    assert cli.ok("export", sid, "--format", "jsonl").stdout == before
