"""A prompt message's ``log_file`` through the raw socket: an absolute path gets that turn's
frames (and only that turn's); a relative one is refused (exit 2: the host cannot know the
sender's working directory), the turn not run."""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

from acpcli.errors import ExitCode
from acpcli.session.hostwire import address
from tests.cli.conftest import Cli

LIVE = {"ACPCLI_KEEP_ALIVE": "300"}


def _turn(sid: str, text: str, log_file: str) -> dict[str, Any]:
    """One prompt with ``log_file``: its last message (``end`` or ``error``); a permission
    asked is refused."""
    with socket.socket(socket.AF_UNIX) as sock:
        sock.settimeout(60)
        sock.connect(str(address.socket_path(sid)))
        reader = sock.makefile("rb")
        hello = {"t": "hello", "pid": 1, "role": "prompt"}
        prompt = {"t": "prompt", "text": text, "settings": [], "log_file": log_file}
        sock.sendall(json.dumps(hello).encode() + b"\n" + json.dumps(prompt).encode() + b"\n")
        while True:
            message = json.loads(reader.readline())
            if message["t"] == "ask":
                (option,) = [o for o in message["params"]["options"] if o["kind"] == "reject_once"]
                chosen = {"outcome": {"outcome": "selected", "optionId": option["optionId"]}}
                sock.sendall(json.dumps({"t": "answer", "id": message["id"], "result": chosen}).encode() + b"\n")
            if message["t"] in ("end", "error"):
                return message


def test_a_prompt_message_names_the_file_its_turn_is_logged_to(hosts: Cli, tmp_path: Path) -> None:
    cli = hosts
    sid = cli.ok("new", "--no-repl", "--cmd", cli.trace.demo_cmd(protocol=1), env=LIVE).stdout.strip()
    log = tmp_path / "turn.log"
    end = _turn(sid, "the logged one", str(log))
    assert end["t"] == "end" and end["verdicts"] == [], end
    assert _turn(sid, "a turn after it", str(tmp_path / "other.log"))["t"] == "end"
    text = log.read_text()
    assert "the logged one" in text and "a turn after it" not in text
    assert "a turn after it" in (tmp_path / "other.log").read_text()
    refused = _turn(sid, "relative, never sent", "relative.log")
    assert refused["t"] == "error" and refused["exit"] == ExitCode.USAGE, refused
    assert "absolute" in refused["message"]
    assert not (cli.cwd / "relative.log").exists()
    assert "never sent" not in cli.show(sid)
