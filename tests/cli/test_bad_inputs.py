"""Bad input: every case is one error line with its documented exit code, writes nothing to
the index and leaves no agent behind — and when the input can be checked before the agent
is started, the agent is never started at all. Also ``acpcli agents``.
"""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

from acpcli.errors import ExitCode

from .conftest import AgentTrace, Cli, error_line


def test_bad_inputs_fail_before_any_agent_starts(cli: Cli, trace: AgentTrace, tmp_path: Path) -> None:
    demo = trace.demo_cmd()
    bad_json = tmp_path / "bad.json"
    bad_json.write_text('{"mcpServers": {"x": ')
    ftp, file_sse, bare = (tmp_path / f"{name}.json" for name in ("ftp", "sse", "bare"))
    ftp.write_text(json.dumps({"mcpServers": {"files": {"url": "ftp://example.com/mcp"}}}))
    file_sse.write_text(json.dumps({"mcpServers": {"old": {"type": "sse", "url": "FILE:///tmp/mcp"}}}))
    bare.write_text(json.dumps({"servers": {"web": {"type": "http", "url": "example.com/mcp"}}}))
    not_http = "url must start with http:// or https://"
    cases = [  # (args, exit code, words the error or its hint must contain)
        (("close", "demo-nope"), ExitCode.SESSION_NOT_FOUND, ["demo-nope"]),
        (("show", "demo-nope"), ExitCode.SESSION_NOT_FOUND, ["demo-nope"]),
        (("prompt", "--session", "demo-nope", "hi"), ExitCode.SESSION_NOT_FOUND, ["demo-nope"]),
        (("export", "demo-nope"), ExitCode.SESSION_NOT_FOUND, ["demo-nope"]),
        (("load", "demo-nope", "--no-repl"), ExitCode.SESSION_NOT_FOUND, ["demo-nope", "--agent"]),
        (("resume", "demo-nope", "--no-repl"), ExitCode.SESSION_NOT_FOUND, ["demo-nope", "--agent"]),
        (("new", "--no-repl", "--cmd", demo, "--cwd", "no/such/dir"), ExitCode.USAGE, ["--cwd", "no/such/dir"]),
        (("new", "--no-repl", "--cmd", demo, "--add-dir", "missing-root"), ExitCode.USAGE, ["--add-dir", "missing-root"]),
        (("new", "--no-repl", "--cmd", demo, "--mcp-config", str(bad_json)), ExitCode.CONFIG, [str(bad_json), "JSON"]),
        (("new", "--no-repl", "--cmd", demo, "--mcp-config", str(ftp)), ExitCode.CONFIG, ["'files'", not_http, "not ftp:"]),
        (("new", "--no-repl", "--cmd", demo, "--mcp-config", str(file_sse)), ExitCode.CONFIG,
         ["'old'", not_http, "an sse MCP server", "not FILE:"]),
        (("prompt", "--cmd", demo, "--mcp-config", str(bare), "hi"), ExitCode.CONFIG, ["'web'", "a URL without a scheme"]),
        (("new", "--no-repl", "--cmd", demo, "--protocol", "3"), ExitCode.USAGE, ["--protocol"]),
        (("new", "--no-repl", "--agent", "no-such-agent"), ExitCode.USAGE, ["no-such-agent", "demo", "claude", "codex", "gemini"]),
        (("new", "--no-repl", "--cmd", "/nonexistent/acp-agent --acp"), ExitCode.AGENT_START, ["/nonexistent/acp-agent"]),
        (("new", "--no-repl", "--cmd", "no-such-acp-agent-xyz"), ExitCode.AGENT_START, ["no-such-acp-agent-xyz"]),
    ]

    # All at once on a fresh home: readers race the writers creating the index too.
    results = cli.run_all(*[args for args, _, _ in cases])

    for (args, code, words), proc in zip(cases, results, strict=False):
        error_line(proc, code)
        for word in words:
            assert word in proc.stderr, (args, proc.stderr)
    assert cli.index() == []
    assert trace.pids() == []  # the demo agent was never started


def test_a_reader_racing_the_index_creation_sees_an_empty_index(cli: Cli, acpcli_home: Path) -> None:
    # The state between another process's O_EXCL create and its migration: an empty file.
    # (Seen for real when `show` and `close` ran at once on a fresh home.)
    (acpcli_home / "acpcli.db").touch(mode=0o600)
    listed, shown = cli.run_all(("sessions", "--json", "--all"), ("show", "demo-nope"))
    assert (listed.returncode, listed.stdout) == (0, "")
    error_line(shown, ExitCode.SESSION_NOT_FOUND)


