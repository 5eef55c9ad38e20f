"""Opt-in: permission policies with the real agents (codex-acp, claude-agent-acp, gemini --acp).

Runs only when ``ACPCLI_REAL_AGENTS`` names the launcher (the real-agent harness's ``launch.py``); skipped
with a reason otherwise. In a script (stdin not a terminal) the default policy is ``deny``: an
"edit the README" turn leaves the README as it was, and stderr names what acpcli refused, the
policy, and how to change it. codex then ends the turn ``cancelled`` (exit 11) and the error's
hint says a refusal may be why. ``--permissions allow`` lets the same edit through.
"""

from __future__ import annotations

import os
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

README = "hello from the README\n"


def run(agent: str, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    cmd = shlex.join([sys.executable, LAUNCHER, agent])
    env = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "ACPCLI_LOG_FILE")}
    return subprocess.run(
        [sys.executable, "-m", "acpcli", "prompt", "--cmd", cmd, *args],
        cwd=cwd, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=300, check=False,
    )


@pytest.fixture
def project(tmp_path: Path) -> Path:
    path = tmp_path / "project"
    path.mkdir()
    (path / "README.md").write_text(README)
    return path


@pytest.mark.parametrize("agent", ["codex", "claude", "gemini"])
def test_a_script_refuses_the_edit_and_says_so(agent: str, project: Path) -> None:
    proc = run(agent, project, "edit the README")
    assert (project / "README.md").read_text() == README, proc.stderr
    refused = [line for line in proc.stderr.splitlines() if line.startswith("acpcli: refused ")]
    assert refused, proc.stderr
    # piped, nobody can be asked: the line says so and offers what works here (issue 22)
    assert all(
        "(policy deny): nobody can be asked here" in line and "use --permissions allow" in line for line in refused
    ), refused
    assert any("kind edit" in line for line in refused), refused
    if proc.returncode == ExitCode.CANCELLED:
        assert "acpcli: hint: acpcli refused" in proc.stderr, proc.stderr
    else:
        assert proc.returncode == 0, proc.stderr
    if agent == "codex":  # codex ends the turn when an edit is refused
        assert proc.returncode == ExitCode.CANCELLED, proc.stderr


@pytest.mark.parametrize("agent", ["codex", "gemini"])
def test_allow_lets_the_edit_through(agent: str, project: Path) -> None:
    proc = run(agent, project, "--permissions", "allow", "edit the README")
    assert proc.returncode == 0, proc.stderr
    assert "edited by the fake model" in (project / "README.md").read_text()
    assert "acpcli: refused" not in proc.stderr
