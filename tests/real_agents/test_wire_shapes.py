"""Opt-in: what the real agents (codex-acp, claude-agent-acp, gemini --acp) send fits the models.

Runs only when ``ACPCLI_REAL_AGENTS`` names the launcher (the real-agent harness's ``launch.py``). Each
agent gets a few turns (think, plan, run a command, edit with permission) and a load, with the
wire logged; then every frame the agent sent is held to the run-time contract of
:mod:`acpcli.protocol` *and* to the whole generated models: answers to ``check_result`` and
their result model, ``session/update`` to the ``SessionUpdate`` models (as its own kind, the
promise ``tests/protocol/test_store_shapes.py`` makes for the store), requests to their params
model, error objects to ``check_error``. Extra members are fine (the models keep them);
anything the models reject is listed.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from acpcli import protocol
from tests.helpers import model_reading as reading

LAUNCHER = os.environ.get("ACPCLI_REAL_AGENTS", "")

pytestmark = pytest.mark.skipif(
    not LAUNCHER or not Path(LAUNCHER).is_file(),
    reason="real agents are opt-in: set ACPCLI_REAL_AGENTS to the real-agent harness's launch.py",
)


def acpcli(cwd: Path, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "ACPCLI_LOG_FILE")}
    env["ACPCLI_HOME"] = str(home)
    return subprocess.run(
        [sys.executable, "-m", "acpcli", *args],
        cwd=cwd, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=300, check=False,
    )


def frames(log: Path) -> list[tuple[str, dict[str, Any]]]:
    """(direction, message) for every JSON frame of the wire log, in order."""
    out = []
    for line in log.read_text(encoding="utf-8").splitlines():
        _stamp, direction, frame = line.split(" ", 2)
        message = json.loads(frame)
        for item in message if isinstance(message, list) else [message]:
            out.append((direction, item))
    return out


def rejected(log: Path, version: int = 1) -> tuple[list[str], set[str]]:
    """What the models reject among the frames the agent sent, and the methods seen."""
    asked: dict[Any, str] = {}
    problems: list[str] = []
    seen: set[str] = set()
    for direction, message in frames(log):
        method = message.get("method")
        if direction == "->":
            if method is not None and "id" in message:
                asked[message["id"]] = method
            continue
        try:
            if method == "session/update":
                seen |= {method, message["params"]["update"].get("sessionUpdate")}
                protocol.parse_params(version, method, message["params"])
                if reading.parse_update(version, message["params"]["update"]) is None:
                    problems.append(f"update {message['params']['update'].get('sessionUpdate')}: unknown or malformed")
            elif method is not None:
                seen.add(method)
                protocol.check_params(version, method, message.get("params"))
                protocol.parse_params(version, method, message.get("params"))
            elif "error" in message:
                seen.add(asked.get(message.get("id"), "?"))
                protocol.check_error(message["error"])
            else:
                answered = asked.get(message.get("id"), "?")
                seen.add(answered)
                protocol.check_result(version, answered, message.get("result"))
                if protocol.result_model(version, answered) is not None:
                    reading.parse_result(version, answered, message.get("result"))
        except (ValueError, KeyError) as err:
            problems.append(f"{method or asked.get(message.get('id'))}: {err}".splitlines()[0][:300])
    return problems, seen


@pytest.mark.parametrize("agent", ["codex", "claude", "gemini"])
def test_every_frame_the_agent_sends_fits_the_models(agent: str, tmp_path: Path) -> None:
    project, home, log = tmp_path / "project", tmp_path / "home", tmp_path / "wire.log"
    project.mkdir()
    (project / "README.md").write_text("hello from the README\n")
    cmd = shlex.join([sys.executable, LAUNCHER, agent, "--keep-home", "--home", str(tmp_path / "agent-home")])
    common = ("--cmd", cmd, "--log-file", str(log), "--permissions", "allow")
    sessions = []
    for text in ("think about it", "make a plan", "run it in the shell", "edit the README"):
        proc = acpcli(project, home, "prompt", *common, text)
        assert proc.returncode == 0, proc.stderr
        sessions += re.findall(r"^session (\S+)$", proc.stderr, re.M)
    assert sessions
    # a replay (gemini answers first and replays after; its second load of a session is its bug)
    acpcli(project, home, "load", sessions[-1], "--cmd", cmd, "--log-file", str(log), "--no-repl")
    problems, seen = rejected(log)
    assert {"initialize", "session/new", "session/prompt", "session/request_permission", "session/load"} <= seen
    assert {"agent_message_chunk", "tool_call", "tool_call_update"} <= seen
    if agent == "gemini":  # it edits through the client's file system
        assert {"fs/read_text_file", "fs/write_text_file"} <= seen
    assert problems == []
