"""Big legal updates, many connections, clients that flood: the host keeps serving, within
bounds."""

from __future__ import annotations

import os
import resource
import socket
import subprocess
import threading
from pathlib import Path

from tests.cli.conftest import TIMEOUT, Cli

from .conftest import LIVE, Raw, flood_session, live_rows


def test_an_update_of_tens_of_megabytes_comes_through_the_host(hosts: Cli) -> None:
    cli = hosts
    sid = flood_session(cli)
    (row,) = live_rows(cli)
    # 30 M characters, a third of them quotes and backslashes: a 45 MB line from the agent,
    # which the host's message to its client escapes again (75 MB)
    proc = cli.run("prompt", "--session", sid, "big 30000000", env=LIVE)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.count('a"b\\') >= 30_000_000 // 4 - 1
    (again,) = live_rows(cli)
    assert again["pid"] == row["pid"]
    assert "echo: next" in cli.ok("prompt", "--session", sid, "next", env=LIVE).stdout


def _low_files() -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (96, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))


def test_connections_past_the_open_files_limit_are_refused_and_the_host_serves_on(hosts: Cli) -> None:
    cli = hosts
    from .conftest import flood_cmd

    proc = subprocess.run(  # the host inherits the low limit of the command that starts it
        cli.argv("new", "--no-repl", "--cmd", flood_cmd(cli)), env=cli.env(LIVE), cwd=cli.cwd,
        stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=TIMEOUT, preexec_fn=_low_files,
    )
    assert proc.returncode == 0, proc.stderr
    sid = proc.stdout.strip()
    (row,) = live_rows(cli)
    from acpcli.session.hostwire.address import socket_path

    clients, answers = [], []
    for _ in range(150):
        try:
            client = Raw(str(socket_path(sid)))
        except OSError:  # the backlog is full: refused by the kernel
            continue
        try:
            client.send({"t": "hello", "pid": os.getpid(), "role": "prompt"})
        except OSError:  # refused and closed by the host before the hello went out
            answers.append(None)
            client.close()
            continue
        clients.append(client)
    for client in clients:
        message = client.receive()
        answers.append(message["t"] if message else None)
    assert "ready" in answers
    refused = [a for a in answers if a != "ready"]
    assert refused and set(refused) <= {"error", None}
    for client in clients:
        client.close()
    assert "echo: still" in cli.ok("prompt", "--session", sid, "still", env=LIVE).stdout
    (again,) = live_rows(cli)
    assert again["pid"] == row["pid"]


def _peak_rss(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmHWM")


def test_clients_that_flood_the_host_are_dropped_within_a_memory_bound(hosts: Cli) -> None:
    cli = hosts
    sid = flood_session(cli)
    (row,) = live_rows(cli)
    before = _peak_rss(row["pid"])
    from acpcli.session.hostwire.address import socket_path

    dropped: list[bool] = []

    def flood() -> None:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.connect(str(socket_path(sid)))
            sock.sendall(b'{"t": "hello", "role": "prompt"}\n{"t": "prompt", "text": "')
            block = b"y" * (1 << 20)
            try:
                for _ in range(72):  # 72 MB of one line that never ends
                    sock.sendall(block)
            except OSError:
                dropped.append(True)
                return
            dropped.append(False)

    threads = [threading.Thread(target=flood) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(TIMEOUT)
    assert dropped == [True] * 6
    grown = _peak_rss(row["pid"]) - before
    assert grown < 250 * 1024 * 1024, f"the host grew by {grown >> 20} MiB"
    assert "echo: fine" in cli.ok("prompt", "--session", sid, "fine", env=LIVE).stdout
    (again,) = live_rows(cli)
    assert again["pid"] == row["pid"]


def test_a_client_that_floods_the_queue_is_told_it_is_full(hosts: Cli) -> None:
    cli = hosts
    sid = flood_session(cli)
    from .conftest import raw_client

    client = raw_client(sid)
    client.send({"t": "prompt", "text": "quiet 3", "settings": []})
    client.until("start")
    for i in range(1005):
        client.send({"t": "prompt", "text": f"p {i}", "settings": []})
    queued = refused = 0
    while queued + refused < 1005:
        message = client.receive()
        assert message is not None
        if message["t"] == "queued":
            queued += 1
        elif message["t"] == "error":
            assert message["exit"] == 18 and "queue is full" in message["message"]
            refused += 1
    assert (queued, refused) == (1000, 5)
    client.close()  # its queued prompts are withdrawn, its turn cancelled
    assert "echo: after" in cli.ok("prompt", "--session", sid, "after", env=LIVE).stdout
    assert "p 1004" not in cli.show(sid)


def test_connections_that_say_nothing_are_dropped_and_free_their_slots(hosts: Cli) -> None:
    cli = hosts
    sid = flood_session(cli, {"ACPCLI_HOST_TIMEOUT": "1"})  # the host's own patience
    from acpcli.session.hostwire.address import socket_path

    mute = [Raw(str(socket_path(sid))) for _ in range(5)]
    for client in mute:
        assert client.receive() is None  # closed by the host, having said nothing
    assert "echo: heard" in cli.ok("prompt", "--session", sid, "heard", env=LIVE).stdout
