"""Opt-in checks of what transcripts keep, with the real agents (``ACPCLI_REAL_AGENTS`` names the
launcher; skipped otherwise):

- gemini's ``[MODE_UPDATE] yolo``, sent outside any turn after a mode change, is a message of
  its own in ``show``, not the tail of the previous answer.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

LAUNCHER = os.environ.get("ACPCLI_REAL_AGENTS", "")
pytestmark = pytest.mark.skipif(
    not LAUNCHER or not Path(LAUNCHER).is_file(),
    reason="real-agent tests are opt-in: set ACPCLI_REAL_AGENTS to the real agents' launch.py",
)

TIMEOUT = 300.0  # a real agent may think for a while; a guard against hangs only


def _acpcli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "acpcli", *args], cwd=cwd, stdin=subprocess.DEVNULL,
        capture_output=True, text=True, timeout=TIMEOUT, check=False,
    )


def test_gemini_mode_update_between_turns_is_its_own_message(tmp_path: Path) -> None:
    gemini = shlex.join([sys.executable, LAUNCHER, "gemini"])
    # one host keeps the gemini process (its sessions do not survive a restart well)
    first = _acpcli("prompt", "--cmd", gemini, "--keep-alive", "120", "--permissions", "allow", "hello", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    sid = first.stderr.split()[1]
    try:
        again = _acpcli("prompt", "--session", sid, "--keep-alive", "120", "--mode", "yolo", "again", cwd=tmp_path)
        assert again.returncode == 0, again.stderr
        shown = _acpcli("show", sid, cwd=tmp_path).stdout
    finally:
        _acpcli("stop", sid, cwd=tmp_path)
    assert "[MODE_UPDATE] yolo" in shown, shown
    assert "answer.[MODE_UPDATE]" not in shown and "\n\n[MODE_UPDATE] yolo\n\n> again" in shown, shown
