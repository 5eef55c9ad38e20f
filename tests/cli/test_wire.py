"""What arrives at the agent: cwd, additionalDirectories and MCP servers, exactly as the seed
specifies, checked on the receiving side by the SDK record agent (a v1 peer acpcli did not
write) — plus what must never leak: MCP secrets in ``sessions``, ``show`` and the wire log.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

from acpcli.errors import ExitCode

from .conftest import AgentTrace, Cli, error_line, run_concurrently

EVERYTHING = ("--load", "--resume", "--close", "--list", "--additional-directories", "--mcp-http")


def test_roots_arrive_absolute_and_are_resent_replaced_or_cleared(
    cli: Cli, trace: AgentTrace, workdir: Path, tmp_path: Path
) -> None:
    for name in ("proj", "lib", "other"):
        (workdir / name).mkdir()
    proj, lib, other = (str((workdir / n).resolve()) for n in ("proj", "lib", "other"))
    cmd = trace.record_cmd(*EVERYTHING)

    sid = cli.new(cmd, "--cwd", "proj/../proj", "--add-dir", "./lib/")
    [new] = trace.requests("session/new")
    assert new["params"]["cwd"] == proj
    assert new["params"]["additionalDirectories"] == [lib]
    [row] = cli.index()
    assert (row["cwd"], row["additionalDirectories"]) == (proj, [lib])

    # From another directory: the stored cwd and the full stored list are sent again.
    loaded = cli.ok("load", sid, "--no-repl", cwd=tmp_path)
    assert "the replayed question" in loaded.stdout and "the replayed answer" in loaded.stdout
    [load] = trace.requests("session/load")
    assert load["params"]["sessionId"] == sid
    assert (load["params"]["cwd"], load["params"]["additionalDirectories"]) == (proj, [lib])

    assert cli.ok("resume", sid, "--no-repl", "--add-dir", "other").stdout == ""  # replaces
    cli.ok("load", sid, "--no-repl", "--no-add-dirs")  # clears
    [resume] = trace.requests("session/resume")
    _, second_load = trace.requests("session/load")
    assert (resume["params"]["cwd"], resume["params"]["additionalDirectories"]) == (proj, [other])
    assert second_load["params"]["cwd"] == proj
    assert second_load["params"].get("additionalDirectories", []) == []

    # From a fresh process, close makes the session active (resume) and then closes it.
    closed, remote = cli.run_all(("close", sid), ("sessions", "--remote", "--json", "--cmd", cmd))
    assert closed.returncode == 0 and remote.returncode == 0, closed.stderr + remote.stderr
    assert closed.stderr.splitlines() == [f"closed {sid}"]
    lifecycle = [m for m in trace.methods() if m not in ("initialize", "session/list")]
    assert lifecycle[-3:] == ["session/load", "session/resume", "session/close"]
    assert trace.requests("session/close")[0]["params"] == {"sessionId": sid}
    # ... sending the stored roots, which --no-add-dirs just cleared
    assert trace.requests("session/resume")[-1]["params"].get("additionalDirectories", []) == []

    # session/list is paged: both pages, the second asked for with the first one's cursor.
    assert [json.loads(line)["sessionId"] for line in remote.stdout.splitlines()] == ["rec-page-1", "rec-page-2"]
    assert [r["params"].get("cursor") for r in trace.requests("session/list")] == [None, "page-2"]
    trace.assert_all_gone()


def test_add_dir_and_no_add_dirs_on_resume_update_the_stored_list(cli: Cli, trace: AgentTrace, workdir: Path) -> None:
    """The agent's roots are what was sent last, so the index must follow: else the next
    plain resume would silently send the old roots again."""
    (workdir / "lib").mkdir()
    (workdir / "other").mkdir()
    sid = cli.new(trace.demo_cmd(), "--add-dir", "lib")
    cli.ok("resume", sid, "--no-repl", "--add-dir", "other")
    assert cli.index()[0]["additionalDirectories"] == [str((workdir / "other").resolve())]
    cli.ok("resume", sid, "--no-repl", "--no-add-dirs")
    assert cli.index()[0]["additionalDirectories"] == []
    trace.assert_all_gone()
    trace.assert_no_unadvertised()


def _executable(path: Path) -> Path:
    path.write_text("#!/bin/sh\nexit 0\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def test_mcp_servers_arrive_in_acp_shape_and_secrets_never_leak(
    cli: Cli, trace: AgentTrace, acpcli_home: Path, tmp_path: Path
) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    tool = str(_executable(bin_dir / "my-mcp-tool").resolve())
    servers = {
        "files": {"command": "my-mcp-tool", "args": ["--root", "."], "env": {"TOKEN": "file-secret-1"}},
        "web": {"type": "http", "url": "http://127.0.0.1:9/mcp", "headers": {"Authorization": "Bearer header-secret-2"}},
    }
    mcp_json = tmp_path / "mcp.json"
    mcp_json.write_text(json.dumps({"mcpServers": {**servers, "bus": {"type": "_acme-bus", "endpoint": "unix:/x"}}}))
    standard_json = tmp_path / "standard.json"  # without the custom transport the demo agent refuses
    standard_json.write_text(json.dumps({"mcpServers": servers}))
    (acpcli_home / "config.toml").write_text(
        '[mcp_servers.tool]\ncommand = "my-mcp-tool"\nargs = ["--mode", "${MCP_MODE}"]\n'
        'env = { KEY = "${MCP_SECRET}" }\n'
    )
    env = {"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "MCP_MODE": "fast", "MCP_SECRET": "config-secret-3"}
    secrets = ("file-secret-1", "header-secret-2", "config-secret-3")
    wire_log = tmp_path / "wire.log"

    made = cli.run("new", "--no-repl", "--cmd", trace.record_cmd("--mcp-http"), "--mcp-config", str(mcp_json),
                   "--mcp", "tool", "--log-file", str(wire_log), env=env)
    assert made.returncode == 0, made.stderr
    sid = made.stdout.strip()

    [new] = trace.requests("session/new")
    servers = {s["name"]: s for s in new["params"]["mcpServers"]}
    assert servers == {
        # v1 stdio is the untagged variant; command resolved on PATH to an absolute path
        "files": {"name": "files", "command": tool, "args": ["--root", "."],
                  "env": [{"name": "TOKEN", "value": "file-secret-1"}]},
        "web": {"type": "http", "name": "web", "url": "http://127.0.0.1:9/mcp",
                "headers": [{"name": "Authorization", "value": "Bearer header-secret-2"}]},
        # from config.toml, ${VAR} expanded at use time
        "tool": {"name": "tool", "command": tool, "args": ["--mode", "fast"],
                 "env": [{"name": "KEY", "value": "config-secret-3"}]},
        # a custom transport passes through unchanged
        "bus": {"name": "bus", "type": "_acme-bus", "endpoint": "unix:/x"},
    }
    [row] = cli.index()
    assert sorted(row["mcpServers"]) == ["bus", "files", "tool", "web"]
    seen = cli.ok("sessions", "--json", "--all").stdout + cli.ok("sessions").stdout + cli.show(sid)
    seen += wire_log.read_text()
    assert "session/new" in wire_log.read_text()
    for secret in secrets:
        assert secret not in seen

    # An agent that does not advertise http MCP: refused before any session request.
    # And a v2 agent (the demo's wire log): stdio servers carry type "stdio" there.
    v2_log = tmp_path / "v2.log"
    refused, v2 = run_concurrently([
        (cli, ("new", "--no-repl", "--cmd", trace.record_cmd(), "--mcp-config", str(mcp_json))),
        (cli, ("new", "--no-repl", "--cmd", trace.demo_cmd(protocol=2), "--mcp-config", str(standard_json),
               "--mcp", "tool", "--log-file", str(v2_log))),
    ], env=env)
    assert "http" in error_line(refused, ExitCode.CAPABILITY)
    assert trace.methods() == ["initialize", "session/new", "initialize"]
    assert v2.returncode == 0, v2.stderr
    [sent] = [json.loads(line.split(" -> ", 1)[1]) for line in v2_log.read_text().splitlines()
              if " -> " in line and '"session/new"' in line]
    kinds = {s["name"]: (s.get("type"), s.get("command")) for s in sent["params"]["mcpServers"]}
    assert kinds == {"files": ("stdio", tool), "web": ("http", None), "tool": ("stdio", tool)}
    for secret in secrets:
        assert secret not in v2_log.read_text()
    assert {r["id"] for r in cli.index()} == {sid, v2.stdout.strip()}
    trace.assert_all_gone()
    trace.assert_no_unadvertised()
