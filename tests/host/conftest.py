"""Raw-socket tests of the live-session host: the real CLI starts a host (keep-alive on), and
the tests talk to its socket as any local program could, one JSON object per line. The
fixtures of the CLI tests (``tests/cli/conftest.py``), and ``hosts`` (every host stopped at the
end, none of its processes left) of the live-session tests."""

from __future__ import annotations

import json
import os
import socket
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.cli.conftest import cli, trace, workdir  # noqa: F401  (the CLI fixtures)
from tests.cli.test_live_sessions import hosts  # noqa: F401  (likewise)

LIVE = {"ACPCLI_KEEP_ALIVE": "120"}


class Raw:
    """One connection to a session's host, speaking its line protocol by hand."""

    def __init__(self, session_id: str, role: str | None = "prompt") -> None:
        from acpcli.host.address import socket_path

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
    """``raw(session_id, role="prompt")`` -> :class:`Raw`; every connection closed at the end."""
    opened: list[Raw] = []

    def connect(session_id: str, role: str | None = "prompt") -> Raw:
        client = Raw(session_id, role)
        opened.append(client)
        return client

    yield connect
    for client in opened:
        client.close()
