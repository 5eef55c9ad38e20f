"""Commands that continue a session speak the protocol it was recorded with.

``resume``, ``load``, ``prompt --session``/``--last`` and ``close`` use, in this order:
``--protocol``; the configured agent's ``protocol``; the protocol recorded with the session
(when the agent command is the one recorded); ``auto``. The demo agent (which speaks v1 and
v2) logs the version of every connection (``speaking vN``), so each test reads what was
spoken rather than trusting acpcli's own account.
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

from .conftest import AgentTrace, Cli

SPOKEN = re.compile(r"speaking v(\d)")


def _spoken(trace: AgentTrace) -> list[str]:
    return SPOKEN.findall(trace.stderr())


def test_a_v1_session_is_continued_over_v1_by_a_peer_that_speaks_v2(cli: Cli, trace: AgentTrace) -> None:
    cmd = trace.demo_cmd(protocol=2)
    sid = cli.new(cmd, "--protocol", "1")
    cli.ok("prompt", "--session", sid, "-q", "hello")
    cli.ok("prompt", "--last", "--cmd", cmd, "-q", "again")
    cli.ok("resume", sid, "--no-repl")
    loaded = cli.ok("load", sid, "--no-repl")
    assert "hello" in loaded.stdout and "again" in loaded.stdout
    cli.ok("close", sid)
    assert _spoken(trace) == ["1"] * 6  # without the record, auto would have spoken v2
    trace.assert_no_unadvertised()
    trace.assert_all_gone()


def test_protocol_flag_wins_and_is_recorded_for_the_next_command(cli: Cli, trace: AgentTrace) -> None:
    cmd = trace.demo_cmd(protocol=2)
    sid = cli.new(cmd, "--protocol", "1")
    cli.ok("prompt", "--session", sid, "--protocol", "2", "-q", "over v2 now")
    cli.ok("prompt", "--session", sid, "-q", "still v2")
    assert _spoken(trace) == ["1", "2", "2"]
    row = next(r for r in cli.index() if r["id"] == sid)
    assert row["protocolVersion"] == 2 and row["protocol"] == "2"


def test_another_agent_command_does_not_inherit_the_recorded_protocol(cli: Cli, trace: AgentTrace) -> None:
    sid = cli.new(trace.demo_cmd(protocol=2), "--protocol", "1")
    other = trace.demo_cmd(protocol=2, extra=["--chunk-size", "5"])  # another command line
    cli.ok("prompt", "--session", sid, "--cmd", other, "-q", "hello")
    assert _spoken(trace) == ["1", "2"]


def test_the_configured_protocol_wins_over_the_recorded_one(
    cli: Cli, trace: AgentTrace, acpcli_home: Path
) -> None:
    argv = shlex.split(trace.demo_cmd(protocol=2))
    config = acpcli_home / "config.toml"
    config.write_text(f"[agents.d]\ncommand = {json.dumps(argv)}\n")
    sid = cli.ok("new", "--no-repl", "--agent", "d", "--protocol", "1").stdout.strip()
    cli.ok("prompt", "--session", sid, "-q", "recorded: v1")
    config.write_text(f"[agents.d]\ncommand = {json.dumps(argv)}\nprotocol = \"2\"\n")
    cli.ok("prompt", "--session", sid, "-q", "configured: v2")
    assert _spoken(trace) == ["1", "1", "2"]


def test_a_bad_configured_protocol_is_a_config_error(cli: Cli, acpcli_home: Path) -> None:
    (acpcli_home / "config.toml").write_text('[agents.d]\ncommand = "true"\nprotocol = "3"\n')
    proc = cli.run("new", "--no-repl", "--agent", "d")
    assert proc.returncode != 0 and "protocol must be one of auto, 1, 2, 2-latest" in proc.stderr
