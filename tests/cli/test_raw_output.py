"""`acpcli prompt --raw`: stdout carries the JSON-RPC frames both ways, secrets redacted."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path


def test_raw_prints_every_frame_as_json_with_secrets_masked(tmp_path: Path) -> None:
    mcp = tmp_path / "mcp.json"
    mcp.write_text(json.dumps({"mcpServers": {"t": {"command": sys.executable, "args": [], "env": {"TOKEN": "s3cret"}}}}))
    demo = shlex.join([sys.executable, "-m", "acpcli.demo_agent", "--delay", "0", "--protocol", "1"])
    proc = subprocess.run(
        [sys.executable, "-m", "acpcli", "prompt", "--cmd", demo, "--mcp-config", str(mcp), "--raw", "hello raw"],
        capture_output=True, text=True, timeout=60, cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    lines = [json.loads(line) for line in proc.stdout.splitlines()]
    methods = [(m["direction"], m["message"].get("method")) for m in lines if "message" in m]
    assert ("send", "initialize") in methods and ("send", "session/new") in methods
    assert ("send", "session/prompt") in methods and ("receive", "session/update") in methods
    new = next(m["message"] for m in lines if m["message"].get("method") == "session/new")
    assert new["params"]["mcpServers"][0]["env"] == [{"name": "TOKEN", "value": "***"}]
    assert "s3cret" not in proc.stdout
    # The prompt's answer arrives with the turn's end.
    assert any(m["direction"] == "receive" and m["message"].get("result", {}).get("stopReason") == "end_turn" for m in lines)
