"""The host log (``ACPCLI_HOME/logs/host-ID.log``) stays bounded whatever a client does:
capped and rotated as the agent's stderr log is, records of one kind past a few a minute
left out (and counted), each record clipped. Driven through the raw socket: a client that
sends prompts whose turns fail (an unknown setting), and clients that send what the host
cannot handle, over and over."""

from __future__ import annotations

import json
import re
import socket
from pathlib import Path

from acpcli.errors import ExitCode
from acpcli.host.hostlog import REPEATS
from acpcli.session.hostwire import address
from tests.cli.conftest import Cli

LIVE = {"ACPCLI_KEEP_ALIVE": "300"}


def _failing_turns(sid: str, count: int) -> list[dict[str, object]]:
    """``count`` prompts with a setting the agent does not have, on one connection: each
    turn fails (and the host logs it); the errors the client got."""
    errors = []
    with socket.socket(socket.AF_UNIX) as sock:
        sock.settimeout(60)
        sock.connect(str(address.socket_path(sid)))
        reader = sock.makefile("rb")
        sock.sendall(b'{"t": "hello", "pid": 1, "role": "prompt"}\n')
        for n in range(count):
            prompt = {"t": "prompt", "text": f"turn {n}", "settings": [[f"no-such-setting-{n % 3}", "x"]]}
            sock.sendall(json.dumps(prompt).encode() + b"\n")
            while True:
                message = json.loads(reader.readline())
                if message["t"] == "error":
                    errors.append(message)
                    break
    return errors


def _junk(sid: str, count: int) -> None:
    """``count`` connections that each say hello and then something the host cannot take."""
    for n in range(count):
        with socket.socket(socket.AF_UNIX) as sock:
            sock.settimeout(30)
            sock.connect(str(address.socket_path(sid)))
            sock.sendall(b'{"t": "hello", "role": "prompt"}\n{"t": "prompt", "text": "x", "settings": %d}\n' % n)
            sock.shutdown(socket.SHUT_WR)
            try:
                while sock.recv(65536):
                    pass
            except OSError:
                pass


def _logs(cli: Cli, sid: str) -> tuple[Path, Path]:
    log = address.host_log(sid)
    return log, log.with_name(log.name + ".1")


def test_repeated_failures_of_a_bad_client_are_left_out_after_a_few(hosts: Cli) -> None:
    cli = hosts
    sid = cli.ok("new", "--no-repl", "--cmd", cli.trace.demo_cmd(protocol=1), env=LIVE).stdout.strip()
    count = 4 * REPEATS + 7
    errors = _failing_turns(sid, count)
    assert len(errors) == count and all(e["exit"] == ExitCode.USAGE for e in errors)
    _junk(sid, 2 * REPEATS + 3)
    assert "still served" in cli.ok("prompt", "--session", sid, "still served", env=LIVE).stdout
    log, _ = _logs(cli, sid)
    text = log.read_text()
    failed = [line for line in text.splitlines() if " turn failed: " in line]
    assert 0 < len(failed) <= 2 * REPEATS, text[-3000:]  # (two windows at most, on a slow machine)
    assert any("more like this in the next" in line for line in failed), failed
    assert text.count("could not be handled") <= 2 * REPEATS, text[-3000:]
    cli.run("stop", sid)
    text = log.read_text()
    # every failed turn is either a line or counted as left out
    counted = [int(n) for n in re.findall(r"\[(\d+) more like this were left out", "\n".join(failed))]
    counted += [int(n) for n in re.findall(r"(\d+) more records like 'turn failed: %s' were left out", text)]
    assert counted and len(failed) + sum(counted) == count, text[-2000:]


