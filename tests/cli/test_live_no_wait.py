"""``prompt --session ID --no-wait`` on a live session whose host runs (or has queued) a turn
exits 18 at once, in one line, and the busy turn goes on untouched (issue 32): through the
CLI, and through the host's socket."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import time

from acpcli.errors import ExitCode

from .conftest import TIMEOUT, Cli, error_line
from .test_live_sessions import LIVE, live_rows
from .test_live_sessions import (
    hosts as hosts,  # the fixture: every host stopped, nothing left behind
)


def _busy_turn(cli: Cli, sid: str, text: str) -> subprocess.Popen[str]:
    """A script's turn on ``sid``, running in its host once this returns."""
    proc = subprocess.Popen(
        cli.argv("prompt", "--session", sid, text), env=cli.env(LIVE), cwd=cli.cwd,
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    deadline = time.monotonic() + TIMEOUT
    while not live_rows(cli)[0]["busy"]:
        assert time.monotonic() < deadline and proc.poll() is None, "the turn never ran"
        time.sleep(0.05)
    return proc


def _live_session(cli: Cli) -> str:
    # turns at full speed, but for `slow` ones (which outlast every command below by far)
    return cli.ok("new", "--no-repl", "--cmd", cli.trace.demo_cmd(protocol=1), env=LIVE).stdout.strip()


def test_no_wait_on_a_busy_live_session_exits_18_and_the_turn_goes_on(hosts: Cli) -> None:
    cli = hosts
    sid = _live_session(cli)
    busy = _busy_turn(cli, sid, "slow busy one")
    refused = cli.run("prompt", "--session", sid, "--no-wait", "not now", env=LIVE)
    line = error_line(refused, ExitCode.BUSY)
    assert f"session {sid} is busy" in line and "is running a turn on it" in line, line
    assert refused.stdout == ""
    # a turn waiting behind the busy one makes it busy too
    waiting = subprocess.Popen(
        cli.argv("prompt", "--session", sid, "waits its turn"), env=cli.env(LIVE), cwd=cli.cwd,
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    deadline = time.monotonic() + TIMEOUT
    while live_rows(cli)[0]["queued"] != 1:
        assert time.monotonic() < deadline, "the second turn was never queued"
        time.sleep(0.05)
    assert busy.poll() is None  # (still running: the refusal did not wait for it)
    error_line(cli.run("prompt", "--session", sid, "--no-wait", "still not", env=LIVE), ExitCode.BUSY)
    busy.send_signal(signal.SIGINT)  # its person gives up: the turn was running all along
    busy_out, _ = busy.communicate(timeout=TIMEOUT)
    assert busy.returncode == ExitCode.INTERRUPTED and "slow busy one" in busy_out
    waited_out, waited_err = waiting.communicate(timeout=TIMEOUT)
    assert waiting.returncode == 0, waited_err
    assert "waits its turn" in waited_out
    shown = cli.show(sid)
    assert "slow busy one" in shown and "waits its turn" in shown
    assert "not now" not in shown and "still not" not in shown  # nothing of the refused was sent
    assert "fine now" in cli.ok("prompt", "--session", sid, "--no-wait", "fine now", env=LIVE).stdout


def test_the_host_answers_a_no_wait_prompt_busy_before_queueing_it(hosts: Cli) -> None:
    from acpcli.session.hostwire.address import socket_path

    cli = hosts
    sid = _live_session(cli)
    busy = _busy_turn(cli, sid, "slow busy one")
    with socket.socket(socket.AF_UNIX) as sock:
        sock.settimeout(TIMEOUT)
        sock.connect(str(socket_path(sid)))
        reader = sock.makefile("rb")
        sock.sendall(b'{"t": "hello", "pid": 4242, "role": "prompt"}\n')
        assert json.loads(reader.readline())["t"] == "ready"
        sock.sendall(b'{"t": "prompt", "text": "not now", "settings": [], "wait": false}\n')
        answer = json.loads(reader.readline())
    assert answer["t"] == "error" and answer["exit"] == ExitCode.BUSY, answer  # not "queued"
    assert "is busy" in answer["message"]
    assert live_rows(cli)[0]["busy"] and busy.poll() is None  # the busy turn is untouched
    busy.terminate()
    busy.communicate(timeout=TIMEOUT)
    assert "not now" not in cli.show(sid)
