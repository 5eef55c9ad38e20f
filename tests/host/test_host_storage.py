"""The host's side of a full disk, through its raw socket: a turn's ``end`` carries what
could not be saved (the exit code and line a client reports, as without a host), and a
``stop`` client is told, after ``stopping``, what the host held in memory and could not save
(``stored``), so that nothing that arrived is dropped without a word.

The disk is a small tmpfs over ``ACPCLI_HOME`` in a private mount namespace (as
``tests/cli/test_storage.py``); skipped when that is not possible.
"""

from __future__ import annotations

import json
import re
import shlex
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from acpcli.errors import ExitCode
from tests.cli.conftest import AgentTrace, Cli
from tests.cli.test_storage import in_namespace, needs_mount
from tests.helpers.procs import running

UNSAVED = re.compile(r"^cannot save sessions to (\S+): (.+) \((\d+) session updates? not saved\)$")

#: A raw client of the one live host of ACPCLI_HOME: a prompt (every message but updates
#: kept; a permission asked is refused), then a stop (every message until the host closes
#: the connection); JSON to argv[1].
RAW_CLIENT = """
import json, socket, sys
from acpcli.session.hostwire import address

(info,) = list(address.hosts())
path = str(address.socket_path(info.session_id))

def talk(messages, until):
    seen = []
    with socket.socket(socket.AF_UNIX) as sock:
        sock.settimeout(60)
        sock.connect(path)
        sock.sendall(b"".join(json.dumps(m).encode() + b"\\n" for m in messages))
        data = b""
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                return seen
            data += chunk
            *lines, data = data.split(b"\\n")
            for line in lines:
                message = json.loads(line)
                if message["t"] != "u":
                    seen.append(message)
                if message["t"] == "ask":  # the demo agent asks to edit a file: refused
                    (option,) = [o for o in message["params"]["options"] if o["kind"] == "reject_once"]
                    chosen = {"outcome": "selected", "optionId": option["optionId"]}
                    answer = {"t": "answer", "id": message["id"], "result": {"outcome": chosen}}
                    sock.sendall(json.dumps(answer).encode() + b"\\n")
                if message["t"] in until:
                    return seen

turn = talk([{"t": "hello", "pid": 1, "role": "prompt"}, {"t": "prompt", "text": sys.argv[2], "settings": []}], ("end", "error"))
stop = talk([{"t": "hello", "pid": 1, "role": "stop"}, {"t": "stop"}], ())
json.dump({"turn": turn, "stop": stop}, open(sys.argv[1], "w"))
"""


def _raw(tmp: Path, text: str) -> tuple[str, Path]:
    script = tmp / "raw_client.py"
    script.write_text(RAW_CLIENT)
    out = tmp / "raw.json"
    return shlex.join([sys.executable, str(script), str(out), text]), out


def _all_gone(trace: AgentTrace) -> None:
    """The host ends after telling the stop client; its agent goes with it (a moment later)."""
    deadline = time.monotonic() + 20
    while any(running(pid) for pid in trace.pids()) and time.monotonic() < deadline:
        time.sleep(0.05)
    trace.assert_all_gone()


def _unsaved(verdicts: Any, home: Path) -> int:
    (verdict,) = verdicts
    assert verdict["exit"] == ExitCode.STORAGE, verdict
    match = UNSAVED.match(verdict["message"])
    assert match is not None, verdict
    assert Path(match.group(1)) == home / "acpcli.db"
    return int(match.group(3))


@needs_mount
@pytest.mark.parametrize(("protocol", "block"), [(2, "4k"), (1, "32k")])
def test_a_turn_on_a_full_disk_ends_with_what_was_not_saved_and_stop_says_what_is_lost(
    cli: Cli, trace: AgentTrace, tmp_path: Path, protocol: int, block: str
) -> None:
    step, out = _raw(tmp_path, "a raw turn on a full disk")
    (first,) = in_namespace(
        cli,
        f"mount -t tmpfs -o size=2m,mode=700 tmpfs {cli.home}",
        ["prompt", "--cmd", trace.demo_cmd(protocol=protocol), "--keep-alive", "300", "on the disk"],
        f"dd if=/dev/zero of={cli.home}/filler bs={block} 2>/dev/null || true",
        step,
    )
    assert first.returncode == ExitCode.OK, first.stderr
    seen = json.loads(out.read_text())
    end = seen["turn"][-1]
    assert end["t"] == "end" and end["stop"] == "end_turn", seen["turn"]
    in_turn = _unsaved(end["verdicts"], cli.home)
    kinds = [m["t"] for m in seen["stop"]]
    assert kinds == ["ready", "stopping", "stored"], kinds
    stored = seen["stop"][kinds.index("stored")]
    assert _unsaved(stored["verdicts"], cli.home) >= in_turn > 0  # the turn, and what came after
    _all_gone(trace)


@needs_mount
def test_stop_is_told_nothing_is_lost_when_the_disk_took_everything(cli: Cli, trace: AgentTrace, tmp_path: Path) -> None:
    step, out = _raw(tmp_path, "a raw turn on a disk with room")
    (first,) = in_namespace(
        cli,
        f"mount -t tmpfs -o size=4m,mode=700 tmpfs {cli.home}",
        ["prompt", "--cmd", trace.demo_cmd(protocol=2), "--keep-alive", "300", "on the disk"],
        step,
    )
    assert first.returncode == ExitCode.OK, first.stderr
    seen = json.loads(out.read_text())
    assert seen["turn"][-1]["t"] == "end" and seen["turn"][-1]["verdicts"] == [], seen["turn"]
    stored = [m for m in seen["stop"] if m["t"] == "stored"]
    assert stored == [{"t": "stored", "verdicts": []}], seen["stop"]
    _all_gone(trace)
