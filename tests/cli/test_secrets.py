"""Secrets in every MCP field (args, URLs, env, headers, custom transports) reach the agent and
nothing else: not ``--log-file``, not ``--raw``, not any file under the acpcli home (the index,
its event log, logs), not ``sessions`` or ``show``."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from .conftest import AgentTrace, Cli

SECRETS = {
    "arg-flag": "TOKEN-SPACE-1",
    "arg-joined": "TOKEN-JOINED-2",
    "arg-assign": "TOKEN-ASSIGN-3",
    "arg-url-userinfo": "TOKEN-URLPW-4",
    "arg-url-query": "TOKEN-URLQ-5",
    "env": "TOKEN-ENV-6",
    "url-userinfo": "TOKEN-USERINFO-7",
    "url-query": "TOKEN-QUERY-8",
    "url-bare-query": "TOKEN-BARE-9",
    "header": "TOKEN-HEADER-10",
    "custom": "TOKEN-CUSTOM-11",
    "arg-password": "TOKEN-PASSWORD-12",
}


def mcp_file(tmp_path: Path) -> Path:
    s = SECRETS
    servers = {
        "files": {
            "command": sys.executable,
            "args": ["--token", s["arg-flag"], f"--api-key={s['arg-joined']}", f"GITHUB_TOKEN={s['arg-assign']}",
                     f"https://bot:{s['arg-url-userinfo']}@git.example/repo?access={s['arg-url-query']}",
                     "--password", s["arg-password"], "--root", "."],
            "env": {"MY_SECRET": s["env"]},
        },
        "web": {
            "type": "http",
            "url": f"https://{s['url-userinfo']}@mcp.example:8443/mcp?key={s['url-query']}&{s['url-bare-query']}",
            "headers": {"Authorization": f"Bearer {s['header']}"},
        },
        "bus": {"type": "_acme-bus", "name": "bus", "apiToken": s["custom"]},
    }
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"mcpServers": servers}))
    return path


def home_bytes(home: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(home.rglob("*")) if p.is_file())


def test_mcp_secrets_reach_the_agent_and_nothing_else(cli: Cli, trace: AgentTrace, tmp_path: Path) -> None:
    servers = mcp_file(tmp_path)
    wire_log = tmp_path / "wire.log"
    cmd = trace.record_cmd("--mcp-http", "--load")

    made = cli.run("prompt", "--cmd", cmd, "--mcp-config", str(servers), "--log-file", str(wire_log), "hello")
    assert made.returncode == 0, made.stderr
    sid = made.stderr.split("session ", 1)[1].split()[0]
    raw = cli.run("prompt", "--cmd", cmd, "--mcp-config", str(servers), "--raw", "again")
    assert raw.returncode == 0, raw.stderr
    loaded = cli.run("load", sid, "--no-repl", "--mcp-config", str(servers), "--log-file", str(wire_log))
    assert loaded.returncode == 0, loaded.stderr

    # The agent got every secret: the test is about what else sees them.
    received = json.dumps(trace.requests("session/new"))
    missing = [name for name, secret in SECRETS.items() if secret not in received]
    assert not missing, missing

    log_text = wire_log.read_text()
    assert '"mcpServers"' in log_text and "***" in log_text
    assert '"method":"session/new"' in raw.stdout.replace(" ", "")
    seen = {
        "--log-file": log_text,
        "--raw": raw.stdout,
        "stderr": made.stderr + raw.stderr + loaded.stderr,
        "home": home_bytes(cli.home).decode("utf-8", "replace"),
        "sessions": cli.ok("sessions", "--json", "--all").stdout + cli.ok("sessions", "--all").stdout,
        "show": cli.show(sid),
        "export": cli.ok("export", sid, "--format", "jsonl").stdout,
    }
    leaks = [(where, name) for where, text in seen.items() for name, secret in SECRETS.items() if secret in text]
    assert not leaks, leaks

    # What identifies a server stays readable in the log.
    assert "mcp.example:8443/mcp" in log_text and "--root" in log_text and "MY_SECRET" in log_text
