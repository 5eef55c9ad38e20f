"""A locked index never loses a conversation, end to end.

Another process holding the write lock of ``ACPCLI_HOME/acpcli.db`` (``BEGIN EXCLUSIVE`` in
``tests/helpers/lock_holder.py``, as a concurrent acpcli or a user's ``sqlite3`` shell would)
is not a storage failure: a live command keeps its writes, in order, while the turn goes on
streaming, and writes them when the lock is free. ``sessions rm``, ``sessions prune`` and
``close`` wait (``ACPCLI_LOCK_WAIT`` seconds, short here) and then say who holds the lock in
one line, exit 18.

The locks are held longer than the 5 s acpcli used to wait before going on in memory for
the rest of the run (the bug these tests pin); they are durations of a lock, never timing
assertions.
"""

from __future__ import annotations

import select
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from acpcli.errors import ExitCode

from .conftest import TIMEOUT, AgentTrace, Cli, error_line
from .pty import REPLY, new_args

LOCK_HOLDER = Path(__file__).resolve().parent.parent / "helpers" / "lock_holder.py"
#: Longer than the 5 s busy timeout after which acpcli used to give the database up.
LONG_LOCK = 6.5
TRACEBACK_MARKS = ("Traceback", "Exception Group", "OperationalError")


class Holder:
    """A process holding the database's write lock until :meth:`release`."""

    def __init__(self, db: Path) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, str(LOCK_HOLDER), str(db)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        )
        assert self.proc.stdout is not None and self.proc.stdout.readline() == "locked\n"
        self.since = time.monotonic()
        self.pid = self.proc.pid

    def hold_until(self, seconds: float) -> None:
        """Keep the lock until it has been held ``seconds`` in all."""
        left = self.since + seconds - time.monotonic()
        if left > 0:
            time.sleep(left)

    def release(self) -> None:
        if self.proc.returncode is not None:
            return
        out, _ = self.proc.communicate("\n", timeout=TIMEOUT)
        assert (self.proc.returncode, out) == (0, "released\n")


@contextmanager
def locked(cli: Cli) -> Iterator[Holder]:
    holder = Holder(cli.home / "acpcli.db")
    try:
        yield holder
    finally:
        holder.release()


def session_of(proc: subprocess.CompletedProcess[str]) -> str:
    """The id ``prompt`` names on stderr (``session ID``)."""
    ids = [line.split()[1] for line in proc.stderr.splitlines() if line.startswith("session ")]
    assert len(ids) == 1, proc.stderr
    return ids[0]


def assert_no_traceback(stderr: str) -> None:
    assert not any(mark in stderr for mark in TRACEBACK_MARKS), stderr


def slow_demo(trace: AgentTrace) -> str:
    """The demo agent answering ``slow`` in about 8 s (chunks of 60 characters 30 ms apart)."""
    return trace.demo_cmd(extra=["--delay", "0.03", "--chunk-size", "60"])