def test_bad_inputs_about_a_recorded_session(cli: Cli, trace: AgentTrace, workdir: Path, tmp_path: Path) -> None:
    sid = cli.new(trace.demo_cmd())
    before = cli.index()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()

    wrong_cwd, missing_root, unknown = cli.run_all(
        ("load", sid, "--no-repl", "--cwd", str(elsewhere)),
        ("resume", sid, "--no-repl", "--add-dir", "no-such-root"),
        ("load", "demo-0123", "--no-repl", "--cmd", trace.demo_cmd()),
    )

    message = error_line(wrong_cwd, ExitCode.USAGE)
    assert str(workdir.resolve()) in message and "--cwd" in message
    assert "no-such-root" in error_line(missing_root, ExitCode.USAGE)
    # An id the agent does not know: the agent's "not found", exit 8 as for an id missing from
    # the local index, and nothing recorded.
    assert "demo-0123" in error_line(unknown, ExitCode.SESSION_NOT_FOUND)
    assert cli.index() == before
    assert len(trace.pids()) == 2  # the new session's agent, and the one asked about demo-0123
    trace.assert_all_gone()
    trace.assert_no_unadvertised()


def test_unreadable_config_is_a_config_error(cli: Cli, acpcli_home: Path, trace: AgentTrace) -> None:
    config = acpcli_home / "config.toml"
    config.write_text("[agents.broken\ncommand = 1\n")

    message = error_line(cli.run("new", "--no-repl", "--agent", "demo"), ExitCode.CONFIG)

    assert str(config) in message
    assert cli.index() == []


def test_agents_lists_builtins_and_configured_agents_with_what_is_really_found(
    cli: Cli, acpcli_home: Path, tmp_path: Path
) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    present = bin_dir / "present-acp-agent"
    present.write_text("#!/bin/sh\nexit 0\n")
    present.chmod(present.stat().st_mode | stat.S_IXUSR)
    (bin_dir / "not-executable-agent").write_text("")  # on PATH but not runnable: not found
    (acpcli_home / "config.toml").write_text(
        '[agents.ghost]\ncommand = ["definitely-missing-acp-agent", "--acp"]\n'
        '[agents.present]\ncommand = "present-acp-agent --acp"\n'
        '[agents.inert]\ncommand = ["not-executable-agent"]\n'
    )
    env = {"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}

    as_json = cli.ok("agents", "--json", env=env)
    table = cli.ok("agents", env=env)

    agents = {a["name"]: a for a in map(json.loads, as_json.stdout.splitlines())}
    assert {"demo", "claude", "codex", "gemini", "ghost", "present", "inert"} <= set(agents)
    assert agents["demo"]["builtin"] is True
    assert agents["demo"]["found"] == os.path.abspath(sys.executable)
    assert agents["ghost"] == {**agents["ghost"], "builtin": False, "found": None}
    assert agents["inert"]["found"] is None
    assert agents["present"]["found"] == str(present.resolve())
    [ghost] = [line for line in table.stdout.splitlines() if line.split()[:1] == ["ghost"]]
    assert "not on PATH" in ghost
    [demo] = [line for line in table.stdout.splitlines() if line.split()[:1] == ["demo"]]
    assert "not on PATH" not in demo


def test_what_the_command_line_parser_refuses_is_one_acpcli_line_and_exit_2(cli: Cli) -> None:
    """An unknown option, a missing argument, an unknown command or a bad value: one
    ``acpcli: error:`` line and a hint naming the command's ``--help`` (typer's boxed
    ``Usage: … Error:`` text before), exit 2, nothing on stdout."""
    cases = [
        (("agents", "--no-such-flag"), "acpcli: error: no such option: --no-such-flag", "acpcli agents --help"),
        (("search",), "acpcli: error: missing argument 'WORD'", "acpcli search --help"),
        (("frobnicate",), "acpcli: error: no such command 'frobnicate'", "acpcli --help"),
        (("sessions", "--limit"), "acpcli: error: option '--limit' requires an argument", "acpcli sessions --help"),
    ]
    for args, line, helping in cases:
        proc = cli.run(*args)
        assert proc.returncode == ExitCode.USAGE, (args, proc.stderr)
        assert proc.stdout == ""
        assert proc.stderr.splitlines() == [line, f"acpcli: hint: see '{helping}'"], (args, proc.stderr)
