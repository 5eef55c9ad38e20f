"""Each hosted turn runs under the policy of the command that sent it (issue 31, issue 32 point 1).

A live session's host serves many commands' turns through one agent: the policy the host was
started with (``--permissions``, the ``permissions`` config key, a script's ``deny``) must not
decide what a later ``prompt --session`` may do, nor the other way round. Driven through the
real CLI with keep-alive on and ``tests/peers/sdk_policy_agent.py`` (``try DIR``: reads, asks
twice, writes a file and runs a command through the client).
"""

from __future__ import annotations

import json
import shlex
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from acpcli.services.permissions import CHANGE_POLICY_UNATTENDED, POLICY_REFUSED

from .conftest import Cli

AGENT = Path(__file__).resolve().parent.parent / "peers" / "sdk_policy_agent.py"
CMD = shlex.join([sys.executable, str(AGENT)])
LIVE = {"ACPCLI_KEEP_ALIVE": "120"}


@pytest.fixture
def hosts(cli: Cli) -> Iterator[Cli]:
    """``cli``; every host it started is stopped at the end."""
    yield cli
    cli.run("stop", "--all")


@pytest.fixture
def area(workdir: Path) -> Path:
    directory = workdir / "zone"
    directory.mkdir()
    (directory / "input.txt").write_text("what is read\n")
    return directory


def report(stdout: str) -> dict[str, Any]:
    line = next(line for line in stdout.splitlines() if line.startswith("{"))
    return json.loads(line)


def refusals(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("acpcli: refused ")]


def _start(cli: Cli, *flags: str, env: dict[str, str] | None = None) -> str:
    return cli.ok("new", "--no-repl", "--cmd", CMD, *flags, env={**LIVE, **(env or {})}).stdout.strip()


@pytest.mark.parametrize("started", ["flag", "config"])
@pytest.mark.parametrize(
    ("flags", "policy"),
    [
        (("--permissions", "deny"), "deny"),
        (("--permissions", "read-only"), "read-only"),
        (("--permissions", "allow", "--no-fs", "--no-terminal"), None),
    ],
    ids=["deny", "read-only", "no-fs-no-terminal"],
)
def test_a_host_started_with_allow_refuses_a_stricter_prompt(
    hosts: Cli, area: Path, started: str, flags: tuple[str, ...], policy: str | None
) -> None:
    cli = hosts
    if started == "config":
        cli.home.mkdir(parents=True, exist_ok=True)
        (cli.home / "config.toml").write_text('permissions = "allow"\n')
        sid = _start(cli)
    else:
        sid = _start(cli, "--permissions", "allow")

    proc = cli.run("prompt", "--session", sid, *flags, f"try {area}", env=LIVE)
    assert proc.returncode == 0, proc.stderr
    got = report(proc.stdout)
    assert not (area / "output.txt").exists(), got
    assert not (area / "ran").exists(), got
    for step in ("write", "terminal"):
        assert got[step]["error"]["code"] == POLICY_REFUSED, got
    lines = refusals(proc.stderr)
    if policy is None:  # the flags: reads refused too, the permission questions allowed
        assert got["read"]["error"]["code"] == POLICY_REFUSED, got
        assert "--no-fs" in got["write"]["error"]["message"] and "--no-terminal" in got["terminal"]["error"]["message"]
        assert lines == [
            f"acpcli: refused reading {area / 'input.txt'}: the prompt was sent with --no-fs",
            f"acpcli: refused writing {area / 'output.txt'}: the prompt was sent with --no-fs",
            f"acpcli: refused running `touch {area / 'ran'}`: the prompt was sent with --no-terminal",
        ], proc.stderr
    else:
        assert got["read"] == {"ok": {"content": "what is read\n"}}
        assert f"'{policy}'" in got["write"]["error"]["message"]
        tail = f"(policy {policy}): {CHANGE_POLICY_UNATTENDED}"  # a script: nobody can be asked
        assert f"acpcli: refused writing {area / 'output.txt'} {tail}" in lines, proc.stderr
        assert f"acpcli: refused running `touch {area / 'ran'}` {tail}" in lines, proc.stderr

    # the host's own policy is not changed by that turn either: allowed again
    again = cli.run("prompt", "--session", sid, "--permissions", "allow", f"try {area}", env=LIVE)
    assert again.returncode == 0, again.stderr
    assert report(again.stdout)["write"] == {"ok": {}}
    assert (area / "output.txt").read_text() == "written" and (area / "ran").exists()


def test_a_host_started_by_a_script_serves_an_allowing_prompt(hosts: Cli, area: Path) -> None:
    cli = hosts
    sid = _start(cli)  # a script: deny
    first = cli.run("prompt", "--session", sid, f"try {area}", env=LIVE)  # a script again: deny
    assert first.returncode == 0, first.stderr
    assert not (area / "output.txt").exists()
    assert f"(policy deny): {CHANGE_POLICY_UNATTENDED}" in first.stderr

    proc = cli.run("prompt", "--session", sid, "--permissions", "allow", f"try {area}", env=LIVE)
    assert proc.returncode == 0, proc.stderr
    got = report(proc.stdout)
    assert got["ask_edit"] == {"ok": "yes"} and got["write"] == {"ok": {}}, got
    assert "terminalId" in got["terminal"]["ok"], got
    assert (area / "output.txt").read_text() == "written"
    assert (area / "ran").exists()
    assert refusals(proc.stderr) == [], proc.stderr


def test_close_in_an_attached_terminal_waits_for_the_other_terminals_picker(hosts: Cli, spawn: Any, workdir: Path) -> None:
    """Two terminals on one live session: while the first one's turn waits on its picker,
    ``/close`` typed in the second waits in its queue (that terminal draws the other's turn
    with its type-ahead line; the host itself refuses a close during a turn: tests/host); the
    first person's *Allow* then reaches the agent, and the queued ``/close`` runs once the turn
    is over."""
    from .pty import CHOICE, CTRL_D

    cli = hosts
    sid = cli.ok("new", "--no-repl", "--cmd", cli.trace.demo_cmd(protocol=1), env=LIVE).stdout.strip()
    asker = spawn("attach", sid)
    asker.expect("attached to")
    asker.prompt()
    closer = spawn("attach", sid)
    closer.expect("attached to")
    closer.prompt()

    asker.say("write chosen.txt")
    asker.expect(CHOICE)
    closer.say("/close")
    closer.expect("queued 1: /close")

    asker.child.send("\r")  # the highlighted option: Allow once
    asker.expect("written with fs/write_text_file")
    assert (workdir / "chosen.txt").exists()

    closer.expect("closed")
    assert closer.wait() == 0
    asker.expect("closed from another terminal")
    asker.child.send(CTRL_D)
    assert asker.wait() == 0
