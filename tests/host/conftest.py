"""Fixtures for the live-session host's tests: the real CLI in subprocesses (the ``cli``
fixture of ``tests/cli``) and raw socket clients that say what a real client would not.

Every test that starts hosts uses ``hosts``: at its end every host is stopped and none of its
processes (host, agent) is left.
"""

from __future__ import annotations

import json
import os
import shlex
import socket
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.cli import conftest as cli_fixtures
from tests.cli.conftest import Cli
from tests.helpers.procs import running

FLOOD_AGENT = Path(__file__).resolve().parent.parent / "peers" / "flood_agent.py"

#: The CLI tests' fixtures, here too (``cli``, ``trace``, ``workdir``).
cli, trace, workdir = cli_fixtures.cli, cli_fixtures.trace, cli_fixtures.workdir

#: Keep-alive on (the suite's default is off).
LIVE = {"ACPCLI_KEEP_ALIVE": "300"}




def live_rows(cli: Cli) -> list[dict[str, Any]]:
    proc = cli.ok("sessions", "--live", "--json")
    return [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]


def wait_for(condition: Any, seconds: float = 30.0, what: str = "a condition") -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


@pytest.fixture
def hosts(cli: Cli) -> Iterator[Cli]:
    """``cli``, and at the end: every host stopped, and none of its processes left."""
    yield cli
    rows = live_rows(cli)
    cli.run("stop", "--all")
    for row in rows:
        for pid in (row["pid"], row["agentPid"]):
            if isinstance(pid, int):
                wait_for(lambda pid=pid: not running(pid), 20, f"process {pid} to end")
    for pid in cli.trace.pids():
        wait_for(lambda pid=pid: not running(pid), 20, f"agent {pid} to end")


def flood_cmd(cli: Cli) -> str:
    """A ``--cmd`` line running ``tests/peers/flood_agent.py`` (its pid goes to the trace)."""
    return shlex.join([sys.executable, str(FLOOD_AGENT)])


def flood_session(cli: Cli, env: dict[str, str] | None = None) -> str:
    """A new session of the flood agent, live in a host."""
    return cli.ok("new", "--no-repl", "--cmd", flood_cmd(cli), env={**LIVE, **(env or {})}).stdout.strip()


#: Every raw client of the running test, closed at its end (also when it fails midway).
_OPEN: list[Raw] = []


@pytest.fixture(autouse=True)
def _close_raw_clients() -> Iterator[None]:
    yield
    while _OPEN:
        _OPEN.pop().close()


class Raw:
    """A raw socket client of a host: JSON lines, read with a timeout."""

    def __init__(self, path: str) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            self.sock.connect(path)
        except OSError:
            self.sock.close()
            raise
        _OPEN.append(self)
        self.sock.settimeout(30)
        self.buffer = b""

    def send(self, message: dict[str, Any]) -> None:
        self.sock.sendall(json.dumps(message).encode() + b"\n")

    def receive(self) -> dict[str, Any] | None:
        """The next message (None: the host closed the connection)."""
        while b"\n" not in self.buffer:
            try:
                data = self.sock.recv(1 << 20)
            except (ConnectionResetError, BrokenPipeError):
                return None
            if not data:
                return None
            self.buffer += data
        line, self.buffer = self.buffer.split(b"\n", 1)
        return json.loads(line)

    def until(self, kind: str) -> dict[str, Any]:
        while True:
            message = self.receive()
            assert message is not None, f"the host closed the connection before {kind!r}"
            if message["t"] == kind:
                return message

    def close(self) -> None:
        self.sock.close()


def raw_client(session_id: str, role: str = "prompt") -> Raw:
    from acpcli.session.hostwire.address import socket_path

    client = Raw(str(socket_path(session_id)))
    client.send({"t": "hello", "pid": os.getpid(), "role": role})
    assert client.until("ready")["session"] == session_id
    return client


class SessionClient:
    """One connection to a session's host by its id, speaking its line protocol by hand (with
    a timeout on each read): the ``raw`` fixture's."""

    def __init__(self, session_id: str, role: str | None = "prompt") -> None:
        from acpcli.session.hostwire.address import socket_path

        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.connect(str(socket_path(session_id)))
        self.buffer = b""
        if role is not None:
            self.send({"t": "hello", "pid": os.getpid(), "role": role})
            self.until("ready")

    def send(self, message: dict[str, Any]) -> None:
        self.sock.sendall(json.dumps(message).encode() + b"\n")

    def receive(self, timeout: float = 30.0) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while b"\n" not in self.buffer:
            left = deadline - time.monotonic()
            assert left > 0, f"nothing from the host in {timeout} s"
            self.sock.settimeout(left)
            chunk = self.sock.recv(65536)
            assert chunk, "the host closed the connection"
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        return json.loads(line)

    def until(self, *kinds: str, timeout: float = 30.0) -> dict[str, Any]:
        """The next message of one of ``kinds`` (others are skipped)."""
        deadline = time.monotonic() + timeout
        while True:
            message = self.receive(max(0.1, deadline - time.monotonic()))
            if message["t"] in kinds:
                return message

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def raw() -> Iterator[Any]:
    """``raw(session_id, role="prompt")`` -> :class:`SessionClient`; every connection closed at the end."""
    opened: list[SessionClient] = []

    def connect(session_id: str, role: str | None = "prompt") -> SessionClient:
        client = SessionClient(session_id, role)
        opened.append(client)
        return client

    yield connect
    for client in opened:
        client.close()


from tests.cli.pty import spawn  # noqa: E402,F401  (the pseudo-terminal fixture)
