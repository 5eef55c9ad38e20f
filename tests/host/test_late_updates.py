"""What an agent says after a turn has ended (claude's background subagents), through a live
session's host, over the raw socket: the turn's client has its ``end`` at once and may go;
the host stores what comes later, and attached clients are sent it."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path
from typing import Any

from tests.cli.conftest import Cli
from tests.host.conftest import LIVE, wait_for

LATE_AGENT = Path(__file__).resolve().parent.parent / "peers" / "sdk_late_agent.py"


def test_the_host_keeps_what_comes_after_a_turn_whose_client_left(hosts: Cli, raw: Any, tmp_path: Path) -> None:
    gate = tmp_path / "gate"  # the agent's updates after the turn wait for it (but " +MORE")
    env = {**LIVE, "LATE_GATE": str(gate), "LATE_DELAY": "0"}
    sid = hosts.ok("new", "--no-repl", "--cmd", shlex.join([sys.executable, str(LATE_AGENT)]), env=env).stdout.strip()
    watcher = raw(sid, "attach")
    client = raw(sid)
    client.send({"t": "prompt", "text": "late please", "settings": [], "wait": True})
    end = client.until("end", "error")
    assert end["t"] == "end" and end["stop"] == "end_turn", end
    client.close()  # the turn's client has its answer and leaves
    assert watcher.until("other-end")["stop"] == "end_turn"
    gate.touch()  # what the agent sends from now on comes after its client left
    seen: list[str] = []
    while not any("LATE-TEXT" in p for p in seen):
        message = watcher.until("u")
        seen.append(str(message.get("p")))
    assert any("BG-DONE" in p for p in seen), seen  # drawn by an attached terminal ...
    wait_for(lambda: "LATE-TEXT" in hosts.show(sid), what="the late updates to be stored")
    shown = hosts.show(sid)  # ... and stored, in their places
    assert shown.index("ANSWER +MORE") < shown.index("BG-DONE") < shown.index("LATE-TEXT"), shown


def test_an_attached_terminal_draws_what_comes_after_a_warm_prompts_turn(hosts: Cli, spawn: Any, tmp_path: Path) -> None:
    gate = tmp_path / "gate"
    env = {**LIVE, "LATE_GATE": str(gate), "LATE_DELAY": "0.2"}
    sid = hosts.ok("new", "--no-repl", "--cmd", shlex.join([sys.executable, str(LATE_AGENT)]), env=env).stdout.strip()
    watcher = spawn("attach", sid)
    watcher.expect("attached to")
    watcher.prompt()
    proc = hosts.ok("prompt", "--session", sid, "late please", env=env)
    assert "ANSWER" in proc.stdout and "MORE" not in proc.stdout, proc.stdout  # it did not wait
    watcher.expect("ANSWER")
    gate.touch()  # the rest comes after the prompt's exit
    watcher.expect("LATE-TEXT")  # drawn, no key pressed
    assert "BG-DONE" in watcher.seen
