"""End-to-end tests of ``acpcli export`` and ``acpcli show``: transcripts from the local index.

The real program runs in subprocesses against the real demo agent (tracing wrapper of
``tests/cli/conftest.py``). Invariants: ``export`` and ``show`` never start an agent (checked
by the trace's pid file *and* by running them with a PATH on which the agent cannot be
found); exporting a session, then ``acpcli load ID --no-repl``, then exporting again gives
the same messages in every format, whatever replay style and protocol version the agent uses.
"""

from __future__ import annotations

import json
import shlex
import subprocess
from pathlib import Path

import pytest

from acpcli.errors import ExitCode
from tests.cli.conftest import AgentTrace, Cli, error_line

FORMATS = ("markdown", "jsonl", "text")
ESC = "\x1b"


def _session_with_two_turns(cli: Cli, cmd: str) -> str:
    """A session holding two turns (the second cut short by ``max tokens``)."""
    first = cli.ok("prompt", "--cmd", cmd, "first question")
    sid = first.stderr.split()[1]  # "session ID" on stderr
    second = cli.run("prompt", "--session", sid, "second question, max tokens")
    assert second.returncode == ExitCode.MAX_TOKENS, second.stderr
    return sid


def _exports(cli: Cli, sid: str) -> dict[str, str]:
    """``export SID --format F`` for every format, run at the same time."""
    procs = cli.run_all(*(["export", sid, "--format", fmt] for fmt in FORMATS))
    for proc in procs:
        assert proc.returncode == 0, proc.stderr
        assert proc.stderr == ""
    return {fmt: proc.stdout for fmt, proc in zip(FORMATS, procs, strict=False)}


def _messages(jsonl: str) -> list[tuple[str, str]]:
    """(role, text) of every ``message`` event, in transcript order."""
    events = [json.loads(line) for line in jsonl.splitlines()]
    return [(e["role"], e["text"]) for e in events if e["type"] == "message"]


@pytest.mark.parametrize(
    ("protocol", "replay"),
    [(2, "interleaved"), (1, "chunks")],
    ids=["v2-interleaved", "v1-chunks"],
)
def test_export_is_the_same_before_and_after_load(cli: Cli, trace: AgentTrace, protocol: int, replay: str) -> None:
    cmd = trace.demo_cmd(protocol=protocol, replay=replay)
    sid = _session_with_two_turns(cli, cmd)
    before = _exports(cli, sid)
    loaded = cli.ok("load", sid, "--no-repl")
    after = _exports(cli, sid)
    assert after == before
    # and what load printed is the replayed transcript: the same as the text export
    assert loaded.stdout == before["text"]
    messages = _messages(before["jsonl"])
    users = [text for role, text in messages if role == "user"]
    assert users == ["first question", "second question, max tokens"]
    agents = [text for role, text in messages if role == "agent"]
    assert len(agents) == 2 and all(a.startswith("## Demo agent reply") for a in agents)
    assert "(turn 1)" in agents[0] and "(turn 2)" not in agents[1]  # the second was cut short
    assert before["markdown"].count("## User") == 2
    assert "first question" in before["text"] and "second question" in before["text"]
    trace.assert_all_gone()
    trace.assert_no_unadvertised()


def test_export_jsonl_events_carry_the_documented_fields(cli: Cli, trace: AgentTrace) -> None:
    sid = cli.new(trace.demo_cmd())
    cli.ok("prompt", "--session", sid, "hello")
    events = [json.loads(line) for line in cli.ok("export", sid, "--format", "jsonl").stdout.splitlines()]
    assert [e["type"] for e in events] == ["message", "message", "plan", "tool_call", "message", "turn_end", "session"]
    assert [e["index"] for e in events[:-1]] == list(range(6))
    for event in events[:-2]:
        assert {"type", "sessionId", "index", "id"} <= set(event)
    assert events[-2] == {"type": "turn_end", "sessionId": sid, "index": 5, "stopReason": "end_turn", "error": None}
    assert events[-1]["field"] == "usage" and events[-1]["usage"]["used"] > 0  # the demo agent's last usage_update
    assert [e["role"] for e in events if e["type"] == "message"] == ["user", "thought", "agent"]
    tool = events[3]
    assert tool["status"] == "failed" and tool["kind"] == "edit"


def test_export_jsonl_names_the_session(cli: Cli, trace: AgentTrace) -> None:
    sid = cli.new(trace.demo_cmd())
    cli.ok("prompt", "--session", sid, "hello")
    events = [json.loads(line) for line in cli.ok("export", sid, "--format", "jsonl").stdout.splitlines()]
    assert events and all(e["sessionId"] == sid for e in events)


def test_export_and_show_work_offline(cli: Cli, trace: AgentTrace, tmp_path: Path) -> None:
    sid = cli.new(trace.demo_cmd())
    cli.ok("prompt", "--session", sid, "remember this")
    started = len(trace.pids())
    # an empty PATH: the recorded agent command (``sh -c …``) could not even be found
    offline = {"PATH": str(tmp_path / "nothing-here")}
    target = tmp_path / "t.md"
    runs = cli.run_all(
        ["export", sid],
        ["export", sid[:12], "-o", str(target)],  # a unique prefix is enough
        ["show", sid],
    )
    for proc in runs:
        assert proc.returncode == 0, proc.stderr
    exported, to_file, shown = runs
    # none of them needed the agent
    assert len(trace.pids()) == started
    offline_runs = [cli.run("export", sid, env=offline), cli.run("show", sid, env=offline)]
    assert [p.returncode for p in offline_runs] == [0, 0], [p.stderr for p in offline_runs]
    assert offline_runs[0].stdout == exported.stdout
    assert offline_runs[1].stdout == shown.stdout
    assert len(trace.pids()) == started
    # markdown by default; -o writes the same text and nothing on stdout
    assert exported.stdout.startswith("# ") and "## User\n\nremember this" in exported.stdout
    assert to_file.stdout == "" and target.read_text(encoding="utf-8") == exported.stdout
    # show, redirected: plain text, the user's words and the answer
    assert "remember this" in shown.stdout and "Demo agent reply" in shown.stdout
    assert ESC not in shown.stdout


def test_export_of_unknown_session(cli: Cli) -> None:
    error_line(cli.run("export", "demo-nosuch"), ExitCode.SESSION_NOT_FOUND)
    error_line(cli.run("show", "demo-nosuch"), ExitCode.SESSION_NOT_FOUND)


def test_export_unknown_format_is_usage(cli: Cli, trace: AgentTrace) -> None:
    sid = cli.new(trace.demo_cmd())
    error_line(cli.run("export", sid, "--format", "xml"), ExitCode.USAGE)


def test_export_pipes_into_head(cli: Cli, trace: AgentTrace) -> None:
    sid = cli.new(trace.demo_cmd())
    cli.ok("prompt", "--session", sid, "headline")
    line = shlex.join(cli.argv("export", sid, "--format", "text"))
    proc = subprocess.run(
        ["bash", "-c", f"{line} | head -1; echo \"${{PIPESTATUS[0]}}\" >&2"],
        env=cli.env(), cwd=cli.cwd, capture_output=True, text=True, timeout=60, check=False,
    )
    assert proc.stdout == "> headline\n"
    assert proc.stderr.strip() == "0", proc.stderr
