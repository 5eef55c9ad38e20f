"""Opt-in: SIGTERM, SIGHUP and an unwritable output with the real agents (codex-acp,
claude-agent-acp, gemini --acp).

Runs only when ``ACPCLI_REAL_AGENTS`` names the launcher (the real-agent harness's ``launch.py``);
skipped with a reason otherwise. The fake model's ``slow`` prompt streams ten chunks 0.5 s
apart: a signal in the middle cancels the turn, kills the agent's whole process group (node
and everything it started), stores the prompt and what streamed, and exits 143 / 129.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from acpcli.errors import ExitCode
from tests.helpers.procs import child_group, group_members

LAUNCHER = os.environ.get("ACPCLI_REAL_AGENTS", "")

pytestmark = pytest.mark.skipif(
    not LAUNCHER or not Path(LAUNCHER).is_file(),
    reason="real agents are opt-in: set ACPCLI_REAL_AGENTS to the real-agent harness's launch.py",
)

AGENTS = ["codex", "claude", "gemini"]


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "ACPCLI_LOG_FILE")}


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads process groups from /proc")
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
@pytest.mark.parametrize("agent", AGENTS)
def test_a_signal_mid_turn(agent: str, sig: signal.Signals, tmp_path: Path) -> None:
    cmd = shlex.join([sys.executable, LAUNCHER, agent])
    proc = subprocess.Popen(
        [sys.executable, "-m", "acpcli", "prompt", "--cmd", cmd, "slow"],
        cwd=tmp_path, env=_env(), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    with proc:
        assert proc.stdout is not None
        first = proc.stdout.readline()  # the echoed prompt: the turn has started
        assert first, proc.stderr.read() if proc.stderr else ""
        group = child_group(proc.pid)
        time.sleep(1.5)  # a few chunks in
        proc.send_signal(sig)
        _out, err = proc.communicate(timeout=60)
    code = ExitCode.TERMINATED if sig == signal.SIGTERM else ExitCode.HANGUP
    assert proc.returncode == code, err
    assert f"acpcli: stopped by {sig.name}" in err
    assert "Traceback" not in err
    deadline = time.monotonic() + 5
    while group_members(group) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not group_members(group), "the agent's process group outlived acpcli"
    listing = subprocess.run(
        [sys.executable, "-m", "acpcli", "sessions", "--json"], env=_env(), capture_output=True, text=True, check=True
    )
    (row,) = [json.loads(line) for line in listing.stdout.splitlines() if line.strip()]
    session_id = row["id"]
    shown = subprocess.run(
        [sys.executable, "-m", "acpcli", "show", session_id], env=_env(), capture_output=True, text=True, check=True
    ).stdout
    assert "slow" in shown and "This" in shown, shown


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
@pytest.mark.parametrize("agent", AGENTS)
def test_output_on_a_full_disk(agent: str, tmp_path: Path) -> None:
    cmd = shlex.join([sys.executable, LAUNCHER, agent])
    with open("/dev/full", "w") as full:
        proc = subprocess.run(
            [sys.executable, "-m", "acpcli", "prompt", "--cmd", cmd, "hello"],
            cwd=tmp_path, env=_env(), stdin=subprocess.DEVNULL, stdout=full, stderr=subprocess.PIPE, text=True,
            timeout=300, check=False,
        )
    assert proc.returncode == ExitCode.OUTPUT, proc.stderr
    assert "acpcli: error: cannot write the transcript: No space left on device" in proc.stderr
    assert "Traceback" not in proc.stderr
