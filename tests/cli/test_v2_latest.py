"""The later v2 draft (``--protocol 2-latest``, or ``protocol = "2-latest"`` in an agent's
config): ``session/load`` is gone, ``capabilities.session`` implies resume/close/list, and a
load is ``session/resume`` with ``replayFrom: {type: "start"}``.

Peer: the demo agent with ``--v2-flavour latest``, which refuses ``session/load`` and logs
any method or field it did not advertise (``assert_no_unadvertised``); what went over the
wire is read from acpcli's own wire log (``--log-file``).
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

from acpcli.errors import ExitCode

from .conftest import AgentTrace, Cli, error_line


def _latest(trace: AgentTrace) -> str:
    return trace.demo_cmd(protocol=2, extra=["--v2-flavour", "latest"])


def _sent(log: Path) -> list[dict[str, Any]]:
    frames = [json.loads(line.split(" ", 2)[2]) for line in log.read_text().splitlines() if line.strip()]
    return [f for f in frames if "method" in f]


def test_a_2_latest_session_lives_its_whole_life_on_the_later_draft(
    cli: Cli, trace: AgentTrace, tmp_path: Path
) -> None:
    log = tmp_path / "wire.log"
    sid = cli.new(_latest(trace), "--protocol", "2-latest")
    cli.ok("prompt", "--session", sid, "-q", "remember this")
    assert next(r for r in cli.index() if r["id"] == sid)["protocol"] == "2-latest"
    # no --protocol from here on: the recorded choice is spoken again
    loaded = cli.ok("load", sid, "--no-repl", "--log-file", str(log))
    assert "remember this" in loaded.stdout
    cli.ok("resume", sid, "--no-repl")
    listed = cli.ok("sessions", "--remote", "--cmd", _latest(trace), "--json", "--protocol", "2-latest")
    assert sid in listed.stdout
    cli.ok("close", sid)
    loads = [f for f in _sent(log) if f["method"] in ("session/load", "session/resume")]
    assert [(f["method"], f["params"].get("replayFrom")) for f in loads] == [("session/resume", {"type": "start"})]
    trace.assert_no_unadvertised()
    trace.assert_all_gone()


def test_export_is_the_same_after_a_2_latest_load(cli: Cli, trace: AgentTrace) -> None:
    sid = cli.new(_latest(trace), "--protocol", "2-latest")
    cli.ok("prompt", "--session", sid, "-q", "first question")
    before = cli.ok("export", sid, "--format", "text").stdout
    cli.ok("load", sid, "--no-repl")
    assert cli.ok("export", sid, "--format", "text").stdout == before


def test_plain_2_keeps_the_seed_draft_reading(cli: Cli, trace: AgentTrace) -> None:
    """The same agent read as the seed's draft advertises no load or resume marker, so
    acpcli calls neither (and says so) rather than guess."""
    sid = cli.new(_latest(trace), "--protocol", "2-latest")
    message = error_line(cli.run("load", sid, "--no-repl", "--protocol", "2"), ExitCode.CAPABILITY)
    assert "does not support session/load" in message
    trace.assert_no_unadvertised()


def test_2_latest_from_the_agent_config(cli: Cli, trace: AgentTrace, acpcli_home: Path, tmp_path: Path) -> None:
    argv = shlex.split(_latest(trace))
    (acpcli_home / "config.toml").write_text(f'[agents.late]\ncommand = {json.dumps(argv)}\nprotocol = "2-latest"\n')
    sid = cli.ok("new", "--no-repl", "--agent", "late").stdout.strip()
    cli.ok("prompt", "--session", sid, "-q", "hello")
    log = tmp_path / "wire.log"
    cli.ok("load", sid, "--no-repl", "--log-file", str(log))
    assert [f["method"] for f in _sent(log) if f["method"].startswith("session/")][:1] == ["session/resume"]
    trace.assert_no_unadvertised()


def test_2_latest_against_a_v1_agent_is_a_handshake_error(cli: Cli, trace: AgentTrace) -> None:
    proc = cli.run("new", "--no-repl", "--cmd", trace.demo_cmd(protocol=1), "--protocol", "2-latest")
    assert proc.returncode == ExitCode.HANDSHAKE, proc.stderr
    assert "--protocol 2-latest" in proc.stderr
    trace.assert_all_gone()