def test_a_lock_during_a_turn_loses_no_update(cli: Cli, trace: AgentTrace, tmp_path: Path) -> None:
    cmd = slow_demo(trace)
    control = cli.elsewhere(tmp_path / "control-home")  # the same turn, no lock: what must be stored
    wanted = control.show(session_of(control.ok("prompt", "--cmd", cmd, "slow no-permission")))
    cli.ok("prompt", "--cmd", trace.demo_cmd(), "hello no-permission")  # the index exists, one session in it

    with locked(cli) as holder:
        proc = subprocess.Popen(
            cli.argv("prompt", "--cmd", cmd, "slow no-permission"), env=cli.env(), cwd=cli.cwd,
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        try:
            assert proc.stdout is not None
            # The answer streams while the lock is held.
            assert select.select([proc.stdout], [], [], TIMEOUT)[0], "no output while the database was locked"
            holder.hold_until(LONG_LOCK)
            holder.release()
            out, err = proc.communicate(timeout=TIMEOUT)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert proc.returncode == ExitCode.OK, err
    assert_no_traceback(err)
    assert "cannot save" not in err, err
    session = session_of(subprocess.CompletedProcess([], 0, out, err))
    assert cli.show(session) == wanted  # every update of the turn was stored
    trace.assert_all_gone()


def test_a_lock_during_the_second_prompt_of_a_repl_loses_nothing(spawn, cli: Cli, trace: AgentTrace) -> None:
    pty = spawn(*new_args(trace, "--chunk-size", "200"))
    pty.prompt()
    pty.say("first no-permission")
    pty.expect(REPLY)
    pty.prompt()
    with locked(cli) as holder:
        pty.say("slow second no-permission")
        pty.expect(REPLY)  # the turn goes on on the screen while the lock is held
        pty.prompt()
        holder.hold_until(LONG_LOCK)
    for words in ("third no-permission", "fourth no-permission"):
        pty.say(words)
        pty.expect(REPLY)
        pty.prompt()
    status, session = pty.leave()
    assert status == ExitCode.OK, pty.seen[-2000:]
    assert "cannot save" not in pty.seen
    shown = cli.show(session)
    for words in ("first no-permission", "slow second no-permission", "third no-permission", "fourth no-permission"):
        assert f"> {words}" in shown, shown
    assert shown.count(REPLY) == 4, shown
    trace.assert_all_gone()


def test_a_lock_past_the_end_of_a_turn_is_waited_for(cli: Cli, trace: AgentTrace, tmp_path: Path) -> None:
    """The turn ends while the lock is still held: acpcli waits for it (ACPCLI_LOCK_WAIT) and
    then writes everything."""
    cmd = trace.demo_cmd()
    control = cli.elsewhere(tmp_path / "control-home")
    wanted = control.show(session_of(control.ok("prompt", "--cmd", cmd, "hello no-permission")))
    cli.ok("prompt", "--cmd", cmd, "warm up no-permission")
    with locked(cli) as holder:
        proc = subprocess.Popen(
            cli.argv("prompt", "--cmd", cmd, "hello no-permission"), env=cli.env({"ACPCLI_LOCK_WAIT": "30"}),
            cwd=cli.cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        try:
            holder.hold_until(LONG_LOCK)
            assert proc.poll() is None  # still waiting for the lock to save the turn
            holder.release()
            out, err = proc.communicate(timeout=TIMEOUT)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert proc.returncode == ExitCode.OK, err
    assert_no_traceback(err)
    assert REPLY in out
    assert cli.show(session_of(subprocess.CompletedProcess([], 0, out, err))) == wanted
    trace.assert_all_gone()


def test_a_lock_that_outlasts_the_wait_ends_a_prompt_with_exit_18(cli: Cli, trace: AgentTrace) -> None:
    """The answer is on the screen; what could not be saved is said in one line with who holds the lock."""
    cli.ok("prompt", "--cmd", trace.demo_cmd(), "warm up no-permission")
    with locked(cli) as holder:
        proc = cli.run("prompt", "--cmd", trace.demo_cmd(), "hello no-permission", env={"ACPCLI_LOCK_WAIT": "1"})
        assert proc.returncode == ExitCode.BUSY, proc.stderr
        assert REPLY in proc.stdout
        assert_no_traceback(proc.stderr)
        errors = [line for line in proc.stderr.splitlines() if line.startswith("acpcli: error: ")]
        assert len(errors) == 1, proc.stderr
        assert f"locked by another process (pid {holder.pid})" in errors[0]
        assert "session updates not saved" in errors[0]
    trace.assert_all_gone()


@pytest.mark.parametrize("command", ["rm", "prune", "close"])
def test_housekeeping_on_a_held_lock_names_the_holder_and_exits_18(cli: Cli, trace: AgentTrace, command: str) -> None:
    session = session_of(cli.ok("prompt", "--cmd", trace.demo_cmd(), "hello no-permission"))
    args = {
        "rm": ["sessions", "rm", session, "--yes"],
        "prune": ["sessions", "prune", "--older-than", "2999-01-01", "--yes"],
        "close": ["close", session],
    }[command]
    with locked(cli) as holder:
        proc = cli.run(*args, env={"ACPCLI_LOCK_WAIT": "1"})
        if command == "close":  # the agent closed it; the record could not say so
            proc = subprocess.CompletedProcess(proc.args, proc.returncode, "", proc.stderr)
        message = error_line(proc, ExitCode.BUSY)
        assert f"acpcli.db is locked by another process (pid {holder.pid})" in message, message
    assert_no_traceback(proc.stderr)
    # Free again: the same command works.
    cli.ok(*args)
    if command == "close":
        assert [rec["state"] for rec in cli.index()] == ["closed"]
    else:
        assert cli.index() == []
    trace.assert_all_gone()
