"""Signals and sudden exits, end to end: SIGTERM, SIGHUP (the terminal closed), a second
Ctrl-C and ``kill -9``, in ``prompt`` and in the REPL.

Whatever stops acpcli, a turn in progress is cancelled, the agent's whole process group is
killed (no agent and no agent child left running), what arrived is stored (``show`` has the
prompt and the streamed part), and the exit status says which signal it was (143 / 129 / 130),
with one line on stderr and no traceback.

Peers: ``tests/peers/stall.py`` (v1, official SDK: streams one chunk, starts a ``sleep``
child, then waits for a cancel; ``--ignore-cancel`` never ends the turn) and the demo agent's
``slow`` turn (v2 and v1).
"""

from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pexpect
import pytest

from acpcli.errors import ExitCode
from tests.helpers.procs import running

from .conftest import TIMEOUT, AgentTrace, Cli
from .pty import CTRL_C, Pty, new_args

STALL = Path(__file__).resolve().parent.parent / "peers" / "stall.py"
PART_ONE = "streamed part one"
TRACEBACK_MARKS = ("Traceback", "Exception Group", "Error:")


def _stall_cmd(*flags: str) -> str:
    return shlex.join([sys.executable, str(STALL), *flags])


def _wait_for(path: Path, text: str, proc: subprocess.Popen[str] | None = None, limit: float = TIMEOUT) -> None:
    """Wait until ``path`` holds a line ``text`` (the stall agent's marks)."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if path.exists() and text in path.read_text().split():
            return
        if proc is not None and proc.poll() is not None:
            pytest.fail(f"acpcli ended early ({proc.returncode}): {proc.communicate()[1]}")
        time.sleep(0.05)
    pytest.fail(f"{text!r} never appeared in {path}")


def _pids(path: Path) -> list[int]:
    return [int(p) for p in path.read_text().split()] if path.exists() else []


def _gone(pids: list[int], limit: float = 5.0) -> list[int]:
    """The pids still alive after ``limit`` seconds (an empty list is what tests want)."""
    deadline = time.monotonic() + limit
    left = pids
    while time.monotonic() < deadline:
        left = [pid for pid in pids if running(pid)]
        if not left:
            return []
        time.sleep(0.05)
    return left


def _reap(pids: list[int]) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


class Stall:
    """One ``acpcli prompt`` against the stall agent, with its marks and pid files."""

    def __init__(self, cli: Cli, tmp_path: Path, *flags: str, env: dict[str, str] | None = None) -> None:
        self.cli = cli
        self.marks = tmp_path / "marks"
        self.children = tmp_path / "children"
        self.agents = tmp_path / "agents"
        extra = {"STALL_MARK_FILE": str(self.marks), "CHILD_PID_FILE": str(self.children), "PID_FILE": str(self.agents)}
        extra.update(env or {})
        self.proc = subprocess.Popen(
            cli.argv("prompt", "--cmd", _stall_cmd(*flags), "hello stall"),
            env=cli.env(extra), cwd=cli.cwd, stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )

    def streaming(self) -> None:
        _wait_for(self.marks, "streaming", self.proc)

    def finish(self) -> tuple[int, str, str]:
        out, err = self.proc.communicate(timeout=TIMEOUT)
        return self.proc.returncode, out, err

    def processes(self) -> list[int]:
        return _pids(self.agents) + _pids(self.children)

    def session_id(self) -> str:
        rows = self.cli.index()
        assert len(rows) == 1, rows
        return str(rows[0]["id"])


@pytest.fixture
def reaper():  # type: ignore[no-untyped-def]
    """Pids to kill at teardown whatever happened (only the ``kill -9`` test leaves any)."""
    pids: list[int] = []
    yield pids
    _reap(pids)


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGTERM, ExitCode.TERMINATED), (signal.SIGHUP, ExitCode.HANGUP)])
def test_a_signal_during_a_turn_cancels_kills_the_group_and_stores_the_turn(
    cli: Cli, tmp_path: Path, reaper: list[int], sig: signal.Signals, code: ExitCode
) -> None:
    run = Stall(cli, tmp_path)
    try:
        run.streaming()
        reaper.extend(run.processes())
        run.proc.send_signal(sig)
        status, out, err = run.finish()
    finally:
        if run.proc.poll() is None:
            run.proc.kill()
    assert status == code, err
    assert err.splitlines()[-1] == f"acpcli: stopped by {sig.name}", err
    assert not any(mark in err for mark in TRACEBACK_MARKS), err
    assert PART_ONE in out
    assert "cancel" in run.marks.read_text().split(), "no session/cancel reached the agent"
    assert run.processes() and not _gone(run.processes()), "agent processes left behind"
    shown = cli.show(run.session_id())
    assert "hello stall" in shown and PART_ONE in shown, shown


def test_sigterm_kills_an_agent_that_ignores_the_cancel(cli: Cli, tmp_path: Path, reaper: list[int]) -> None:
    run = Stall(cli, tmp_path, "--ignore-cancel")
    try:
        run.streaming()
        reaper.extend(run.processes())
        started = time.monotonic()
        run.proc.send_signal(signal.SIGTERM)
        status, _out, err = run.finish()
        took = time.monotonic() - started
    finally:
        if run.proc.poll() is None:
            run.proc.kill()
    assert status == ExitCode.TERMINATED, err
    assert took < 8, f"SIGTERM took {took:.1f}s to end the command"
    assert not _gone(run.processes()), "agent processes left behind"
    assert PART_ONE in cli.show(run.session_id())


def test_a_second_ctrl_c_exits_130_with_one_line(cli: Cli, tmp_path: Path, reaper: list[int]) -> None:
    run = Stall(cli, tmp_path, "--ignore-cancel")
    try:
        run.streaming()
        reaper.extend(run.processes())
        run.proc.send_signal(signal.SIGINT)
        _wait_for(run.marks, "cancel", run.proc)
        run.proc.send_signal(signal.SIGINT)
        status, _out, err = run.finish()
    finally:
        if run.proc.poll() is None:
            run.proc.kill()
    assert status == ExitCode.INTERRUPTED, err
    assert not any(mark in err for mark in TRACEBACK_MARKS), err
    assert err.splitlines()[-1] == "acpcli: interrupted", err
    assert len(err.splitlines()) <= 4, err  # session id, "cancelling…", "interrupted again…", this
    assert not _gone(run.processes()), "agent processes left behind"


@pytest.mark.parametrize("protocol", [2, 1])
def test_sigterm_during_a_demo_turn(cli: Cli, trace: AgentTrace, protocol: int) -> None:
    proc = subprocess.Popen(
        cli.argv("prompt", "--cmd", trace.demo_cmd(protocol=protocol), "no-permission go slow"),
        env=cli.env(), cwd=cli.cwd, stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    assert proc.stdout is not None
    with proc:
        for line in proc.stdout:
            if "Streaming slowly" in line:
                break
        proc.send_signal(signal.SIGTERM)
        _out, err = proc.communicate(timeout=TIMEOUT)
    assert proc.returncode == ExitCode.TERMINATED, err
    assert not any(mark in err for mark in TRACEBACK_MARKS), err
    trace.assert_all_gone()
    (row,) = cli.index()
    shown = cli.show(row["id"])
    assert "go slow" in shown and "Streaming slowly" in shown, shown


def test_kill_9_during_a_pause_leaves_the_prompt_and_the_chunks_on_disk(
    cli: Cli, tmp_path: Path, reaper: list[int]
) -> None:
    """A batch does not wait for the next update: what arrived is on disk within ~100 ms."""
    run = Stall(cli, tmp_path)
    try:
        run.streaming()
        reaper.extend(run.processes())
        time.sleep(0.5)  # well past the 100 ms bound; the stream is paused the whole time
        run.proc.kill()
        run.proc.communicate(timeout=TIMEOUT)
    finally:
        if run.proc.poll() is None:
            run.proc.kill()
    shown = cli.show(run.session_id())
    assert "hello stall" in shown and PART_ONE in shown, shown


# -- the REPL on a terminal ---------------------------------------------------------------


def _repl_turn(pty: Pty) -> None:
    pty.prompt()
    pty.say("no-permission go slow")
    pty.expect("Streaming slowly")


def _exit_status(pty: Pty) -> int:
    pty.expect(pexpect.EOF)
    pty.child.close()
    assert pty.child.signalstatus is None, f"killed by signal {pty.child.signalstatus}"
    return int(pty.child.exitstatus)


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGTERM, ExitCode.TERMINATED), (signal.SIGHUP, ExitCode.HANGUP)])
@pytest.mark.parametrize("during", ["turn", "idle"])
def test_a_signal_in_the_repl(spawn, cli: Cli, trace: AgentTrace, sig: signal.Signals, code: ExitCode, during: str) -> None:  # type: ignore[no-untyped-def]
    pty = spawn(*new_args(trace))
    if during == "turn":
        _repl_turn(pty)
    else:
        pty.prompt()
    os.kill(pty.child.pid, sig)
    assert _exit_status(pty) == code, pty.seen[-2000:]
    tail = pty.seen[-400:]
    assert f"acpcli: stopped by {sig.name}" in tail, tail
    assert "Traceback" not in pty.seen
    assert "\x1b[?2004l" in tail  # bracketed paste off again: the terminal was restored
    trace.assert_all_gone()
    if during == "turn":
        (row,) = cli.index()
        shown = cli.show(row["id"])
        assert "go slow" in shown and "Streaming slowly" in shown, shown


def test_closing_the_terminal_under_the_repl(spawn, cli: Cli, trace: AgentTrace) -> None:  # type: ignore[no-untyped-def]
    """The terminal goes away (its master side closed): the kernel's SIGHUP ends acpcli
    with 129, the agent is killed and the turn is stored."""
    pty = spawn(*new_args(trace))
    _repl_turn(pty)
    pty.child.ptyproc.fileobj.close()  # what closing a terminal window does
    _pid, status = os.waitpid(pty.child.pid, 0)
    pty.child.ptyproc.terminated = True
    assert os.waitstatus_to_exitcode(status) == ExitCode.HANGUP
    trace.assert_all_gone()
    (row,) = cli.index()
    shown = cli.show(row["id"])
    assert "go slow" in shown and "Streaming slowly" in shown, shown


def test_ctrl_c_twice_in_the_repl_exits_130(spawn, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    marks, children = tmp_path / "marks", tmp_path / "children"
    monkeypatch.setenv("STALL_MARK_FILE", str(marks))  # the pty's environment is os.environ
    monkeypatch.setenv("CHILD_PID_FILE", str(children))
    pty = spawn("new", "--cmd", _stall_cmd("--ignore-cancel"))
    pty.prompt()
    pty.say("hello")
    pty.expect(PART_ONE)
    pty.child.send(CTRL_C)
    _wait_for(marks, "cancel")
    pty.child.send(CTRL_C)
    assert _exit_status(pty) == ExitCode.INTERRUPTED, pty.seen[-1500:]
    assert not _gone(_pids(children)), "the agent's child was left behind"
    assert "Traceback" not in pty.seen
    assert re.search(r"interrupted again", pty.seen)


def test_a_reader_that_goes_away_during_a_pause_stops_the_agent(cli: Cli, tmp_path: Path, reaper: list[int]) -> None:
    """``acpcli prompt … | head -1`` while the agent pauses: acpcli does not wait for its next
    write to notice; it leaves quietly (exit 0, as for any broken pipe), kills the agent's
    group and keeps what arrived."""
    run = Stall(cli, tmp_path)
    try:
        run.streaming()
        reaper.extend(run.processes())
        assert run.proc.stdout is not None
        run.proc.stdout.close()  # the reader goes away; the stream stays paused
        started = time.monotonic()
        run.proc.wait(timeout=TIMEOUT)
        took = time.monotonic() - started
        assert run.proc.stderr is not None
        err = run.proc.stderr.read()
        run.proc.stderr.close()
    finally:
        if run.proc.poll() is None:
            run.proc.kill()
    assert run.proc.returncode == ExitCode.OK, err
    assert took < 5, f"took {took:.1f}s to notice"
    assert not any(mark in err for mark in TRACEBACK_MARKS), err
    assert not _gone(run.processes()), "agent processes left behind"
    assert PART_ONE in cli.show(run.session_id())
