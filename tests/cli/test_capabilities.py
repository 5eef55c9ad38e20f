"""Each capability withheld in turn: the command fails with ``ExitCode.CAPABILITY``, says what
is missing (and what to use instead), writes nothing to the index, leaves no agent behind,
and the agent never receives the unadvertised method or field.

Two peers: the demo agent (v1 and v2), whose stderr marker ``UNADVERTISED ...`` would show a
slip, and the SDK record agent, which records every request it receives even when it did
not advertise the method (the SDK routes it anyway).
"""

from __future__ import annotations

import json
from pathlib import Path

from acpcli.errors import ExitCode

from .conftest import AgentTrace, Cli, error_line


def _mcp_file(path: Path, server: dict[str, object]) -> Path:
    path.write_text(json.dumps({"mcpServers": {"srv": server}}))
    return path


def test_demo_agent_withholding_each_capability_v1_and_v2(
    cli: Cli, trace: AgentTrace, workdir: Path, tmp_path: Path
) -> None:
    sid = cli.new(trace.demo_cmd())
    (workdir / "extra").mkdir()
    http = _mcp_file(tmp_path / "http.json", {"type": "http", "url": "http://127.0.0.1:9/mcp"})
    stdio = _mcp_file(tmp_path / "stdio.json", {"command": "sh", "args": ["-c", "true"]})
    before = cli.index()
    cases = []  # (args, words the error or its hint must contain)
    for p in (1, 2):

        def demo(*without: str, p: int = p) -> str:
            return trace.demo_cmd(protocol=p, without=without)

        cases += [
            (("load", sid, "--no-repl", "--cmd", demo("load")), ["session/load", "resume"]),
            (("resume", sid, "--no-repl", "--cmd", demo("resume")), ["session/resume", "load"]),
            (("close", sid, "--cmd", demo("close")), ["session/close", "marked closed locally"]),
            (("sessions", "--remote", "--cmd", demo("list")), ["session/list", "acpcli sessions"]),
            (("new", "--no-repl", "--cmd", demo("additional-directories"), "--add-dir", "extra"), ["additional directories"]),
            (("new", "--no-repl", "--cmd", demo("mcp-http"), "--mcp-config", str(http)), ["http"]),
        ]
    # v1 makes stdio MCP mandatory; only v2 can withhold it.
    cases.append((("new", "--no-repl", "--cmd", trace.demo_cmd(protocol=2, without=["mcp-stdio"]), "--mcp-config", str(stdio)), ["stdio"]))

    results = cli.run_all(*[args for args, _ in cases])

    for (args, words), proc in zip(cases, results, strict=False):
        error_line(proc, ExitCode.CAPABILITY)
        for word in words:
            assert word in proc.stderr, (args, proc.stderr)
    # Nothing recorded; close marks the session closed locally either way (the issue).
    [row] = before
    assert cli.index() == [{**row, "state": "closed"}]
    assert len(trace.pids()) == 1 + len(cases)  # each command did start its agent...
    trace.assert_all_gone()  # ... none is left
    trace.assert_no_unadvertised()  # ... and none saw what it had not advertised


def test_record_agent_never_receives_an_unadvertised_method_or_field(
    cli: Cli, trace: AgentTrace, workdir: Path
) -> None:
    bare = trace.record_cmd()  # advertises nothing beyond v1's baseline
    sid = cli.new(bare)
    (workdir / "extra").mkdir()

    results = cli.run_all(
        ("load", sid, "--no-repl"),
        ("resume", sid, "--no-repl"),
        ("close", sid),
        ("sessions", "--remote", "--cmd", bare),
        ("new", "--no-repl", "--cmd", bare, "--add-dir", "extra"),
    )

    for proc in results:
        error_line(proc, ExitCode.CAPABILITY)
    [row] = cli.index()  # nothing recorded; close marks the session closed locally either way
    assert (row["id"], row["state"]) == (sid, "closed")
    # Only the handshakes and the one session/new of the setup arrived: the extra root was
    # refused before any session request (an unadvertised MCP transport: see test_wire.py).
    # load, resume and close were refused from what the record says the agent advertised,
    # before any agent started; the two others each started one
    assert trace.methods().count("initialize") == 1 + 2
    assert [m for m in trace.methods() if m != "initialize"] == ["session/new"]
    assert "additionalDirectories" not in trace.requests("session/new")[0]["params"]
    trace.assert_all_gone()
