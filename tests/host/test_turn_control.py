"""A turn in the host under its control (:mod:`acpcli.session.control`): a cancel that
carries a grace (``kill_after``: a warm prompt's ``--timeout``) stops an agent that ignores
it once the grace has passed, and only then; a cancel without one never stops the agent.

Peer: ``tests/peers/stall.py`` (a turn that streams one chunk, then waits for a cancel; with
``--ignore-cancel`` it ignores it, with a ``sleep`` child in its process group)."""

from __future__ import annotations

import shlex
import sys
import time
from pathlib import Path
from typing import Any

from acpcli.errors import ExitCode
from tests.cli.conftest import Cli
from tests.helpers.procs import running
from tests.host.conftest import LIVE, wait_for

STALL = Path(__file__).resolve().parents[1] / "peers" / "stall.py"


def _stall_session(cli: Cli, tmp_path: Path, *flags: str) -> tuple[str, dict[str, str]]:
    env = {
        **LIVE, "STALL_MARK_FILE": str(tmp_path / "marks"), "CHILD_PID_FILE": str(tmp_path / "children"),
        "PID_FILE": str(tmp_path / "agents"),
    }
    cmd = shlex.join([sys.executable, str(STALL), *flags])
    return cli.ok("new", "--no-repl", "--cmd", cmd, env=env).stdout.strip(), env


def _pids(tmp_path: Path) -> list[int]:
    return [int(p) for name in ("agents", "children") if (tmp_path / name).exists() for p in (tmp_path / name).read_text().split()]


def _streaming(tmp_path: Path) -> bool:
    marks = tmp_path / "marks"
    return marks.exists() and "streaming" in marks.read_text().split()


def test_a_cancel_with_a_grace_stops_an_agent_that_ignores_it_after_the_grace(
    hosts: Cli, raw: Any, tmp_path: Path
) -> None:
    sid, _env = _stall_session(hosts, tmp_path, "--ignore-cancel")
    client = raw(sid)
    client.send({"t": "prompt", "text": "hello stall", "settings": []})
    client.until("start")
    wait_for(lambda: _streaming(tmp_path), what="the agent's first chunk")
    pids = _pids(tmp_path)
    assert pids and all(running(pid) for pid in pids)
    grace = 1.5
    sent = time.monotonic()
    client.send({"t": "cancel", "kill_after": grace})
    ended = client.until("end", "error", timeout=60)
    waited = time.monotonic() - sent
    assert ended["t"] == "error", ended  # the agent went: the turn failed, the command reports the timeout
    assert waited >= grace - 0.1, f"stopped {waited:.2f} s after the cancel, within its grace of {grace} s"
    wait_for(lambda: not any(running(pid) for pid in pids), 30, "the agent and its child to end")


def test_a_cancel_without_a_grace_leaves_the_agent_running(hosts: Cli, raw: Any, tmp_path: Path) -> None:
    sid, _env = _stall_session(hosts, tmp_path, "--ignore-cancel")
    client = raw(sid)
    client.send({"t": "prompt", "text": "hello stall", "settings": []})
    client.until("start")
    wait_for(lambda: _streaming(tmp_path), what="the agent's first chunk")
    client.send({"t": "cancel"})
    time.sleep(2.0)  # longer than any grace would be
    assert all(running(pid) for pid in _pids(tmp_path))
    client.send({"t": "status"})
    assert client.until("status")["session"] == sid  # the host still answers, its turn still runs


def test_a_warm_prompt_past_its_timeout_stops_an_agent_that_ignores_the_cancel(hosts: Cli, tmp_path: Path) -> None:
    cli = hosts
    sid, env = _stall_session(cli, tmp_path, "--ignore-cancel")
    proc = cli.run("prompt", "--session", sid, "--timeout", "2", "hello stall", env=env)
    assert proc.returncode == ExitCode.TIMEOUT, proc.stderr
    assert "Traceback" not in proc.stderr
    # (how the line words the end differs from a turn without a host: the lead knows)
    assert "acpcli: error: the turn outlasted --timeout 2 s: " in proc.stderr
    pids = _pids(tmp_path)
    assert pids
    wait_for(lambda: not any(running(pid) for pid in pids), 30, "the agent and its child to end")
    assert "streamed part one" in cli.show(sid)  # what arrived is kept
