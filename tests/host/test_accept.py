"""The host's accept loop when the process is out of file descriptors (EMFILE): the waiting
connection is refused with one line, and the loop goes on (in-process: the CLI tests reach
the connection cap first, which keeps descriptors spare for exactly this)."""

from __future__ import annotations

import errno
import json
import socket
from pathlib import Path
from typing import Any

import anyio
import pytest
from anyio.abc import SocketAttribute

from acpcli.host.server import Host


class OutOfFiles:
    """A listener whose first ``accept`` calls fail as a process out of descriptors sees it;
    its raw socket is a real one, with a connection waiting."""

    def __init__(self, raw: socket.socket, failures: int) -> None:
        self.raw = raw
        self.failures = failures
        self.accepted = anyio.Event()

    def extra(self, attribute: Any) -> Any:
        assert attribute is SocketAttribute.raw_socket
        return self.raw

    async def accept(self) -> Any:
        if self.failures:
            self.failures -= 1
            try:
                raise OSError(errno.EMFILE, "Too many open files")
            except OSError as err:
                raise anyio.BrokenResourceError from err
        self.accepted.set()
        await anyio.sleep_forever()


@pytest.mark.parametrize("failures", [1, 3])
def test_out_of_files_refuses_the_waiting_connection_and_accepts_on(tmp_path: Path, failures: int) -> None:
    path = str(tmp_path / "s.sock")
    raw = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    raw.bind(path)
    raw.listen(8)
    raw.setblocking(False)
    waiting = []
    for _ in range(failures):
        client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        client.connect(path)
        waiting.append(client)
    listener = OutOfFiles(raw, failures)
    host = Host({"session_id": "s"})

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(host._accept, listener, tg)
            with anyio.fail_after(10):
                await listener.accepted.wait()  # it went on accepting
            tg.cancel_scope.cancel()

    anyio.run(main)
    for client in waiting:
        client.settimeout(5)
        line = client.makefile("rb").readline()
        message = json.loads(line)
        assert message["t"] == "error" and message["exit"] == 18
        assert "too many connections" in message["message"]
        assert client.recv(1) == b""  # and closed
        client.close()
    raw.close()
