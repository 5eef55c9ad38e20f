"""Opt-in end-to-end checks of agent settings and protocol reuse with the real agents.

Run only when ``ACPCLI_REAL_AGENTS`` names the launcher (the real-agent harness's ``launch.py``); skipped
with a reason otherwise, so ``make test`` neither needs nor waits for them. What they check:

- gemini offers its models the v1 ``models`` way (no model config option): ``--model``
  switches with ``session/set_model`` and the turn runs; an unknown model exits 2 naming the
  models gemini offers; ``/model`` in the REPL lists them and the toolbar shows the current one;
- ``prompt --session`` after ``new`` speaks the protocol recorded with the session.
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
    reason="real-agent tests are opt-in: set ACPCLI_REAL_AGENTS to the real agents' launch.py",
)

TIMEOUT = 300.0  # a real agent may think for a while; a guard against hangs only


def _agent(name: str, home: Path | None = None) -> str:
    argv = [sys.executable, LAUNCHER, name]
    if home is not None:
        argv += ["--keep-home", "--home", str(home)]
    return shlex.join(argv)


def _acpcli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "acpcli", *args], cwd=cwd, stdin=subprocess.DEVNULL,
        capture_output=True, text=True, timeout=TIMEOUT, check=False,
    )


def test_gemini_model_flag_uses_set_model(tmp_path: Path) -> None:
    proc = _acpcli("prompt", "--cmd", _agent("gemini"), "--model", "gemini-2.5-pro", "--raw", "say hi", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    frames = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    sent = [f["message"] for f in frames if f.get("direction") == "send" and "method" in f["message"]]
    set_model = [m["params"] for m in sent if m["method"] == "session/set_model"]
    assert [p["modelId"] for p in set_model] == ["gemini-2.5-pro"]
    assert not any(m["method"] == "session/set_config_option" for m in sent)
    assert any(m["method"] == "session/prompt" for m in sent)


def test_gemini_unknown_model_names_the_models_it_offers(tmp_path: Path) -> None:
    proc = _acpcli("prompt", "--cmd", _agent("gemini"), "--model", "no-such-model", "hi", cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert "is not a value of model (choose from:" in proc.stderr and "gemini-2.5-pro" in proc.stderr


def test_gemini_repl_model_lists_switches_and_shows_in_the_toolbar(tmp_path: Path) -> None:
    from tests.cli.pty import Pty

    pty = Pty([sys.executable, "-m", "acpcli", "new", "--cmd", _agent("gemini")], tmp_path)
    pty.child.timeout = 120
    try:
        pty.prompt()
        pty.expect(r"model: ")  # the toolbar names the current model
        pty.say("/model")
        pty.expect(r"\* \S+")  # the current one starred
        pty.expect(r"gemini-2\.5-pro")
        pty.prompt()
        pty.say("/model gemini-2.5-pro")
        pty.expect(r"Model: gemini-2\.5-pro")
        pty.prompt()
        pty.expect(r"model: gemini-2\.5-pro")
        pty.child.send("\x04")  # Ctrl-D
        assert pty.wait() == 0
    finally:
        pty.kill()


GEMINI_LOAD = (
    "gemini 0.61.0 answers this session/load with -32603 'No previous sessions found for this "
    "project' (seen with the main branch too; not a protocol matter)"
)


@pytest.mark.parametrize(
    "name", ["codex", "claude", pytest.param("gemini", marks=pytest.mark.xfail(reason=GEMINI_LOAD, strict=False))]
)
def test_prompt_session_speaks_the_recorded_protocol(tmp_path: Path, name: str) -> None:
    home = tmp_path / "agent-home"
    agent = _agent(name, home)
    first = _acpcli("prompt", "--cmd", agent, "--protocol", "1", "--permissions", "allow", "hello", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    index = _acpcli("sessions", "--json", cwd=tmp_path)
    rows = [json.loads(line) for line in index.stdout.splitlines() if line.strip()]
    assert len(rows) == 1 and rows[0]["protocol"] == "1"
    again = _acpcli("prompt", "--session", rows[0]["id"], "--permissions", "allow", "and again", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