def test_the_host_log_is_capped_and_rotated_as_the_agents_stderr_log(hosts: Cli) -> None:
    cli = hosts
    cap = 2500
    env = {**LIVE, "ACPCLI_HOST_LOG_MAX_BYTES": str(cap)}
    sid = cli.ok("new", "--no-repl", "--cmd", cli.trace.demo_cmd(protocol=2), env=env).stdout.strip()
    for _ in range(3):  # past the cap (and past the repeats let through: only so many lines of each kind)
        _failing_turns(sid, REPEATS)
        _junk(sid, 5)
    assert "still served" in cli.ok("prompt", "--session", sid, "still served", env=env).stdout
    log, older = _logs(cli, sid)
    assert log.stat().st_size <= cap and older.stat().st_size <= cap, (log.stat().st_size, older.stat().st_size)
    assert re.match(r"\[acpcli: \d+ earlier bytes of this log were dropped", log.read_text()), log.read_text()[:300]
    assert sorted(p.name for p in log.parent.glob("host-*")) == sorted([log.name, older.name])


def test_repeats_are_let_through_again_after_the_window_saying_how_many_were_left_out() -> None:
    import logging

    from acpcli.host.hostlog import Repeats, clip

    now = [100.0]
    repeats = Repeats(repeats=3, window=30.0, clock=lambda: now[0])

    def record(template: str = "bad client %s") -> logging.LogRecord:
        return logging.LogRecord("acpcli.host", logging.WARNING, __file__, 1, template, ("x",), None)

    kept = [r for r in (record() for _ in range(8)) if repeats.filter(r)]
    assert len(kept) == 3 and "next 30 s are left out" in kept[-1].left_out  # type: ignore[attr-defined]
    assert repeats.filter(record("another kind %s"))  # counted apart
    now[0] += 31
    again = record()
    assert repeats.filter(again) and "5 more like this were left out" in again.left_out  # type: ignore[attr-defined]
    assert repeats.left_out() == []
    assert clip("a" * 10, 4) == "aaaa… [6 more characters left out]"


def test_url_credentials_of_mcp_servers_are_masked_in_the_host_log_in_every_form(hosts: Cli, tmp_path: Path) -> None:
    import shlex
    import sys

    cli = hosts
    password, encoded, token, key = "hunter2-pass", "p%40ss-w0rd", "tok-9f8e7d6c", "qv-123456"
    servers = {
        "web": {"url": f"https://alice:{password}@mcp.example.invalid/mcp?api_key={key}&v=2"},
        "other": {"url": f"https://bob:{encoded}@second.example.invalid/"},
        "bare": {"url": f"https://{token}@third.example.invalid/sse"},
    }
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": servers}))
    # the agent's last stderr lines (quoted by the host log when it crashes) quote the
    # credentials apart from the URLs they came in, and a URL acpcli never saw
    said = [
        f"retrying https://alice:{password}@mcp.example.invalid/other/path",
        f"login alice:{password} refused; password {password}",
        "password p@ss-w0rd (decoded)",
        f"token {token}, key {key}",
        "redirected to https://carol:s3cret-elsewhere@fourth.example.invalid/x",
        "working in $PWD/still-shown",
    ]
    echo = "; ".join(f"echo {shlex.quote(line).replace('$PWD', chr(39) + '$PWD' + chr(39))} >&2" for line in said)
    agent = f"{shlex.quote(sys.executable)} -m acpcli.demo_agent --protocol 2"
    cmd = f"sh -c {shlex.quote(f'{agent}; {echo}; exit 3')}"
    sid = cli.ok("new", "--no-repl", "--cmd", cmd, "--mcp-config", str(config), env=LIVE).stdout.strip()
    crashed = cli.run("prompt", "--session", sid, "crash", env=LIVE)
    assert crashed.returncode == ExitCode.AGENT_EXITED, crashed.stderr
    text = address.host_log(sid).read_text()
    assert "password ***" in text and "token ***" in text, text[-3000:]
    for secret in (password, encoded, "p@ss-w0rd", token, key, "s3cret-elsewhere"):
        assert secret not in text, secret
    assert "https://***@fourth.example.invalid/x" in text
    assert f"{cli.cwd}/still-shown" in text  # the working directory is no secret ($PWD)
