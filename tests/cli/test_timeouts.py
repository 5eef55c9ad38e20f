"""A stuck agent cannot hang a setup step: ``--timeout`` / ``ACPCLI_TIMEOUT`` / ``timeout``
bound every request but a turn and a login; exit 15 with one line, and no process left behind.
``prompt --timeout`` also bounds the turn: ``session/cancel``, a moment for the agent's answer
(else it is killed), what arrived stored, exit 15 with one line.

Peers: ``tests/peers/mute_agent.py`` (stops answering at a given method) and
``tests/peers/stall.py`` (a turn that streams one chunk, then waits for a cancel -- or, with
``--ignore-cancel``, ignores it -- with a ``sleep`` child in its process group)."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

import pytest

from acpcli.errors import ExitCode
from tests.cli.conftest import AgentTrace, Cli, error_line
from tests.helpers.procs import running

MUTE = Path(__file__).resolve().parents[1] / "peers" / "mute_agent.py"
STALL = Path(__file__).resolve().parents[1] / "peers" / "stall.py"
PART_ONE = "streamed part one"  # what the stall agent streams before it stalls


def mute_cmd(trace: AgentTrace, until: str) -> str:
    """The mute agent under the trace's pid wrapper (so the test can see it is gone)."""
    script = f"echo $$ >> {shlex.quote(str(trace.pid_file))}; exec \"$@\""
    return shlex.join(["sh", "-c", script, "mute-agent", sys.executable, str(MUTE), "--until", until])


@pytest.mark.parametrize("until", ["initialize", "session/new"])
def test_a_setup_step_the_agent_never_answers_ends_with_exit_15(cli: Cli, trace: AgentTrace, until: str) -> None:
    started = time.monotonic()
    proc = cli.run("prompt", "--cmd", mute_cmd(trace, until), "hi", env={"ACPCLI_TIMEOUT": "1"})
    took = time.monotonic() - started
    message = error_line(proc, ExitCode.TIMEOUT)
    assert message.startswith(f"{until}: the agent did not answer within 1 s"), message
    assert "ACPCLI_TIMEOUT" in proc.stderr  # the hint says how to wait longer
    assert took < 20, f"took {took:.1f} s"  # bounded by the timeout and the shutdown, not for ever
    trace.assert_all_gone()


def test_the_config_timeout_bounds_a_step_and_the_environment_wins(cli: Cli, trace: AgentTrace) -> None:
    (cli.home / "config.toml").write_text("timeout = 1\n")
    proc = cli.run("prompt", "--cmd", mute_cmd(trace, "session/new"), "hi")
    assert "within 1 s" in error_line(proc, ExitCode.TIMEOUT)
    proc = cli.run("prompt", "--cmd", mute_cmd(trace, "session/new"), "hi", env={"ACPCLI_TIMEOUT": "2"})
    assert "within 2 s" in error_line(proc, ExitCode.TIMEOUT)
    trace.assert_all_gone()


def test_a_bad_timeout_is_a_clear_error(cli: Cli, trace: AgentTrace) -> None:
    proc = cli.run("prompt", "--cmd", mute_cmd(trace, "session/new"), "hi", env={"ACPCLI_TIMEOUT": "soon"})
    assert "ACPCLI_TIMEOUT must be a number of seconds" in error_line(proc, ExitCode.CONFIG)
    trace.assert_all_gone()


def test_a_turn_is_not_bounded_by_the_step_timeout(cli: Cli, trace: AgentTrace) -> None:
    # With a 0.1 s pause between chunks, the demo agent's turn lasts several seconds: far
    # longer than the one-second limit on each setup step.
    started = time.monotonic()
    proc = cli.run("prompt", "--cmd", trace.demo_cmd(extra=["--delay", "0.1"]), "hi", env={"ACPCLI_TIMEOUT": "1"})
    assert proc.returncode == 0, proc.stderr
    assert time.monotonic() - started > 2  # the turn really outlasted the step limit
    assert "did not answer within" not in proc.stderr
    trace.assert_all_gone()


def test_the_timeout_flag_wins_over_the_environment_and_the_config(cli: Cli, trace: AgentTrace) -> None:
    (cli.home / "config.toml").write_text("timeout = 30\n")
    proc = cli.run("prompt", "--cmd", mute_cmd(trace, "session/new"), "--timeout", "1", "hi", env={"ACPCLI_TIMEOUT": "30"})
    message = error_line(proc, ExitCode.TIMEOUT)
    assert message.startswith("session/new: the agent did not answer within 1 s"), message
    assert "--timeout" in proc.stderr  # the hint names the flag too
    trace.assert_all_gone()


