"""A host that stops answering (SIGSTOP) is noticed by its clients and ended by ``stop``; a
quiet agent is never taken for a dead host; ``stop --all`` tells every host before it waits."""

from __future__ import annotations

import os
import signal
import subprocess

from acpcli.errors import ExitCode
from tests.cli.conftest import TIMEOUT, Cli, error_line
from tests.helpers.procs import running

from .conftest import LIVE, flood_session, live_rows, raw_client, wait_for

#: Clients and `stop` give up on a silent host after two seconds.
QUICK = {**LIVE, "ACPCLI_HOST_TIMEOUT": "2"}


def _resume(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGCONT)
    except ProcessLookupError:
        pass


def test_a_stopped_host_is_noticed_mid_turn_and_stop_ends_it(hosts: Cli) -> None:
    cli = hosts
    sid = flood_session(cli)
    (row,) = live_rows(cli)
    client = subprocess.Popen(
        cli.argv("prompt", "--session", sid, "flood 2000 20 0.01"), env=cli.env(QUICK), cwd=cli.cwd,
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    assert client.stdout is not None
    while "[c000010]" not in client.stdout.readline():
        assert client.poll() is None
    os.kill(row["pid"], signal.SIGSTOP)
    try:
        _out, err = client.communicate(timeout=TIMEOUT)
        assert client.returncode == ExitCode.HOST_LOST, err
        assert [line for line in err.splitlines() if line.startswith("acpcli: error:")] == [
            "acpcli: error: the session host stopped answering (waited 2 s) mid-turn"
        ]
        stopped = cli.run("stop", sid, env=QUICK)
        assert stopped.returncode == 0, stopped.stderr
        assert f"stopped {sid}" in stopped.stderr
        assert not running(row["pid"]) and not running(row["agentPid"])
    finally:
        _resume(row["pid"])
    assert live_rows(cli) == []
    assert "echo: again" in cli.ok("prompt", "--session", sid, "again", env=QUICK).stdout


def test_a_stopped_host_between_turns_is_not_waited_on_forever(hosts: Cli) -> None:
    cli = hosts
    sid = flood_session(cli)
    (row,) = live_rows(cli)
    os.kill(row["pid"], signal.SIGSTOP)
    try:
        proc = cli.run("prompt", "--session", sid, "hello?", env=QUICK)
        assert "does not answer" in error_line(proc, ExitCode.HOST_LOST)
        assert cli.run("stop", "--all", env=QUICK).returncode == 0
        assert not running(row["pid"]) and not running(row["agentPid"])
    finally:
        _resume(row["pid"])


def test_a_quiet_agent_is_not_taken_for_a_dead_host(hosts: Cli) -> None:
    cli = hosts
    sid = flood_session(cli)
    proc = cli.run("prompt", "--session", sid, "quiet 5", env={**LIVE, "ACPCLI_HOST_TIMEOUT": "1"})
    assert proc.returncode == 0, proc.stderr
    assert "after the quiet" in proc.stdout


def test_stop_all_tells_every_host_before_it_waits_for_any(hosts: Cli) -> None:
    """One host does not answer (stopped); another runs a turn with a prompt queued behind it.
    The second is told at once: its queued prompt is not sent, whatever the first one does."""
    cli = hosts
    from acpcli.session.hostwire.address import key

    first, second = sorted([flood_session(cli), flood_session(cli)], key=key)  # the order stop --all takes
    rows = {row["id"]: row for row in live_rows(cli)}
    running_turn = raw_client(second)
    running_turn.send({"t": "prompt", "text": "flood 300 20 0.01", "settings": []})
    running_turn.until("start")
    waiting = raw_client(second)
    waiting.send({"t": "prompt", "text": "queued behind", "settings": []})
    assert waiting.until("queued")["ahead"] == 1
    os.kill(rows[first]["pid"], signal.SIGSTOP)
    try:
        proc = cli.run("stop", "--all", env=QUICK)
        assert proc.returncode == 0, proc.stderr
        assert f"stopped {first}" in proc.stderr and f"stopped {second}" in proc.stderr
    finally:
        _resume(rows[first]["pid"])
    told = waiting.until("error")
    assert "was stopped before this prompt's turn" in told["message"]
    assert told["exit"] == ExitCode.HOST_LOST
    for row in rows.values():
        wait_for(lambda row=row: not running(row["pid"]) and not running(row["agentPid"]), 20, "the hosts to end")
    assert "queued behind" not in cli.show(second)
    running_turn.close()
    waiting.close()


def test_an_attached_repl_notices_a_stopped_host(hosts: Cli, spawn) -> None:  # type: ignore[no-untyped-def]
    cli = hosts
    sid = flood_session(cli)
    (row,) = live_rows(cli)
    repl = spawn("attach", sid, env=QUICK)
    repl.expect("attached to")
    repl.prompt()
    repl.say("flood 3000 20 0.01")
    repl.expect("c000010")  # the turn streams
    os.kill(row["pid"], signal.SIGSTOP)
    try:
        repl.expect("acpcli: error: the session host stopped answering")
        assert repl.wait() == ExitCode.HOST_LOST
        assert "Traceback" not in repl.seen
        assert cli.run("stop", sid, env=QUICK).returncode == 0
    finally:
        _resume(row["pid"])
