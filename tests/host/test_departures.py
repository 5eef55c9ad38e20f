"""A client that leaves while the host writes to it: the host stays, the turn ends as a
departed client's turn does (cancelled), everything the agent sent is stored, and the other
clients and later prompts carry on."""

from __future__ import annotations

import re
import signal
import socket
import struct
import subprocess
import time
from pathlib import Path

import pytest

from tests.cli.conftest import TIMEOUT, Cli

from .conftest import LIVE, flood_session, live_rows, raw_client


def _stored_in_full(cli: Cli, sid: str, sent_file: Path) -> None:
    """Every chunk the flood agent sent is in ``show``."""
    sent = int(sent_file.read_text())
    shown = {int(n) for n in re.findall(r"\[c(\d{6})\]", cli.show(sid))}
    assert sent > 0 and shown == set(range(sent)), (sent, len(shown))


def _after(cli: Cli, sid: str, host_pid: int, watcher) -> None:  # type: ignore[no-untyped-def]
    end = watcher.until("other-end")  # the watcher stayed, and saw the turn end
    assert end["stop"] == "cancelled"
    (row,) = live_rows(cli)
    assert row["pid"] == host_pid and not row["busy"]
    assert "echo: later" in cli.ok("prompt", "--session", sid, "later", env=LIVE).stdout
    assert watcher.until("other-turn")["text"] == "later"
    watcher.close()


@pytest.mark.parametrize("how", ["close", "reset"])
def test_a_raw_client_leaving_mid_stream_leaves_the_host_standing(hosts: Cli, tmp_path: Path, how: str) -> None:
    cli = hosts
    sent = tmp_path / "sent"
    sid = flood_session(cli, {"FLOOD_SENT": str(sent)})
    (row,) = live_rows(cli)
    watcher = raw_client(sid, "attach")
    leaver = raw_client(sid)
    leaver.send({"t": "prompt", "text": "flood 40000 48", "settings": []})
    leaver.until("start")
    for _ in range(50 if how == "close" else 500):
        leaver.until("u")
    time.sleep(1.0)  # not reading: the host's writes to it wait on a full socket
    if how == "reset":  # an abrupt close: the host's next write meets a reset connection
        leaver.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    leaver.close()
    _after(cli, sid, row["pid"], watcher)
    _stored_in_full(cli, sid, sent)


@pytest.mark.parametrize("how", ["SIGKILL", "SIGTERM", "double Ctrl-C"])
def test_a_prompt_command_ended_mid_stream_leaves_the_host_standing(hosts: Cli, tmp_path: Path, how: str) -> None:
    cli = hosts
    sent = tmp_path / "sent"
    sid = flood_session(cli, {"FLOOD_SENT": str(sent)})
    (row,) = live_rows(cli)
    watcher = raw_client(sid, "attach")
    client = subprocess.Popen(
        cli.argv("prompt", "--session", sid, "flood 30000 64"), env=cli.env(LIVE), cwd=cli.cwd,
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    assert client.stdout is not None
    while b"[c000100]" not in client.stdout.read1(1 << 16):  # mid-stream (its reading paused)
        assert client.poll() is None
    time.sleep(1.0)  # its stdout not read: it stops reading the host, whose writes wait
    if how == "double Ctrl-C":
        client.send_signal(signal.SIGINT)
        time.sleep(0.2)
        client.send_signal(signal.SIGINT)
    else:
        client.send_signal(getattr(signal, how))
    client.communicate(timeout=TIMEOUT)
    assert client.returncode != 0
    _after(cli, sid, row["pid"], watcher)
    _stored_in_full(cli, sid, sent)