def test_timeout_0_is_no_limit(cli: Cli, trace: AgentTrace) -> None:
    """``--timeout 0`` lifts the environment's one-second limit: the mute agent is still
    being waited for well after that second (then the test stops it)."""
    argv = cli.argv("prompt", "--cmd", mute_cmd(trace, "session/new"), "--timeout", "0", "hi")
    proc = subprocess.Popen(
        argv, env=cli.env({"ACPCLI_TIMEOUT": "1"}), cwd=cli.cwd, stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        with pytest.raises(subprocess.TimeoutExpired):
            proc.communicate(timeout=4)
    finally:
        proc.terminate()  # SIGTERM: acpcli stops the agent and exits 143
        _out, err = proc.communicate(timeout=30)
    assert proc.returncode == ExitCode.TERMINATED, err
    assert "did not answer" not in err
    trace.assert_all_gone()


@pytest.mark.parametrize("value", ["-1", "nan", "inf", "1e999", "soon", "", "0x10"])
def test_a_bad_timeout_flag_is_a_usage_error_before_anything_starts(cli: Cli, trace: AgentTrace, value: str) -> None:
    proc = cli.run("prompt", "--cmd", trace.demo_cmd(), "--timeout", value, "hi")
    message = error_line(proc, ExitCode.USAGE)
    assert message == f"--timeout must be a number of seconds, 0 or more (0: no limit); got {value!r}", message
    assert trace.pids() == []  # no agent was started
    assert not (cli.home / "acpcli.db").exists()


def test_inf_in_the_environment_is_refused_like_other_bad_values(cli: Cli, trace: AgentTrace) -> None:
    proc = cli.run("prompt", "--cmd", trace.demo_cmd(), "hi", env={"ACPCLI_TIMEOUT": "inf"})
    assert "ACPCLI_TIMEOUT must be a number of seconds" in error_line(proc, ExitCode.CONFIG)


@pytest.mark.parametrize("command", ["new", "load", "resume", "close", "auth", "sessions --remote"])
def test_every_command_that_starts_an_agent_takes_timeout(cli: Cli, trace: AgentTrace, command: str) -> None:
    """The flag bounds the first setup step of each (the mute agent never answers ``initialize``)."""
    sid = cli.new(trace.demo_cmd()) if command == "close" else "some-session"
    mute = mute_cmd(trace, "initialize")
    args = {
        "new": ["new", "--no-repl", "--cmd", mute],
        "load": ["load", sid, "--no-repl", "--cmd", mute],
        "resume": ["resume", sid, "--no-repl", "--cmd", mute],
        "close": ["close", sid, "--cmd", mute],
        "auth": ["auth", "--cmd", mute],
        "sessions --remote": ["sessions", "--remote", "--cmd", mute],
    }[command]
    proc = cli.run(*args, "--timeout", "1", env={"ACPCLI_TIMEOUT": "60"})
    assert error_line(proc, ExitCode.TIMEOUT).startswith("initialize: the agent did not answer within 1 s")
    trace.assert_all_gone()
    assert "--timeout SECONDS" in cli.ok(*command.split()[:1], "--help").stdout


def test_timeout_on_sessions_needs_remote(cli: Cli) -> None:
    assert "--timeout goes with --remote" in error_line(cli.run("sessions", "--timeout", "5"), ExitCode.USAGE)


#: The stall test's --timeout: it bounds each setup step too, so it leaves room for an agent
#: starting on a loaded machine (the turn itself stalls for ever).
STALL_TIMEOUT = 4


def _stall(cli: Cli, tmp_path: Path, *flags: str) -> tuple[subprocess.CompletedProcess[str], Path, list[int]]:
    """``prompt --timeout STALL_TIMEOUT`` against the stall agent: the result, its marks file,
    the pids of the agent and its child."""
    marks, children, agents = tmp_path / "marks", tmp_path / "children", tmp_path / "agents"
    cmd = shlex.join([sys.executable, str(STALL), *flags])
    env = {"STALL_MARK_FILE": str(marks), "CHILD_PID_FILE": str(children), "PID_FILE": str(agents)}
    proc = cli.run("prompt", "--cmd", cmd, "--timeout", str(STALL_TIMEOUT), "hello stall", env=env)
    pids = [int(p) for f in (agents, children) if f.exists() for p in f.read_text().split()]
    return proc, marks, pids


def _gone(pids: list[int], limit: float = 5.0) -> bool:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if not any(running(pid) for pid in pids):
            return True
        time.sleep(0.05)
    for pid in pids:  # leave nothing behind even when the test fails
        try:
            os.kill(pid, 9)
        except (ProcessLookupError, PermissionError):
            pass
    return False


@pytest.mark.parametrize("flags", [(), ("--ignore-cancel",)], ids=["answers-cancel", "ignores-cancel"])
def test_a_turn_that_outlasts_timeout_is_cancelled_stored_and_exits_15(
    cli: Cli, tmp_path: Path, flags: tuple[str, ...]
) -> None:
    proc, marks, pids = _stall(cli, tmp_path, *flags)
    assert proc.returncode == ExitCode.TIMEOUT, proc.stderr
    assert PART_ONE in proc.stdout  # what arrived was shown
    sid = cli.index()[0]["id"]
    errors = [line for line in proc.stderr.splitlines() if line.startswith("acpcli: ")]
    assert len(errors) == 1 and "Traceback" not in proc.stderr, proc.stderr
    how = "the agent did not answer the cancel and was stopped" if flags else "cancelled"
    assert errors[0] == (
        f"acpcli: error: the turn outlasted --timeout {STALL_TIMEOUT} s: {how}; what arrived is kept (acpcli show {sid})"
    ), proc.stderr
    assert "cancel" in marks.read_text().split(), "no session/cancel reached the agent"
    assert pids and _gone(pids), "the agent or its child was left running"
    shown = cli.show(sid)
    assert "hello stall" in shown and PART_ONE in shown, shown


def test_a_turn_within_timeout_is_not_touched(cli: Cli, trace: AgentTrace) -> None:
    proc = cli.run("prompt", "--cmd", trace.demo_cmd(), "--timeout", "60", "hi")
    assert proc.returncode == 0, proc.stderr
    assert "Demo agent reply" in proc.stdout
    trace.assert_all_gone()
