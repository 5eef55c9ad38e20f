"""A stuck agent cannot hang a setup step: ``timeout`` / ``ACPCLI_TIMEOUT`` bound every
request but a turn and a login; exit 15 with one line, and no process left behind."""

from __future__ import annotations

import shlex
import sys
import time
from pathlib import Path

import pytest

from acpcli.errors import ExitCode
from tests.cli.conftest import AgentTrace, Cli, error_line

MUTE = Path(__file__).resolve().parents[1] / "agents" / "mute_agent.py"


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
