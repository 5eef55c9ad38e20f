"""Permissions through the host's socket (issue 31): who may send prompts, what is served
between turns, and ``close`` while another terminal's turn waits on its person."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from acpcli.errors import ExitCode
from acpcli.services.permissions import POLICY_REFUSED
from tests.cli.conftest import Cli

from .conftest import LIVE

FS_AGENT = Path(__file__).resolve().parent.parent / "peers" / "sdk_fs_agent.py"
ALLOW = {"policy": "allow", "fs": True, "terminal": True, "unattended": True}


def _demo_host(cli: Cli) -> str:
    return cli.ok("new", "--no-repl", "--cmd", cli.trace.demo_cmd(protocol=1), env=LIVE).stdout.strip()


@pytest.mark.parametrize("role", ["status", "stop", "watcher", None])
def test_a_look_cannot_send_prompts_and_cannot_wedge_the_host(hosts: Cli, raw: Any, workdir: Path, role: str | None) -> None:
    cli = hosts
    sid = _demo_host(cli)
    look = raw(sid, role="status")
    if role != "status":  # say hello again as another role (or none) on a fresh connection
        look.close()
        look = raw(sid, role=None)
        look.send({"t": "hello", "pid": 7, **({"role": role} if role is not None else {})})
        look.until("ready")
    # a turn that asks a permission (the demo's edit), asked of a client nobody watches leave
    look.send({"t": "prompt", "text": "write asked.txt", "settings": [], "grant": ALLOW})
    answer = look.until("error", "ask", "queued")
    assert answer["t"] == "error" and answer["exit"] == ExitCode.USAGE, answer
    assert "cannot send prompts" in answer["message"]
    look.close()

    later = subprocess.run(  # every later prompt still runs
        cli.argv("prompt", "--session", sid, "--permissions", "allow", "write after.txt"),
        env=cli.env(LIVE), cwd=workdir, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=40,
        check=False,
    )
    assert later.returncode == 0, later.stderr
    assert (workdir / "after.txt").exists()
    assert not (workdir / "asked.txt").exists()


def test_a_prompt_client_that_leaves_while_asked_does_not_wedge_the_host(hosts: Cli, raw: Any, workdir: Path) -> None:
    cli = hosts
    sid = _demo_host(cli)
    for _ in range(2):
        client = raw(sid, role="attach")
        client.send({"t": "prompt", "text": "write gone.txt", "settings": [], "grant": ALLOW})
        client.until("ask")
        client.close()  # leaves with the question open
    proc = cli.run("prompt", "--session", sid, "--permissions", "allow", "write kept.txt", env=LIVE)
    assert proc.returncode == 0, proc.stderr
    assert (workdir / "kept.txt").exists() and not (workdir / "gone.txt").exists()


@pytest.mark.parametrize(
    ("command", "what"),
    [("write late.txt between", "writing"), ("run touch ran-late", "running `touch"), ("read seen.txt", "reading")],
    ids=["write", "terminal", "read"],
)
def test_between_turns_the_agents_requests_are_refused_and_recorded(
    hosts: Cli, raw: Any, workdir: Path, command: str, what: str
) -> None:
    cli = hosts
    (workdir / "seen.txt").write_text("private\n")
    fs_agent = shlex.join([sys.executable, str(FS_AGENT)])
    sid = cli.ok("new", "--no-repl", "--cmd", fs_agent, "--permissions", "allow", env=LIVE).stdout.strip()
    report = workdir / "report.json"
    words = command.split(" ")
    target = str(workdir / words[1]) if words[0] != "run" else shlex.join(["touch", str(workdir / "ran-late")])
    line = f"{words[0]} {target}" + (" " + " ".join(words[2:]) if words[0] == "write" else "")
    client = raw(sid)
    client.send({"t": "prompt", "text": f"later 0.5 {report} {line}", "settings": [], "grant": ALLOW})
    end = client.until("end", "error")
    assert end["t"] == "end", end
    client.close()  # the command is over: nobody is there

    deadline = time.monotonic() + 30
    while not report.exists():
        assert time.monotonic() < deadline, "the agent never reported"
        time.sleep(0.05)
    got = json.loads(report.read_text())
    assert got["error"]["code"] == POLICY_REFUSED, got
    assert "no prompt turn is running" in got["error"]["message"]
    assert not (workdir / "late.txt").exists() and not (workdir / "ran-late").exists()
    shown = cli.show(sid)
    assert f"acpcli refused {what}" in shown and "no prompt turn was running" in shown, shown

    # and the next turn is served under its own sender's policy again
    proc = cli.run("prompt", "--session", sid, "--permissions", "allow", f"write {workdir / 'now.txt'} now", env=LIVE)
    assert proc.returncode == 0 and (workdir / "now.txt").read_text() == "now", proc.stdout + proc.stderr


def test_close_is_refused_while_another_terminals_turn_waits_on_its_person(hosts: Cli, raw: Any, workdir: Path) -> None:
    cli = hosts
    sid = _demo_host(cli)
    asker = raw(sid, role="attach")
    closer = raw(sid, role="attach")
    asker.send({"t": "prompt", "text": "write picked.txt", "settings": [], "grant": ALLOW})
    ask = asker.until("ask")
    closer.send({"t": "call", "id": 1, "op": "close"})
    refused = closer.until("failed", "result")
    assert refused["t"] == "failed" and refused["exit"] == ExitCode.BUSY, refused
    assert "turn running" in refused["message"]

    options = ask["params"]["options"]
    allow = next(o for o in options if o["kind"] == "allow_once")
    asker.send({"t": "answer", "id": ask["id"], "result": {"outcome": {"outcome": "selected", "optionId": allow["optionId"]}}})
    end = asker.until("end", "error")
    assert end["t"] == "end" and end["stop"] == "end_turn", end
    assert (workdir / "picked.txt").exists()  # the person's Allow reached the agent

    closer.send({"t": "call", "id": 2, "op": "close"})  # the turn is over: now it closes
    assert closer.until("failed", "result")["t"] == "result"
    assert asker.until("closed")["t"] == "closed"
    (record,) = cli.index()
    assert record["state"] == "closed"
