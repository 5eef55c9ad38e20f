"""The host process itself (``python -I -m acpcli.host``, as a command starts it) with a
directory where its lock or its socket goes: its one line on stdout is the error (exit 16,
the message naming the path, the ``--keep-alive 0`` hint), and it exits 16 before any agent
is started: never a traceback, never silence."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from acpcli.errors import ExitCode
from acpcli.session.hostwire import address
from tests.cli.conftest import TIMEOUT, Cli


@pytest.mark.parametrize("what", ["lock", "socket"])
def test_the_host_reports_a_directory_in_its_way_in_its_one_line(cli: Cli, what: str) -> None:
    sid = cli.new(cli.trace.demo_cmd(protocol=2))
    started = len(cli.trace.pids())
    path = address.lock_path(sid) if what == "lock" else address.socket_path(sid)
    path.mkdir(parents=True)
    spec = {"command": "continue", "session_id": sid, "keep_alive": 5, "options": {"cwd": str(cli.cwd)}}
    proc = subprocess.run(
        [sys.executable, "-I", "-m", "acpcli.host"], input=json.dumps(spec), env=cli.env(), cwd=cli.cwd,
        capture_output=True, text=True, timeout=TIMEOUT, check=False,
    )
    assert proc.returncode == ExitCode.STORAGE, proc.stderr
    (line,) = proc.stdout.splitlines()
    answer = json.loads(line)
    assert answer["t"] == "error" and answer["exit"] == ExitCode.STORAGE, answer
    assert answer["message"].startswith(f"the session host cannot use {path}: "), answer
    assert "--keep-alive 0" in answer["hint"], answer
    assert "Traceback" not in proc.stderr, proc.stderr
    assert len(cli.trace.pids()) == started  # no agent was started for it
    assert path.is_dir() and not address.lock_path(sid).is_file()
