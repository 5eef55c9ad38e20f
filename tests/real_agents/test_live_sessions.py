"""Opt-in: live sessions with the real agents (codex-acp, claude-agent-acp, gemini --acp).

Runs only when ``ACPCLI_REAL_AGENTS`` names the launcher of the offline real agents (e.g.
``ACPCLI_REAL_AGENTS=/path/to/launch.py``); skipped with a reason otherwise.

Checked per agent, as issue 23 asks: ``ID=$(acpcli new --no-repl)`` then three ``prompt
--session ID``: one agent process for all of them (the same pid), every answer right, gemini
continuing each time (without a host it forgets a session continued twice from new
processes); ``stop`` leaves no process.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.helpers.procs import running

LAUNCHER = os.environ.get("ACPCLI_REAL_AGENTS", "")
pytestmark = pytest.mark.skipif(
    not LAUNCHER or not Path(LAUNCHER).is_file(),
    reason="set ACPCLI_REAL_AGENTS to the real agents' launch.py to run these",
)
TIMEOUT = 300


@pytest.mark.parametrize("agent", ["codex", "claude", "gemini"])
def test_new_and_three_prompts_share_one_warm_agent(agent: str, tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / "README.md").write_text("hello from the README\n")
    env = {**os.environ, "ACPCLI_HOME": str(tmp_path / "acpcli"), "ACPCLI_KEEP_ALIVE": "120"}
    cmd = shlex.join([sys.executable, LAUNCHER, agent, "--keep-home", "--home", str(tmp_path / "agent-home")])

    def acpcli(*args: str) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run(
            [sys.executable, "-m", "acpcli", *args], env=env, cwd=work, stdin=subprocess.DEVNULL,
            capture_output=True, text=True, timeout=TIMEOUT, check=False,
        )
        assert proc.returncode == 0, f"{args}: exit {proc.returncode}\n{proc.stderr}"
        return proc

    def live() -> list[dict[str, object]]:
        return [json.loads(line) for line in acpcli("sessions", "--live", "--json").stdout.splitlines() if line]

    sid = acpcli("new", "--no-repl", "--cmd", cmd).stdout.strip()
    try:
        (started,) = live()
        for n in range(3):
            out = acpcli("prompt", "--session", sid, "--permissions", "allow", f"hello number {n}").stdout
            assert "Hello from the fake model" in out and f"hello number {n}" in out
        (after,) = live()
        assert (after["pid"], after["agentPid"]) == (started["pid"], started["agentPid"])
        shown = acpcli("show", sid).stdout
        assert shown.index("hello number 0") < shown.index("hello number 1") < shown.index("hello number 2")
    finally:
        acpcli("stop", "--all")
    deadline = time.monotonic() + 15
    pids = [int(started["pid"]), int(started["agentPid"])]  # type: ignore[call-overload]
    while any(running(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(running(pid) for pid in pids)


@pytest.mark.parametrize("agent", ["codex", "claude", "gemini"])
def test_load_with_keep_alive_leaves_a_warm_agent_for_the_next_prompts(agent: str, tmp_path: Path) -> None:
    """A session made without a host, loaded with ``--keep-alive``: the host that did the load
    answers the next two prompts with its agent (gemini, which only loads, continues too; it
    forgets a session continued twice from new processes, so the load is its first)."""
    work = tmp_path / "work"
    work.mkdir()
    env = {**os.environ, "ACPCLI_HOME": str(tmp_path / "acpcli"), "ACPCLI_KEEP_ALIVE": "0"}
    cmd = shlex.join([sys.executable, LAUNCHER, agent, "--keep-home", "--home", str(tmp_path / "agent-home")])

    def acpcli(*args: str) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run(
            [sys.executable, "-m", "acpcli", *args], env=env, cwd=work, stdin=subprocess.DEVNULL,
            capture_output=True, text=True, timeout=TIMEOUT, check=False,
        )
        assert proc.returncode == 0, f"{args}: exit {proc.returncode}\n{proc.stderr}"
        return proc

    sid = acpcli("new", "--no-repl", "--cmd", cmd).stdout.strip()
    try:
        acpcli("load", sid, "--no-repl", "--keep-alive", "120")
        (started,) = [json.loads(line) for line in acpcli("sessions", "--live", "--json").stdout.splitlines() if line]
        for n in range(2):
            out = acpcli("prompt", "--session", sid, "--keep-alive", "120", "--permissions", "allow", f"warm {n}").stdout
            assert "Hello from the fake model" in out and f"warm {n}" in out
        (after,) = [json.loads(line) for line in acpcli("sessions", "--live", "--json").stdout.splitlines() if line]
        assert (after["pid"], after["agentPid"]) == (started["pid"], started["agentPid"])
        # a second load joins the host: the transcript from the store, no second agent
        assert "warm 1" in acpcli("load", sid, "--no-repl", "--keep-alive", "120").stdout
        (joined,) = [json.loads(line) for line in acpcli("sessions", "--live", "--json").stdout.splitlines() if line]
        assert joined["agentPid"] == started["agentPid"]
    finally:
        acpcli("stop", "--all")
    deadline = time.monotonic() + 15
    pids = [int(started["pid"]), int(started["agentPid"])]  # type: ignore[call-overload]
    while any(running(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(running(pid) for pid in pids)
